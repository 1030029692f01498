"""Running the audit: many runs of a mechanism on a design, the bound, and the Hydra entry point.

``python run.py experiment=audit experiment.mode=design|search|whitebox ...`` (conf/experiment/audit.yaml):

* ``design`` (default): the hand-made design of the mechanism (:func:`audit_mechanism`);
* ``search``: the automatic search over designs and statistics (:func:`.search.search_audit`);
* ``whitebox``: the likelihood-ratio test on the noisy intermediate (:func:`.whitebox.whitebox_audit`),
  with the exact ε(δ) printed beside the bound.

``experiment.variant`` audits a known-broken variant instead: ``noise_cut`` (:func:`.variants.noise_cut`,
exact ε(δ) = ``experiment.overshoot`` × claim), or, for ``subspace_exact``, ``unfixed``, ``tolerance``,
``first_rows_frame``, ``rounded_dedup`` (:func:`.variants.subspace_exact_variant`), or a planted defect
(:func:`.variants.planted_variant`): ``sign_bit`` (``mod_sulq``), ``tree_without_height``
(``online_pca``), ``doubled_exponent`` (``ppca``);
``experiment.noise_factor`` and ``experiment.row_norm > 1`` keep their meaning.
"""

from __future__ import annotations

import logging
import time
from typing import Callable, Sequence

import numpy as np

from experiments.audit.bayes import bayes_fields
from experiments.audit.bounds import audit_scores
from experiments.audit.common import (
    accepted_params,
    audit_jobs,
    audit_params,
    in_workers,
    resolve,
    verdict,
)
from experiments.audit.designs import AuditDesign, design_for, gaussian_design
from experiments.audit.search import search_audit
from experiments.audit.settings import AuditSettings
from experiments.audit.statistics import STATISTICS
from experiments.audit.tradeoff import tradeoff_audit, whitebox_scores
from experiments.audit.variants import (
    MECHANISM_VARIANTS,
    PLANTED_VARIANTS,
    SUBSPACE_EXACT_VARIANTS,
    bypass_norm_check,
    mechanism_variant,
    miscalibrated,
    noise_cut,
    planted_variant,
    subspace_exact_variant,
)
from experiments.audit.whitebox import whitebox_audit
from mechanisms import MECHANISMS, MechanismOutput, get_mechanism

log = logging.getLogger(__name__)


def run_trials(
    mech: Callable[..., MechanismOutput],
    X: np.ndarray,
    k: int,
    trials: int,
    rng: np.random.Generator,
    statistic: str | Callable = "proj_e1",
    **params,
) -> np.ndarray:
    """Statistic of ``trials`` independent runs of ``mech(X, k, rng=rng, **params)`` (or of one
    ``mech.repeated(X, k, trials, rng=rng, **params)`` call, for a mechanism that batches its runs:
    the peers, which would otherwise start a worker process per run)."""
    stat = STATISTICS[statistic] if isinstance(statistic, str) else statistic
    if hasattr(mech, "repeated"):
        releases = mech.repeated(X, k, int(trials), rng=rng, **params) if trials > 0 else []
        return np.array([stat(V) for V in releases], dtype=float)
    out = np.empty(int(trials))
    for i in range(int(trials)):
        out[i] = stat(mech(X, k, rng=rng, **params).components)
    return out


#: the design audit runs serially when its probe run predicts less wall time than this (seconds):
#: starting worker processes costs about 2 s of CPU time each on the 2-core development machine
MIN_WORKER_SECONDS = 4.0


def _design_side(
    fn: Callable[..., MechanismOutput],
    X: np.ndarray,
    k: int,
    trials: int,
    seed: int,
    side: int,
    statistic: str,
    params: dict,
):
    """The design audit's runs on one dataset (``side`` 1 for D, 0 for D′), from its stream
    ``default_rng([seed, 7, side])``: the statistic of all ``trials``, and, on D, the guarantee of
    the first run, made on its own (``None`` on D′, whose runs are made by one :func:`run_trials`)."""
    rng = np.random.default_rng([seed, 7, side])
    if side == 0:
        return None, run_trials(fn, X, k, trials, rng, statistic, **params)
    first = fn(X, k, rng=rng, **params)
    stat = STATISTICS[statistic]
    s = np.concatenate(
        [[stat(first.components)], run_trials(fn, X, k, trials - 1, rng, statistic, **params)]
    )
    return first.guarantee, s


