"""Automatic search for the most damaging neighbouring pair and event, certified on fresh trials.

1. Candidates: the catalogue (:func:`.designs.catalogue`) and random designs
   (:func:`.designs.random_designs`) for the relation the mechanism declares — nothing in them is
   specific to a known bug; every pair is checked to be neighbouring.
2. Calibration: each candidate is run once on each dataset with one fixed noise stream (the
   reference runs) and ``calibration_trials`` times per dataset; every output is reduced to a vector
   of statistics (:class:`SearchStatistics`): ⊥ indicator, projections on axes / differing rows / top
   eigenvectors / random directions, principal angles to candidate spans
   (:func:`.statistics.design_features`); the lowest mantissa bits of every entry of ``components``
   (:class:`.statistics.BitFeatures`); the values of the ``release`` dict, their lowest bits, and
   whether each field's exact bytes equal the reference runs' (:class:`.statistics.ReleaseFeatures`);
   and "the output equals the most frequent output under D", bit for bit or to 9 decimals
   (:class:`.statistics.ModalRelease`).  For every statistic the best one-sided threshold event is
   found (:func:`.bounds.choose_event`).  The (design, statistic, event) with the largest calibration
   bound wins.
3. Certification: the winning design is run ``trials`` fresh times per dataset (new random streams)
   and the *fixed* event is counted: ε_lower from Clopper–Pearson at the stated confidence.  The
   choice used none of these trials (the reference runs and the modal outputs are fixed before them
   too), so however many statistics, designs and events the choice compared, no multiplicity
   correction is needed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from experiments.audit.blackbox import LearnedStatistics
from experiments.audit.bounds import (
    choose_event,
    clopper_pearson_lower,
    clopper_pearson_upper,
    empirical_epsilon,
    epsilon_lower_bound,
    max_certifiable_epsilon,
)
from experiments.audit.common import (
    audit_jobs,
    audit_params,
    in_workers,
    release_status,
    resolve,
    verdict,
)
from experiments.audit.designs import (
    LARGE_ZERO_BASE_ROWS,
    AuditDesign,
    catalogue,
    check_neighbours,
    random_designs,
)
from experiments.audit.statistics import (
    BitFeatures,
    FeatureSet,
    ModalRelease,
    ReleaseFeatures,
    design_features,
)
from experiments.audit.tradeoff import tradeoff_audit
from mechanisms import PrivacyInputError


@dataclass
class SearchStatistics:
    """Every statistic the search computes for the outputs of one design (see the module docstring).

    Parameters
    ----------
    feats : FeatureSet
        Projections, principal angles and frame statistics of ``components``.
    bits : BitFeatures
        The lowest mantissa bits of the entries of ``components``.
    release : ReleaseFeatures
        Values and bits of the ``release`` dict, exact bytes against the fixed-noise reference runs.
    modal : ModalRelease
        Equality with the modal calibration outputs (set by :meth:`fix_modes`).
    """

    feats: FeatureSet
    bits: BitFeatures
    release: ReleaseFeatures
    modal: ModalRelease | None = None

    def fix_modes(self, runs1: list, runs0: list) -> None:
        """Fix the modal outputs of the calibration runs (then reused unchanged for certification)."""
        self.modal = ModalRelease.from_calibration([V for V, _ in runs1], [V for V, _ in runs0])

    @property
    def names(self) -> list[str]:
        modal = self.modal.names if self.modal is not None else []
        return self.feats.names + self.bits.names + self.release.names + modal

    def __call__(self, runs: list) -> np.ndarray:
        """The statistics of outputs ``runs`` (a list of (components or ``None`` for ⊥, release))."""
        rows = [
            np.concatenate([self.feats(V), self.bits(V), self.release(V, rel)]) for V, rel in runs
        ]
        out = np.array(rows, dtype=float).reshape(len(runs), -1)
        if self.modal is not None:
            out = np.hstack([out, self.modal([V for V, _ in runs])])
        return out


class _Run(tuple):
    """One output as (components or ``None`` for ⊥, release dict), with the released covariance
    (``MechanismOutput.covariance``, or ``None``) as an attribute for the learned statistics."""

    covariance: np.ndarray | None = None


def _runs(
    fn: Callable,
    X: np.ndarray,
    k: int,
    trials: int,
    rng: np.random.Generator,
    params: dict,
) -> list[tuple[np.ndarray | None, dict]]:
    """``trials`` runs: each output's components (``None`` for ⊥) and its release dict."""
    out = []
    for _ in range(int(trials)):
        res = fn(X, k, rng=rng, **params)
        V = None if release_status(res) == "bottom" else res.components
        run = _Run((V, dict(getattr(res, "release", None) or {})))
        run.covariance = getattr(res, "covariance", None)
        out.append(run)
    return out


