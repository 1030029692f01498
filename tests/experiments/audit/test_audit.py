"""Empirical privacy audit (experiments/audit/): Clopper-Pearson helpers, the ε lower bound, correct
mechanisms never audited above their claim, broken ones caught, and the Hydra runner."""

import json
import math

import numpy as np
import pytest
from scipy import stats

from experiments.audit import (
    audit_mechanism,
    audit_scores,
    available_mechanisms,
    bingham_design,
    bypass_norm_check,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_lower_bound,
    gaussian_design,
    max_certifiable_epsilon,
    miscalibrated,
    run_audit,
)
from experiments.store.store import ResultStore
from mechanisms import get_mechanism
from mechanisms._base import PrivacyInputError
from tests.hydra_helpers import compose_cfg

EPS, DELTA = 2.0, 1e-5


# ---------------------------------------------------------------------------------------------
# Clopper-Pearson and the bound
# ---------------------------------------------------------------------------------------------


def test_clopper_pearson_matches_beta_quantiles():
    for k, n, a in [
        (0, 10, 0.05),
        (3, 10, 0.05),
        (10, 10, 0.025),
        (57, 1000, 0.01),
        (999, 1000, 0.1),
    ]:
        lo, hi = clopper_pearson_lower(k, n, a), clopper_pearson_upper(k, n, a)
        assert lo == pytest.approx(0.0 if k == 0 else stats.beta.ppf(a, k, n - k + 1), abs=1e-12)
        assert hi == pytest.approx(
            1.0 if k == n else stats.beta.ppf(1 - a, k + 1, n - k), abs=1e-12
        )
        assert 0 <= lo <= k / n <= hi <= 1
    # closed forms at the edges: k = 0 -> upper 1 - a^(1/n); k = n -> lower a^(1/n)
    assert clopper_pearson_upper(0, 10, 0.05) == pytest.approx(1 - 0.05**0.1, rel=1e-10)
    assert clopper_pearson_lower(10, 10, 0.05) == pytest.approx(0.05**0.1, rel=1e-10)
    assert clopper_pearson_upper(0, 10, 0.05) == pytest.approx(0.2588655, abs=1e-6)
    # vectorised
    ks = np.array([0, 5, 10])
    assert np.allclose(
        clopper_pearson_lower(ks, 10, 0.05), [clopper_pearson_lower(k, 10, 0.05) for k in ks]
    )


def test_clopper_pearson_coverage():
    rng = np.random.default_rng(0)
    for p, n in [(0.02, 200), (0.3, 50)]:
        k = rng.binomial(n, p, size=20000)
        assert np.mean(clopper_pearson_lower(k, n, 0.05) <= p) >= 0.95
        assert np.mean(clopper_pearson_upper(k, n, 0.05) >= p) >= 0.95


def test_epsilon_lower_bound_formula():
    a = 0.05
    k1, n1, k0, n0 = 400, 1000, 40, 1000
    expect = math.log(
        (stats.beta.ppf(a / 2, k1, n1 - k1 + 1) - 1e-3) / stats.beta.ppf(1 - a / 2, k0 + 1, n0 - k0)
    )
    assert epsilon_lower_bound(k1, n1, k0, n0, 1e-3, a) == pytest.approx(expect, rel=1e-10)
    assert epsilon_lower_bound(k1, n1, k0, n0, 0.0, a) < math.log(10)  # below the point estimate
    assert (
        epsilon_lower_bound(10, 1000, 10, 1000, 0.0, a) == 0.0
    )  # no evidence -> 0, never negative
    assert epsilon_lower_bound(5, 1000, 0, 1000, 0.5, a) == 0.0  # p1_lower <= delta
    ceil = max_certifiable_epsilon(1000, 1000, 0.0, a)
    assert ceil == pytest.approx(
        math.log((a / 2) ** (1 / 1000) / (1 - (a / 2) ** (1 / 1000))), rel=1e-9
    )


