"""The single-run experiments called by ``run.py``: ``single``, ``table1`` and ``+rerun=<record id>``.

Every experiment writes its records with the record toolkit, :mod:`experiments.records` (random
streams, run keys, record fields, writing).
"""

from __future__ import annotations

import json
import logging
import os
import time

import numpy as np
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from mechanisms import PreparedData

from .errors import UserError
from .jmlr import regroup_release, replay_classification
from .loading import load_configured, subsample
from .provenance import git_commit, package_versions, record_provenance, utc_timestamp
from .records import (
    emit,
    evaluate_mechanism,
    mechanism_stream,
    results_root,
    run_key,
    subset_stream,
    write_record,
)
from .results import ResultStore, record_id
from .threads import blas_provenance, pinned_blas

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
    from .table1 import table1

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


def _replay_mechanism(cfg: DictConfig, rec: dict, dataset) -> dict:
    """The fields of a mechanism's run on (a subset of) the data set, recomputed (a PPCA release
    made as one chain of a restarts-as-chains group by running its whole group again)."""
    X = dataset.X
    if rec.get("subset_stream") is not None and rec["n"] != X.shape[0]:
        X, _, _ = subsample(X, rec["n"], np.random.default_rng(rec["subset_stream"]))
    data = PreparedData(X, clip=bool(cfg.clip_rows))
    if rec.get("restarts_as_chains"):
        return regroup_release(cfg, data, rec)
    return evaluate_mechanism(cfg, data, rec["mechanism_stream"])


#: fields a record holds both at the top level (read by the figures) and in its run key
_KEYED_FIELDS = ("experiment", "dataset", "mechanism", "k", "seed", "scale")


def _check_record_is_consistent(rec: dict) -> None:
    """Refuse a record whose run key does not hash to its id, or whose top-level fields or config
    disagree with its run key: the file was edited, and a replay would vouch for values it never
    recomputed."""
    from .results import record_id

    key = rec.get("run_key") or {}
    wrong = [] if record_id(key) == rec.get("record_id") else ["run_key (does not hash to the id)"]
    config = rec.get("config") or {}
    for field in _KEYED_FIELDS:
        if field in key and field in rec and rec[field] != key[field]:
            wrong.append(field)
        if (
            field in ("k", "seed")
            and field in key
            and field in config
            and config[field] != key[field]
        ):
            wrong.append(f"config.{field}")
    if wrong:
        raise UserError(
            f"record {rec.get('record_id')} disagrees with its own run key in {', '.join(wrong)}: "
            "the file was edited; it cannot be re-run"
        )


def rerun(cfg: DictConfig) -> dict:
    """``python run.py +rerun=<record id>``: re-run a stored record and check it bit for bit.

    The record's resolved config, data-subset stream and mechanism stream are replayed (a PPCA
    release made as one chain of a restarts-as-chains group, by running its whole group again:
    :func:`experiments.jmlr.regroup_release`; a classification record with its split, release and
    classifier: :func:`experiments.jmlr.replay_classification`) with
    :data:`~experiments.threads.PINNED_BLAS_THREADS` BLAS threads (as every experiment runs); the
    raw data files' checksums must match the ones recorded.  Prints one JSON line with
    ``reproduced`` (every recomputed field, timings aside, equals the record's).  A record that
    cannot be re-run, or whose values differ, raises :class:`UserError` /
    :class:`~experiments.errors.NotReproduced`: ``run.py`` prints one line naming the fields and the
    cause (:mod:`experiments.rerun_check`) and exits with status 2.
    """
    from .errors import NotReproduced
    from .rerun_check import differences, known_causes, not_reproduced_line

    store = ResultStore(results_root(cfg))
    try:
        rec = store.get(str(cfg.rerun))
    except KeyError as exc:
        raise UserError(f"+rerun: {exc.args[0]}") from None
    _check_record_is_consistent(rec)
    classification = rec.get("experiment") == "classification"
    if "config" not in rec or not (classification or "mechanism_stream" in rec):
        raise UserError(
            f"record {cfg.rerun} holds no mechanism stream/config: it cannot be re-run "
            f"(experiment {rec.get('experiment')!r})"
        )
    old = OmegaConf.create(rec["config"])
    with pinned_blas():  # synthetic data sets are drawn with BLAS too
        dataset = load_configured(
            old.dataset, cfg.data_dir if cfg.data_dir is not None else old.data_dir
        )
        files_now = getattr(dataset, "files", {}) or {}
        if rec.get("data_files") and files_now != rec["data_files"]:
            changed = sorted(
                f
                for f in set(rec["data_files"]) | set(files_now)
                if rec["data_files"].get(f) != files_now.get(f)
            )
            raise UserError(
                f"record {rec['record_id']} cannot be re-run: its raw data files differ from the "
                f"ones recorded ({', '.join(changed)})"
            )
        if classification:  # the split, the release on its hold-out half and the classifier
            fields = replay_classification(old, rec, dataset)
        else:
            fields = _replay_mechanism(old, rec, dataset)
        now = blas_provenance()
    diffs = differences(rec, fields)
    result = {
        "rerun": rec["record_id"],
        "reproduced": not diffs,
        "differences": diffs,
        "q_F": fields["q_F"],
        "recorded_q_F": rec.get("q_F"),
        "blas_threads": now["blas_threads"],
        "recorded_blas_threads": (rec.get("provenance") or {}).get("blas_threads"),
        "recorded_git_commit": rec.get("git_commit"),
        "git_commit": git_commit(),
        "recorded_versions": rec.get("versions"),
        "versions": package_versions(),
    }
    if diffs:
        causes = known_causes(rec, now, package_versions(), git_commit(), fields)
        result["cause"] = not_reproduced_line(rec["record_id"], diffs, causes)
    emit(result, cfg)
    if diffs:
        raise NotReproduced(result["cause"])
    return result


def run_experiment(cfg: DictConfig):
    """Run the configured experiment (or ``+rerun``) with one BLAS thread
    (:func:`experiments.threads.pinned_blas`), whatever the shell or launcher set: records re-run
    bit for bit from any of them."""
    with pinned_blas():
        if "rerun" in cfg:
            return rerun(cfg)
        # a worker killed mid-write (an earlier crashed sweep) leaves a temporary: remove it if its writer is dead
        ResultStore(results_root(cfg)).clean_stale_temporaries()
        fn = instantiate(cfg.experiment.run)
        return fn(cfg)
