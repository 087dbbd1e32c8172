"""``gaze4hri-bench run --engine ray`` (issue 22, item 4): a real Ray runtime runs the
benchmark one trial per work unit and its results equal the local engine's row for row,
bit for bit; a rerun resumes from the part files; the local engine and ``import
gaze4hri_bench`` never import Ray; Ray missing or a cluster that does not answer is one
line. The ``long`` test starts a real two-node cluster on loopback (`ray start` twice,
separate temp dirs), kills the worker node (its raylet and the processes under it) while
its worker runs a unit and checks the results are still equal, with no row twice; then
kills the driver mid-run and checks that the same command resumes.

Data: real MCAP sessions (gaze4hri_bench.testing.session) every worker process opens from
disk, tiny ONNX models (conftest.tiny_models), the OpenCV Haar face detector (no model
download; the crop input runs real detection and tracking)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from gaze4hri_bench.cli import main as cli
from gaze4hri_bench.pipeline import results
from gaze4hri_bench.pipeline.run import RunConfig, run_benchmark
from gaze4hri_bench.testing.session import TrialSpec, write_session

pytestmark = pytest.mark.replay

REPO = Path(__file__).resolve().parents[2]
METHODS = ("tiny_test", "straight", "head_pose")
FILES = ["head_pose__none.parquet", "straight__none.parquet", "tiny_test__crop.parquet", "tiny_test__rectified.parquet"]


def _cfg(data: Path, models: Path, out: Path, engine: str = "local", progress: bool = False, **kw) -> RunConfig:
    return RunConfig(
        methods=METHODS,
        input="both",
        data=data,
        out=out,
        models_dir=models,
        detector="opencv_haar",
        blinks="off",
        batch=4,
        progress=progress,
        engine=engine,
        command_line=f"pytest --engine {engine}",
        **kw,
    )


def _assert_equal_rows(a_dir: Path, b_dir: Path) -> None:
    for name in FILES:
        a, b = pd.read_parquet(a_dir / name), pd.read_parquet(b_dir / name)
        assert not b.duplicated(["subject", "trial", "frame"]).any(), name
        pd.testing.assert_frame_equal(a, b, check_exact=True)  # row for row, bit for bit


def _parts(out: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in (out / ".parts").rglob("*.parquet")}


@pytest.fixture(scope="module")
def sessions(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("ray_sessions")
    write_session(
        tmp / "sessions",
        "S01",
        [
            TrialSpec("illum100_P5", size=(320, 180), seconds=0.4, drop=(5,)),
            TrialSpec("mutual_h_fast", size=(320, 180), seconds=0.4),
            TrialSpec("arc_P2", size=(320, 180), seconds=0.4),
        ],
        tmp=tmp,
    )
    return tmp / "sessions"


@pytest.fixture(scope="module")
def local_out(sessions, tiny_models, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("local")
    run_benchmark(_cfg(sessions, tiny_models, out), log=lambda *_: None)
    return out


@pytest.fixture(scope="module")
def ray_runtime():
    """One local Ray runtime (2 CPUs: two workers) shared by this module's tests."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_ray_equals_the_local_engine_row_for_row_then_resumes(
    sessions, tiny_models, local_out, ray_runtime, tmp_path, capfd
):
    said: list[str] = []
    out = tmp_path / "ray"
    paths = run_benchmark(_cfg(sessions, tiny_models, out, engine="ray", progress=True), log=said.append)
    assert sorted(p.name for p in paths) == FILES
    _assert_equal_rows(local_out, out)
    bars = capfd.readouterr().err  # the run's bars (tqdm on stderr), moved by the driver as units finished
    rows = len(pd.read_parquet(out / "straight__none.parquet"))
    for label in ("tiny_test (crop)", "tiny_test (rectified)", "straight (none)", "head_pose (none)"):
        assert f"{label} trial 3/3: 100%" in bars and f"{rows}/{rows} frames" in bars, label
    assert set(p.relative_to(out) for p in _parts(out)) == set(p.relative_to(local_out) for p in _parts(local_out))
    assert "ray: 3 unit(s) (one trial for all its jobs) on 2 worker(s), 1 CPU each" in said
    from gaze4hri_bench.pipeline.engine_ray import LAST_STATS

    units = LAST_STATS[0].units
    assert sorted(u["trial"] for u in units) == ["S01/arc_P2", "S01/illum100_P5", "S01/mutual_h_fast"]
    assert all(u["gpus_visible"] == "" for u in units)  # no GPU reserved (--device auto): none visible
    timing = [ln for ln in said if ln.startswith("timing:")]
    assert timing[0].startswith("timing: 3 trial(s), ") and "decoded once for 4 job(s)" in timing[0]
    md = results.read_metadata(out / "tiny_test__crop.parquet")
    assert md["timing"]["device"] == "cpu" and md["timing"]["infer_s"] > 0 and md["detector"] == "opencv_haar"
    assert "tiny_test__rectified" in md["timing"]["shared_with"]  # decoded once for every job of the unit
    # resume: one job's part removed -> only that (job, trial) runs again; the rest is untouched
    before = _parts(out)
    gone = results.part_path(results.parts_dir(out, "tiny_test", "crop"), "S01", "mutual_h_fast")
    gone.unlink()
    said.clear()
    run_benchmark(_cfg(sessions, tiny_models, out, engine="ray"), log=said.append)
    assert "tiny_test (crop): 1 trial(s) to run, 2 already done (resumed) on ray (--device auto)" in said
    assert "straight (none): 0 trial(s) to run, 3 already done (resumed)" in said
    assert "ray: 1 unit(s) (one trial for all its jobs) on 1 worker(s), 1 CPU each" in said
    after = _parts(out)
    assert all(after[p] == m for p, m in before.items() if p != gone) and gone in after
    _assert_equal_rows(local_out, out)


