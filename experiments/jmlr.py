"""Runners for the JMLR 2013 experiments (Figures 1-5, Table 2).

Each runner works through a grid of runs, writes one record per run to the
results store and skips runs whose record already exists, so re-running the
same command resumes an interrupted sweep without duplicating anything.
Figures and tables are drawn from the store by ``scripts/make_figures.py``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from mechanisms import PreparedData
from mechanisms.bounds import mod_sulq_correlation_upper_bound
from mechanisms.calibration import mod_sulq_noise_scale

from .classifiers import (
    CLASSIFIERS,
    FEATURE_SCALINGS,
    SVM_LOSSES,
    classification_split,
    fit_classifier,
    log2_grid,
    majority_label_accuracy,
    require_converged,
)
from .loading import load_configured, subsample
from .progress import progress_bar, progress_enabled
from .provenance import record_provenance
from .records import (
    configured_mechanism,
    emit,
    evaluate_mechanism,
    mechanism_params,
    mechanism_rng,
    mechanism_stream,
    output_fields,
    results_root,
    run_key,
    subset_rng,
    subset_stream,
    write_record,
)
from .results import ResultStore, record_id
from .threads import pinned

log = logging.getLogger(__name__)

#: the paper's positive class for Table 2
POSITIVE_LABEL = {
    "kddcup": "normal.",
    "localization": "falling",
    # footnote 1's data sets: the income label (census) and caravan-policy owner (insurance)
    "census": "50000+",
    "insurance": "1",
}


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
    return df.groupby(by)[value].agg(["mean", "std", "count"]).reset_index()


def _sweep(
    cfg: DictConfig, dataset, points: Iterable[tuple], total: int, desc: str
) -> tuple[int, list[str]]:
    """Run each ``(key_fields, mechanism_stream, data_key, make_data)`` point whose record is not stored yet.

    ``key_fields`` go into the run key and the record; ``make_data()`` builds the
    :class:`PreparedData` (built once per ``data_key``).  Returns the number of records written and
    the record ids of every point (written now or stored before).
    """
    store = ResultStore(results_root(cfg))
    mech = None
    written, ids = 0, []
    data_key, data = object(), None
    with progress_bar(total=total, desc=desc, enable=cfg.progress) as bar:
        for key_fields, stream, point_data_key, make_data in points:
            key = run_key(cfg, **{k: v for k, v in key_fields.items() if k != "subset_stream"})
            ids.append(record_id(key))
            if store.has(key):
                bar.update(1)
                continue
            t0 = time.perf_counter()
            mech = mech or configured_mechanism(cfg)
            if point_data_key != data_key:
                data_key, data = point_data_key, make_data()
            fields = evaluate_mechanism(cfg, data, stream, mech)
            fields.update(key_fields)
            written += write_record(
                store, cfg, dataset, data.X, fields, time.perf_counter() - t0, key
            ).written
            bar.update(1)
    return written, ids


def _run_summary(
    cfg: DictConfig, ids: list[str], by: list[str], value: str = "q_F"
) -> pd.DataFrame:
    """Mean, standard deviation and count of ``value`` by ``by`` over exactly this run's records
    (``ids``), never over other runs of the same store (another ε, k, seed, calibration or
    protocol option)."""
    df = ResultStore(results_root(cfg)).load_ids(ids)
    return _summary(df, by, value) if len(df) else df


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
    grid = (
        list(cfg.experiment.n_grid)
        if cfg.experiment.n_grid
        else n_grid(total, cfg.scale.n_min, cfg.scale.n_points)
    )
    restarts = restarts_for(cfg)
    subsets = int(cfg.scale.subsets)

    if _restarts_as_chains(cfg):
        written = _ppca_groups(cfg, dataset, grid, subsets, restarts)
        ids = [
            record_id(_group_key(cfg, n, s, r))
            for n in grid
            for s in range(subsets)
            for r in range(restarts)
        ]
    else:

        def points():
            for n in grid:
                for s in range(subsets):
                    stream = subset_stream(cfg.seed, s, n)

                    def make(n=n, stream=stream):
                        X, _, _ = subsample(dataset.X, n, np.random.default_rng(stream))
                        return PreparedData(X, clip=bool(cfg.clip_rows))

                    for r in range(restarts):
                        yield (
                            {"n": int(n), "subset": s, "restart": r, "subset_stream": stream},
                            mechanism_stream(cfg.seed, s, r, n),
                            (n, s),
                            make,
                        )

        written, ids = _sweep(
            cfg,
            dataset,
            points(),
            len(grid) * subsets * restarts,
            f"{cfg.mechanism.name}/{cfg.dataset.name}",
        )
    return _finish(cfg, "utility_vs_n", written, _run_summary(cfg, ids, ["n"]))


def _restarts_as_chains(cfg: DictConfig) -> bool:
    """PPCA by MCMC (not the exact k = 1 sampler) with ``scale.ppca_restarts_as_chains`` set."""
    if cfg.mechanism.name != "ppca" or not bool(cfg.scale.get("ppca_restarts_as_chains", False)):
        return False
    sampler = str(cfg.mechanism.fn.get("sampler", "auto"))
    return not (sampler == "exact" or (sampler == "auto" and int(cfg.k) == 1))


def _group_key(cfg: DictConfig, n: int | None, subset: int, restart: int, **extra) -> dict:
    """Run key of one restart released from a restarts-as-chains group: the mechanism ran ONE chain
    (n_chains = 1) for this release; the group's chains served the diagnostics."""
    params = mechanism_params(cfg)
    params["n_chains"] = 1
    params.update(_group_extra_params(cfg))
    if n is not None:
        extra["n"] = int(n)
    return run_key(
        cfg,
        subset=int(subset),
        restart=int(restart),
        mechanism_params=params,
        restarts_as_chains=True,
        **extra,
    )


