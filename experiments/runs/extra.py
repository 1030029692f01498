"""Runners for the experiments beyond the JMLR paper.

* :func:`run_dimension_scaling` -- sample complexity versus dimension on the Hardt-Price spiked
  covariance model: for every d of a grid, the smallest n (on a doubling grid) at which the
  configured mechanism's mean q_F reaches ``experiment.target`` (90%) of the optimum q_F(V_k).
* :func:`run_online_regret` -- regret versus stream length m of DTTZ online PCA, Algorithm 2
  (``tree=False``) and the tree-based private version (``tree=True``), against OPT and the rates
  of DTTZ Theorems 8 and 9.

Both write one record per run to the results store and skip runs whose record exists (same run
key), so an interrupted sweep resumes where it stopped.  Figures: ``scripts/make_figures.py``
(``dimension_scaling``, ``online_regret``).  See ``docs/extra_experiments.md``.
"""

from __future__ import annotations

import functools
import logging
import math
import time

import numpy as np
import pandas as pd
from omegaconf import DictConfig

from experiments.data.synthetic import spiked
from experiments.runs.evaluate import configured_mechanism, output_fields
from experiments.runs.progress import progress_bar
from experiments.runs.settings import (
    DimensionScalingSettings,
    OnlineRegretSettings,
    doubling_grid,
)
from experiments.runs.show import emit
from experiments.runs.streams import mechanism_stream
from experiments.store.provenance import record_provenance
from experiments.store.records import results_root, run_key, write_record
from experiments.store.store import ResultStore, record_id
from mechanisms.linalg import single_thread_blas
from mechanisms.metrics import projector_distance
from mechanisms.online_pca import online_regret_bounds
from mechanisms.toolkit import PreparedData

log = logging.getLogger(__name__)

__all__ = [
    "DimensionScalingSettings",
    "OnlineRegretSettings",
    "doubling_grid",
    "fit_slope",
    "run_dimension_scaling",
    "run_online_regret",
    "thin_positions",
]


def _spiked_data(cfg: DictConfig, spiked_params: dict, n: int, d: int, *entropy: int):
    """A fresh spiked sample of n rows in dimension d from stream [data_seed, *entropy]."""
    rng = np.random.default_rng([int(cfg.dataset.data_seed), *map(int, entropy)])
    return spiked(int(n), int(d), int(cfg.k), rng=rng, **spiked_params)


def _utility(rec: dict) -> float:
    """q_F / q_F_opt of a run; a ⊥ answer (no subspace) counts as 0 (it captures no energy)."""
    v = rec.get("q_F_normalised")
    return 0.0 if v is None else float(v)


# ---------------------------------------------------------------------------------------------
# Dimension scaling
# ---------------------------------------------------------------------------------------------


def _scaling_run(cfg, s: DimensionScalingSettings, store, mechanism, d: int, n: int, r: int):
    """Run r at (d, n), stored or made now: (its record, 1 if it was written now else 0)."""
    key = run_key(
        cfg, kind="run", d=d, n=n, restart=r, scale=s.scale, target=s.target, spiked=s.spiked
    )
    if store.has(key):
        return store.get(record_id(key)), 0
    t0 = time.perf_counter()
    mech = mechanism()
    ds = _spiked_data(cfg, s.spiked, n, d, d, n, r)
    data = PreparedData(ds.X)
    stream = mechanism_stream(cfg.seed, 0, r, d, n)
    out = mech(data, int(cfg.k), rng=np.random.default_rng(stream), clip=bool(cfg.clip_rows))
    fields = output_fields(cfg, out, data, time.perf_counter() - t0)
    fields.update(
        kind="run",
        restart=r,
        subset=0,
        mechanism_stream=stream,
        target=s.target,
        data_stream=[int(cfg.dataset.data_seed), d, n, r],
        projector_distance=(
            None if out.components is None else projector_distance(out.components, ds.true_subspace)
        ),
        population_gap=float(
            ds.population_eigenvalues[int(cfg.k) - 1] - ds.population_eigenvalues[int(cfg.k)]
        ),
    )
    rec, _, new = write_record(store, cfg, ds, data.X, fields, time.perf_counter() - t0, key)
    return rec, new


def _n_star_search(cfg, s: DimensionScalingSettings, store, mechanism, d: int):
    """The search for n* at dimension d: n up the grid (within ``max_cells``) until the mean utility
    of the restarts reaches the target.  Returns (the search curve, n*, the mean projector distance at
    n*, the runs' guarantee statuses, the records written)."""
    curve, n_star, dist_star, written = [], None, None, 0
    statuses: set[str] = set()
    for n in s.n_grid:
        if n * d > s.max_cells:
            break
        utils, dists = [], []
        for r in range(s.restarts):
            rec, new = _scaling_run(cfg, s, store, mechanism, d, n, r)
            written += new
            utils.append(_utility(rec))
            statuses.add(str(rec.get("guarantee_status", "proven")))
            dists.append(
                1.0 if rec.get("projector_distance") is None else rec["projector_distance"]
            )
        mean_u = float(np.mean(utils))
        curve.append(
            {
                "n": n,
                "mean_q_F_normalised": mean_u,
                "mean_projector_distance": float(np.mean(dists)),
                "bottom_fraction": float(np.mean([u == 0.0 for u in utils])),
            }
        )
        if mean_u >= s.target:
            n_star, dist_star = n, float(np.mean(dists))
            break
    return curve, n_star, dist_star, statuses, written


