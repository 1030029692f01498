"""DP-PCA (mechanisms/dp_pca.py) and k-DP-PCA (mechanisms/k_dp_pca.py): each subroutine against its
lemma (the range histogram's sensitivity and the probability that its scale covers the true range,
the centre's and the clipped mean's noise against sensitivities derived here by brute force), the
per-minibatch budget composed by dp-accounting, the whole run's release, reproducibility, the row
order the module promises, refusals, utility on spiked data, and the audit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanisms import PrivacyInputError, get_mechanism
from mechanisms import dp_pca as mod
from mechanisms.calibration import zcdp_rho_tight
from mechanisms.dp_pca import (
    BUDGET_SPLIT,
    RANGE_LEVELS,
    center_error_bound,
    center_noise_scale,
    clip_around,
    dp_pca,
    mean_noise_scale,
    private_mean,
    private_range,
    range_bin_edges,
    range_histogram,
    range_histogram_sensitivity,
    range_laplace_scale,
)
from mechanisms.k_dp_pca import k_dp_pca


def _unit_rows(n, d, rng, radius=1.0):
    G = rng.standard_normal((n, d))
    return G / np.linalg.norm(G, axis=1, keepdims=True) * rng.uniform(0, radius, size=(n, 1))


def spiked(n, d, k, rng, spike=10.0):
    U = np.linalg.qr(rng.standard_normal((d, k)))[0]
    Z = rng.standard_normal((n, d)) + (math.sqrt(spike) * rng.standard_normal((n, k))) @ U.T
    return Z / np.linalg.norm(Z, axis=1).max(), U


# ---------------------------------------------------------------------------------------------
# Range histogram: bins, sensitivity, and the probability that the released scale covers the range
# ---------------------------------------------------------------------------------------------


def test_range_bins_are_geometric_with_inclusive_upper_edges():
    edges = range_bin_edges(4)
    assert edges.tolist() == [2.0, 1.0, 0.5, 0.25, 0.125]
    r = np.array([2.0, 1.0000001, 1.0, 0.5000001, 0.5, 0.2, 0.125, 0.0])
    assert range_histogram(r, 4).tolist() == [2, 2, 1, 1, 2]
    assert range_histogram(r).sum() == r.size and range_histogram(r).size == RANGE_LEVELS + 1


def test_range_histogram_l1_sensitivity_by_brute_force():
    """Replacing one input moves the histogram of pair distances by at most 2 in L1 (one count down,
    one up), attained; the Laplace scale is that sensitivity over ε_r = √(2ρ_r)."""
    rng = np.random.default_rng(0)
    worst = 0
    for _ in range(300):
        B = int(rng.integers(2, 12))
        g = _unit_rows(B, 3, rng)
        base = range_histogram(
            np.linalg.norm(g[0 : 2 * (B // 2) : 2] - g[1 : 2 * (B // 2) : 2], axis=1)
        )
        h = g.copy()
        h[rng.integers(B)] = _unit_rows(1, 3, rng)[0] * rng.choice([1.0, 1e-6])
        m = B // 2
        other = range_histogram(np.linalg.norm(h[0 : 2 * m : 2] - h[1 : 2 * m : 2], axis=1))
        worst = max(worst, int(np.abs(base - other).sum()))
    assert worst == 2 == range_histogram_sensitivity()
    rho = 0.3
    assert range_laplace_scale(rho) == pytest.approx(2.0 / math.sqrt(2 * rho), rel=1e-15)


def test_private_range_covers_the_true_range_with_the_lemmas_probability():
    """All m pair distances lie in one bin b*: the noisy argmax misses b* only if some Laplace
    variable deviates by m/2, so P(miss) <= (L + 1)·exp(−m/(2b)) (union bound); then τ (the bin's
    upper edge) is >= every pair distance."""
    rng = np.random.default_rng(1)
    d, m, rho_r = 4, 100, 0.05
    b = range_laplace_scale(rho_r)
    bound = (RANGE_LEVELS + 1) * math.exp(-m / (2 * b))
    assert bound < 0.05
    base = np.zeros((2 * m, d))
    base[1::2, 0] = 0.3  # every pair at distance 0.3, in (0.25, 0.5]
    misses = 0
    trials = 400
    for _ in range(trials):
        tau, noisy = private_range(base, rho_r, rng)
        assert noisy.shape == (RANGE_LEVELS + 1,)
        misses += tau < 0.3
    # the empirical miss rate against the bound, with a 3-sigma binomial allowance
    assert misses / trials <= bound + 3 * math.sqrt(bound / trials) + 1e-12


# ---------------------------------------------------------------------------------------------
# Centre and clipped mean: noise against sensitivities derived by brute force
# ---------------------------------------------------------------------------------------------


def test_center_noise_scale_is_its_sensitivity_over_sqrt_two_rho():
    B, rho = 25, 0.2
    # antipodal unit vectors in one slot attain ‖mean − mean′‖ = 2/B, the worst case for norms <= 1
    g = np.zeros((B, 3))
    g[0] = [1, 0, 0]
    h = g.copy()
    h[0] = [-1, 0, 0]
    sens = float(np.linalg.norm(g.mean(0) - h.mean(0)))
    assert sens == pytest.approx(2.0 / B)
    assert center_noise_scale(B, rho) * math.sqrt(2 * rho) == pytest.approx(sens, rel=1e-12)


@pytest.mark.parametrize("radius", [1e-3, 0.3, 5.0])
def test_clipped_sum_sensitivity_and_mean_noise_scale(radius):
    """Σ Π_R(g_i − c) moves by at most min(2R, 2) when one g_i (norm <= 1) is replaced (brute force
    over random and antipodal replacements), and σ_m·√(2ρ_m) = min(2R, 2)/B."""
    rng = np.random.default_rng(2)
    B, d, rho = 10, 3, 0.4
    worst = 0.0
    for _ in range(400):
        g = _unit_rows(B, d, rng)
        c = _unit_rows(1, d, rng)[0] * rng.uniform(0, 1)
        h = g.copy()
        i = rng.integers(B)
        h[i] = (
            -g[i] / max(np.linalg.norm(g[i]), 1e-12)
            if rng.random() < 0.5
            else _unit_rows(1, d, rng)[0]
        )
        s1 = clip_around(g, c, radius)[0].sum(0)
        s2 = clip_around(h, c, radius)[0].sum(0)
        worst = max(worst, float(np.linalg.norm(s1 - s2)))
    assert worst <= min(2 * radius, 2.0) * (1 + 1e-12)
    if radius < 1:
        assert worst > 1.9 * radius  # the bound is attained up to sampling
    assert mean_noise_scale(radius, B, rho) * math.sqrt(2 * rho) == pytest.approx(
        min(2 * radius, 2.0) / B, rel=1e-12
    )


def test_center_error_bound_holds_with_its_probability():
    rng = np.random.default_rng(3)
    d, s = 50, 0.1
    e = center_error_bound(s, d, failure=0.05)
    norms = np.linalg.norm(rng.normal(0, s, size=(4000, d)), axis=1)
    assert np.mean(norms > e) <= 0.05


def test_private_mean_radius_and_noise_follow_the_release():
    rng = np.random.default_rng(4)
    g = _unit_rows(64, 5, rng, radius=0.2)
    rho = 0.5
    est, info = private_mean(g, rho, np.random.default_rng(5))
    rho_r, rho_c, rho_m = (rho * s / sum(BUDGET_SPLIT) for s in BUDGET_SPLIT)
    assert info["sigma_c"] == pytest.approx(center_noise_scale(64, rho_c))
    assert info["radius"] == pytest.approx(info["tau"] + center_error_bound(info["sigma_c"], 5))
    assert info["sigma_m"] == pytest.approx(mean_noise_scale(info["radius"], 64, rho_m))
    assert np.linalg.norm(est - g.mean(0)) < 0.5


# ---------------------------------------------------------------------------------------------
# Composition: one minibatch's three releases by dp-accounting; parallel over minibatches
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-2), (0.5, 1e-5), (4.0, 1e-6)])
def test_one_minibatch_composes_within_the_claim_by_dp_accounting(eps, delta):
    """Laplace (L1 sensitivity 2, scale b) ∘ Gaussian (Δ_c, σ_c) ∘ Gaussian (Δ_m, σ_m) with the
    module's scales at ρ = zcdp_rho_tight(ε, δ): dp-accounting's PLD accountant, independently of
    the zCDP algebra, certifies ε(δ) <= ε."""
    import dp_accounting
    from dp_accounting.pld import PLDAccountant

    rho = zcdp_rho_tight(eps, delta)
    rho_r, rho_c, rho_m = (rho * s / sum(BUDGET_SPLIT) for s in BUDGET_SPLIT)
    B, R = 100, 0.37
    b = range_laplace_scale(rho_r)
    sc = center_noise_scale(B, rho_c)
    sm = mean_noise_scale(R, B, rho_m)
    acc = PLDAccountant()
    acc.compose(
        dp_accounting.ComposedDpEvent(
            [
                dp_accounting.LaplaceDpEvent(b / range_histogram_sensitivity()),
                dp_accounting.GaussianDpEvent(sc / (2.0 / B)),
                dp_accounting.GaussianDpEvent(sm / (min(2 * R, 2.0) / B)),
            ]
        )
    )
    assert acc.get_epsilon(delta) <= eps * (1 + 1e-6)


def test_whole_run_records_rho_and_the_per_minibatch_noise():
    rng = np.random.default_rng(6)
    X, _ = spiked(2000, 10, 1, rng)
    out = dp_pca(X, 1, rng=np.random.default_rng(7), epsilon=1.0, delta=1e-5, batch_size=250)
    g, rel = out.guarantee, out.release
    assert (g.epsilon, g.delta, g.neighbouring, g.status) == (
        1.0,
        1e-5,
        "replace-one-row",
        "proven",
    )
    assert g.rho == pytest.approx(zcdp_rho_tight(1.0, 1e-5)) == rel["rho"]
    assert rel["iterations"] == 8 and rel["samples_used"] == 2000
    rho_m = g.rho * BUDGET_SPLIT[2] / sum(BUDGET_SPLIT)
    for R, s in zip(rel["clip_radius_per_iteration"], rel["noise_std_per_iteration"]):
        assert s == pytest.approx(min(2 * R, 2.0) / 250 / math.sqrt(2 * rho_m), rel=1e-12)
    V = out.components
    assert V.shape == (10, 1) and np.linalg.norm(V) == pytest.approx(1.0)
    assert "n_gradients_clipped" in out.diagnostics and "n_gradients_clipped" not in rel
    r2 = dp_pca(X, 1, rng=np.random.default_rng(7), rho=0.01, delta=1e-5, batch_size=250)
    assert r2.guarantee.rho == 0.01 and r2.guarantee.epsilon < 1.0


# ---------------------------------------------------------------------------------------------
# Reproducibility, row order, refusals
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn,k", [(dp_pca, 1), (k_dp_pca, 2)])
def test_bit_for_bit_reproducible_from_the_rng(fn, k):
    X = _unit_rows(400, 6, np.random.default_rng(8))
    a = fn(X, k, rng=np.random.default_rng(9), epsilon=1.0, delta=1e-5)
    b = fn(X, k, rng=np.random.default_rng(9), epsilon=1.0, delta=1e-5)
    c = fn(X, k, rng=np.random.default_rng(10), epsilon=1.0, delta=1e-5)
    assert np.array_equal(a.components, b.components) and a.release == b.release
    assert not np.array_equal(a.components, c.components)


@pytest.mark.parametrize("fn,k", [(dp_pca, 1), (k_dp_pca, 2)])
def test_shuffle_reads_the_rows_in_the_rngs_first_permutation(fn, k):
    """The promise: with shuffle=True the rows are read in the order rng.permutation(n), the
    generator's first draw, so the run equals shuffle=False on the permuted rows with the generator
    after that draw; the law of the output does not depend on the row order."""
    X = _unit_rows(300, 5, np.random.default_rng(11))
    a = fn(X, k, rng=np.random.default_rng(12), epsilon=1.0, delta=1e-5)
    r = np.random.default_rng(12)
    perm = r.permutation(300)
    b = fn(X[perm], k, rng=r, epsilon=1.0, delta=1e-5, shuffle=False)
    assert np.array_equal(a.components, b.components)


def test_k_dp_pca_with_one_round_is_dp_pca():
    """Both mechanisms run the one pass of mechanisms.dp_pca.private_oja: with k = 1, k-DP-PCA reads
    the same rows, draws the same noise and releases the same per-minibatch values as DP-PCA; its
    output is DP-PCA's w orthonormalised (the same unit vector up to its sign and rounding)."""
    X = _unit_rows(500, 7, np.random.default_rng(21))
    kw = dict(epsilon=1.0, delta=1e-5, return_trace=True)
    a = dp_pca(X, 1, rng=np.random.default_rng(22), **kw)
    b = k_dp_pca(X, 1, rng=np.random.default_rng(22), **kw)
    assert b.release.pop("rounds") == 1
    assert repr(a.release) == repr(b.release)
    assert abs(float(a.components[:, 0] @ b.components[:, 0])) == pytest.approx(1.0, abs=1e-12)


