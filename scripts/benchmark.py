#!/usr/bin/env python
"""The benchmark's plan, curation and drawing (docs/benchmark.md).

    scripts/benchmark.py plan quick --dry-run          # jobs, estimated CPU-s, makespan on 2/16/64 workers
    scripts/benchmark.py plan paper --results STORE    # run the full scale on every core (Dask), resumable
    scripts/benchmark.py plan paper --engine slurm --cluster-jobs 4 --cores 16 ...
    scripts/benchmark.py curate STORE                  # merge STORE's records into results/benchmark/
    scripts/benchmark.py draw                          # redraw results/benchmark/ from its summary alone

``plan`` takes ``--mechanisms``, ``--datasets``, ``--epsilons`` (comma-separated) and ``--block``
(trials per job).  ``curate`` compacts the store's benchmark records into
``results/benchmark/summary.parquet`` (merged by record id), writes the per-mechanism costs
(``results/benchmark/costs.json``) and draws every table and figure from the summary.
"""

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from experiments.app.schema import register_schema  # noqa: E402

OUT = REPO / "results" / "benchmark"


def _plan(a) -> int:
    from experiments.plan.cli import compose_payloads
    from experiments.plan.engine import jobqueue_cluster, local_cluster, run_jobs
    from experiments.plan.plan import build_benchmark_plan, describe

    def split(text):
        return tuple(x for x in text.split(",") if x) if text else None

    eps = split(a.epsilons)
    jobs = build_benchmark_plan(
        a.scale,
        mechanisms=split(a.mechanisms),
        datasets=split(a.datasets),
        epsilons=None if eps is None else tuple(float(e) for e in eps),
        block=a.block,
    )
    if a.dry_run:
        print(f"benchmark plan of scale {a.scale}")
        print(describe(jobs))
        return 0
    factory = None
    if a.engine != "local":
        kwargs = {k: v for k, v in (("queue", a.queue), ("account", a.account)) if v}

        def factory():
            return jobqueue_cluster(a.engine, jobs=a.cluster_jobs, cores=a.cores, memory=a.memory,
                                    walltime=a.walltime, **kwargs)  # fmt: skip
    elif a.workers:

        def factory():
            return local_cluster(a.workers)

    from experiments.paths import results_root

    results = results_root(a.results)
    payloads = compose_payloads(jobs, results, register_schema)
    print(f"[benchmark] {a.scale}: {len(jobs)} jobs", file=sys.stderr)
    outcome = run_jobs(jobs, payloads, results, cluster_factory=factory)
    for name, why in outcome.failed:
        print(f"Error: job {name} failed: {why}", file=sys.stderr)
    print(
        f"[benchmark] {len(outcome.done)} jobs run, {outcome.skipped} already done, "
        f"{outcome.wall_s:,.0f} s",
        file=sys.stderr,
    )
    return 130 if outcome.interrupted else (2 if outcome.failed else 0)


def _curate(a) -> int:
    import json

    from experiments.bench.summary import compact
    from experiments.plan.plan import benchmark_costs_from_summary

    rows = compact(Path(a.store), a.out / "summary.parquet")
    costs = {
        "command": "scripts/benchmark.py curate STORE",
        "model": "cost = fixed + per_unit x trials x n x d / 1e6 (experiments/plan/plan.py)",
        "kinds": benchmark_costs_from_summary(rows),
    }
    (a.out / "costs.json").write_text(json.dumps(costs, indent=1, sort_keys=True) + "\n")
    print(f"{len(rows)} releases in {a.out / 'summary.parquet'}")
    return _draw(a)


def _draw(a) -> int:
    from experiments.bench.figures import draw

    for p in draw(a.out / "summary.parquet", a.out):
        print(p.relative_to(REPO) if p.is_relative_to(REPO) else p)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="scripts/benchmark.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    pl = sub.add_parser("plan", help="the benchmark as jobs on Dask")
    pl.add_argument("scale", help="smoke, quick or paper (the full scale)")
    pl.add_argument("--dry-run", action="store_true")
    pl.add_argument("--results", default="results")
    pl.add_argument("--mechanisms", default=None)
    pl.add_argument("--datasets", default=None)
    pl.add_argument("--epsilons", default=None)
    pl.add_argument("--block", type=int, default=None, help="trials per job (default: all)")
    pl.add_argument("--workers", type=int, default=None)
    pl.add_argument("--engine", choices=("local", "slurm", "pbs", "sge"), default="local")
    pl.add_argument("--cluster-jobs", type=int, default=1)
    pl.add_argument("--cores", type=int, default=16)
    pl.add_argument("--memory", default="64GB")
    pl.add_argument("--walltime", default="02:00:00")
    pl.add_argument("--queue", default=None)
    pl.add_argument("--account", default=None)
    cu = sub.add_parser("curate", help="merge a store into results/benchmark and redraw")
    cu.add_argument("store")
    cu.add_argument("--out", type=Path, default=OUT)
    dr = sub.add_parser("draw", help="redraw results/benchmark from its summary alone")
    dr.add_argument("--out", type=Path, default=OUT)
    a = p.parse_args(argv)
    return {"plan": _plan, "curate": _curate, "draw": _draw}[a.command](a)


if __name__ == "__main__":
    sys.exit(main())