def _ppca_group_releases(cfg: DictConfig, data: PreparedData, streams: list) -> list:
    """The PPCA releases of one group (same data, one stream each) as the chains of one
    :func:`mechanisms.ppca.ppca_restarts` call: release r is bit for bit the single-chain release
    with ``streams[r]``; split-R̂/ESS are computed across the group's chains."""
    from mechanisms.ppca import ppca_restarts

    params = mechanism_params(cfg)
    params.pop("n_chains", None)
    params["progress"] = False
    params.update(_group_extra_params(cfg))
    return ppca_restarts(
        data,
        int(cfg.k),
        rngs=[np.random.default_rng(st) for st in streams],
        clip=bool(cfg.clip_rows),
        **params,
    )


def _group_extra_params(cfg: DictConfig) -> dict:
    """``scale.ppca_sweeps_per_iteration`` (Givens sweeps per iteration of the fast chain), when set."""
    spi = cfg.scale.get("ppca_sweeps_per_iteration")
    return {} if spi is None else {"sweeps_per_iteration": int(spi)}


def _group_release_fields(cfg, data: PreparedData, out, share: float, group, stream) -> dict:
    """Record fields of one release of a restarts-as-chains group."""
    fields = output_fields(cfg, out, data, share)
    fields.update(
        restarts_as_chains=True, group_restarts=list(group), mechanism_stream=list(stream)
    )
    return fields


def replay_group_release(cfg: DictConfig, data: PreparedData, record: dict, stream_of) -> tuple:
    """(output, record fields) of a PPCA release made in a restarts-as-chains group, recomputed by
    running its whole group again (``record["group_restarts"]``, restart r with stream
    ``stream_of(r)``): the record's release is bit for bit that of its restart's single chain, and its split-R̂ and ESS
    were computed across the group's chains, so replaying the group reproduces both.

    ``cfg`` is the record's resolved configuration and ``data`` the data its group ran on."""
    group = [int(r) for r in record["group_restarts"]]
    streams = [stream_of(r) for r in group]
    i = group.index(int(record["restart"]))
    out = _ppca_group_releases(cfg, data, streams)[i]
    return out, _group_release_fields(cfg, data, out, out.diagnostics["seconds"], group, streams[i])


def regroup_release(cfg: DictConfig, data: PreparedData, record: dict) -> dict:
    """A utility_vs_n PPCA release of a restarts-as-chains group, recomputed
    (:func:`replay_group_release`; ``data`` is the record's data subset)."""
    n, subset = int(record["n"]), int(record["subset"])
    return replay_group_release(
        cfg, data, record, lambda r: mechanism_stream(cfg.seed, subset, r, n)
    )[1]


_WORKER_DATASET: dict = {}


