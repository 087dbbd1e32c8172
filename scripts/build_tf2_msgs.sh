#!/usr/bin/env bash
# Build tf2_msgs (third_party/tf2_msgs: upstream's .msg/.srv/.action files, unmodified) with
# colcon and the rosidl generator wheels into a virtual environment, so rclpy from PyPI can
# publish /tf and /tf_static (PyPI has no ros-<distro>-tf2-msgs wheel).
#   scripts/build_tf2_msgs.sh [VENV]      (default .venv; bootstrap.sh and bootstrap_jazzy.sh call it)
# The install prefix is the venv itself, laid out as the ros-<distro>-* wheels lay themselves out:
# libraries in $VENV/lib (the wheels' ros_wheels_bootstrapper puts sys.prefix/lib on
# LD_LIBRARY_PATH at interpreter start, which is how their own typesupport libraries load),
# the Python package in the venv's site-packages, share/ and the ament index in $VENV/share.
# Idempotent: a stamp file ($VENV/.tf2_msgs-stamp) over the sources and this script; when it
# matches and tf2_msgs imports, it exits at once. Skipped where a sourced ROS 2 (ROS_DISTRO)
# already provides tf2_msgs. Needs cmake >= 3.19, a C/C++ compiler and the Python headers.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$(cd "${1:-$ROOT/.venv}" && pwd)"
PY="$VENV/bin/python"
SRC="$ROOT/third_party/tf2_msgs"
WORK="$VENV/var/tf2_msgs"  # colcon's build and log folders
STAMP_FILE="$VENV/.tf2_msgs-stamp"
say() { printf '[tf2_msgs] %s\n' "$*"; }
die() { echo "build_tf2_msgs: error: $*" >&2; exit 1; }
importable() { "$PY" -c "from tf2_msgs.msg import TFMessage; TFMessage()" >/dev/null 2>&1; }

STAMP="$(cat "$SRC"/CMakeLists.txt "$SRC"/package.xml "$SRC"/wheel_paths.cmake "$SRC"/msg/* "$SRC"/srv/* "$SRC"/action/* \
         "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)-$("$PY" -c 'import sys; print(sys.version_info[:2])' | tr -d ' ')"
if [[ -n "${ROS_DISTRO:-}" && ! -f "$VENV/share/tf2_msgs/package.xml" ]] && importable; then
  say "using the sourced ROS 2 ($ROS_DISTRO) tf2_msgs"
  exit 0
fi
if [[ -f "$STAMP_FILE" && "$(cat "$STAMP_FILE")" == "$STAMP" ]] && importable; then
  say "up to date ($VENV)"
  exit 0
fi

[[ -x "$PY" ]] || die "no Python at $PY: run scripts/bootstrap.sh first"
for pkg in ament_cmake ament_package rosidl_default_generators geometry_msgs; do
  [[ -f "$VENV/share/$pkg/package.xml" ]] \
    || die "$pkg is not installed in $VENV: run scripts/bootstrap.sh (it installs the ros-<distro>-rosidl-default-generators and ament-cmake wheels of requirements/ros.txt)"
done
[[ -x "$VENV/bin/colcon" ]] || die "colcon is not installed in $VENV: run scripts/bootstrap.sh"
command -v cmake >/dev/null 2>&1 || die "cmake not found: run 'sudo apt-get install -y cmake g++' and retry"
command -v c++ >/dev/null 2>&1 || die "no C++ compiler: run 'sudo apt-get install -y g++' and retry"
cmake_ver="$(cmake --version | sed -n 's/^cmake version \([0-9]*\.[0-9]*\).*/\1/p')"
[[ "$(printf '%s\n3.19\n' "$cmake_ver" | sort -V | head -1)" == "3.19" ]] || die "cmake $cmake_ver is older than 3.19: install a newer one ('pip install cmake' in $VENV)"
PY_INC="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
[[ -f "$PY_INC/Python.h" ]] || die "no Python.h in $PY_INC: install the Python headers (e.g. 'sudo apt-get install -y python3-dev') and retry"
NP_INC="$("$PY" -c 'import numpy; print(numpy.get_include())')"

say "building tf2_msgs from third_party/tf2_msgs into $VENV (colcon, rosidl generators; about a minute)"
mkdir -p "$WORK"
LOG="$WORK/build.log"
# AMENT_PREFIX_PATH: rosidl's CMake finds the typesupports through the ament index
if ! env AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}" PATH="$VENV/bin:$PATH" \
    "$VENV/bin/colcon" --log-base "$WORK/log" build --base-paths "$SRC" --build-base "$WORK/build" \
    --install-base "$VENV" --merge-install --event-handlers console_direct+ \
    --cmake-args -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DPython3_EXECUTABLE="$PY" \
    -DCMAKE_PREFIX_PATH="$VENV" -DCMAKE_PROJECT_INCLUDE="$SRC/wheel_paths.cmake" \
    -DG4H_PYTHON_INCLUDE="$PY_INC" -DG4H_NUMPY_INCLUDE="$NP_INC" >"$LOG" 2>&1; then
  tail -n 25 "$LOG" >&2
  die "colcon build of tf2_msgs failed (full log: $LOG)"
fi
importable || die "tf2_msgs was built but does not import in $PY (log: $LOG)"
echo "$STAMP" > "$STAMP_FILE"
say "done: from tf2_msgs.msg import TFMessage works in $VENV"
