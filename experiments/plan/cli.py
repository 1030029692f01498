"""The command line of the plan (``scripts/plan.py``): print it, run it, or measure its costs.

    scripts/plan.py quick --dry-run            # the jobs by stage, CPU-s, makespan on 2/16/64 workers
    scripts/plan.py quick                      # run it on every core of this machine (Dask LocalCluster)
    scripts/plan.py paper --engine slurm --cluster-jobs 4 --cores 16 --memory 64GB --walltime 02:00:00
    scripts/plan.py --measure-costs STORE      # per-kind costs from STORE's finished jobs -> costs.json
    scripts/plan.py audit --dry-run            # the audit table of docs/audit.md: one job per run
    scripts/plan.py audit --results STORE      # run it, resumably; then draw STORE's table:
    scripts/plan.py audit --curate STORE --out STORE/audit
    scripts/plan.py audit --curate STORE       # merge STORE's rows into results/audit/ and redraw it
    scripts/plan.py audit --draw               # redraw results/audit/ from its summary alone

Exit status: 0 when every job is done, 2 when a job failed (one line each, after the others
finished), 130 on Ctrl-C (one line; the same command resumes).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Callable, Iterator

from experiments.paths import results_root
from experiments.plan.audit_plan import (
    AUDIT_COSTS_FILE,
    AUDIT_OUT,
    AUDIT_PLAN,
    build_audit_plan,
    curate_table,
)
from experiments.plan.engine import (
    EarlyCluster,
    done_dir,
    jobqueue_cluster,
    local_cluster,
    run_jobs,
)
from experiments.plan.plan import (
    COSTS_FILE,
    DRAW_KIND,
    UCI,
    build_plan,
    costs_from_timings,
    describe,
    load_costs,
    priced_by,
    scale_config,
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="scripts/plan.py", description=__doc__.split("\n\n")[0])
    p.add_argument("scale", nargs="?", default="quick",
                   help="smoke, quick or paper (conf/scale/), or audit (the audit table's runs)")  # fmt: skip
    p.add_argument(
        "--dry-run", action="store_true", help="print the plan and its makespans; run nothing"
    )
    p.add_argument(
        "--results", default=os.environ.get("RESULTS_DIR", "results"), help="the results store"
    )
    p.add_argument(
        "--datasets", default=os.environ.get("DATASETS", ",".join(UCI)), help="UCI data sets"
    )
    p.add_argument("--extras", type=int, choices=(0, 1), default=_env_int("EXTRAS"),
                   help="1: also the experiments beyond the paper (default: 1 but at paper scale)")  # fmt: skip
    p.add_argument("--gibbs-samplers", default=os.environ.get("GIBBS_SAMPLERS", "gibbs,reference"))
    p.add_argument("--ppca-sweeps", type=int, default=_env_int("PPCA_SWEEPS"))
    p.add_argument("--workers", type=int, default=_env_int("JOBS"),
                   help="worker processes of the local engine (default: one per core)")  # fmt: skip
    p.add_argument("--engine", choices=("local", "slurm", "pbs", "sge"), default="local")
    p.add_argument("--cluster-jobs", type=int, default=1, help="batch jobs of a cluster engine")
    p.add_argument("--cores", type=int, default=16, help="worker processes per batch job")
    p.add_argument("--memory", default="64GB", help="memory per batch job")
    p.add_argument("--walltime", default="02:00:00", help="wall time per batch job")
    p.add_argument("--queue", default=None, help="the batch queue (partition)")
    p.add_argument("--account", default=None, help="the batch account")
    p.add_argument("--print-job-script", action="store_true",
                   help="print a cluster engine's batch script and exit")  # fmt: skip
    p.add_argument("--measure-costs", metavar="STORE", default=None,
                   help="write the per-kind costs of STORE's finished jobs to the costs table")  # fmt: skip
    p.add_argument("--costs-out", default=str(COSTS_FILE))
    p.add_argument("--priced-by", metavar="STORE", default=None,
                   help="--dry-run: price each job by the CPU-s its run took in STORE "
                        "(jobs STORE has not run keep the cost model's estimate)")  # fmt: skip
    p.add_argument("--curate", metavar="STORE", default=None,
                   help="audit: merge STORE's records of the table into --out and redraw it")  # fmt: skip
    p.add_argument("--draw", action="store_true",
                   help="audit: redraw --out's table from its summary alone")  # fmt: skip
    p.add_argument("--out", type=Path, default=AUDIT_OUT,
                   help="audit: the summary folder of --curate and --draw (default results/audit)")  # fmt: skip
    return p


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else None


#: the override that selects a job's part of its runner (``experiment.only={n_index: 0, ...}``)
_SELECTOR = "experiment.only="


def split_selector(overrides) -> tuple[tuple[str, ...], dict | None]:
    """A job's overrides without its ``experiment.only`` selector, and the selector's value (None
    when it has none), parsed as Hydra parses it."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    base = tuple(o for o in overrides if not o.startswith(_SELECTOR))
    chosen = [o for o in overrides if o.startswith(_SELECTOR)]
    if not chosen:
        return base, None
    return base, OverridesParser.create().parse_override(chosen[-1]).value()