def test_a_model_missing_on_the_workers_is_one_line(sessions, tiny_models, ray_runtime, tmp_path):
    """The driver resolved the model (plan_jobs) but the workers cannot load it (a node
    without the shared models folder): the run stops with the worker's one-line error."""
    from gaze4hri_bench.pipeline.run import plan_jobs
    from gaze4hri_core.errors import Gaze4HRIError

    models = tmp_path / "models"
    shutil.copytree(tiny_models, models)
    cfg = RunConfig(
        methods=("tiny_test",),
        input="rectified",
        data=sessions,
        out=tmp_path / "out",
        models_dir=models,
        blinks="off",
        progress=False,
        engine="ray",
        command_line="pytest",
    )
    jobs = plan_jobs(cfg)
    jobs[0].model.path.write_bytes(b"not an onnx file")  # after the driver checked it
    with pytest.raises(Gaze4HRIError, match=r"^on Ray worker .*: ONNX Runtime cannot load .*tiny_test"):
        run_benchmark(cfg, log=lambda *_: None, jobs=jobs)
    assert not list((tmp_path / "out").rglob("*.parquet"))


def _no_ray_script(body: str) -> str:
    return (
        "import sys\n"
        + body
        + "\nprint('RAY_IMPORTED' if any(m == 'ray' or m.startswith('ray.') for m in sys.modules) else 'NO_RAY')\n"
    )


