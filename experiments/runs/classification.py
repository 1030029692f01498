"""Table 2 (JMLR 2013, Section 6): classification accuracy on the projections a mechanism
releases, with the protocol the config names (:func:`classification_protocol`; the choices and their
sources: docs/table2_protocol.md) and the classifiers of :mod:`experiments.runs.classifiers`."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
from omegaconf import DictConfig

from experiments.data.configured import load_configured
from experiments.runs.classifiers import (
    CLASSIFIERS,
    FEATURE_SCALINGS,
    SVM_LOSSES,
    classification_split,
    fit_classifier,
    log2_grid,
    majority_label_accuracy,
    require_converged,
)
from experiments.runs.evaluate import configured_mechanism, output_fields
from experiments.runs.ppca_groups import (
    group_key,
    group_release_fields,
    ppca_group_releases,
    replay_group_release,
    restarts_as_chains,
)
from experiments.runs.progress import progress_bar
from experiments.runs.streams import mechanism_rng, mechanism_stream
from experiments.runs.sweep import finish_experiment, grouped_summary
from experiments.store.records import results_root, run_key, write_record
from experiments.store.store import ResultStore, record_id
from mechanisms import PreparedData

log = logging.getLogger(__name__)

#: the paper's positive class for Table 2
POSITIVE_LABEL = {
    "kddcup": "normal.",
    "localization": "falling",
    # footnote 1's data sets: the income label (census) and caravan-policy owner (insurance)
    "census": "50000+",
    "insurance": "1",
}


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
    grouped = restarts_as_chains(cfg)
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
                group_key(cfg, None, p, j, **key_extra)
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
                outs = ppca_group_releases(
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
                fields = group_release_fields(
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
    summary = grouped_summary(require_converged(df), ["mechanism"], "accuracy") if len(df) else df
    return finish_experiment(cfg, "classification", written, summary)
