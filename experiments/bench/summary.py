"""The benchmark's records compacted into one Parquet file, and the leaderboard queried with DuckDB.

:func:`compact` reads a store's benchmark records and writes one row per release (the columns of
:data:`COLUMNS`), merged into an existing summary by record id, rows sorted by record id, so that the
same records always give the same table.  :func:`leaderboard` is one DuckDB query over that file:
per (data set, ε, mechanism) the mean of q_F/q_F(V_k) over its trials with a 95% Student-t interval,
and for the **proven** releases a rank in which overlapping intervals tie (rank = 1 + the number of
proven mechanisms whose interval lies wholly above this one's).  Nominal (MCMC), peer, reference
(non-private) and refused rows are listed, never ranked.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from experiments.store.store import ResultStore

#: the summary's columns, in order (one row per release; a refusal is one row with its reason)
COLUMNS = (
    "record_id",
    "dataset",
    "family",
    "n",
    "d",
    "k",
    "mechanism",
    "tier",
    "plan",
    "epsilon_target",
    "delta_target",
    "trial",
    "status",
    "reason",
    "guarantee_status",
    "native_epsilon",
    "native_delta",
    "native_relation",
    "rho",
    "native_noise_scale",
    "certified_epsilon",
    "certified_delta",
    "certified_relation",
    "q_F_normalised",
    "subspace_error",
    "covariance_error",
    "seconds",
    "accuracy",
    "majority_accuracy",
    "svm_C",
    "accuracy_seconds",
    "scale",
)
_FLOAT = {
    "epsilon_target", "delta_target", "native_epsilon", "native_delta", "rho",
    "native_noise_scale", "certified_epsilon", "certified_delta", "q_F_normalised",
    "subspace_error", "covariance_error", "seconds", "accuracy", "majority_accuracy", "svm_C",
    "accuracy_seconds",
}  # fmt: skip
_INT = {"n", "d", "k"}


def records_frame(store_dir: Path) -> pd.DataFrame:
    """The benchmark records of the store at ``store_dir`` as the summary's rows."""
    rows = []
    for rec in ResultStore(store_dir).iter_records():
        if rec.get("experiment") != "benchmark":
            continue
        row = {c: rec.get(c) for c in COLUMNS}
        trial = rec["run_key"].get("trial")
        row["trial"] = trial if isinstance(trial, int) else -1  # -1: a refusal (no trial)
        rows.append(row)
    return _typed(pd.DataFrame(rows, columns=list(COLUMNS)))


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    for c in COLUMNS:
        if c not in df:  # a summary written before the column existed
            df[c] = None
    df = df[list(COLUMNS)]
    for c in COLUMNS:
        if c in _FLOAT:
            df[c] = pd.to_numeric(df[c].replace({"inf": np.inf}), errors="coerce").astype("float64")
        elif c in _INT or c == "trial":
            df[c] = df[c].astype("int64")
        else:
            df[c] = df[c].astype("object").where(df[c].notna(), None)
    return df.sort_values("record_id", kind="stable").reset_index(drop=True)


def read_summary(path: Path) -> pd.DataFrame:
    import pyarrow.parquet as pq

    return _typed(pq.read_table(path).to_pandas())


def write_summary(df: pd.DataFrame, path: Path) -> None:
    """Write the rows as Parquet (zstd), sorted by record id, with no pandas index metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(_typed(df), preserve_index=False)
    table = table.replace_schema_metadata(None)
    tmp = path.with_suffix(".parquet.part")
    pq.write_table(table, tmp, compression="zstd")
    tmp.replace(path)


class MixedScalesError(ValueError):
    """A summary would hold the releases of more than one scale: its cells would pool them."""


#: a cell of the benchmark: the releases pooled in one leaderboard row
CELL = ("dataset", "mechanism", "epsilon_target")


def scale_trials(scale: str) -> int:
    """The releases per cell of the benchmark's ``scale`` (``grids.<scale>.trials``)."""
    from omegaconf import OmegaConf

    from experiments.paths import config_dir

    grids = OmegaConf.load(config_dir() / "experiment" / "benchmark.yaml").experiment.grids
    return int(grids[scale].trials)


