"""Compact summary of a results store: one CSV row per record, enough to redraw every paper figure.

The JSON store (``experiments.store.store.ResultStore``) keeps everything about a run (configuration,
versions, full diagnostics); a paper-scale run writes tens of thousands of such files.  The summary
keeps, for each record, its id and every **top-level scalar field** (experiment, dataset, mechanism,
scale, n, d, k, subset, restart, epsilon, q_F, q_F_opt, accuracy, converged, rhat, the Table-1 and
Figure-1 columns, ...), dropping nested parts (``config``, ``run_key``, ``info``, ``versions``) and
the guarantee's free-text note.  From the nested parts it keeps what says how a sampled release was
made and whether it passed its convergence check (``SUMMARY_NESTED``: the chain's iterations, sweeps
per iteration, sampler and chains of the release, a Gaussian mechanism's noise calibration;
split-R-hat, ESS, the diagnosed chains and the ``converged`` flag), as ``release.<key>`` and
``diagnostics_not_private.<key>`` columns, the names
``ResultStore.load()`` gives them.  Figure 2's traces (arrays) go to a second, long-format table, the
online-regret curves to a third;
a dimension-scaling search keeps the largest n it tried (``n_largest_searched``), and an online-regret
record its per-step ε and δ (``config.epsilon``, ``config.delta``).

    <dir>/records.csv                 one row per record, keyed by ``record_id``
    <dir>/gibbs_traces.csv            record_id, dataset, sampler, chain, T, log_F (Figure 2)
    <dir>/online_regret_curves.csv    record_id, t, regret, opt, theorem8, theorem9

:func:`update_summary` merges by ``record_id`` (a later run adds or replaces rows, never duplicates
them; of Table 1, whose records are keyed by code version, it keeps the latest per data set) and
writes atomically; :func:`load_summary` returns the DataFrame ``ResultStore.load()`` would
give for the columns the figures use, so ``scripts/make_figures.py --summary DIR`` draws from it alone.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.store.store import RECORD_ID_PATTERN, ResultStore, record_id

__all__ = [
    "summary_rows",
    "update_summary",
    "load_summary",
    "latest_table1",
    "RECORDS_CSV",
    "TRACES_CSV",
    "SUMMARY_NESTED",
]

RECORDS_CSV = "records.csv"
TRACES_CSV = "gibbs_traces.csv"
CURVES_CSV = "online_regret_curves.csv"
#: the online-regret curve columns (``curve.<name>`` in the store)
CURVE_COLUMNS = ("t", "regret", "opt", "theorem8", "theorem9")
#: top-level fields left out (free text repeated in every record, or per-record hashes)
_DROP = {"guarantee_note", "guarantee_scope", "components_sha256", "git_commit", "timestamp_note"}
#: scalar fields kept from nested parts of a record (present for PPCA releases): how the chain ran and
#: its convergence check, so the summary alone shows that every release was diagnosed
SUMMARY_NESTED = {
    "release": (
        "sampler",
        "iterations",
        "sweeps_per_iteration",
        "n_chains",
        "restarts_in_group",
        "calibration",
    ),
    "diagnostics_not_private": ("converged", "rhat", "ess", "diagnosed_chains"),
}


def _scalar(v) -> bool:
    return v is None or isinstance(v, (bool, int, float, str, np.integer, np.floating))


def largest_searched(search, n_grid) -> int | None:
    """The largest n a dimension-scaling search tried: its last step, else the grid's largest n."""
    if isinstance(search, list) and search:
        return int(search[-1]["n"])
    return int(max(n_grid)) if isinstance(n_grid, list) and n_grid else None


def curve_rows(records) -> list[dict]:
    """Long-format rows of the online-regret curves (one per record and step)."""
    out = []
    for rec in records:
        curve = rec.get("curve")
        if rec.get("experiment") != "online_regret" or not isinstance(curve, dict):
            continue
        rid = record_id(rec["run_key"])
        for i, t in enumerate(curve.get("t", [])):
            out.append({"record_id": rid, **{c: curve[c][i] for c in CURVE_COLUMNS if c in curve}})
    return out


def summary_rows(records) -> tuple[list[dict], list[dict]]:
    """(rows, trace rows) for an iterable of records (dicts as stored)."""
    rows, traces = [], []
    for rec in records:
        rid = record_id(rec["run_key"])
        row = {"record_id": rid}
        row.update({k: v for k, v in rec.items() if _scalar(v) and k not in _DROP})
        for part, keys in SUMMARY_NESTED.items():
            nested = rec.get(part)
            if isinstance(nested, dict):
                row.update(
                    {f"{part}.{k}": nested[k] for k in keys if k in nested and _scalar(nested[k])}
                )
        if rec.get("experiment") == "dimension_scaling" and rec.get("kind") == "summary":
            row["n_largest_searched"] = largest_searched(rec.get("search"), rec.get("n_grid"))
        if rec.get("experiment") == "online_regret" and isinstance(rec.get("config"), dict):
            row.update({f"config.{k}": rec["config"].get(k) for k in ("epsilon", "delta")})
        rows.append(row)
        tr = rec.get("traces")
        if rec.get("experiment") == "gibbs_convergence" and isinstance(tr, dict):
            T = tr.get("iterations", [])
            for c, chain in enumerate(tr.get("log_F", [])):
                for t, v in zip(T, chain):
                    traces.append(
                        {
                            "record_id": rid,
                            "dataset": rec.get("dataset"),
                            "sampler": rec.get("sampler"),
                            "chain": c,
                            "T": int(t),
                            "log_F": v,
                        }
                    )
    return rows, traces