def _dimension(cfg, s: DimensionScalingSettings, store, mechanism, d: int) -> tuple[dict, int]:
    """Dimension d's summary record, stored or made now (its runs with it), and the records written."""
    cap = None if math.isinf(s.max_cells) else s.max_cells
    common = {"scale": s.scale, "target": s.target, "spiked": s.spiked}
    skey = run_key(
        cfg,
        kind="summary",
        d=d,
        n=None,
        restart=None,
        n_grid=list(s.n_grid),
        restarts=s.restarts,
        max_cells=cap,
        **common,
    )
    if store.has(skey):
        return store.get(record_id(skey)), 0
    t_d = time.perf_counter()
    curve, n_star, dist_star, statuses, written = _n_star_search(cfg, s, store, mechanism, d)
    summary = {
        "run_key": skey,
        "experiment": cfg.experiment.name,
        "kind": "summary",
        "dataset": "spiked",
        "mechanism": cfg.mechanism.name,
        "d": d,
        "k": int(cfg.k),
        "epsilon": float(cfg.epsilon),
        "delta": float(cfg.delta),
        "seed": int(cfg.seed),
        "scale": s.scale,
        "target": s.target,
        "n_star": n_star,
        "reached": n_star is not None,
        "projector_distance_at_n_star": dist_star,
        # "proven", or e.g. "nominal (MCMC)" for PPCA's chain: the epsilon is then nominal
        "guarantee_status": ", ".join(sorted(statuses)) or None,
        "n_grid": list(s.n_grid),
        "restarts": s.restarts,
        "search": curve,
        "spiked": s.spiked,
        "mechanism_params": run_key(cfg)["mechanism_params"],
        "wall_seconds": time.perf_counter() - t_d,
        **record_provenance(cfg),
    }
    return summary, written + store.write(summary)[1]


def run_dimension_scaling(cfg: DictConfig) -> dict:
    """n*(d): the smallest n of a doubling grid at which the mean q_F/q_F(V_k) over ``restarts`` runs
    reaches ``experiment.target``, for each d of the grid (configured mechanism, spiked model).

    Every (d, n, restart) run is a record (with the projector distance ‖UUᵀ − VVᵀ‖₂ to the true
    subspace U); each d ends with a summary record (``kind = "summary"``: ``n_star`` or null when
    the grid's largest n was not enough).  The search for a d stops at the first n that reaches
    the target.  ``experiment.only={d_index: i}`` searches the i-th d alone (a job of the plan:
    the searches of different d share nothing, and the selector is in no run key).  Run r at
    (d, n) draws its data from ``[data_seed, d, n, r]`` and its mechanism noise from
    ``mechanism_stream(seed, 0, r, d, n)``.

    Parameters
    ----------
    cfg : DictConfig
        The config composed with ``experiment=dimension_scaling``
        (:class:`~experiments.runs.settings.DimensionScalingSettings`).

    Returns
    -------
    dict
        The records written, n* per d and the log-log slope of n*(d) (:func:`fit_slope`).
    """
    s = DimensionScalingSettings.from_config(cfg)
    store = ResultStore(results_root(cfg))
    mechanism = functools.cache(lambda: configured_mechanism(cfg))
    written, summaries = 0, []
    desc = f"{cfg.mechanism.name} dimension scaling"
    dims = s.selected_dims()
    with (
        single_thread_blas(),
        progress_bar(total=len(dims), desc=desc, enable=cfg.progress) as bar,
    ):
        for d in dims:
            summary, new = _dimension(cfg, s, store, mechanism, d)
            summaries.append(summary)
            written += new
            bar.update(1)
    table = pd.DataFrame(
        [
            {
                "d": x["d"],
                "n_star": x["n_star"],
                "dist": x["projector_distance_at_n_star"],
                "guarantee": x.get("guarantee_status"),
            }
            for x in summaries
        ]
    )
    slope = fit_slope(table["d"], table["n_star"]) if len(table) else None
    if not cfg.quiet and len(table):
        print(table.to_string(index=False))
        print(f"log-log slope of n*(d): {slope}")
    result = {
        "experiment": cfg.experiment.name,
        "dataset": "spiked",
        "mechanism": cfg.mechanism.name,
        "records_written": int(written),
        "results_dir": str(results_root(cfg)),
        "n_star": {int(x["d"]): x["n_star"] for x in summaries},
        "slope": slope,
    }
    emit(result, cfg)
    return result


def fit_slope(d, n_star) -> float | None:
    """Least-squares slope of log n* against log d over the dimensions where n* was found."""
    d = np.asarray(d, dtype=float)
    n = np.asarray(pd.to_numeric(pd.Series(n_star), errors="coerce"), dtype=float)
    ok = np.isfinite(n) & (n > 0)
    if ok.sum() < 2 or np.unique(d[ok]).size < 2:
        return None
    return float(np.polyfit(np.log(d[ok]), np.log(n[ok]), 1)[0])


