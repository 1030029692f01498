"""Runners for the JMLR 2013 experiments (Figures 1-5, Table 2).

Each runner works through a grid of runs, writes one record per run to the
results store and skips runs whose record already exists, so re-running the
same command resumes an interrupted sweep without duplicating anything.
Figures and tables are drawn from the store by ``scripts/make_figures.py``.
"""

from __future__ import annotations

import logging
import time
from typing import Iterable

import numpy as np
import pandas as pd
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from mechanisms._base import PreparedData
from mechanisms.bounds import mod_sulq_correlation_upper_bound
from mechanisms.calibration import mod_sulq_noise_scale

from .loading import load_configured, subsample
from .provenance import git_commit, package_versions
from .progress import progress_bar
from .results import ResultStore
from .runners import (emit, evaluate_mechanism, make_record, mechanism_params, mechanism_rng, mechanism_stream,
                      output_fields, results_root, run_key, subset_rng, subset_stream)

log = logging.getLogger(__name__)

#: the paper's positive class for Table 2
POSITIVE_LABEL = {"kddcup": "normal.", "localization": "falling"}


def restarts_for(cfg: DictConfig) -> int:
    table = cfg.scale.restarts
    return int(table.get(cfg.mechanism.name, table.get("default")))


def n_grid(total: int, n_min: int, points: int) -> list[int]:
    """``points`` sizes on a log grid from ``min(n_min, total)`` to ``total`` (inclusive)."""
    if points <= 1:
        return [int(total)]
    lo = min(int(n_min), int(total))
    return sorted({int(round(v)) for v in np.geomspace(lo, total, int(points))})


def _summary(df: pd.DataFrame, by: list[str], value: str = "q_F") -> pd.DataFrame:
    return (df.groupby(by)[value].agg(["mean", "std", "count"]).reset_index())


def _sweep(cfg: DictConfig, dataset, points: Iterable[tuple], total: int, desc: str) -> int:
    """Run each ``(key_fields, mechanism_stream, data_key, make_data)`` point whose record is not stored yet.

    ``key_fields`` go into the run key and the record; ``make_data()`` builds the
    :class:`PreparedData` (built once per ``data_key``).  Returns the number of records written.
    """
    store = ResultStore(results_root(cfg))
    mech = None
    written = 0
    data_key, data = object(), None
    with progress_bar(total=total, desc=desc, enable=cfg.progress) as bar:
        for key_fields, stream, point_data_key, make_data in points:
            key = run_key(cfg, **{k: v for k, v in key_fields.items() if k != "subset_stream"})
            if store.has(key):
                bar.update(1)
                continue
            t0 = time.perf_counter()
            mech = mech or instantiate(cfg.mechanism.fn)
            if point_data_key != data_key:
                data_key, data = point_data_key, make_data()
            fields = evaluate_mechanism(cfg, data, stream, mech)
            fields.update(key_fields)
            written += store.write(make_record(cfg, dataset, data.X, fields, time.perf_counter() - t0, key))[1]
            bar.update(1)
    return written


def run_utility_vs_n(cfg: DictConfig) -> dict:
    """Figures 3-4: for n on a log grid, ``scale.subsets`` random subsets, restarts per mechanism.

    PPCA by MCMC with ``scale.ppca_restarts_as_chains`` (paper scale): the missing restarts of one
    (n, subset) are the chains of one :func:`mechanisms.ppca.ppca_restarts` call (each released
    restart is exactly a single-chain release with its own stream; R̂/ESS across the group), and
    the (n, subset) groups are spread over ``workers`` processes.  One record per
    (n, subset, restart) either way, written atomically as soon as its group finishes.
    """
    dataset = load_configured(cfg.dataset, cfg.data_dir)
    total = dataset.X.shape[0]
    grid = list(cfg.experiment.n_grid) if cfg.experiment.n_grid else n_grid(total, cfg.scale.n_min,
                                                                             cfg.scale.n_points)
    restarts = restarts_for(cfg)
    subsets = int(cfg.scale.subsets)

    if _restarts_as_chains(cfg):
        written = _ppca_groups(cfg, dataset, grid, subsets, restarts)
    else:
        def points():
            for n in grid:
                for s in range(subsets):
                    stream = subset_stream(cfg.seed, s, n)

                    def make(n=n, stream=stream):
                        X, _, _ = subsample(dataset.X, n, np.random.default_rng(stream))
                        return PreparedData(X, clip=bool(cfg.clip_rows))
                    for r in range(restarts):
                        yield ({"n": int(n), "subset": s, "restart": r, "subset_stream": stream},
                               mechanism_stream(cfg.seed, s, r, n), (n, s), make)

        written = _sweep(cfg, dataset, points(), len(grid) * subsets * restarts,
                         f"{cfg.mechanism.name}/{cfg.dataset.name}")
    df = ResultStore(results_root(cfg)).load(experiment="utility_vs_n", dataset=dataset.name,
                                             mechanism=cfg.mechanism.name, scale=cfg.scale.name)
    return _finish(cfg, "utility_vs_n", written, _summary(df, ["n"]) if len(df) else df)