def _fixed_noise_differences(stats: ReleaseFeatures) -> list[str]:
    """The fields whose exact bytes differ between the two reference runs (same noise stream)."""
    ref1, ref0 = stats.references["D"], stats.references["D'"]
    return [key for key in stats.fields if ref1.get(key) != ref0.get(key)]


def _event_count(s: np.ndarray, tail: str, t: float) -> int:
    return int(np.sum(s >= t)) if tail == "upper" else int(np.sum(s <= t))


def _calibrate_design(
    j: int,
    des: AuditDesign,
    *,
    fn: Callable,
    params: dict,
    relation: str,
    seed: int,
    calibration_trials: int,
    design_budget: float | None,
    n_bits: int,
    learned: tuple[str, ...] | None,
    handmade: bool,
    learn_fraction: float,
    delta: float,
    alpha: float,
    deadline: float | None = None,
) -> dict:
    """Calibrate design ``j`` of the search: its reference and calibration runs, statistics and events.

    Every draw comes from generators seeded by ``seed`` and ``j`` (the random directions
    ``[seed, 19, j]``, the reference runs ``[seed, 31, j]``, the calibration runs
    ``[seed, 23, j, side]``) or by ``seed`` alone (the learned testers), so the result is the same
    in any process and in any order.

    Parameters
    ----------
    j : int
        The design's index among the candidates.
    des : AuditDesign
        The design.
    fn, params, relation, seed, calibration_trials, design_budget, n_bits, learned, handmade, learn_fraction
        As in :func:`search_audit` (``fn`` resolved, ``params`` its keyword arguments, ``relation``
        the declared neighbouring relation).
    delta, alpha : float
        The claimed δ and 1 − confidence, for the choice of events.
    deadline : float, optional
        A ``time.time()`` after which the design is not run (the search's ``time_budget`` in a
        worker process).

    Returns
    -------
    dict
        ``{"skipped": reason}``, or ``{"entries": [...]}``: the design's leaderboard entries, each
        with its statistic's event and calibration bound (``score``) and, under ``_stats``,
        ``_learned`` and ``_calibration``, what certification reuses.
    """
    if deadline is not None and time.time() > deadline:
        return {"skipped": "time budget"}
    check_neighbours(des.X1, des.X0, relation)
    feats = design_features(des.X1, des.X0, des.k, rng=np.random.default_rng([seed, 19, j]))
    try:
        # the reference runs: one per dataset, the same fixed noise stream for both
        t1 = time.perf_counter()
        ref1 = fn(des.X1, des.k, rng=np.random.default_rng([seed, 31, j]), **params)
        if (
            design_budget is not None
            and (time.perf_counter() - t1) * 2 * calibration_trials > design_budget
        ):
            return {"skipped": "over the per-design time budget"}
        ref0 = fn(des.X0, des.k, rng=np.random.default_rng([seed, 31, j]), **params)
        runs1 = _runs(
            fn, des.X1, des.k, calibration_trials, np.random.default_rng([seed, 23, j, 1]), params
        )
        runs0 = _runs(
            fn, des.X0, des.k, calibration_trials, np.random.default_rng([seed, 23, j, 0]), params
        )
    except (
        PrivacyInputError,
        ValueError,
    ) as exc:  # e.g. k >= d, too many candidates, k > 1 unsupported
        return {"skipped": str(exc)[:120]}
    stats = SearchStatistics(
        feats,
        BitFeatures((des.X1.shape[1], des.k), n_bits),
        ReleaseFeatures.from_references(ref1, ref0),
    )
    stats.fix_modes(runs1, runs0)
    columns = []  # (names, calibration statistics on D, on D′, the learned statistics or None)
    if handmade:
        columns.append((stats.names, stats(runs1), stats(runs0), None))
    if learned:
        m1 = int(len(runs1) * learn_fraction)
        m0 = int(len(runs0) * learn_fraction)
        if 0 < m1 < len(runs1) and 0 < m0 < len(runs0):
            ls = LearnedStatistics(des.X1.shape[1], des.k, tuple(learned), seed=seed)
            ls.fit(runs1[:m1], runs0[:m0])
            columns.append((ls.names, ls(runs1[m1:]), ls(runs0[m0:]), ls))
    entries = []
    for names, F1, F0, ls in columns:
        for f, fname in enumerate(names):
            ev = choose_event(F1[:, f], F0[:, f], delta, alpha)
            if "orientation" not in ev:
                continue
            entries.append(
                {
                    "score": ev["epsilon_lower"],
                    "design_index": j,
                    "design": des.name,
                    "statistic": fname,
                    "feature_index": f,
                    **{kk: ev[kk] for kk in ("orientation", "tail", "threshold")},
                    "_stats": stats,
                    "_learned": ls,
                    "_calibration": (F1, F0),
                }
            )
    return {"entries": entries}


