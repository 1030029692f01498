"""The single-run experiments called by ``run.py``: ``single`` (one mechanism on one data set)
and ``table1``."""

from __future__ import annotations

import json
import logging
import os
import time

import numpy as np
from omegaconf import DictConfig

from experiments.data.configured import load_configured, subsample
from experiments.runs.evaluate import evaluate_mechanism
from experiments.runs.show import emit
from experiments.runs.streams import mechanism_stream, subset_stream
from experiments.store.provenance import (
    git_commit,
    record_provenance,
    utc_timestamp,
)
from experiments.store.records import results_root, run_key, write_record
from experiments.store.store import ResultStore, record_id
from mechanisms.toolkit import PreparedData

log = logging.getLogger(__name__)


def run_single(cfg: DictConfig) -> dict:
    """One mechanism on one dataset (optionally a subsample of size ``n``)."""
    t0 = time.perf_counter()
    store = ResultStore(results_root(cfg))
    key = run_key(cfg)
    if store.has(key):  # resume: show what is stored, do not recompute it
        record = store.get(record_id(key))
        record.update(written=False, record_path=str(store.path(record["record_id"])))
        emit(record, cfg)
        return record
    dataset = load_configured(cfg.dataset, cfg.data_dir)
    sub = subset_stream(cfg.seed, cfg.subset)
    X, _, _ = subsample(dataset.X, cfg.n, np.random.default_rng(sub))
    data = PreparedData(X, clip=bool(cfg.clip_rows))
    fields = evaluate_mechanism(cfg, data, mechanism_stream(cfg.seed, cfg.subset, cfg.restart))
    fields["subset_stream"] = sub
    record, rid, written = write_record(
        store, cfg, dataset, X, fields, time.perf_counter() - t0, key
    )
    if not written:  # written meanwhile by another job: show the stored one
        record = store.get(rid)
    record.update(record_id=rid, written=written, record_path=str(store.path(rid)))
    emit(record, cfg)
    return record


def run_table1(cfg: DictConfig) -> dict:
    """Table 1 of the JMLR paper: one record per dataset, plus ``<results_dir>/tables/table1.csv`` (its one
    writer; the committed Table 1 of each scale is drawn from the summary by ``scripts/curate.sh``)."""
    from experiments.data.table1 import table1

    df = table1(data_dir=cfg.data_dir, datasets=tuple(cfg.experiment.datasets))
    store = ResultStore(results_root(cfg))
    stamp = utc_timestamp()  # one time stamp for the rows written together
    for row in json.loads(df.to_json(orient="records")):
        key = {
            "experiment": "table1",
            "dataset": row["dataset"],
            "split": row["split"],
            "git_commit": git_commit(),
        }
        store.write(
            {
                "run_key": key,
                "experiment": "table1",
                **row,
                "mechanism": "pca",
                "epsilon": float("inf"),
                "delta": 0.0,
                "neighbouring": "none",
                **record_provenance(cfg, timestamp=stamp),
            }
        )
    out_dir = results_root(cfg) / "tables"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "table1.csv"
    tmp = path.with_suffix(".csv.tmp")
    # owner only (0600, whatever the umask): q_F of PCA is an exact statistic of the data
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", newline="") as fh:
        os.fchmod(fh.fileno(), 0o600)
        df.to_csv(fh, index=False)
    tmp.replace(path)
    if not cfg.quiet:
        print(df.drop(columns=["note"], errors="ignore").to_string(index=False))
        for name, why in df.attrs.get("skipped", {}).items():
            print(f"skipped {name}: {why}")
        print(f"written: {path}")
    summary = {
        "experiment": "table1",
        "path": str(path),
        "rows": json.loads(df.to_json(orient="records")),
    }
    emit(summary, cfg)
    return summary