def _atomic_csv(df: pd.DataFrame, path: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".csv", dir=path.parent)
    os.close(fd)
    try:
        df.to_csv(tmp, index=False)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class SummaryError(ValueError):
    """A summary file that cannot be read as one (cut short, emptied): named, never merged."""


def _read_summary_csv(path: Path, key: list[str]) -> pd.DataFrame | None:
    """The summary table in ``path``: None when absent or empty; rows whose record id is not one
    (a line cut short) dropped; :class:`SummaryError` naming the file when its header is not one."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    try:
        old = pd.read_csv(path, low_memory=False)
    except pd.errors.EmptyDataError:
        return None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise SummaryError(
            f"{path} is not a summary table ({exc}); remove it and summarize again"
        ) from None
    if not set(key) <= set(old.columns):
        raise SummaryError(
            f"{path} has no {', '.join(key)} column(s): it is damaged; remove it and summarize again"
        )
    ids = old["record_id"].astype(str)
    return old[ids.str.fullmatch(RECORD_ID_PATTERN.pattern)]


def _merge(path: Path, new: pd.DataFrame, key: list[str], dropped=frozenset()) -> pd.DataFrame:
    old = _read_summary_csv(path, key)
    if old is not None:
        old = old[~old["record_id"].isin(dropped)] if dropped else old
        # rows of records present in the new batch are replaced, the others kept
        old = old[~old["record_id"].isin(set(new["record_id"]))] if len(new) else old
        new = pd.concat([old, new], ignore_index=True, sort=False)
    return new.sort_values(key, kind="mergesort").reset_index(drop=True) if len(new) else new


def latest_table1(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with one Table 1 row per (data set, split): the one with the latest timestamp (ties:
    the larger record id).

    A Table 1 record is keyed by the code version that computed it (the table is recomputed by
    every version), so a store, and a summary merged from several runs, can hold several versions'
    rows of the same data set.  The one rule for both the summary (which keeps only these rows) and
    the drawn table (:func:`experiments.figures.tables.table1`).
    """
    if df.empty or "experiment" not in df.columns:
        return df
    is_t1 = df["experiment"] == "table1"
    if not is_t1.any():
        return df
    order = [c for c in ("timestamp", "record_id") if c in df.columns]
    t1 = df[is_t1].sort_values(order, kind="mergesort")
    by = [c for c in ("dataset", "split") if c in t1.columns]
    stale = t1.index.difference(t1.groupby(by, dropna=False).tail(1).index)
    return df.drop(index=stale).reset_index(drop=True)


def parse_selector(text: str) -> tuple[str, str, dict[str, str]]:
    """``EXPERIMENT/MECHANISM[:COLUMN=VALUE...]`` (``classification/ppca:classifier=linear_csvc``)
    as (experiment, mechanism, {column: value}); ``ValueError`` naming the form otherwise."""
    head, *conditions = text.split(":")
    pair = head.split("/")
    where = dict(c.split("=", 1) for c in conditions if "=" in c)
    if len(pair) != 2 or not all(pair) or len(where) != len(conditions) or not all(where):
        raise ValueError(
            f"{text!r}: give EXPERIMENT/MECHANISM, optionally with :COLUMN=VALUE conditions "
            "(e.g. utility_vs_n/ppca, classification/ppca:classifier=linear_csvc)"
        )
    return pair[0], pair[1], where


def _selected(df: pd.DataFrame, selector: tuple[str, str, dict[str, str]]) -> pd.Series:
    """The rows of ``df`` that ``selector`` (:func:`parse_selector`) names."""
    experiment, mechanism, where = selector
    if not {"experiment", "mechanism", *where} <= set(df.columns):
        return pd.Series(False, index=df.index)
    hit = (df["experiment"] == experiment) & (df["mechanism"] == mechanism)
    for column, value in where.items():
        hit &= df[column].astype(str) == value
    return hit


