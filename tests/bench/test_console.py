"""The benchmark's console: native log noise silenced at the source, one overall bar per
job with the trial's bar beneath, messages above the bars, and the run's plan (methods
run and skipped, RANDOM weights, the detector auto picks)."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

NOISE = (b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
         b"W0000 00:00:1795524741.296341    7231 inference_feedback_manager.cc:114] "
         b"Feedback manager requires a model.\n"
         b"INFO: Created TensorFlow Lite XNNPACK delegate for CPU.\n")


def _py(code: str, env=None) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k != "GAZE4HRI_NATIVE_LOGS"}
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=e)


@pytest.mark.unit
def test_native_noise_dropped_errors_and_python_output_kept():
    code = ("import os, sys\nfrom gaze4hri_bench import _console\n_console.setup()\n"
            f"os.write(2, {NOISE!r})\n"
            "os.write(2, b'E0000 00:00:1.0  1 x.cc:1] a native error stays\\n')\n"
            "print('python line stays', file=sys.stderr)\n")
    p = _py(code)
    assert p.returncode == 0, p.stderr
    assert "a native error stays" in p.stderr and "python line stays" in p.stderr
    for needle in ("absl::InitializeLog", "W0000", "XNNPACK"):
        assert needle not in p.stderr
    off = _py(code, env={"GAZE4HRI_NATIVE_LOGS": "1"})  # the switch shows everything
    assert "W0000" in off.stderr and "XNNPACK" in off.stderr


@pytest.mark.replay
def test_mediapipe_prints_nothing_after_setup():
    pytest.importorskip("mediapipe")
    run = ("import numpy as np\nfrom gaze4hri_bench.faces.detectors import MediaPipeFaces\n"
           "d = MediaPipeFaces()\nd.detect(np.zeros((360, 640, 3), np.uint8))\n"
           "d._mesh.landmarks(np.zeros((360, 640, 3), np.uint8), [100, 100, 200, 200])\nd.close()\n")
    raw = _py(run, env={"GAZE4HRI_NATIVE_LOGS": "1"})
    assert raw.returncode == 0, raw.stderr[-2000:]
    if "GetPrototype" not in raw.stderr and "W0000" not in raw.stderr:
        pytest.skip("this mediapipe/protobuf pair prints no noise to silence")
    quiet = _py("from gaze4hri_bench import _console\n_console.setup()\n" + run)
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert quiet.stderr.strip() == "", quiet.stderr


def _tref(subject, trial, frames):
    return SimpleNamespace(subject=subject, trial=trial, record=SimpleNamespace(frames=frames))


@pytest.mark.unit
def test_one_overall_bar_per_job_with_trial_bars_beneath():
    from gaze4hri_bench.pipeline.progress import RunProgress

    stream, said = io.StringIO(), []
    with RunProgress(True, log=said.append, stream=stream) as prog:
        job = prog.job("head_pose (none)", [_tref("S01", "illum100_P5", 30), _tref("S01", "arc_P5", 60)])
        for n in (31, 58):  # the ground truth knows the true frame count
            with job.trial(SimpleNamespace(subject="S01", trial="x")) as bar:
                bar.total = n
                bar.refresh()
                for _ in range(n):
                    bar.update(1)
            prog.write("a message")
        job.close()
    text = stream.getvalue()
    last = text.replace("\r", "\n").strip().splitlines()[-1]
    assert "head_pose (none) trial 2/2" in last and "89/89 frames" in last and "100%" in last
    assert "S01/x" in text  # the trial's own bar
    assert said == ["a message", "a message"]  # through log, not into a bar


@pytest.mark.unit
def test_without_a_terminal_progress_is_occasional_lines():
    from gaze4hri_bench.pipeline.progress import RunProgress

    said = []
    prog = RunProgress(False, log=said.append, quiet_every_s=0.0)
    job = prog.job("m (crop)", [_tref("S01", f"t{i}", 10) for i in range(3)])
    for _ in range(3):
        with job.trial(SimpleNamespace(subject="S01", trial="t")) as bar:
            bar.update(10)
    assert said[0].startswith("m (crop): trial 1/3, 10 frames") and len(said) == 2


@pytest.mark.unit
def test_plan_says_random_weights_skipped_methods_and_detector(tmp_path: Path):
    from dataclasses import replace

    from gaze4hri_bench.pipeline.progress import plan_lines
    from gaze4hri_bench.pipeline.run import RunConfig, plan_job
    from gaze4hri_bench.pipeline.runtime import ModelFile

    j = plan_job("l2cs_gaze360", "crop", model=False)
    jobs = [plan_job("head_pose", "none"),
            replace(j, model=ModelFile(tmp_path / j.spec.weights_file, "0" * 64, {"random_init": True}))]
    cfg = RunConfig(methods=("head_pose", "l2cs_gaze360"), data=tmp_path, out=tmp_path, models_dir=tmp_path,
                    blinks="off")
    lines = plan_lines(jobs, cfg, defaulted=True)
    text = "\n".join(lines)
    assert "run  head_pose__none" in text and "RANDOM WEIGHTS" in text
    assert any(ln.startswith("skip puregaze_eth") and "models import puregaze_eth" in ln for ln in lines)
    assert "l2cs_gaze360" not in "".join(ln for ln in lines if ln.startswith("skip"))
    assert lines[-1].startswith("face detector: auto -> ")  # the crop input needs faces


@pytest.mark.replay
def test_run_in_a_terminal_is_quiet_with_one_bar_per_job(tmp_path):
    """`gaze4hri-bench run` in a pty on a real MCAP session with MediaPipe EAR blinks:
    the plan, then one bar per job reaching trial 2/2 and 100 %, and none of the
    third-party lines (protobuf, absl, TFLite)."""
    pytest.importorskip("mediapipe")
    import fcntl
    import pty
    import struct
    import termios

    from gaze4hri_bench.testing.session import TrialSpec, write_session

    root = tmp_path / "sessions"
    write_session(root, "S01", [TrialSpec("illum100_P5", size=(320, 180), seconds=0.5),
                                TrialSpec("illum010_P5", size=(320, 180), seconds=0.5)], tmp=tmp_path)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 150, 0, 0))
    exe = Path(sys.executable).with_name("gaze4hri-bench")
    cmd = [str(exe)] if exe.is_file() else [sys.executable, "-m", "gaze4hri_bench.cli"]
    env = {k: v for k, v in os.environ.items() if k != "GAZE4HRI_NATIVE_LOGS"}
    p = subprocess.Popen([*cmd, "run", "-m", "head_pose", "--data", str(root), "--out", str(tmp_path / "out")],
                         stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    buf = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        buf.extend(chunk)
    assert p.wait(timeout=120) == 0, buf.decode(errors="replace")[-3000:]
    os.close(master)
    text = buf.decode(errors="replace")
    for noise in ("GetPrototype", "W0000", "XNNPACK", "absl", "Ultralytics"):
        assert noise not in text, text[-3000:]
    assert "run  head_pose__none" in text and "face detector: auto -> " in text
    assert "head_pose (none) trial 2/2: 100%" in text
    assert text.count("head_pose (none) trial") >= 2  # the same bar moves (redrawn), not a bar per trial


@pytest.mark.unit
def test_an_interrupted_run_prints_the_command_that_resumes_it_on_its_own_line():
    """Issue 29: after Ctrl-C a resumable command (run, demo, deviations) prints itself,
    quoted (a folder with a space stays one argument), alone on the line after the lead."""
    import shlex

    argv = ["deviations", "--data", "/tmp/lab data/sessions", "--out", "/tmp/out [x]/dev", "--stride", "5"]
    code = ("import sys\nimport gaze4hri_bench.pipeline.deviations as D\n"
            "def boom(_args):\n    raise KeyboardInterrupt\n"
            "D.main = boom\nfrom gaze4hri_bench.cli import main\n"
            f"sys.exit(main({argv!r}))\n")
    r = _py(code)
    assert r.returncode == 130, r.stderr[-2000:]
    lines = r.stderr.splitlines()
    i = lines.index("run the same command again to resume:")
    assert shlex.split(lines[i + 1]) == ["gaze4hri-bench", *argv]
