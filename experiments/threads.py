"""One BLAS thread while an experiment computes, and what a record says about it.

Multi-threaded BLAS splits sums differently for different thread counts, so the same seed gives
other low-order bits (and, through a Markov chain, other releases) with 1 thread than with 2.  A
joblib or submitit worker, ``scripts/reproduce.sh`` and a plain shell start with different thread
counts; to make every record re-run bit for bit from any of them, :func:`experiments.app.dispatch.run_experiment`
runs each experiment inside :func:`pinned_blas` and each record states the count under
``provenance`` (:func:`blas_provenance`).  The run key does not include it: resuming a store is
unaffected.
"""

from __future__ import annotations

import contextlib
import functools
import platform
from typing import Callable, Iterator

from threadpoolctl import ThreadpoolController

#: BLAS threads while an experiment runs (also what ``+rerun`` uses)
PINNED_BLAS_THREADS = 1

_ACTIVE: list[ThreadpoolController] = []  # controllers of the enclosing pinned_blas contexts


def _controller() -> ThreadpoolController:
    # scipy ships its own OpenBLAS, loaded on first use: load it first so that it is limited too
    import scipy.linalg  # noqa: F401

    return ThreadpoolController()


@contextlib.contextmanager
def pinned_blas(threads: int | None = None) -> Iterator[None]:
    """Limit every loaded BLAS (numpy's and scipy's OpenBLAS, MKL, ...) to ``threads`` threads
    (default :data:`PINNED_BLAS_THREADS`).

    The previous limits are restored on exit.  Nested use is fine.
    """
    controller = _controller()
    limit = PINNED_BLAS_THREADS if threads is None else int(threads)
    with controller.limit(limits=limit, user_api="blas"):
        _ACTIVE.append(controller)
        try:
            yield
        finally:
            _ACTIVE.pop()


def pinned(fn: Callable) -> Callable:
    """``fn`` run inside :func:`pinned_blas` (for functions sent to worker processes, e.g. joblib's)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with pinned_blas():
            return fn(*args, **kwargs)

    return wrapper


@functools.lru_cache(maxsize=1)
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def blas_provenance() -> dict:
    """What decides a record's low-order bits besides the code and the seed.

    Returns
    -------
    dict
        ``blas_threads``: the largest thread count of the loaded BLAS libraries now (``None`` if no
        BLAS is loaded); ``blas``: each library as ``"<api> <version> <kernel architecture>"``,
        sorted and joined by ``"; "``; ``machine``: the CPU architecture and model.
    """
    controller = _ACTIVE[-1] if _ACTIVE else _controller()
    libs = controller.select(user_api="blas").info()
    threads = [int(lib["num_threads"]) for lib in libs if lib.get("num_threads") is not None]
    names = sorted(
        " ".join(str(lib[k]) for k in ("internal_api", "version", "architecture") if lib.get(k))
        for lib in libs
    )
    return {
        "blas_threads": max(threads) if threads else None,
        "blas": "; ".join(names),
        "machine": f"{platform.machine()} {_cpu_model()}",
    }