# ---------------------------------------------------------------------------------------------
# Online regret
# ---------------------------------------------------------------------------------------------


def thin_positions(m: int, points: int = 200) -> np.ndarray:
    """At most ``points`` step counts t in [1, m], log-spaced, always including 1 and m."""
    return np.unique(np.concatenate([[1, m], np.round(np.geomspace(1, m, points - 2))]).astype(int))


#: the per-run values the online-regret summary averages per variant
_REGRET_COLUMNS = ("regret", "opt", "regret_over_opt", "q_F_normalised")


def _regret_run(cfg, s: OnlineRegretSettings, store, tree: bool, r: int) -> tuple[dict, int]:
    """Restart r of the variant ``tree``, stored or made now: (its record, 1 if written now else 0)."""
    common = {"scale": s.scale, "spiked": s.spiked, "curve_points": s.curve_points}
    key = run_key(cfg, d=s.d, n=s.m, m=s.m, restart=r, tree=tree, **common)
    if store.has(key):
        return store.get(record_id(key)), 0
    t0 = time.perf_counter()
    ds = _spiked_data(cfg, s.spiked, s.m, s.d, s.m, r)
    data = PreparedData(ds.X)
    stream = mechanism_stream(cfg.seed, 0, r, s.m, int(tree))
    mech = configured_mechanism(cfg, tree=tree, keep_subspaces=False, keep_curves=True)
    out = mech(data, int(cfg.k), rng=np.random.default_rng(stream), clip=bool(cfg.clip_rows))
    diag = out.diagnostics  # regret, OPT, gains: exact functions of the raw rows (not private)
    curve, gains = np.asarray(diag.pop("regret_curve")), np.asarray(diag.pop("gains"))
    t = thin_positions(len(curve), s.curve_points)
    regret = curve[t - 1]
    opt_t = regret + np.cumsum(gains)[t - 1]
    b = online_regret_bounds(t, s.d, int(cfg.k), opt_t, float(cfg.epsilon), float(cfg.delta))
    fields = output_fields(cfg, out, data, time.perf_counter() - t0)
    fields.update(
        tree=tree,
        variant="tree" if tree else "fpl",
        m=s.m,
        restart=r,
        subset=0,
        mechanism_stream=stream,
        data_stream=[int(cfg.dataset.data_seed), s.m, r],
        regret=diag["regret"],
        opt=diag["opt"],
        regret_over_opt=diag["regret"] / diag["opt"],
        projector_distance=projector_distance(out.components, ds.true_subspace),
        curve={
            "t": t,
            "regret": regret,
            "opt": opt_t,
            "theorem9": b["theorem9"],
            "theorem8": b["theorem8"],
            "theorem8_conditions": b["theorem8_conditions"],
            "theorem9_conditions": np.broadcast_to(b["theorem9_conditions"], t.shape),
        },
    )
    rec, _, new = write_record(store, cfg, ds, data.X, fields, time.perf_counter() - t0, key)
    return rec, new


def run_online_regret(cfg: DictConfig) -> dict:
    """Regret of DTTZ online PCA against m, Gaussian-noise FPL (tree=False) and tree version (tree=True).

    For each variant and restart r, a spiked stream of m rows (data stream [data_seed, m, r], the
    same for both variants) is consumed once; the record stores the regret and OPT of every prefix
    at ≤ 200 log-spaced t, with the Theorem 9 / Theorem 8 rates (``online_regret_bounds``, O(·)
    constants 1) at those t, and the final subspace's q_F.  ``experiment.only={variant_index: i,
    restart: r}`` computes one variant's (or one run's) records alone (a job of the plan; the runs
    share nothing, and the selector is in no run key).

    Parameters
    ----------
    cfg : DictConfig
        The config composed with ``experiment=online_regret``
        (:class:`~experiments.runs.settings.OnlineRegretSettings`).

    Returns
    -------
    dict
        The records written and the mean regret, OPT and utility per variant.
    """
    s = OnlineRegretSettings.from_config(cfg)
    store = ResultStore(results_root(cfg))
    written, rows = 0, []
    with single_thread_blas():
        for tree, r in s.selected_runs():
            rec, new = _regret_run(cfg, s, store, tree, r)
            written += new
            rows.append({"tree": tree, "restart": r, **{c: rec[c] for c in _REGRET_COLUMNS}})
    frame = pd.DataFrame(rows, columns=["tree", "restart", *_REGRET_COLUMNS])
    summary = frame.groupby("tree")[list(_REGRET_COLUMNS)].mean().reset_index()
    if not cfg.quiet:
        print(summary.to_string(index=False))
    result = {
        "experiment": cfg.experiment.name,
        "dataset": "spiked",
        "mechanism": "online_pca",
        "m": s.m,
        "d": s.d,
        "records_written": int(written),
        "results_dir": str(results_root(cfg)),
        "summary": summary.to_dict(orient="records"),
    }
    emit(result, cfg)
    return result