def _restarts_as_chains(cfg: DictConfig) -> bool:
    """PPCA by MCMC (not the exact k = 1 sampler) with ``scale.ppca_restarts_as_chains`` set."""
    if cfg.mechanism.name != "ppca" or not bool(cfg.scale.get("ppca_restarts_as_chains", False)):
        return False
    sampler = str(cfg.mechanism.fn.get("sampler", "auto"))
    return not (sampler == "exact" or (sampler == "auto" and int(cfg.k) == 1))


def _group_key(cfg: DictConfig, n: int, subset: int, restart: int) -> dict:
    """Run key of one restart released from a restarts-as-chains group: the mechanism ran ONE chain
    (n_chains = 1) for this release; the group's chains served the diagnostics."""
    params = mechanism_params(cfg)
    params["n_chains"] = 1
    params.update(_group_extra_params(cfg))
    return run_key(cfg, n=int(n), subset=int(subset), restart=int(restart), mechanism_params=params,
                   restarts_as_chains=True)


def _group_extra_params(cfg: DictConfig) -> dict:
    """``scale.ppca_sweeps_per_iteration`` (Givens sweeps per iteration of the fast chain), when set."""
    spi = cfg.scale.get("ppca_sweeps_per_iteration")
    return {} if spi is None else {"sweeps_per_iteration": int(spi)}


_WORKER_DATASET: dict = {}


def _ppca_group(cfg: DictConfig, dataset, n: int, subset: int, missing: list[int]) -> int:
    """Run the missing restarts of one (n, subset) as one ppca_restarts call; write one record each."""
    from mechanisms.ppca import ppca_restarts

    if dataset is None:  # in a worker process: load once per process
        name = OmegaConf.to_yaml(cfg.dataset)
        if name not in _WORKER_DATASET:
            _WORKER_DATASET.clear()
            _WORKER_DATASET[name] = load_configured(cfg.dataset, cfg.data_dir)
        dataset = _WORKER_DATASET[name]
    t0 = time.perf_counter()
    stream = subset_stream(cfg.seed, subset, n)
    X, _, _ = subsample(dataset.X, n, np.random.default_rng(stream))
    data = PreparedData(X, clip=bool(cfg.clip_rows))
    t_data = time.perf_counter() - t0
    params = mechanism_params(cfg)
    params.pop("n_chains", None)
    params["progress"] = False
    params.update(_group_extra_params(cfg))
    streams = [mechanism_stream(cfg.seed, subset, r, n) for r in missing]
    outs = ppca_restarts(data, int(cfg.k), rngs=[np.random.default_rng(st) for st in streams],
                         clip=bool(cfg.clip_rows), **params)
    store = ResultStore(results_root(cfg))
    written = 0
    for r, st, out in zip(missing, streams, outs):
        fields = output_fields(cfg, out, data, out.diagnostics["seconds"])
        fields["mechanism_stream"] = list(st)
        fields.update(n=int(n), subset=int(subset), restart=int(r), subset_stream=stream,
                      restarts_as_chains=True, group_restarts=list(map(int, missing)),
                      group_data_seconds=t_data)
        key = _group_key(cfg, n, subset, r)
        written += store.write(make_record(cfg, dataset, X, fields, t_data / len(missing) + out.diagnostics["seconds"],
                                           key))[1]
    return written


def _ppca_groups(cfg: DictConfig, dataset, grid: list[int], subsets: int, restarts: int) -> int:
    """All (n, subset) groups with missing restarts, largest first, over ``cfg.workers`` processes."""
    store = ResultStore(results_root(cfg))
    groups = []
    for n in grid:
        for s in range(subsets):
            missing = [r for r in range(restarts) if not store.has(_group_key(cfg, n, s, r))]
            if missing:
                groups.append((int(n), s, missing))
    # cost of a group ∝ chains (the per-iteration cost does not depend on n): biggest groups first,
    # then larger n first (its second moment takes longest to form)
    groups.sort(key=lambda g: (-len(g[2]), -g[0], g[1]))
    workers = int(cfg.get("workers", 1) or 1)
    log.info("utility_vs_n %s/%s: %d groups to run (%d releases), %d worker(s)", cfg.mechanism.name,
             cfg.dataset.name, len(groups), sum(len(g[2]) for g in groups), workers)
    if workers <= 1 or len(groups) <= 1:
        written = 0
        with progress_bar(total=len(groups), desc=f"ppca groups/{cfg.dataset.name}", enable=cfg.progress) as bar:
            for n, s, missing in groups:
                written += _ppca_group(cfg, dataset, n, s, missing)
                bar.update(1)
        return written
    from joblib import Parallel, delayed

    cfg = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))  # plain values for the workers
    results = Parallel(n_jobs=workers, backend="loky", batch_size=1, pre_dispatch="n_jobs")(
        delayed(_ppca_group)(cfg, None, n, s, missing) for n, s, missing in groups)
    return int(sum(results))


