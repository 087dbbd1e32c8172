"""rosdep-complete ament packages (issue 21 item 1): what ``rosdep install --from-paths
ros2_ws/src --ignore-src`` installs on a lab machine is everything the code imports.

Two checks, both offline:
- the real ``rosdep`` (PyPI package rosdep, requirements/base.txt) resolves every key of
  every package.xml in ros2_ws/src for Ubuntu 24.04 (noble) with Jazzy and Kilted and for
  Debian 12 (bookworm) with Jazzy, from ros/rosdistro's rosdep database and distribution
  files vendored in ../shared/vendor/rosdistro (its README: ``rosdep update`` into a
  temporary ROS_HOME, sources list of ``yaml file://`` entries, ROSDISTRO_INDEX_URL). The
  command is the README's, with ``--simulate --reinstall`` and ``--os``/``--rosdistro``;
  rosdep exits non-zero when a key has no rule for the platform ("Cannot locate rosdep
  definition"), see rosdep's docs "rosdep install" and REP 111 (rosdep keys), REP 149
  (package.xml format 3).
- every third-party import of each package's Python files (ast: the package's modules and
  its launch files; setup.py is colcon's) maps through IMPORTS below to a key that the
  package declares as ``<depend>``/``<exec_depend>``, or is one of the pip-only modules
  (PIP_ONLY: no rosdep key exists), whose pin in requirements/lab.txt agrees with
  requirements/base.txt.

Keys without an apt package on noble/bookworm (the pip keys rosdep installs with pip),
checked against rosdep's own output below: python3-rosbags-pip (rosbags; it also brings lz4
and backports.zstd, what gaze4hri_core.mcap_crc decompresses with) and
python3-pyrealsense2-pip (pyrealsense2). pydantic: rosdep's python3-pydantic is apt's 1.10 on
both; the code needs >= 2.7, stated as ``version_gte`` in package.xml and installed from
requirements/lab.txt into the lab venv (README "Lab install").
"""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WS_SRC = ROOT / "ros2_ws" / "src"
VENDOR = ROOT.parent / "shared" / "vendor" / "rosdistro"

pytestmark = pytest.mark.packaging

# import name -> rosdep key (REP 111 key names as in ros/rosdistro rosdep/*.yaml or a ROS package)
IMPORTS: dict[str, str] = {
    "numpy": "python3-numpy",
    "scipy": "python3-scipy",
    "yaml": "python3-yaml",
    "pydantic": "python3-pydantic",  # apt 1.10 on noble/bookworm: 2.x from requirements/lab.txt
    "cv2": "python3-opencv",
    "skimage": "python3-skimage",
    "rich": "python3-rich",
    "rosbags": "python3-rosbags-pip",
    "lz4": "python3-rosbags-pip",  # no python lz4 key; rosbags requires lz4
    "backports": "python3-rosbags-pip",  # backports.zstd: rosbags requires it (Python < 3.14)
    "pyrealsense2": "python3-pyrealsense2-pip",
    "rclpy": "rclpy",
    "rcl_interfaces": "rcl_interfaces",
    "rosidl_parser": "rosidl_parser",
    "ament_index_python": "ament_index_python",
    "launch": "launch",
    "launch_ros": "launch_ros",
    "std_msgs": "std_msgs",
    "std_srvs": "std_srvs",
    "sensor_msgs": "sensor_msgs",
    "geometry_msgs": "geometry_msgs",
    "diagnostic_msgs": "diagnostic_msgs",
    "lifecycle_msgs": "lifecycle_msgs",
    "rosgraph_msgs": "rosgraph_msgs",
    "visualization_msgs": "visualization_msgs",
    "tf2_msgs": "tf2_msgs",
    "builtin_interfaces": "builtin_interfaces",
    # the benchmark's, for when gaze4hri_bench joins the workspace (issue 21 item 4)
    "pandas": "python3-pandas",
    "matplotlib": "python3-matplotlib",
    "h5py": "python3-h5py",
    "psutil": "python3-psutil",
    "tqdm": "python3-tqdm",
    "PIL": "python3-pil",
    "onnxruntime": "python3-onnxruntime-pip",
}

