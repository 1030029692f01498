"""Automatic search for the most damaging neighbouring pair and event, certified on fresh trials.

1. Candidates: the catalogue (:func:`.designs.catalogue`) and random designs
   (:func:`.designs.random_designs`) for the relation the mechanism declares — nothing in them is
   specific to a known bug; every pair is checked to be neighbouring.
2. Calibration: each candidate is run ``calibration_trials`` times per dataset; every output is
   reduced to a vector of statistics (:func:`.statistics.design_features`: ⊥ indicator, projections on
   axes / differing rows / top eigenvectors / random directions, principal angles to candidate spans).
   Statistics of the exact release are added from the calibration runs themselves
   (:class:`.statistics.ModalRelease`: "the output equals the most frequent output under D", bit for
   bit or to 9 decimals).  For every statistic the best one-sided threshold event is found
   (:func:`.bounds.choose_event`).
   The (design, statistic, event) with the largest calibration bound wins.
3. Certification: the winning design is run ``trials`` fresh times per dataset (new random streams)
   and the *fixed* event is counted: ε_lower from Clopper–Pearson at the stated confidence.  The
   choice used none of these trials, so no multiplicity correction is needed.
"""

from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np

from mechanisms import PrivacyInputError

from .bounds import (
    choose_event,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_lower_bound,
    max_certifiable_epsilon,
)
from .common import audit_params, release_status, resolve, verdict
from .designs import AuditDesign, catalogue, check_neighbours, random_designs
from .statistics import FeatureSet, ModalRelease, design_features


def _features(
    fn: Callable,
    X: np.ndarray,
    k: int,
    trials: int,
    rng: np.random.Generator,
    feats: FeatureSet,
    params: dict,
) -> tuple[np.ndarray, list[np.ndarray | None]]:
    """The statistics of ``trials`` runs, and the raw releases (components, ``None`` for ⊥)."""
    out = np.empty((int(trials), len(feats.names)))
    raw: list[np.ndarray | None] = []
    for i in range(int(trials)):
        res = fn(X, k, rng=rng, **params)
        V = None if release_status(res) == "bottom" else res.components
        raw.append(V)
        out[i] = feats(V)
    return out, raw


def _event_count(s: np.ndarray, tail: str, t: float) -> int:
    return int(np.sum(s >= t)) if tail == "upper" else int(np.sum(s <= t))