def run_utility_vs_epsilon(cfg: DictConfig) -> dict:
    """Figure 5: ``scale.epsilon_samples`` draws per epsilon on one fixed dataset."""
    dataset = load_configured(cfg.dataset, cfg.data_dir)
    sub = subset_stream(cfg.seed, 0)
    X, _, _ = subsample(dataset.X, cfg.n, np.random.default_rng(sub))
    data = PreparedData(X, clip=bool(cfg.clip_rows))
    epsilons = [float(e) for e in cfg.experiment.epsilons]
    samples = 1 if cfg.mechanism.name == "pca" else int(cfg.scale.epsilon_samples)
    written = 0
    for i, eps in enumerate(epsilons):
        run_cfg = cfg.copy()
        OmegaConf.update(run_cfg, "epsilon", eps, force_add=True)
        points = (({"restart": r, "epsilon_grid": eps, "subset_stream": sub}, mechanism_stream(cfg.seed, 0, r, i), 0,
                   lambda: data)
                  for r in range(samples))
        written += _sweep(run_cfg, dataset, points, samples, f"{cfg.mechanism.name} eps={eps:g}")
    store = ResultStore(results_root(cfg))
    df = store.load(experiment="utility_vs_epsilon", mechanism=cfg.mechanism.name, scale=cfg.scale.name)
    return _finish(cfg, "utility_vs_epsilon", written, _summary(df, ["epsilon_grid"]) if len(df) else df)


def run_classification(cfg: DictConfig) -> dict:
    """Table 2: half the data (hold-out) -> subspace; project the rest; 10% trains and tunes a linear
    SVM (C by 3-fold CV over ``svm_C_grid``), 90% tests.  ``permutations x projections`` rounds."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import LinearSVC

    dataset = load_configured(cfg.dataset, cfg.data_dir)
    if dataset.y is None:
        raise ValueError(f"dataset {dataset.name} has no labels for classification")
    positive = cfg.experiment.positive_label or POSITIVE_LABEL.get(dataset.name)
    if positive is None:
        raise ValueError(f"set experiment.positive_label for dataset {dataset.name}")
    y_all = (np.asarray(dataset.y).astype(str) == str(positive)).astype(int)
    if y_all.min() == y_all.max():
        raise ValueError(f"label {positive!r} gives a single class on {dataset.name}")
    max_rows = cfg.scale.classification.max_rows
    store = ResultStore(results_root(cfg))
    perms, projs = int(cfg.scale.classification.permutations), int(cfg.scale.classification.projections)
    written = 0
    bar = progress_bar(total=perms * projs, desc=f"{cfg.mechanism.name} classification",
                       enable=cfg.progress)
    mech = instantiate(cfg.mechanism.fn)
    c_grid = [float(c) for c in cfg.experiment.svm_C_grid]
    for p in range(perms):
        order = subset_rng(cfg.seed, p).permutation(dataset.X.shape[0])
        if max_rows:
            order = order[: int(max_rows)]
        half = len(order) // 2
        hold, rest = order[:half], order[half:]
        n_train = max(2, int(round(0.1 * len(rest))))
        train, test = rest[:n_train], rest[n_train:]
        holdout = None
        for j in range(projs):
            key = run_key(cfg, subset=p, restart=j, positive_label=str(positive),
                          max_rows=None if not max_rows else int(max_rows), svm_C_grid=c_grid)
            if store.has(key):
                bar.update(1)
                continue
            t0 = time.perf_counter()
            if holdout is None:
                holdout = PreparedData(dataset.X[hold], clip=bool(cfg.clip_rows))
            out = mech(holdout, int(cfg.k), rng=mechanism_rng(cfg.seed, p, j), clip=bool(cfg.clip_rows))
            fields = output_fields(cfg, out, holdout, time.perf_counter() - t0)
            Z_train, Z_test = dataset.X[train] @ out.components, dataset.X[test] @ out.components
            if np.unique(y_all[train]).size < 2:
                raise ValueError("training split has a single class; use more rows")
            search = GridSearchCV(LinearSVC(dual=False), {"C": c_grid}, cv=3)
            search.fit(Z_train, y_all[train])
            acc = float(search.score(Z_test, y_all[test]))
            fields.update(subset=p, restart=j, accuracy=acc, svm_C=float(search.best_params_["C"]),
                          n_train=int(len(train)), n_test=int(len(test)), positive_label=str(positive))
            written += store.write(make_record(cfg, dataset, holdout.X, fields, time.perf_counter() - t0,
                                               key))[1]
            bar.update(1)
    bar.close()
    df = store.load(experiment="classification", dataset=dataset.name, mechanism=cfg.mechanism.name,
                    scale=cfg.scale.name)
    summary = _summary(df, ["mechanism"], "accuracy") if len(df) else df
    return _finish(cfg, "classification", written, summary)


def run_sulq_bound(cfg: DictConfig) -> dict:
    """Figure 1: Theorem 15's bound for each d, epsilon and n of the grid (one record each)."""
    store = ResultStore(results_root(cfg))
    e = cfg.experiment
    grid = np.linspace(e.log10_n.start, e.log10_n.stop, int(e.log10_n.num))
    written = 0
    for d in e.dims:
        for eps in e.epsilons:
            for lg in grid:
                n = int(round(10**lg))
                key = {"experiment": "sulq_bound", "d": int(d), "epsilon": float(eps), "n": n,
                       "delta": float(cfg.delta)}
                if store.has(key):
                    continue
                bound = mod_sulq_correlation_upper_bound(n, int(d), float(eps), float(cfg.delta))
                record = {"run_key": key, **key, "log10_n": float(lg), "bound": bound,
                          "mechanism": "mod_sulq", "neighbouring": "replace-one-row",
                          "noise_scale": mod_sulq_noise_scale(n, int(d), float(eps), float(cfg.delta)),
                          "versions": package_versions(), "git_commit": git_commit()}
                written += store.write(record)[1]
    df = store.load(experiment="sulq_bound")
    return _finish(cfg, "sulq_bound", written, df.groupby(["d", "epsilon"])["bound"].agg(["min", "max"])
                   .reset_index())