# modules with no rosdep key at all: pip-only, pinned in requirements/lab.txt (distribution name)
PIP_ONLY: dict[str, str] = {
    "rtde_control": "ur-rtde",  # ur_rtde (UR5, backend:=real)
    "rtde_receive": "ur-rtde",
    "dashboard_client": "ur-rtde",  # ur_rtde's Dashboard Server client (the doctor's robot check)
    "natnet": "natnet",  # OptiTrack NatNet (backend:=real)
    "foxglove": "foxglove-sdk",  # the session's Foxglove live view (live_view.py)
    "zstandard": "zstandard",  # mcap_crc's fallback when backports.zstd is absent; not needed with rosbags
    "isal": "isal",  # mcap_crc's faster CRC-32 where installed (the benchmark's dependency); zlib otherwise
}
# a fallback import (try/except ImportError) needs no declaration
OPTIONAL_FALLBACKS = {"zstandard", "isal"}

# first-party packages that are not (yet) ament packages of the workspace: imported lazily by
# the live gaze node only (issue 21 item 4 puts gaze4hri_bench into ros2_ws)
NOT_IN_WORKSPACE_OK = {"gaze4hri_bench"}


def _packages() -> dict[str, Path]:
    """name -> package directory of every ament package in ros2_ws/src (symlinks resolved)."""
    from catkin_pkg.package import parse_package

    out = {}
    for d in sorted(WS_SRC.iterdir()):
        if (d / "package.xml").is_file():
            out[parse_package(d / "package.xml").name] = d.resolve()
    return out


def _declared(pkg_dir: Path) -> set[str]:
    """Keys a package needs at run time: <depend> and <exec_depend> (REP 149)."""
    from catkin_pkg.package import parse_package

    p = parse_package(pkg_dir / "package.xml")
    return {d.name for d in p.exec_depends} | {d.name for d in p.run_depends}


def _all_keys(pkg_dir: Path) -> set[str]:
    from catkin_pkg.package import parse_package

    p = parse_package(pkg_dir / "package.xml")
    deps = p.build_depends + p.buildtool_depends + p.exec_depends + p.test_depends + p.build_export_depends
    return {d.name for d in deps}


