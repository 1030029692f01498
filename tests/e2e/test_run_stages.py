"""The time-by-stage table of a reproduction run (scripts/benchmarks/run_stages.py), on a store built
here with known file times."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "benchmarks" / "run_stages.py"


@pytest.fixture(scope="module")
def run_stages():
    spec = importlib.util.spec_from_file_location("run_stages", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(store: Path, name: str, minute: float, start: float, **fields) -> None:
    path = store / "records" / f"{name}.json"
    path.write_text(json.dumps(fields))
    t = start + 60.0 * minute
    os.utime(path, (t, t))


def test_stages_from_wall_time_and_file_times(tmp_path, run_stages):
    (tmp_path / "records").mkdir()
    # 2026-01-01T01:00:00Z is 1767229200; a run of 3,600 s ending then started at 1767225600
    (tmp_path / "wall_time_paper.txt").write_text(
        "reproduction (paper, JOBS=2, EXTRAS=0) finished in 3600 s (1 h 0 min) on 2 cores, "
        "2026-01-01T01:00:00Z\n"
    )
    start, end = run_stages.run_window(tmp_path, "paper")
    assert (start, end) == (1767225600.0, 1767229200.0)
    ppca = {"experiment": "utility_vs_n", "dataset": "census", "mechanism": "ppca"}
    _record(tmp_path, "a", 10.0, start, **ppca)
    _record(tmp_path, "b", 42.5, start, **ppca)
    fig2 = {"experiment": "gibbs_convergence", "dataset": "kddcup", "mechanism": "ppca"}
    _record(tmp_path, "c", 3.0, start, **fig2, sampler="reference")
    table = run_stages.stages(tmp_path, start)
    assert list(table.index) == [
        "gibbs_convergence kddcup ppca reference",
        "utility_vs_n census ppca",
    ]
    assert table.loc["utility_vs_n census ppca"].tolist() == [10.0, 42.5, 2]


def test_unfinished_run_is_refused(tmp_path, run_stages):
    with pytest.raises(SystemExit, match="no finished run"):
        run_stages.run_window(tmp_path, "paper")
