"""The white-box trade-off table (experiments/audit/table.py) and the audit-rate measurement."""

from __future__ import annotations

import pytest

from experiments.audit import table
from experiments.audit.whitebox import whitebox_audit


@pytest.mark.parametrize("name", ["mod_sulq", "private_sketch"])
def test_row_certifies_what_the_whitebox_audit_records(name):
    # the table draws the white-box statistic once (the streams of whitebox_audit) and certifies the
    # same model-chosen event: its counts, bound and exact ε(δ) must be those of the audit itself
    row = table.tradeoff_row(name, delta=0.1, trials=300)
    ref = whitebox_audit(name, epsilon=2.0, delta=0.1, trials=300)
    for key in ("count_D", "count_Dprime", "threshold", "orientation", "exact_epsilon"):
        assert row[key] == ref[key], key
    assert row["audited_epsilon_lower"] == ref["audited_epsilon_lower"]
    assert row["claimed_epsilon"] == ref["claimed_epsilon"] == 2.0


def test_gdp_epsilon_is_a_bound_only_for_a_gaussian_statistic():
    gauss = table.tradeoff_row("mod_sulq", delta=1e-5, trials=200)
    chi2 = table.tradeoff_row("private_sketch", delta=1e-5, trials=200)
    assert gauss["statistic_model"] == "gaussian" and gauss["gdp_epsilon_reading"] == "bound"
    assert chi2["statistic_model"] == "chi2" and chi2["gdp_epsilon_reading"] == "estimate"
    assert chi2["mu"] is None and chi2["lift"] > 1.0
    text = table.markdown_table([gauss, chi2])
    assert f"**{gauss['gdp_epsilon_lower']:.3f}**" in text
    assert f"{chi2['gdp_epsilon_lower']:.3f} (estimate)" in text
    assert "Jeffreys" in table.bayes_table([gauss, chi2])


def test_analyze_gauss_row_is_audited_at_its_cap():
    # the cap comes from conf/experiment/audit.yaml (ε < 1 for the Gaussian-mechanism theorem)
    assert table.claimed_epsilon("analyze_gauss") == 0.9
    assert table.claimed_epsilon("mod_sulq") == 2.0
    row = table.tradeoff_row("analyze_gauss", delta=0.1, trials=100)
    assert row["claimed_epsilon"] == 0.9


def test_fit_and_certified_mu_of_streaming_power_agree_with_its_measured_mu():
    # 4,000 runs per side of a statistic exactly N(±μ²/2, μ²) with μ = 0.787 (δ = 0.1): the AUC fit's
    # standard deviation is about 0.03 in μ, so 0.1 is over 3 of them; a fit without the √2 (0.56) or
    # a mis-measured μ would fail.  The certified μ is a 95 % lower bound: at this seed it lies below
    # the measured μ, and the GDP ε below the exact ε(δ) (both fail for an inflated statistic)
    row = table.tradeoff_row("streaming_power", delta=0.1, trials=4000)
    assert row["mu"] == pytest.approx(0.787, abs=0.001)
    assert row["gdp_mu_fit"] == pytest.approx(row["mu"], abs=0.1)
    assert 0.0 < row["gdp_mu_lower"] < row["mu"]
    assert 0.0 < row["gdp_epsilon_lower"] < row["exact_epsilon"]
    assert row["gdp_epsilon_fit"] == pytest.approx(
        row["exact_epsilon"], abs=0.15
    )  # dε/dμ ≈ 1.5 here


def test_rates_cover_the_modes_each_mechanism_runs_in():
    rows = table.mechanism_rates(
        ["random", "mod_sulq"], modes=("design", "whitebox"), target_seconds=0.05, repeats=2
    )
    assert [(r["mechanism"], r["mode"]) for r in rows] == [
        ("random", "design"),
        ("mod_sulq", "design"),
        ("mod_sulq", "whitebox"),
    ]
    assert all(r["trials_per_second"] > 0 and len(r["repeat_rates"]) == 2 for r in rows)
    text = table.rates_table(rows, modes=("design", "whitebox"))
    assert "| random |" in text and "–" in text.splitlines()[2]


def test_blackbox_only_search_settings_and_their_run_key():
    from experiments.audit.settings import AuditSettings
    from tests.hydra_helpers import compose_cfg

    def settings(*extra):
        base = ["experiment=audit", "experiment.mechanism=mod_sulq", "experiment.mode=search"]
        return AuditSettings.from_config(compose_cfg(base + list(extra)))

    default = settings()
    assert default.learned == ("logistic", "mmd") and default.handmade
    # the default testers keep the search's key as it was before these settings existed
    assert "learned" not in default.run_key({}) and "handmade" not in default.run_key({})
    alone = settings("experiment.handmade=false")
    key = alone.run_key({})
    assert key["handmade"] is False and key["learned"] == ["logistic", "mmd"]
    assert settings("experiment.learned=[mlp]").run_key({})["learned"] == ["mlp"]
    with pytest.raises(ValueError, match="experiment.learned"):
        settings("experiment.learned=[forest]")
    with pytest.raises(ValueError, match="handmade=false"):
        settings("experiment.handmade=false", "experiment.learned=[]")


def test_blackbox_row_runs_the_testers_alone():
    # a tiny budget: the record says the learned statistics alone competed, and the table prints it
    r = table.blackbox_row("random", trials=60, calibration_trials=30, n_random=1, time_budget=0.5)
    assert r["handmade_statistics"] is False and r["statistic_learned"]
    assert r["statistic"] in ("classifier[logistic]", "mmd_witness")
    assert not r["violation"]
    assert "| random | 0 | 0 |" in table.blackbox_table([r])
