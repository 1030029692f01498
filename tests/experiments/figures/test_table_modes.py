"""Tables that hold exact statistics of the data (Table 1's q_F, PCA's q_F in the utility tables)
are written owner-only (0600) whatever the umask, as record files are (docs/running.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from experiments.figures import tables

SUMMARY = Path(__file__).resolve().parents[3] / "results" / "quick" / "summary" / "records.csv"


@pytest.mark.skipif(not SUMMARY.is_file(), reason="no committed quick summary")
def test_tables_are_owner_only(tmp_path):
    df = pd.read_csv(SUMMARY, low_memory=False)
    old = os.umask(0o022)
    try:
        for fn in (
            tables.table1,
            tables.table2,
            tables.footnote1,
            tables.utility_vs_n_table,
            tables.utility_vs_epsilon_table,
            tables.sampler_convergence_table,
        ):
            fn(df, tmp_path)
        written = sorted(tmp_path.glob("*.csv"))
    finally:
        os.umask(old)
    assert {"table1.csv", "utility_vs_n.csv", "utility_vs_epsilon.csv"} <= {p.name for p in written}
    for p in written:
        assert p.stat().st_mode & 0o777 == 0o600, p.name
