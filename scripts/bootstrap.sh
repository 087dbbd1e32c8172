#!/usr/bin/env bash
# Bootstrap the project's virtual environment (.venv) on a fresh machine.
# Idempotent: when nothing changed since the last run it exits in about a second.
# Installs: missing system packages via apt (libusb-1.0-0 for pyrealsense2, chromium
# for the report's headless browser test), the
# pinned Python stack (CPU PyTorch 2.13.0, never a CUDA build unless asked), ROS 2
# rclpy + messages as ros-kilted-* wheels when no system ROS 2 is sourced (then also
# tf2_msgs, built from third_party/tf2_msgs by scripts/build_tf2_msgs.sh), and the
# three project packages in editable mode.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${GAZE4HRI_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="${GAZE4HRI_TORCH:-torch==2.13.0}"
say() { printf '[bootstrap] %s\n' "$*"; }

STAMP_INPUTS=(requirements/*.txt src/gaze4hri_core/setup.py src/gaze4hri_sim/setup.py src/gaze4hri_acq/setup.py src/gaze4hri_bench/pyproject.toml scripts/bootstrap.sh
              scripts/build_tf2_msgs.sh third_party/tf2_msgs/CMakeLists.txt third_party/tf2_msgs/package.xml third_party/tf2_msgs/wheel_paths.cmake third_party/tf2_msgs/msg/*.msg third_party/tf2_msgs/srv/*.srv third_party/tf2_msgs/action/*.action)
STAMP="$(cat "${STAMP_INPUTS[@]}" | sha256sum | cut -d' ' -f1)-${TORCH_SPEC}"
if [[ -f "$VENV/.bootstrap-stamp" && "$(cat "$VENV/.bootstrap-stamp")" == "$STAMP" ]] \
   && "$VENV/bin/python" -c "import gaze4hri_core, gaze4hri_bench, gaze4hri_acq" 2>/dev/null; then
  say "environment up to date ($VENV)"
  exit 0
fi

# 1. System libraries -------------------------------------------------------------
missing=()
ldconfig -p 2>/dev/null | grep -q 'libusb-1.0.so.0' || missing+=(libusb-1.0-0)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)  # headless browser test of report.html (tests/bench/stats/test_report_browser.py)
if [[ -z "${ROS_DISTRO:-}" ]]; then  # building tf2_msgs (scripts/build_tf2_msgs.sh)
  command -v cmake >/dev/null 2>&1 || missing+=(cmake)
  command -v g++ >/dev/null 2>&1 || missing+=(g++)
fi
if ((${#missing[@]})); then
  if [[ $(id -u) == 0 ]]; then SUDO=""; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    echo "bootstrap: error: missing system packages (${missing[*]}): run 'sudo apt-get install -y ${missing[*]}' and retry" >&2
    exit 1
  fi
  say "installing system packages: ${missing[*]}"
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# 2. Virtual environment ----------------------------------------------------------
ROS_FROM_SYSTEM=0
if [[ -n "${ROS_DISTRO:-}" ]] && "$PYTHON" -c "import rclpy" 2>/dev/null; then
  ROS_FROM_SYSTEM=1
fi
if [[ ! -x "$VENV/bin/python" ]]; then
  say "creating $VENV"
  if ((ROS_FROM_SYSTEM)); then "$PYTHON" -m venv --system-site-packages "$VENV"; else "$PYTHON" -m venv "$VENV"; fi
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
# pip() keeps pip's exit status (pipefail) but drops the harmless warnings some
# machines' pip.conf produce for index folders that do not exist.
pip_() { "${PIP[@]}" "$@" 2>&1 | { grep -v 'is ignored: it is neither a file nor a directory' || true; }; }
pip_ install -U "pip>=24"
say "installing the pinned Python stack (requirements/base.txt, $TORCH_SPEC)"
pip_ install -r requirements/base.txt "$TORCH_SPEC"
say "installing mediapipe, ultralytics (BYTETracker) and torchvision metadata with --no-deps"
pip_ install --no-deps -r requirements/nodeps.txt
if ((ROS_FROM_SYSTEM)); then
  say "using the system ROS 2 ($ROS_DISTRO) rclpy"
else
  say "installing ROS 2 Kilted rclpy and messages from PyPI wheels (requirements/ros.txt)"
  pip_ install -r requirements/ros.txt
fi
if ((ROS_FROM_SYSTEM)) && ! "$VENV/bin/python" -c "import tf2_msgs.msg" 2>/dev/null; then
  say "warning: the sourced ROS 2 has no tf2_msgs: no live /tf (run 'sudo apt-get install -y ros-$ROS_DISTRO-tf2-msgs')"
elif ! ((ROS_FROM_SYSTEM)); then
  # live /tf is optional: a failed build leaves sessions without it (one warning each) and its tests
  # skipped with the reason; the error line above says what to install
  bash scripts/build_tf2_msgs.sh "$VENV" || say "warning: tf2_msgs was not built: sessions and replays run without live /tf (see the error above)"
fi
say "installing gaze4hri_core, gaze4hri_bench, gaze4hri_acq (editable)"
pip_ install --no-deps --no-build-isolation -e src/gaze4hri_core -e src/gaze4hri_sim -e src/gaze4hri_bench -e src/gaze4hri_acq
"$VENV/bin/python" -c "import gaze4hri_core, gaze4hri_bench, gaze4hri_acq"
echo "$STAMP" > "$VENV/.bootstrap-stamp"
say "done"