def refusals_stand(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` without the releases of a cell that also holds a refusal: a cell stopped after its
    first releases timed out (``grids.<scale>.stop_after_timeouts``) is its refusal alone."""
    if rows.empty or "status" not in rows:
        return rows
    refused = rows.loc[rows["status"] == "refused", list(CELL)]
    if refused.empty:
        return rows
    keys = pd.MultiIndex.from_frame(rows[list(CELL)])
    drop = keys.isin(pd.MultiIndex.from_frame(refused)) & (rows["status"] != "refused").to_numpy()
    return rows[~drop].reset_index(drop=True)


def complete_cells(rows: pd.DataFrame, trials: int) -> tuple[pd.DataFrame, list[tuple]]:
    """``rows`` without the cells that lack some of their ``trials`` releases (a run stopped
    mid-cell), and those cells' keys (:data:`CELL`).  A refused cell is one row of trial -1."""
    if rows.empty:
        return rows, []
    seen = rows.groupby(list(CELL), dropna=False)["trial"].agg(lambda t: frozenset(t))
    whole = {frozenset(range(trials)), frozenset({-1})}
    short = [key for key, got in seen.items() if got not in whole]
    if not short:
        return rows, []
    keys = pd.MultiIndex.from_frame(rows[list(CELL)])
    keep = ~keys.isin(pd.MultiIndex.from_tuples(short, names=list(CELL)))
    return rows[keep].reset_index(drop=True), sorted(short)


def compact(
    store_dir: Path,
    out: Path,
    *,
    scale: str | None = None,
    merge: bool = True,
    complete: bool = False,
) -> pd.DataFrame:
    """The store's benchmark records of one scale merged into the summary at ``out`` (rows keyed by
    record id; the store's row wins), written back; returns the merged rows.

    ``complete``: take only the store's cells that hold every trial of the scale
    (:func:`scale_trials`), so a run stopped mid-cell never puts a cell of fewer releases into a
    summary; the cells left out are in the returned frame's ``attrs["left_out"]``.

    A summary holds one scale: the leaderboard pools a cell's releases, so the quick scale's five
    trials and the full scale's twenty must not meet in one.  ``scale`` selects the store's records
    of that scale; without it the store must hold one scale.  A store of several scales without
    ``scale``, or a selection whose scale differs from the summary's, raises
    :class:`MixedScalesError` before anything is written (the full scale goes to a folder of its
    own, ``results/benchmark/full``)."""
    new = records_frame(store_dir)
    held = _scales(new)
    if scale is not None:
        if scale not in held:
            raise MixedScalesError(
                f"{store_dir} holds no benchmark records of the scale {scale} "
                f"(its scales: {', '.join(held) or 'none'})"
            )
        new = new[new["scale"] == scale].reset_index(drop=True)
    elif len(held) > 1:
        raise MixedScalesError(
            f"{store_dir} holds benchmark records of the scales {', '.join(held)}; "
            "choose one with --scale"
        )
    new = refusals_stand(new)
    left_out: list[tuple] = []
    if complete and held:
        new, left_out = complete_cells(new, scale_trials(scale or held[0]))
    if merge and out.exists():
        old = read_summary(out)
        old = old[~old["record_id"].isin(set(new["record_id"]))]
        new = refusals_stand(pd.concat([old, new], ignore_index=True)) if len(old) else new
    found = _scales(new)
    if len(found) > 1:
        raise MixedScalesError(
            f"{out} would hold releases of the scales {', '.join(found)}; a summary holds one "
            "scale (scripts/benchmark.py curate STORE --scale paper --out results/benchmark/full "
            "for the full one)"
        )
    write_summary(new, out)
    rows = read_summary(out)
    rows.attrs["left_out"] = left_out
    return rows


def _scales(rows: pd.DataFrame) -> list[str]:
    """The distinct scales of the rows, sorted."""
    return sorted(str(s) for s in rows["scale"].dropna().unique())


# ---------------------------------------------------------------------------------------------
# DuckDB
# ---------------------------------------------------------------------------------------------


def _ranked(value: str) -> str:
    """The end of a ranking query over its ``cells`` (one row per data set, ε and mechanism, with
    ``value``, its standard deviation ``sd`` and ``trials``): the 95% Student-t interval of ``value``
    (``lo``, ``hi``) and, for the proven rows, ``rank`` = 1 + the number of proven rows of the same
    data set and ε whose interval lies wholly above (overlapping intervals tie)."""
    return f"""), intervals AS (
    SELECT c.*, c.{value} - coalesce(t.t, 0) * c.sd / sqrt(c.trials) AS lo,
           c.{value} + coalesce(t.t, 0) * c.sd / sqrt(c.trials) AS hi
    FROM cells c LEFT JOIN t975 t ON t.df = c.trials - 1
)
SELECT a.*,
       CASE WHEN a.tier = 'proven' THEN 1 + (
           SELECT count(*) FROM intervals b
           WHERE b.tier = 'proven' AND b.dataset = a.dataset AND b.epsilon = a.epsilon
             AND b.lo > a.hi) END AS rank
FROM intervals a
ORDER BY a.dataset, a.epsilon, rank NULLS LAST, a.{value} DESC, a.mechanism
"""


#: the leaderboard: per (data set, ε, mechanism) mean utility with its 95% t interval; a rank for
#: the proven rows in which overlapping intervals tie.  ``t975`` holds Student's t quantile by df.
LEADERBOARD_SQL = """
WITH releases AS (
    SELECT * FROM read_parquet($summary) WHERE status <> 'refused'
), cells AS (
    SELECT dataset, any_value(n) AS n, any_value(d) AS d, any_value(k) AS k,
           epsilon_target AS epsilon, mechanism,
           -- a cell's tier is its weakest release's (a proven mechanism refused nowhere here)
           CASE WHEN count(DISTINCT tier) = 1 THEN any_value(tier) ELSE 'mixed' END AS tier,
           count(*) AS trials,
           avg(q_F_normalised) AS utility,
           coalesce(stddev_samp(q_F_normalised), 0) AS sd,
           avg(subspace_error) AS subspace_error,
           avg(covariance_error) AS covariance_error,
           median(seconds) AS seconds,
           avg(CASE WHEN status = 'bottom' THEN 1 ELSE 0 END) AS bottom_rate,
           any_value(certified_epsilon) AS certified_epsilon,
           max(certified_delta) AS certified_delta,
           any_value(native_relation) AS native_relation,
           avg(rho) AS rho,
           count(accuracy) AS accuracy_trials,
           avg(accuracy) AS accuracy
    FROM releases GROUP BY dataset, epsilon_target, mechanism
""" + _ranked("utility")

#: Table 2's classification accuracy (the releases that have one): per (data set, ε, mechanism) the
#: mean test accuracy with its 95% t interval, ranked among the proven rows as the leaderboard is
ACCURACY_SQL = """
WITH cells AS (
    SELECT dataset, any_value(n) AS n, any_value(d) AS d, any_value(k) AS k,
           epsilon_target AS epsilon, mechanism,
           CASE WHEN count(DISTINCT tier) = 1 THEN any_value(tier) ELSE 'mixed' END AS tier,
           count(*) AS trials,
           avg(accuracy) AS accuracy,
           coalesce(stddev_samp(accuracy), 0) AS sd,
           avg(majority_accuracy) AS majority_accuracy,
           avg(q_F_normalised) AS utility,
           avg(CASE WHEN status = 'bottom' THEN 1 ELSE 0 END) AS bottom_rate,
           median(accuracy_seconds) AS accuracy_seconds
    FROM read_parquet($summary) WHERE status <> 'refused' AND accuracy IS NOT NULL
    GROUP BY dataset, epsilon_target, mechanism
""" + _ranked("accuracy")

#: refusals, per (data set, ε, mechanism), with their reasons
REFUSALS_SQL = """
SELECT dataset, epsilon_target AS epsilon, mechanism, any_value(reason) AS reason
FROM read_parquet($summary) WHERE status = 'refused'
GROUP BY dataset, epsilon_target, mechanism ORDER BY dataset, epsilon, mechanism
"""


def connect():
    """A DuckDB connection with the table ``t975(df, t)`` (Student's t 0.975 quantile, df 1..1000)."""
    import duckdb
    from scipy.stats import t as student_t

    con = duckdb.connect()
    df = np.arange(1, 1001)
    con.register("t975_frame", pd.DataFrame({"df": df, "t": student_t.ppf(0.975, df)}))
    con.execute("CREATE TABLE t975 AS SELECT * FROM t975_frame")
    return con


def query(sql: str, summary: Path) -> pd.DataFrame:
    """``sql`` over the Parquet summary (``$summary`` names the file)."""
    con = connect()
    try:
        return con.execute(sql, {"summary": str(summary)}).df()
    finally:
        con.close()


def leaderboard(summary: Path) -> pd.DataFrame:
    """:data:`LEADERBOARD_SQL` over the summary at ``summary``."""
    return query(LEADERBOARD_SQL, summary)


def accuracy_leaderboard(summary: Path) -> pd.DataFrame:
    """:data:`ACCURACY_SQL` over the summary at ``summary`` (empty when no release has one)."""
    return query(ACCURACY_SQL, summary)


def refusals(summary: Path) -> pd.DataFrame:
    return query(REFUSALS_SQL, summary)