def audit_mechanism(
    mechanism: str | Callable,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    trials: int = 20000,
    confidence: float = 0.95,
    seed: int = 0,
    calibration_fraction: float = 0.5,
    thresholds: Sequence[float] | None = None,
    d: int = 2,
    n: int | None = None,
    k: int = 1,
    row_norm: float = 1.0,
    design: AuditDesign | None = None,
    design_name: str | None = None,
    design_epsilon: float | None = None,
    jobs: int | None = 1,
    **mechanism_params,
) -> dict:
    """Audit one mechanism: run it ``trials`` times on each of two neighbouring datasets.

    ``mechanism``: a registry name or a callable ``f(X, k, *, rng, **params) -> MechanismOutput``
    (e.g. from :func:`miscalibrated`).  ``epsilon``/``delta`` are passed on when the mechanism
    takes them; the *claimed* ε, δ and relation are read from the guarantee of its output.
    ``design`` overrides the dataset pair (default :func:`design_for`, under the relation
    declared by the mechanism; ``design_name`` picks the design of another registry name;
    ``design_epsilon`` tunes ε-dependent designs for a suspected true ε instead of the claim).
    Returns a dict with ``audited_epsilon_lower``, ``claimed_epsilon``, ``delta``, ``confidence``,
    the event, counts and timings.  Randomness: ``default_rng([seed, 7, side])`` per dataset.
    ``jobs`` (:func:`.common.audit_jobs`; ``None``: every core): with more than one, the two
    datasets' runs are made in two worker processes, from the same streams, so the result is the
    same (a peer, which batches its runs in a process of its own, and an audit whose probe run
    predicts under :data:`MIN_WORKER_SECONDS`, keep them in this one).
    """
    name, fn = resolve(mechanism)
    design_name = design_name or getattr(fn, "audit_design", name)
    params = audit_params(fn, design_name, epsilon, delta, mechanism_params)
    t0 = time.perf_counter()
    probe_seconds = None
    if design is None:
        # the declared relation (it can depend on the parameters, e.g. Analyze Gauss, noisy power)
        probe_X = gaussian_design("replace-one-row", d=d, n=200).X1
        t_probe = time.perf_counter()
        probe = fn(probe_X, k, rng=np.random.default_rng([seed, 7, 99]), **params)
        probe_seconds = time.perf_counter() - t_probe
        g0 = probe.guarantee
        eps_design = design_epsilon or (g0.epsilon if epsilon is None else epsilon)
        design = design_for(
            design_name,
            g0.neighbouring,
            epsilon=eps_design,
            delta=g0.delta,
            d=d,
            n=n,
            row_norm=row_norm,
        )
    design.k = k
    n_jobs = audit_jobs(jobs)
    sides = [(fn, design.X1, k, trials, seed, 1, design.statistic, params)]
    sides.append((fn, design.X0, k, trials, seed, 0, design.statistic, params))
    # workers only where they can pay for their start (a peer batches its runs in a process of its
    # own); the result is the same either way
    short = probe_seconds is not None and 2 * trials * probe_seconds < MIN_WORKER_SECONDS
    if short or hasattr(fn, "repeated"):
        n_jobs = 1
    if n_jobs == 1:
        (g, s1), (_, s0) = (_design_side(*args) for args in sides)
    else:  # each dataset's runs have their own stream, [seed, 7, side]
        (g, s1), (_, s0) = in_workers(((_design_side, args, {}) for args in sides), 2)
    seconds = time.perf_counter() - t0
    res = audit_scores(
        s1,
        s0,
        delta=g.delta,
        confidence=confidence,
        calibration_fraction=calibration_fraction,
        thresholds=thresholds,
    )
    if thresholds is None:  # the statistic's whole trade-off curve, μ-GDP fit and certified μ
        res.update(
            tradeoff_audit(
                s1,
                s0,
                delta=g.delta,
                confidence=confidence,
                calibration_fraction=calibration_fraction,
            )
        )
    claimed = float(g.epsilon)
    lower = res["audited_epsilon_lower"]
    result = {
        "mechanism": name,
        "claimed_epsilon": claimed,
        "delta": float(g.delta),
        "declared_neighbouring": g.neighbouring,
        "guarantee_exact": bool(g.exact),
        **design.summary(),
        **res,
        "trials": int(trials),
        "seed": int(seed),
        "mechanism_params": params,
        "jobs": n_jobs,
        "seconds": seconds,
        "violation": bool(lower > claimed),
        "verdict": verdict(claimed, lower, res["at_ceiling"]),
    }
    return result


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


