"""Your own model, end to end (docs/models.md, "Your own model"): simulate a few
subjects, cut the benchmark's own rectified input patches with their ground-truth gaze,
train a small CNN on CPU, export it to ONNX with a spec file, benchmark it through
``gaze4hri-bench run --method ownnet.yaml`` on held-out simulated subjects next to the
head_pose baseline and the same network with random weights, and check its output
convention, also under deliberately wrong specs (``gaze4hri-bench methods check``).

The simulated face is a photograph whose eyes do not move, so what the network can learn
is the head's orientation: its errors should come near head_pose's, far below the
random-weight network's.

    .venv/bin/python benchmarks/own_model/own_model.py --out out/own_model          # ~5 min on 2 cores
    .venv/bin/python benchmarks/own_model/own_model.py --sessions out/demo/sessions  # reuse sessions

Everything is written under --out (sessions, patches, ownnet.onnx, ownnet.yaml, results);
nothing goes into git. Torch (CPU) is needed for training and export only."""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

TRIALS = ("illum100_P1", "illum100_P3", "illum100_P5", "illum100_P7", "illum100_P9", "illum050_P2", "illum050_P4",
          "illum050_P6", "illum050_P8", "conflict_left_H2", "conflict_right_H2")
SIZE = 64  # network input side (px); the normalized camera keeps ETH-XGaze's field of view at this size
FOCAL = 960.0 * SIZE / 224  # ETH-XGaze: f 960 px at 224 px, d 600 mm (Zhang et al. ECCV 2020, Sec. 3)
NAME = "ownnet"


