"""Clopper–Pearson confidence bounds, the ε lower bound they give, and the choice of an event.

With one-sided Clopper–Pearson bounds at level α/2 each (both hold with probability ≥ 1 − α by
the union bound, α = 1 − confidence),

    ε_lower = log((p₁_lower − δ) / p₀_upper),    clipped at 0,

since (ε, δ)-DP forces P[M(D)∈E] ≤ e^ε P[M(D')∈E] + δ for every event E and both orders of a
neighbouring pair (Jagielski, Ullman & Oprea 2020; Nasr et al. 2021).  :func:`audit_scores`
chooses E on a calibration split and counts it on the disjoint rest (no multiplicity correction
needed), or uses a grid fixed in advance with a Bonferroni correction.
"""

from __future__ import annotations

import functools
import math
from typing import Sequence

import numpy as np
from scipy import stats

# ---------------------------------------------------------------------------------------------
# Clopper–Pearson bounds and the ε lower bound
# ---------------------------------------------------------------------------------------------


def clopper_pearson_lower(k, n, alpha: float):
    """One-sided (1 − α) lower confidence bound on a binomial p from k successes in n trials.

    Beta(α; k, n − k + 1) quantile; 0 when k = 0.  Vectorised over k (and n).
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        lo = stats.beta.ppf(alpha, np.maximum(k, 1e-300), n - k + 1)
    out = np.where(k <= 0, 0.0, lo)
    return float(out) if out.ndim == 0 else out


def clopper_pearson_upper(k, n, alpha: float):
    """One-sided (1 − α) upper confidence bound on a binomial p: Beta(1 − α; k + 1, n − k); 1 when k = n."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        hi = stats.beta.ppf(1.0 - alpha, k + 1, np.maximum(n - k, 1e-300))
    out = np.where(k >= n, 1.0, hi)
    return float(out) if out.ndim == 0 else out


