"""The plan: its jobs, their estimated costs, the simulated makespan and the dry run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from experiments.plan.plan import (
    STAGES,
    Job,
    build_plan,
    costs_from_timings,
    estimate,
    priced_by,
    simulate,
)

REPO = Path(__file__).resolve().parents[3]


def _job(name, cost, after=()):
    return Job(name, STAGES[0], (name,), "k", 1.0, cost, tuple(after))


def test_simulate_longest_first_and_dependencies():
    jobs = [_job(n, c) for n, c in (("a", 3), ("b", 3), ("c", 2), ("d", 2), ("e", 2))]
    assert simulate(jobs, 2) == 7  # LPT: 3+2+2 | 3+2
    assert simulate(jobs, 64) == 3
    assert simulate([_job("x", 1), _job("y", 1), _job("z", 5, after=["x", "y"])], 8) == 6
    assert simulate([], 4) == 0


def test_costs_from_timings_split_fixed_and_per_unit():
    lines = [
        {"kind": "k", "units": u, "cpu_s": 2 + 0.5 * u, "variable_s": 0.5 * u, "ok": True}
        for u in (10, 20, 30)
    ]
    kinds = costs_from_timings(lines)
    assert kinds["k"]["fixed"] == pytest.approx(2) and kinds["k"]["per_unit"] == pytest.approx(0.5)
    (job,) = estimate([Job("j", STAGES[0], (), "k", 100.0)], {"kinds": kinds})
    assert job.cost == pytest.approx(52)


def test_jobs_priced_by_their_measured_cpu_seconds():
    """A job with a finished timing line costs its measured CPU-s; one without keeps its estimate;
    a failed line prices nothing."""
    jobs = [_job("a", 3), _job("b", 3), _job("c", 2)]
    lines = [
        {"name": "a", "cpu_s": 10.0, "ok": True},
        {"name": "c", "cpu_s": 7.0, "ok": False},
        {"name": "z", "cpu_s": 1.0, "ok": True},
    ]
    priced, n = priced_by(jobs, lines)
    assert n == 1 and [j.cost for j in priced] == [10.0, 3, 2]
    assert [j.cost for j in jobs] == [3, 3, 2]  # the plan itself is not changed
    assert simulate(priced, 2) == 10


@pytest.mark.parametrize("scale", ["smoke", "quick", "paper"])
def test_plan_jobs_are_unique_and_ordered(scale):
    jobs = build_plan(scale)
    names = [j.name for j in jobs]
    assert len(set(names)) == len(names) and len({j.token for j in jobs}) == len(jobs)
    assert all(j.stage in STAGES for j in jobs)
    for j in jobs:
        assert set(j.after) <= set(names)
        assert f"scale={scale}" in j.overrides


def test_paper_plan_jobs_are_small():
    """With the committed costs, no paper-scale job is more than 1/50 of the total CPU time."""
    jobs = build_plan("paper")
    total = sum(j.cost for j in jobs)
    assert max(j.cost for j in jobs) <= total / 50


def test_dry_run_prints_stages_and_makespans():
    out = subprocess.run(
        [sys.executable, "scripts/plan.py", "paper", "--dry-run"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for w in (2, 16, 64):
        assert f"makespan on {w:>3} workers" in out
    assert "Figures 3-4 PPCA: 160 jobs" in out and "total:" in out


def test_unknown_scale_and_dataset_are_refused():
    for args in (["nosuch", "--dry-run"], ["quick", "--dry-run", "--datasets", "iris"]):
        r = subprocess.run([sys.executable, "scripts/plan.py", *args], cwd=REPO,
                           capture_output=True, text=True)  # fmt: skip
        assert r.returncode == 2 and r.stderr.startswith("Error:")


def test_every_figure_and_table_is_drawn_by_one_job_after_its_stages():
    """Each drawing of scripts/make_figures.py belongs to exactly one drawing job, which waits for
    every job of its stages (and for nothing else)."""
    from experiments.figures.cli import DRAWINGS
    from experiments.plan.plan import DRAW_KIND, DRAWN_AFTER, drawing_names

    named = [n for names, _ in DRAWN_AFTER for n in names]
    assert sorted(named) == sorted(DRAWINGS)
    jobs = build_plan("quick")
    draws = [j for j in jobs if j.kind == DRAW_KIND]
    assert sorted(n for j in draws for n in drawing_names(j)) == sorted(DRAWINGS)
    for job in draws:
        stages = next(s for names, s in DRAWN_AFTER if names == tuple(drawing_names(job)))
        assert set(job.after) == {j.name for j in jobs if j.stage in stages}
    assert not any(j.kind == DRAW_KIND for j in build_plan("quick", drawings=False))


@pytest.mark.parametrize("scale", ["smoke", "quick", "paper"])
def test_every_job_is_submitted_after_the_jobs_it_waits_for(scale):
    """The engine submits a job only once the jobs it waits for are submitted, so its dependencies
    are never dropped: a drawing job (cost 5) waits for Figure 2's records, which wait for their
    chains; ordering by cost among the jobs that wait would put the drawing first."""
    from experiments.plan.engine import submission_order

    order = submission_order(build_plan(scale))
    seen: set[str] = set()
    for job in order:
        assert set(job.after) <= seen, job.name
        seen.add(job.name)
    chain = [_job("a", 1.0), _job("b", 1.0, ["a"]), _job("c", 9.0, ["b"]), _job("d", 5.0)]
    assert [j.name for j in submission_order(chain)] == ["d", "a", "b", "c"]
    with pytest.raises(ValueError, match="cycle"):
        submission_order([_job("x", 1.0, ["y"]), _job("y", 1.0, ["x"])])


def test_a_curated_directory_is_refused_as_the_store():
    """The plan writes records and drawings into its store: a committed curated directory is refused
    in one line before any work (the dry run, which writes nothing, is not)."""
    for store in ("results/quick", "results/paper_scale/sub", "results/benchmark", "results/audit"):
        r = subprocess.run([sys.executable, "scripts/plan.py", "smoke", "--results", str(REPO / store)],
                           cwd=REPO, capture_output=True, text=True)  # fmt: skip
        assert r.returncode == 2 and r.stderr.startswith("Error: --results"), r.stderr
        assert "curated" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (REPO / "results" / "paper_scale" / "sub").exists()


def test_table2_jobs_cost_by_training_rows():
    """A Table 2 job's units are its fits' thousands of training rows, so a cost measured on quick's
    100,000-row permutations carries to the paper's full kddcup (24,701 training rows a fit); PCA's
    projections share one subspace, so a permutation is one fit, PPCA's are one fit each."""
    units = {
        scale: {j.name: j.units for j in build_plan(scale) if j.stage == STAGES[4]}
        for scale in ("quick", "paper")
    }
    assert units["quick"]["table2/kddcup/mod_sulq/p0/j0"] == pytest.approx(5.0)
    assert units["paper"]["table2/kddcup/mod_sulq/p0/j0"] == pytest.approx(24.701)
    assert units["paper"]["table2/kddcup/ppca/p0"] == pytest.approx(5 * 24.701)
    assert units["paper"]["table2/kddcup/pca/p0"] == pytest.approx(24.701)
    assert units["paper"]["table2/census/pca/p0"] == pytest.approx(4.988)


