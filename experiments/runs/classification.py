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
    classification_split,
    fit_classifier,
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
from experiments.runs.settings import (
    CV_FOLDS_DEFAULT,
    LOG2_C_DEFAULT,
    POSITIVE_LABEL,
    ClassificationSettings,
)
from experiments.runs.streams import mechanism_rng, mechanism_stream
from experiments.runs.sweep import finish_experiment, grouped_summary
from experiments.store.records import results_root, run_key, write_record
from experiments.store.store import ResultStore, record_id
from mechanisms.toolkit import PreparedData

log = logging.getLogger(__name__)

__all__ = [
    "CV_FOLDS_DEFAULT",
    "LOG2_C_DEFAULT",
    "POSITIVE_LABEL",
    "ClassificationTask",
    "classification_protocol",
    "classification_round",
    "classification_task",
    "replay_classification",
    "run_classification",
]


def classification_protocol(cfg: DictConfig) -> dict:
    """The Table-2 protocol fields of ``cfg.experiment`` (all of them go into the run key;
    :class:`~experiments.runs.settings.ClassificationSettings` reads and checks them).

    How the RBF classifiers treat repeated training rows (fitted once per distinct (row, label) pair
    with its count as sample weight, :class:`~experiments.runs.classifiers.DistinctRowsSVC`) is not a
    protocol field: it solves the same C-SVC problem as fitting every row, so it does not enter the
    run key; each record says how its fit was made (``svm_duplicates``, ``svm_fit_rows``,
    :func:`~experiments.runs.classifiers.fit_classifier`).
    """
    return ClassificationSettings.from_config(cfg).protocol()


@dataclass(frozen=True)
class ClassificationTask:
    """What every round of a classification experiment shares: the data set, its features (after
    ``drop_feature_prefixes``) and labels, the protocol, the mechanism's extra arguments and the
    experiment's settings."""

    dataset: object
    X_all: np.ndarray
    y_all: np.ndarray
    positive: str
    proto: dict
    mech_kwargs: dict
    settings: ClassificationSettings


def classification_task(cfg: DictConfig, dataset=None) -> ClassificationTask:
    """The shared part of :func:`run_classification` (``dataset`` loaded from ``cfg`` when None)."""
    settings = ClassificationSettings.from_config(cfg)
    if dataset is None:
        dataset = load_configured(cfg.dataset, cfg.data_dir)
    if dataset.y is None:
        raise ValueError(f"dataset {dataset.name} has no labels for classification")
    positive = settings.positive(dataset.name)
    if positive is None:
        raise ValueError(f"set experiment.positive_label for dataset {dataset.name}")
    y_all = (np.asarray(dataset.y).astype(str) == str(positive)).astype(int)
    if y_all.min() == y_all.max():
        raise ValueError(f"label {positive!r} gives a single class on {dataset.name}")
    proto = settings.protocol()
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
    return ClassificationTask(dataset, X_all, y_all, str(positive), proto, mech_kwargs, settings)


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
    hold, train, test = classification_split(
        task.X_all.shape[0], cfg.seed, p, task.settings.max_rows
    )
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


def _round_keys(cfg: DictConfig, task: ClassificationTask, p: int, grouped: bool) -> list[dict]:
    """The run keys of permutation ``p``'s rounds (one per projection)."""
    s = task.settings
    protocol = dict(
        positive_label=task.positive,
        max_rows=s.max_rows,
        d_classified=int(task.X_all.shape[1]),
        **task.proto,
    )
    return [
        group_key(cfg, None, p, j, **protocol)
        if grouped
        else run_key(cfg, subset=p, restart=j, **protocol)
        for j in range(s.projections)
    ]


