"""The single-run experiments called by ``run.py``: ``single``, ``table1`` and ``+rerun=<record id>``.

Every experiment writes its records with the record toolkit, :mod:`experiments.records` (random
streams, run keys, record fields, writing).
"""

from __future__ import annotations

import json
import logging
import time

import numpy as np
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from mechanisms import PreparedData

from .errors import UserError
from .loading import load_configured, subsample
from .provenance import git_commit, package_versions
from .records import (emit, evaluate_mechanism, mechanism_stream, results_root, run_key, subset_stream,
                      write_record)
from .results import ResultStore

log = logging.getLogger(__name__)


def run_single(cfg: DictConfig) -> dict:
    """One mechanism on one dataset (optionally a subsample of size ``n``)."""
    t0 = time.perf_counter()
    store = ResultStore(results_root(cfg))
    key = run_key(cfg)
    dataset = load_configured(cfg.dataset, cfg.data_dir)
    sub = subset_stream(cfg.seed, cfg.subset)
    X, _, _ = subsample(dataset.X, cfg.n, np.random.default_rng(sub))
    data = PreparedData(X, clip=bool(cfg.clip_rows))
    fields = evaluate_mechanism(cfg, data, mechanism_stream(cfg.seed, cfg.subset, cfg.restart))
    fields["subset_stream"] = sub
    record, rid, written = write_record(store, cfg, dataset, X, fields, time.perf_counter() - t0, key)
    record["record_id"] = rid
    record["written"] = written
    if not cfg.quiet:
        log.info("%s on %s (n=%d, d=%d, k=%d): q_F = %s of optimum %.4f; record %s%s",
                 record["mechanism"], record["dataset"], record["n"], record["d"], record["k"],
                 record["q_F"], record["q_F_opt"], rid, "" if written else " (already stored)")
    emit(record)
    return record


def run_table1(cfg: DictConfig) -> dict:
    """Table 1 of the JMLR paper: one record per dataset, plus ``results/tables/table1.csv``."""
    from .table1 import table1

    df = table1(data_dir=cfg.data_dir, datasets=tuple(cfg.experiment.datasets))
    store = ResultStore(results_root(cfg))
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for row in json.loads(df.to_json(orient="records")):
        key = {"experiment": "table1", "dataset": row["dataset"], "split": row["split"],
               "git_commit": git_commit()}
        store.write({"run_key": key, "experiment": "table1", **row, "mechanism": "pca",
                     "epsilon": float("inf"), "delta": 0.0, "neighbouring": "none",
                     "versions": package_versions(), "git_commit": git_commit(), "timestamp": stamp})
    out_dir = results_root(cfg) / "tables"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "table1.csv"
    tmp = path.with_suffix(".csv.tmp")
    df.to_csv(tmp, index=False)
    tmp.replace(path)
    if not cfg.quiet:
        print(df.drop(columns=["note"], errors="ignore").to_string(index=False))
        for name, why in df.attrs.get("skipped", {}).items():
            print(f"skipped {name}: {why}")
        print(f"written: {path}")
    summary = {"experiment": "table1", "path": str(path), "rows": json.loads(df.to_json(orient="records"))}
    emit(summary)
    return summary


def rerun(cfg: DictConfig) -> dict:
    """``python run.py +rerun=<record id>``: re-run a stored record and check it bit for bit.

    The record's resolved config, data-subset stream and mechanism stream are
    replayed; the raw data files' checksums must match the ones recorded.
    Prints one JSON line with ``reproduced`` (the released matrix's sha256 agrees).
    """
    store = ResultStore(results_root(cfg))
    try:
        rec = store.get(str(cfg.rerun))
    except KeyError as exc:
        raise UserError(f"+rerun: {exc.args[0]}") from None
    if "mechanism_stream" not in rec or "config" not in rec:
        raise ValueError(f"record {cfg.rerun} holds no mechanism stream/config: it cannot be re-run "
                         f"(experiment {rec.get('experiment')!r})")
    old = OmegaConf.create(rec["config"])
    dataset = load_configured(old.dataset, cfg.data_dir if cfg.data_dir is not None else old.data_dir)
    files_now = getattr(dataset, "files", {}) or {}
    if rec.get("data_files") and files_now != rec["data_files"]:
        raise ValueError(f"raw data differ from the record's: recorded {rec['data_files']}, now {files_now}")
    X = dataset.X
    if rec.get("subset_stream") is not None and rec["n"] != X.shape[0]:
        X, _, _ = subsample(X, rec["n"], np.random.default_rng(rec["subset_stream"]))
    data = PreparedData(X, clip=bool(old.clip_rows))
    fields = evaluate_mechanism(old, data, rec["mechanism_stream"])
    result = {"rerun": rec["record_id"], "reproduced": fields["components_sha256"] == rec["components_sha256"],
              "q_F": fields["q_F"], "recorded_q_F": rec.get("q_F"),
              "recorded_git_commit": rec.get("git_commit"), "git_commit": git_commit(),
              "recorded_versions": rec.get("versions"), "versions": package_versions()}
    emit(result)
    return result


def run_experiment(cfg: DictConfig):
    if "rerun" in cfg:
        return rerun(cfg)
    # a worker killed mid-write (an earlier crashed sweep) leaves a temporary: remove it if its writer is dead
    ResultStore(results_root(cfg)).clean_stale_temporaries()
    fn = instantiate(cfg.experiment.run)
    return fn(cfg)