def superseded_ids(
    path: Path, rows: list[dict], replace: tuple[str, ...], scale: str | None
) -> set[str]:
    """Record ids of the summary in ``path`` that ``replace`` drops: for each of its selectors
    (:func:`parse_selector`) that names some of the new ``rows``, the summary's rows it names (of
    ``scale`` when given) whose records the new rows do not bring again."""
    selectors = [parse_selector(text) for text in replace]
    old = _read_summary_csv(path, ["record_id"]) if selectors else None
    if old is None or not rows:
        return set()
    new = pd.DataFrame(rows)
    hit = pd.Series(False, index=old.index)
    for selector in selectors:
        if _selected(new, selector).any():
            hit |= _selected(old, selector)
    if scale is not None and "scale" in old.columns:
        hit &= old["scale"] == scale
    return set(old.loc[hit, "record_id"].astype(str)) - set(new["record_id"].astype(str))


def update_summary(
    results: str | os.PathLike,
    out_dir: str | os.PathLike,
    scale: str | None = None,
    replace: tuple[str, ...] = (),
) -> dict:
    """Add the records of store ``results`` (optionally one scale; records without a scale, Table 1 and
    Figure 1, are always kept) to the summary in ``out_dir``; returns row counts.  Of Table 1, only
    the latest record per data set and split is kept (:func:`latest_table1`).

    ``replace``: selectors (``EXPERIMENT/MECHANISM[:COLUMN=VALUE...]``, :func:`parse_selector`)
    whose rows the store's records replace as a whole (:func:`superseded_ids`): a summary row a
    selector names that the store does not hold again is dropped, with its trace and curve rows
    (records of a changed protocol have new record ids)."""
    store = ResultStore(results)
    recs = [r for r in store.iter_records() if scale is None or r.get("scale") in (None, scale)]
    rows, traces = summary_rows(recs)
    curves = pd.DataFrame(curve_rows(recs))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    dropped = superseded_ids(out / RECORDS_CSV, rows, tuple(replace), scale)
    df = latest_table1(_merge(out / RECORDS_CSV, pd.DataFrame(rows), ["record_id"], dropped))
    if df.empty:
        raise SummaryError(
            f"no records{'' if scale is None else f' of scale {scale}'} in {store.records_dir}: "
            "nothing to summarize (no file written)"
        )
    _atomic_csv(df, out / RECORDS_CSV)
    tdf = _merge(out / TRACES_CSV, pd.DataFrame(traces), ["record_id", "chain", "T"], dropped)
    if len(tdf):
        _atomic_csv(tdf, out / TRACES_CSV)
    if len(curves):
        merged = _merge(out / CURVES_CSV, curves, ["record_id", "t"], dropped)
        _atomic_csv(merged, out / CURVES_CSV)
    return {
        "records": int(len(df)),
        "trace_rows": int(len(tdf)),
        "added_or_updated": len(rows),
        "replaced": len(dropped),
    }


def load_summary(out_dir: str | os.PathLike) -> pd.DataFrame:
    """The summary as a DataFrame shaped like ``ResultStore.load()`` (Figure 2 rows get
    ``traces.iterations`` and ``traces.log_F`` lists back from the trace table)."""
    out = Path(out_dir)
    df = _read_summary_csv(out / RECORDS_CSV, ["record_id"])
    if df is None:
        return pd.DataFrame()
    df = df.astype(object).where(df.notna(), None)  # missing text fields read back as None, not NaN
    flags = [c for c in ("converged", "diagnostics_not_private.converged") if c in df.columns]
    for col in flags:  # True / False / missing, never 1.0 / 0.0 / NaN
        df[col] = df[col].map(
            lambda v: (
                None
                if v is None
                else bool(v)
                if isinstance(v, (bool, np.bool_))
                else str(v) == "True"
            )
        )
    numeric = {}  # restore numeric columns, all at once (one block each, not a fragmented frame)
    for col in df.columns.difference(flags):
        conv = pd.to_numeric(df[col], errors="coerce")
        if conv.notna().sum() == df[col].notna().sum() and df[col].notna().any():
            numeric[col] = conv
    df = pd.DataFrame({col: numeric.get(col, df[col]) for col in df.columns})
    tpath = out / TRACES_CSV
    if tpath.exists() and "experiment" in df.columns:
        t = pd.read_csv(tpath)
        its, logs = {}, {}
        for rid, g in t.groupby("record_id"):
            g = g.sort_values(["chain", "T"])
            chains = [c["log_F"].to_numpy() for _, c in g.groupby("chain")]
            its[rid] = g.loc[g.chain == g.chain.min(), "T"].to_numpy()
            logs[rid] = chains
        df["traces.iterations"] = [its.get(r) for r in df.record_id]
        df["traces.log_F"] = [logs.get(r) for r in df.record_id]
    cpath = out / CURVES_CSV
    if cpath.exists():
        c = pd.read_csv(cpath).sort_values(["record_id", "t"], kind="mergesort")
        by_id = {rid: g for rid, g in c.groupby("record_id")}
        for col in CURVE_COLUMNS:
            if col in c.columns:
                df[f"curve.{col}"] = [
                    by_id[r][col].to_numpy() if r in by_id else None for r in df.record_id
                ]
    return df
