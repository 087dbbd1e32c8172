# Gaze4HRI: `make demo` runs the main job on built-in defaults, `make test` the
# default test suite. Both bootstrap .venv on their own (scripts/bootstrap.sh).
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
# the default suite on two pytest-xdist workers, each test file on one worker (its module fixtures built
# once); PYTEST_XDIST= runs it in one process. Tests that share a ROS graph take domains by worker.
PYTEST_XDIST ?= -n 2 --dist loadfile
# every thread's stack in the log when a default-tier test passes 240 s, before pytest-timeout's 300 s
# acts: a call blocked in C (ur_rtde, rcl) is out of the reach of its signal, and the stacks say where
STACKS := -o faulthandler_timeout=240

.PHONY: bootstrap demo test test-long test-live test-jazzy test-jazzy-quick lint bench wheels colcon clean help

help:
	@echo "make demo   - simulated session -> benchmark -> report (out/demo)"
	@echo "make test   - the default test suite (no hardware, no GPU)"
	@echo "make test-long - the long tier (whole 63-trial session, MCGaze export, GaT direct export, SIGTERM; ~12 min)"
	@echo "make test-jazzy - the acquisition tests on Python 3.12 + ROS 2 Jazzy wheels (.venv-jazzy; 4.5-5 min of tests)"
	@echo "make test-jazzy-quick - its node, launch and replay tiers without slow (what CI runs; ~3 min of tests)"
	@echo "make lint   - ruff"
	@echo "make wheels - the wheels of the one-command benchmark install (dist/, README)"
	@echo "make bench  - performance benchmarks (benchmarks/, figures in docs/PERFORMANCE.md)"

bootstrap:
	@bash scripts/bootstrap.sh

demo: bootstrap
	$(VENV)/bin/gaze4hri-bench demo --out out/demo

test: bootstrap
	$(PY) -m pytest $(PYTEST_XDIST) $(STACKS) $(PYTEST_ARGS)

test-long: bootstrap
	$(PY) -m pytest -m long --timeout 1800 $(PYTEST_ARGS)

test-live: bootstrap
	$(PY) -m pytest -m live $(PYTEST_ARGS)

# The acquisition side (gaze4hri_core, gaze4hri_sim, gaze4hri_acq: nodes, launch tier, recorder,
# replay) on Python 3.12 with the ros-jazzy-* wheels, in its own .venv-jazzy
# (scripts/bootstrap_jazzy.sh, requirements/ros-jazzy.txt): tests/core and tests/acq, without
# `live` and `long` (pyproject's addopts). .venv-jazzy has no benchmark side (gaze4hri_bench,
# pandas, onnxruntime, MediaPipe, torch), so the tests that use it are left out, by name:
JAZZY_VENV ?= .venv-jazzy
JAZZY_NEEDS_BENCH := \
	--ignore=tests/acq/test_gaze_node.py \
	--ignore=tests/acq/test_tracked_table.py \
	--deselect=tests/acq/test_bag_integrity.py::test_joint_state_bytes_are_exact_cdr \
	--deselect=tests/acq/test_bag_integrity.py::test_every_topic_of_a_recorded_session_decodes_with_rosbags \
	--deselect=tests/acq/test_bag_integrity.py::test_bench_run_names_the_damaged_trial_and_writes_the_others \
	--deselect=tests/acq/test_launch.py::test_live_gaze_launch_estimates_gaze_on_a_replayed_session \
	--deselect=tests/acq/test_live_gaze_launch.py::test_node_host_autostarts_the_gaze_node \
	--deselect=tests/acq/test_session_calibration.py::test_subject_without_file_to_benchmarked_session_with_no_manual_step \
	--deselect=tests/acq/test_session_lock.py::test_readers_read_a_session_being_recorded

# test-jazzy-quick (CI, .ci/run): only the tiers that run rclpy and the launch library.
JAZZY_QUICK := -m "(node or launch or replay) and not slow and not live and not long"

test-jazzy:
	@GAZE4HRI_JAZZY_VENV="$(abspath $(JAZZY_VENV))" bash scripts/bootstrap_jazzy.sh
	$(JAZZY_VENV)/bin/python -m pytest tests/core tests/sim tests/acq $(JAZZY_NEEDS_BENCH) $(STACKS) $(PYTEST_ARGS)

test-jazzy-quick:
	@GAZE4HRI_JAZZY_VENV="$(abspath $(JAZZY_VENV))" bash scripts/bootstrap_jazzy.sh
	$(JAZZY_VENV)/bin/python -m pytest tests/core tests/sim tests/acq $(JAZZY_NEEDS_BENCH) $(JAZZY_QUICK) $(STACKS) $(PYTEST_ARGS)

lint: bootstrap
	$(VENV)/bin/ruff check src tests benchmarks

wheels: bootstrap
	$(PY) scripts/build_wheels.py --out dist

bench: bootstrap
	$(PY) benchmarks/run_all.py

colcon: bootstrap
	cd ros2_ws && ../$(VENV)/bin/colcon build --symlink-install

clean:
	rm -rf out ros2_ws/build ros2_ws/install ros2_ws/log
