"""Runners for the JMLR 2013 experiments: utility against n (Figures 1, 3, 4) and against ε
(Figure 5), the SULQ bound, and the Gibbs chain's convergence (Figure 2).  Table 2 is
:mod:`experiments.runs.classification`.

Each runner works through a grid of runs, writes one record per run to the results store and
skips runs whose record already exists, so re-running the same command resumes an interrupted
sweep without duplicating anything.  Figures and tables are drawn from the store by
``scripts/make_figures.py``.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from experiments.data.configured import load_configured, subsample
from experiments.runs.ppca_groups import group_key, ppca_groups, restarts_as_chains
from experiments.runs.progress import progress_enabled
from experiments.runs.settings import (
    GibbsConvergenceSettings,
    SulqBoundSettings,
    UtilityVsEpsilonSettings,
    UtilityVsNSettings,
)
from experiments.runs.streams import mechanism_rng, mechanism_stream, subset_rng, subset_stream
from experiments.runs.sweep import finish_experiment, summary_of_runs, sweep_runs
from experiments.store.provenance import record_provenance
from experiments.store.records import results_root, run_key, write_record
from experiments.store.store import ResultStore, record_id
from mechanisms import PreparedData
from mechanisms.bounds import mod_sulq_correlation_upper_bound
from mechanisms.calibration import mod_sulq_noise_scale

log = logging.getLogger(__name__)


def run_utility_vs_n(cfg: DictConfig) -> dict:
    """Figures 3-4: for n on a log grid, ``scale.subsets`` random subsets, restarts per mechanism.

    PPCA by MCMC with ``scale.ppca_restarts_as_chains`` (paper scale): the missing restarts of one
    (n, subset) are the chains of one :func:`mechanisms.ppca.ppca_restarts` call (each released
    restart is exactly a single-chain release with its own stream; R̂/ESS across the group), and
    the (n, subset) groups are spread over ``workers`` processes.  One record per
    (n, subset, restart) either way, written atomically as soon as its group finishes.
    """
    dataset = load_configured(cfg.dataset, cfg.data_dir)
    s = UtilityVsNSettings.from_config(cfg)
    grid = s.grid(dataset.X.shape[0])
    if restarts_as_chains(cfg):
        written = ppca_groups(cfg, dataset, grid, s.subsets, s.restarts)
        ids = [
            record_id(group_key(cfg, n, subset, r))
            for n in grid
            for subset in range(s.subsets)
            for r in range(s.restarts)
        ]
    else:
        total, desc = len(grid) * s.subsets * s.restarts, f"{cfg.mechanism.name}/{cfg.dataset.name}"
        points = _subset_points(cfg, dataset, grid, s)
        written, ids = sweep_runs(cfg, dataset, points, total, desc)
    return finish_experiment(cfg, "utility_vs_n", written, summary_of_runs(cfg, ids, ["n"]))


def _subset_points(cfg: DictConfig, dataset, grid: list[int], s: UtilityVsNSettings):
    """The sweep's points (:func:`~experiments.runs.sweep.sweep_runs`): each restart of each random
    subset of each n, the subset drawn from its own stream."""
    for n in grid:
        for subset in range(s.subsets):
            stream = subset_stream(cfg.seed, subset, n)

            def make(n=n, stream=stream):
                X, _, _ = subsample(dataset.X, n, np.random.default_rng(stream))
                return PreparedData(X, clip=bool(cfg.clip_rows))

            for r in range(s.restarts):
                yield (
                    {"n": int(n), "subset": subset, "restart": r, "subset_stream": stream},
                    mechanism_stream(cfg.seed, subset, r, n),
                    (n, subset),
                    make,
                )


def run_utility_vs_epsilon(cfg: DictConfig) -> dict:
    """Figure 5: ``scale.epsilon_samples`` draws per epsilon on one fixed dataset."""
    s = UtilityVsEpsilonSettings.from_config(cfg)
    dataset = load_configured(cfg.dataset, cfg.data_dir)
    sub = subset_stream(cfg.seed, 0)
    X, _, _ = subsample(dataset.X, cfg.n, np.random.default_rng(sub))
    data = PreparedData(X, clip=bool(cfg.clip_rows))
    written, ids = 0, []
    for i, eps in enumerate(s.epsilons):
        run_cfg = cfg.copy()
        OmegaConf.update(run_cfg, "epsilon", eps, force_add=True)
        points = (
            (
                {"restart": r, "epsilon_grid": eps, "subset_stream": sub},
                mechanism_stream(cfg.seed, 0, r, i),
                0,
                lambda: data,
            )
            for r in range(s.samples)
        )
        desc = f"{cfg.mechanism.name} eps={eps:g}"
        eps_written, eps_ids = sweep_runs(run_cfg, dataset, points, s.samples, desc)
        written += eps_written
        ids += eps_ids
    return finish_experiment(
        cfg, "utility_vs_epsilon", written, summary_of_runs(cfg, ids, ["epsilon_grid"])
    )


def run_sulq_bound(cfg: DictConfig) -> dict:
    """Figure 1: Theorem 15's bound for each d, epsilon and n of the grid (one record each)."""
    s = SulqBoundSettings.from_config(cfg)
    store = ResultStore(results_root(cfg))
    written, ids = 0, []
    for d in s.dims:
        for eps in s.epsilons:
            for lg in s.log10_n:
                n = int(round(10**lg))
                key = {"experiment": "sulq_bound", "d": d, "epsilon": eps, "n": n, "delta": s.delta}
                ids.append(record_id(key))
                if store.has(key):
                    continue
                record = {
                    "run_key": key,
                    **key,
                    "log10_n": float(lg),
                    "bound": mod_sulq_correlation_upper_bound(n, d, eps, s.delta),
                    "mechanism": "mod_sulq",
                    "neighbouring": "replace-one-row",
                    "noise_scale": mod_sulq_noise_scale(n, d, eps, s.delta),
                    **record_provenance(cfg),
                }
                written += store.write(record)[1]
    df = store.load_ids(ids)
    summary = (
        df.groupby(["d", "epsilon"])["bound"].agg(["min", "max"]).reset_index() if len(df) else df
    )
    return finish_experiment(cfg, "sulq_bound", written, summary)


