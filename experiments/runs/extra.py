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

import logging
import math
import time
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from experiments.data.synthetic import spiked
from experiments.errors import UserError
from experiments.runs.evaluate import configured_mechanism, output_fields
from experiments.runs.progress import progress_bar
from experiments.runs.show import emit
from experiments.runs.streams import mechanism_stream
from experiments.store.provenance import record_provenance
from experiments.store.records import results_root, run_key, write_record
from experiments.store.store import ResultStore, record_id
from mechanisms import PreparedData
from mechanisms.linalg import single_thread_blas
from mechanisms.metrics import projector_distance
from mechanisms.online_pca import online_regret_bounds

log = logging.getLogger(__name__)

#: spiked-model parameters taken from the dataset config (``d`` is the swept variable)
_SPIKED_KEYS = ("spike", "sigma", "lambdas", "basis", "row_scaling")


def _grid(cfg: DictConfig) -> dict[str, Any]:
    """The experiment's settings for the current scale (``experiment.grids[scale.name]``), with any
    explicit top-level ``experiment.<key>`` (not null) taking precedence."""
    e = cfg.experiment
    grids = OmegaConf.to_container(e.grids, resolve=True)
    name = str(cfg.scale.name)
    if name not in grids:
        raise ValueError(f"experiment {e.name}: no grid for scale {name!r} (have {sorted(grids)})")
    g = dict(grids[name])
    for key in list(g):
        if key in e and e[key] is not None:
            g[key] = (
                OmegaConf.to_container(e[key], resolve=True)
                if OmegaConf.is_config(e[key])
                else e[key]
            )
    return g


def _spiked_params(cfg: DictConfig) -> dict[str, Any]:
    if cfg.dataset.name != "spiked":
        raise ValueError(
            f"experiment {cfg.experiment.name} runs on the spiked model: use dataset=spiked "
            f"(got {cfg.dataset.name})"
        )
    params = OmegaConf.to_container(cfg.dataset.params, resolve=True) or {}
    return {k: v for k, v in params.items() if k in _SPIKED_KEYS and v is not None}


def _spiked_data(cfg: DictConfig, n: int, d: int, *entropy: int):
    """A fresh spiked sample of n rows in dimension d from stream [data_seed, *entropy]."""
    rng = np.random.default_rng([int(cfg.dataset.data_seed), *map(int, entropy)])
    return spiked(int(n), int(d), int(cfg.k), rng=rng, **_spiked_params(cfg))


def doubling_grid(n_min: int, n_max: int) -> list[int]:
    """n_min, 2 n_min, 4 n_min, ... up to n_max (inclusive when it falls on the grid)."""
    out, n = [], int(n_min)
    while n <= int(n_max):
        out.append(n)
        n *= 2
    return out


def _utility(rec: dict) -> float:
    """q_F / q_F_opt of a run; a ⊥ answer (no subspace) counts as 0 (it captures no energy)."""
    v = rec.get("q_F_normalised")
    return 0.0 if v is None else float(v)


# ---------------------------------------------------------------------------------------------
# Dimension scaling
# ---------------------------------------------------------------------------------------------


