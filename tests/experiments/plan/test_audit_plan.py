"""The audit table's plan (experiments/plan/audit_plan.py): one job per run of the table, its costs, its
dry run, and a record computed outside the plan found and skipped by it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from experiments.audit.table_runs import SECTIONS, TABLE_RUNS
from experiments.plan.audit_plan import (
    AUDIT_COSTS_FILE,
    build_audit_plan,
    job_name,
    table_run_keys,
)
from experiments.plan.plan import UNMEASURED_COST, load_costs

REPO = Path(__file__).resolve().parents[3]


def _plan(*args):
    return subprocess.run([sys.executable, "scripts/plan.py", *args], cwd=REPO,
                          capture_output=True, text=True)  # fmt: skip


def test_one_job_per_table_run_with_its_overrides():
    jobs = build_audit_plan()
    assert len(jobs) == len(TABLE_RUNS)
    assert len({j.name for j in jobs}) == len(jobs) == len({j.token for j in jobs})
    for job, run in zip(jobs, TABLE_RUNS):
        assert job.name == job.kind == job_name(run) == f"audit/{run.name}"
        assert job.overrides == ("experiment=audit", *run.overrides)
        assert job.stage == run.section in SECTIONS and not job.after
        assert job.cost > 0
    # every cost of the table names a run of it; a run without one costs UNMEASURED_COST
    kinds = load_costs(AUDIT_COSTS_FILE)["kinds"]
    assert set(kinds) <= {j.kind for j in jobs}
    assert all(j.cost == UNMEASURED_COST for j in jobs if j.kind not in kinds)


def test_dry_run_prints_the_sections_and_makespans():
    r = _plan("audit", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert f"total: {len(TABLE_RUNS)} jobs" in r.stdout
    since_2019 = sum(run.section == "controls since 2019" for run in TABLE_RUNS)
    assert since_2019 == 14 and f"controls since 2019: {since_2019} jobs" in r.stdout
    for w in (2, 16, 64):
        assert f"makespan on {w:>3} workers" in r.stdout


def test_audit_options_and_folders_are_checked_in_one_line(tmp_path):
    for args in (
        ["quick", "--draw"],
        ["audit", "--results", str(REPO / "results" / "audit")],
        ["audit", "--draw", "--out", str(tmp_path)],
    ):
        r = _plan(*args)
        assert r.returncode == 2 and r.stderr.startswith("Error:"), (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (REPO / "results" / "audit" / "records").exists()


def test_a_record_computed_outside_the_plan_is_found_and_skipped(tmp_path):
    """The table's line run as run.py runs it (its own process composing the same overrides) stores
    the record the plan's job looks up: the job computes nothing, and the drawing finds it."""
    from experiments.app.schema import register_schema
    from experiments.plan.cli import compose_payloads
    from experiments.plan.engine import execute_runner, is_done
    from experiments.store.store import record_id

    (run,) = [r for r in TABLE_RUNS if r.name == "design/lap_cov/noise0.25"]
    line = [sys.executable, "run.py", "experiment=audit", f"results_dir={tmp_path}", "quiet=true"]
    subprocess.run([*line, *run.overrides], cwd=REPO, check=True, capture_output=True)
    (stored,) = (tmp_path / "records").glob("*.json")
    (job,) = build_audit_plan([run])
    payloads = compose_payloads([job], tmp_path, register_schema)
    ((_, key),) = table_run_keys([run], payloads)
    assert record_id(key) == stored.stem
    timing = execute_runner(job, payloads[job.name], str(tmp_path))
    assert timing["records_written"] == 0 and is_done(tmp_path, job)
    assert [p.name for p in (tmp_path / "records").glob("*.json")] == [stored.name]


@pytest.mark.slow
def test_every_table_run_composes_to_a_record_of_its_own(tmp_path):
    """Each run's overrides compose (a misspelt key fails here, not in the lead's run) and key a
    record no other run shares."""
    from experiments.app.schema import register_schema
    from experiments.plan.cli import compose_payloads
    from experiments.store.store import record_id

    jobs = build_audit_plan()
    keyed = table_run_keys(TABLE_RUNS, compose_payloads(jobs, tmp_path, register_schema))
    assert len({record_id(k) for _, k in keyed}) == len(TABLE_RUNS)
    assert all(k["experiment"] == "audit" for _, k in keyed)
