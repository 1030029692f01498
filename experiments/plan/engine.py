"""Dispatch a plan's jobs on Dask's distributed scheduler: a ``LocalCluster`` of one single-threaded
worker process per core on one machine, or a ``dask-jobqueue`` cluster (SLURM, PBS, SGE) whose
batch jobs each start workers; one code path for both.

What the engine adds to Dask: the jobs go in longest first (their estimated cost is the task's
priority; Dask's work stealing rebalances), each runs with one BLAS thread, a finished job leaves a
marker in the store (``<store>/plan/done/``) so the same command skips it, a progress line for the
whole plan, one line per failed job at the end and one line on Ctrl-C.  A worker that dies
(killed, out of memory) is restarted by its nanny and its job re-run elsewhere: the store writes
each record atomically and never twice, so nothing is lost or duplicated.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from experiments.plan.plan import DRAW_KIND, Job, drawing_names

#: Dask configuration of every cluster: a job is re-run after at most this many worker deaths
#: while it ran (then it fails as KilledWorker); no memory-based pausing or killing
DASK_CONFIG = {
    "distributed.scheduler.allowed-failures": 3,
    "distributed.worker.memory.target": False,
    "distributed.worker.memory.spill": False,
    "distributed.worker.memory.pause": False,
    "distributed.worker.memory.terminate": False,
    "distributed.scheduler.work-stealing": True,
}
#: one BLAS/OpenMP thread in every worker (set before the workers start; pinned again per job)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def done_dir(results: Path) -> Path:
    return Path(results) / "plan" / "done"


def is_done(results: Path, job: Job) -> bool:
    """Whether ``job`` finished in an earlier run (a drawing job never counts as done)."""
    return job.kind != DRAW_KIND and (done_dir(results) / f"{job.token}.json").exists()


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


@contextlib.contextmanager
def _recorded_writes():
    """The records this process writes meanwhile (id, whether written, their computing seconds)."""
    from experiments.store.store import ResultStore

    seen: list[dict] = []
    original = ResultStore.write

    def write(self, record):
        rid, written = original(self, record)
        group = record.get("group_restarts") or [None]
        data_share = float(record.get("group_data_seconds") or 0.0) / len(group)
        seconds = float(record.get("wall_seconds") or 0.0) - data_share
        seen.append({"id": rid, "written": written, "seconds": max(seconds, 0.0)})
        return rid, written

    ResultStore.write = write
    try:
        yield seen
    finally:
        ResultStore.write = original


def _timing(job: Job, cpu: float, wall0: float, variable: float, written: list, **extra) -> dict:
    """A finished job's timing line (:func:`experiments.plan.plan.costs_from_timings` reads it):
    its CPU-s, wall seconds since ``wall0``, the part of its CPU time that grows with its units
    (``variable``) and the ids of the records it wrote."""
    return {
        "name": job.name,
        "kind": job.kind,
        "units": job.units,
        "cpu_s": cpu,
        "wall_s": time.perf_counter() - wall0,
        "variable_s": variable,
        "records_written": len(written),
        "record_ids": written,
        **extra,
        "pid": os.getpid(),
        "ok": True,
    }


def execute_runner(job: Job, cfg: dict, results: str) -> dict:
    """Run ``job`` (``cfg``: its composed config, plain values) in this process with one BLAS thread;
    mark it done in the store; return its timing (CPU-s, the records it wrote and the part of its
    CPU time that grows with its units, :func:`experiments.plan.plan.costs_from_timings`)."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from experiments.store.records import results_root
    from experiments.store.store import ResultStore
    from experiments.threads import pinned_blas

    cpu0, wall0 = time.process_time(), time.perf_counter()
    with pinned_blas(), _recorded_writes() as seen:
        conf = OmegaConf.create(cfg)
        store = ResultStore(results_root(conf))
        store.check_writable()
        store.clean_stale_temporaries()
        result = instantiate(conf.experiment.run)(conf) or {}
    cpu = time.process_time() - cpu0
    if job.kind.startswith("gibbs_chain"):
        variable = float(result.get("chain_seconds", 0.0))
    elif job.kind.startswith("gibbs_record"):
        variable = 0.0
    else:
        variable = sum(s["seconds"] for s in seen if s["written"])
    timing = _timing(job, cpu, wall0, variable, [s["id"] for s in seen if s["written"]])
    _write_atomic(done_dir(Path(results)) / f"{job.token}.json", json.dumps(timing) + "\n")
    return timing


