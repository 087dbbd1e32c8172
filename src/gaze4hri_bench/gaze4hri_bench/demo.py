"""``gaze4hri-bench demo``: simulate a small session, benchmark it, write the report.

1. Simulate a few subjects with a subset of the protocol that covers all four
   experiments (illumination levels, the camera arc, head-gaze conflict, mutual gaze
   line scans) through the real acquisition nodes and recorder, by running
   ``gaze4hri-acq session --backend sim`` (the benchmark never imports the ROS half);
2. run every method whose weights are present plus the weight-free baselines
   (``gaze4hri-bench run``);
3. run the statistics (``gaze4hri.stats.analyze``) and print where the report is.

Re-running resumes: simulated subjects and finished trials are kept.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

__all__ = ["add_arguments", "main", "DEMO_TRIALS", "DEMO_SUBJECTS"]

#: one subject's demo trials: every illumination level, the three grid rows at
#: illumination 100 (experiment 4.1), the arc (2), two head-gaze conflicts (3) and the
#: four mutual-gaze scans (4.2)
DEMO_TRIALS = (
    "illum010_P5", "illum025_P5", "illum050_P5", "illum100_P5",
    "illum100_P2", "illum100_P8",
    "arc_P5",
    "conflict_left_H2", "conflict_right_H2",
    "mutual_h_slow", "mutual_h_fast", "mutual_v_slow", "mutual_v_fast",
)
DEMO_SUBJECTS = 3  # the statistics' subject-level tests need at least 3

_EPILOG = """\
examples:
  gaze4hri-bench demo                         # 3 simulated subjects x 13 trials -> out/demo/report/report.html
  gaze4hri-bench demo --fresh --out /tmp/demo # start over in another folder
  gaze4hri-bench demo --subjects 5 --seconds 2 --method head_pose --method straight

Re-running resumes (finished subjects and trials are kept). Exit codes: 0 done, 2 error (one
line on stderr), 3 missing weights for a named --method, 130 interrupted (Ctrl-C).
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = _EPILOG
    p.add_argument("--out", type=Path, default=Path("out/demo"), metavar="DIR",
                   help="output folder: sessions/, results/, report/ (default: out/demo)")
    p.add_argument(
        "--subjects", type=int, default=DEMO_SUBJECTS, metavar="N", help=f"simulated subjects (default {DEMO_SUBJECTS})"
    )
    p.add_argument(
        "--seconds", type=float, default=1.0, metavar="S", help="seconds per simulated fixed-camera trial (default 1.0)"
    )
    p.add_argument(
        "--trials",
        nargs="+",
        default=list(DEMO_TRIALS),
        metavar="TRIAL",
        help="trial ids per subject (default: 13 trials covering the four experiments)",
    )
    p.add_argument(
        "--method",
        action="append",
        dest="methods",
        metavar="NAME",
        help="methods to run (default: every method whose weights are present, plus the baselines)",
    )
    p.add_argument(
        "--device", default="auto", choices=("auto", "cpu", "cuda", "tensorrt"), help="inference device (default auto)"
    )
    p.add_argument("--fresh", action="store_true", help="delete the output folder first")


def _demo_calibration(dst: Path, n: int) -> Path:
    """The shared default calibration with an eye-head file per simulated subject
    (the simulated subjects wear the default head band: subjects/default.yaml)."""
    from gaze4hri_core.device_config import DEFAULT_CALIBRATION

    if not dst.is_dir():
        shutil.copytree(DEFAULT_CALIBRATION, dst)
    for i in range(1, n + 1):
        f = dst / "subjects" / f"S{i:02d}.yaml"
        if not f.is_file():
            shutil.copy2(dst / "subjects" / "default.yaml", f)
    return dst


