"""A job's independent units spread over the plan's workers, and what a job is charged for.

A job of the plan runs in one worker (:func:`experiments.plan.engine.execute_runner`).  Where its
work has a step of independent units (the restarts of one n of the dimension-scaling search),
:func:`map_units` makes each unit a Dask task of its own, so the other workers run them side by
side, and the job waits for them outside the worker's thread pool (``distributed.secede``: its
slot goes to the units or to other jobs meanwhile; it never rejoins, since rejoining waits for a
slot).  Outside a worker (``run.py``, a Hydra sweep, a test) the units run one after another in
this process, and in either case each unit computes exactly what it computes serially: the
records are the same, bit for bit.

What a job is charged for is recorded per thread, because a worker process may run a seceded job
and another task at once: :func:`recorded_writes` collects the records the current thread writes
and :func:`charged_cpu` its CPU seconds, and the units' records and CPU seconds are added to the
job that spread them.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import Any, Callable, Iterable, Iterator

#: Dask priority of a unit: above every job's (a job's is its estimated CPU-s x 1000), so that the
#: units of a running job go before jobs that have not started
UNIT_PRIORITY = 10**15

_local = threading.local()


def _install_write_hook() -> None:
    """Wrap ``ResultStore.write`` once per process so that each write is told to the current
    thread's recorder (if any)."""
    from experiments.store.store import ResultStore

    if getattr(ResultStore.write, "_fanout_hook", False):
        return
    original = ResultStore.write

    def write(self, record):
        rid, written = original(self, record)
        seen = getattr(_local, "seen", None)
        if seen is not None:
            group = record.get("group_restarts") or [None]
            data_share = float(record.get("group_data_seconds") or 0.0) / len(group)
            seconds = float(record.get("wall_seconds") or 0.0) - data_share
            seen.append({"id": rid, "written": written, "seconds": max(seconds, 0.0)})
        return rid, written

    write._fanout_hook = True
    ResultStore.write = write


@contextlib.contextmanager
def recorded_writes() -> Iterator[list[dict]]:
    """The records this thread writes meanwhile: ``{"id", "written", "seconds"}`` each (seconds:
    the record's computing seconds, its share of a shared data set's preparation deducted), the
    records of the units it spread with :func:`map_units` included."""
    _install_write_hook()
    before = getattr(_local, "seen", None)
    _local.seen = []
    try:
        yield _local.seen
    finally:
        _local.seen = before


@contextlib.contextmanager
def charged_cpu() -> Iterator[Callable[[], float]]:
    """A function giving the CPU seconds charged to this thread since entry: its own
    (``time.thread_time``) plus those of the units it spread with :func:`map_units`."""
    before = getattr(_local, "credit", None)
    _local.credit = 0.0
    t0 = time.thread_time()
    try:
        yield lambda: time.thread_time() - t0 + _local.credit
    finally:
        _local.credit = before


def _in_worker():
    """The Dask worker running this thread's task, or None (no task of a worker here)."""
    if "distributed" not in sys.modules:  # never imported: not a worker of the plan
        return None
    from distributed import get_worker

    try:
        return get_worker()
    except ValueError:
        return None


def _unit(fn: Callable, item: Any) -> tuple[Any, float, list[dict]]:
    """Run one unit in a worker: its result, CPU seconds and written records."""
    from experiments.threads import pinned_blas

    with pinned_blas(), recorded_writes() as seen, charged_cpu() as cpu:
        result = fn(item)
        return result, cpu(), list(seen)


def map_units(fn: Callable[[Any], Any], items: Iterable[Any]) -> list:
    """``[fn(x) for x in items]``, each ``fn(x)`` a task of its own when this runs in a worker of the
    plan.

    Parameters
    ----------
    fn : callable
        One unit of work; it must be picklable (a module-level function or a
        ``functools.partial`` of one) and must not depend on the other units.
    items : iterable
        The units' arguments.

    Returns
    -------
    list
        The results, in the order of ``items``.
    """
    items = list(items)
    worker = _in_worker() if len(items) > 1 else None
    if worker is None:
        return [fn(x) for x in items]
    from distributed import get_client, secede
    from distributed.threadpoolexecutor import thread_state as pool_thread

    if getattr(pool_thread, "proceed", False):  # still in the pool: leave it, never to rejoin
        secede()
    client = get_client()
    futures = client.map(
        _unit, [fn] * len(items), items, pure=False, priority=UNIT_PRIORITY, retries=0
    )
    out = []
    for result, cpu, seen in client.gather(futures):
        if getattr(_local, "credit", None) is not None:
            _local.credit += cpu
        if getattr(_local, "seen", None) is not None:
            _local.seen.extend(seen)
        out.append(result)
    return out
