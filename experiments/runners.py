"""Experiment runners called by ``run.py`` (one per ``conf/experiment/*.yaml``).

Random streams: a run with ``seed=s, subset=i, restart=r`` draws its data subset
from ``default_rng([s, 0, i])`` and its mechanism noise from
``default_rng([s, 1, i, r])``, so adding subsets or restarts never changes the
draws of existing ones.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from mechanisms._base import PreparedData
from mechanisms.metrics import optimal_q_F, q_F

from .loading import load_configured, subsample
from .provenance import REPO_ROOT, git_commit, package_versions
from .errors import UserError
from .results import ResultStore, record_id, to_json

log = logging.getLogger(__name__)


def results_root(cfg: DictConfig) -> Path:
    p = Path(cfg.results_dir)
    return p if p.is_absolute() else REPO_ROOT / p


def subset_stream(seed: int, subset: int, *extra: int) -> list[int]:
    """Seed sequence entropy for drawing data subset ``subset`` (extra ids, e.g. n, make it per grid point)."""
    return [int(seed), 0, int(subset), *map(int, extra)]


def mechanism_stream(seed: int, subset: int, restart: int, *extra: int) -> list[int]:
    """Seed sequence entropy for the mechanism's randomness on (subset, restart)."""
    return [int(seed), 1, int(subset), int(restart), *map(int, extra)]


def subset_rng(seed: int, subset: int, *extra: int) -> np.random.Generator:
    return np.random.default_rng(subset_stream(seed, subset, *extra))


def mechanism_rng(seed: int, subset: int, restart: int, *extra: int) -> np.random.Generator:
    return np.random.default_rng(mechanism_stream(seed, subset, restart, *extra))


def components_digest(V: np.ndarray | None) -> str | None:
    """sha256 of the released matrix's bytes (float64, C order): bit-for-bit reproducibility checks."""
    if V is None:
        return None
    return hashlib.sha256(np.ascontiguousarray(V, dtype=np.float64).tobytes()).hexdigest()


def mechanism_params(cfg: DictConfig) -> dict:
    """The mechanism's configured parameters (part of the run key).  ``calibration: paper`` (the
    reproduction's default noise) is left out, so records written before the ``calibration`` knob
    existed keep their keys; any other calibration is part of the key."""
    params = OmegaConf.to_container(cfg.mechanism.fn, resolve=True)
    return {k: v for k, v in params.items()
            if not k.startswith("_") and not (k == "calibration" and v == "paper")}


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
        "scale": cfg.scale.name,   # a run at another scale is another run (iterations, chains differ)
        "seed": int(cfg.seed),
        "subset": int(cfg.subset),
        "restart": int(cfg.restart),
        "clip_rows": bool(cfg.clip_rows),
    }
    key.update(extra)
    return key


def evaluate_mechanism(cfg: DictConfig, data: PreparedData, stream: list[int], mech=None) -> dict:
    """Run the configured mechanism once on ``data`` with randomness ``default_rng(stream)``;
    return the utility and guarantee fields of a record (including the stream, for re-runs)."""
    mech = mech or instantiate(cfg.mechanism.fn)
    t0 = time.perf_counter()
    out = mech(data, int(cfg.k), rng=np.random.default_rng(stream), clip=bool(cfg.clip_rows))
    fields = output_fields(cfg, out, data, time.perf_counter() - t0)
    fields["mechanism_stream"] = list(stream)
    return fields


#: release fields copied to the top level of a record (convenience columns; the full release is
#: under ``"release"``)
RELEASE_COLUMNS = ("sampler", "iterations", "noise_scale")

_LAST_OPTIMUM: list = [None, None, None]  # (A, k, q_F(V_k)): the last data's optimum, reused by its restarts


def _optimal_q_F(A: np.ndarray, k: int) -> float:
    """optimal_q_F(A, k), computed once for consecutive records on the same (read-only) A: a sweep writes
    up to 100 restarts per data subset, each needing the same d x d eigendecomposition.  The cache
    holds a reference to A, so an identity match cannot be a recycled object."""
    if _LAST_OPTIMUM[0] is A and _LAST_OPTIMUM[1] == k and not A.flags.writeable:
        return _LAST_OPTIMUM[2]
    value = optimal_q_F(A, k)
    _LAST_OPTIMUM[:] = [A, k, value]
    return value