def _permutation(
    cfg: DictConfig, task: ClassificationTask, store, mech, p: int, keys: list[dict], grouped, bar
) -> int:
    """The rounds of permutation ``p`` whose record is not stored yet; the number written.

    The permutation's hold-out half is prepared once, when a round needs it.  ``grouped`` (PPCA by
    MCMC with ``scale.ppca_restarts_as_chains``): its missing releases share that half, so they are
    the chains of one :func:`~experiments.runs.ppca_groups.ppca_group_releases` call, each charged
    its share of the group's time."""
    hold, train, test = classification_split(
        task.X_all.shape[0], cfg.seed, p, task.settings.max_rows
    )
    projections = set(task.settings.selected("projection", len(keys)))
    missing = [j for j, key in enumerate(keys) if j in projections and not store.has(key)]
    bar.update(len(projections) - len(missing))
    holdout, group_outs, fitted, written = None, {}, {}, 0
    if grouped and missing:
        t0 = time.perf_counter()
        holdout = PreparedData(task.X_all[hold], clip=bool(cfg.clip_rows))
        group_data_seconds = time.perf_counter() - t0
        outs = ppca_group_releases(
            cfg, holdout, [mechanism_stream(cfg.seed, p, j) for j in missing]
        )
        group_outs = dict(zip(missing, outs))
    for j in missing:
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
                holdout = PreparedData(task.X_all[hold], clip=bool(cfg.clip_rows))
            rng = mechanism_rng(cfg.seed, p, j)
            out = mech(holdout, int(cfg.k), rng=rng, clip=bool(cfg.clip_rows), **task.mech_kwargs)
            fields = output_fields(cfg, out, holdout, time.perf_counter() - t0)
        fields.update(classification_round(task, out, p, j, train, test, fitted))
        written += write_record(
            store, cfg, task.dataset, holdout.X, fields, time.perf_counter() - t0, keys[j]
        ).written
        bar.update(1)
    return written


def run_classification(cfg: DictConfig) -> dict:
    """Table 2 (JMLR 2013 section 6.4): half the data (hold-out) -> subspace; project the rest;
    10% trains and tunes the classifier (:func:`fit_classifier`), 90% tests.
    ``permutations x projections`` rounds.

    The protocol details the paper leaves open are configuration (``conf/experiment/classification.yaml``,
    :class:`~experiments.runs.settings.ClassificationSettings`): the classifier (libSVM's RBF workflow,
    its defaults, or a linear SVM), the feature scaling after projection and, for the ``random``
    mechanism, the reading of "uniformly generated random projection"; all are in the run key.  Every
    record says whether each SVM fit converged (``svm_fits``, ``svm_fits_converged``,
    ``svm_converged``); the summary refuses records whose fits did not (:func:`require_converged`).
    PPCA by MCMC with ``scale.ppca_restarts_as_chains`` (paper scale): the missing releases of one
    permutation (they share its hold-out half) are the chains of one
    :func:`mechanisms.ppca.ppca_restarts` call, each bit for bit the single-chain release of its own
    stream, diagnosed across the group.  Every record also holds the accuracy of always predicting
    the training majority label (footnote 1: on census and insurance the projected classifier does no
    better than that).  :func:`replay_classification` recomputes one record (``+rerun``).

    Parameters
    ----------
    cfg : DictConfig
        The config composed with ``experiment=classification``.

    Returns
    -------
    dict
        The experiment's closing summary (:func:`~experiments.runs.sweep.finish_experiment`).
    """
    task = classification_task(cfg)
    s = task.settings
    store = ResultStore(results_root(cfg))
    grouped = restarts_as_chains(cfg)
    mech = configured_mechanism(cfg)
    written, ids = 0, []
    permutations = s.selected("permutation", s.permutations)  # all unless experiment.only says
    projections = s.selected("projection", s.projections)
    if grouped and len(projections) != s.projections:
        # a group's chains are its permutation's releases: a part of a group is another group
        raise ValueError("experiment.only: PPCA releases grouped as chains are run by permutation")
    total = len(permutations) * len(projections)
    desc = f"{cfg.mechanism.name} classification"
    with progress_bar(total=total, desc=desc, enable=cfg.progress) as bar:
        for p in permutations:
            keys = _round_keys(cfg, task, p, grouped)
            ids += [record_id(keys[j]) for j in projections]
            written += _permutation(cfg, task, store, mech, p, keys, grouped, bar)
    df = store.load_ids(ids)
    summary = grouped_summary(require_converged(df), ["mechanism"], "accuracy") if len(df) else df
    return finish_experiment(cfg, "classification", written, summary)
