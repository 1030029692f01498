"""The sweep every JMLR runner works through: the grid of sizes, restarts per mechanism, running
each missing point once (a stored record is skipped, so the same command resumes), the summary
of exactly this run's records, and the closing line of an experiment."""

from __future__ import annotations

import logging
import time
from typing import Iterable

import numpy as np
import pandas as pd
from omegaconf import DictConfig

from experiments.runs.evaluate import configured_mechanism, evaluate_mechanism
from experiments.runs.progress import progress_bar
from experiments.runs.show import emit
from experiments.store.records import results_root, run_key, write_record
from experiments.store.store import ResultStore, record_id

log = logging.getLogger(__name__)


def restarts_for(cfg: DictConfig) -> int:
    table = cfg.scale.restarts
    return int(table.get(cfg.mechanism.name, table.get("default")))


def n_grid(total: int, n_min: int, points: int) -> list[int]:
    """``points`` sizes on a log grid from ``min(n_min, total)`` to ``total`` (inclusive)."""
    if points <= 1:
        return [int(total)]
    lo = min(int(n_min), int(total))
    return sorted({int(round(v)) for v in np.geomspace(lo, total, int(points))})


def grouped_summary(df: pd.DataFrame, by: list[str], value: str = "q_F") -> pd.DataFrame:
    return df.groupby(by)[value].agg(["mean", "std", "count"]).reset_index()


def sweep_runs(
    cfg: DictConfig, dataset, points: Iterable[tuple], total: int, desc: str
) -> tuple[int, list[str]]:
    """Run each ``(key_fields, mechanism_stream, data_key, make_data)`` point whose record is not stored yet.

    ``key_fields`` go into the run key and the record; ``make_data()`` builds the
    :class:`PreparedData` (built once per ``data_key``).  Returns the number of records written and
    the record ids of every point (written now or stored before).
    """
    store = ResultStore(results_root(cfg))
    mech = None
    written, ids = 0, []
    data_key, data = object(), None
    with progress_bar(total=total, desc=desc, enable=cfg.progress) as bar:
        for key_fields, stream, point_data_key, make_data in points:
            key = run_key(cfg, **{k: v for k, v in key_fields.items() if k != "subset_stream"})
            ids.append(record_id(key))
            if store.has(key):
                bar.update(1)
                continue
            t0 = time.perf_counter()
            mech = mech or configured_mechanism(cfg)
            if point_data_key != data_key:
                data_key, data = point_data_key, make_data()
            fields = evaluate_mechanism(cfg, data, stream, mech)
            fields.update(key_fields)
            written += write_record(
                store, cfg, dataset, data.X, fields, time.perf_counter() - t0, key
            ).written
            bar.update(1)
    return written, ids


def summary_of_runs(
    cfg: DictConfig, ids: list[str], by: list[str], value: str = "q_F"
) -> pd.DataFrame:
    """Mean, standard deviation and count of ``value`` by ``by`` over exactly this run's records
    (``ids``), never over other runs of the same store (another ε, k, seed, calibration or
    protocol option)."""
    df = ResultStore(results_root(cfg)).load_ids(ids)
    return grouped_summary(df, by, value) if len(df) else df


def finish_experiment(cfg: DictConfig, name: str, written: int, summary: pd.DataFrame) -> dict:
    if not cfg.quiet and len(summary):
        print(summary.to_string(index=False))
    result = {
        "experiment": name,
        "dataset": cfg.dataset.name,
        "mechanism": cfg.mechanism.name,
        "records_written": int(written),
        "results_dir": str(results_root(cfg)),
    }
    emit(result, cfg)
    return result