def _ppca_group(cfg: DictConfig, dataset, n: int, subset: int, missing: list[int]) -> int:
    """Run the missing restarts of one (n, subset) as one ppca_restarts call; write one record each."""
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
    streams = [mechanism_stream(cfg.seed, subset, r, n) for r in missing]
    outs = _ppca_group_releases(cfg, data, streams)
    store = ResultStore(results_root(cfg))
    written = 0
    for r, st, out in zip(missing, streams, outs):
        fields = _group_release_fields(
            cfg, data, out, out.diagnostics["seconds"], list(map(int, missing)), st
        )
        fields.update(
            n=int(n),
            subset=int(subset),
            restart=int(r),
            subset_stream=stream,
            group_data_seconds=t_data,
        )
        key = _group_key(cfg, n, subset, r)
        written += write_record(
            store, cfg, dataset, X, fields, t_data / len(missing) + out.diagnostics["seconds"], key
        ).written
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
    log.info(
        "utility_vs_n %s/%s: %d groups to run (%d releases), %d worker(s)",
        cfg.mechanism.name,
        cfg.dataset.name,
        len(groups),
        sum(len(g[2]) for g in groups),
        workers,
    )
    if workers <= 1 or len(groups) <= 1:
        written = 0
        with progress_bar(
            total=len(groups), desc=f"ppca groups/{cfg.dataset.name}", enable=cfg.progress
        ) as bar:
            for n, s, missing in groups:
                written += _ppca_group(cfg, dataset, n, s, missing)
                bar.update(1)
        return written
    from joblib import Parallel, delayed

    cfg = OmegaConf.create(
        OmegaConf.to_container(cfg, resolve=True)
    )  # plain values for the workers
    results = Parallel(n_jobs=workers, backend="loky", batch_size=1, pre_dispatch="n_jobs")(
        delayed(pinned(_ppca_group))(cfg, None, n, s, missing) for n, s, missing in groups
    )
    return int(sum(results))


def run_utility_vs_epsilon(cfg: DictConfig) -> dict:
    """Figure 5: ``scale.epsilon_samples`` draws per epsilon on one fixed dataset."""
    dataset = load_configured(cfg.dataset, cfg.data_dir)
    sub = subset_stream(cfg.seed, 0)
    X, _, _ = subsample(dataset.X, cfg.n, np.random.default_rng(sub))
    data = PreparedData(X, clip=bool(cfg.clip_rows))
    epsilons = [float(e) for e in cfg.experiment.epsilons]
    samples = 1 if cfg.mechanism.name == "pca" else int(cfg.scale.epsilon_samples)
    written, ids = 0, []
    for i, eps in enumerate(epsilons):
        run_cfg = cfg.copy()
        OmegaConf.update(run_cfg, "epsilon", eps, force_add=True)
        points = (
            (
                {"restart": r, "epsilon_grid": eps, "subset_stream": sub},
                mechanism_stream(cfg.seed, 0, r, i),
                0,
                lambda: data,
            )
            for r in range(samples)
        )
        eps_written, eps_ids = _sweep(
            run_cfg, dataset, points, samples, f"{cfg.mechanism.name} eps={eps:g}"
        )
        written += eps_written
        ids += eps_ids
    return _finish(cfg, "utility_vs_epsilon", written, _run_summary(cfg, ids, ["epsilon_grid"]))


#: Cross-validation folds when ``experiment.svm_cv_folds`` is null: ``grid.py``'s default (5) for the
#: paper's linear C-SVC; 3 for the alternatives (their measured cost, docs/table2_protocol.md)
CV_FOLDS_DEFAULT = {"linear_csvc": 5, "rbf_default": 3, "rbf": 3, "linear": 3}
#: Base-2 exponents of the C grid when ``experiment.svm_log2_C`` is null: ``grid.py``'s default range
#: and step (-log2c -5,15,2) for the linear C-SVC; every 2^4 over the same range for ``rbf``
LOG2_C_DEFAULT = {"linear_csvc": [-5, 15, 2], "rbf": [-5, 15, 4]}


