"""Table 1: unit tests on fixtures, and the real-data reproduction (marker ``realdata``).

The real-data test needs ``PRIVPCA_DATA_DIR`` (raw UCI files). It is SKIPPED when the variable
is unset and ``CI`` is not "true"; with ``CI=true`` missing data make it FAIL. Data sets with no
public copy (localization, see MANIFEST) are only required in CI if listed in
``PRIVPCA_REQUIRED_DATASETS`` (comma separated; default "kddcup,census,insurance").
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from experiments.data import uci as D
from experiments.data.table1 import COLUMNS, PAPER_K, PAPER_TABLE1, table1

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "uci"
REQUIRED = [
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
]


def test_table1_on_fixtures(tmp_path, monkeypatch):
    monkeypatch.setattr(D.sources, "RAW_DIR", tmp_path / "raw_empty")
    df = table1(FIXTURES, cache_dir=tmp_path)
    assert list(df.columns[: len(REQUIRED)]) == REQUIRED and list(df.columns) == COLUMNS
    assert list(df["dataset"]) == list(D.DATASETS)
    assert list(df["k"]) == [PAPER_K[n] for n in D.DATASETS]
    assert list(df["paper_n"]) == [PAPER_TABLE1[n]["n"] for n in D.DATASETS]
    assert np.all((df["q_F"] > 0) & (df["q_F_over_trace"] <= 1 + 1e-12))
    assert df.attrs["skipped"] == {}


def test_table1_skips_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(D.sources, "RAW_DIR", tmp_path / "raw_empty")
    monkeypatch.delenv("PRIVPCA_DATA_DIR", raising=False)
    ddir = tmp_path / "d"
    (ddir / "kddcup99").mkdir(parents=True)
    src = FIXTURES / "kddcup99" / "kddcup.data_10_percent.gz"
    (ddir / "kddcup99" / src.name).write_bytes(src.read_bytes())
    df = table1(ddir, cache_dir=tmp_path)
    assert list(df["dataset"]) == ["kddcup"]
    assert set(df.attrs["skipped"]) == {"census", "localization", "insurance"}
    assert "ConfLongDemo_JSI.txt" in df.attrs["skipped"]["localization"]


# ------------------------------------------------------------------ real data (Table 1)

#: Tolerances: q_F within 2% relative of the paper, except census on the TEST split (the paper
#: used the learn split, which is not available here): 3%, see docs/data.md.
REL_TOL = {"kddcup": 0.02, "census": 0.02, "localization": 0.02, "insurance": 0.02}
CENSUS_TEST = {"n": 99_762, "d": 512, "rel_tol": 0.03}


def _real_data_dir() -> Path:
    ci = os.environ.get("CI", "").lower() == "true"
    value = os.environ.get("PRIVPCA_DATA_DIR", "").strip()
    if not value:
        if ci:
            pytest.fail(
                "CI=true but PRIVPCA_DATA_DIR is not set: the real-data Table 1 test must run in CI"
            )
        pytest.skip("PRIVPCA_DATA_DIR not set (real UCI files needed)")
    return Path(value)


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.parametrize("name", D.DATASETS)
def test_table1_real_data(name):
    ddir = _real_data_dir()
    ci = os.environ.get("CI", "").lower() == "true"
    required = os.environ.get("PRIVPCA_REQUIRED_DATASETS", "kddcup,census,insurance").split(",")
    try:
        df = table1(ddir, datasets=(name,))  # default cache dir: fast on re-runs
    except D.DataCorruptError as exc:
        pytest.fail(f"raw data for {name} unreadable: {exc}")
    if df.empty:
        why = df.attrs["skipped"].get(name, "")
        if ci and name in required:
            pytest.fail(f"CI=true and raw data for {name} missing: {why}")
        pytest.skip(f"{name}: {why}")
    row = df.iloc[0]
    paper = PAPER_TABLE1[name]
    n, d, tol = paper["n"], paper["d"], REL_TOL[name]
    if name == "census" and row["split"] == "test":
        n, d, tol = CENSUS_TEST["n"], CENSUS_TEST["d"], CENSUS_TEST["rel_tol"]
    assert row["n"] == n
    assert row["d"] == d
    assert abs(row["q_F"] - paper["q_F"]) <= tol * paper["q_F"], row.to_dict()
    assert abs(row["q_F_over_trace"] - paper["ratio"]) <= 0.01, row.to_dict()
