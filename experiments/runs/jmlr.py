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
from mechanisms.bounds import mod_sulq_correlation_upper_bound
from mechanisms.calibration import mod_sulq_noise_scale
from mechanisms.toolkit import PreparedData

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
    grid = s.selected_grid(dataset.X.shape[0])  # the whole grid unless experiment.only says
    if restarts_as_chains(cfg):
        written = ppca_groups(cfg, dataset, grid, s.subsets, s.restarts, s.selected_subsets())
        ids = [
            record_id(group_key(cfg, n, subset, r))
            for n in grid
            for subset in s.selected_subsets()
            for r in range(s.restarts)
        ]
    else:
        total = len(grid) * len(s.selected_subsets()) * s.restarts
        desc = f"{cfg.mechanism.name}/{cfg.dataset.name}"
        points = _subset_points(cfg, dataset, grid, s)
        written, ids = sweep_runs(cfg, dataset, points, total, desc)
    return finish_experiment(cfg, "utility_vs_n", written, summary_of_runs(cfg, ids, ["n"]))


def _subset_points(cfg: DictConfig, dataset, grid: list[int], s: UtilityVsNSettings):
    """The sweep's points (:func:`~experiments.runs.sweep.sweep_runs`): each restart of each random
    subset of each n, the subset drawn from its own stream."""
    for n in grid:
        for subset in s.selected_subsets():
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
    for i, eps in s.selected():  # the index i keeps each point's stream whichever part runs it
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
    if s.only_chain is not None:  # one chain of the record, kept as a part (a job of the plan)
        return _gibbs_chain_part(cfg, s, key, store)
    if not store.has(key):  # load the data (and its n·d² second moment) only when there is work
        t0 = time.perf_counter()
        dataset = load_configured(cfg.dataset, cfg.data_dir)
        X, _, _ = subsample(dataset.X, cfg.n, subset_rng(cfg.seed, 0))
        fields = _gibbs_traces(cfg, s, PreparedData(X, clip=bool(cfg.clip_rows)))
        written = write_record(
            store, cfg, dataset, X, fields, time.perf_counter() - t0, key
        ).written
    return finish_experiment(cfg, "gibbs_convergence", written, pd.DataFrame())


def gibbs_part_path(cfg: DictConfig, key: dict, chain: int, chains: int):
    """Where chain ``chain`` of the Figure 2 record ``key`` is kept until the record is written:
    ``<store>/parts/gibbs/<record id>/chain<c>-of-<chains>.npz``."""
    return results_root(cfg) / "parts" / "gibbs" / record_id(key) / f"chain{chain}-of-{chains}.npz"


def _gibbs_chain_part(cfg: DictConfig, s: GibbsConvergenceSettings, key: dict, store) -> dict:
    """Run chain ``s.only_chain`` of the record ``key`` alone (it is driven by its own generator,
    so it is bit for bit that chain of the whole run) and keep its traces, written atomically; the
    run without ``experiment.only`` then assembles the record from the parts."""
    import os
    import tempfile

    from mechanisms.bingham import chain_generators, run_bingham_chains

    c = int(s.only_chain)
    if not 0 <= c < s.chains:
        raise ValueError(f"experiment.only.chain must be in [0, {s.chains}), got {c}")
    path = gibbs_part_path(cfg, key, c, s.chains)
    seconds = 0.0
    if not store.has(key) and not path.exists():
        dataset = load_configured(cfg.dataset, cfg.data_dir)
        X, _, _ = subsample(dataset.X, cfg.n, subset_rng(cfg.seed, 0))
        scale, evals = _gibbs_spectrum(cfg, PreparedData(X, clip=bool(cfg.clip_rows)))
        gen = chain_generators(mechanism_rng(cfg.seed, 0, 0), s.chains)[c]
        res = run_bingham_chains(
            scale * evals,
            int(cfg.k),
            rng=[gen],
            sampler=s.sampler,
            n_chains=1,
            iterations=s.iterations,
            record_every=s.record_every,
            sweeps_per_iteration=s.sweeps_per_iteration,
        )
        seconds = float(res["seconds"])
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            np.savez(
                fh,
                energy=res["energy"][0],
                F=res["F"][0],
                T=res["record_iterations"],
                seconds=seconds,
                sweeps=-1 if res["sweeps_per_iteration"] is None else res["sweeps_per_iteration"],
            )
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    result = finish_experiment(cfg, "gibbs_convergence", 0, pd.DataFrame())
    return dict(result, chain=c, part=str(path), chain_seconds=seconds)


def _gibbs_spectrum(cfg: DictConfig, data: PreparedData) -> tuple[float, np.ndarray]:
    """The chains' concentration scale and the eigenvalues of A, as
    :func:`mechanisms.ppca.gibbs_convergence_traces` computes them."""
    from mechanisms.calibration import ppca_concentration

    A = np.asarray(data.A, dtype=np.float64)
    scale = ppca_concentration(data.X.shape[0], float(cfg.epsilon))
    return scale, np.linalg.eigvalsh((A + A.T) / 2)


def _gibbs_parts(cfg: DictConfig, s: GibbsConvergenceSettings, data: PreparedData) -> dict | None:
    """The traces of every chain from their parts (:func:`_gibbs_chain_part`), in the form of
    :func:`mechanisms.ppca.gibbs_convergence_traces`'s result; None unless every part is kept."""
    from mechanisms.diagnostics import summarize_chains

    key = _gibbs_key(cfg, s)
    paths = [gibbs_part_path(cfg, key, c, s.chains) for c in range(s.chains)]
    if not all(p.exists() for p in paths):
        return None
    parts = [np.load(p) for p in paths]
    scale, evals = _gibbs_spectrum(cfg, data)
    qF = np.stack([p["energy"] for p in parts]) / scale
    burn_in = s.iterations // 2
    diag = (
        summarize_chains(qF[:, burn_in:])
        if qF.shape[1] - burn_in >= 4
        else {"rhat": float("nan"), "ess": float("nan"), "converged": False}
    )
    sweeps = int(parts[0]["sweeps"])
    return {
        "T": parts[0]["T"],
        "log_F": np.log(np.stack([p["F"] for p in parts])),
        "q_F": qF,
        "rhat": diag["rhat"],
        "ess": diag["ess"],
        "converged": diag["converged"],
        "seconds": float(sum(float(p["seconds"]) for p in parts)),
        "sampler": s.sampler,
        "concentration": float(scale * evals[-1]),
        "sweeps_per_iteration": None if sweeps < 0 else sweeps,
    }


def _gibbs_key(cfg: DictConfig, s: GibbsConvergenceSettings) -> dict:
    extra = (
        {} if s.sweeps_per_iteration is None else {"sweeps_per_iteration": s.sweeps_per_iteration}
    )
    return run_key(
        cfg,
        chains=s.chains,
        chain_iterations=s.iterations,
        record_every=s.record_every,
        sampler=s.sampler,
        **extra,
    )


def _gibbs_traces(cfg: DictConfig, s: GibbsConvergenceSettings, data: PreparedData) -> dict:
    """The record's fields: the chains' traces (thinned to every ``record_every`` iterations) and
    their diagnostics."""
    from mechanisms.calibration import ppca_concentration
    from mechanisms.ppca import gibbs_convergence_traces

    # the chains' traces kept as parts by the plan's jobs, else the chains run here
    res = _gibbs_parts(cfg, s, data) or gibbs_convergence_traces(
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