def run_gibbs_convergence(cfg: DictConfig) -> dict:
    """Figure 2: log F_k^i(T) traces of several PPCA chains from uniform starts (JMLR section 6.2)."""
    from mechanisms.calibration import ppca_concentration
    from mechanisms.ppca import gibbs_convergence_traces

    g = cfg.scale.gibbs
    key = run_key(cfg, chains=int(g.chains), chain_iterations=int(g.iterations),
                  record_every=int(g.record_every), sampler=str(cfg.experiment.sampler))
    store = ResultStore(results_root(cfg))
    written = 0
    if not store.has(key):  # load the data (and its n·d² second moment) only when there is work
        t0 = time.perf_counter()
        dataset = load_configured(cfg.dataset, cfg.data_dir)
        X, _, _ = subsample(dataset.X, cfg.n, subset_rng(cfg.seed, 0))
        data = PreparedData(X, clip=bool(cfg.clip_rows))
        every = int(g.record_every)
        res = gibbs_convergence_traces(data.A, data.X.shape[0], float(cfg.epsilon), int(cfg.k),
                                       n_chains=int(g.chains), iterations=int(g.iterations),
                                       rng=mechanism_rng(cfg.seed, 0, 0), record_every=every,
                                       sampler=str(cfg.experiment.sampler), progress=cfg.progress)
        fields = {"mechanism": "ppca", "epsilon": float(cfg.epsilon), "delta": 0.0,
                  "neighbouring": "replace-one-row", "guarantee_status": "nominal (MCMC)",
                  "sampler": res["sampler"],
                  "concentration": ppca_concentration(data.X.shape[0], float(cfg.epsilon)),
                  "top_concentration": res["concentration"], "rhat": res["rhat"], "ess": res["ess"],
                  "converged": res["converged"], "sampler_seconds": res["seconds"],
                  "sweeps_per_iteration": res.get("sweeps_per_iteration"),
                  "traces": {"iterations": res["T"], "log_F": res["log_F"],
                             "q_F_thinned": res["q_F"][:, every - 1::every]}}
        written = store.write(make_record(cfg, dataset, X, fields, time.perf_counter() - t0, key))[1]
    return _finish(cfg, "gibbs_convergence", written, pd.DataFrame())


def _finish(cfg: DictConfig, name: str, written: int, summary: pd.DataFrame) -> dict:
    if not cfg.quiet and len(summary):
        print(summary.to_string(index=False))
    result = {"experiment": name, "dataset": cfg.dataset.name, "mechanism": cfg.mechanism.name,
              "records_written": int(written), "results_dir": str(results_root(cfg))}
    emit(result)
    return result