@contextlib.contextmanager
def job_composer(results: Path, register: Callable[[], None]) -> Iterator[Callable]:
    """A function giving a job's payload, composed when asked: its config with plain values (the
    store ``results``, quiet, no progress bars, one process), or for a drawing job where to draw.

    Hydra composes each distinct set of overrides but the selector once (about 0.1 s a
    composition, most of a plan's start-up when done per job); a job's payload is that
    composition with its own ``experiment.only`` set, which is what composing the job's own
    overrides gives (``tests/experiments/plan/test_plan_cli.py`` compares the two for every job).
    Asked job by job as the engine submits them, the longest jobs start while the rest are
    composed.
    """
    from hydra import compose, initialize_config_dir

    from experiments.figures.cli import default_out
    from experiments.paths import config_dir

    register()
    extra = [f"results_dir={results}", "quiet=true", "progress=false", "workers=1"]
    composed: dict[tuple[str, ...], dict] = {}

    def payload_of(job) -> dict:
        if job.kind == DRAW_KIND:  # no run.py config: where to draw and which scale's records
            scale = next(o.split("=", 1)[1] for o in job.overrides if o.startswith("scale="))
            return {"out": str(default_out(results, scale)), "scale": scale}
        base, selector = split_selector(job.overrides)
        if base not in composed:
            cfg = compose(config_name="config", overrides=[*base, *extra])
            composed[base] = portable_config(cfg)
        payload = copy.deepcopy(composed[base])
        if selector is not None:
            payload["experiment"]["only"] = selector
        return payload

    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        yield payload_of


def compose_payloads(jobs, results: Path, register: Callable[[], None]) -> dict:
    """Every job's payload (:func:`job_composer`), by job name."""
    with job_composer(results, register) as payload_of:
        return {job.name: payload_of(job) for job in jobs}


#: an interpolation that calls a resolver (``${oc.env:...}``, ``${privpca.results_root:...}``)
_RESOLVER_CALL = re.compile(r"\$\{[\w.]+:")


def portable_config(cfg) -> dict:
    """``cfg`` as plain values that a worker turns back into the same config: the interpolations
    between its own keys stay interpolations (``mechanism.fn.epsilon: ${epsilon}``), so a runner that
    sets a key (Figure 5 sets ``epsilon`` for each point of its grid) changes what refers to it, as
    under ``run.py``; those that call a resolver (an environment variable, the results root) are
    resolved here, in the process that composed it, where their environment is."""
    from omegaconf import OmegaConf

    raw = OmegaConf.to_container(cfg, resolve=False)

    def resolve_calls(raw_node, cfg_node):
        items = raw_node.items() if isinstance(raw_node, dict) else enumerate(raw_node)
        for key, value in items:
            if isinstance(value, (dict, list)):
                resolve_calls(value, cfg_node[key])
            elif isinstance(value, str) and _RESOLVER_CALL.search(value):
                value = cfg_node[key]
                is_node = OmegaConf.is_config(value)
                raw_node[key] = OmegaConf.to_container(value, resolve=True) if is_node else value

    resolve_calls(raw, cfg)
    return raw