def classification_protocol(cfg: DictConfig) -> dict:
    """The Table-2 protocol fields of ``cfg.experiment`` (all of them go into the run key).

    ``classifier``: ``linear_csvc`` (the paper's "linear SVM ... implemented by libSVM": the linear
    C-SVC with C by cross-validation, :class:`LinearCSVCSearch`; the configured default),
    ``rbf_default`` (libSVM's defaults, :func:`rbf_svm_default`), ``rbf`` (libSVM's tuning
    workflow, :class:`SubsetGridRBF`) or ``linear`` (liblinear, :func:`linear_svm_search`).
    ``svm_cv_folds`` and ``svm_log2_C`` left null take the classifier's own default
    (:data:`CV_FOLDS_DEFAULT`, :data:`LOG2_C_DEFAULT`); the record holds the values used.  The
    grid fields of the classifiers not chosen are recorded as None (they do not act); the RBF
    classifiers are libSVM's C-SVC, hinge loss solved to tolerance (``svm_max_iter = -1``).
    ``random_entries`` / ``random_projection`` only act on the ``random`` mechanism and are recorded
    as None for the others.  How the RBF classifiers treat repeated training rows (fitted once per
    distinct (row, label) pair with its count as sample weight, :class:`DistinctRowsSVC`) is not a
    protocol field: it solves the same C-SVC problem as fitting every row, so it does not enter the
    run key; each record says how its fit was made (``svm_duplicates``, ``svm_fit_rows``,
    :func:`fit_classifier`).
    """
    e = cfg.experiment
    classifier = str(e.get("classifier", "linear_csvc"))
    if classifier not in CLASSIFIERS:
        raise ValueError(f"experiment.classifier must be one of {CLASSIFIERS}, got {classifier!r}")
    loss, scaling = str(e.svm_loss), str(e.feature_scaling)
    if loss not in SVM_LOSSES:
        raise ValueError(f"experiment.svm_loss must be one of {SVM_LOSSES}, got {loss!r}")
    if scaling not in FEATURE_SCALINGS:
        raise ValueError(
            f"experiment.feature_scaling must be one of {FEATURE_SCALINGS}, got {scaling!r}"
        )
    proto = {
        "classifier": classifier,
        "svm_loss": loss,
        "feature_scaling": scaling,
        "svm_max_iter": int(e.svm_max_iter),
        "svm_cv_folds": int(
            e.svm_cv_folds if e.get("svm_cv_folds") is not None else CV_FOLDS_DEFAULT[classifier]
        ),
        "svm_C_grid": None,
        "svm_log2_C": None,
        "svm_log2_gamma": None,
        "svm_cv_rows": None,
        "random_entries": None,
        "random_projection": None,
        "drop_feature_prefixes": [str(x) for x in (e.get("drop_feature_prefixes") or [])],
    }
    if classifier == "linear":
        proto["svm_C_grid"] = [float(c) for c in e.svm_C_grid]
    else:  # the C-SVC: the hinge loss, solved to its tolerance (no iteration limit)
        proto.update(svm_loss="hinge", svm_max_iter=-1)
    log2_C = e.get("svm_log2_C")
    if classifier == "linear_csvc":
        proto["svm_log2_C"] = [int(v) for v in (log2_C or LOG2_C_DEFAULT[classifier])]
        log2_grid(proto["svm_log2_C"])  # a malformed grid fails here
    if classifier == "rbf":
        proto.update(
            svm_log2_C=[int(v) for v in (log2_C or LOG2_C_DEFAULT[classifier])],
            svm_log2_gamma=[int(v) for v in e.svm_log2_gamma],
            svm_cv_rows=None if e.get("svm_cv_rows") is None else int(e.svm_cv_rows),
        )
        (
            log2_grid(proto["svm_log2_C"]),
            log2_grid(proto["svm_log2_gamma"]),
        )  # a malformed grid fails here
    if cfg.mechanism.name == "random":
        from mechanisms.random_projection import RANDOM_ENTRIES

        entries, projection = str(e.random_entries), str(e.random_projection)
        if entries not in RANDOM_ENTRIES:
            raise ValueError(
                f"experiment.random_entries must be one of {RANDOM_ENTRIES}, got {entries!r}"
            )
        if projection not in ("orthonormal", "raw"):
            raise ValueError(
                f"experiment.random_projection must be 'orthonormal' or 'raw', got {projection!r}"
            )
        proto.update(random_entries=entries, random_projection=projection)
    return proto


@dataclass(frozen=True)
class ClassificationTask:
    """What every round of a classification experiment shares: the data set, its features (after
    ``drop_feature_prefixes``) and labels, the protocol and the mechanism's extra arguments."""

    dataset: object
    X_all: np.ndarray
    y_all: np.ndarray
    positive: str
    proto: dict
    mech_kwargs: dict


