"""What a record is and how it is written: run keys, the record of one run, writing it.

A record is one JSON object in the :class:`~experiments.store.store.ResultStore`, identified by
its run key (:func:`run_key`: everything that changes the output).  :func:`make_record` adds the
run's data files and provenance (:func:`experiments.store.provenance.record_provenance`) to the
fields of a run (:func:`experiments.runs.evaluate.output_fields`) and :func:`write_record` stores it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from omegaconf import DictConfig, OmegaConf

from experiments.paths import results_root as _results_root
from experiments.store.compat import keyed_mechanism_params
from experiments.store.provenance import record_provenance
from experiments.store.store import ResultStore


def results_root(cfg: DictConfig) -> Path:
    """The results store of ``cfg``: its ``results_dir``, a relative one taken from the checkout's
    root, or from the current directory for an installed copy (:func:`experiments.paths.results_root`)."""
    return _results_root(cfg.results_dir)


def components_digest(V: np.ndarray | None) -> str | None:
    """sha256 of the released matrix's bytes (float64, C order): bit-for-bit reproducibility checks."""
    if V is None:
        return None
    return hashlib.sha256(np.ascontiguousarray(V, dtype=np.float64).tobytes()).hexdigest()


def mechanism_params(cfg: DictConfig) -> dict:
    """The mechanism's configured parameters, as they enter the run key
    (:func:`experiments.store.compat.keyed_mechanism_params`)."""
    return keyed_mechanism_params(OmegaConf.to_container(cfg.mechanism.fn, resolve=True))


def run_key(cfg: DictConfig, **extra: Any) -> dict:
    """What identifies a run (for resuming): everything that changes its output."""
    key = {
        "experiment": cfg.experiment.name,
        "dataset": cfg.dataset.name,
        "dataset_params": OmegaConf.to_container(cfg.dataset, resolve=True),
        "mechanism": cfg.mechanism.name,
        "mechanism_params": mechanism_params(cfg),
        "k": int(cfg.k),
        "n": None if cfg.n is None else int(cfg.n),
        "scale": cfg.scale.name,  # a run at another scale is another run (iterations, chains differ)
        "seed": int(cfg.seed),
        "subset": int(cfg.subset),
        "restart": int(cfg.restart),
        "clip_rows": bool(cfg.clip_rows),
    }
    key.update(extra)
    return key


def make_record(
    cfg: DictConfig, dataset, X: np.ndarray, fields: dict, wall_seconds: float, key: dict
) -> dict:
    """The record of one run on ``X`` (rows of ``dataset``): ``fields`` and the run's provenance.

    On a UCI data set the record also says what its ε is about, ``guarantee_scope``
    (:func:`experiments.data.uci.guarantee_scope`: the preprocessed matrix under the paper's
    preprocessing, the raw records under the one from public bounds).  It is stored here, not
    among the mechanism's fields, because ``+rerun`` compares those fields
    (:func:`experiments.runs.rerun_check.differences`): records made before it re-run unchanged.
    """
    from experiments.data.uci import guarantee_scope

    scope = guarantee_scope(dataset)
    return {
        "run_key": key,
        "experiment": cfg.experiment.name,
        "dataset": dataset.name,
        "split": getattr(dataset, "split", None),
        "n": int(X.shape[0]),
        "n_total": int(dataset.X.shape[0]),
        "d": int(X.shape[1]),
        "k": int(cfg.k),
        "scale": cfg.scale.name,
        "seed": int(cfg.seed),
        "subset": int(cfg.subset),
        "restart": int(cfg.restart),
        **fields,
        **({"guarantee_scope": scope} if scope else {}),
        "wall_seconds": wall_seconds,
        "data_files": getattr(dataset, "files", {}),
        **record_provenance(cfg),
    }


class Written(NamedTuple):
    """What :func:`write_record` stored: the record, its id, and False if it was already stored."""

    record: dict
    record_id: str
    written: bool


def write_record(
    store: ResultStore,
    cfg: DictConfig,
    dataset,
    X: np.ndarray,
    fields: dict,
    wall_seconds: float,
    key: dict,
) -> Written:
    """Make the record of one run (:func:`make_record`) and write it to ``store``.

    A record whose run key is already stored is left untouched (``written`` is False).
    """
    record = make_record(cfg, dataset, X, fields, wall_seconds, key)
    rid, written = store.write(record)
    return Written(record, rid, written)
