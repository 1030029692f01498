"""The audit table of docs/audit.md as a plan: one job per run of
:data:`experiments.audit.table_runs.TABLE_RUNS`, each a ``run.py experiment=audit`` command line
with the run's overrides (the engine adds ``results_dir`` and the rest,
:func:`experiments.plan.cli.compose_payloads`), so that a record the same line computed
outside the plan is found and skipped.

A job's kind is ``audit/<run name>`` and its units 1: its cost is that run's own, from
:data:`AUDIT_COSTS_FILE`, which ``scripts/plan.py --measure-costs STORE --costs-out
experiments/plan/audit_costs.json`` rewrites from the done markers of a store the plan ran in
(:func:`~experiments.plan.plan.costs_from_timings`: an audit record has no ``wall_seconds``, so a
job's whole CPU time is its fixed cost); a kind without a cost there costs
:data:`~experiments.plan.plan.UNMEASURED_COST`.

:func:`table_run_keys` computes the run key of each run's record from its config as the engine
composes it (:func:`experiments.audit.runner.audit_run_key`); :func:`curate_table` draws the table
of a store with them (:mod:`experiments.audit.report`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from experiments.audit.table_runs import TABLE_RUNS, TableRun
from experiments.paths import SOURCE_ROOT
from experiments.plan.plan import Job, estimate, load_costs

#: the audit jobs' costs: a fixed cost per kind (``audit/<run name>``), CPU-s
AUDIT_COSTS_FILE = Path(__file__).resolve().parent / "audit_costs.json"
#: the committed summary folder of the audit table (written only by ``--curate`` and ``--draw``)
AUDIT_OUT = SOURCE_ROOT / "results" / "audit"
#: the plan's name on the command line (``scripts/plan.py audit``)
AUDIT_PLAN = "audit"


def job_name(run: TableRun) -> str:
    """The name (and kind) of the job of ``run``: ``audit/<run name>``."""
    return f"audit/{run.name}"


def build_audit_plan(runs: Sequence[TableRun] = TABLE_RUNS, costs: dict | None = None) -> list[Job]:
    """The audit table as a plan.

    Parameters
    ----------
    runs : sequence of TableRun, default TABLE_RUNS
        The table's runs.
    costs : dict, optional
        A cost table (``{"kinds": ...}``); default :data:`AUDIT_COSTS_FILE`.

    Returns
    -------
    list of Job
        One per run, in its order: named and kinded :func:`job_name`, its stage the run's section,
        its overrides ``experiment=audit`` and the run's, its units 1, with its estimated CPU-s.
    """
    jobs = [
        Job(job_name(r), r.section, ("experiment=audit", *r.overrides), job_name(r), 1.0)
        for r in runs
    ]
    return estimate(jobs, load_costs(AUDIT_COSTS_FILE) if costs is None else costs)


def table_run_keys(runs: Sequence[TableRun], payloads: dict) -> list[tuple[TableRun, dict]]:
    """The run key of the record each run's job stores.

    Parameters
    ----------
    runs : sequence of TableRun
        Runs of the table.
    payloads : dict
        Their jobs' configs as the engine composes them, by job name
        (:func:`experiments.plan.cli.compose_payloads` of :func:`build_audit_plan`).

    Returns
    -------
    list of (TableRun, dict)
        Each run with its run key, as ``run.py`` keys its record
        (:func:`experiments.audit.runner.audit_run_key`; no audit is run).
    """
    from omegaconf import OmegaConf

    from experiments.audit.runner import audit_run_key

    return [(r, audit_run_key(OmegaConf.create(payloads[job_name(r)]))) for r in runs]


def curate_table(
    store: Path, out: Path, payloads: dict, runs: Sequence[TableRun] = TABLE_RUNS
) -> list[Path]:
    """Merge the records of the table's ``runs`` in ``store`` into ``out/summary.csv`` and redraw
    ``out/audit_table.md`` from it (:func:`experiments.audit.report.curate`); ``payloads`` as for
    :func:`table_run_keys`."""
    from experiments.audit.report import curate

    return curate(store, table_run_keys(runs, payloads), out)
