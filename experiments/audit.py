"""Empirical privacy audit: a statistically valid LOWER bound on a mechanism's ε.

Method (black-box auditing as in Jagielski, Ullman & Oprea 2020; Nasr et al. 2021):

1. Pick a pair of neighbouring datasets ``(D1, D0)`` that is hard for the mechanism under the
   relation its guarantee declares (:func:`design_for`): one row changed (replace-one-row), one
   row added (add-remove-one-row), one entry of XᵀX changed (entry-level).
2. Run the mechanism ``trials`` times on each and reduce every output to a scalar statistic
   (:data:`STATISTICS`; default ``proj_e1`` = ‖V̂ᵀe₁‖², ⊥ outputs map to −1).
3. Split the trials: on the *calibration* part choose one event ``E`` — a threshold ``t``, a tail
   (``S >= t`` or ``S <= t``) and an orientation (which dataset plays D) — maximising the bound
   below; on the disjoint *audit* part count how often E happens under each dataset.
4. With one-sided Clopper–Pearson bounds at level α/2 each (so both hold with probability
   ≥ 1 − α by the union bound, α = 1 − confidence),

       ε_lower = log((p₁_lower − δ) / p₀_upper),    clipped at 0,

   since (ε, δ)-DP forces P[M(D)∈E] ≤ e^ε P[M(D')∈E] + δ for every event and both orders.
   Because E is fixed before the audit half is looked at, no multiplicity correction is needed.
   Alternatively (``thresholds=[...]``, fixed in advance) every trial is used and the best of the
   4·len(thresholds) events is Bonferroni-corrected.

A correct mechanism audits at or below its claim with probability ≥ confidence; an audited bound
above the claim is evidence (at that confidence) that the claim is false.  The bound is limited by
the number of trials: with N audit trials per side it never exceeds about log(N / log(2/α))
(``max_certifiable_epsilon``), which is what non-private PCA reaches.

:func:`miscalibrated` and :func:`bypass_norm_check` build deliberately broken mechanisms (noise
scaled down, row-norm check removed) so that the tests can show the audit catches them.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
from scipy import stats

from mechanisms import MECHANISMS, get_mechanism
from mechanisms._base import MechanismOutput

log = logging.getLogger(__name__)

__all__ = [
    "clopper_pearson_lower", "clopper_pearson_upper", "epsilon_lower_bound", "max_certifiable_epsilon",
    "choose_event", "audit_scores", "AuditDesign", "gaussian_design", "bingham_design", "subspace_exact_design",
    "subspace_approx_design",
    "design_for", "STATISTICS", "run_trials", "audit_mechanism", "miscalibrated", "bypass_norm_check",
    "available_mechanisms", "run_audit",
]


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


def max_certifiable_epsilon(n1: int, n0: int, delta: float, alpha: float) -> float:
    """The largest ε_lower any event can give with these trial counts (perfect separation)."""
    return float(epsilon_lower_bound(n1, n1, 0, n0, delta, alpha))


# ---------------------------------------------------------------------------------------------
# Event selection
# ---------------------------------------------------------------------------------------------

def _tail_counts(sorted_s: np.ndarray, t: np.ndarray, tail: str) -> np.ndarray:
    if tail == "upper":   # #{S >= t}
        return sorted_s.size - np.searchsorted(sorted_s, t, side="left")
    return np.searchsorted(sorted_s, t, side="right")   # #{S <= t}


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


def choose_event(s1: np.ndarray, s0: np.ndarray, delta: float, alpha: float,
                 thresholds: np.ndarray | None = None) -> dict:
    """The event (orientation, tail, threshold) with the largest ε_lower on these scores."""
    s1, s0 = np.asarray(s1, float), np.asarray(s0, float)
    if thresholds is None:
        thresholds = _candidate_thresholds(s1, s0)
    thresholds = np.asarray(thresholds, float)
    best: dict = {"epsilon_lower": -1.0}
    for orient, tail, ca, cb in _all_events(s1, s0, thresholds):
        na, nb = (s1.size, s0.size) if orient == "D1>D0" else (s0.size, s1.size)
        eps = np.asarray(epsilon_lower_bound(ca, na, cb, nb, delta, alpha))
        # tie-break: larger empirical ratio
        i = int(np.argmax(eps + 1e-9 * (ca / na - cb / nb)))
        if eps[i] > best["epsilon_lower"]:
            best = {"epsilon_lower": float(eps[i]), "orientation": orient, "tail": tail,
                    "threshold": float(thresholds[i])}
    return best


def _event_counts(s: np.ndarray, tail: str, t: float) -> int:
    s = np.asarray(s, float)
    return int(np.sum(s >= t)) if tail == "upper" else int(np.sum(s <= t))


def audit_scores(s1: Sequence[float], s0: Sequence[float], *, delta: float, confidence: float = 0.95,
                 calibration_fraction: float = 0.5, thresholds: Sequence[float] | None = None) -> dict:
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
        m1, m0 = int(round(s1.size * calibration_fraction)), int(round(s0.size * calibration_fraction))
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
    if "orientation" not in ev:   # no data
        raise ValueError("no trials to audit")
    hi_s, lo_s = (a1, a0) if ev["orientation"] == "D1>D0" else (a0, a1)
    k_hi, k_lo = _event_counts(hi_s, ev["tail"], ev["threshold"]), _event_counts(lo_s, ev["tail"], ev["threshold"])
    n_hi, n_lo = hi_s.size, lo_s.size
    eps = float(epsilon_lower_bound(k_hi, n_hi, k_lo, n_lo, delta, level))
    p_hi, p_lo = k_hi / n_hi, k_lo / n_lo
    emp = math.log((p_hi - delta) / p_lo) if (p_lo > 0 and p_hi > delta) else (math.inf if p_hi > delta else 0.0)
    ceiling = max_certifiable_epsilon(n_hi, n_lo, delta, level)
    return {
        "audited_epsilon_lower": eps, "confidence": float(confidence), "method": method,
        "events_tested": n_events, "orientation": ev["orientation"], "tail": ev["tail"],
        "threshold": ev["threshold"], "calibration_epsilon_lower": ev["epsilon_lower"],
        "audit_trials": [int(a1.size), int(a0.size)],
        "count_D": k_hi, "count_Dprime": k_lo, "p_D": p_hi, "p_Dprime": p_lo,
        "p_D_lower": float(clopper_pearson_lower(k_hi, n_hi, level / 2)),
        "p_Dprime_upper": float(clopper_pearson_upper(k_lo, n_lo, level / 2)),
        "empirical_epsilon": emp, "max_certifiable_epsilon": ceiling,
        "at_ceiling": bool(eps >= ceiling - 1e-9),
    }


# ---------------------------------------------------------------------------------------------
# Statistics of an output
# ---------------------------------------------------------------------------------------------

def _proj(V: np.ndarray | None, i: int) -> float:
    if V is None:
        return -1.0
    return float(np.sum(np.asarray(V)[i] ** 2))


#: name -> function(components) -> float (⊥ outputs, components None, map to -1)
STATISTICS: dict[str, Callable[[np.ndarray | None], float]] = {
    "proj_e1": lambda V: _proj(V, 0),                      # ‖V̂ᵀe₁‖²
    "proj_e1_minus_e2": lambda V: -2.0 if V is None else _proj(V, 0) - _proj(V, 1),
}


# ---------------------------------------------------------------------------------------------
# Hard neighbouring datasets
# ---------------------------------------------------------------------------------------------

@dataclass
class AuditDesign:
    """A pair of neighbouring datasets and the statistic to compare them with."""

    X1: np.ndarray
    X0: np.ndarray
    neighbouring: str
    name: str
    description: str
    statistic: str = "proj_e1"
    k: int = 1
    mechanism_params: dict = field(default_factory=dict)

    def summary(self) -> dict:
        return {"design": self.name, "design_description": self.description, "statistic": self.statistic,
                "d": int(self.X1.shape[1]), "n_D": int(self.X1.shape[0]), "n_Dprime": int(self.X0.shape[0]),
                "k": self.k, "neighbouring": self.neighbouring}


def _unit(d: int, i: int) -> np.ndarray:
    e = np.zeros(d)
    e[i] = 1.0
    return e


def gaussian_design(neighbouring: str, *, d: int = 2, n: int = 200, row_norm: float = 1.0,
                    position: str = "first", removal: str = "drop") -> AuditDesign:
    """For noise added to XᵀX (MOD-SULQ, Analyze Gauss, noisy power, online PCA; also pca/random).

    Base: n − 1 rows u = (e₁ + e₂)/√2.  They make the top eigenvector sit at 45° with a large
    eigen-gap, so that the released direction is, to first order, a linear function of the
    (A₁₁ − A₂₂) entry the differing row moves — nothing the noise adds to it is lost by only
    releasing eigenvectors.  Differing row (length ``row_norm``, at the ``position`` "first" or
    "last" row): replace-one-row: r·e₁ in D vs r·e₂ in D'; add-remove-one-row: r·e₁ present in D,
    absent in D' (``removal="zero"``: replaced by the zero row, the event-level relation of a
    stream); entry-level: r·e₁ in D vs the zero row in D' (XᵀX differs in the single entry (1, 1)).
    Statistic ‖V̂ᵀe₁‖².
    """
    if d < 2:
        raise ValueError("d must be >= 2")
    u = (_unit(d, 0) + _unit(d, 1)) / math.sqrt(2.0)
    base = np.tile(u, (n - 1, 1))
    a, b, z = row_norm * _unit(d, 0), row_norm * _unit(d, 1), np.zeros(d)

    def put(row):
        return np.vstack([row, base]) if position == "first" else np.vstack([base, row])

    if neighbouring == "replace-one-row":
        X1, X0, diff = put(a), put(b), f"{row_norm:g}*e1 vs {row_norm:g}*e2"
    elif neighbouring == "add-remove-one-row" and removal == "drop":
        X1, X0, diff = put(a), base.copy(), f"{row_norm:g}*e1 added"
    elif neighbouring in ("add-remove-one-row", "entry-level", "zero-out-one-row"):
        X1, X0, diff = put(a), put(z), f"{row_norm:g}*e1 vs zero row"
    else:
        raise ValueError(f"no Gaussian design for neighbouring {neighbouring!r}")
    return AuditDesign(X1, X0, neighbouring, "gaussian",
                       f"{n - 1} rows (e1+e2)/sqrt2 in R^{d}; differing row ({position}) {diff}", "proj_e1")


def bingham_design(epsilon: float, *, d: int = 2, n: int | None = None, row_norm: float = 1.0,
                   base_concentration: float = 3.0) -> AuditDesign:
    """For the exponential mechanism with score Σ(vᵀx)² (PPCA, iterative PPCA), replace-one-row.

    Density ∝ exp(ε/2 · Σ (vᵀx)²).  Row r·e₁ in D vs r·e₂ in D'.  On a symmetric base the
    normalising constants cancel and the log density ratio ε/2 (v₁² − v₂²) only reaches ε/2; a
    base of total squared mass w = 2·base_concentration/ε along e₂ makes Z_D'/Z_D approach
    e^{ε/2} too, so that the ratio near v = e₁ approaches e^ε (the claim) while that region keeps
    enough probability to be seen in a few thousand trials (concentration ≈ 3 maximises the
    expected audit for ε = 1..4 and 10⁴ trials, d = 2).  Statistic ‖V̂ᵀe₁‖² = v₁².
    """
    w = 2.0 * base_concentration / float(epsilon)
    full = int(math.floor(w))
    rows = [_unit(d, 1)] * full
    frac = w - full
    if frac > 1e-12:
        rows.append(math.sqrt(frac) * _unit(d, 1))
    n_rows = len(rows) + 1
    n = n_rows if n is None else max(int(n), n_rows)
    rows += [np.zeros(d)] * (n - n_rows)
    base = np.array(rows).reshape(-1, d)
    X1 = np.vstack([row_norm * _unit(d, 0), base])
    X0 = np.vstack([row_norm * _unit(d, 1), base])
    return AuditDesign(X1, X0, "replace-one-row", "bingham",
                       f"base of squared mass {w:.4g} along e2 (+{n - n_rows} zero rows) in R^{d}; "
                       f"differing row {row_norm:g}*e1 vs {row_norm:g}*e2", "proj_e1")


def subspace_exact_design(epsilon: float, delta: float, *, d: int = 2, margin: int = 4) -> AuditDesign:
    """For Singhal–Steinke's GAP-MAX (Algorithm 1, replace-one-row, k = 1).

    D: n₁ points on the e₁ axis and n₂ on the e₂ axis, n₂ = ⌈NULL score⌉ + 1 (so that the runner-up
    score is e₂'s, not NULL's) and n₁ = n₂ + ``margin``; D': one e₁ point moved to e₂.  The gap
    top − second falls by 2, the full sensitivity the truncated Laplace noise is calibrated for.
    Statistic ‖V̂ᵀe₁‖² (⊥ → −1): the event "output ≠ e₁" is e^ε likelier under D'.
    """
    from mechanisms.subspace import exact_null_score

    n2 = int(math.ceil(exact_null_score(1, epsilon, delta))) + 1
    n1 = n2 + int(margin)
    e1, e2 = _unit(d, 0), _unit(d, 1)
    X1 = np.vstack([np.tile(e1, (n1, 1)), np.tile(e2, (n2, 1))])
    X0 = np.vstack([np.tile(e1, (n1 - 1, 1)), np.tile(e2, (n2 + 1, 1))])
    return AuditDesign(X1, X0, "replace-one-row", "subspace_exact",
                       f"{n1} points on e1 and {n2} on e2 vs one moved from e1 to e2 (R^{d})", "proj_e1")


def subspace_approx_design(epsilon: float, delta: float, *, d: int = 2) -> AuditDesign:
    """For Singhal–Steinke's subsample-and-aggregate (Algorithm 2, replace-one-row, k = 1).

    t blocks of m = 3 rows (t from the mechanism's parameters): ⌈t/2⌉ blocks spanning e₁ (rows
    e₁, e₁, e₁) and the rest spanning e₂, except that the last e₁ block is (e₁, e₁, e₂) in D and
    (e₁, e₂, e₂) in D' — one row changed flips that block's subspace, moving one point of the
    stable histogram from the e₁ cell to the e₂ cell, with counts around the t/2 release rule.
    """
    from mechanisms.subspace import approx_parameters

    t = int(approx_parameters(10**6, d, 1, epsilon, delta, 0.01)["t"])
    h = (t + 1) // 2
    e1, e2 = _unit(d, 0), _unit(d, 1)
    blocks1 = [np.array([e1, e1, e1])] * (h - 1)
    blocks2 = [np.array([e2, e2, e2])] * (t - h)
    X1 = np.vstack(blocks1 + [np.array([e1, e1, e2])] + blocks2)
    X0 = np.vstack(blocks1 + [np.array([e1, e2, e2])] + blocks2)
    return AuditDesign(X1, X0, "replace-one-row", "subspace_approx",
                       f"{t} blocks of 3 rows: {h} spanning e1, {t - h} spanning e2; one row of the last "
                       f"e1 block changed e1 -> e2 flips it (R^{d})", "proj_e1")


#: which design suits which mechanism (anything not listed uses the Gaussian design)
DESIGN_OF = {"ppca": "bingham", "ppca_iterative": "bingham",
             "subspace_exact": "subspace_exact", "subspace_approx": "subspace_approx"}
#: extra mechanism parameters for the audit (cheap and hard settings)
AUDIT_PARAMS = {
    "ppca": {"sampler": "exact"},
    "noisy_power": {"iterations": 1},          # with p = d the earlier products carry no information
    "online_pca": {"keep_subspaces": False},
    "streaming_power": {"block_size": 50},     # 4 blocks of 50 rows; the differing row is in the last
}
#: Gaussian-design options per mechanism (online PCA runs one eigendecomposition per row; a stream's
#: add/remove neighbour is the zero row at the same time step; the streaming power method's last
#: block matters most)
GAUSSIAN_OPTIONS = {"online_pca": {"n": 32, "removal": "zero"},
                    "streaming_power": {"n": 200, "position": "last"}}


def design_for(name: str, neighbouring: str, *, epsilon: float | None = None, delta: float | None = None,
               d: int = 2, n: int | None = None, row_norm: float = 1.0) -> AuditDesign:
    """The hard pair of datasets for mechanism ``name`` under ``neighbouring``."""
    if neighbouring == "none":   # no claim about neighbours (pca, random): audit under replacement
        neighbouring = "replace-one-row"
    kind = DESIGN_OF.get(name, "gaussian")
    replace = neighbouring == "replace-one-row"
    if kind == "bingham" and replace and epsilon is not None:
        return bingham_design(epsilon, d=d, n=n, row_norm=row_norm)
    if kind == "subspace_exact" and replace and epsilon and delta:
        return subspace_exact_design(epsilon, delta, d=d)
    if kind == "subspace_approx" and replace and epsilon and delta:
        return subspace_approx_design(epsilon, delta, d=d)
    opts = dict(GAUSSIAN_OPTIONS.get(name, {}))
    if n is not None:
        opts["n"] = n
    return gaussian_design(neighbouring, d=d, row_norm=row_norm, **opts)


# ---------------------------------------------------------------------------------------------
# Running a mechanism many times
# ---------------------------------------------------------------------------------------------

def run_trials(mech: Callable[..., MechanismOutput], X: np.ndarray, k: int, trials: int,
               rng: np.random.Generator, statistic: str | Callable = "proj_e1", **params) -> np.ndarray:
    """Statistic of ``trials`` independent runs of ``mech(X, k, rng=rng, **params)``."""
    stat = STATISTICS[statistic] if isinstance(statistic, str) else statistic
    out = np.empty(int(trials))
    for i in range(int(trials)):
        out[i] = stat(mech(X, k, rng=rng, **params).components)
    return out


def _accepted_params(fn: Callable, params: dict) -> dict:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return dict(params)
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return dict(params)
    return {k: v for k, v in params.items() if k in sig.parameters}


def _resolve(mechanism: str | Callable) -> tuple[str, Callable]:
    if isinstance(mechanism, str):
        return mechanism, get_mechanism(mechanism)
    return getattr(mechanism, "audit_name", getattr(mechanism, "__name__", "custom")), mechanism


def audit_mechanism(mechanism: str | Callable, *, epsilon: float | None = None, delta: float | None = None,
                    trials: int = 20000, confidence: float = 0.95, seed: int = 0,
                    calibration_fraction: float = 0.5, thresholds: Sequence[float] | None = None,
                    d: int = 2, n: int | None = None, k: int = 1, row_norm: float = 1.0,
                    design: AuditDesign | None = None, design_name: str | None = None,
                    design_epsilon: float | None = None, **mechanism_params) -> dict:
    """Audit one mechanism: run it ``trials`` times on each of two neighbouring datasets.

    ``mechanism``: a registry name or a callable ``f(X, k, *, rng, **params) -> MechanismOutput``
    (e.g. from :func:`miscalibrated`).  ``epsilon``/``delta`` are passed on when the mechanism
    takes them; the *claimed* ε, δ and relation are read from the guarantee of its output.
    ``design`` overrides the dataset pair (default :func:`design_for`, under the relation
    declared by the mechanism; ``design_name`` picks the design of another registry name;
    ``design_epsilon`` tunes ε-dependent designs for a suspected true ε instead of the claim).
    Returns a dict with ``audited_epsilon_lower``, ``claimed_epsilon``, ``delta``, ``confidence``,
    the event, counts and timings.  Randomness: ``default_rng([seed, 7, side])`` per dataset.
    """
    name, fn = _resolve(mechanism)
    design_name = design_name or getattr(fn, "audit_design", name)
    params = dict(AUDIT_PARAMS.get(design_name, {}))
    if epsilon is not None:
        params["epsilon"] = float(epsilon)
    if delta is not None:
        params["delta"] = float(delta)
    params.update(mechanism_params)
    params = _accepted_params(fn, params)
    t0 = time.perf_counter()
    if design is None:
        # the declared relation (it can depend on the parameters, e.g. Analyze Gauss, noisy power)
        probe_X = gaussian_design("replace-one-row", d=d, n=200).X1
        probe = fn(probe_X, k, rng=np.random.default_rng([seed, 7, 99]), **params)
        g0 = probe.guarantee
        eps_design = design_epsilon or (g0.epsilon if epsilon is None else epsilon)
        design = design_for(design_name, g0.neighbouring, epsilon=eps_design, delta=g0.delta, d=d, n=n,
                            row_norm=row_norm)
    design.k = k
    rng1, rng0 = np.random.default_rng([seed, 7, 1]), np.random.default_rng([seed, 7, 0])
    first = fn(design.X1, k, rng=rng1, **params)
    g = first.guarantee
    stat = STATISTICS[design.statistic]
    s1 = np.concatenate([[stat(first.components)],
                         run_trials(fn, design.X1, k, trials - 1, rng1, design.statistic, **params)])
    s0 = run_trials(fn, design.X0, k, trials, rng0, design.statistic, **params)
    seconds = time.perf_counter() - t0
    res = audit_scores(s1, s0, delta=g.delta, confidence=confidence,
                       calibration_fraction=calibration_fraction, thresholds=thresholds)
    claimed = float(g.epsilon)
    lower = res["audited_epsilon_lower"]
    result = {
        "mechanism": name, "claimed_epsilon": claimed, "delta": float(g.delta),
        "declared_neighbouring": g.neighbouring, "guarantee_exact": bool(g.exact),
        **design.summary(), **res, "trials": int(trials), "seed": int(seed),
        "mechanism_params": params, "seconds": seconds,
        "violation": bool(lower > claimed),
        "verdict": _verdict(claimed, lower, res["at_ceiling"]),
    }
    return result


def _verdict(claimed: float, lower: float, at_ceiling: bool) -> str:
    if lower > claimed:
        return "VIOLATION: audited lower bound exceeds the claimed epsilon"
    if math.isinf(claimed):
        return ("not private, as declared: outputs perfectly separated, bound limited only by the trials"
                if at_ceiling else "not private, as declared")
    return "consistent with the claim"


# ---------------------------------------------------------------------------------------------
# Deliberately broken mechanisms
# ---------------------------------------------------------------------------------------------

#: mechanism -> (module, noise-scale function looked up by the mechanism at call time)
NOISE_FUNCTIONS = {   # every noise-scale function a call may use, for each calibration (paper, tight, ...)
    "mod_sulq": ("mechanisms.mod_sulq", ("mod_sulq_noise_scale", "mod_sulq_noise_scale_tight")),
    "analyze_gauss": ("mechanisms.analyze_gauss", ("analyze_gauss_noise_scale", "analyze_gauss_noise_scale_tight")),
    "noisy_power": ("mechanisms.noisy_power", ("noisy_power_noise_scale", "noisy_power_row_noise_scale",
                                               "noisy_power_zcdp_noise_scale", "noisy_power_tight_noise_scale",
                                               "noisy_power_laplace_scale")),
    "online_pca": ("mechanisms.online_pca", ("tree_node_noise_scale", "algorithm1_noise_scale",
                                             "algorithm2_noise_scale_tight")),
}


@contextlib.contextmanager
def _patched(module: str, names: Sequence[str], wrap: Callable[[Callable], Callable]):
    mod = importlib.import_module(module)
    saved = {nm: getattr(mod, nm) for nm in names}
    try:
        for nm, f in saved.items():
            setattr(mod, nm, wrap(f))
        yield
    finally:
        for nm, f in saved.items():
            setattr(mod, nm, f)


def miscalibrated(name: str, noise_factor: float = 0.5) -> Callable[..., MechanismOutput]:
    """Mechanism ``name`` with its noise multiplied by ``noise_factor`` but its claim unchanged.

    Gaussian/Laplace mechanisms: the module's noise-scale function is patched for the duration of
    each call.  Exponential mechanisms (ppca, ppca_iterative), which have no noise scale: they are
    run at ε / noise_factor (the temperature scaled by the same factor) and the output's guarantee
    is rewritten to the requested ε.
    """
    fn = get_mechanism(name)
    f = float(noise_factor)
    if name in NOISE_FUNCTIONS:
        module, names = NOISE_FUNCTIONS[name]
        names = (names,) if isinstance(names, str) else names

        def wrap(g):
            @functools.wraps(g)
            def scaled(*a, **kw):
                return f * g(*a, **kw)
            return scaled

        @functools.wraps(fn)
        def broken(X, k, **params):
            with _patched(module, names, wrap):
                return fn(X, k, **params)
    elif name in ("ppca", "ppca_iterative"):
        @functools.wraps(fn)
        def broken(X, k, *, epsilon, **params):
            out = fn(X, k, epsilon=epsilon / f, **params)
            g = out.guarantee
            out.guarantee = type(g)(float(epsilon), g.delta, g.neighbouring, g.exact,
                                    f"MISCALIBRATED (run at epsilon/{f:g}): " + g.note)
            return out
    else:
        raise ValueError(f"no miscalibration recipe for {name!r}")
    broken.audit_name = f"{name}[noise x{f:g}]"
    broken.audit_design = name
    return broken


def bypass_norm_check(name: str) -> Callable[..., MechanismOutput]:
    """Mechanism ``name`` with its row-norm check removed (rows of any length accepted, unclipped).

    Patches the module's ``check_data`` to ``row_norm_bound=inf`` for each call; the claimed
    guarantee is unchanged, so auditing with ``row_norm > 1`` must find a violation.
    """
    fn = get_mechanism(name)
    module = MECHANISMS[name].split(":")[0]

    def wrap(g):
        @functools.wraps(g)
        def lax(X, **kw):
            kw["row_norm_bound"] = math.inf
            kw["clip"] = False
            return g(X, **kw)
        return lax

    @functools.wraps(fn)
    def broken(X, k, **params):
        with _patched(module, ["check_data"], wrap):
            return fn(X, k, **params)

    broken.audit_name = f"{name}[no norm check]"
    broken.audit_design = name
    return broken


def available_mechanisms() -> tuple[list[str], dict[str, str]]:
    """Registry names whose module imports, and {name: reason} for the others."""
    ok, skipped = [], {}
    for name in MECHANISMS:
        try:
            get_mechanism(name)
        except Exception as exc:  # ImportError, AttributeError, ...
            skipped[name] = f"{type(exc).__name__}: {exc}"
        else:
            ok.append(name)
    return ok, skipped


# ---------------------------------------------------------------------------------------------
# Hydra runner
# ---------------------------------------------------------------------------------------------

def run_audit(cfg) -> dict:
    """``python run.py experiment=audit mechanism=NAME``: audit one mechanism, store and print the result.

    The mechanism is ``experiment.mechanism`` (any registry name) if set, otherwise the
    ``mechanism`` config group (its ``fn`` parameters are used).  ``experiment.epsilon_cap``
    lowers ε for mechanisms whose theorem needs a smaller one (Analyze Gauss: ε < 1);
    ``experiment.noise_factor`` audits :func:`miscalibrated` and ``experiment.row_norm > 1`` audits
    :func:`bypass_norm_check` (both must be caught).
    """
    from omegaconf import OmegaConf

    from .provenance import git_commit, package_versions
    from .results import ResultStore
    from .runners import emit, mechanism_params, results_root

    e = cfg.experiment
    if e.get("mechanism"):
        name = str(e.mechanism)
        params = {"epsilon": float(cfg.epsilon), "delta": float(cfg.delta)}
    else:
        name = str(cfg.mechanism.name)
        params = mechanism_params(cfg)
    # the audit's settings (AUDIT_PARAMS) win over the group's defaults; experiment.mechanism_params win over both
    params.update(AUDIT_PARAMS.get(name, {}))
    extra = e.get("mechanism_params")
    if extra is not None:
        params.update(OmegaConf.to_container(extra, resolve=True))
    params.pop("progress", None)
    caps = e.get("epsilon_cap")
    cap = None if caps is None else caps.get(name)
    capped = False
    if cap is not None and "epsilon" in params and params["epsilon"] is not None and params["epsilon"] > cap:
        params["epsilon"], capped = float(cap), True
    noise_factor = e.get("noise_factor")
    row_norm = float(e.get("row_norm", 1.0))
    if noise_factor is not None:
        mech = miscalibrated(name, float(noise_factor))
    elif row_norm > 1.0:
        mech = bypass_norm_check(name)
    else:
        mech = name
    _, fn = _resolve(mech)
    params = _accepted_params(fn, params)
    key = {"experiment": str(e.name), "mechanism": name, "mechanism_params": dict(params),
           "trials": int(e.trials), "confidence": float(e.confidence), "seed": int(cfg.seed),
           "d": int(e.d), "n": None if e.get("n") is None else int(e.n), "k": int(e.k),
           "row_norm": row_norm, "noise_factor": None if noise_factor is None else float(noise_factor),
           "calibration_fraction": float(e.calibration_fraction), "design_epsilon": e.get("design_epsilon")}
    store = ResultStore(results_root(cfg))
    from .results import record_id
    rid = record_id(key)
    if store.path(rid).exists():
        import json
        with open(store.path(rid)) as fh:
            record = json.load(fh)
        record["written"] = False
    else:
        params = dict(params)
        eps = params.pop("epsilon", None)
        dl = params.pop("delta", None)
        res = audit_mechanism(mech, epsilon=eps, delta=dl, trials=int(e.trials), confidence=float(e.confidence),
                              seed=int(cfg.seed), calibration_fraction=float(e.calibration_fraction),
                              d=int(e.d), n=None if e.get("n") is None else int(e.n), k=int(e.k),
                              row_norm=row_norm, design_name=name, design_epsilon=e.get("design_epsilon"),
                              **params)
        res["mechanism"] = getattr(mech, "audit_name", name)
        record = {"run_key": key, "experiment": str(e.name), **res, "epsilon_capped": capped,
                  "config": OmegaConf.to_container(cfg, resolve=True), "versions": package_versions(),
                  "git_commit": git_commit(), "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        rid, written = store.write(record)
        record["record_id"], record["written"] = rid, written
    if not cfg.quiet:
        log.info("audit %s: claimed epsilon %s (delta %g, %s), audited lower bound %.4f at confidence %.3g "
                 "(%d trials per dataset, %.1f s): %s", record["mechanism"], record["claimed_epsilon"],
                 record["delta"], record["neighbouring"], record["audited_epsilon_lower"], record["confidence"],
                 record["trials"], record["seconds"], record["verdict"])
    out = {k: v for k, v in record.items() if k not in ("config",)}
    emit(out)
    return out