def _acq_command() -> list[str]:
    """The acquisition CLI as a user runs it: the benchmark never imports the ROS half,
    it runs ``gaze4hri-acq session --backend sim`` like any user would."""
    from gaze4hri_core.errors import Gaze4HRIError

    exe = Path(sys.executable).with_name("gaze4hri-acq")
    found = str(exe) if exe.is_file() else shutil.which("gaze4hri-acq")
    if not found:
        raise Gaze4HRIError(
            "the acquisition simulator is not installed",
            f"gaze4hri-acq not found next to {sys.executable} nor on PATH",
            "install it (make bootstrap), or run `gaze4hri-bench run --data DIR` on recorded sessions",
        )
    return [found]


def _simulate(out: Path, n: int, trials: list[str], seconds: float, log, progress: bool) -> Path:
    """One ``gaze4hri-acq session --backend sim`` per subject; one bar over all subjects'
    trials, moved by polling each session.yaml. A subject whose session exits 1 (some
    trial failed) is kept with a warning naming the failed trials; any other exit stops
    the demo with the session's last line."""
    import subprocess

    from gaze4hri_core.errors import Gaze4HRIError

    acq = _acq_command()
    root = out / "sessions"
    cal = _demo_calibration(out / "calibration", n)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=n * len(trials),
            desc="simulating",
            unit="trial",
            dynamic_ncols=True,
            file=sys.stderr,
            miniters=1,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} trials [{elapsed}<{remaining}]",
        )
    try:
        for i in range(1, n + 1):
            subject = f"S{i:02d}"
            t0 = time.perf_counter()
            cmd = acq + [
                "session",
                "--subject",
                subject,
                "--backend",
                "sim",
                "--out-dir",
                str(root),
                "--trials",
                *trials,
                "--trial-seconds",
                f"{seconds:g}",
                "--seed",
                str(i),
                "--resolution",
                "640x360",
                "--calibration",
                str(cal),
                "--quiet",
                "--yes",
            ]
            if (root / subject / "session.yaml").is_file():
                cmd.append("--resume")
            if bar is not None:
                bar.set_description_str(f"simulating {subject}")
            with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as p:
                out_text = _poll_session(p, root / subject, (i - 1) * len(trials), bar)
            failed = _failed_trials(root / subject)
            if p.returncode == 1 and failed:
                msg = "; ".join(f"{t} ({why})" for t, why in failed)
                _say(bar, log, f"  warning: {subject}: {len(failed)} trial(s) failed and are left out: {msg}")
            elif p.returncode != 0:
                lines = out_text.strip().splitlines() or ["(no output)"]
                raise Gaze4HRIError(
                    f"simulated session {subject} failed (exit {p.returncode}): {lines[-1]}",
                    " ".join(cmd[:3]) + " ...",
                    "run that command by hand to see the full log",
                )
            _say(
                bar,
                log,
                f"  simulated {subject}: {len(trials)} trials x {seconds:g} s in {time.perf_counter() - t0:.0f} s",
            )
    finally:
        if bar is not None:
            bar.close()
    return root


def _say(bar, log, msg: str) -> None:
    if bar is None:
        log(msg)
        return
    from tqdm import tqdm

    with tqdm.external_write_mode(file=sys.stderr):
        log(msg)


def _poll_session(p, sdir: Path, base: int, bar) -> str:
    """Wait for the acquisition process, moving ``bar`` with its finished trials; returns
    stderr (the session's one-line error, if any)."""
    import threading

    chunks: list[str] = []
    reader = threading.Thread(target=lambda: chunks.append(p.stderr.read()), daemon=True)
    drain = threading.Thread(target=lambda: p.stdout.read(), daemon=True)
    reader.start()
    drain.start()
    while p.poll() is None:
        time.sleep(0.5)
        if bar is not None:
            _bar_to(bar, base + _finished(sdir))
    reader.join(timeout=5)
    drain.join(timeout=5)
    if bar is not None:
        _bar_to(bar, base + _finished(sdir))
    return "".join(chunks)


def _bar_to(bar, n: int) -> None:
    if n > bar.n:
        bar.update(n - bar.n)


