#!/usr/bin/env bash
# Bootstrap .venv-jazzy: the acquisition side (gaze4hri_core, gaze4hri_sim, gaze4hri_acq) on
# Python 3.12 with ROS 2 Jazzy rclpy and messages as PyPI wheels (ros-jazzy-*), for
# `make test-jazzy`. The main environment (.venv: Python 3.11 + Kilted, scripts/bootstrap.sh) is
# left alone. Installs requirements/ros-jazzy.txt (its pins come from base.txt and ros.txt, used
# as constraints), tf2_msgs (scripts/build_tf2_msgs.sh) and the three packages in editable
# mode; not the benchmark side.
# Idempotent like bootstrap.sh: when nothing changed since the last run it exits in about a second.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${GAZE4HRI_JAZZY_VENV:-$ROOT/.venv-jazzy}"
# Python 3.12: $GAZE4HRI_PYTHON312, else the first 3.12 among python3.12, python3 (Ubuntu 24.04's),
# /usr/bin/python3.12 and pyenv's installs (pyenv's shim refuses a version that is not selected).
is312() { "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' >/dev/null 2>&1; }
PYTHON="${GAZE4HRI_PYTHON312:-}"
if [[ -z "$PYTHON" ]]; then
  for c in python3.12 python3 /usr/bin/python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12; do
    if is312 "$c"; then PYTHON="$c"; break; fi
  done
fi
say() { printf '[bootstrap-jazzy] %s\n' "$*"; }
IMPORTS="import rclpy, tf2_msgs.msg, gaze4hri_core, gaze4hri_sim, gaze4hri_acq"

STAMP_INPUTS=(requirements/ros-jazzy.txt requirements/base.txt requirements/ros.txt src/gaze4hri_core/setup.py src/gaze4hri_sim/setup.py src/gaze4hri_acq/setup.py scripts/bootstrap_jazzy.sh
              scripts/build_tf2_msgs.sh third_party/tf2_msgs/CMakeLists.txt third_party/tf2_msgs/package.xml third_party/tf2_msgs/wheel_paths.cmake third_party/tf2_msgs/msg/*.msg third_party/tf2_msgs/srv/*.srv third_party/tf2_msgs/action/*.action)
STAMP="$(cat "${STAMP_INPUTS[@]}" | sha256sum | cut -d' ' -f1)"
if [[ -f "$VENV/.bootstrap-stamp" && "$(cat "$VENV/.bootstrap-stamp")" == "$STAMP" ]] \
   && "$VENV/bin/python" -c "$IMPORTS" 2>/dev/null; then
  say "environment up to date ($VENV)"
  exit 0
fi

if [[ -z "$PYTHON" ]] || ! is312 "$PYTHON"; then
  echo "bootstrap-jazzy: error: needs Python 3.12 (the python3 of Ubuntu 24.04; else 'pyenv install 3.12'), found none${PYTHON:+ ('$PYTHON' is not one)}; set GAZE4HRI_PYTHON312=/path/to/python3.12" >&2
  exit 1
fi
# pyrealsense2 loads libusb-1.0 at import; scripts/bootstrap.sh installs it for the main venv.
if ! ldconfig -p 2>/dev/null | grep -q 'libusb-1.0.so.0'; then
  echo "bootstrap-jazzy: error: libusb-1.0 is missing (pyrealsense2): run 'make bootstrap' or 'sudo apt-get install -y libusb-1.0-0' and retry" >&2
  exit 1
fi

if [[ -x "$VENV/bin/python" ]] && ! is312 "$VENV/bin/python"; then
  say "$VENV is not a Python 3.12 environment: recreating it"
  rm -rf "$VENV"
fi
if [[ ! -x "$VENV/bin/python" ]]; then
  say "creating $VENV ($("$PYTHON" --version))"
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
# as in bootstrap.sh: keep pip's exit status, drop the warnings about absent index folders
pip_() { "${PIP[@]}" "$@" 2>&1 | { grep -v 'is ignored: it is neither a file nor a directory' || true; }; }
pip_ install -U "pip>=24"
say "installing the acquisition side's pinned stack and the ROS 2 Jazzy wheels (requirements/ros-jazzy.txt)"
pip_ install -r requirements/ros-jazzy.txt
# live /tf is optional: a failed build leaves sessions without it (one warning each) and its tests
# skipped with the reason; the error line above says what to install
bash scripts/build_tf2_msgs.sh "$VENV" || say "warning: tf2_msgs was not built: sessions and replays run without live /tf (see the error above)"
say "installing gaze4hri_core, gaze4hri_sim, gaze4hri_acq (editable)"
pip_ install --no-deps --no-build-isolation -e src/gaze4hri_core -e src/gaze4hri_sim -e src/gaze4hri_acq
"$VENV/bin/python" -c "$IMPORTS"
echo "$STAMP" > "$VENV/.bootstrap-stamp"
say "done"
