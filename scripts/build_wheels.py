"""Build the wheels a user installs the benchmark from, in one folder (default dist/):

  gaze4hri_core, gaze4hri_bench            built from src/ (pip wheel)
  mediapipe 0.10.21+gaze4hri.1             MediaPipe 0.10.21's own wheel with its declared
                                           requirements corrected (below)

then, on any machine: pip install --find-links dist "gaze4hri-bench[faces]"

Why a relabelled MediaPipe: 0.10.21 is the last release whose wheel ships the face detection,
face mesh and iris models (shared/reference/stack.md), but it declares numpy<2, protobuf<5 and
opencv-contrib-python (plus jax, sounddevice and sentencepiece, which its face solutions never
import). Those conflict with the benchmark's stack (numpy 2, protobuf 6, opencv-python-headless:
two cv2 distributions overwrite each other), so pip cannot install it beside the benchmark
without --no-deps. The relabelled wheel holds the same files byte for byte; only its METADATA
(version label and Requires-Dist) and RECORD differ. The local version label keeps it apart from
PyPI's wheel, and gaze4hri-bench's `faces` extra pins exactly it.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MEDIAPIPE = "0.10.21"
LABEL = "gaze4hri.1"  # bump when the requirements below change
# What the legacy face solutions import (mediapipe/__init__, python/solutions, tasks/python):
# checked by tests/test_wheel_install.py, which imports them in a fresh venv from these alone.
MEDIAPIPE_REQUIRES = ["absl-py>=2.0", "attrs>=19.1.0", "flatbuffers>=2.0", "matplotlib>=3.8", "numpy>=2.0,<3",
                      "protobuf>=4.25.3,<8", "opencv-python-headless>=4.8,<5"]


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def relabel_mediapipe(wheel: Path, out_dir: Path) -> Path:
    """MediaPipe's wheel under version ``0.10.21+gaze4hri.N`` with MEDIAPIPE_REQUIRES (PEP 427
    layout: the .dist-info folder carries the version, RECORD hashes every other file)."""
    old_info, version = f"mediapipe-{MEDIAPIPE}.dist-info/", f"{MEDIAPIPE}+{LABEL}"
    new_info = f"mediapipe-{version}.dist-info/"
    tags = wheel.name.removesuffix(".whl").split("-", 2)[2]
    target = out_dir / f"mediapipe-{version}-{tags}.whl"
    record: list[str] = []
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        if old_info + "METADATA" not in src.namelist():
            raise SystemExit(f"build_wheels: error: {wheel} is not MediaPipe {MEDIAPIPE}'s wheel")
        for info in src.infolist():
            name, data = info.filename, src.read(info)
            if name == old_info + "RECORD":
                continue
            if name.startswith(old_info):
                name = new_info + name[len(old_info):]
            if name == new_info + "METADATA":
                lines = [ln for ln in data.decode().split("\n") if not ln.startswith("Requires-Dist:")]
                lines = [f"Version: {version}" if ln.startswith("Version:") else ln for ln in lines]
                head = lines.index("")  # the headers end at the first blank line; the description follows
                lines[head:head] = [f"Requires-Dist: {r}" for r in MEDIAPIPE_REQUIRES]
                data = "\n".join(lines).encode()
            out = zipfile.ZipInfo(name, info.date_time)
            out.external_attr, out.compress_type = info.external_attr, zipfile.ZIP_DEFLATED
            dst.writestr(out, data)
            record.append(_record_line(name, data))
        record.append(f"{new_info}RECORD,,")
        dst.writestr(new_info + "RECORD", "\n".join(record) + "\n")
    return target


def _pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise SystemExit(f"build_wheels: error: pip {args[0]} failed: {tail[0]}")


def build(out_dir: Path, mediapipe_wheel: Path | None = None) -> list[Path]:
    """Every wheel of the one-command install, into ``out_dir``; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        # built from copies: setuptools leaves build/ and egg-info folders in the tree it builds
        skip = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
        copies = [shutil.copytree(REPO / "src" / p, Path(tmp) / p, ignore=skip)
                  for p in ("gaze4hri_core", "gaze4hri_bench")]
        _pip("wheel", "--no-deps", "-w", str(out_dir), *map(str, copies))
        if mediapipe_wheel is None:
            _pip("download", "--no-deps", "--only-binary", ":all:", "-d", tmp, f"mediapipe=={MEDIAPIPE}")
            mediapipe_wheel = next(Path(tmp).glob("mediapipe-*.whl"))
        relabel_mediapipe(mediapipe_wheel, out_dir)
    return sorted(out_dir.glob("*.whl"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, default=REPO / "dist", help="folder for the wheels (default dist/)")
    ap.add_argument("--mediapipe-wheel", type=Path, help="MediaPipe 0.10.21's wheel (default: pip download it)")
    args = ap.parse_args(argv)
    for wheel in build(args.out, args.mediapipe_wheel):
        print(wheel)
    print(f'install: pip install --find-links "{args.out}" "gaze4hri-bench[faces]"')
    return 0


if __name__ == "__main__":
    sys.exit(main())