def available(datasets: list[str]) -> list[str]:
    """The UCI data sets whose raw files load (a note on stderr for each that does not)."""
    from experiments.data.uci import load_dataset

    out = []
    for ds in datasets:
        try:
            load_dataset(ds, download=False)
            out.append(ds)
        except Exception:  # noqa: BLE001 - any failure to load means: skip it, as the script did
            print(f"skipping {ds}: raw data not found (see docs/data.md)", file=sys.stderr)
    return out


def _timing_lines(store: Path) -> list[dict]:
    """The engine's timing lines of the jobs finished in ``store``."""
    return [json.loads(p.read_text()) for p in sorted(done_dir(store).glob("*.json"))]


def measure_costs(store: Path, out: Path, command: str) -> dict:
    """Write the per-kind costs of the jobs finished in ``store`` to ``out``."""
    lines = _timing_lines(store)
    table = {
        "command": command,
        "cpus": len(os.sched_getaffinity(0)),
        "model": "cost = fixed + per_unit x units (experiments/plan/plan.py)",
        "kinds": costs_from_timings(lines),
    }
    out.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    return table


def _audit_table(args, register: Callable[[], None]) -> int:
    """``--curate STORE``: merge STORE's records of the audit table into ``--out`` and redraw it;
    ``--draw``: redraw ``--out`` from its summary alone."""
    from experiments.audit.report import draw

    try:
        if args.curate:
            store = results_root(args.curate)
            jobs = build_audit_plan(costs={})
            paths = curate_table(store, args.out, compose_payloads(jobs, store, register))
        else:
            paths = draw(args.out)
    except ValueError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    for p in paths:
        print(p)
    return 0


def main(argv: list[str], register: Callable[[], None]) -> int:
    """``register``: makes the config's schema known before composing
    (:func:`experiments.app.schema.register_schema`)."""
    args = _parser().parse_args(argv)
    if args.measure_costs:
        # the store is named STORE: the table records how it was measured, not where
        cmd = "scripts/plan.py " + " ".join(
            "STORE" if a == args.measure_costs else shlex.quote(a) for a in argv
        )
        table = measure_costs(Path(args.measure_costs), Path(args.costs_out), cmd)
        print(f"{len(table['kinds'])} kinds of job measured -> {args.costs_out}")
        return 0
    if args.priced_by and not args.dry_run:
        print("Error: --priced-by STORE prices the simulated makespans of --dry-run; add --dry-run",
              file=sys.stderr)  # fmt: skip
        return 2
    audit = args.scale == AUDIT_PLAN
    if (args.curate or args.draw) and not audit:
        print("Error: --curate and --draw draw the audit table: scripts/plan.py audit --curate "
              "STORE, scripts/plan.py audit --draw", file=sys.stderr)  # fmt: skip
        return 2
    if audit and (args.curate or args.draw):
        return _audit_table(args, register)
    datasets = [d for d in args.datasets.split(",") if d]
    unknown = sorted(set(datasets) - set(UCI))
    if unknown:
        print(f"Error: unknown data set(s) {unknown}; valid: {','.join(UCI)}", file=sys.stderr)
        return 2
    if not args.dry_run:
        from experiments.figures.cli import is_curated

        store = results_root(args.results)
        if is_curated(store):
            print(
                f"Error: --results {args.results} is a curated, committed directory (results/quick, "
                "results/paper_scale, results/benchmark, results/audit), written only by "
                "scripts/curate.sh, scripts/benchmark.py and scripts/plan.py audit; give another store",
                file=sys.stderr,
            )
            return 2
    if not audit:
        try:
            scale_config(args.scale)  # an unknown scale: one line, before any worker starts
        except ValueError as exc:
            return _plan_error(exc)
    factory = _cluster_factory(args)
    if args.print_job_script and args.engine != "local":
        cluster = factory()
        print(cluster.job_script())
        cluster.close()
        return 0
    if args.dry_run:
        return _dry_run(args, datasets, audit)
    # the workers start (and import what the jobs need) while this process checks the data sets
    # and composes every job's config; run_jobs closes the cluster, and so does every other way out
    early = EarlyCluster(factory)
    try:
        return _run(args, datasets, audit, register, early)
    except KeyboardInterrupt:  # while composing (run_jobs reports its own)
        print("Interrupted before any job ran: nothing written; the same command starts it",
              file=sys.stderr)  # fmt: skip
        return 130
    finally:
        early.close()


