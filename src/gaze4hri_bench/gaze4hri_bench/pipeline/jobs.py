"""What a benchmark run is asked for (:class:`RunConfig`) and what it plans from it: one
:class:`Job` per (method, input type), each with its method spec, its pipeline-profile
record and its model file resolved once, here, before any work starts.

The job carries them to everything downstream (the method, the face pass, the writer
and provenance; docs/pipeline.md): nothing reads a setting back out of a method. The
engines that run the jobs are named in :data:`ENGINES` (pipeline/engine.py: this
process; pipeline/engine_ray.py: a Ray cluster).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.registry import Registry

from ..data import validity
from ..methods import METHODS, get_entry, get_method, method_spec
from ..methods.base import GazeMethod
from ..methods.plugins import spec_source, user_method
from ..profiles import DEFAULT_PROFILE, MethodProfile, Profile, get_profile
from ..spec_file import check_onnx
from ..specs import MethodSpec
from .runtime import ModelFile, resolve_model

__all__ = ["RunConfig", "Job", "plan_job", "plan_jobs", "ENGINES", "DEFAULT_DETECTOR", "IN_PROCESS"]

DEFAULT_DETECTOR = "auto"  # faces.detectors: yolov8_face_onnx when its weights are present, else mediapipe

#: engine kind whose driver builds each job's ONNX Runtime session itself (the other
#: kind, ``cluster``, builds them in its workers)
IN_PROCESS = "in-process"

#: where the trials run (``--engine``): each entry's target is ``run(work: engine.Work)``
ENGINES: Registry = Registry("engine", where="--engine")
ENGINES.register("local", "gaze4hri_bench.pipeline.engine:run_local", IN_PROCESS,
                 summary="this process (default)")
ENGINES.register("ray", "gaze4hri_bench.pipeline.engine_ray:run_work", "cluster",
                 summary="one trial per work unit on a Ray cluster (docs/cluster.md)")


@dataclass(frozen=True)
class RunConfig:
    """Everything a run needs; saved (as the command line) in each result's metadata."""

    methods: tuple[str, ...]
    data: Path
    out: Path
    input: str = "best"
    detector: str = DEFAULT_DETECTOR
    subjects: tuple[str, ...] | None = None
    trials: tuple[str, ...] | None = None
    stride: int = 1
    device: str = "auto"
    batch: int = 8
    fp16: bool = False  # --fp16: each model's FP16 copy after a parity check against FP32 (runtime.Runner)
    models_dir: Path | None = None
    threads: int | None = None  # ONNX Runtime intra-op threads per stream (None: the cores shared out)
    streams: int | None = None  # batches of one network in flight at once (None: runtime.resolve_streams)
    progress: bool = True
    prefetch: int = 32
    command_line: str = ""
    blinks: str = "auto"  # faces.blinks.BLINK_SOURCES
    ear_relative: float | None = validity.EAR_RELATIVE  # blink: EAR < this x the trial median (None: off)
    ear_threshold: float | None = None  # blink: EAR < this absolute value (None: off)
    ear_pass: str = "tracked"  # faces.ear_pass.EAR_PASSES: tracked (detect to find, mesh to track) or full
    data_format: str = "auto"  # data.reader.FORMATS: auto (detect), session (MCAP) or study (released layout)
    profile: str = DEFAULT_PROFILE  # profiles.PROFILES: how inputs are prepared and outputs decoded
    engine: str = "local"  # ENGINES: local (this process) or ray (one trial per unit on a Ray cluster)
    address: str | None = None  # ray: the cluster to join (None: a local Ray runtime; "auto": this node's)
    workers: int | None = None  # ray: actors to start (None: as many as the cluster's free CPUs/GPUs allow)


@dataclass(frozen=True, eq=False)
class Job:
    """One (method, input type) pair of a run, resolved once (:func:`plan_job`).

    ``spec``: the method's configuration (None: a baseline, which reads no pixels);
    ``record``: its pipeline-profile record under ``profile`` (None for a baseline);
    ``setting_names``: the profile's documented settings that apply to the method;
    ``model``: its ONNX file. The method was built from ``spec`` and ``record``."""

    method: GazeMethod
    input_type: str
    model: ModelFile | None = None
    spec: MethodSpec | None = None
    record: MethodProfile | None = None
    profile: str = DEFAULT_PROFILE
    setting_names: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.method.name}__{self.input_type}"


def plan_job(name: str, input_type: str, profile: str | Profile | None = None, models_dir: Path | None = None,
             spec: MethodSpec | None = None, model: bool = True) -> Job:
    """One method on one input under ``profile``: its spec (``spec`` given: that one,
    e.g. a user's), its profile record, the method built from both and (``model``) its
    model file. An unknown method, profile or input, or a missing model, is one line."""
    from ..zoo.store import models_dir as _models_dir

    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    entry = get_entry(user_method(METHODS, name, _models_dir(models_dir)))  # a spec file: registered here
    spec = spec if spec is not None else method_spec(entry.name)
    record = prof.record(entry.name, spec) if spec is not None else None  # a baseline prepares no input
    method = get_method(entry.name, spec=spec, profile=prof, record=record)
    if spec is None and method.kind == "onnx":  # a plugin network that brings its own spec and record
        spec, record = method.spec, getattr(method, "record", None)
    names = tuple(s.name for s in prof.settings if s.methods == ("*",) or entry.name in s.methods)
    return Job(method, method.resolve_input(input_type),
               model=resolve_model(spec, models_dir) if model and spec is not None else None,
               spec=spec, record=record, profile=prof.name, setting_names=names)


def plan_jobs(cfg: RunConfig) -> list[Job]:
    """Resolve every method and input and every model file before any work starts:
    an unknown method or a missing model fails here with one line."""
    from ..zoo.store import models_dir

    jobs: dict[str, Job] = {}
    inputs = ["crop", "rectified"] if cfg.input == "both" else [cfg.input]
    profile = get_profile(cfg.profile)  # unknown profile: one line, before any work
    for given in cfg.methods:
        name = user_method(METHODS, given, models_dir(cfg.models_dir))  # a spec file: registered here
        for inp in inputs:
            job = plan_job(name, inp, profile, cfg.models_dir, model=False)
            if job.key not in jobs:  # each model file resolved (hashed, checked against its spec) once
                jobs[job.key] = replace(job, model=_model(job.spec, cfg.models_dir)) if job.spec else job
    if not jobs:
        raise Gaze4HRIError("no method to run", "--method",
                            "name at least one method (`gaze4hri-bench methods` lists them)")
    return list(jobs.values())


def _model(spec: MethodSpec, models_dir: Path | None) -> ModelFile:
    """The spec's ONNX file, resolved and hashed, its graph checked against the spec
    (names, ranks, fixed and dynamic axes: spec_file.check_onnx)."""
    mf = resolve_model(spec, models_dir)
    check_onnx(spec, mf.path, spec_source(spec.name) or f"method {spec.name}")
    return mf
