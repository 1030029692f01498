"""``python run.py +rerun=<record id>``: re-run a stored record and check it bit for bit
(the comparison and its causes: :mod:`experiments.runs.rerun_check`)."""

from __future__ import annotations

import logging

import numpy as np
from omegaconf import DictConfig, OmegaConf

from experiments.data.configured import load_configured, subsample
from experiments.errors import UserError
from experiments.runs.classification import replay_classification
from experiments.runs.evaluate import evaluate_mechanism
from experiments.runs.ppca_groups import regroup_release
from experiments.runs.show import emit
from experiments.store.provenance import (
    git_commit,
    package_versions,
)
from experiments.store.records import results_root
from experiments.store.store import ResultStore
from experiments.threads import blas_provenance, pinned_blas
from mechanisms.toolkit import PreparedData

log = logging.getLogger(__name__)


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
    from experiments.store.store import record_id

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
    :func:`experiments.runs.ppca_groups.regroup_release`; a classification record with its split, release and
    classifier: :func:`experiments.runs.classification.replay_classification`) with
    :data:`~experiments.threads.PINNED_BLAS_THREADS` BLAS threads (as every experiment runs); the
    raw data files' checksums must match the ones recorded.  Prints one JSON line with
    ``reproduced`` (every recomputed field, timings aside, equals the record's).  A record that
    cannot be re-run, or whose values differ, raises :class:`UserError` /
    :class:`~experiments.errors.NotReproduced`: ``run.py`` prints one line naming the fields and the
    cause (:mod:`experiments.runs.rerun_check`) and exits with status 2.
    """
    from experiments.errors import NotReproduced
    from experiments.runs.rerun_check import differences, known_causes, not_reproduced_line

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