def output_fields(cfg: DictConfig, out, data: PreparedData, seconds: float | None = None) -> dict:
    """Record fields of one mechanism output: guarantee, utility, release and diagnostics.

    The mechanism's release is stored under ``"release"`` and its diagnostics under
    ``"diagnostics_not_private"`` (exact statistics of the raw data and sampler internals: never
    publish them beside the release).  A few release fields (:data:`RELEASE_COLUMNS`) are repeated
    as flat columns for tables; diagnostics appear only under ``diagnostics_not_private``.
    ``guarantee_status`` is ``"proven"`` or, e.g., ``"nominal (MCMC)"``
    (:data:`mechanisms._base.GUARANTEE_STATUSES`): show it wherever the result is shown.
    """
    A = data.A
    g = out.guarantee
    fields = {
        "mechanism": cfg.mechanism.name,
        "epsilon": g.epsilon, "delta": g.delta, "neighbouring": g.neighbouring,
        "guarantee_exact": g.exact, "guarantee_status": g.status, "guarantee_note": g.note,
        "q_F_opt": _optimal_q_F(A, int(cfg.k)),
        "trace_A": float(np.trace(A)),
        "mechanism_seconds": seconds,
        "release": out.release,
        "diagnostics_not_private": out.diagnostics,
    }
    fields["components_sha256"] = components_digest(out.components)
    if out.components is None:  # e.g. Singhal-Steinke's "bottom" answer
        fields.update(q_F=None, q_F_normalised=None, status=out.status)
    else:
        fields.update(q_F=q_F(out.components, A), status="ok")
        fields["q_F_normalised"] = fields["q_F"] / fields["q_F_opt"]
    for key in RELEASE_COLUMNS:
        if key in out.release:
            fields[key] = out.release[key]
    return fields


def make_record(cfg: DictConfig, dataset, X: np.ndarray, fields: dict, wall_seconds: float,
                key: dict) -> dict:
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
        "wall_seconds": wall_seconds,
        "config": OmegaConf.to_container(cfg, resolve=True),
        "data_files": getattr(dataset, "files", {}),
        "versions": package_versions(),
        "git_commit": git_commit(),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def emit(record: dict, cfg: DictConfig | None = None) -> None:
    """Show a run's result: a short rounded summary for a person (:func:`human_summary`; nothing with
    ``quiet=true``) or, with ``print_record=true``, the full record as one JSON line, the last line of
    stdout: the one way scripts read it (the record is also the file ``<results_dir>/records/<id>.json``
    named in the summary)."""
    if cfg is not None and cfg.get("print_record", False):
        print(to_json(record), flush=True)
    elif cfg is None or not cfg.get("quiet", False):
        print(human_summary(record), flush=True)


def _rounded(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.4g}"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (list, tuple, dict)):
        return f"({len(v)} items; print_record=true shows them)"
    return str(v)


def human_summary(record: dict) -> str:
    """A few rounded lines about a result: for a mechanism run, what ran, its guarantee, q_F against
    the optimum, and where the full record is stored; otherwise its top-level fields, rounded."""
    if "q_F_opt" in record and "record_id" in record:
        status = record.get("guarantee_status")
        guarantee = f"ε = {_rounded(record.get('epsilon'))}"
        if record.get("neighbouring") != "none" and record.get("delta"):
            guarantee += f", δ = {_rounded(record.get('delta'))}"
        if status and status != "proven":
            guarantee += f" [{status}]"
        q, opt = record.get("q_F"), record.get("q_F_opt")
        utility = (f"q_F = {q:.4f} of optimum {opt:.4f} ({100 * q / opt:.1f}%)" if q is not None and opt
                   else f"no subspace released (status {record.get('status')})")
        stored = "already stored (shown as stored, not recomputed)" if record.get("written") is False else "stored"
        return "\n".join([
            f"{record['mechanism']} on {record['dataset']} (n = {_rounded(record['n'])}, d = {record['d']}, "
            f"k = {record['k']}), {guarantee}: {utility}",
            f"record {record['record_id']} {stored} in {record.get('record_path', 'the results store')}",
        ])
    return "\n".join(f"{k}: {_rounded(v)}" for k, v in record.items())


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
    record = make_record(cfg, dataset, X, fields, time.perf_counter() - t0, key)
    rid, written = store.write(record)
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
    emit(summary, cfg)
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
    emit(result, cfg)
    return result


def run_experiment(cfg: DictConfig):
    if "rerun" in cfg:
        return rerun(cfg)
    # a worker killed mid-write (an earlier crashed sweep) leaves a temporary: remove it if its writer is dead
    ResultStore(results_root(cfg)).clean_stale_temporaries()
    fn = instantiate(cfg.experiment.run)
    return fn(cfg)
