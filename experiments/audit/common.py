"""Helpers every audit mode shares: resolving a mechanism, its audit parameters, its release status
and the verdict.  Imports nothing from the other audit modules, which all import it."""

from __future__ import annotations

import inspect
import math
from typing import Callable

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