def execute_drawing(job: Job, payload: dict, results: str) -> dict:
    """Draw the figures and tables of a drawing job (:func:`experiments.plan.plan.drawing_jobs`)
    from the store ``results`` into ``payload["out"]``, the records of ``payload["scale"]`` only, as
    ``scripts/make_figures.py`` does; return its timing.  It leaves no marker (see
    :func:`~experiments.plan.plan.drawing_jobs`)."""
    from experiments.figures.cli import make_all
    from experiments.threads import pinned_blas

    cpu0, wall0 = time.process_time(), time.perf_counter()
    with pinned_blas(), contextlib.redirect_stdout(io.StringIO()):
        made = make_all(
            Path(results), Path(payload["out"]), set(drawing_names(job)), payload["scale"]
        )
    drawn = {k: None if v is None else [str(p) for p in v] for k, v in made.items()}
    return _timing(job, time.process_time() - cpu0, wall0, 0.0, [], drawn=drawn)


def _task(fn: Callable, job: Job, payload: Any, results: str, *after) -> dict:
    """What a worker runs: a drawing job's :func:`execute_drawing`, any other job's
    ``fn(job, payload, results)`` (``after``: the results of the jobs it waited for, unused)."""
    if job.kind == DRAW_KIND:
        return execute_drawing(job, payload, results)
    return fn(job, payload, results)


@dataclass
class Outcome:
    """What a run of the plan came to."""

    done: list[dict] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    skipped: int = 0
    interrupted: bool = False
    wall_s: float = 0.0


#: imported by every local worker as it starts (Dask's ``preload``): the modules the jobs need
WORKER_PRELOAD = "experiments.plan.worker_imports"


def local_cluster(workers: int | None = None):
    """A ``LocalCluster``: ``workers`` single-threaded worker processes (default: one per core of
    this process's CPU set), each with a nanny that restarts it if it dies, each importing what the
    jobs need (:data:`WORKER_PRELOAD`) as it starts rather than in its first job."""
    from distributed import LocalCluster

    n = workers or len(os.sched_getaffinity(0))
    return LocalCluster(
        n_workers=n,
        threads_per_worker=1,
        processes=True,
        memory_limit=0,
        dashboard_address=":0",  # any free port: several plans (or tests) may run side by side
        silence_logs=40,  # errors only: the plan prints its own progress
        preload=[WORKER_PRELOAD],
    )


def _configured_cluster(factory: Callable | None):
    """``factory()`` (default :func:`local_cluster`) with the engine's Dask configuration and one
    BLAS thread in every worker it starts."""
    import dask
    import distributed  # noqa: F401  (its defaults in dask's config before the settings below:
    # a key that dask.config.set creates is deleted again on leaving it)

    for v in THREAD_VARIABLES:
        os.environ.setdefault(v, "1")
    with dask.config.set(DASK_CONFIG):
        return (factory or local_cluster)()


class EarlyCluster:
    """A cluster started in a background thread at once, so that its workers start (and import
    what the jobs need) while the main process composes the plan; pass it to :func:`run_jobs` as
    its ``cluster_factory``, which closes it.  :meth:`close` closes it when :func:`run_jobs` was
    not reached (an error or Ctrl-C while composing) or had nothing to run; closing twice is
    harmless."""

    def __init__(self, factory: Callable | None = None):
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(1, thread_name_prefix="early-cluster")
        self._future = self._pool.submit(_configured_cluster, factory)
        self._pool.shutdown(wait=False)

    def __call__(self):
        return self._future.result()

    def close(self) -> None:
        with contextlib.suppress(BaseException):
            self._future.result().close()


def jobqueue_cluster(kind: str, *, jobs: int, cores: int, memory: str, walltime: str, **kwargs):
    """A dask-jobqueue cluster (``kind``: slurm, pbs or sge) of ``jobs`` batch jobs, each starting
    ``cores`` single-threaded worker processes; ``kwargs`` go to the cluster class (``queue``,
    ``account``, ``job_extra_directives``, ``python``...).  Call ``.job_script()`` to see the script."""
    import dask
    import dask_jobqueue

    cls = {
        "slurm": dask_jobqueue.SLURMCluster,
        "pbs": dask_jobqueue.PBSCluster,
        "sge": dask_jobqueue.SGECluster,
    }[kind]
    env = [f"export {v}=1" for v in THREAD_VARIABLES]
    # the prologue of dask-jobqueue's configuration (module loads...) is kept, after the exports
    env += list(dask.config.get(f"jobqueue.{kind}.job-script-prologue", None) or [])
    cluster = cls(
        cores=cores,
        processes=cores,
        memory=memory,
        walltime=walltime,
        job_script_prologue=env + list(kwargs.pop("job_script_prologue", [])),
        worker_extra_args=["--nthreads", "1"],
        scheduler_options={"dashboard_address": ":0"},
        **kwargs,
    )
    cluster.scale(jobs=jobs)
    return cluster