def audited_mechanism(s: AuditSettings) -> str | Callable[..., MechanismOutput]:
    """The mechanism the audit runs: the registry name, or the known-broken variant ``s`` asks for
    (a variant, else the noise scaled by ``noise_factor``, else the norm check bypassed for
    ``row_norm > 1``)."""
    if s.variant == "noise_cut":
        kept = {
            key: value
            for key, value in s.mechanism_params.items()
            if key not in ("keep_subspaces", "iterations", "block_size")
        }
        # the cut is found on the white-box design the audit then runs
        n = s.n if s.mode == "whitebox" else None
        return noise_cut(s.mechanism, overshoot=s.overshoot, n=n, **kept)
    if s.variant in SUBSPACE_EXACT_VARIANTS:
        return subspace_exact_variant(str(s.variant))
    if s.variant in PLANTED_VARIANTS:
        return planted_variant(str(s.variant), s.mechanism)
    if s.variant is not None and s.variant in MECHANISM_VARIANTS.get(s.mechanism, ((),))[0]:
        return mechanism_variant(str(s.variant), str(s.mechanism))
    if s.noise_factor is not None:
        return miscalibrated(s.mechanism, s.noise_factor)
    if s.row_norm > 1.0:
        return bypass_norm_check(s.mechanism)
    return s.mechanism


def _whitebox_scores(mech: str | Callable, **kw) -> tuple[np.ndarray, np.ndarray, float | None]:
    """:func:`.tradeoff.whitebox_scores`'s samples on D and D′ and its model's μ (``None`` if it has
    none): what the white-box record's trade-off curve needs, and all of it picklable."""
    s1, s0, model = whitebox_scores(mech, **kw)
    return s1, s0, model.get("mu")


def _audit(s: AuditSettings, mech: str | Callable, params: dict) -> dict:
    """Run the audit of ``s.mode`` on ``mech`` with the keyword arguments ``params``; the result
    with the mechanism's audit name, the mode and the verdict.  ``s.jobs`` worker processes
    (:func:`.common.audit_jobs`) share the independent units of work: the search's designs and each
    dataset's certifying runs, the design audit's two datasets, the white-box audit and the second
    draw of its samples; the result is the same for any number."""
    params = dict(params)
    jobs = audit_jobs(s.jobs)
    common = {
        "epsilon": params.pop("epsilon", None),
        "delta": params.pop("delta", None),
        "trials": s.trials,
        "confidence": s.confidence,
        "seed": s.seed,
    }
    if s.mode == "design":
        res = audit_mechanism(
            mech,
            **common,
            calibration_fraction=s.calibration_fraction,
            d=s.d,
            n=s.n,
            k=s.k,
            row_norm=s.row_norm,
            design_name=s.mechanism,
            design_epsilon=s.design_epsilon,
            jobs=jobs,
            **params,
        )
    elif s.mode == "search":
        res = search_audit(
            mech,
            **common,
            calibration_trials=s.calibration_trials,
            n_random=s.n_random,
            use_catalogue=s.use_catalogue,
            time_budget=None if s.time_budget is None else float(s.time_budget),
            learned=s.learned or None,
            handmade=s.handmade,
            jobs=jobs,
            **params,
        )
    else:
        for key in ("iterations", "block_size", "keep_subspaces"):
            params.pop(key, None)
        audit_kw = {**common, "calibration_fraction": s.calibration_fraction, "n": s.n, **params}
        # the same samples again, for the statistic's trade-off curve and μ-GDP fit
        wb = {key: common[key] for key in ("epsilon", "delta", "trials", "seed")}
        scores_kw = {**wb, "n": s.n, **params}
        if jobs == 1:
            res = whitebox_audit(mech, **audit_kw)
            s1, s0, mu = _whitebox_scores(mech, **scores_kw)
        else:  # two computations from their own streams, side by side in two worker processes
            calls = [(whitebox_audit, (mech,), audit_kw), (_whitebox_scores, (mech,), scores_kw)]
            res, (s1, s0, mu) = in_workers(calls, 2)
        res.update(
            tradeoff_audit(
                s1,
                s0,
                delta=res["delta"],
                confidence=s.confidence,
                calibration_fraction=s.calibration_fraction,
                model_mu=mu,
            )
        )
    res["mechanism"] = getattr(mech, "audit_name", s.mechanism)
    res.setdefault("jobs", min(jobs, 2))  # the white-box audit: two units of work
    res.update(bayes_fields(res, seed=s.seed))
    res.setdefault("mode", s.mode)
    res.setdefault(
        "verdict",
        verdict(
            res["claimed_epsilon"], res["audited_epsilon_lower"], bool(res.get("at_ceiling", False))
        ),
    )
    return res


