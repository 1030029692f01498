"""Helpers every audit mode shares: resolving a mechanism, its audit parameters, its release status,
the verdict, and running independent units of work in worker processes.  Imports nothing from the
other audit modules, which all import it."""

from __future__ import annotations

import inspect
import math
import os
from typing import Any, Callable, Iterable, Iterator

from experiments.audit.designs import AUDIT_PARAMS
from experiments.peers.environment import PEERS
from mechanisms import MechanismOutput, get_mechanism

#: the peers (:mod:`experiments.peers`) the design audit also runs, batched in one worker process
PEER_NAMES = tuple(PEERS)


def resolve(mechanism: str | Callable) -> tuple[str, Callable]:
    """(display name, callable) of a registry name, of a peer (``diffprivlib_pca``, ``opendp_pca``:
    :mod:`experiments.peers`) or of a callable (e.g. a known-broken variant)."""
    if isinstance(mechanism, str):
        if mechanism in PEER_NAMES:
            from experiments import peers

            return mechanism, getattr(peers, mechanism)
        return mechanism, get_mechanism(mechanism)
    return getattr(mechanism, "audit_name", getattr(mechanism, "__name__", "custom")), mechanism


def accepted_params(fn: Callable, params: dict) -> dict:
    """``params`` restricted to the keyword arguments ``fn`` accepts (all of them if it takes ``**kw``)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return dict(params)
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return dict(params)
    return {k: v for k, v in params.items() if k in sig.parameters}


def audit_params(
    fn: Callable,
    design_name: str,
    epsilon: float | None,
    delta: float | None,
    mechanism_params: dict,
) -> dict:
    """The keyword arguments an audit passes to ``fn``: the design's defaults (AUDIT_PARAMS), the
    claim's ε/δ when given, then the caller's parameters, filtered to those ``fn`` accepts."""
    params = dict(AUDIT_PARAMS.get(design_name, {}))
    if epsilon is not None:
        params["epsilon"] = float(epsilon)
    if delta is not None:
        params["delta"] = float(delta)
    params.update(mechanism_params)
    return accepted_params(fn, params)


def release_status(out: MechanismOutput) -> str | None:
    """The release status ("ok"/"bottom")."""
    return (getattr(out, "release", None) or {}).get("status")


def verdict(claimed: float, lower: float, at_ceiling: bool) -> str:
    if lower > claimed:
        return "VIOLATION: audited lower bound exceeds the claimed epsilon"
    if math.isinf(claimed):
        return (
            "not private, as declared: outputs perfectly separated, bound limited only by the trials"
            if at_ceiling
            else "not private, as declared"
        )
    return "consistent with the claim"


def audit_jobs(jobs: int | None) -> int:
    """The number of worker processes an audit uses.

    Parameters
    ----------
    jobs : int or None
        ``experiment.jobs``: ``None`` for every core of this process's CPU set
        (``os.sched_getaffinity``, else ``os.cpu_count()``), otherwise a positive count (``1``: the
        serial code path, in this process).

    Returns
    -------
    int
        At least 1.

    Raises
    ------
    ValueError
        ``jobs`` is given and below 1.
    """
    if jobs is None:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # not on Linux
            return max(1, os.cpu_count() or 1)
    if int(jobs) < 1:
        raise ValueError(
            f"experiment.jobs must be null (every core) or an integer >= 1, got {jobs!r}"
        )
    return int(jobs)


def _pinned_call(fn: Callable, args: tuple, kwargs: dict) -> Any:
    """``fn(*args, **kwargs)`` with every BLAS limited to one thread (what the serial path runs under,
    :func:`experiments.threads.pinned_blas`), so that a worker's low-order bits are the serial ones."""
    from experiments.threads import pinned_blas

    with pinned_blas():
        return fn(*args, **kwargs)


def in_workers(calls: Iterable[tuple[Callable, tuple, dict]], jobs: int) -> Iterator[Any]:
    """The results of ``fn(*args, **kwargs)`` for each ``(fn, args, kwargs)`` of ``calls``, in order,
    computed by ``jobs`` loky worker processes (joblib), each with one BLAS thread.

    Each call must draw only from random streams of its own (a generator seeded from its arguments),
    so that its result does not depend on which worker runs it or when: the results are then those
    of the same calls made one after the other.  ``fn`` and its arguments are sent with cloudpickle
    (closures such as the known-broken variants included); a call's exception is raised here.

    Parameters
    ----------
    calls : iterable of (callable, tuple, dict)
        The calls, consumed lazily (joblib dispatches up to twice ``jobs`` ahead of the results read).
    jobs : int
        Worker processes (> 1; with 1 call the functions directly instead).

    Yields
    ------
    object
        Each call's return value, in the order of ``calls``.
    """
    from joblib import Parallel, delayed

    parallel = Parallel(n_jobs=int(jobs), backend="loky", return_as="generator")
    yield from parallel(delayed(_pinned_call)(fn, args, kwargs) for fn, args, kwargs in calls)
