"""``gaze4hri-bench run``: run gaze methods on recorded sessions -> per-frame Parquet."""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from gaze4hri_core.commands import command_line, print_command

__all__ = ["add_arguments", "main", "available_methods"]

DEFAULT_DATA = Path("out/demo/sessions")
DEFAULT_OUT = Path("out/results")

_EPILOG = """\
examples:
  gaze4hri-bench run                                     # demo sessions, every method with weights + baselines
  gaze4hri-bench run --method l2cs --method head_pose --data /data/gaze4hri --out results/
  gaze4hri-bench run --method puregaze_eth --input crop --subjects S01 S02 --trials illum100_P5
  gaze4hri-bench run --method gazetr_eth --input both --device cuda --batch 32 --out results/
  gaze4hri-bench run --engine ray --address 10.0.0.5:6379 --data /shared/gaze4hri --out /shared/results/

Each (method, input) gives <out>/<method>__<input>.parquet, one row per frame
(docs/results_schema.md). Interrupted runs resume: re-run the same command and
finished trials are skipped. Then: gaze4hri-bench analyze <out> --out report/
Missing weights? `gaze4hri-bench methods` shows each method's status and how to import it.
"""


def available_methods(models_dir=None) -> list[str]:
    """Baselines plus every network whose ONNX file is present (spec files added with
    `methods add` too); plugins run when named."""
    from ..methods import METHODS, method_spec
    from .cli_methods import register_models_dir
    from .runtime import MissingWeightsError, resolve_model

    register_models_dir(models_dir)
    names = []
    for e in METHODS.entries():
        if e.kind != "onnx":
            names += [e.name] if e.kind == "baseline" else []
            continue
        try:
            resolve_model(method_spec(e.name), models_dir, check_hash=False)
            names.append(e.name)
        except MissingWeightsError:
            pass
    return names


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..data.validity import EAR_RELATIVE, EAR_THRESHOLD
    from ..methods import method_names
    from .runtime import DEVICES

    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = _EPILOG
    p.add_argument("--method", "-m", action="append", metavar="NAME", dest="methods",
                   help=f"method to run (repeatable; aliases allowed): {', '.join(method_names())}. "
                        "Default: every method whose weights are present, plus the baselines")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, metavar="DIR",
                   help=f"folder of recorded sessions, <DIR>/<subject>/session.yaml (default: {DEFAULT_DATA}, "
                        "what `gaze4hri-bench demo` writes)")
    p.add_argument("--format", choices=("auto", "session", "study"), default="auto", dest="data_format",
                   help="layout of --data: session (our MCAP sessions), study (the study's released dataset, "
                        "docs/study_dataset.md) or auto (detect; default)")
    from ..profiles import PROFILES

    p.add_argument("--profile", default="reference", metavar="NAME",
                   help="pipeline profile: " + "; ".join(f"{k} = {v.summary}" for k, v in PROFILES.items())
                        + " (default reference; docs/pipeline.md, 'Pipeline profiles')")
    p.add_argument("--input", choices=("best", "crop", "rectified", "both"), default="best",
                   help="face input: 'best' = the study's choice per method (Table II; default), "
                        "'crop' = detected face "
                        "box, 'rectified' = data normalization with motion-capture head pose, 'both' = one file each")
    p.add_argument("--detector", default=None, metavar="NAME",
                   help="face detector for crop inputs (default: the faces registry's default)")
    from ..faces.blinks import BLINK_SOURCES

    p.add_argument("--blinks", choices=tuple(BLINK_SOURCES), default="auto",
                   help="where blink frames come from: "
                        + "; ".join(f"{b.name} = {b.help}" for b in BLINK_SOURCES.values()))
    p.add_argument("--ear-relative", type=float, default=EAR_RELATIVE, metavar="R",
                   help=f"EAR blink rule: EAR below R x the trial's median EAR (default {EAR_RELATIVE}; "
                        "0 turns it off)")
    p.add_argument("--ear-threshold", type=float, default=None, metavar="T",
                   help=f"also (or, with --ear-relative 0, only) EAR below T is a blink "
                        f"(Soukupova & Cech use {EAR_THRESHOLD})")
    from ..faces.ear_pass import EAR_PASSES

    p.add_argument("--ear-pass", choices=tuple(EAR_PASSES), default="tracked",
                   help="how EAR is measured when no job reads the run's face boxes: tracked = the detector finds "
                        "the face and the face mesh tracks it, every 2nd frame plus the frames near a blink "
                        "(default; docs/PERFORMANCE.md); full = detector and face mesh on every frame")
    p.add_argument("--subjects", nargs="+", metavar="ID", help="only these subjects (e.g. S01 S02)")
    p.add_argument("--trials", nargs="+", metavar="TRIAL", help="only these trial ids (e.g. illum100_P5 arc_P2)")
    p.add_argument("--stride", type=int, default=1, metavar="N", help="use every N-th frame (default 1: all)")
    p.add_argument("--device", choices=DEVICES, default="auto",
                   help="auto (CUDA when onnxruntime-gpu and a GPU are present, else CPU), cpu, cuda or tensorrt; "
                        "a device that is asked for and missing is an error")
    p.add_argument("--batch", type=_batch_arg, default=8, metavar="N",
                   help="inference batch size (default 8), or auto: sized to free GPU memory after two probe runs "
                        "(capped; on the CPU auto means 8)")
    p.add_argument("--fp16", action="store_true",
                   help="run each network's FP16 copy (converted once, cached next to the .onnx) after a parity check "
                        "against FP32 that prints the largest gaze difference and refuses above 1 deg "
                        "($GAZE4HRI_FP16_MAX_DEG); meant for --device cuda/tensorrt")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="ONNX Runtime intra-op threads per stream (default: the cores shared out between the streams)")
    p.add_argument("--streams", type=_streams_arg, default=None, metavar="N",
                   help="batches of one network in flight at once on the CPU, each on its share of the cores "
                        "(default auto: 2 when --threads is not given, else 1; a GPU runs 1; "
                        "docs/pipeline.md, Streams)")
    p.add_argument("--models-dir", type=Path, default=None, metavar="DIR",
                   help="folder of <method>.onnx + manifest.yaml (default: $GAZE4HRI_MODELS, else models/)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                   help=f"results folder (default: {DEFAULT_OUT})")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    from .jobs import ENGINES

    p.add_argument("--engine", choices=tuple(ENGINES), default="local",
                   help="where the trials run: local (this process; default) or ray (one trial per work unit on a Ray "
                        "cluster; needs `pip install ray`, data/models/--out on a path every node sees: "
                        "docs/cluster.md)")
    p.add_argument("--address", default=None, metavar="ADDR",
                   help="--engine ray: the cluster to join, host:port as `ray start --head` printed it, or auto "
                        "(default: start a local Ray runtime on this machine)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="--engine ray: workers (actors) to start, each with --threads CPUs (default 1) and, with "
                        "--device cuda/tensorrt, one GPU (default: as many as the cluster's free resources hold)")



def _batch_arg(text: str) -> int:
    """``--batch``: N >= 1 or ``auto`` (runtime.AUTO); anything else is argparse's one-line usage error."""
    from gaze4hri_core.errors import Gaze4HRIError

    from .runtime import parse_batch

    try:
        return parse_batch(text)
    except Gaze4HRIError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer or 'auto'") from None


def _streams_arg(text: str) -> int | None:
    """``--streams``: N >= 1 or ``auto`` (None: runtime.resolve_streams)."""
    t = str(text).strip().lower()
    if t == "auto":
        return None
    if not t.isdigit() or int(t) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer or 'auto'")
    return int(t)


def main(args: argparse.Namespace) -> int:
    from gaze4hri_core.errors import Gaze4HRIError

    from .run import RunConfig, plan_jobs, run_benchmark

    if args.stride < 1 or args.batch < 0:  # batch 0: auto (runtime.AUTO)
        raise Gaze4HRIError("--stride and --batch must be >= 1", "gaze4hri-bench run", "e.g. --stride 1 --batch 8")
    if not 0.0 <= args.ear_relative < 1.0 or (args.ear_threshold is not None and not 0.0 < args.ear_threshold < 1.0):
        raise Gaze4HRIError("--ear-relative must lie in [0, 1) and --ear-threshold in (0, 1)", "gaze4hri-bench run",
                            "e.g. --ear-relative 0.85, or --ear-relative 0 --ear-threshold 0.2")
    if args.engine != "ray" and (args.address or args.workers is not None):
        raise Gaze4HRIError("--address and --workers apply to --engine ray only", "gaze4hri-bench run",
                            "add --engine ray, or drop --address/--workers")
    if args.workers is not None and args.workers < 1:
        raise Gaze4HRIError("--workers must be >= 1", "gaze4hri-bench run",
                            "e.g. --workers 4, or leave it out to fill the cluster")
    if args.engine == "ray":  # before any work: ray missing, or a cluster that does not answer, is one line
        from .engine_ray import _check_reachable, import_ray

        import_ray()
        if args.address:
            _check_reachable(args.address)
    methods = tuple(args.methods or available_methods(args.models_dir))
    cfg = RunConfig(
        methods=methods, data=args.data, out=args.out, input=args.input,
        detector=args.detector or default_detector(), subjects=tuple(args.subjects) if args.subjects else None,
        trials=tuple(args.trials) if args.trials else None, stride=args.stride, device=args.device,
        batch=args.batch, fp16=args.fp16, models_dir=args.models_dir, threads=args.threads, streams=args.streams,
        blinks=args.blinks,
        ear_relative=args.ear_relative or None, ear_threshold=args.ear_threshold, ear_pass=args.ear_pass,
        data_format=args.data_format, profile=args.profile, engine=args.engine, address=args.address,
        workers=args.workers,
        progress=not args.no_progress and sys.stderr.isatty(),
        command_line="gaze4hri-bench " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
    )
    jobs = plan_jobs(cfg)  # unknown methods and missing weights fail here, before any work
    if not args.data.is_dir():
        raise Gaze4HRIError(f"data folder {args.data} does not exist", "--data",
                            "pass a folder of recorded sessions, or create the demo data with `gaze4hri-bench demo`")
    from .progress import plan_lines

    for line in plan_lines(jobs, cfg, defaulted=not args.methods):
        print(line, flush=True)
    from .convention_check import run_warnings  # a spec file's output convention, on the first trial

    for line in run_warnings(jobs, cfg):
        print(line, file=sys.stderr, flush=True)
    skipped: list = []
    paths = run_benchmark(cfg, jobs=jobs, skipped=skipped)
    print_command(command_line(["gaze4hri-bench", "analyze", args.out, "--out", args.out / "report"]),
                  f"{len(paths)} results file(s) in {args.out}; next:")
    # 1: done, but some recorded trial is damaged (listed above; cli.py exit codes); a
    # study-layout trial the release lacks files for is listed and does not fail the run
    return 1 if any(getattr(s, "damaged", False) for s in skipped) else 0


def default_detector() -> str:
    try:
        from ..faces import detectors
    except ModuleNotFoundError:
        return "auto"
    return getattr(detectors, "DEFAULT", getattr(detectors, "DEFAULT_DETECTOR", "auto"))
