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

from experiments.audit.bounds import audit_scores
from experiments.audit.common import PEER_NAMES, accepted_params, audit_params, resolve, verdict
from experiments.audit.designs import AUDIT_PARAMS, AuditDesign, design_for, gaussian_design
from experiments.audit.search import search_audit
from experiments.audit.statistics import STATISTICS
from experiments.audit.variants import (
    PLANTED_VARIANTS,
    SUBSPACE_EXACT_VARIANTS,
    bypass_norm_check,
    miscalibrated,
    noise_cut,
    planted_variant,
    subspace_exact_variant,
)
from experiments.audit.whitebox import whitebox_audit
from mechanisms import MECHANISMS, MechanismOutput, get_mechanism

log = logging.getLogger(__name__)

#: revision of the search and white-box audits in their records' keys: 2 adds the bit-level and release
#: statistics and the heavy-axis designs to the search, and the exact-ε(δ) verdict and the 32-row
#: online stream to the white-box audit, so that a stored record of revision 1 is not shown as theirs
AUDIT_REVISION = 2


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
    """
    name, fn = resolve(mechanism)
    design_name = design_name or getattr(fn, "audit_design", name)
    params = audit_params(fn, design_name, epsilon, delta, mechanism_params)
    t0 = time.perf_counter()
    if design is None:
        # the declared relation (it can depend on the parameters, e.g. Analyze Gauss, noisy power)
        probe_X = gaussian_design("replace-one-row", d=d, n=200).X1
        probe = fn(probe_X, k, rng=np.random.default_rng([seed, 7, 99]), **params)
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
    rng1, rng0 = np.random.default_rng([seed, 7, 1]), np.random.default_rng([seed, 7, 0])
    first = fn(design.X1, k, rng=rng1, **params)
    g = first.guarantee
    stat = STATISTICS[design.statistic]
    s1 = np.concatenate(
        [
            [stat(first.components)],
            run_trials(fn, design.X1, k, trials - 1, rng1, design.statistic, **params),
        ]
    )
    s0 = run_trials(fn, design.X0, k, trials, rng0, design.statistic, **params)
    seconds = time.perf_counter() - t0
    res = audit_scores(
        s1,
        s0,
        delta=g.delta,
        confidence=confidence,
        calibration_fraction=calibration_fraction,
        thresholds=thresholds,
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


def run_audit(cfg) -> dict:
    """``python run.py experiment=audit mechanism=NAME``: audit one mechanism, store and print the result.

    The mechanism is ``experiment.mechanism`` (any registry name) if set, otherwise the
    ``mechanism`` config group (its ``fn`` parameters are used).  ``experiment.mode`` picks the audit
    (design / search / whitebox, module docstring); ``experiment.variant`` (noise_cut, unfixed),
    ``experiment.noise_factor`` and ``experiment.row_norm > 1`` audit known-broken variants (all must be
    caught).  ``experiment.epsilon_cap`` lowers ε for mechanisms whose theorem needs a smaller one
    (Analyze Gauss: ε < 1).
    """
    from omegaconf import OmegaConf

    from experiments.runs.show import emit
    from experiments.store.provenance import record_provenance
    from experiments.store.records import mechanism_params, results_root
    from experiments.store.store import ResultStore, record_id

    e = cfg.experiment
    if e.get("mechanism"):
        name = str(e.mechanism)
        params = {"epsilon": float(cfg.epsilon), "delta": float(cfg.delta)}
    else:
        name = str(cfg.mechanism.name)
        params = mechanism_params(cfg)
    mode = str(e.get("mode", "design"))
    if mode not in ("design", "search", "whitebox"):
        raise ValueError(f"experiment.mode must be design, search or whitebox, got {mode!r}")
    if name in PEER_NAMES and (
        mode != "design"
        or e.get("variant") is not None
        or e.get("noise_factor") is not None
        or float(e.get("row_norm", 1.0)) > 1.0
    ):
        raise ValueError(
            f"{name} is a peer (run in its own process): it is audited with experiment.mode=design "
            "and no variant, noise_factor or row_norm"
        )
    if int(e.trials) < 2:  # each dataset's runs are split between choosing the event and the bound
        raise ValueError(f"experiment.trials must be an integer >= 2, got {e.trials!r}")
    # the audit's settings (AUDIT_PARAMS) win over the group's defaults; experiment.mechanism_params win over both
    params.update(AUDIT_PARAMS.get(name, {}))
    extra = e.get("mechanism_params")
    if extra is not None:
        params.update(OmegaConf.to_container(extra, resolve=True))
    params.pop("progress", None)
    caps = e.get("epsilon_cap")
    cap = None if caps is None else caps.get(name)
    capped = False
    if (
        cap is not None
        and "epsilon" in params
        and params["epsilon"] is not None
        and params["epsilon"] > cap
    ):
        params["epsilon"], capped = float(cap), True
    noise_factor = e.get("noise_factor")
    row_norm = float(e.get("row_norm", 1.0))
    variant = e.get("variant")
    overshoot = float(e.get("overshoot", 1.25))
    if variant == "noise_cut":
        mech = noise_cut(
            name,
            overshoot=overshoot,
            # the cut is found on the white-box design the audit then runs
            n=int(e.n) if (mode == "whitebox" and e.get("n") is not None) else None,
            **{
                kk: v
                for kk, v in params.items()
                if kk not in ("keep_subspaces", "iterations", "block_size")
            },
        )
    elif variant in SUBSPACE_EXACT_VARIANTS:
        if name != "subspace_exact":
            raise ValueError(
                f"experiment.variant={variant} is a known-broken subspace_exact (mechanism subspace_exact)"
            )
        mech = subspace_exact_variant(str(variant))
    elif variant in PLANTED_VARIANTS:
        mech = planted_variant(str(variant), name)
    elif variant is not None:
        raise ValueError(
            "experiment.variant must be null, noise_cut or one of "
            f"{sorted(SUBSPACE_EXACT_VARIANTS) + sorted(PLANTED_VARIANTS)}, got {variant!r}"
        )
    elif noise_factor is not None:
        mech = miscalibrated(name, float(noise_factor))
    elif row_norm > 1.0:
        mech = bypass_norm_check(name)
    else:
        mech = name
    _, fn = resolve(mech)
    params = accepted_params(fn, params)
    key = {
        "experiment": str(e.name),
        "mechanism": name,
        "mechanism_params": dict(params),
        "trials": int(e.trials),
        "confidence": float(e.confidence),
        "seed": int(cfg.seed),
        "d": int(e.d),
        "n": None if e.get("n") is None else int(e.n),
        "k": int(e.k),
        "row_norm": row_norm,
        "noise_factor": None if noise_factor is None else float(noise_factor),
        "calibration_fraction": float(e.calibration_fraction),
        "design_epsilon": e.get("design_epsilon"),
    }
    if (
        mode != "design" or variant is not None
    ):  # keys of the new modes (old records keep their ids)
        key.update(
            mode=mode,
            variant=variant,
            overshoot=overshoot,
            calibration_trials=int(e.get("calibration_trials", 300)),
            n_random=int(e.get("n_random", 12)),
            use_catalogue=bool(e.get("use_catalogue", True)),
            time_budget=e.get("time_budget"),
        )
        if mode != "design":
            key["audit_revision"] = AUDIT_REVISION
    store = ResultStore(results_root(cfg))
    rid = record_id(key)
    if store.has(key):
        record = store.get(rid)
        record["written"] = False
    else:
        params = dict(params)
        eps = params.pop("epsilon", None)
        dl = params.pop("delta", None)
        n = None if e.get("n") is None else int(e.n)
        if mode == "design":
            res = audit_mechanism(
                mech,
                epsilon=eps,
                delta=dl,
                trials=int(e.trials),
                confidence=float(e.confidence),
                seed=int(cfg.seed),
                calibration_fraction=float(e.calibration_fraction),
                d=int(e.d),
                n=n,
                k=int(e.k),
                row_norm=row_norm,
                design_name=name,
                design_epsilon=e.get("design_epsilon"),
                **params,
            )
        elif mode == "search":
            res = search_audit(
                mech,
                epsilon=eps,
                delta=dl,
                trials=int(e.trials),
                calibration_trials=int(e.get("calibration_trials", 300)),
                n_random=int(e.get("n_random", 12)),
                use_catalogue=bool(e.get("use_catalogue", True)),
                time_budget=None if e.get("time_budget") is None else float(e.time_budget),
                seed=int(cfg.seed),
                confidence=float(e.confidence),
                **params,
            )
        else:
            for kk in ("iterations", "block_size", "keep_subspaces"):
                params.pop(kk, None)
            res = whitebox_audit(
                mech,
                epsilon=eps,
                delta=dl,
                trials=int(e.trials),
                confidence=float(e.confidence),
                seed=int(cfg.seed),
                calibration_fraction=float(e.calibration_fraction),
                n=n,
                **params,
            )
        res["mechanism"] = getattr(mech, "audit_name", name)
        res.setdefault("mode", mode)
        res.setdefault(
            "verdict",
            verdict(
                res["claimed_epsilon"],
                res["audited_epsilon_lower"],
                bool(res.get("at_ceiling", False)),
            ),
        )
        record = {
            "run_key": key,
            "experiment": str(e.name),
            **res,
            "epsilon_capped": capped,
            **record_provenance(cfg),
        }
        rid, written = store.write(record)
        record["record_id"], record["written"] = rid, written
    if not cfg.quiet:
        extra_txt = (
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
            extra_txt,
            record["verdict"],
        )
    out = {k: v for k, v in record.items() if k not in ("config",)}
    emit(out, cfg)
    return out