def _imports(pkg_dir: Path) -> dict[str, set[str]]:
    """Top-level module of every absolute import -> files importing it (the package's modules
    and launch files; setup.py excluded: it runs under colcon's own Python)."""
    found: dict[str, set[str]] = {}
    for f in sorted(pkg_dir.rglob("*.py")):
        rel = f.relative_to(pkg_dir)
        # <pkg>/testing: stand-ins for the tests and benchmarks (dpkt), not imported at run time
        if (rel.name == "setup.py" or rel.parts[0] in ("build", "install", "test", "tests") or ".egg-info" in str(rel)
                or "testing" in rel.parts[:2]):
            continue
        for node in ast.walk(ast.parse(f.read_text("utf-8"), str(f))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for n in names:
                found.setdefault(n.split(".")[0], set()).add(str(rel))
    return found


def _fallback_only(pkg_dir: Path, module: str) -> bool:
    """Whether every import of ``module`` sits in a try whose handler catches ImportError."""
    for f in pkg_dir.rglob("*.py"):
        tree = ast.parse(f.read_text("utf-8"))
        guarded = set()
        for t in ast.walk(tree):
            if isinstance(t, ast.Try) and any(isinstance(h.type, ast.Name)
                                              and h.type.id in ("ImportError", "ModuleNotFoundError")
                                              for h in t.handlers):
                for n in ast.walk(t):
                    if isinstance(n, ast.Import | ast.ImportFrom):
                        guarded.add(id(n))
        for n in ast.walk(tree):
            mods = ([a.name for a in n.names] if isinstance(n, ast.Import)
                    else [n.module] if isinstance(n, ast.ImportFrom) and n.module else [])
            if any(m.split(".")[0] == module for m in mods) and id(n) not in guarded:
                return False
    return True


def _pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text("utf-8").splitlines():
        line = line.split("#")[0].strip()
        m = re.match(r"([A-Za-z0-9_.\-]+)\s*(.*)", line)
        if m:
            out[m.group(1).lower().replace("_", "-")] = m.group(2).replace(" ", "")
    return out


def test_every_import_is_declared_in_package_xml():
    """Each third-party import of an ament package maps to a declared run-time key, or is
    pip-only (no rosdep key) and pinned in requirements/lab.txt as in base.txt."""
    pkgs = _packages()
    assert {"gaze4hri_core", "gaze4hri_sim", "gaze4hri_acq"} <= set(pkgs)
    std = set(sys.stdlib_module_names)
    lab, base = _pins(ROOT / "requirements" / "lab.txt"), _pins(ROOT / "requirements" / "base.txt")
    problems = []
    for name, d in pkgs.items():
        declared = _declared(d)
        for mod, files in sorted(_imports(d).items()):
            where = f"{name}: import {mod} ({sorted(files)[0]})"
            if mod in std or mod == name:
                continue
            if mod in pkgs:
                if mod not in declared:
                    problems.append(f"{where}: workspace package not declared as <depend>/<exec_depend>")
            elif mod in NOT_IN_WORKSPACE_OK:
                continue
            elif mod in PIP_ONLY:
                dist = PIP_ONLY[mod]
                if mod in OPTIONAL_FALLBACKS:
                    if not _fallback_only(d, mod):
                        problems.append(f"{where}: listed as a fallback but imported unguarded")
                elif dist not in lab or lab[dist] != base.get(dist):
                    problems.append(f"{where}: pip-only {dist} must be pinned in requirements/lab.txt as in base.txt")
            elif mod not in IMPORTS:
                problems.append(f"{where}: unknown import: add it to IMPORTS (rosdep key) or PIP_ONLY")
            elif IMPORTS[mod] not in declared:
                problems.append(f"{where}: needs <exec_depend>{IMPORTS[mod]}</exec_depend>")
    # replay and the recorder import message modules by name (importlib): every package of a
    # recorded type must be declared by gaze4hri_acq too
    from gaze4hri_core.session import MSG_TYPES

    for ty in sorted(set(MSG_TYPES.values())):
        if ty.split("/")[0] not in _declared(pkgs["gaze4hri_acq"]):
            problems.append(f"gaze4hri_acq: records and replays {ty}: declare {ty.split('/')[0]}")
    assert not problems, "\n".join(problems)


def test_pip_only_modules_have_no_rosdep_key_and_lab_pins_match_base():
    """PIP_ONLY is true today: no rule of the rosdep database installs these distributions (when
    one appears, declare it instead); and every pin of requirements/lab.txt is base.txt's."""
    import yaml

    if not (VENDOR / "rosdep" / "base.yaml").is_file():
        pytest.skip(f"the rosdep database is absent: no {VENDOR / 'rosdep'} (../shared/vendor/rosdistro, README there)")
    rules = {}
    for f in ("base.yaml", "python.yaml"):
        rules.update(yaml.load((VENDOR / "rosdep" / f).read_text("utf-8"),
                               Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))

    def strings(v):
        if isinstance(v, dict):
            for x in v.values():
                yield from strings(x)
        elif isinstance(v, list):
            for x in v:
                yield from strings(x)
        elif isinstance(v, str):
            yield v.lower()

    provided = {s for v in rules.values() for s in strings(v)}
    for mod, dist in PIP_ONLY.items():
        if mod in OPTIONAL_FALLBACKS:
            continue
        assert dist not in provided and dist.replace("-", "_") not in provided, \
            f"{dist} has a rosdep rule now: declare its key"
    assert "python3-pydantic-pip" not in rules  # else: use it instead of the apt key + lab.txt
    lab, base = _pins(ROOT / "requirements" / "lab.txt"), _pins(ROOT / "requirements" / "base.txt")
    assert lab and all(base.get(k) == v for k, v in lab.items()), {k: (v, base.get(k)) for k, v in lab.items()}


# -------------------------------------------------------------- the real rosdep, offline
PLATFORMS = [("ubuntu:noble", "jazzy"), ("ubuntu:noble", "kilted"), ("debian:bookworm", "jazzy")]
PIP_KEYS = {"python3-rosbags-pip": "rosbags", "python3-pyrealsense2-pip": "pyrealsense2"}


@pytest.fixture(scope="module")
def rosdep_env(tmp_path_factory):
    """ROS_HOME with a fresh ``rosdep update`` cache from the vendored database (no network)."""
    exe = shutil.which("rosdep", path=str(Path(sys.executable).parent)) or shutil.which("rosdep")
    if exe is None:
        pytest.fail("rosdep is not installed: requirements/base.txt pins it (make bootstrap)")
    if not (VENDOR / "rosdep" / "base.yaml").is_file():
        pytest.skip(f"no vendored rosdistro database at {VENDOR}")
    tmp = tmp_path_factory.mktemp("rosdep")
    (tmp / "sources").mkdir()
    # file URIs, percent-encoded: a sources list line is split at whitespace, so a checkout path with a
    # space must not appear raw (rosdep would read "file:///tmp/my" as the source)
    (tmp / "sources" / "20-local.list").write_text(
        "".join(f"yaml {(VENDOR / 'rosdep' / f).as_uri()}\n" for f in ("base.yaml", "python.yaml")), "utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROS_")}
    env.update(ROSDISTRO_INDEX_URL=(VENDOR / "index-v4.yaml").as_uri(), ROSDEP_SOURCE_PATH=str(tmp / "sources"),
               ROS_HOME=str(tmp / "home"), ROS_PYTHON_VERSION="3",
               PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}")
    r = subprocess.run([exe, "update"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'Add distro "jazzy"' in r.stdout and 'Add distro "kilted"' in r.stdout, r.stdout
    return exe, env


def _resolve(exe: str, env: dict, keys: list[str], os_: str, distro: str) -> dict[str, tuple[str, list[str]]]:
    """``rosdep resolve`` of every key at once: key -> (installer, packages)."""
    r = subprocess.run([exe, "resolve", *keys, f"--os={os_}", f"--rosdistro={distro}"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, f"{os_} {distro}: {r.stdout}{r.stderr}"  # "no rosdep rule for ..." otherwise
    out, key, inst = {}, None, None
    for line in r.stdout.splitlines():
        if m := re.fullmatch(r"#ROSDEP\[(.+)\]", line):
            key, inst = m.group(1), None
        elif line.startswith("#"):
            inst = line[1:]
        elif line.strip() and key is not None and inst is not None:
            out[key] = (inst, line.split())
    return out


def test_rosdep_resolves_every_key_offline(rosdep_env):
    """The keys ``rosdep install --from-paths ros2_ws/src --ignore-src`` installs (``rosdep keys``,
    the same crawl) all resolve for noble/Jazzy, noble/Kilted and bookworm/Jazzy: ROS packages to
    ros-<distro>-*, the python3-* keys to their apt packages, and only PIP_KEYS to pip."""
    exe, env = rosdep_env
    r = subprocess.run([exe, "keys", "--from-paths", str(WS_SRC), "--ignore-src"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    keys = sorted(r.stdout.split())
    pkgs = _packages()
    # rosdep reads what catkin_pkg reads
    assert set(keys) == set().union(*(_all_keys(d) for d in pkgs.values())) - set(pkgs)
    for os_, distro in PLATFORMS:
        got = _resolve(exe, env, keys, os_, distro)
        assert set(got) == set(keys), (os_, distro, set(keys) - set(got))
        ros = set(keys) & _released(distro)
        assert ros >= {"rclpy", "launch", "tf2_msgs", "rosgraph_msgs", "visualization_msgs", "rcl_interfaces"}
        for k in ros:  # ROS package keys -> ros-<distro>-<name> (REP 2005 naming)
            assert got[k] == ("apt", [f"ros-{distro}-{k.replace('_', '-')}"]), (os_, distro, k, got[k])
        for k in set(keys) - ros:
            # these python3-* keys name their apt package
            want = ("pip", [PIP_KEYS[k]]) if k in PIP_KEYS else ("apt", [k])
            assert got[k] == want, (os_, distro, k, got[k])
    # pydantic resolves to apt's 1.10 on noble and bookworm: 2.x from requirements/lab.txt (package.xml)
    assert "python3-pydantic" in keys


@pytest.mark.long
def test_readme_rosdep_install_simulated(rosdep_env):
    """The README's command itself, simulated (``--simulate --reinstall``: every key, nothing
    installed; ``--as-root pip:false``: pip keys into the active venv): exit 0 on each platform.
    long: rosdep asks this machine's apt-cache about every apt package (about 3 s each)."""
    exe, env = rosdep_env
    for os_, distro in PLATFORMS:
        r = subprocess.run([exe, "install", "--simulate", "--reinstall", "--from-paths", str(WS_SRC), "--ignore-src",
                            "-y", f"--os={os_}", f"--rosdistro={distro}", "--as-root", "pip:false"], env=env, cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{os_} {distro}:\n{r.stdout}{r.stderr}"
        assert set(re.findall(r"pip3? install -U -I (\S+)", r.stdout)) == set(PIP_KEYS.values()), r.stdout
        assert f"ros-{distro}-rclpy" in r.stdout and "python3-pydantic" in r.stdout, r.stdout


def _released(distro: str) -> set[str]:
    """Package names released in the vendored <distro>/distribution.yaml (REP 143)."""
    import yaml

    repos = yaml.load((VENDOR / distro / "distribution.yaml").read_text("utf-8"),
                      Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["repositories"]
    return {p for name, r in repos.items() if "release" in r for p in r["release"].get("packages", [name])}