def test_audit_scores_laplace_mechanism_tight_but_valid():
    # S ~ Lap(0, 1) vs Lap(1, 1): exactly 1-DP; the best event approaches 1 from below.
    rng = np.random.default_rng(1)
    s1, s0 = rng.laplace(1.0, 1.0, 40000), rng.laplace(0.0, 1.0, 40000)
    res = audit_scores(s1, s0, delta=0.0, confidence=0.95)
    assert 0.5 < res["audited_epsilon_lower"] <= 1.0
    assert res["audit_trials"] == [20000, 20000] and res["method"] == "split"
    grid = np.linspace(-1, 4, 11)
    res_b = audit_scores(s1, s0, delta=0.0, thresholds=grid)
    assert res_b["method"] == "bonferroni" and res_b["events_tested"] == 44
    assert 0.5 < res_b["audited_epsilon_lower"] <= 1.0
    same = audit_scores(rng.laplace(0, 1, 20000), rng.laplace(0, 1, 20000), delta=0.0)
    assert same["audited_epsilon_lower"] < 0.1


def test_designs_are_neighbours():
    for rel in ("replace-one-row", "add-remove-one-row", "entry-level"):
        des = gaussian_design(rel, d=3, n=50)
        X1, X0 = des.X1, des.X0
        assert np.all(np.linalg.norm(X1, axis=1) <= 1 + 1e-12) and np.all(
            np.linalg.norm(X0, axis=1) <= 1 + 1e-12
        )
        if rel == "add-remove-one-row":
            assert X1.shape[0] == X0.shape[0] + 1 and np.array_equal(X1[1:], X0)
        else:
            assert X1.shape == X0.shape and np.sum(np.any(X1 != X0, axis=1)) == 1
        if rel == "entry-level":
            diff = X1.T @ X1 - X0.T @ X0
            assert np.count_nonzero(np.abs(diff) > 1e-12) == 1 and np.abs(diff).max() <= 1 + 1e-9
    des = bingham_design(EPS)
    assert des.X1.shape == des.X0.shape and np.sum(np.any(des.X1 != des.X0, axis=1)) == 1
    assert np.sum(des.X1[1:] ** 2) == pytest.approx(2 * 3.0 / EPS)


# ---------------------------------------------------------------------------------------------
# Correct mechanisms are never audited above their claim
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,kw,trials",
    [
        ("mod_sulq", dict(epsilon=EPS, delta=DELTA), 3000),
        ("analyze_gauss", dict(epsilon=0.9, delta=DELTA), 3000),
        ("random", {}, 2000),
    ],
)
def test_correct_mechanisms_within_claim(name, kw, trials):
    r = audit_mechanism(name, trials=trials, seed=0, **kw)
    assert r["audited_epsilon_lower"] <= r["claimed_epsilon"]
    assert not r["violation"] and r["verdict"] == "consistent with the claim"
    assert r["confidence"] == 0.95 and r["trials"] == trials
    for key in ("mechanism", "claimed_epsilon", "delta", "neighbouring", "statistic", "threshold"):
        assert key in r
    if name == "random":
        assert r["claimed_epsilon"] == 0.0 and r["audited_epsilon_lower"] == 0.0
    if name == "analyze_gauss":
        assert r["neighbouring"] == "add-remove-one-row" and r["n_D"] == r["n_Dprime"] + 1


@pytest.mark.slow
def test_ppca_exact_audit_is_close_but_below_claim():
    r = audit_mechanism("ppca", epsilon=EPS, trials=5000, seed=0)
    assert r["neighbouring"] == "replace-one-row" and r["delta"] == 0.0 and r["design"] == "bingham"
    assert 0.7 < r["audited_epsilon_lower"] <= EPS  # the audit has power, and the claim holds
    it = audit_mechanism("ppca_iterative", epsilon=EPS, trials=2000, seed=3)
    assert it["audited_epsilon_lower"] <= EPS


def test_pca_is_not_private():
    r = audit_mechanism("pca", trials=1000, seed=0)
    assert math.isinf(r["claimed_epsilon"])
    assert r["at_ceiling"] and r["audited_epsilon_lower"] > 4.5
    assert r["audited_epsilon_lower"] == pytest.approx(r["max_certifiable_epsilon"])
    assert r["verdict"].startswith("not private")


# ---------------------------------------------------------------------------------------------
# Broken mechanisms are caught
# ---------------------------------------------------------------------------------------------


def test_catches_mod_sulq_with_much_less_noise():
    r = audit_mechanism(
        miscalibrated("mod_sulq", 0.1), epsilon=EPS, delta=DELTA, trials=3000, seed=0
    )
    assert r["claimed_epsilon"] == EPS and r["mechanism"] == "mod_sulq[noise x0.1]"
    assert r["audited_epsilon_lower"] > EPS and r["violation"]


