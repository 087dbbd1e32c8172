"""``gaze4hri-bench run --engine ray``: the benchmark's trials spread over a Ray cluster.

A work unit is one trial for every job that still lacks it: a worker (a Ray actor that
holds the jobs' ONNX Runtime sessions and the face models, built once) runs the local
engine (engine.Engine) on that one trial, so the trial is decoded once for all its jobs,
and writes each job's part file itself (engine.write_job_part, atomic, keyed by
subject/trial). Resume, merge and provenance are therefore the local engine's: the
driver plans what is left from the part files, updates the run's progress bars as units
finish, and merges. A worker lost mid-unit: Ray restarts the actor (``max_restarts``)
and the driver hands the unit to the next worker that is up (``max_task_retries=0``: a
unit never waits on a restart that cannot be placed); parts already written by the lost
attempt are skipped, and a rewritten part replaces, never appends, so no row is doubled.
The driver killed: its actors go with it; a rerun resumes from the parts on disk.

Data, models and ``--out`` must be on a path every node sees (docs/cluster.md). Ray is
imported here only: the local engine and ``import gaze4hri_bench`` never import it.
"""
from __future__ import annotations

import dataclasses
import os
import socket
import time
import warnings

from gaze4hri_core.errors import Gaze4HRIError

from . import results
from .engine import Engine, Work, excluded_line, make_runner, open_dataset, write_job_part
from .frames import StageTimes

__all__ = ["RAY_VERSION", "import_ray", "connect", "run_ray", "run_work", "RayRunStats"]

RAY_VERSION = "2.60.0"  # the pin in requirements/base.txt
MAX_RESTARTS = 3  # Ray restarts of a lost worker (actor); each restart rebuilds its sessions
MAX_UNIT_TRIES = 4  # attempts of one unit across workers before the run stops with its error
LAST_STATS: list = []  # the last run's RayRunStats (benchmarks/ray_engine.py reads the per-unit records)
PLACEMENT_TIMEOUT_S = 900.0  # no unit running and no worker up for this long: the run stops (resumable)


def import_ray():
    """``ray``, or a one-line error saying how to install it."""
    try:
        import ray
    except ModuleNotFoundError:
        raise Gaze4HRIError("--engine ray needs the ray package, which is not installed",
                            "gaze4hri-bench run --engine ray",
                            f"install it with `python -m pip install ray=={RAY_VERSION}` (requirements/base.txt), "
                            "or run with --engine local") from None
    return ray


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """A host:port address must answer a TCP connect before ray.init waits on it
    (ray 2.60's ray.init on an address where nothing listens was still retrying after
    200 s here)."""
    if address in ("auto", "local") or "://" in address:
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise Gaze4HRIError(f"--address {address!r} is not host:port", "--address",
                            "pass the head node's address as `ray start --head` printed it, "
                            "e.g. 10.0.0.5:6379, or auto")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()  # [::1]:6379 too
    except OSError as e:
        raise Gaze4HRIError(f"no Ray cluster answers at {address} ({e.strerror or e})", "--address",
                            "start one with `ray start --head --port 6379` (docs/cluster.md) and pass that address, "
                            "or leave --address out to run on a local Ray runtime") from None


