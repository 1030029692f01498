"""The audit's worker processes change nothing but the wall time.

Each unit run in a worker (a design of the search, the certifying runs of one dataset, the runs of
one dataset in the design audit, the white-box audit and the second draw of its samples) draws only
from random streams of its own, so ``jobs=2`` must give exactly the record of ``jobs=1`` (the serial
code path): the same bound, design, statistic, event, counts and leaderboard, compared field by
field with ``repr`` (bit for bit for floats), apart from the timings and ``jobs`` itself.  Both run
with one BLAS thread (:func:`experiments.threads.pinned_blas`), as ``run.py`` runs every experiment
and as every worker runs, so that the low-order bits cannot differ through the thread count.
"""

from __future__ import annotations

import pytest

from experiments.audit.common import audit_jobs
from experiments.audit.designs import design_for
from experiments.audit.runner import _audit, audit_mechanism
from experiments.audit.search import search_audit
from experiments.audit.settings import AuditSettings
from experiments.audit.variants import planted_variant
from experiments.threads import pinned_blas


def _differing_fields(a: dict, b: dict) -> list[str]:
    """The fields of two records that differ, other than timings and the worker count."""
    assert set(a) == set(b)
    return [
        key for key in a if "seconds" not in key and key != "jobs" and repr(a[key]) != repr(b[key])
    ]


def _serial_and_parallel(fn, *args, **kwargs) -> tuple[dict, dict]:
    with pinned_blas():
        one = fn(*args, jobs=1, **kwargs)
        two = fn(*args, jobs=2, **kwargs)
    assert one["jobs"] == 1 and two["jobs"] == 2  # the second did use two workers
    return one, two


def test_audit_jobs_counts_the_cpu_set():
    assert audit_jobs(None) >= 1 and audit_jobs(3) == 3
    with pytest.raises(ValueError, match="experiment.jobs"):
        audit_jobs(0)


@pytest.mark.parametrize("variant", [None, "sign_bit"])
def test_search_is_the_same_with_two_workers(variant):
    # the honest MOD-SULQ (bound 0) and the planted sign-bit defect (a closure sent to the
    # workers by value, caught: bound above 2), with the hand-made and the learned statistics
    mech = "mod_sulq" if variant is None else planted_variant(variant, "mod_sulq")
    one, two = _serial_and_parallel(
        search_audit,
        mech,
        epsilon=2.0,
        delta=1e-5,
        calibration_trials=30,
        trials=150,
        n_random=2,
        seed=3,
    )
    assert _differing_fields(one, two) == []
    # the comparison covers many designs, both kinds of statistics and a real leaderboard
    assert one["designs_tried"] >= 30 and len(one["leaderboard"]) == 5
    assert one["learned_statistics"] == ["logistic", "mmd"]
    if variant is not None:
        assert one["violation"] and one["audited_epsilon_lower"] > 2.0


def test_search_with_a_spent_time_budget_tries_one_design_either_way():
    # a budget of 0 s is spent before the first design: the serial loop runs that one (the budget
    # skips a design only once one has competed) and skips the rest; the workers skip every design,
    # and the search then runs the first itself, as the serial loop would
    one, two = _serial_and_parallel(
        search_audit,
        "ppca",
        epsilon=2.0,
        calibration_trials=40,
        trials=200,
        n_random=3,
        seed=0,
        time_budget=0.0,
    )
    assert one["designs_tried"] == 1 and one["designs_skipped"] > 10
    assert _differing_fields(one, two) == []


def test_design_audit_is_the_same_with_two_workers():
    # PPCA on its Bingham pair: each dataset's runs from its own stream [seed, 7, side]; the pair
    # is given, so that no probe run finds the audit too short for workers
    design = design_for("ppca", "replace-one-row", epsilon=2.0, delta=0.0)
    one, two = _serial_and_parallel(
        audit_mechanism, "ppca", epsilon=2.0, trials=1000, seed=1, design=design
    )
    assert _differing_fields(one, two) == []
    assert one["audited_epsilon_lower"] > 0.0  # a non-trivial event, counted identically


def test_short_design_audit_stays_in_this_process():
    # its probe run predicts far less than MIN_WORKER_SECONDS: no workers are started
    with pinned_blas():
        r = audit_mechanism("random", trials=200, jobs=2)
    assert r["jobs"] == 1


def _settings(*extra: str) -> AuditSettings:
    from tests.hydra_helpers import compose_cfg

    return AuditSettings.from_config(
        compose_cfg(["experiment=audit", "experiment.mechanism=mod_sulq", *extra])
    )


def test_jobs_is_not_in_the_run_key():
    for mode in ("design", "search", "whitebox"):
        default = _settings(f"experiment.mode={mode}")
        # serial unless asked: the workers' start costs more than most audits
        assert default.jobs == 1
        keys = [
            _settings(f"experiment.mode={mode}", f"experiment.jobs={j}").run_key({})
            for j in ("null", 2)
        ]
        assert keys == [default.run_key({})] * 2 and "jobs" not in keys[0]
    with pytest.raises(ValueError, match="experiment.jobs"):
        _settings("experiment.jobs=0")


def test_whitebox_record_is_the_same_with_two_workers():
    # the white-box audit and the second draw of its samples (the trade-off curve) side by side
    records = []
    for jobs in (1, 2):
        s = _settings(
            "experiment.mode=whitebox", "experiment.trials=2000", f"experiment.jobs={jobs}"
        )
        with pinned_blas():
            records.append(_audit(s, s.mechanism, dict(s.mechanism_params)))
    one, two = records
    assert (one["jobs"], two["jobs"]) == (1, 2)
    assert _differing_fields(one, two) == []
    assert one["gdp_mu_fit"] > 0.0 and one["exact_epsilon"] > 0.0
