"""The memory of loading the full scale's benchmark summary (experiments/bench/footprint.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.bench import footprint
from experiments.bench.summary import read_summary, write_summary

REPO = Path(__file__).resolve().parents[3]
#: the requirement: the full scale's summary loads and is queried in under 1 GB
LIMIT_KIB = 2**20


@pytest.mark.slow
def test_the_full_scales_summary_loads_and_is_queried_in_under_1_gb(tmp_path):
    """A synthetic summary with one row per release of the full scale's plan (39,600 rows: the
    committed quick rows of each mechanism tiled, the keys rewritten to the plan's, so the
    leaderboard has the plan's 1,980 cells) is read, queried (leaderboard, accuracy, refusals) and
    tabulated in a fresh interpreter, whose peak RSS (VmHWM) must stay under 1 GiB.

    Measured: about 370 MiB, of which about 235 MiB is the imports (pandas, pyarrow, DuckDB, SciPy,
    matplotlib) and 135 MiB the summary; the rows of ten full scales took about 940 MiB.  So the test
    fails when the cost per row grows about fivefold (a summary kept as records or with arrays in
    its rows, a query that joins the releases with one another instead of the cells) or the scale's
    plan grows about tenfold, not on noise: the inputs are fixed and the measure is memory, not time
    (DuckDB's per-thread buffers on a machine with many cores add megabytes, not hundreds of them).
    """
    from omegaconf import OmegaConf

    from experiments.plan.plan import build_benchmark_plan

    grid = OmegaConf.load(REPO / "conf" / "experiment" / "benchmark.yaml").experiment.grids.paper
    jobs = build_benchmark_plan("paper")
    releases = footprint.plan_releases(jobs, int(grid.accuracy_trials))
    assert len(releases) == sum(int(j.units) for j in jobs)
    template = read_summary(REPO / "results" / "benchmark" / "summary.parquet")
    path = tmp_path / "summary.parquet"
    write_summary(footprint.synthetic_summary(template, releases, "paper"), path)

    got = footprint.load_peak_rss(path, "query")

    assert got["rows"] == len(releases)
    assert got["leaderboard_rows"] == releases.groupby(["mechanism", "dataset", "epsilon"]).ngroups
    assert (
        got["accuracy_rows"]
        == releases[releases.classified].groupby(["mechanism", "dataset", "epsilon"]).ngroups
    )
    assert got["peak_rss_kib"] < LIMIT_KIB, f"{got['peak_rss_kib'] / 1024:.0f} MiB"