def classification_task(cfg: DictConfig, dataset=None) -> ClassificationTask:
    """The shared part of :func:`run_classification` (``dataset`` loaded from ``cfg`` when None)."""
    if dataset is None:
        dataset = load_configured(cfg.dataset, cfg.data_dir)
    if dataset.y is None:
        raise ValueError(f"dataset {dataset.name} has no labels for classification")
    positive = cfg.experiment.positive_label or POSITIVE_LABEL.get(dataset.name)
    if positive is None:
        raise ValueError(f"set experiment.positive_label for dataset {dataset.name}")
    y_all = (np.asarray(dataset.y).astype(str) == str(positive)).astype(int)
    if y_all.min() == y_all.max():
        raise ValueError(f"label {positive!r} gives a single class on {dataset.name}")
    proto = classification_protocol(cfg)
    X_all = dataset.X
    if proto["drop_feature_prefixes"]:
        names = list(getattr(dataset, "feature_names", None) or [])
        if len(names) != X_all.shape[1]:
            raise ValueError("drop_feature_prefixes needs the data set's feature names")
        keep = [
            i
            for i, nm in enumerate(names)
            if not any(nm.startswith(p) for p in proto["drop_feature_prefixes"])
        ]
        if len(keep) == len(names):
            raise ValueError(f"no feature starts with {proto['drop_feature_prefixes']}")
        X_all = np.ascontiguousarray(X_all[:, keep])
    mech_kwargs = {} if proto["random_entries"] is None else {"entries": proto["random_entries"]}
    if proto["random_projection"] == "raw":
        mech_kwargs["return_matrix"] = True  # the raw (non-orthonormal) matrix is the projection
    return ClassificationTask(dataset, X_all, y_all, str(positive), proto, mech_kwargs)


def classification_round(
    task: ClassificationTask, out, p: int, j: int, train, test, fitted: dict
) -> dict:
    """Round (permutation ``p``, projection ``j``): project the training and test rows onto the
    mechanism's output, fit the classifier (its random state is the permutation, so a projection
    seen before in this permutation, kept in ``fitted``, gives the same fit) and return the round's
    record fields."""
    proto, X_all, y_all = task.proto, task.X_all, task.y_all
    # the raw random matrix (not orthonormal) only when the protocol asks for it
    P = out.release["projection_matrix"] if proto["random_projection"] == "raw" else out.components
    Z_train, Z_test = X_all[train] @ P, X_all[test] @ P
    if np.unique(y_all[train]).size < 2:
        raise ValueError("training split has a single class; use more rows")
    digest = P.tobytes()
    if digest not in fitted:
        model, fit_fields = fit_classifier(proto, Z_train, y_all[train], random_state=int(p))
        fitted[digest] = (float(model.score(Z_test, y_all[test])), fit_fields)
    acc, fit_fields = fitted[digest]
    return dict(
        subset=p,
        restart=j,
        accuracy=acc,
        **fit_fields,
        majority_accuracy=majority_label_accuracy(y_all[train], y_all[test]),
        positive_rate_test=float(np.mean(y_all[test])),
        n_train=int(len(train)),
        n_test=int(len(test)),
        positive_label=task.positive,
        d_classified=int(X_all.shape[1]),
        **proto,
    )


def replay_classification(cfg: DictConfig, record: dict, dataset) -> dict:
    """The fields of a classification record recomputed from its configuration: the permutation's
    split, the mechanism's release on its hold-out half (a PPCA release made in a restarts-as-chains
    group by running its whole group again), the projection and the classifier."""
    task = classification_task(cfg, dataset)
    p, j = int(record["subset"]), int(record["restart"])
    max_rows = cfg.scale.classification.max_rows
    hold, train, test = classification_split(task.X_all.shape[0], cfg.seed, p, max_rows)
    holdout = PreparedData(task.X_all[hold], clip=bool(cfg.clip_rows))
    if record.get("restarts_as_chains"):
        out, fields = replay_group_release(
            cfg, holdout, record, lambda r: mechanism_stream(cfg.seed, p, r)
        )
    else:
        mech = configured_mechanism(cfg)
        rng = mechanism_rng(cfg.seed, p, j)
        out = mech(holdout, int(cfg.k), rng=rng, clip=bool(cfg.clip_rows), **task.mech_kwargs)
        fields = output_fields(cfg, out, holdout)
    fields.update(classification_round(task, out, p, j, train, test, {}))
    return fields