def test_import_and_a_local_run_never_import_ray(tmp_path):
    body = f"""
import gaze4hri_bench, gaze4hri_bench.cli
from pathlib import Path
sys.path.insert(0, {str(REPO)!r})
from tests.bench._synth import SynthDataset
from gaze4hri_bench.pipeline.run import RunConfig, run_benchmark
cfg = RunConfig(methods=("straight", "head_pose"), data=Path("/synthetic"), out=Path({str(tmp_path)!r}), progress=False,
                blinks="off", command_line="pytest")
paths = run_benchmark(cfg, log=lambda *_: None, dataset=SynthDataset(subjects=("S01",)))
assert len(paths) == 2
"""
    r = subprocess.run([sys.executable, "-c", _no_ray_script(body)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "NO_RAY"


def test_engine_ray_without_ray_installed_is_one_line(tmp_path):
    """``ray`` made unimportable (None in sys.modules: Python raises ModuleNotFoundError)."""
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from gaze4hri_bench.cli import main\n"
        "sys.exit(main(['run', '--engine', 'ray', '-m', 'straight', "
        f"'--data', {str(tmp_path)!r}, '--out', {str(tmp_path / 'o')!r}]))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert "--engine ray needs the ray package" in line and "pip install ray==" in line


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_address_is_one_line(tmp_path, capfd):
    port = _free_port()  # nothing listens there
    code = cli(
        [
            "run",
            "--engine",
            "ray",
            "--address",
            f"127.0.0.1:{port}",
            "-m",
            "straight",
            "--data",
            str(tmp_path),
            "--out",
            str(tmp_path / "o"),
        ]
    )
    err = capfd.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert f"no Ray cluster answers at 127.0.0.1:{port}" in err[0] and "ray start --head" in err[0]
    assert cli(["run", "--address", f"127.0.0.1:{port}", "-m", "straight"]) == 2  # --address without --engine ray
    assert "apply to --engine ray only" in capfd.readouterr().err


# -- two nodes on loopback, one killed mid-run ----------------------------------------------------
def _ray_bin() -> str:
    return str(Path(sys.executable).with_name("ray"))


def _kill_tree_of(tag: str) -> list[int]:
    """SIGKILL the processes this test started for one node: those whose command line
    names its own temp dir (``tag``) and every process under them (Ray retitles its
    workers and agents, so they are found as children); returns their ids."""
    import psutil

    procs: dict[int, psutil.Process] = {}
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            if any(tag in a for a in (p.info["cmdline"] or [])):
                procs[p.pid] = p
                procs.update({k.pid: k for k in p.children(recursive=True)})
        except psutil.Error:
            pass
    for p in procs.values():
        try:
            p.kill()
        except psutil.Error:
            pass
    return list(procs)


@pytest.mark.long
def test_two_nodes_on_loopback_one_killed_mid_run_still_equal_and_a_killed_driver_resumes(
    sessions, tiny_models, local_out, tmp_path
):
    import psutil

    port = _free_port()
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
    }  # loopback only, no token to share
    short = Path(tempfile.mkdtemp(prefix="g4hray", dir="/tmp"))  # Ray's socket paths must stay under 107 bytes
    head, worker = short / "head", short / "worker"  # each node's own temp dir: how this test finds its processes
    common = ["--num-cpus", "1", "--node-ip-address", "127.0.0.1", "--disable-usage-stats"]
    try:
        subprocess.run(
            [
                _ray_bin(),
                "start",
                "--head",
                "--port",
                str(port),
                "--temp-dir",
                str(head),
                "--include-dashboard",
                "false",
                "--dashboard-port",
                str(_free_port()),
                *common,
            ],
            env=env,
            check=True,
            capture_output=True,
            timeout=180,
        )
        subprocess.run(
            [_ray_bin(), "start", "--address", f"127.0.0.1:{port}", "--temp-dir", str(worker), *common],
            env=env,
            check=True,
            capture_output=True,
            timeout=180,
        )
        out = tmp_path / "out"
        argv = [
            sys.executable,
            "-m",
            "gaze4hri_bench.cli",
            "run",
            "--engine",
            "ray",
            "--address",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "-m",
            "tiny_test",
            "-m",
            "straight",
            "-m",
            "head_pose",
            "--input",
            "both",
            "--data",
            str(sessions),
            "--models-dir",
            str(tiny_models),
            "--out",
            str(out),
            "--detector",
            "opencv_haar",
            "--blinks",
            "off",
            "--batch",
            "4",
            "--no-progress",
        ]
        killed: list[int] = []

        def kill_worker_node_mid_unit():
            """SIGKILL the worker node (its raylet and the processes under it) while its
            worker runs a unit (Ray titles a busy actor process ``ray::_TrialWorker.run_unit``)."""
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                for p in psutil.process_iter(["name", "cmdline"]):
                    try:
                        if p.info["name"] != "raylet" or not any(str(worker) in a for a in p.info["cmdline"] or []):
                            continue
                        kids = p.children(recursive=True)
                        if any("run_unit" in " ".join(k.cmdline()) for k in kids):
                            for k in [p, *kids]:
                                k.kill()
                                killed.append(k.pid)
                            return
                    except psutil.Error:
                        continue
                time.sleep(0.05)

        killer = threading.Thread(target=kill_worker_node_mid_unit, daemon=True)
        killer.start()
        r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
        killer.join(5)
        assert r.returncode == 0, r.stderr[-3000:] + r.stdout[-3000:]
        assert killed, "the worker node's raylet was never killed"
        assert "ray: 3 unit(s) (one trial for all its jobs) on 2 worker(s)" in r.stdout
        assert "ray: worker lost on S01/" in r.stdout, r.stdout  # the unit in flight there ran again on the head node
        _assert_equal_rows(local_out, out)

        # the driver killed mid-run (its workers go with it): the same command resumes
        out2 = tmp_path / "out2"
        argv2 = [a if a != str(out) else str(out2) for a in argv]
        driver = subprocess.Popen(argv2, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while not ((out2 / ".parts").is_dir() and any((out2 / ".parts").rglob("*.parquet"))):
            assert driver.poll() is None and time.monotonic() < deadline, "the run ended before any part was written"
            time.sleep(0.05)
        driver.kill()
        driver.wait(30)
        done = len(list((out2 / ".parts").rglob("*.parquet")))
        r = subprocess.run(argv2, env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:] + r.stdout[-3000:]
        assert "already done (resumed)" in r.stdout and done < 3 * len(FILES)
        _assert_equal_rows(local_out, out2)
    finally:
        _kill_tree_of(str(worker))
        _kill_tree_of(str(head))
        shutil.rmtree(short, ignore_errors=True)