def _finished(sdir: Path) -> int:
    from gaze4hri_core.errors import Gaze4HRIError
    from gaze4hri_core.session import load_manifest

    try:
        return sum(r.status in ("done", "failed") for r in load_manifest(sdir).trials.values())
    except (Gaze4HRIError, OSError, ValueError):
        return 0  # not written yet, or being replaced atomically


def _failed_trials(sdir: Path) -> list[tuple[str, str]]:
    from gaze4hri_core.errors import Gaze4HRIError
    from gaze4hri_core.session import load_manifest

    try:
        m = load_manifest(sdir)
    except (Gaze4HRIError, OSError, ValueError):
        return []
    return [(t, r.reason or r.status) for t, r in m.trials.items() if r.status in ("failed", "incomplete")]


def _fallback_tables(paths: list[Path], out: Path, log) -> Path:
    """Mean error per method and experiment, when the statistics module is absent."""
    import pandas as pd

    frames = [pd.read_parquet(p, columns=["method", "input", "experiment", "valid", "error_deg"]) for p in paths]
    df = pd.concat(frames)
    t = df[df["valid"]].groupby(["method", "input", "experiment"])["error_deg"].agg(["mean", "std", "count"]).round(2)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "results_tables.md"
    path.write_text("# Mean angular error (deg) per method and experiment (frame level)\n\n" + t.to_markdown() + "\n")
    log(t.to_string())
    return path


def main(args: argparse.Namespace) -> int:
    from .pipeline.cli_run import available_methods, default_detector
    from .pipeline.progress import plan_lines
    from .pipeline.run import RunConfig, plan_jobs, run_benchmark

    def log(msg: str) -> None:
        print(msg, flush=True)

    out: Path = args.out
    if args.fresh and out.exists():
        shutil.rmtree(out)
    t_all = time.perf_counter()
    methods = tuple(args.methods or available_methods())
    progress = sys.stderr.isatty()
    cfg = RunConfig(
        methods=methods,
        data=out / "sessions",
        out=out / "results",
        detector=default_detector(),
        device=args.device,
        progress=progress,
        command_line="gaze4hri-bench demo " + " ".join(sys.argv[2:]),
    )
    jobs = plan_jobs(cfg)  # fail early on unknown methods / missing weights
    networks = [j.method.name for j in jobs if j.method.kind == "onnx"]
    log(
        f"[1/3] simulating {args.subjects} subject(s) x {len(args.trials)} trials -> {out / 'sessions'} "
        "(SIMULATED data: a rendered face in a simulated lab, not a recording)"
    )
    _simulate(out, args.subjects, args.trials, args.seconds, log, progress)
    log(
        f"[2/3] benchmarking {len(jobs)} job(s)"
        + ("" if networks else " (no network weights present: `gaze4hri-bench methods` says how to import them)")
    )
    for line in plan_lines(jobs, cfg, defaulted=not args.methods):
        log("  " + line)
    paths = run_benchmark(cfg, log=lambda m: log("  " + m), jobs=jobs)
    log("[3/3] statistics")
    report_dir = out / "report"
    try:
        from .stats import analyze
    except ModuleNotFoundError:
        analyze = None
    if analyze is None:
        path = _fallback_tables(paths, report_dir, log)
        log(f"done in {time.perf_counter() - t_all:.0f} s: results in {out / 'results'}, tables in {path}")
        return 0
    s = analyze(paths, report_dir)
    for w in s.get("warnings", []):
        log(f"  warning: {w}")
    for name, a in s.get("analyses", {}).items():
        why = f" ({'; '.join(a['reasons'])})" if a.get("reasons") else ""
        log(f"  {name:18s} {a['status']:8s} N={a['n']}{why}")
    log(
        f"done in {time.perf_counter() - t_all:.0f} s: results in {out / 'results'}; "
        f"report: {s['report_md']} and {s['report_html']}"
    )
    return 0