def connect(cfg) -> bool:
    """Join ``cfg.address`` (or start a local runtime); True when this call connected
    (and the run should disconnect at its end), False when Ray was already initialised
    by the caller (a test or benchmark that owns the runtime)."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    if cfg.address:
        _check_reachable(cfg.address)
    import logging

    native = os.environ.get("GAZE4HRI_NATIVE_LOGS", "") not in ("", "0")  # _console: show third-party logs
    try:
        ray.init(address=cfg.address or None, include_dashboard=False,
                 logging_level=logging.WARNING if native else logging.ERROR, log_to_driver=native)
    except (ConnectionError, RuntimeError, ValueError) as e:
        where = f"--address {cfg.address}" if cfg.address else "local Ray runtime"
        raise Gaze4HRIError(f"cannot start or join a Ray cluster: {str(e).splitlines()[0][:200]}", where,
                            "check `ray status` on the head node (docs/cluster.md), or leave --address out") from None
    return True


@dataclasses.dataclass
class RayRunStats:
    """What run.timing_lines reads from an engine (trials_decoded, shared, totals,
    t_start, last_done), plus one record per unit for benchmarks/ray_engine.py."""

    n_jobs: int
    t_start: float = 0.0
    trials_decoded: int = 0
    shared: StageTimes = dataclasses.field(default_factory=StageTimes)
    totals: list = dataclasses.field(default_factory=list)
    last_done: list = dataclasses.field(default_factory=list)
    workers: int = 0
    # one record per unit: {trial, worker_s, round_trip_s, node, pid, attempt, gpus_visible}
    units: list = dataclasses.field(default_factory=list)
    retried: int = 0  # units that ran again after their worker was lost

    def __post_init__(self):
        self.totals = [StageTimes() for _ in range(self.n_jobs)]
        self.last_done = [0.0] * self.n_jobs


class _TrialWorker:
    """A Ray actor: the run's jobs with their ONNX sessions, the face models and the
    dataset, built once; :meth:`run_unit` runs one trial for the jobs that lack it."""

    def __init__(self, cfg, jobs, dataset=None, threads: int | None = None, hide_gpus: bool = False):
        if hide_gpus:  # before any session: CUDA reads it once, at its first use in this (dedicated) process
            os.environ["CUDA_VISIBLE_DEVICES"] = ""
        from .._console import setup

        setup(native_filter=False)  # as the CLI does: quiet native loggers, MediaPipe's protobuf shim
        from .face_pass import FaceModels

        self.cfg, self.jobs = cfg, jobs
        self.init_error: Gaze4HRIError | None = None
        self.face_models = FaceModels(cfg.detector)
        self.runners: list = [None] * len(jobs)
        try:  # bad input here (a model or the data missing on this node) is the run's one-line error
            for ji, job in enumerate(jobs):
                if job.model is not None:
                    self.runners[ji] = make_runner(job, cfg, threads, streams=1)  # the actors are the parallelism
            self.ds = dataset if dataset is not None else open_dataset(cfg)
            self.refs = {(t.subject, t.trial): t for t in self.ds.trials()}
        except Gaze4HRIError as e:
            self.init_error = Gaze4HRIError(f"on Ray worker {socket.gethostname()}: {e.what}", e.where, e.fix)

    def ready(self) -> str:
        """Answered once the actor is built (sessions loaded): it can take units."""
        if self.init_error is not None:
            raise self.init_error
        return socket.gethostname()

    def run_unit(self, subject: str, trial: str, jis: list[int]) -> dict:
        """Run ``(subject, trial)`` for jobs ``jis`` (those whose part is still missing);
        return each job's stage times and rows, the shared stage times, where it ran,
        and warnings as lines (the driver prints them above its bars)."""
        t0 = time.perf_counter()
        key = (subject, trial)
        out = {"jobs": {}, "shared": None, "decoded": 0, "warnings": [], "excluded": {}, "node": socket.gethostname(),
               "pid": os.getpid(), "gpus_visible": os.environ.get("CUDA_VISIBLE_DEVICES")}
        try:
            tref = self.refs.get(key)
            if tref is None:
                raise Gaze4HRIError(f"trial {subject}/{trial} is not in this worker's view of {self.cfg.data}",
                                    "--data",
                                    "put the data on a path every node sees, at the same path (docs/cluster.md)")
            todo = [set() for _ in self.jobs]
            for ji in jis:  # a retried unit skips the parts its lost attempt already wrote
                job = self.jobs[ji]
                parts = results.parts_dir(self.cfg.out, job.method.name, job.input_type)
                if not results.part_path(parts, subject, trial).is_file():
                    todo[ji] = {key}

            def on_part(ji, t, df, times, wall, peak):
                write_job_part(self.cfg, self.jobs[ji], self.runners[ji], t, df, times, wall, peak)
                out["jobs"][ji] = (times, len(df))
                if times.excluded:
                    out["excluded"][ji] = times.excluded

            eng = Engine(self.jobs, todo, self.cfg, self.ds, self.face_models, on_part, runners=self.runners)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("default")
                eng.run([tref])
            out["warnings"] = sorted({f"{w.category.__name__}: "
                                      f"{str(w.message).splitlines()[0] if str(w.message) else ''}"
                                      for w in caught})
            out["shared"], out["decoded"] = eng.shared, eng.trials_decoded
        except Gaze4HRIError as e:  # bad input: the driver stops the run with this one line
            out["error"] = e
        out["worker_s"] = time.perf_counter() - t0
        return out


def _capacity(ray, cpus: float, gpus: float) -> int:
    """Workers the cluster can hold at ``cpus``/``gpus`` each (its free resources now)."""
    free = ray.available_resources()
    n = int(free.get("CPU", 0) // cpus) if cpus else 10**6
    if gpus:
        n = min(n, int(free.get("GPU", 0) // gpus))
    return n


def run_work(work: Work) -> RayRunStats:
    """The ``ray`` engine (pipeline.jobs.ENGINES): :func:`run_ray` on a run's work; a
    dataset the caller handed in (in memory) is shipped to the workers."""
    return run_ray(work.cfg, work.jobs, work.todo, work.trefs, work.bars, work.write,
                   dataset=work.dataset if work.dataset_given else None)


def run_ray(cfg, jobs: list, todo: list[set], trefs: list, bars: list, write, dataset=None) -> RayRunStats:
    """Run every unit (trial x the jobs that lack it) on Ray workers; update ``bars``
    (run._plan_todo) as units finish; ``write`` prints a line above them. ``dataset``:
    an in-memory dataset to ship to the workers (default: each opens ``cfg.data``)."""
    ray = import_ray()
    units = [(t, [ji for ji in range(len(jobs)) if (t.subject, t.trial) in todo[ji]]) for t in trefs]
    units = [u for u in units if u[1]]
    stats = RayRunStats(len(jobs))
    LAST_STATS[:] = [stats]
    stats.t_start = time.perf_counter()
    stats.last_done = [stats.t_start] * len(jobs)
    if not units:
        return stats
    if cfg.workers is not None and cfg.workers < 1:
        raise Gaze4HRIError("--workers must be >= 1", "--workers",
                            "e.g. --workers 4, or leave it out to fill the cluster")
    owned = connect(cfg)
    actors: list = []
    try:
        actors[:] = _start_workers(ray, cfg, jobs, dataset, len(units), write)
        stats.workers = len(actors)
        _Driver(ray, cfg, jobs, bars, write, stats, actors).run(units)
    finally:
        for a in actors:
            ray.kill(a, no_restart=True)
        if owned:
            ray.shutdown()
    return stats


def _start_workers(ray, cfg, jobs: list, dataset, n_units: int, write) -> list:
    """The run's Ray actors (:class:`_TrialWorker`), as many as the cluster holds (or
    ``--workers``), at most one per unit."""
    gpus = 1 if cfg.device in ("cuda", "tensorrt") else 0
    cpus = max(1, cfg.threads or 1)
    fit = _capacity(ray, cpus, gpus)
    if fit < 1:
        what = f"{cpus} CPU" + (" and 1 GPU" if gpus else "")
        raise Gaze4HRIError(f"the Ray cluster has no free {what} for a worker (free: {ray.available_resources()})",
                            "--device/--threads", "add nodes (docs/cluster.md), lower --threads, or use --device cpu")
    n = min(cfg.workers or fit, n_units)
    # a lost worker is restarted by Ray (max_restarts), on its node or, the node gone,
    # wherever resources are free; its unit is not retried inside the dead actor
    # (max_task_retries=0) but handed back to the queue here, so it runs on the next
    # worker that is up, never waiting on a restart that cannot be placed.
    # SPREAD: one worker per node before two on one (docs/cluster.md).
    # a worker that reserved no GPU must not use one: Ray 2.60 no longer hides the node's
    # GPUs from it (ray/_private/accelerators/accelerator.py, RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO),
    # so --device auto would put every worker of a GPU node on its GPUs, unaccounted. The actor hides
    # them itself: a runtime_env would start it through Ray's `bash -c "exec <python> ..."`, which
    # leaves the interpreter's path unquoted and fails in a checkout whose path has a space.
    worker = ray.remote(_TrialWorker).options(num_cpus=cpus, num_gpus=gpus, max_restarts=MAX_RESTARTS,
                                               max_task_retries=0, max_concurrency=1, scheduling_strategy="SPREAD")
    actors = [worker.remote(cfg, jobs, dataset, cfg.threads or cpus, hide_gpus=not gpus)  # sessions built in them
              for _ in range(n)]
    write(f"ray: {n_units} unit(s) (one trial for all its jobs) on {n} worker(s), "
          f"{cpus} CPU{' + 1 GPU' if gpus else ''} each")
    return actors


def _task_error(ray, e):
    """A Ray task's failure: its Gaze4HRIError (bad input: the run's one line), else itself."""
    cause = getattr(e, "cause", None)
    return cause if isinstance(cause, Gaze4HRIError) else e


class _Driver:
    """The driver's loop: hands units to idle workers, takes their results (progress,
    timings), re-queues the unit of a lost worker and waits for it to be restarted."""

    def __init__(self, ray, cfg, jobs: list, bars: list, write, stats: RayRunStats, actors: list):
        self.ray, self.cfg, self.jobs, self.bars, self.write = ray, cfg, jobs, bars, write
        self.stats, self.actors = stats, actors
        self.queue: list = []
        self.running: dict = {}  # unit ref -> (actor, tref, jis, attempt, submitted)
        self.probes = {a.ready.remote(): a for a in actors}  # ref -> actor: up (built its sessions) when it answers
        self.idle: list = []

    def run(self, units: list) -> None:
        ray = self.ray
        self.queue = [(t, jis, 1) for t, jis in units]
        waited = time.perf_counter()
        while self.queue or self.running:
            while self.queue and self.idle:
                t, jis, attempt = self.queue.pop(0)
                a = self.idle.pop(0)
                self.running[a.run_unit.remote(t.subject, t.trial, jis)] = (a, t, jis, attempt, time.perf_counter())
            if not self.running and not self.probes:
                raise Gaze4HRIError("every Ray worker was lost", "--engine ray",
                                    "check the nodes (`ray status`); rerun the same command to resume")
            done, _ = ray.wait(list(self.running) + list(self.probes), num_returns=1, timeout=10.0)
            if not done:
                if not self.running and time.perf_counter() - waited > PLACEMENT_TIMEOUT_S:
                    raise Gaze4HRIError(f"no Ray worker came up in {PLACEMENT_TIMEOUT_S:.0f} s "
                                        f"(free: {ray.available_resources()})",
                                        "--engine ray",
                                        "check the nodes (`ray status`); rerun the same command to resume")
                continue
            waited = time.perf_counter()
            if done[0] in self.probes:
                self._probe(done[0])
            else:
                self._unit(done[0])

    def _probe(self, ref) -> None:
        """A worker answered ``ready`` (it is up), or failed to come up."""
        ray = self.ray
        a = self.probes.pop(ref)
        try:
            ray.get(ref)
            self.idle.append(a)
        except ray.exceptions.RayActorError as e:  # its restarts used up: gone
            if getattr(e, "actor_init_failed", False):
                raise Gaze4HRIError(f"a Ray worker could not start: {str(e).splitlines()[-1][:200]}", "--engine ray",
                                    "check that every node has this environment and sees --data/--models-dir "
                                    "(docs/cluster.md)") from None
            self.actors.remove(a)
        except ray.exceptions.RayTaskError as e:  # its sessions could not be built: bad input
            raise _task_error(ray, e) from None

    def _unit(self, ref) -> None:
        """A unit came back: its results, or its worker was lost (the unit runs again)."""
        ray = self.ray
        a, t, jis, attempt, sent = self.running.pop(ref)
        try:
            res = ray.get(ref)
        except ray.exceptions.RayActorError:  # the worker died mid-unit: the unit runs again on the next one up
            if attempt >= MAX_UNIT_TRIES:
                raise Gaze4HRIError(f"Ray workers were lost running {t.subject}/{t.trial} {attempt} times",
                                    "--engine ray",
                                    "check the nodes (`ray status`); rerun the same command to resume") from None
            self.stats.retried += 1
            self.write(f"ray: worker lost on {t.subject}/{t.trial} (attempt {attempt}); "
                       "it runs again on the next worker up")
            self.queue.append((t, jis, attempt + 1))
            self.probes[a.ready.remote()] = a  # back in the pool once Ray has restarted it
            return
        except ray.exceptions.RayTaskError as e:
            raise _task_error(ray, e) from None
        self.idle.append(a)
        if "error" in res:
            raise res["error"]
        self._record(t, res, attempt, sent)

    def _record(self, t, res: dict, attempt: int, sent: float) -> None:
        """A finished unit's timings, warnings, progress and excluded trials."""
        stats, now = self.stats, time.perf_counter()
        stats.units.append({"trial": f"{t.subject}/{t.trial}", "worker_s": res["worker_s"],
                            "round_trip_s": now - sent, "node": res["node"], "pid": res["pid"], "attempt": attempt,
                            "gpus_visible": res["gpus_visible"]})
        for line in res["warnings"]:
            self.write(f"warning: {line}")
        if res["shared"] is not None:
            stats.shared.add(res["shared"])
            stats.trials_decoded += res["decoded"]
        for ji, (times, rows) in sorted(res["jobs"].items()):
            stats.totals[ji].add(times)
            stats.last_done[ji] = now
            bar = self.bars[ji].start_trial(t)
            bar.total = rows
            bar.update(rows)
            self.bars[ji].end_trial(bar)
            if ji in res["excluded"]:
                self.write(excluded_line(self.jobs[ji], t, res["excluded"][ji]))