def _certify_side(
    fn: Callable,
    X: np.ndarray,
    k: int,
    trials: int,
    seed: int,
    side: int,
    params: dict,
    reduce: Callable,
) -> np.ndarray:
    """The statistics (``reduce``) of the ``trials`` certifying runs on one dataset, drawn from its
    own stream ``[seed, 29, side]`` (``side`` 1 for D, 0 for D′)."""
    return reduce(_runs(fn, X, k, trials, np.random.default_rng([seed, 29, side]), params))


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
    max_rows: int = LARGE_ZERO_BASE_ROWS,
    time_budget: float | None = None,
    design_budget: float | None = 60.0,
    designs: list[AuditDesign] | None = None,
    n_bits: int = 2,
    learned: tuple[str, ...] | None = ("logistic", "mmd"),
    handmade: bool = True,
    learn_fraction: float = 0.5,
    jobs: int | None = 1,
    **mechanism_params,
) -> dict:
    """Search designs × statistics × events on calibration runs, certify the winner on fresh runs.

    ``mechanism``: registry name or callable (e.g. a known-broken variant).  ``designs`` replaces the
    generated candidates (tests).  ``time_budget`` (seconds) stops the calibration phase early (the
    candidates seen so far compete); ``design_budget`` (seconds) skips a design whose first run
    predicts a longer calibration (e.g. the exact estimator's C(n, k) search on a large k = 2 design).
    ``n_bits``: how many of the lowest mantissa bits of each entry of ``components`` are statistics.
    ``learned``: the black-box statistics (:mod:`.blackbox`) trained per design on the first
    ``learn_fraction`` of its calibration runs; their events are chosen on the rest.  ``handmade``:
    whether the hand-made statistics compete too (``False``: the black-box testers alone).
    ``jobs``: worker processes (:func:`.common.audit_jobs`; ``None``: every core, ``1``: this
    process, one design after the other).  Each design is calibrated from streams of its own, and
    each dataset's certifying runs from its own, so the result does not depend on ``jobs``; only
    ``time_budget`` (wall time) makes the designs tried depend on the speed, hence on ``jobs`` and on
    the load.  Returns the certified bound, the chosen design (with its
    datasets' description), statistic and event, the calibration leaderboard (top 5), and the μ-GDP
    fit of the winning statistic's trade-off curve (:func:`.tradeoff.tradeoff_audit`: threshold from
    the calibration runs, certified on the fresh ones)."""
    if not handmade and not learned:
        raise ValueError("the search needs the hand-made statistics or at least one learned one")
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
    unit = {
        "fn": fn,
        "params": params,
        "relation": relation,
        "seed": seed,
        "calibration_trials": calibration_trials,
        "design_budget": design_budget,
        "n_bits": n_bits,
        "learned": learned,
        "handmade": handmade,
        "learn_fraction": learn_fraction,
        "delta": g0.delta,
        "alpha": alpha,
    }

    def collect(j: int, out: dict) -> None:
        if "skipped" in out:
            skipped.append((designs[j].name, out["skipped"]))
        else:
            board.extend(out["entries"])

    n_jobs = audit_jobs(jobs)
    if n_jobs == 1:
        for j, des in enumerate(designs):
            if time_budget is not None and time.perf_counter() - t0 > time_budget and board:
                skipped.append((des.name, "time budget"))
                continue
            collect(j, _calibrate_design(j, des, **unit))
    else:
        # one design per call: its streams are its own ([seed, 19 | 31 | 23, j, ...]), so the
        # results, read back in the designs' order, are those of the serial loop
        deadline = (
            None if time_budget is None else time.time() + time_budget - (time.perf_counter() - t0)
        )
        calls = (
            (_calibrate_design, (j, des), {**unit, "deadline": deadline})
            for j, des in enumerate(designs)
        )
        for j, out in enumerate(in_workers(calls, n_jobs)):
            if out.get("skipped") == "time budget" and not board:
                # the serial loop skips for time only once a design has competed
                out = _calibrate_design(j, designs[j], **unit)
            collect(j, out)
    if not board:
        raise RuntimeError(f"no design could be run for {name}: {skipped[:3]}")
    board.sort(key=lambda b: -b["score"])
    best = board[0]
    des = designs[best["design_index"]]
    stats = best["_stats"]
    calib_seconds = time.perf_counter() - t0
    # certification on fresh random streams, with the event, the reference runs and the modal
    # outputs fixed on calibration
    reduce = best["_learned"] if best["_learned"] is not None else stats
    sides = [(fn, des.X1, des.k, trials, seed, 1, params, reduce)]
    sides.append((fn, des.X0, des.k, trials, seed, 0, params, reduce))
    if n_jobs == 1:
        F1, F0 = (_certify_side(*args) for args in sides)
    else:  # each dataset's certifying runs have their own stream, [seed, 29, side]
        F1, F0 = in_workers(((_certify_side, args, {}) for args in sides), min(n_jobs, 2))
    s1, s0 = F1[:, best["feature_index"]], F0[:, best["feature_index"]]
    cal1, cal0 = (C[:, best["feature_index"]] for C in best["_calibration"])
    curve = tradeoff_audit(cal1, cal0, delta=g0.delta, confidence=confidence, fresh=(s1, s0))
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
    emp = empirical_epsilon(p_hi, p_lo, g.delta)
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
        "statistics_per_design": len(stats.names) + len(learned or ()),
        "statistic_learned": best["_learned"] is not None,
        "learned_statistics": list(learned or ()),
        "handmade_statistics": bool(handmade),
        **curve,
        "fixed_noise_differences": _fixed_noise_differences(stats.release),
        "leaderboard": [
            {kk: b[kk] for kk in ("design", "statistic", "score", "tail", "threshold")}
            for b in board[:5]
        ],
        "mechanism_params": params,
        "seed": int(seed),
        "jobs": n_jobs,
        "calibration_seconds": calib_seconds,
        "seconds": time.perf_counter() - t0,
        "violation": bool(lower > claimed),
        "verdict": verdict(claimed, lower, lower >= ceiling - 1e-9),
    }
