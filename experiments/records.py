"""The record toolkit every experiment writes with: random streams, run keys, a record's fields, writing.

Random streams: a run with ``seed=s, subset=i, restart=r`` draws its data subset from
``default_rng([s, 0, i])`` and its mechanism noise from ``default_rng([s, 1, i, r])``, so adding
subsets or restarts never changes the draws of existing ones.

A record is one JSON object in the :class:`~experiments.results.ResultStore`, identified by its run
key (:func:`run_key`: everything that changes the output).  :func:`output_fields` turns a mechanism's
output into the record's guarantee, utility, release and diagnostics fields, :func:`make_record` adds
the run's data files and provenance (:func:`experiments.provenance.record_provenance`) and
:func:`write_record` stores it.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from mechanisms import PreparedData
from mechanisms.metrics import optimal_q_F, q_F

from .compat import keyed_mechanism_params
from .progress import progress_enabled
from .provenance import REPO_ROOT, record_provenance
from .results import ResultStore, to_json

__all__ = [
    "RELEASE_COLUMNS",
    "Written",
    "components_digest",
    "configured_mechanism",
    "emit",
    "evaluate_mechanism",
    "human_summary",
    "make_record",
    "mechanism_params",
    "mechanism_rng",
    "mechanism_stream",
    "output_fields",
    "results_root",
    "run_key",
    "subset_rng",
    "subset_stream",
    "write_record",
]


def results_root(cfg: DictConfig) -> Path:
    p = Path(cfg.results_dir)
    return p if p.is_absolute() else REPO_ROOT / p


def subset_stream(seed: int, subset: int, *extra: int) -> list[int]:
    """Seed sequence entropy for drawing data subset ``subset`` (extra ids, e.g. n, make it per grid
    point)."""
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
    """The mechanism's configured parameters, as they enter the run key
    (:func:`experiments.compat.keyed_mechanism_params`)."""
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


def configured_mechanism(cfg: DictConfig, **overrides: Any):
    """The mechanism ``cfg.mechanism.fn`` describes (partially applied), with ``overrides``.

    A ``progress: null`` parameter (auto) is decided here, from the terminal and ``CI``
    (:func:`experiments.progress.progress_enabled`): the mechanism library never reads the environment.
    """
    fn = cfg.mechanism.fn
    if "progress" in fn and "progress" not in overrides:
        overrides["progress"] = progress_enabled(fn.progress)
    return instantiate(fn, **overrides)


def evaluate_mechanism(cfg: DictConfig, data: PreparedData, stream: list[int], mech=None) -> dict:
    """Run the configured mechanism once on ``data`` with randomness ``default_rng(stream)``;
    return the utility and guarantee fields of a record (including the stream, for re-runs)."""
    mech = mech or configured_mechanism(cfg)
    t0 = time.perf_counter()
    out = mech(data, int(cfg.k), rng=np.random.default_rng(stream), clip=bool(cfg.clip_rows))
    fields = output_fields(cfg, out, data, time.perf_counter() - t0)
    fields["mechanism_stream"] = list(stream)
    return fields


#: release fields copied to the top level of a record (convenience columns; the full release is
#: under ``"release"``)
RELEASE_COLUMNS = ("sampler", "iterations", "noise_scale")

_LAST_OPTIMUM: list = [
    None,
    None,
    None,
]  # (A, k, q_F(V_k)): the last data's optimum, reused by its restarts


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
    (:data:`mechanisms.GUARANTEE_STATUSES`): show it wherever the result is shown.
    """
    A = data.A
    g = out.guarantee
    fields = {
        "mechanism": cfg.mechanism.name,
        "epsilon": g.epsilon,
        "delta": g.delta,
        "neighbouring": g.neighbouring,
        "guarantee_exact": g.exact,
        "guarantee_status": g.status,
        "guarantee_note": g.note,
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


def make_record(
    cfg: DictConfig, dataset, X: np.ndarray, fields: dict, wall_seconds: float, key: dict
) -> dict:
    """The record of one run on ``X`` (rows of ``dataset``): ``fields`` and the run's provenance.

    On a UCI data set the record also says what its ε is about, ``guarantee_scope``
    (:func:`experiments.datasets.guarantee_scope`: the preprocessed matrix under the paper's
    preprocessing, the raw records under the one from public bounds).  It is stored here, not
    among the mechanism's fields, because ``+rerun`` compares those fields
    (:func:`experiments.rerun_check.differences`): records made before it re-run unchanged.
    """
    from .datasets import guarantee_scope

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
    """A few rounded lines about a result: for a mechanism run, what ran, its guarantee (ε, δ, the
    neighbouring relation they refer to, and the status unless proven), q_F against the optimum,
    and where the full record is stored; otherwise its top-level fields, rounded."""
    if "q_F_opt" in record and "record_id" in record:
        status = record.get("guarantee_status")
        epsilon = _rounded(record.get("epsilon"))
        guarantee = "not private (ε = inf)" if epsilon == "inf" else f"ε = {epsilon}"
        relation = record.get("neighbouring")
        if relation != "none" and record.get("delta"):
            guarantee += f", δ = {_rounded(record.get('delta'))}"
        if relation and relation != "none":  # what the ε refers to (replace vs add/remove differ)
            guarantee += f" ({relation})"
        if status and status != "proven":
            guarantee += f" [{status}]"
        q, opt = record.get("q_F"), record.get("q_F_opt")
        utility = (
            f"q_F = {q:.4f} of optimum {opt:.4f} ({100 * q / opt:.1f}%)"
            if q is not None and opt
            else f"no subspace released (status {record.get('status')})"
        )
        stored = (
            "already stored (shown as stored, not recomputed)"
            if record.get("written") is False
            else "stored"
        )
        return "\n".join(
            [
                f"{record['mechanism']} on {record['dataset']} (n = {_rounded(record['n'])}, d = {record['d']}, "
                f"k = {record['k']}), {guarantee}: {utility}",
                f"record {record['record_id']} {stored} in {record.get('record_path', 'the results store')}",
            ]
        )
    return "\n".join(f"{k}: {_rounded(v)}" for k, v in record.items())