def epsilon_lower_bound(k1, n1, k0, n0, delta: float, alpha: float):
    """ε_lower = log((p₁_lower − δ)/p₀_upper) (≥ 0), both Clopper–Pearson bounds one-sided at α/2.

    ``k1`` of ``n1`` runs on D and ``k0`` of ``n0`` runs on D' fell in the event.  With
    probability ≥ 1 − α the true ε of an (ε, δ)-DP mechanism is at least the returned value.
    Vectorised over the counts.
    """
    p1 = np.asarray(clopper_pearson_lower(k1, n1, alpha / 2.0), dtype=float)
    p0 = np.asarray(clopper_pearson_upper(k0, n0, alpha / 2.0), dtype=float)
    num = p1 - float(delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.where(num > 0, np.log(np.maximum(num, 1e-300) / p0), 0.0)
    eps = np.maximum(eps, 0.0)
    return float(eps) if eps.ndim == 0 else eps


def empirical_epsilon(p_hi: float, p_lo: float, delta: float) -> float:
    """The point estimate of ε from an event's frequencies: log((p_hi − δ) / p_lo), ∞ when the
    event never occurs on the lower side but does beyond δ on the upper, 0 when it does not."""
    if p_lo > 0 and p_hi > delta:
        return math.log((p_hi - delta) / p_lo)
    return math.inf if p_hi > delta else 0.0


def max_certifiable_epsilon(n1: int, n0: int, delta: float, alpha: float) -> float:
    """The largest ε_lower any event can give with these trial counts (perfect separation)."""
    return float(epsilon_lower_bound(n1, n1, 0, n0, delta, alpha))


# ---------------------------------------------------------------------------------------------
# Event selection
# ---------------------------------------------------------------------------------------------


def _tail_counts(sorted_s: np.ndarray, t: np.ndarray, tail: str) -> np.ndarray:
    if tail == "upper":  # #{S >= t}
        return sorted_s.size - np.searchsorted(sorted_s, t, side="left")
    return np.searchsorted(sorted_s, t, side="right")  # #{S <= t}


def _candidate_thresholds(s1: np.ndarray, s0: np.ndarray, max_candidates: int = 2048) -> np.ndarray:
    pooled = np.unique(np.concatenate([s1, s0]))
    if pooled.size > max_candidates:
        idx = np.unique(np.linspace(0, pooled.size - 1, max_candidates).round().astype(int))
        pooled = pooled[idx]
    return pooled


def _all_events(s1: np.ndarray, s0: np.ndarray, thresholds: np.ndarray):
    """Counts of every (orientation, tail, threshold) event; orientation "D1>D0" means D1 plays D."""
    a1, a0 = np.sort(s1), np.sort(s0)
    for tail in ("upper", "lower"):
        c1, c0 = _tail_counts(a1, thresholds, tail), _tail_counts(a0, thresholds, tail)
        yield "D1>D0", tail, c1, c0
        yield "D0>D1", tail, c0, c1


@functools.lru_cache(maxsize=32)
def _clopper_pearson_tables(n: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson lower and upper bounds at ``level`` for k = 0..n successes in n."""
    k = np.arange(int(n) + 1)
    lower = np.asarray(clopper_pearson_lower(k, n, level), dtype=float).reshape(-1)
    upper = np.asarray(clopper_pearson_upper(k, n, level), dtype=float).reshape(-1)
    return lower, upper


def _epsilon_lower_from_tables(ca, na: int, cb, nb: int, delta: float, alpha: float) -> np.ndarray:
    """:func:`epsilon_lower_bound` for integer counts, read from tables of the Clopper–Pearson bounds
    (the same values, computed once per sample size instead of once per event)."""
    p1 = _clopper_pearson_tables(int(na), alpha / 2.0)[0][np.asarray(ca, dtype=int)]
    p0 = _clopper_pearson_tables(int(nb), alpha / 2.0)[1][np.asarray(cb, dtype=int)]
    num = p1 - float(delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.where(num > 0, np.log(np.maximum(num, 1e-300) / p0), 0.0)
    return np.maximum(eps, 0.0)


def choose_event(
    s1: np.ndarray, s0: np.ndarray, delta: float, alpha: float, thresholds: np.ndarray | None = None
) -> dict:
    """The event (orientation, tail, threshold) with the largest ε_lower on these scores."""
    s1, s0 = np.asarray(s1, float), np.asarray(s0, float)
    if thresholds is None:
        thresholds = _candidate_thresholds(s1, s0)
    thresholds = np.asarray(thresholds, float)
    best: dict = {"epsilon_lower": -1.0}
    for orient, tail, ca, cb in _all_events(s1, s0, thresholds):
        na, nb = (s1.size, s0.size) if orient == "D1>D0" else (s0.size, s1.size)
        eps = _epsilon_lower_from_tables(ca, na, cb, nb, delta, alpha)
        # tie-break: larger empirical ratio
        i = int(np.argmax(eps + 1e-9 * (ca / na - cb / nb)))
        if eps[i] > best["epsilon_lower"]:
            best = {
                "epsilon_lower": float(eps[i]),
                "orientation": orient,
                "tail": tail,
                "threshold": float(thresholds[i]),
            }
    return best


def _event_counts(s: np.ndarray, tail: str, t: float) -> int:
    s = np.asarray(s, float)
    return int(np.sum(s >= t)) if tail == "upper" else int(np.sum(s <= t))


def audit_scores(
    s1: Sequence[float],
    s0: Sequence[float],
    *,
    delta: float,
    confidence: float = 0.95,
    calibration_fraction: float = 0.5,
    thresholds: Sequence[float] | None = None,
) -> dict:
    """ε lower bound from statistics ``s1`` (runs on D1) and ``s0`` (runs on D0).

    ``thresholds=None``: choose the event on the first ``calibration_fraction`` of each sample,
    evaluate it on the rest (no correction needed).  ``thresholds`` given (fixed in advance): use
    every trial, take the best of the 4·len(thresholds) events at level α / (4·len(thresholds))
    (Bonferroni).  Returns the bound with the chosen event, counts and confidence bounds.
    """
    s1, s0 = np.asarray(s1, float), np.asarray(s0, float)
    alpha = 1.0 - float(confidence)
    if not (0 < alpha < 1):
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    if thresholds is None:
        if not (0 < calibration_fraction < 1):
            raise ValueError("calibration_fraction must lie in (0, 1)")
        m1, m0 = (
            int(round(s1.size * calibration_fraction)),
            int(round(s0.size * calibration_fraction)),
        )
        ev = choose_event(s1[:m1], s0[:m0], delta, alpha)
        a1, a0 = s1[m1:], s0[m0:]
        level, method, n_events = alpha, "split", 1
    else:
        grid = np.asarray(thresholds, float)
        n_events = 4 * grid.size
        level = alpha / n_events
        ev = choose_event(s1, s0, delta, level, thresholds=grid)
        a1, a0 = s1, s0
        method = "bonferroni"
    if "orientation" not in ev:  # no data
        raise ValueError("no trials to audit")
    hi_s, lo_s = (a1, a0) if ev["orientation"] == "D1>D0" else (a0, a1)
    k_hi, k_lo = (
        _event_counts(hi_s, ev["tail"], ev["threshold"]),
        _event_counts(lo_s, ev["tail"], ev["threshold"]),
    )
    n_hi, n_lo = hi_s.size, lo_s.size
    eps = float(epsilon_lower_bound(k_hi, n_hi, k_lo, n_lo, delta, level))
    p_hi, p_lo = k_hi / n_hi, k_lo / n_lo
    emp = empirical_epsilon(p_hi, p_lo, delta)
    ceiling = max_certifiable_epsilon(n_hi, n_lo, delta, level)
    return {
        "audited_epsilon_lower": eps,
        "confidence": float(confidence),
        "method": method,
        "events_tested": n_events,
        "orientation": ev["orientation"],
        "tail": ev["tail"],
        "threshold": ev["threshold"],
        "calibration_epsilon_lower": ev["epsilon_lower"],
        "audit_trials": [int(a1.size), int(a0.size)],
        "count_D": k_hi,
        "count_Dprime": k_lo,
        "p_D": p_hi,
        "p_Dprime": p_lo,
        "p_D_lower": float(clopper_pearson_lower(k_hi, n_hi, level / 2)),
        "p_Dprime_upper": float(clopper_pearson_upper(k_lo, n_lo, level / 2)),
        "empirical_epsilon": emp,
        "max_certifiable_epsilon": ceiling,
        "at_ceiling": bool(eps >= ceiling - 1e-9),
    }