def run_classification(cfg: DictConfig) -> dict:
    """Table 2 (JMLR 2013 section 6.4): half the data (hold-out) -> subspace; project the rest;
    10% trains and tunes the classifier (:func:`fit_classifier`), 90% tests.
    ``permutations x projections`` rounds.

    The protocol details the paper leaves open are configuration (``conf/experiment/classification.yaml``):
    the classifier (libSVM's RBF workflow, its defaults, or a linear SVM), the feature scaling after
    projection and, for the ``random`` mechanism, the reading of "uniformly generated random
    projection"; all are in the run key.  Every record says whether each SVM fit converged
    (``svm_fits``, ``svm_fits_converged``, ``svm_converged``); the summary refuses records whose fits
    did not (:func:`require_converged`).  PPCA by MCMC with
    ``scale.ppca_restarts_as_chains`` (paper scale): the missing releases of one permutation (they share
    its hold-out half) are the chains of one :func:`mechanisms.ppca.ppca_restarts` call, each bit for bit
    the single-chain release of its own stream, diagnosed across the group.  Every record also holds the
    accuracy of always predicting the training majority label (footnote 1: on census and insurance
    the projected classifier does no better than that).  :func:`replay_classification` recomputes
    one record (``+rerun``).
    """
    task = classification_task(cfg)
    dataset, X_all, proto = task.dataset, task.X_all, task.proto
    max_rows = cfg.scale.classification.max_rows
    store = ResultStore(results_root(cfg))
    perms, projs = (
        int(cfg.scale.classification.permutations),
        int(cfg.scale.classification.projections),
    )
    written, ids = 0, []
    bar = progress_bar(
        total=perms * projs, desc=f"{cfg.mechanism.name} classification", enable=cfg.progress
    )
    mech = configured_mechanism(cfg)
    # PPCA by MCMC with scale.ppca_restarts_as_chains (paper scale): the projections of one permutation
    # share the hold-out data, so its missing releases are the chains of one ppca_restarts call
    grouped = _restarts_as_chains(cfg)
    for p in range(perms):
        hold, train, test = classification_split(X_all.shape[0], cfg.seed, p, max_rows)
        holdout = None
        key_extra = dict(
            positive_label=task.positive,
            max_rows=None if not max_rows else int(max_rows),
            d_classified=int(X_all.shape[1]),
            **proto,
        )
        keys = [
            (
                _group_key(cfg, None, p, j, **key_extra)
                if grouped
                else run_key(cfg, subset=p, restart=j, **key_extra)
            )
            for j in range(projs)
        ]
        ids += [record_id(key) for key in keys]
        group_outs, fitted = {}, {}
        if grouped:  # this permutation's missing PPCA releases: the chains of one call (one subset)
            missing = [j for j in range(projs) if not store.has(keys[j])]
            if missing:
                t0 = time.perf_counter()
                holdout = PreparedData(X_all[hold], clip=bool(cfg.clip_rows))
                group_data_seconds = time.perf_counter() - t0
                outs = _ppca_group_releases(
                    cfg, holdout, [mechanism_stream(cfg.seed, p, j) for j in missing]
                )
                group_outs = dict(zip(missing, outs))
        for j in range(projs):
            key = keys[j]
            if store.has(key):
                bar.update(1)
                continue
            t0 = time.perf_counter()
            if j in group_outs:
                out = group_outs[j]
                share = group_data_seconds / len(group_outs) + out.diagnostics["seconds"]
                t0 -= share  # this release's share of the group's data and chains, in its wall time
                fields = _group_release_fields(
                    cfg, holdout, out, share, sorted(group_outs), mechanism_stream(cfg.seed, p, j)
                )
            else:
                if holdout is None:
                    holdout = PreparedData(X_all[hold], clip=bool(cfg.clip_rows))
                out = mech(
                    holdout,
                    int(cfg.k),
                    rng=mechanism_rng(cfg.seed, p, j),
                    clip=bool(cfg.clip_rows),
                    **task.mech_kwargs,
                )
                fields = output_fields(cfg, out, holdout, time.perf_counter() - t0)
            fields.update(classification_round(task, out, p, j, train, test, fitted))
            written += write_record(
                store, cfg, dataset, holdout.X, fields, time.perf_counter() - t0, key
            ).written
            bar.update(1)
    bar.close()
    df = store.load_ids(ids)
    summary = _summary(require_converged(df), ["mechanism"], "accuracy") if len(df) else df
    return _finish(cfg, "classification", written, summary)