def test_unshuffled_run_reads_the_rows_in_order_and_not_the_rest():
    """shuffle=False: a single pass in the given order; the rows after T·B are never read."""
    X = _unit_rows(103, 4, np.random.default_rng(13))
    Y = X.copy()
    Y[100:] = -Y[100:]
    a = dp_pca(
        X, 1, rng=np.random.default_rng(14), epsilon=1.0, delta=1e-5, batch_size=20, shuffle=False
    )
    b = dp_pca(
        Y, 1, rng=np.random.default_rng(14), epsilon=1.0, delta=1e-5, batch_size=20, shuffle=False
    )
    assert a.release["samples_used"] == 100 and np.array_equal(a.components, b.components)


def test_refusals_are_one_line_and_quote_no_data():
    X = _unit_rows(50, 4, np.random.default_rng(15))
    rng = np.random.default_rng(0)
    with pytest.raises(PrivacyInputError, match="k = 1"):
        dp_pca(X, 2, rng=rng, epsilon=1.0)
    with pytest.raises(PrivacyInputError, match="at least 2 rows"):
        dp_pca(X[:3], 1, rng=rng, epsilon=1.0, iterations=2)
    with pytest.raises(PrivacyInputError, match="fewer than iterations x batch_size"):
        dp_pca(X, 1, rng=rng, epsilon=1.0, batch_size=10, iterations=6)
    with pytest.raises(PrivacyInputError, match="norm above the bound"):
        dp_pca(3 * X, 1, rng=rng, epsilon=1.0)
    with pytest.raises(PrivacyInputError, match="batch_size"):
        k_dp_pca(X, 2, rng=rng, epsilon=1.0, batch_size=0)
    with pytest.raises(PrivacyInputError):
        dp_pca(X, 1, rng=rng, epsilon=-1.0)
    with pytest.raises(PrivacyInputError, match="shuffle"):
        dp_pca(X, 1, rng=rng, epsilon=1.0, shuffle="no")
    try:
        dp_pca(3 * X, 1, rng=rng, epsilon=1.0)
    except PrivacyInputError as e:
        assert "\n" not in str(e) and str(round(float(np.abs(3 * X).max()), 3)) not in str(e)