def run_gibbs_convergence(cfg: DictConfig) -> dict:
    """Figure 2: log F_k^i(T) traces of several PPCA chains from uniform starts (JMLR section 6.2)."""
    s = GibbsConvergenceSettings.from_config(cfg)
    # the sweeps enter the key only when set: records made with the chain's default keep their ids
    extra = (
        {} if s.sweeps_per_iteration is None else {"sweeps_per_iteration": s.sweeps_per_iteration}
    )
    key = run_key(
        cfg,
        chains=s.chains,
        chain_iterations=s.iterations,
        record_every=s.record_every,
        sampler=s.sampler,
        **extra,
    )
    store = ResultStore(results_root(cfg))
    written = 0
    if not store.has(key):  # load the data (and its n·d² second moment) only when there is work
        t0 = time.perf_counter()
        dataset = load_configured(cfg.dataset, cfg.data_dir)
        X, _, _ = subsample(dataset.X, cfg.n, subset_rng(cfg.seed, 0))
        fields = _gibbs_traces(cfg, s, PreparedData(X, clip=bool(cfg.clip_rows)))
        written = write_record(
            store, cfg, dataset, X, fields, time.perf_counter() - t0, key
        ).written
    return finish_experiment(cfg, "gibbs_convergence", written, pd.DataFrame())


def _gibbs_traces(cfg: DictConfig, s: GibbsConvergenceSettings, data: PreparedData) -> dict:
    """The record's fields: the chains' traces (thinned to every ``record_every`` iterations) and
    their diagnostics."""
    from mechanisms.calibration import ppca_concentration
    from mechanisms.ppca import gibbs_convergence_traces

    res = gibbs_convergence_traces(
        data.A,
        data.X.shape[0],
        float(cfg.epsilon),
        int(cfg.k),
        n_chains=s.chains,
        iterations=s.iterations,
        rng=mechanism_rng(cfg.seed, 0, 0),
        record_every=s.record_every,
        sampler=s.sampler,
        progress=progress_enabled(cfg.progress),
        sweeps_per_iteration=s.sweeps_per_iteration,
    )
    return {
        "mechanism": "ppca",
        "epsilon": float(cfg.epsilon),
        "delta": 0.0,
        "neighbouring": "replace-one-row",
        "guarantee_status": "nominal (MCMC)",
        "sampler": res["sampler"],
        "concentration": ppca_concentration(data.X.shape[0], float(cfg.epsilon)),
        "top_concentration": res["concentration"],
        "rhat": res["rhat"],
        "ess": res["ess"],
        "converged": res["converged"],
        "sampler_seconds": res["seconds"],
        "sweeps_per_iteration": res.get("sweeps_per_iteration"),
        "traces": {
            "iterations": res["T"],
            "log_F": res["log_F"],
            "q_F_thinned": res["q_F"][:, s.record_every - 1 :: s.record_every],
        },
    }