def _log_audit(record: dict) -> None:
    """The audit's line: the claim, the bound, the budget and the verdict."""
    exact = (
        f", exact epsilon(delta) of the noisy statistic {record['exact_epsilon']:.4f}"
        if "exact_epsilon" in record
        else ""
    )
    log.info(
        "audit[%s] %s: claimed epsilon %s (delta %g, %s), audited lower bound %.4f at confidence %.3g "
        "(%d trials per dataset, %.1f s)%s: %s",
        record.get("mode", "design"),
        record["mechanism"],
        record["claimed_epsilon"],
        record["delta"],
        record["neighbouring"],
        record["audited_epsilon_lower"],
        record["confidence"],
        record["trials"],
        record["seconds"],
        exact,
        record["verdict"],
    )


def _prepared(cfg) -> tuple[AuditSettings, str | Callable[..., MechanismOutput], dict, dict]:
    """The settings of ``cfg``, the mechanism they audit, the keyword arguments it takes and the
    record's run key."""
    s = AuditSettings.from_config(cfg)
    mech = audited_mechanism(s)
    params = accepted_params(resolve(mech)[1], s.mechanism_params)
    return s, mech, params, s.run_key(params)


def audit_run_key(cfg) -> dict:
    """The run key of the record ``run.py`` stores for ``cfg``, computed as :func:`run_audit` does
    before it looks the record up (no audit is run).

    Parameters
    ----------
    cfg : DictConfig
        A config composed with ``experiment=audit``.

    Returns
    -------
    dict
        The run key; :func:`experiments.store.store.record_id` of it names the record.
    """
    return _prepared(cfg)[3]


def run_audit(cfg) -> dict:
    """``python run.py experiment=audit mechanism=NAME``: audit one mechanism, store and print the result.

    Parameters
    ----------
    cfg : DictConfig
        The config composed with ``experiment=audit`` (:class:`~experiments.audit.settings.AuditSettings`
        reads it): the mechanism is ``experiment.mechanism`` (any registry name) if set, otherwise
        the ``mechanism`` config group (its ``fn`` parameters are used); ``experiment.mode`` picks
        the audit (design / search / whitebox, module docstring); ``experiment.variant``,
        ``experiment.noise_factor`` and ``experiment.row_norm > 1`` audit known-broken variants (all
        must be caught); ``experiment.epsilon_cap`` lowers ε for mechanisms whose theorem needs a
        smaller one (Analyze Gauss: ε < 1).

    Returns
    -------
    dict
        The record (stored before, or written now: ``written``), without its config.
    """
    from experiments.runs.show import emit
    from experiments.store.provenance import record_provenance
    from experiments.store.records import results_root
    from experiments.store.store import ResultStore, record_id

    s, mech, params, key = _prepared(cfg)
    store = ResultStore(results_root(cfg))
    if store.has(key):
        record = store.get(record_id(key))
        record["written"] = False
    else:
        record = {
            "run_key": key,
            "experiment": s.name,
            **_audit(s, mech, params),
            "epsilon_capped": s.epsilon_capped,
            **record_provenance(cfg),
        }
        record["record_id"], record["written"] = store.write(record)
    if not cfg.quiet:
        _log_audit(record)
    out = {k: v for k, v in record.items() if k not in ("config",)}
    emit(out, cfg)
    return out
