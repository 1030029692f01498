#!/usr/bin/env python
"""The benchmark's plan, curation and drawing (docs/benchmark.md).

    scripts/benchmark.py plan quick --dry-run          # jobs, estimated CPU-s, makespan on 2/16/64 workers
    scripts/benchmark.py plan paper --results STORE    # run the full scale on every core (Dask), resumable
    scripts/benchmark.py plan paper --engine slurm --cluster-jobs 4 --cores 16 ...
    scripts/benchmark.py curate STORE                  # merge STORE's records into results/benchmark/
    scripts/benchmark.py curate STORE --scale quick --out DIR   # one scale's records -> DIR
    scripts/benchmark.py draw                          # redraw results/benchmark/ from its summary alone
    scripts/benchmark.py costs paper                   # measure CPU-s per release -> experiments/bench/costs.json
    scripts/benchmark.py costs paper --epsilon-from results/benchmark/full/summary.parquet   # fit its ε exponents

``plan`` takes ``--mechanisms``, ``--datasets``, ``--epsilons`` (comma-separated) and ``--block``
(trials per job); its jobs are priced by the measured cost table, ``experiments/bench/costs.json``.
``curate`` compacts the store's benchmark records (of one scale: ``--scale`` chooses where the store
holds several) into ``<out>/summary.parquet`` (``--out``, default ``results/benchmark``; merged by
record id) and draws every table and figure from the summary; a cell that lacks some of the scale's
trials (a run stopped mid-cell) is left out, with one line naming it, unless ``--partial``.
"""

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from experiments.app.schema import register_schema  # noqa: E402

OUT = REPO / "results" / "benchmark"


def _plan(a) -> int:
    from experiments.plan.cli import compose_payloads, report_outcome
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
        from experiments.bench.costs import breakdown

        print(breakdown(jobs))
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
    return report_outcome(outcome, len(jobs), f"[benchmark] {a.scale}")


def _curate(a) -> int:
    from experiments.bench.summary import MixedScalesError, compact

    try:
        rows = compact(
            Path(a.store), a.out / "summary.parquet", scale=a.scale, complete=not a.partial
        )
    except MixedScalesError as exc:
        print(f"scripts/benchmark.py curate: error: {exc}", file=sys.stderr)
        return 2
    short = rows.attrs.get("left_out", [])
    if short:
        names = ", ".join("/".join(str(x) for x in key) for key in short[:3])
        print(f"left out {len(short)} cell(s) that lack some of their trials (a run stopped "
              f"mid-cell; resume it, or --partial): {names}{', ...' if len(short) > 3 else ''}",
              file=sys.stderr)  # fmt: skip
    print(f"{len(rows)} releases in {a.out / 'summary.parquet'}")
    return _draw(a)