def run_dimension_scaling(cfg: DictConfig) -> dict:
    """n*(d): the smallest n of a doubling grid at which the mean q_F/q_F(V_k) over ``restarts`` runs
    reaches ``experiment.target``, for each d of the grid (configured mechanism, spiked model).

    Every (d, n, restart) run is a record (with the projector distance ‖UUᵀ − VVᵀ‖₂ to the true
    subspace U); each d ends with a summary record (``kind = "summary"``: ``n_star`` or null when
    the grid's largest n was not enough).  The search for a d stops at the first n that reaches
    the target.  Run r at (d, n) draws its data from ``[data_seed, d, n, r]`` and its mechanism noise
    from ``mechanism_stream(seed, 0, r, d, n)``.
    """
    g = _grid(cfg)
    dims = [int(x) for x in g["dims"]]
    ns = doubling_grid(int(g["n_min"]), int(g["n_max"]))
    restarts = int(g["restarts"])
    max_cells = float(g.get("max_cells") or math.inf)
    target = float(cfg.experiment.target)
    store = ResultStore(results_root(cfg))
    mech = None
    written = 0
    common = {"scale": str(cfg.scale.name), "target": target, "spiked": _spiked_params(cfg)}
    summaries = []
    bar = progress_bar(
        total=len(dims), desc=f"{cfg.mechanism.name} dimension scaling", enable=cfg.progress
    )
    with single_thread_blas():
        for d in dims:
            skey = run_key(
                cfg,
                kind="summary",
                d=d,
                n=None,
                restart=None,
                n_grid=ns,
                restarts=restarts,
                max_cells=None if math.isinf(max_cells) else max_cells,
                **common,
            )
            if store.has(skey):
                summaries.append(store.get(record_id(skey)))
                bar.update(1)
                continue
            t_d = time.perf_counter()
            curve, n_star, dist_star = [], None, None
            statuses: set[str] = set()
            for n in ns:
                if n * d > max_cells:
                    break
                utils, dists = [], []
                for r in range(restarts):
                    key = run_key(cfg, kind="run", d=d, n=n, restart=r, **common)
                    if store.has(key):
                        rec = store.get(record_id(key))
                    else:
                        t0 = time.perf_counter()
                        mech = mech or configured_mechanism(cfg)
                        ds = _spiked_data(cfg, n, d, d, n, r)
                        data = PreparedData(ds.X)
                        stream = mechanism_stream(cfg.seed, 0, r, d, n)
                        out = mech(
                            data,
                            int(cfg.k),
                            rng=np.random.default_rng(stream),
                            clip=bool(cfg.clip_rows),
                        )
                        fields = output_fields(cfg, out, data, time.perf_counter() - t0)
                        fields.update(
                            kind="run",
                            restart=r,
                            subset=0,
                            mechanism_stream=stream,
                            target=target,
                            data_stream=[int(cfg.dataset.data_seed), d, n, r],
                            projector_distance=(
                                None
                                if out.components is None
                                else projector_distance(out.components, ds.true_subspace)
                            ),
                            population_gap=float(
                                ds.population_eigenvalues[int(cfg.k) - 1]
                                - ds.population_eigenvalues[int(cfg.k)]
                            ),
                        )
                        rec, _, new = write_record(
                            store, cfg, ds, data.X, fields, time.perf_counter() - t0, key
                        )
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
                if mean_u >= target:
                    n_star, dist_star = n, float(np.mean(dists))
                    break
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
                "scale": str(cfg.scale.name),
                "target": target,
                "n_star": n_star,
                "reached": n_star is not None,
                "projector_distance_at_n_star": dist_star,
                # "proven", or e.g. "nominal (MCMC)" for PPCA's chain: the epsilon is then nominal
                "guarantee_status": ", ".join(sorted(statuses)) or None,
                "n_grid": ns,
                "restarts": restarts,
                "search": curve,
                "spiked": _spiked_params(cfg),
                "mechanism_params": run_key(cfg)["mechanism_params"],
                "wall_seconds": time.perf_counter() - t_d,
                **record_provenance(cfg),
            }
            written += store.write(summary)[1]
            summaries.append(summary)
            bar.update(1)
    bar.close()
    table = pd.DataFrame(
        [
            {
                "d": s["d"],
                "n_star": s["n_star"],
                "dist": s["projector_distance_at_n_star"],
                "guarantee": s.get("guarantee_status"),
            }
            for s in summaries
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
        "n_star": {int(s["d"]): s["n_star"] for s in summaries},
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


def run_online_regret(cfg: DictConfig) -> dict:
    """Regret of DTTZ online PCA against m, Gaussian-noise FPL (tree=False) and tree version (tree=True).

    For each variant and restart r, a spiked stream of m rows (data stream [data_seed, m, r], the
    same for both variants) is consumed once; the record stores the regret and OPT of every prefix
    at ≤ 200 log-spaced t, with the Theorem 9 / Theorem 8 rates (``online_regret_bounds``, O(·)
    constants 1) at those t, and the final subspace's q_F.
    """
    if cfg.mechanism.name != "online_pca":
        raise ValueError("experiment=online_regret needs mechanism=online_pca")
    if cfg.mechanism.fn.get("tree", True) is not True:
        # the variants run are experiment.variants; a tree value here would run nothing different
        # yet enter every record's key
        raise UserError(
            "experiment=online_regret takes its tree values from experiment.variants, not from "
            "mechanism.fn.tree: drop that override (one variant only: experiment.variants=[true])"
        )
    g = _grid(cfg)
    m = int(g["m"])
    d = int(g.get("d") or cfg.dataset.params.d)
    restarts = int(g["restarts"])
    variants = [bool(v) for v in cfg.experiment.variants]
    points = int(cfg.experiment.curve_points)
    store = ResultStore(results_root(cfg))
    written = 0
    rows = []
    common = {"scale": str(cfg.scale.name), "spiked": _spiked_params(cfg), "curve_points": points}
    with single_thread_blas():
        for tree in variants:
            for r in range(restarts):
                key = run_key(cfg, d=d, n=m, m=m, restart=r, tree=tree, **common)
                if store.has(key):
                    rec = store.get(record_id(key))
                else:
                    t0 = time.perf_counter()
                    ds = _spiked_data(cfg, m, d, m, r)
                    data = PreparedData(ds.X)
                    stream = mechanism_stream(cfg.seed, 0, r, m, int(tree))
                    mech = configured_mechanism(
                        cfg, tree=tree, keep_subspaces=False, keep_curves=True
                    )
                    out = mech(
                        data,
                        int(cfg.k),
                        rng=np.random.default_rng(stream),
                        clip=bool(cfg.clip_rows),
                    )
                    diag = (
                        out.diagnostics
                    )  # regret, OPT, gains: exact functions of the raw rows (not private)
                    curve, gains = (
                        np.asarray(diag.pop("regret_curve")),
                        np.asarray(diag.pop("gains")),
                    )
                    t = thin_positions(len(curve), points)
                    regret = curve[t - 1]
                    opt_t = regret + np.cumsum(gains)[t - 1]
                    step_eps = float(cfg.epsilon)
                    b = online_regret_bounds(t, d, int(cfg.k), opt_t, step_eps, float(cfg.delta))
                    fields = output_fields(cfg, out, data, time.perf_counter() - t0)
                    fields.update(
                        tree=tree,
                        variant="tree" if tree else "fpl",
                        m=m,
                        restart=r,
                        subset=0,
                        mechanism_stream=stream,
                        data_stream=[int(cfg.dataset.data_seed), m, r],
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
                            "theorem9_conditions": np.broadcast_to(
                                b["theorem9_conditions"], t.shape
                            ),
                        },
                    )
                    rec, _, new = write_record(
                        store, cfg, ds, data.X, fields, time.perf_counter() - t0, key
                    )
                    written += new
                rows.append(
                    {
                        "tree": tree,
                        "restart": r,
                        "regret": rec["regret"],
                        "opt": rec["opt"],
                        "regret_over_opt": rec["regret_over_opt"],
                        "q_F_normalised": rec["q_F_normalised"],
                    }
                )
    df = pd.DataFrame(rows)
    summary = (
        df.groupby("tree")[["regret", "opt", "regret_over_opt", "q_F_normalised"]]
        .mean()
        .reset_index()
    )
    if not cfg.quiet:
        print(summary.to_string(index=False))
    result = {
        "experiment": cfg.experiment.name,
        "dataset": "spiked",
        "mechanism": "online_pca",
        "m": m,
        "d": d,
        "records_written": int(written),
        "results_dir": str(results_root(cfg)),
        "summary": summary.to_dict(orient="records"),
    }
    emit(result, cfg)
    return result