def test_privacy_holds_for_adversarial_rows_the_clip_bounds_one_gradient():
    """No sub-Gaussian assumption in the privacy: a minibatch of identical rows and one outlier gets
    a tiny range, and the outlier's gradient is projected onto the ball of radius R (counted as a
    diagnostic), so its influence on the released mean is at most 2R/B."""
    B = 40
    g = np.tile([0.5, 0.0, 0.0], (B, 1))
    g[7] = [-1.0, 0.0, 0.0]
    est, info = private_mean(g, 1.0, np.random.default_rng(16))
    assert info["tau"] <= 2.0 ** (1 - RANGE_LEVELS) * 1.0001
    assert info["radius"] == pytest.approx(info["tau"] + center_error_bound(info["sigma_c"], 3))
    assert info["n_clipped"] == 1 and info["radius"] < 0.5


# ---------------------------------------------------------------------------------------------
# Utility on spiked covariance data (sub-Gaussian: the paper's regime)
# ---------------------------------------------------------------------------------------------


def test_dp_pca_finds_the_spike():
    rng = np.random.default_rng(17)
    X, U = spiked(20000, 20, 1, rng)
    out = dp_pca(X, 1, rng=np.random.default_rng(18), epsilon=1.0, delta=1e-5)
    assert 1 - float(out.components[:, 0] @ U[:, 0]) ** 2 < 0.05


