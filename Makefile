# Gaze4HRI: `make demo` runs the main job on built-in defaults, `make test` the
# default test suite. Both bootstrap .venv on their own (scripts/bootstrap.sh).
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: bootstrap demo test test-long test-live lint bench colcon clean help

help:
	@echo "make demo   - simulated session -> benchmark -> report (out/demo)"
	@echo "make test   - the default test suite (no hardware, no GPU)"
	@echo "make test-long - the long tier (whole 63-trial session, MCGaze export, GaT direct export, SIGTERM; ~12 min)"
	@echo "make lint   - ruff"
	@echo "make bench  - performance benchmarks (benchmarks/, figures in docs/PERFORMANCE.md)"

bootstrap:
	@bash scripts/bootstrap.sh

demo: bootstrap
	$(VENV)/bin/gaze4hri-bench demo --out out/demo

test: bootstrap
	$(PY) -m pytest $(PYTEST_ARGS)

test-long: bootstrap
	$(PY) -m pytest -m long --timeout 1800 $(PYTEST_ARGS)

test-live: bootstrap
	$(PY) -m pytest -m live $(PYTEST_ARGS)

lint: bootstrap
	$(VENV)/bin/ruff check src tests benchmarks

bench: bootstrap
	$(PY) benchmarks/run_all.py

colcon: bootstrap
	cd ros2_ws && ../$(VENV)/bin/colcon build --symlink-install

clean:
	rm -rf out ros2_ws/build ros2_ws/install ros2_ws/log