@pytest.mark.parametrize("scale", ["quick", "paper"])
def test_ppca_group_kinds_follow_the_runners_sampler(scale):
    """A Figures 3-4 PPCA job is priced as a left-chain group exactly where its runner runs the
    left chain (``scale.ppca_left_from_n``: the runner's :func:`group_sampler` on the job's n)."""
    from experiments.plan.plan import DATASET_ROWS
    from experiments.runs.ppca_groups import group_sampler
    from experiments.runs.sweep import n_grid
    from tests.hydra_helpers import compose_cfg

    jobs = {j.name: j for j in build_plan(scale)}
    left = 0
    for ds in ("census", "insurance", "kddcup", "localization"):
        cfg = compose_cfg(
            ["experiment=utility_vs_n", "mechanism=ppca", f"dataset={ds}", f"scale={scale}"]
        )
        grid = n_grid(DATASET_ROWS[ds], int(cfg.scale.n_min), int(cfg.scale.n_points))
        for i, n in enumerate(grid):
            kind = jobs[f"figures3-4/ppca/{ds}/n{i}/s0"].kind
            by_runner = group_sampler(cfg, n) == "left"
            assert kind == f"ppca_group/{ds}" + ("/left" if by_runner else "")
            left += by_runner
    assert left > 0  # the scale runs some groups by the left chain