def _plan(args, datasets: list[str], audit: bool):
    """The plan's jobs, or a ``ValueError`` (an unknown scale...)."""
    if audit:
        return build_audit_plan()
    return build_plan(
        args.scale,
        tuple(datasets),
        extras=None if args.extras is None else bool(args.extras),
        gibbs_samplers=tuple(s for s in args.gibbs_samplers.split(",") if s),
        ppca_sweeps=args.ppca_sweeps,
    )


def _plan_error(exc: ValueError) -> int:
    also = f" (or {AUDIT_PLAN}: the audit table)" if str(exc).startswith("unknown scale") else ""
    print(f"Error: {exc}{also}", file=sys.stderr)
    return 2


def _dry_run(args, datasets: list[str], audit: bool) -> int:
    """``--dry-run``: print the plan, its estimated costs and makespans; run nothing."""
    try:
        jobs = _plan(args, datasets, audit)
    except ValueError as exc:
        return _plan_error(exc)
    if audit:
        costs = load_costs(AUDIT_COSTS_FILE).get("command", "none measured")
        print(f"the audit table's plan (costs: {costs})")
    else:
        costs = load_costs().get("command", "none measured")
        print(f"plan of scale {args.scale} (costs: {costs})")
    if args.priced_by:
        jobs, n = priced_by(jobs, _timing_lines(Path(args.priced_by)))
        print(f"{n} of {len(jobs)} jobs priced by the CPU-s they took in STORE")
    print(describe(jobs))
    return 0


def _cluster_factory(args) -> Callable | None:
    """What starts the run's cluster: a dask-jobqueue cluster for ``--engine slurm|pbs|sge``, a
    local one of ``--workers`` processes, or None (the engine's default: one per core)."""
    if args.engine != "local":
        kwargs = {k: v for k, v in (("queue", args.queue), ("account", args.account)) if v}
        return functools.partial(
            jobqueue_cluster,
            args.engine,
            jobs=args.cluster_jobs,
            cores=args.cores,
            memory=args.memory,
            walltime=args.walltime,
            **kwargs,
        )
    if args.workers:
        return functools.partial(local_cluster, args.workers)
    return None


def _run(args, datasets: list[str], audit: bool, register, early: EarlyCluster) -> int:
    """Run the plan on the cluster ``early`` is starting."""
    if not audit:
        datasets = available(datasets)
    try:
        jobs = _plan(args, datasets, audit)
    except ValueError as exc:
        return _plan_error(exc)
    results = results_root(args.results)
    total = sum(j.cost for j in jobs)
    print(f"[plan] {args.scale}: {len(jobs)} jobs, {total:,.0f} estimated CPU-s", file=sys.stderr)
    with job_composer(results, register) as payload_of:  # each job composed as it is submitted
        outcome = run_jobs(jobs, payload_of, results, cluster_factory=early)
    return report_outcome(outcome, len(jobs), f"[plan] {args.scale}")


def report_outcome(outcome, planned: int, label: str) -> int:
    """Print what a run of ``planned`` jobs came to (to stderr) and return the exit status: 130
    when interrupted (one line), 2 when a job failed (one line each, then a count), else 0 (one
    line, headed ``label``).  Shared by the reproduction's and the benchmark's plans."""
    if outcome.interrupted:
        print(
            f"Interrupted: {len(outcome.done)} of {planned - outcome.skipped} jobs finished, every "
            "worker stopped; their records are kept and the same command resumes",
            file=sys.stderr,
        )
        return 130
    for name, why in outcome.failed:
        print(f"Error: job {name} failed: {why}", file=sys.stderr)
    if outcome.failed:
        print(
            f"{len(outcome.failed)} job(s) failed; the {len(outcome.done)} others finished and their "
            "records are kept; the same command resumes",
            file=sys.stderr,
        )
        return 2
    print(
        f"{label}: {len(outcome.done)} jobs run, {outcome.skipped} already done, in "
        f"{outcome.wall_s:,.0f} s",
        file=sys.stderr,
    )
    return 0