def _job_startup(repeats: int = 3) -> float:
    """Median CPU-s (with its children) of a benchmark process that makes no release."""
    import os
    import statistics
    import subprocess
    import tempfile

    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = os.times()
            subprocess.run(
                [sys.executable, str(REPO / "run.py"), "experiment=benchmark", "quiet=true",
                 "experiment.mechanisms=[random]", "experiment.datasets=[gaussian10]",
                 "experiment.epsilons=[1.0]", "experiment.trial_range=[0,0]",
                 f"results_dir={tmp}"],
                check=True, capture_output=True, cwd=REPO,
            )  # fmt: skip
            t1 = os.times()
        times.append(
            (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
        )
    return statistics.median(times)


def _costs(a) -> int:
    """Measure the cost table (experiments/bench/costs.py), one data set at a time, written after
    each (a data set already in the file is kept: delete the file to measure afresh)."""
    from omegaconf import OmegaConf

    from experiments.bench import costs
    from experiments.bench.datasets import expand
    from experiments.bench.runner import _options

    if a.epsilon_from:
        return _epsilon_exponents(a)
    conf = OmegaConf.load(REPO / "conf" / "experiment" / "benchmark.yaml").experiment
    g = conf.grids[a.scale]
    chains = int(OmegaConf.load(REPO / "conf" / "scale" / f"{a.scale}.yaml").ppca_chains)
    mechs = a.mechanisms.split(",") if a.mechanisms else list(g.mechanisms)
    names = a.datasets.split(",") if a.datasets else [x for x in g.datasets if x != "spiked"]
    cells = expand(names, (), ())
    if not a.datasets:  # the spiked model at the fit's points
        cells += expand(["spiked"], tuple(a.spiked_dims), tuple(a.spiked_ns))
    limits = {m: float(v) for m, v in (g.get("limits") or {}).items()}
    table = costs.load(a.out) if a.out.exists() else {}
    table.setdefault("cells", {})
    table.update(
        command=f"scripts/benchmark.py costs {a.scale}",
        scale=a.scale,
        epsilon=costs.TIMING_EPSILON,
        delta=float(conf.delta),
        ppca_iterations=int(g.ppca_iterations),
        ppca_chains=chains,
        unit="CPU seconds (one BLAS thread): fixed per job, release per trial",
    )
    if "job_startup" not in table or (a.again and not a.mechanisms):
        table["job_startup"] = _job_startup()
        print(f"job start-up: {table['job_startup']:.2f} CPU-s")
    for cell in cells:
        if cell.name in table["cells"] and not (a.again or a.mechanisms):
            continue
        got = costs.measure(
            mechs, [cell], delta=float(conf.delta), ppca_iterations=int(g.ppca_iterations),
            ppca_chains=chains, limits=limits, repeats=a.repeats,
            options=_options(g.get("options")),
        )  # fmt: skip
        for name, row in got["cells"].items():  # re-measured mechanisms replace their own entries
            old = table["cells"].get(name, {})
            if a.mechanisms and "release" in old and "release" in row:
                row["release"] = {**old["release"], **row["release"]}
            table["cells"][name] = row
        table["spiked_fits"] = costs.spiked_fits(table["cells"])
        costs.write(table, a.out)
    total = sum(r.get("fixed", 0) for r in table["cells"].values())
    print(f"{len(table['cells'])} data sets in {a.out} ({total:,.0f} CPU-s of fixed costs)")
    return 0


def _epsilon_exponents(a) -> int:
    """``costs --epsilon-from SUMMARY``: fit each mechanism's ε exponent to the release seconds of a
    benchmark summary and add them to the cost table; nothing is timed."""
    import pandas as pd

    from experiments.bench import costs

    if not a.out.exists():
        print(f"Error: no cost table at {a.out}: measure it first (scripts/benchmark.py costs "
              "SCALE)", file=sys.stderr)  # fmt: skip
        return 2
    rows = pd.read_parquet(a.epsilon_from, columns=["dataset", "mechanism", "epsilon_target",
                                                    "seconds"])  # fmt: skip
    table = costs.load(a.out)
    table["epsilon_exponents"] = costs.fit_epsilon_exponents(rows)
    source = Path(a.epsilon_from).resolve()
    name = source.relative_to(REPO) if source.is_relative_to(REPO) else "SUMMARY"
    table["epsilon_exponents_command"] = (
        f"scripts/benchmark.py costs {a.scale} --epsilon-from {name}"
    )
    costs.write(table, a.out)
    for m, e in sorted(table["epsilon_exponents"].items()):
        print(f"{m}: seconds ∝ ε^{e['exponent']:.3f} ({e['datasets']} data sets)")
    return 0


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
    cu.add_argument("--scale", default=None,
                    help="the store's records of this scale (smoke, quick or paper); needed when "
                         "the store holds several")  # fmt: skip
    cu.add_argument("--out", type=Path, default=OUT)
    cu.add_argument("--partial", action="store_true",
                    help="also cells that lack some of the scale's trials (default: left out)")  # fmt: skip
    dr = sub.add_parser("draw", help="redraw results/benchmark from its summary alone")
    dr.add_argument("--out", type=Path, default=OUT)
    co = sub.add_parser("costs", help="measure CPU-s per release -> experiments/bench/costs.json")
    co.add_argument("scale", help="the grid whose mechanisms, data sets and limits are timed")
    co.add_argument("--mechanisms", default=None)
    co.add_argument("--datasets", default=None, help="default: the grid's, and the spiked points")
    co.add_argument("--spiked-dims", type=int, nargs="+", default=[50, 200, 1000])
    co.add_argument("--spiked-ns", type=int, nargs="+", default=[1000, 5000])
    co.add_argument("--repeats", type=int, default=3)
    co.add_argument("--again", action="store_true", help="re-measure data sets already in the file")
    co.add_argument("--epsilon-from", default=None, metavar="SUMMARY",
                    help="only fit each mechanism's ε exponent to this benchmark summary's release "
                         "seconds (results/benchmark/full/summary.parquet) and add it to the table")  # fmt: skip
    co.add_argument("--out", type=Path, default=REPO / "experiments" / "bench" / "costs.json")
    a = p.parse_args(argv)
    return {"plan": _plan, "curate": _curate, "draw": _draw, "costs": _costs}[a.command](a)


if __name__ == "__main__":
    sys.exit(main())
