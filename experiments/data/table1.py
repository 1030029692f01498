"""Table 1 of Chaudhuri, Sarwate & Sinha (JMLR 2013): n, d, k, q_F(V_k) and q_F(V_k)/tr(A).

The paper labels the last column q_F(V_k)/‖A‖_F, but its values agree with q_F(V_k)/tr(A)
(the fraction of the energy captured): see docs/data.md. We report both.

Usage: ``python -m experiments.data.table1 [--data-dir DIR] [--csv out.csv]``.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import pandas as pd

from experiments.data.uci import DATASETS, PAPER_K, PAPER_TABLE1, DataUnavailableError, load_dataset
from mechanisms.metrics import optimal_q_F
from mechanisms.toolkit import second_moment

__all__ = [
    "PAPER_TABLE1",
    "PAPER_K",
    "COLUMNS",
    "DRAWN_COLUMNS",
    "DRAWN_IF_RECORDED",
    "table1",
    "table1_row",
]

COLUMNS = [
    "dataset",
    "split",
    "n",
    "d",
    "k",
    "q_F",
    "q_F_over_trace",
    "paper_n",
    "paper_d",
    "paper_q_F",
    "paper_ratio",
    "rel_diff_q_F",
    "q_F_over_frobenius",
    "note",
]
#: the columns of the drawn Table 1 (:func:`experiments.figures.tables.table1`): the paper's
#: quantities beside ours, without the Frobenius ratio and the note
DRAWN_COLUMNS = [c for c in COLUMNS if c not in ("q_F_over_frobenius", "note")]
#: drawn columns left out when the records do not hold them
DRAWN_IF_RECORDED = ("paper_ratio", "rel_diff_q_F")


def table1_row(ds, k: int | None = None) -> dict:
    """One Table 1 row for a loaded :class:`~experiments.data.uci.Dataset`."""
    k = PAPER_K[ds.name] if k is None else int(k)
    A = second_moment(ds.X)
    q = optimal_q_F(A, k)
    paper = PAPER_TABLE1.get(ds.name, {})
    note = ""
    if ds.name == "census" and ds.split != "learn":
        note = f"{ds.split} split (paper used the learn split)"
    return {
        "dataset": ds.name,
        "split": ds.split,
        "n": ds.X.shape[0],
        "d": ds.X.shape[1],
        "k": k,
        "q_F": q,
        "q_F_over_trace": q / float(np.trace(A)),
        "paper_n": paper.get("n"),
        "paper_d": paper.get("d"),
        "paper_q_F": paper.get("q_F"),
        "paper_ratio": paper.get("ratio"),
        "rel_diff_q_F": (q - paper["q_F"]) / paper["q_F"] if paper else np.nan,
        "q_F_over_frobenius": q / float(np.linalg.norm(A)),
        "note": note,
    }


def table1(
    data_dir=None,
    datasets=DATASETS,
    *,
    cache_dir=None,
    download: bool = False,
    split: dict[str, str] | None = None,
) -> pd.DataFrame:
    """Recompute Table 1. Data sets whose raw files are missing are skipped (listed in
    ``df.attrs["skipped"]`` and as a warning on stderr), never a crash."""
    rows, skipped = [], {}
    for name in datasets:
        try:
            ds = load_dataset(
                name,
                data_dir=data_dir,
                cache_dir=cache_dir,
                download=download,
                split=(split or {}).get(name),
            )
        except DataUnavailableError as exc:
            skipped[name] = str(exc).splitlines()[0]
            print(f"table1: skipping {name}: {skipped[name]}", file=sys.stderr)
            continue
        rows.append(table1_row(ds))
    df = pd.DataFrame(rows, columns=COLUMNS)
    for c in ("n", "d", "k", "paper_n", "paper_d"):
        df[c] = df[c].astype("int64")
    df.attrs["skipped"] = skipped
    return df


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=None, help="raw UCI files (default: $PRIVPCA_DATA_DIR)")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--download", action="store_true", help="download missing raw files")
    ap.add_argument("--csv", default=None, help="also write the table to this CSV file")
    args = ap.parse_args(argv)
    df = table1(args.data_dir, cache_dir=args.cache_dir, download=args.download)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(df.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    for name, why in df.attrs["skipped"].items():
        print(f"skipped {name}: {why}")
    if args.csv:
        os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)
        df.to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