def test_k_dp_pca_finds_the_spiked_subspace_and_is_orthonormal():
    rng = np.random.default_rng(19)
    X, U = spiked(20000, 20, 2, rng)
    out = k_dp_pca(X, 2, rng=np.random.default_rng(20), epsilon=1.0, delta=1e-5)
    V = out.components
    assert np.allclose(V.T @ V, np.eye(2), atol=1e-10)
    assert np.linalg.norm(U @ U.T - V @ V.T, 2) ** 2 < 0.2
    assert out.release["rounds"] == 2 and out.release["samples_used"] <= 20000


def test_registered():
    assert get_mechanism("dp_pca") is dp_pca and get_mechanism("k_dp_pca") is k_dp_pca
    assert mod.RELATION == "replace-one-row"


# ---------------------------------------------------------------------------------------------
# The audit: the unclipped variant is caught, the real mechanism stays within its claim
# ---------------------------------------------------------------------------------------------


def zero_base_design(n: int = 4000):
    """n − 1 zero rows and one row e1 (D) vs e2 (D′): the range is 0, so the clipping radius is the
    centre's error bound, which shrinks as 1/B, while an unclipped gradient moves the mean by 1/B."""
    from experiments.audit.designs import AuditDesign, check_neighbours

    X1, X0 = np.zeros((n, 2)), np.zeros((n, 2))
    X1[0], X0[0] = [1.0, 0.0], [0.0, 1.0]
    check_neighbours(X1, X0, "replace-one-row")
    return AuditDesign(
        X1, X0, "replace-one-row", "zero_base", f"{n - 1} zero rows; e1 vs e2", "proj_e1"
    )


@pytest.mark.slow
def test_audit_catches_the_unclipped_mean_and_keeps_dp_pca_within_its_claim():
    from experiments.audit import audit_mechanism
    from experiments.audit.variants import dp_pca_variant

    des = zero_base_design()
    kw = dict(epsilon=2.0, delta=1e-5, trials=2000, seed=0, batch_size=4000, design=des)
    broken = audit_mechanism(dp_pca_variant("unclipped"), **kw)
    assert broken["violation"] and broken["audited_epsilon_lower"] > 2.0
    honest = audit_mechanism("dp_pca", **kw)
    assert not honest["violation"] and honest["audited_epsilon_lower"] <= 2.0
