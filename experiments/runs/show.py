"""How a run's result is shown: a short rounded summary for a person, or the record as one JSON
line for scripts (``print_record=true``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from omegaconf import DictConfig

from experiments.store.store import to_json


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