def spec_dict(name: str = NAME, order: str = "pitch_yaw", unit: str = "rad", colour: str = "rgb") -> dict:
    """The network's spec (format 1, docs/models.md "Your own model"); the arguments give
    the deliberately wrong variants the convention check must catch."""
    return {"format": 1, "name": name, "family": "ownnet", "train_set": "Gaze4HRI simulator",
            "table_name": "OwnNet (sim)", "licence": "MIT", "source": "benchmarks/own_model/own_model.py",
            "weights_file": f"{NAME}.onnx",
            "input": {"kind": "rectified", "size": SIZE, "normalization": {"focal_px": FOCAL, "distance_mm": 600.0},
                      "colour": colour, "scale": 255, "mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]},
            "onnx": {"inputs": {"face": ["B", 3, SIZE, SIZE]}, "outputs": {"gaze": ["B", 2]}},
            "output": {"kind": "angles", "order": order, "unit": unit}}


def write_spec(path: Path, data: dict) -> Path:
    import yaml

    path.write_text("# written by benchmarks/own_model/own_model.py\n" + yaml.safe_dump(data, sort_keys=False),
                    encoding="utf-8")
    return path


def simulate(out: Path, subjects: int, seconds: float, log=print) -> Path:
    """One ``gaze4hri-acq session --backend sim`` per subject (S01..), as a user runs it."""
    from gaze4hri_core.device_config import DEFAULT_CALIBRATION

    cal, root = out / "calibration", out / "sessions"
    if not cal.is_dir():
        shutil.copytree(DEFAULT_CALIBRATION, cal)
    acq = str(Path(sys.executable).with_name("gaze4hri-acq"))
    for i in range(1, subjects + 1):
        s = f"S{i:02d}"
        if not (cal / "subjects" / f"{s}.yaml").is_file():
            shutil.copy2(cal / "subjects" / "default.yaml", cal / "subjects" / f"{s}.yaml")
        cmd = [acq, "session", "--subject", s, "--backend", "sim", "--out-dir", str(root), "--trials", *TRIALS,
               "--trial-seconds", f"{seconds:g}", "--seed", str(i), "--resolution", "640x360",
               "--calibration", str(cal), "--quiet", "--yes", "--real-time-factor", "50"]
        if (root / s / "session.yaml").is_file():
            cmd.append("--resume")
        t0 = time.perf_counter()
        rc = subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode
        if rc not in (0, 1):  # 1: some trial failed (listed in session.yaml); the others are kept
            raise SystemExit(f"own_model: simulating {s} failed (exit {rc}): run `{' '.join(cmd)}` to see why")
        log(f"simulated {s}: {len(TRIALS)} trials in {time.perf_counter() - t0:.0f} s"
            + (" (some trial failed: left out)" if rc else ""))
    return root


def patches(sessions: Path, subjects: list[str], spec_file: Path) -> tuple[np.ndarray, np.ndarray]:
    """The network inputs of every valid frame of ``subjects``, cut by the benchmark's
    own code (reader, ground truth, validity, OnnxMethod.prepare: Zhang et al. 2018
    data normalization from the motion-capture head pose), and their labels: the true
    gaze in the normalized camera, [pitch, yaw] radians (Frame A)."""
    from gaze4hri_bench.data.reader import Dataset
    from gaze4hri_bench.methods.network import OnnxMethod
    from gaze4hri_bench.pipeline.frames import frame_context
    from gaze4hri_bench.pipeline.rows import gt_geometry, intrinsics
    from gaze4hri_bench.spec_file import load_spec
    from gaze4hri_core.gaze import vector_to_pitchyaw

    spec, _ = load_spec(spec_file)
    method = OnnxMethod(spec.name, spec=spec)
    ds = Dataset(sessions, subjects=subjects)
    xs, ys = [], []
    for t in ds.trials():
        gt = ds.trial_ground_truth(t)
        ok = gt[gt["valid"]]
        truth = dict(zip(ok["frame"], ok[["gt_x", "gt_y", "gt_z"]].to_numpy(float), strict=True))
        geo, K = gt_geometry(gt), None
        for fs in ds.iter_frames(t):
            if fs.index not in truth:
                continue
            K = intrinsics(ds, t, fs.image.shape) if K is None else K
            p = method.prepare(frame_context(fs.index, fs.t_ns, fs.image, None, K, geo.get(fs.index)), "rectified")
            if p is not None:
                xs.append(p.tensor)
                ys.append(vector_to_pitchyaw(p.frame_rot @ truth[fs.index]))  # truth in the normalized camera
    return np.stack(xs).astype(np.float32), np.stack(ys).astype(np.float32)


def cached_patches(sessions: Path, subjects: list[str], spec_file: Path, cache: Path):
    """:func:`patches` per subject, kept in ``cache``/<subject>.npz for the next run."""
    cache.mkdir(parents=True, exist_ok=True)
    xs, ys = [], []
    for s in subjects:
        f = cache / f"{s}.npz"
        if not f.is_file():
            x, y = patches(sessions, [s], spec_file)
            np.savez(f, x=x, y=y)
        z = np.load(f)
        xs.append(z["x"])
        ys.append(z["y"])
    return np.concatenate(xs), np.concatenate(ys)


def build_net(seed: int = 0):
    """A small CNN: four conv-BN-ReLU stages (16-32-64-96 channels, stride 2), global
    average pooling, a linear [pitch, yaw] head (about 0.1 M parameters)."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    layers, c = [], 3
    for w in (16, 32, 64, 96):
        layers += [nn.Conv2d(c, w, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(inplace=True)]
        c = w
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 2))


def train(net, x: np.ndarray, y: np.ndarray, epochs: int, log=print, seed: int = 0):
    """Adam, L1 loss on [pitch, yaw], cosine learning rate from 3e-3; random shifts of a
    few pixels and brightness/contrast jitter (the illumination trials) as augmentation."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(1)  # small batches: one thread is faster than two on a shared machine
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    opt = torch.optim.Adam(net.parameters(), lr=3e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
    g = torch.Generator().manual_seed(seed)
    for ep in range(epochs):
        net.train()
        perm, total = torch.randperm(len(xt), generator=g), 0.0
        for i in range(0, len(perm), 64):
            idx = perm[i:i + 64]
            xb = xt[idx]
            dx, dy = (int(v) for v in torch.randint(-3, 4, (2,), generator=g))
            xb = torch.roll(xb, (dy, dx), dims=(2, 3))
            xb = xb * (0.8 + 0.4 * torch.rand(len(xb), 1, 1, 1, generator=g)) + 0.3 * (
                torch.rand(len(xb), 1, 1, 1, generator=g) - 0.5)
            loss = torch.nn.functional.l1_loss(net(xb), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        sched.step()
        log(f"  epoch {ep + 1}/{epochs}: L1 {np.degrees(total / len(xt)):.2f} deg")
    return net.eval()


def export(net, path: Path) -> Path:
    """ONNX as the model zoo exports (TorchScript exporter, opset 17, dynamic batch B)."""
    import torch

    net.eval()
    torch.onnx.export(net, torch.zeros(2, 3, SIZE, SIZE), str(path), input_names=["face"], output_names=["gaze"],
                      dynamic_axes={"face": {0: "B"}, "gaze": {0: "B"}}, opset_version=17, dynamo=False)
    return path


def bench(sessions: Path, held_out: list[str], specs: list[Path], out: Path, zoo: list[str] = (),
          models: Path | None = None) -> dict[str, float]:
    """``gaze4hri-bench run`` on the held-out subjects; median error of valid frames per
    method. ``zoo``: built-in networks exported with random weights into ``models`` first."""
    import pandas as pd

    exe = str(Path(sys.executable).with_name("gaze4hri-bench"))
    cmd = [exe, "run", "--data", str(sessions), "--out", str(out), "--subjects", *held_out, "--method", "head_pose"]
    for s in specs:
        cmd += ["--method", str(s)]
    for m in zoo:
        if not (models / f"{m}.onnx").is_file():
            subprocess.run([exe, "models", "export", m, "--random-init", "--models-dir", str(models)], check=True)
        cmd += ["--method", m]
    if zoo:
        cmd += ["--models-dir", str(models)]
    subprocess.run(cmd + ["--device", "cpu", "--no-progress"], check=True)
    meds = {}
    for f in sorted(out.glob("*.parquet")):
        df = pd.read_parquet(f, columns=["method", "valid", "error_deg"])
        meds[str(df["method"].iloc[0])] = float(df.loc[df["valid"], "error_deg"].median())
    return meds


def conventions(sessions: Path, held_out: list[str], d: Path, frames: int) -> list[dict]:
    """``methods check`` of the true spec and of each deliberately wrong one."""
    from gaze4hri_bench.pipeline.convention_check import check_method

    variants = {"true spec (pitch_yaw, rad, rgb)": {},
                "wrong: order yaw_pitch": {"order": "yaw_pitch"},
                "wrong: unit deg": {"unit": "deg"},
                "wrong: colour bgr": {"colour": "bgr"}}
    rows = []
    for label, kw in variants.items():
        name = NAME + "".join(f"_{v}" for v in kw.values())
        spec = write_spec(d / f"{name}.yaml", spec_dict(name, **kw))
        res = check_method(str(spec), sessions, frames, held_out)
        rows.append({"spec": label, "declared_deg": res.declared_median, "best": res.rows[0][0],
                     "best_deg": res.rows[0][1], "flagged": res.alternative_better, "verdict": res.verdict(),
                     "table": {n: m for n, m, _ in res.rows}, "constant_deg": res.constant_median})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("out/own_model"), help="work folder (default out/own_model)")
    ap.add_argument("--sessions", type=Path, default=None, help="reuse these simulated sessions instead")
    ap.add_argument("--subjects", type=int, default=6, help="simulated subjects (default 6; the last 2 held out)")
    ap.add_argument("--held-out", type=int, default=2, help="subjects kept for the benchmark (default 2)")
    ap.add_argument("--seconds", type=float, default=1.0, help="seconds per simulated trial (default 1)")
    ap.add_argument("--epochs", type=int, default=30, help="training epochs (default 30)")
    ap.add_argument("--frames", type=int, default=200, help="frames the convention check samples (default 200)")
    ap.add_argument("--zoo", nargs="*", default=[], metavar="METHOD",
                    help="built-in networks to run with random weights beside it, e.g. puregaze_eth (slow on CPU)")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    sessions = a.sessions or simulate(a.out, a.subjects, a.seconds)
    subjects = sorted(p.name for p in sessions.iterdir() if (p / "session.yaml").is_file())
    train_s, held = subjects[:-a.held_out], subjects[-a.held_out:]
    spec = write_spec(a.out / f"{NAME}.yaml", spec_dict())
    x, y = cached_patches(sessions, train_s, spec, a.out / "patches")
    print(f"{len(x)} training patches from {', '.join(train_s)}; held out: {', '.join(held)}")
    net = train(build_net(), x, y, a.epochs)
    export(net, a.out / f"{NAME}.onnx")
    rnd = a.out / "random"
    rnd.mkdir(exist_ok=True)
    export(build_net(seed=1).eval(), rnd / f"{NAME}.onnx")
    rspec = write_spec(rnd / "ownnet_random.yaml", {**spec_dict("ownnet_random"), "weights_file": f"{NAME}.onnx"})
    meds = bench(sessions, held, [spec, rspec], a.out / "results", a.zoo, a.out / "models")
    rows = conventions(sessions, held, a.out, a.frames)
    (a.out / "summary.json").write_text(json.dumps({"medians": meds, "conventions": rows}, indent=2))
    print("\nmedian angular error on held-out subjects " + ", ".join(held) + ":")
    for m, v in meds.items():
        print(f"  {m:16s} {v:6.1f} deg")
    print("\nconvention check (methods check):")
    for r in rows:
        print(f"  {r['spec']:32s} declared {r['declared_deg']:6.1f}  best: {r['best']} {r['best_deg']:.1f}"
              f"  {'FLAGGED' if r['flagged'] else ''}")
    print(f"\ndone in {time.perf_counter() - t0:.0f} s; summary: {a.out / 'summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
