"""The trade-off curve's μ-GDP fit, the certified μ, and the Bayesian intervals of the audit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from experiments.audit.bayes import bayes_fields, posterior_epsilon
from experiments.audit.bounds import epsilon_lower_bound
from experiments.audit.tradeoff import (
    certify_gdp,
    fit_gdp,
    gdp_delta,
    gdp_epsilon,
    gdp_tradeoff,
    mu_of_point,
    tradeoff_audit,
    whitebox_scores,
)
from experiments.audit.whitebox import exact_epsilon


def _gdp_samples(mu: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(mu / 2, 1.0, n), rng.normal(-mu / 2, 1.0, n)


def test_gdp_profile_is_the_stated_formula():
    # δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), and ε(δ) inverts it (root finding to 1e-12)
    for mu in (0.3, 1.0, 2.5):
        for eps in (0.1, 1.0, 3.0):
            want = stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(
                -eps / mu - mu / 2
            )
            assert gdp_delta(mu, eps) == pytest.approx(want, rel=1e-12, abs=1e-15)
        e = gdp_epsilon(mu, 1e-3)
        assert gdp_delta(mu, e) == pytest.approx(1e-3, rel=1e-8)
    assert gdp_epsilon(0.0, 1e-5) == 0.0 and gdp_epsilon(0.5, 0.0) == math.inf
    # (1) is exact on the curve: the point (α, G_μ(α)) gives back μ
    alpha = np.array([0.01, 0.2, 0.5, 0.9])
    assert np.allclose(mu_of_point(alpha, gdp_tradeoff(0.8, alpha)), 0.8, atol=1e-10)


def test_fit_recovers_mu_of_gaussian_samples():
    # 2·10⁴ per side: the AUC fit's standard deviation is about 0.011 at μ = 0.7, so 0.05 is over 4
    # of them; the fit without √2 (0.49) or unoriented (AUC < ½ gives 0) would fail
    s1, s0 = _gdp_samples(0.7, 20000, 1)
    fit = fit_gdp(s1, s0)
    assert fit["mu"] == pytest.approx(0.7, abs=0.05)
    assert fit["max_deviation"] < 0.03  # a Gaussian curve fits a Gaussian sample
    assert fit_gdp(s0, s1)["mu"] == pytest.approx(fit["mu"], abs=1e-12)  # either orientation


def test_certified_mu_covers_at_the_stated_confidence():
    # 300 audits of an exactly μ-GDP pair at 95%: μ_lower > μ at most α = 5% of the time in law; the
    # observed share of 300 must stay below 5% + 3 binomial standard deviations (8.8%)
    mu, over = 0.5, 0
    for rep in range(300):
        c1, c0 = _gdp_samples(mu, 300, 1000 + rep)
        f1, f0 = _gdp_samples(mu, 300, 5000 + rep)
        over += certify_gdp(c1, c0, f1, f0, delta=1e-5, confidence=0.95)["gdp_mu_lower"] > mu
    assert over / 300 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 300)


def test_tradeoff_audit_split_and_model_threshold():
    s1, s0 = _gdp_samples(1.0, 4000, 2)
    split = tradeoff_audit(s1, s0, delta=1e-5, confidence=0.95)
    assert split["gdp_certify_trials"] == [2000, 2000]
    assert split["gdp_threshold_from"] == "calibration split"
    model = tradeoff_audit(s1 * 1.0, s0 * 1.0, delta=1e-5, confidence=0.95, model_mu=1.0)
    assert model["gdp_certify_trials"] == [4000, 4000] and model["gdp_threshold_from"] == "model"
    for r in (split, model):  # a lower bound below the truth, and below the fit here
        assert 0.0 < r["gdp_mu_lower"] < 1.0
        assert r["gdp_epsilon_lower"] == pytest.approx(gdp_epsilon(r["gdp_mu_lower"], 1e-5))


def test_whitebox_fit_comes_close_to_the_exact_epsilon():
    # MOD-SULQ's likelihood-ratio statistic at δ = 0.1 (exact ε(δ) 0.098, μ = 0.349): with 5000 runs
    # per side the fitted μ has a standard deviation of about 0.021, about 0.02 in ε; 0.06 is 3 of
    # them.  The certified ε stays below the exact one.
    s1, s0, model = whitebox_scores("mod_sulq", epsilon=2.0, delta=0.1, trials=5000)
    exact = exact_epsilon(model, 0.1)
    r = tradeoff_audit(s1, s0, delta=0.1, model_mu=model["mu"])
    assert r["gdp_epsilon_fit"] == pytest.approx(exact, abs=0.06)
    assert r["gdp_epsilon_lower"] <= exact


def test_bayesian_interval_around_the_point_and_inside_clopper_pearson():
    # 3000 false positives and 2000 false negatives of 10⁴ each, δ = 0: the point ε is
    # max(log(0.7/0.2), log(0.8/0.3)) = 1.2528; with 10⁴ runs the posterior's sd is about 0.024
    fp, fn, n = 3000, 2000, 10000
    point = max(math.log(0.7 / 0.2), math.log(0.8 / 0.3))
    for prior in ("jeffreys", "uniform"):
        post = posterior_epsilon(fp, n, fn, n, 0.0, prior=prior, credibility=0.95)
        assert post["posterior_median"] == pytest.approx(point, abs=0.01)
        lo, hi = post["credible_interval"]
        assert lo < point < hi and hi - lo < 0.15
        # the one-sided credible bound lies above the Clopper–Pearson bound of the same counts
        cp = float(epsilon_lower_bound(n - fn, n, fp, n, 0.0, 0.05))
        assert cp < post["credible_lower"] < point
    with pytest.raises(ValueError, match="prior"):
        posterior_epsilon(1, 10, 1, 10, 0.0, prior="flat")


def test_bayes_fields_of_a_record():
    rec = {
        "delta": 1e-5,
        "confidence": 0.95,
        "count_D": 900,
        "count_Dprime": 100,
        "audit_trials": [1000, 1000],
        "orientation": "D1>D0",
        "gdp_false_positives": 100,
        "gdp_false_negatives": 100,
        "gdp_certify_trials": [1000, 1000],
    }
    out = bayes_fields(rec)
    assert set(out) == {"bayes_jeffreys", "bayes_uniform", "bayes_gdp_jeffreys"}
    assert out["bayes_jeffreys"]["prior"] == "jeffreys Beta(0.5, 0.5)"
    # FPR = FNR = 0.1: μ = 2Φ⁻¹(0.9) = 2.563, ε_μ(1e-5) ≈ 8.6; the (ε, δ) reading gives log 9 = 2.2
    assert out["bayes_jeffreys"]["posterior_median"] == pytest.approx(math.log(9), abs=0.05)
    mu = 2 * stats.norm.isf(0.1)
    assert out["bayes_gdp_jeffreys"]["posterior_median"] == pytest.approx(
        gdp_epsilon(mu, 1e-5), rel=0.05
    )


def test_laplace_tap_scores_are_its_likelihood_ratio_and_delta_zero_has_no_gdp_reading():
    """amin_cov's eigenvalue tap is a Laplace likelihood ratio, not the sketch's χ² energy: the
    scores are that statistic (bounded by the sum of its shifts, 1/b per unit moved), and at δ = 0
    the μ-GDP reading is marked as none (its ε is ∞ for any μ > 0, which is no violation)."""
    from experiments.audit.tradeoff import tradeoff_audit, whitebox_scores

    s1, s0, m = whitebox_scores("amin_cov", epsilon=2.0, delta=None, trials=300, seed=0)
    assert m["kind"] == "laplace"
    total = float(np.sum(m["shifts"]))
    assert np.all(np.abs(s1) <= total + 1e-9) and np.all(np.abs(s0) <= total + 1e-9)
    assert s1.mean() > s0.mean()  # the statistic leans towards D on D's runs
    rec = tradeoff_audit(s1, s0, delta=0.0)
    assert rec["gdp_epsilon_reading"] == "none at delta = 0"