def test_catches_analyze_gauss_with_much_less_noise():
    r = audit_mechanism(
        miscalibrated("analyze_gauss", 0.1), epsilon=0.9, delta=DELTA, trials=2000, seed=0
    )
    assert r["audited_epsilon_lower"] > 0.9


@pytest.mark.slow
def test_catches_ppca_with_halved_noise():
    # ε/2 of temperature -> true ε = 2·claim; the datasets are tuned for the suspected ε = 4
    r = audit_mechanism(
        miscalibrated("ppca", 0.5), epsilon=EPS, trials=6000, seed=0, design_epsilon=2 * EPS
    )
    assert r["claimed_epsilon"] == EPS and r["audited_epsilon_lower"] > EPS


@pytest.mark.parametrize("name", ["mod_sulq", pytest.param("ppca", marks=pytest.mark.slow)])
def test_catches_unclipped_large_row(name):
    broken = bypass_norm_check(name)
    r = audit_mechanism(broken, epsilon=EPS, delta=DELTA, trials=3000, seed=0, row_norm=3.0)
    assert r["audited_epsilon_lower"] > EPS and r["violation"]
    # the patch is undone: the real mechanism still refuses long rows
    kw = {"epsilon": EPS} if name == "ppca" else {"epsilon": EPS, "delta": DELTA}
    with pytest.raises(PrivacyInputError):
        get_mechanism(name)(3.0 * np.eye(3), 1, rng=np.random.default_rng(0), **kw)


def test_miscalibration_patch_is_undone():
    from mechanisms import mod_sulq as ms
    from mechanisms.calibration import mod_sulq_noise_scale

    miscalibrated("mod_sulq", 0.5)(
        np.eye(3) / 2, 1, rng=np.random.default_rng(0), epsilon=1.0, delta=DELTA
    )
    assert ms.mod_sulq_noise_scale is mod_sulq_noise_scale
    with pytest.raises(ValueError):
        miscalibrated("random", 0.5)


def test_available_mechanisms():
    ok, skipped = available_mechanisms()
    assert {"pca", "random", "mod_sulq", "analyze_gauss", "ppca"} <= set(ok)
    assert set(ok).isdisjoint(skipped)


# ---------------------------------------------------------------------------------------------
# Hydra runner
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_run_audit_hydra(tmp_path, capsys):
    base = [
        "experiment=audit",
        f"results_dir={tmp_path}",
        "quiet=true",
        "print_record=true",
        "experiment.trials=1000",
    ]
    rec = run_audit(compose_cfg(base + ["mechanism=ppca"]))
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for key in (
        "mechanism",
        "claimed_epsilon",
        "delta",
        "audited_epsilon_lower",
        "confidence",
        "trials",
        "neighbouring",
        "statistic",
        "threshold",
    ):
        assert key in line
    assert line["mechanism"] == "ppca" and line["claimed_epsilon"] == 2.0 and line["trials"] == 1000
    assert rec["written"] and rec["run_key"]["mechanism_params"]["epsilon"] == 2.0
    df = ResultStore(tmp_path).load(experiment="audit")
    assert len(df) == 1 and df.audited_epsilon_lower.iloc[0] <= 2.0
    again = run_audit(compose_cfg(base + ["mechanism=ppca"]))
    assert not again["written"] and again["audited_epsilon_lower"] == rec["audited_epsilon_lower"]

    ag = run_audit(compose_cfg(base + ["mechanism=analyze_gauss"]))
    assert (
        ag["claimed_epsilon"] == 0.9
        and ag["epsilon_capped"]
        and ag["neighbouring"] == "add-remove-one-row"
    )

    npw = run_audit(
        compose_cfg(base + ["experiment.mechanism=noisy_power", "experiment.trials=400"])
    )
    # the library default is now the row-level (per-person) relation
    assert npw["mechanism"] == "noisy_power" and npw["neighbouring"] == "replace-one-row"
    assert npw["audited_epsilon_lower"] <= npw["claimed_epsilon"]

    bad = run_audit(
        compose_cfg(
            base + ["mechanism=mod_sulq", "experiment.noise_factor=0.1", "experiment.trials=3000"]
        )
    )
    assert bad["violation"] and bad["mechanism"] == "mod_sulq[noise x0.1]"
    assert len(ResultStore(tmp_path).load(experiment="audit")) == 4