def submission_order(jobs: list[Job]) -> list[Job]:
    """``jobs`` with each one after every job of ``jobs`` it waits for (its ``after``), so that its
    dependencies are known when it is submitted: by depth in the dependency graph, then longest
    first.  A job waiting for a job that is not in ``jobs`` (done earlier) does not wait for it."""
    names = {j.name: j for j in jobs}
    depth: dict[str, int] = {}

    def level(job: Job, seen: tuple[str, ...] = ()) -> int:
        if job.name not in depth:
            if job.name in seen:
                raise ValueError(f"the plan's jobs wait for each other in a cycle: {job.name}")
            parents = [names[a] for a in job.after if a in names]
            depth[job.name] = 1 + max((level(p, (*seen, job.name)) for p in parents), default=-1)
        return depth[job.name]

    return sorted(jobs, key=lambda j: (level(j), -j.cost))


def run_jobs(
    jobs: list[Job],
    payloads: dict[str, Any] | Callable[[Job], Any],
    results: Path,
    *,
    fn: Callable = execute_runner,
    cluster_factory: Callable | None = None,
    out=sys.stderr,
    progress_every: float = 5.0,
) -> Outcome:
    """Run ``jobs`` (those not marked done in ``results``) on a Dask cluster, longest first.

    ``payloads[job.name]`` (or ``payloads(job)``, asked as the job is submitted) is what
    ``fn(job, payload, results)`` gets in the worker (the job's composed config for
    :func:`execute_runner`).  A job waits for its ``after`` jobs; a failed job
    fails those that wait for it, and the others run on.  Prints a progress line at most every
    ``progress_every`` seconds (jobs and estimated CPU-s done, elapsed time, ETA).  Ctrl-C cancels
    every job, closes the cluster and returns with ``interrupted`` set.
    """
    import dask
    from distributed import Client, as_completed

    outcome = Outcome()
    todo = [j for j in jobs if not is_done(results, j)]
    outcome.skipped = len(jobs) - len(todo)
    t0 = time.perf_counter()
    if not todo:
        return outcome
    total_cost = sum(j.cost for j in todo) or 1.0
    names = {j.name for j in todo}
    cluster = client = None
    try:
        cluster = _configured_cluster(cluster_factory)
        with dask.config.set(DASK_CONFIG):
            client = Client(cluster)
            futures, by_key = {}, {}
            # every job after the jobs it waits for; priority = estimated cost, so the longest ready
            # job goes first
            for job in submission_order(todo):
                deps = [futures[a] for a in job.after if a in names]
                fut = client.submit(
                    _task,
                    fn,
                    job,
                    payloads(job) if callable(payloads) else payloads.get(job.name),
                    str(results),
                    *deps,
                    key=f"job-{job.token}",
                    priority=int(job.cost * 1000),
                    pure=False,
                )
                futures[job.name] = fut
                by_key[fut.key] = job
            done_cost, last = 0.0, 0.0
            for fut in as_completed(list(futures.values())):
                job = by_key[fut.key]
                if fut.status == "finished":
                    outcome.done.append(fut.result())
                else:
                    exc = fut.exception()
                    outcome.failed.append((job.name, _one_line(exc)))
                done_cost += job.cost
                now = time.perf_counter() - t0
                if now - last >= progress_every or len(outcome.done) + len(outcome.failed) == len(
                    todo
                ):
                    last = now
                    finished = len(outcome.done) + len(outcome.failed)
                    eta = now * (total_cost - done_cost) / max(done_cost, 1e-9)
                    print(
                        f"[plan] {finished}/{len(todo)} jobs, {done_cost:,.0f}/{total_cost:,.0f} "
                        f"estimated CPU-s, {now:,.0f} s elapsed, ETA {eta:,.0f} s"
                        + (f", {len(outcome.failed)} failed" if outcome.failed else ""),
                        file=out,
                        flush=True,
                    )
    except KeyboardInterrupt:
        outcome.interrupted = True
    finally:
        for closer in (client, cluster):
            if closer is not None:
                with contextlib.suppress(Exception):
                    closer.close()
        outcome.wall_s = time.perf_counter() - t0
    return outcome


def _one_line(exc: BaseException | None) -> str:
    if exc is None:
        return "cancelled"
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0] if text else type(exc).__name__
