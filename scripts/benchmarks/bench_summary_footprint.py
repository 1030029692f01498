#!/usr/bin/env python
"""Measure the memory of loading a scale's benchmark summary and the size of its store of records.

Without running the scale (``paper``, the full one, by default):

* its releases, counted from its plan (``experiments.plan.plan.build_benchmark_plan``: each job's
  ``experiment.trial_range``; the Table 2 cells' classified trials from the grid's
  ``accuracy_trials``): the rows of its summary, at most (a refused cell leaves one row);
* a synthetic summary of exactly that many rows with the committed summary's schema
  (``experiments.bench.footprint.synthetic_summary``: the committed rows of each mechanism tiled, the
  key columns rewritten to the plan's), written as the project writes one; its size, and the peak
  RSS (``ru_maxrss``) of a fresh interpreter that loads it and runs the drawing's DuckDB queries
  (``--draw``: draws every figure too), against one that only imports the same modules;
* the bytes per record of a real store: the smoke scale, plus one release of every other non-peer
  mechanism of the full grid on digits and ``spiked-d50-n200-k1`` at ε = 1, run into a temporary
  store (about 15 s; ``--store STORE`` measures a store instead), per mechanism, extrapolated to the
  scale's releases (each mechanism at its median, and every release at the largest median).

    PRIVPCA_DATA_DIR=... .venv/bin/python scripts/benchmarks/bench_summary_footprint.py   # [--draw] [--scale quick]

Last stdout line: one JSON object with every number.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from experiments.bench import footprint  # noqa: E402
from experiments.bench.summary import read_summary, write_summary  # noqa: E402

SUMMARY = REPO / "results" / "benchmark" / "summary.parquet"
#: the full grid's mechanisms that the smoke grid lacks, but for the peers (tens of seconds a release)
OTHERS = ("analyze_gauss,ppca,amin_cov,noisy_power,streaming_power,online_pca,subspace_exact,"
          "subspace_approx,separate_cov,adaptive_cov,lap_cov,separate_lap_cov,coinpress_cov,dp_pca,"
          "k_dp_pca")  # fmt: skip


def run_store(store: Path) -> None:
    """The smoke scale and one release of each of :data:`OTHERS`, into ``store``."""
    base = [sys.executable, str(REPO / "run.py"), "experiment=benchmark", "scale=smoke",
            f"results_dir={store}", "quiet=true"]  # fmt: skip
    subprocess.run(base, check=True, capture_output=True, cwd=REPO)
    more = [f"experiment.mechanisms=[{OTHERS}]", "experiment.datasets=[digits,spiked-d50-n200-k1]",
            "experiment.epsilons=[1.0]", "experiment.trials=1"]  # fmt: skip
    subprocess.run(base + more, check=True, capture_output=True, cwd=REPO)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", default="paper")
    p.add_argument(
        "--template", type=Path, default=SUMMARY, help="the summary whose rows are tiled"
    )
    p.add_argument("--store", type=Path, default=None, help="measure this store's records")
    p.add_argument("--draw", action="store_true", help="also draw every figure (seconds)")
    p.add_argument("--times", type=int, default=1,
                   help="the summary's rows times this (each cell's trials repeated): the headroom")  # fmt: skip
    a = p.parse_args(argv)

    from omegaconf import OmegaConf

    from experiments.plan.plan import build_benchmark_plan

    grid = OmegaConf.load(REPO / "conf" / "experiment" / "benchmark.yaml").experiment.grids[a.scale]
    jobs = build_benchmark_plan(a.scale)
    releases = footprint.plan_releases(jobs, int(grid.get("accuracy_trials", 0) or 0))
    cells = releases.groupby(["mechanism", "dataset", "epsilon"]).ngroups
    print(f"{a.scale}: {len(jobs):,} jobs, {cells:,} (mechanism, data set, ε) cells, "
          f"{len(releases):,} releases ({int(releases.classified.sum()):,} classified)")  # fmt: skip
    result = {"scale": a.scale, "jobs": len(jobs), "cells": cells, "releases": len(releases),
              "classified": int(releases.classified.sum())}  # fmt: skip

    rows = footprint.repeat_trials(releases, a.times)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "summary.parquet"
        write_summary(footprint.synthetic_summary(read_summary(a.template), rows, a.scale), path)
        size, template = path.stat().st_size, a.template.stat().st_size
        per_row = template / len(read_summary(a.template))
        result.update(
            summary_rows=len(rows), parquet_bytes=size, template_bytes_per_row=round(per_row, 1)
        )
        print(f"synthetic summary: {len(rows):,} rows, {size:,} bytes of Parquet "
              f"({size / len(rows):.1f} a row; the template's {per_row:.1f} a row, "
              f"{template:,} bytes)")  # fmt: skip
        runs = [("imports", path, "imports"), ("query", path, "query")]
        runs += [("draw", path, "draw")] if a.draw else []
        runs += [("template_query", a.template, "query")]  # the committed summary, for contrast
        for name, summary, mode in runs:
            got = footprint.load_peak_rss(summary, mode)
            result[f"peak_rss_kib_{name}"] = got["peak_rss_kib"]
            result[f"seconds_{name}"] = round(got["seconds"], 2)
            what = ", ".join(f"{got[k]:,} {k.replace('_', ' ')}"
                             for k in ("rows", "leaderboard_rows", "accuracy_rows", "files") if k in got)  # fmt: skip
            print(f"peak RSS, {name:>14}: {got['peak_rss_kib'] / 1024:6.1f} MiB "
                  f"({got['seconds']:.1f} s after the imports; {what or 'nothing read'}; "
                  f"DuckDB threads {got['duckdb_threads']})")  # fmt: skip

    with tempfile.TemporaryDirectory() as tmp:
        store = a.store
        if store is None:
            store = Path(tmp)
            run_store(store)
        sizes = footprint.store_sizes(store)
    per = sizes.groupby("mechanism").bytes.agg(["size", "median", "max"])
    print(f"store: {len(sizes)} records, {int(sizes.bytes.sum()):,} bytes "
          f"({int(sizes.allocated.sum()):,} allocated); bytes per record:")  # fmt: skip
    for m, r in per.iterrows():
        print(
            f"  {m:<18} {int(r['size']):3d} records, median {r['median']:7,.0f}, max {r['max']:7,.0f}"
        )
    est = footprint.extrapolate(sizes, releases)
    print(f"extrapolated to {est['releases']:,} releases: {est['bytes_by_mechanism'] / 1e6:,.0f} MB "
          f"({est['allocated_by_mechanism'] / 1e6:,.0f} MB allocated), each mechanism at its median; "
          f"upper estimate {est['bytes_upper'] / 1e6:,.0f} MB "
          f"({est['allocated_upper'] / 1e6:,.0f} MB allocated), every release at "
          f"{est['largest_mechanism']}'s median; largest record {est['max_bytes']:,} bytes; "
          f"not measured (counted at the largest median): "
          f"{', '.join(est['unmeasured']) or 'none'}")  # fmt: skip
    result.update(store_records=len(sizes), store_bytes=int(sizes.bytes.sum()),
                  per_mechanism_median_bytes=per["median"].to_dict(), **est)  # fmt: skip
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