def run_sulq_bound(cfg: DictConfig) -> dict:
    """Figure 1: Theorem 15's bound for each d, epsilon and n of the grid (one record each)."""
    store = ResultStore(results_root(cfg))
    e = cfg.experiment
    grid = np.linspace(e.log10_n.start, e.log10_n.stop, int(e.log10_n.num))
    written, ids = 0, []
    for d in e.dims:
        for eps in e.epsilons:
            for lg in grid:
                n = int(round(10**lg))
                key = {
                    "experiment": "sulq_bound",
                    "d": int(d),
                    "epsilon": float(eps),
                    "n": n,
                    "delta": float(cfg.delta),
                }
                ids.append(record_id(key))
                if store.has(key):
                    continue
                bound = mod_sulq_correlation_upper_bound(n, int(d), float(eps), float(cfg.delta))
                record = {
                    "run_key": key,
                    **key,
                    "log10_n": float(lg),
                    "bound": bound,
                    "mechanism": "mod_sulq",
                    "neighbouring": "replace-one-row",
                    "noise_scale": mod_sulq_noise_scale(n, int(d), float(eps), float(cfg.delta)),
                    **record_provenance(cfg),
                }
                written += store.write(record)[1]
    df = store.load_ids(ids)
    return _finish(
        cfg,
        "sulq_bound",
        written,
        df.groupby(["d", "epsilon"])["bound"].agg(["min", "max"]).reset_index() if len(df) else df,
    )


def run_gibbs_convergence(cfg: DictConfig) -> dict:
    """Figure 2: log F_k^i(T) traces of several PPCA chains from uniform starts (JMLR section 6.2)."""
    from mechanisms.calibration import ppca_concentration
    from mechanisms.ppca import gibbs_convergence_traces

    g = cfg.scale.gibbs
    sweeps = cfg.experiment.get("sweeps_per_iteration")
    sweeps = None if sweeps is None else int(sweeps)
    if sweeps is not None and (sweeps < 1 or str(cfg.experiment.sampler) != "gibbs"):
        raise ValueError(
            "experiment.sweeps_per_iteration must be a positive integer, for experiment.sampler=gibbs"
        )
    # the sweeps enter the key only when set: records made with the chain's default keep their ids
    extra = {} if sweeps is None else {"sweeps_per_iteration": sweeps}
    key = run_key(
        cfg,
        chains=int(g.chains),
        chain_iterations=int(g.iterations),
        record_every=int(g.record_every),
        sampler=str(cfg.experiment.sampler),
        **extra,
    )
    store = ResultStore(results_root(cfg))
    written = 0
    if not store.has(key):  # load the data (and its n·d² second moment) only when there is work
        t0 = time.perf_counter()
        dataset = load_configured(cfg.dataset, cfg.data_dir)
        X, _, _ = subsample(dataset.X, cfg.n, subset_rng(cfg.seed, 0))
        data = PreparedData(X, clip=bool(cfg.clip_rows))
        every = int(g.record_every)
        res = gibbs_convergence_traces(
            data.A,
            data.X.shape[0],
            float(cfg.epsilon),
            int(cfg.k),
            n_chains=int(g.chains),
            iterations=int(g.iterations),
            rng=mechanism_rng(cfg.seed, 0, 0),
            record_every=every,
            sampler=str(cfg.experiment.sampler),
            progress=progress_enabled(cfg.progress),
            sweeps_per_iteration=sweeps,
        )
        fields = {
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
                "q_F_thinned": res["q_F"][:, every - 1 :: every],
            },
        }
        written = write_record(
            store, cfg, dataset, X, fields, time.perf_counter() - t0, key
        ).written
    return _finish(cfg, "gibbs_convergence", written, pd.DataFrame())


def _finish(cfg: DictConfig, name: str, written: int, summary: pd.DataFrame) -> dict:
    if not cfg.quiet and len(summary):
        print(summary.to_string(index=False))
    result = {
        "experiment": name,
        "dataset": cfg.dataset.name,
        "mechanism": cfg.mechanism.name,
        "records_written": int(written),
        "results_dir": str(results_root(cfg)),
    }
    emit(result, cfg)
    return result
