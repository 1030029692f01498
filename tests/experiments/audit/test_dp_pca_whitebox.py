"""The white-box audit of DP-PCA and k-DP-PCA (mechanisms/dp_pca.py, mechanisms/k_dp_pca.py): the
likelihood-ratio test on the private mean of the minibatch holding the differing row
(experiments/audit/whitebox.py: CoupledMeanLRT, oja_gradient_design).

On the design, the differing row's gradient is clipped to ±R around the private centre in D and D′,
so the clipped mean moves by 2R/B against noise σ_m = (2R/B)/√(2ρ_m): μ = √(2ρ_m) for the real
mechanism and 2√(2ρ_m) with every noise scale halved (the radius halves with the centre's noise,
the noise is half of the sensitivity at that radius)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.audit import exact_epsilon, measure_mu, whitebox_audit
from experiments.audit.variants import dp_pca_variant
from experiments.audit.whitebox import (
    MeanRelease,
    check_mean_model,
    oja_gradient_design,
)
from mechanisms.calibration import zcdp_rho_tight
from mechanisms.dp_pca import BUDGET_SPLIT, clip_around

EPS = 2.0


def _rho_mean(delta: float) -> float:
    return zcdp_rho_tight(EPS, delta) * BUDGET_SPLIT[2] / sum(BUDGET_SPLIT)


def test_the_design_is_a_replace_one_pair_with_antipodal_gradients():
    des = oja_gradient_design("replace-one-row", n=10)
    assert des.X1.shape == des.X0.shape == (10, 2)
    assert np.array_equal(des.X1[1:], des.X0[1:])
    assert des.X1[0].tolist() == [1.0, 0.0] and des.X0[0].tolist() == [0.0, 0.0]
    w = np.array([0.6, 0.8])
    grad = [(x @ w) * x for x in (des.X1[0], des.X0[0], des.X1[1])]
    # the differing gradients lie on opposite sides of the base rows' gradient, at the same distance
    a, b = grad[0] - grad[2], grad[1] - grad[2]
    assert np.allclose(a, -b, rtol=1e-12) and a[0] == pytest.approx(0.3)


@pytest.mark.parametrize("mechanism", ["dp_pca", "k_dp_pca"])
@pytest.mark.parametrize("delta", [0.1, 1e-5])
def test_measured_mu_is_the_calibrations_and_doubles_with_the_noise_halved(mechanism, delta):
    """μ measured on the code run equals √(2ρ_m) to 1e-3 (relative): the clipped gradients are not
    exactly antipodal, because the centre's noise has a component along e₂, which shortens the shift
    by a relative O(σ_c²/w₁²), about 1e-4 here.  Halving the noise doubles μ; its exact ε(δ) then
    exceeds the claim, the real mechanism's does not (measured: 1.04 and 3.45 at δ = 0.1, 1.51 and
    3.28 at δ = 1e-5, against ε = 2)."""
    target = math.sqrt(2 * _rho_mean(delta))
    real = measure_mu(mechanism, epsilon=EPS, delta=delta)
    half = measure_mu(dp_pca_variant("noise_halved", mechanism), epsilon=EPS, delta=delta)
    assert real["mu"] == pytest.approx(target, rel=1e-3)
    assert half["mu"] == pytest.approx(2 * target, rel=1e-3)
    assert exact_epsilon(real, delta) < EPS < exact_epsilon(half, delta)
    assert real["design"].name == "oja_gradient" and real["n_releases"] == 1


def test_the_statistic_has_the_modelled_law_under_both_datasets():
    """T = ⟨ĝ − mid, shift⟩/σ² is N(+μ²/2, μ²) under D and N(−μ²/2, μ²) under D′.  Over 200 runs
    per side, the mean of T/μ is within 4 standard errors (4/√200 = 0.28) of ±μ/2 = ±0.47, and its
    standard deviation within 20 % of 1 (the sample sd's relative error is about 1/√400 = 0.05): a
    wrong σ (a factor 2), a wrong sign or the wrong dataset as the neighbour would fail."""
    from experiments.audit.tradeoff import whitebox_scores

    s1, s0, m = whitebox_scores("dp_pca", epsilon=EPS, delta=0.1, trials=200, seed=3)
    mu = m["mu"]
    for s, sign in ((s1, 1), (s0, -1)):
        z = s / mu
        assert abs(z.mean() - sign * mu / 2) < 4 / math.sqrt(200)
        assert 0.8 < z.std(ddof=1) < 1.2


def test_the_mean_model_check_refuses_a_mean_the_code_does_not_compute():
    rng = np.random.default_rng(0)
    g = rng.uniform(-0.5, 0.5, size=(6, 2))
    c = g.mean(axis=0)
    m = c + clip_around(g, c, 0.1)[0].mean(axis=0)
    check_mean_model([MeanRelease(m, g, c, 0.1, 1.0, clip_around, None, None)])
    with pytest.raises(RuntimeError, match="update the white-box tap"):
        check_mean_model([MeanRelease(m + 1e-9, g, c, 0.1, 1.0, clip_around, None, None)])


@pytest.mark.slow
def test_whitebox_audit_catches_the_halved_noise_and_keeps_dp_pca_within_its_claim():
    """2,000 runs per dataset at ε = 2, δ = 0.1 (seed 0).  Measured: the halved noise certifies
    2.69 (expected 2.64 from μ = 1.885; exact ε(δ) 3.45); the real mechanism 0.88 (exact 1.04).
    Tolerance: with the model's event probabilities (0.277 and 0.0066), the certified bound of the
    halved noise falls to 2 or below with probability 5e-4 over the trials' randomness (binomial
    simulation of the counts), so the assertion tests the variant, not the seed; the real
    mechanism's bound is at most its exact ε(δ) except with probability 0.05, and that is half the
    claim."""
    kw = dict(epsilon=EPS, delta=0.1, trials=2000, seed=0)
    bad = whitebox_audit(dp_pca_variant("noise_halved"), **kw)
    assert bad["statistical_violation"] and bad["audited_epsilon_lower"] > EPS
    assert bad["exact_violation"] and bad["exact_epsilon"] > EPS
    ok = whitebox_audit("dp_pca", **kw)
    assert not ok["violation"] and ok["audited_epsilon_lower"] <= ok["exact_epsilon"] < EPS
