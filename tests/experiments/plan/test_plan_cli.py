"""The plan's start-up: each job's config, composed once per distinct set of overrides but the
selector, is what composing the job's own overrides gives."""

from __future__ import annotations

import pytest

from experiments.app.schema import register_schema
from experiments.plan.cli import compose_payloads, portable_config, split_selector
from experiments.plan.plan import DRAW_KIND, build_plan
from tests.hydra_helpers import compose_cfg


def test_priced_by_without_dry_run_is_refused_in_one_line(tmp_path, capsys):
    from experiments.plan.cli import main

    assert main(["quick", "--priced-by", str(tmp_path), "--results", str(tmp_path / "s")],
                register_schema) == 2  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--dry-run" in err[0]
    assert not (tmp_path / "s").exists()  # nothing run, nothing written


def test_split_selector_parses_the_selector_as_hydra_does():
    base, sel = split_selector(("experiment=utility_vs_n", "experiment.only={n_index:2,subset:0}",
                                "scale=quick"))  # fmt: skip
    assert base == ("experiment=utility_vs_n", "scale=quick")
    assert sel == {"n_index": 2, "subset": 0}
    assert split_selector(("experiment=table1",)) == (("experiment=table1",), None)


@pytest.mark.slow
def test_each_payload_is_the_jobs_own_composition(tmp_path):
    """Every job of the plan (all data sets, the experiments beyond the paper): its payload equals
    the portable config of its own overrides composed alone, selector and all."""
    jobs = [j for j in build_plan("quick", extras=True) if j.kind != DRAW_KIND]
    payloads = compose_payloads(jobs, tmp_path, register_schema)
    extra = [f"results_dir={tmp_path}", "quiet=true", "progress=false", "workers=1"]
    selected = 0
    for job in jobs:
        own = portable_config(compose_cfg([*job.overrides, *extra]))
        assert payloads[job.name] == own, job.name
        selected += own["experiment"].get("only") is not None
    assert selected > len(jobs) / 2  # the cache is exercised: most jobs carry a selector


def test_report_outcome_one_line_per_ending(capsys):
    """The reproduction's and the benchmark's plans end with the same lines and exit statuses."""
    from experiments.plan.cli import report_outcome
    from experiments.plan.engine import Outcome

    done = [{"name": "a"}, {"name": "b"}]
    assert report_outcome(Outcome(done=done, skipped=1, wall_s=3.0), 4, "[x] quick") == 0
    assert capsys.readouterr().err == "[x] quick: 2 jobs run, 1 already done, in 3 s\n"
    assert report_outcome(Outcome(done=done, interrupted=True, skipped=1), 4, "[x]") == 130
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("Interrupted: 2 of 3 jobs finished")
    failed = Outcome(done=done, failed=[("c", "ValueError: bad")])
    assert report_outcome(failed, 3, "[x]") == 2
    assert capsys.readouterr().err.splitlines() == [
        "Error: job c failed: ValueError: bad",
        "1 job(s) failed; the 2 others finished and their records are kept; the same command resumes",
    ]
