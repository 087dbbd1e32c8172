"""Plain-PyTorch inference networks of the benchmarked gaze methods, one module per
family, imported lazily through :mod:`gaze4hri_bench.zoo.families`.

Every family module (``puregaze``, ``gazetr``, ``l2cs``, ``mcgaze``, ``gat``) exposes:

``FAMILY``
    The family name used in :data:`gaze4hri_bench.specs.SPECS` (``MethodSpec.family``).
``MANIFEST``
    Path of the recorded state-dict manifest, relative to the repository root
    (``docs/models/<name>.json``); one file may serve several methods of a family.
``build() -> torch.nn.Module``
    The inference network in eval mode. ``forward(*inputs)`` takes tensors exactly as
    ``SPECS[method].onnx_inputs`` (same order) and returns a tuple in the order of
    ``onnx_outputs`` (or one tensor for a single output).
``convert_checkpoint(obj) -> dict[str, torch.Tensor]``
    What ``torch.load`` returned for an official checkpoint (nested ``state_dict`` /
    ``model`` dicts, ``module.`` prefixes, training-only keys) -> our exact state dict;
    raises :class:`gaze4hri_core.errors.Gaze4HRIError` naming missing/unexpected keys.
``write_official_checkpoint(model, path)``
    Test helper: writes ``model``'s weights in the official container layout, official
    key names and training-only tensors included.

Parameter names follow the official checkpoints so that ``load_state_dict(strict=True)``
succeeds after the documented key mapping (docs/models.md); the code is ours, written
from the papers and the architecture descriptions.
"""