def search_audit(
    mechanism,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    calibration_trials: int = 300,
    trials: int = 2000,
    n_random: int = 12,
    use_catalogue: bool = True,
    seed: int = 0,
    confidence: float = 0.95,
    max_rows: int = 400,
    time_budget: float | None = None,
    design_budget: float | None = 60.0,
    designs: list[AuditDesign] | None = None,
    **mechanism_params,
) -> dict:
    """Search designs × statistics × events on calibration runs, certify the winner on fresh runs.

    ``mechanism``: registry name or callable (e.g. a known-broken variant).  ``designs`` replaces the
    generated candidates (tests).  ``time_budget`` (seconds) stops the calibration phase early (the
    candidates seen so far compete); ``design_budget`` (seconds) skips a design whose first run
    predicts a longer calibration (e.g. the exact estimator's C(n, k) search on a large k = 2 design).
    Returns the certified bound, the chosen design (with its
    datasets' description), statistic and event, and the calibration leaderboard (top 5)."""
    name, fn = resolve(mechanism)
    base_name = getattr(fn, "audit_design", name)
    params = audit_params(fn, base_name, epsilon, delta, mechanism_params)
    t0 = time.perf_counter()
    probe = np.zeros((100, 3))
    probe[0, 0] = 1.0
    g0 = fn(probe, 1, rng=np.random.default_rng([seed, 5]), **params).guarantee
    relation = "replace-one-row" if g0.neighbouring == "none" else g0.neighbouring
    if designs is None:
        rng_d = np.random.default_rng([seed, 17])
        designs = (
            catalogue(
                relation, name=base_name, epsilon=g0.epsilon, delta=g0.delta, max_rows=max_rows
            )
            if use_catalogue
            else []
        )
        designs += random_designs(
            relation,
            n_random,
            rng_d,
            name=base_name,
            epsilon=g0.epsilon,
            delta=g0.delta,
            max_rows=max_rows,
        )
    alpha = 1.0 - float(confidence)
    board, skipped = [], []
    for j, des in enumerate(designs):
        if time_budget is not None and time.perf_counter() - t0 > time_budget and board:
            skipped.append((des.name, "time budget"))
            continue
        check_neighbours(des.X1, des.X0, relation)
        feats = design_features(des.X1, des.X0, des.k, rng=np.random.default_rng([seed, 19, j]))
        try:
            if design_budget is not None:
                t1 = time.perf_counter()
                fn(des.X1, des.k, rng=np.random.default_rng([seed, 31, j]), **params)
                if (time.perf_counter() - t1) * 2 * calibration_trials > design_budget:
                    skipped.append((des.name, "over the per-design time budget"))
                    continue
            F1, raw1 = _features(
                fn,
                des.X1,
                des.k,
                calibration_trials,
                np.random.default_rng([seed, 23, j, 1]),
                feats,
                params,
            )
            F0, raw0 = _features(
                fn,
                des.X0,
                des.k,
                calibration_trials,
                np.random.default_rng([seed, 23, j, 0]),
                feats,
                params,
            )
        except (
            PrivacyInputError,
            ValueError,
        ) as exc:  # e.g. k >= d, too many candidates, k > 1 unsupported
            skipped.append((des.name, str(exc)[:120]))
            continue
        modal = ModalRelease.from_calibration(raw1, raw0)
        F1, F0 = np.hstack([F1, modal(raw1)]), np.hstack([F0, modal(raw0)])
        for f, fname in enumerate(feats.names + modal.names):
            ev = choose_event(F1[:, f], F0[:, f], g0.delta, alpha)
            if "orientation" not in ev:
                continue
            board.append(
                {
                    "score": ev["epsilon_lower"],
                    "design_index": j,
                    "design": des.name,
                    "statistic": fname,
                    "feature_index": f,
                    **{kk: ev[kk] for kk in ("orientation", "tail", "threshold")},
                    "_feats": feats,
                    "_modal": modal,
                }
            )
    if not board:
        raise RuntimeError(f"no design could be run for {name}: {skipped[:3]}")
    board.sort(key=lambda b: -b["score"])
    best = board[0]
    des = designs[best["design_index"]]
    feats, modal = best["_feats"], best["_modal"]
    calib_seconds = time.perf_counter() - t0
    # certification on fresh random streams, with the event (and any modal release) fixed on calibration
    F1, raw1 = _features(
        fn, des.X1, des.k, trials, np.random.default_rng([seed, 29, 1]), feats, params
    )
    F0, raw0 = _features(
        fn, des.X0, des.k, trials, np.random.default_rng([seed, 29, 0]), feats, params
    )
    F1, F0 = np.hstack([F1, modal(raw1)]), np.hstack([F0, modal(raw0)])
    s1, s0 = F1[:, best["feature_index"]], F0[:, best["feature_index"]]
    hi, lo = (s1, s0) if best["orientation"] == "D1>D0" else (s0, s1)
    k_hi, k_lo = (
        _event_count(hi, best["tail"], best["threshold"]),
        _event_count(lo, best["tail"], best["threshold"]),
    )
    lower = float(epsilon_lower_bound(k_hi, trials, k_lo, trials, g0.delta, alpha))
    g = g0
    claimed = float(g.epsilon)
    ceiling = max_certifiable_epsilon(trials, trials, g.delta, alpha)
    p_hi, p_lo = k_hi / trials, k_lo / trials
    emp = (
        math.log((p_hi - g.delta) / p_lo)
        if (p_lo > 0 and p_hi > g.delta)
        else (math.inf if p_hi > g.delta else 0.0)
    )
    return {
        "mechanism": getattr(fn, "audit_name", name),
        "mode": "search",
        "claimed_epsilon": claimed,
        "delta": float(g.delta),
        "neighbouring": relation,
        "guarantee_exact": bool(g.exact),
        **des.summary(),
        "statistic": best["statistic"],
        "orientation": best["orientation"],
        "tail": best["tail"],
        "threshold": best["threshold"],
        "calibration_epsilon_lower": best["score"],
        "audited_epsilon_lower": lower,
        "confidence": float(confidence),
        "trials": int(trials),
        "calibration_trials": int(calibration_trials),
        "designs_tried": len(designs) - len(skipped),
        "designs_skipped": len(skipped),
        "count_D": k_hi,
        "count_Dprime": k_lo,
        "p_D": p_hi,
        "p_Dprime": p_lo,
        "p_D_lower": float(clopper_pearson_lower(k_hi, trials, alpha / 2)),
        "p_Dprime_upper": float(clopper_pearson_upper(k_lo, trials, alpha / 2)),
        "empirical_epsilon": emp,
        "max_certifiable_epsilon": ceiling,
        "at_ceiling": bool(lower >= ceiling - 1e-9),
        "leaderboard": [
            {kk: b[kk] for kk in ("design", "statistic", "score", "tail", "threshold")}
            for b in board[:5]
        ],
        "mechanism_params": params,
        "seed": int(seed),
        "calibration_seconds": calib_seconds,
        "seconds": time.perf_counter() - t0,
        "violation": bool(lower > claimed),
        "verdict": verdict(claimed, lower, lower >= ceiling - 1e-9),
    }
