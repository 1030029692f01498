"""Dong, Liang & Yi's covariance mechanisms (GaussCov, SeparateCov, AdaptiveCov, LapCov,
SeparateLapCov) and CoinPress's covariance: calibration against sensitivities derived again here,
the zCDP budget, the guarantee, row order, reproducibility, refusals, and the audit (the real
mechanism within its claim, a known-broken variant caught)."""

import itertools
import math

import numpy as np
import pytest

from mechanisms import PrivacyInputError, get_mechanism
from mechanisms.calibration import (
    gaussian_epsilon_for_delta,
    zcdp_epsilon_tight,
    zcdp_rho_tight,
)
from mechanisms.coinpress import coinpress_budget_split, coinpress_clip_radius
from mechanisms.dong_cov import _norm_bins, _svt_queries

ZCDP = ["gauss_cov", "separate_cov", "adaptive_cov", "coinpress_cov"]
PURE = ["lap_cov", "separate_lap_cov"]
ALL = ZCDP + PURE


def _data(n=300, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.linspace(1.0, 0.2, d)
    return X / np.max(np.linalg.norm(X, axis=1))


def _run(name, X, seed=1, **kw):
    p = {"epsilon": 1.0} if name in PURE else {"epsilon": 1.0, "delta": 1e-5}
    return get_mechanism(name)(X, 2, rng=np.random.default_rng(seed), **{**p, **kw})


def _upper(D):
    return D[np.triu_indices(D.shape[0])]


def _pairs(d, count=400, seed=3):
    """Unit-ball rows x, y: the extreme pairs (e1 vs e2, e1 vs -e1, a flat vector vs an alternating
    one) and random ones of random norms."""
    rng = np.random.default_rng(seed)
    e = np.eye(d)
    flat = np.ones(d) / math.sqrt(d)
    alt = flat * np.where(np.arange(d) % 2, -1.0, 1.0)
    out = [(e[0], e[1]), (e[0], -e[0]), (flat, alt), (flat, e[0])]
    for _ in range(count):
        x, y = rng.standard_normal((2, d))
        x *= rng.uniform() ** 0.2 / np.linalg.norm(x)
        y *= rng.uniform() ** 0.2 / np.linalg.norm(y)
        out.append((x, y))
    return out


# ---------------------------------------------------------------------------------------------
# sensitivities, derived here from the definitions
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [2, 5, 12])
def test_sensitivities_bound_every_pair_and_the_l2_ones_are_attained(d):
    n = 7
    l2, eig2, eig1, l1 = [], [], [], []
    for x, y in _pairs(d):
        D = (np.outer(x, x) - np.outer(y, y)) / n
        l2.append(np.linalg.norm(_upper(D)))
        l1.append(np.abs(_upper(D)).sum())
        base = np.diag(np.linspace(0.05, 0.3, d)) / n
        lam = np.linalg.eigvalsh(base + np.outer(x, x) / n)
        lam_p = np.linalg.eigvalsh(base + np.outer(y, y) / n)
        eig2.append(np.linalg.norm(lam - lam_p))
        eig1.append(np.abs(lam - lam_p).sum())
    assert max(l2) <= math.sqrt(2) / n * (1 + 1e-12)
    assert max(l2) == pytest.approx(math.sqrt(2) / n)  # e1 vs e2
    assert max(eig2) <= math.sqrt(2) / n * (1 + 1e-12)
    assert max(eig1) <= 2 / n * (1 + 1e-12)
    assert max(l1) <= math.sqrt(2) * d / n  # LapCov's constant


def _measured_rho(sens_sigma_pairs):
    return sum((s / sig) ** 2 / 2 for s, sig in sens_sigma_pairs)


def test_gauss_cov_noise_is_calibrated_to_rho_and_its_exact_profile():
    """σ = Δ/sqrt(2ρ) with Δ = √2/n: the Gaussian is exactly ρ-zCDP (ρ = Δ²/(2σ²)), its exact
    privacy profile (Balle–Wang) at the certified δ is at most ε, and the noise actually added has
    that standard deviation (zero data: Σ̃ is the noise)."""
    n, d, eps, delta = 50, 40, 2.0, 1e-5
    out = get_mechanism("gauss_cov")(
        np.zeros((n, d)), 1, rng=np.random.default_rng(0), epsilon=eps, delta=delta
    )
    g, sigma = out.guarantee, out.release["noise_scale"]
    assert g.rho == zcdp_rho_tight(eps, delta) and (g.epsilon, g.delta) == (eps, delta)
    assert _measured_rho([(math.sqrt(2) / n, sigma)]) == pytest.approx(g.rho, rel=1e-12)
    assert zcdp_epsilon_tight(g.rho, delta) <= eps
    assert gaussian_epsilon_for_delta(math.sqrt(2) / n / sigma, delta) <= eps
    noise = _upper(out.covariance)
    assert np.std(noise) == pytest.approx(sigma, rel=0.06)


def test_separate_cov_splits_rho_between_its_two_gaussians():
    n, d = 80, 30
    out = get_mechanism("separate_cov")(
        np.zeros((n, d)), 1, rng=np.random.default_rng(0), rho=0.4, delta=1e-6
    )
    r = out.release
    per = [(math.sqrt(2) / n, r["noise_scale"]), (math.sqrt(2) / n, r["eigenvalue_noise_scale"])]
    assert _measured_rho(per[:1]) == pytest.approx(0.2, rel=1e-12)
    assert _measured_rho(per) == pytest.approx(0.4, rel=1e-12)
    assert out.guarantee.rho == 0.4
    assert out.guarantee.epsilon == zcdp_epsilon_tight(0.4, 1e-6)


@pytest.mark.parametrize("name", PURE)
def test_laplace_scales_against_the_sensitivities(name):
    n, d, eps = 60, 9, 0.7
    out = _run(name, _data(n, d), epsilon=eps)
    r = out.release
    assert out.guarantee.delta == 0.0 and out.guarantee.rho is None
    if name == "lap_cov":
        assert r["noise_scale"] * eps == pytest.approx(math.sqrt(2) * d / n, rel=1e-12)
    else:  # ε/2 to each half
        assert r["noise_scale"] * eps / 2 == pytest.approx(math.sqrt(2) * d / n, rel=1e-12)
        assert r["eigenvalue_noise_scale"] * eps / 2 == pytest.approx(2 / n, rel=1e-12)


def test_adaptive_cov_budget_sums_to_rho_and_svt_queries_have_sensitivity_one():
    from mechanisms.dong_cov import svt_threshold_scale, trace_noise_scale

    n, rho = 100, 0.3
    assert _measured_rho([(1 / n, trace_noise_scale(n, rho / 8))]) == pytest.approx(rho / 8)
    eps_s = math.sqrt(2 * rho / 8)  # AboveThreshold: threshold Lap(2/ε_s), queries Lap(4/ε_s)
    assert svt_threshold_scale(eps_s) == pytest.approx(2 / eps_s)
    for X in (_data(n, 5, seed=s) * f for s, f in [(0, 1.0), (1, 0.3), (2, 0.01)]):
        out = get_mechanism("adaptive_cov")(X, 1, rng=np.random.default_rng(0), rho=rho)
        r = out.release
        per = [(math.sqrt(2) * r["radius"] ** 2 / n, r["noise_scale"])]
        if r["method"] == "separate":
            per.append((math.sqrt(2) * r["radius"] ** 2 / n, r["eigenvalue_noise_scale"]))
        assert _measured_rho(per) == pytest.approx(0.75 * rho, rel=1e-12)
        assert rho / 8 + rho / 8 + 0.75 * rho == pytest.approx(out.guarantee.rho)
    # the queries move by at most 1 when one row is replaced (each row adds a term in [0, 1])
    rng = np.random.default_rng(5)
    t = 80
    noise = lambda j: 1e-3 * 2.0**-j  # noqa: E731
    for _ in range(200):
        X = _data(40, 4, seed=int(rng.integers(1000))) * rng.uniform(0.001, 1)
        Y = X.copy()
        y = rng.standard_normal(4)
        Y[0] = y / np.linalg.norm(y) * rng.choice([1.0, rng.uniform(), 2.0**-3, 0.0])
        q = _svt_queries(_norm_bins(np.linalg.norm(X, axis=1), t), 40, t, noise)
        q2 = _svt_queries(_norm_bins(np.linalg.norm(Y, axis=1), t), 40, t, noise)
        assert np.max(np.abs(q - q2)) <= 1.0 + 1e-12


def test_norm_bins_put_powers_of_two_at_the_top_of_their_bin():
    counts = _norm_bins(np.array([1.0, 0.5, 0.75, 0.25, 0.0, 1e-30]), 80)
    # (1/2, 1]: 1, 0.75; (1/4, 1/2]: 0.5; (1/8, 1/4]: 0.25; 0 and 1e-30 (below 2^-79) in none
    assert counts[1] == 2 and counts[2] == 1 and counts[3] == 1 and counts.sum() == 4


def test_coinpress_steps_compose_to_rho():
    n, d, rho = 150, 4, 0.5
    for t in (1, 2, 3, 5):
        split = coinpress_budget_split(rho, t)
        assert sum(split) == pytest.approx(rho) and split[-1] == pytest.approx(
            rho if t == 1 else 0.75 * rho
        )
        out = get_mechanism("coinpress_cov")(
            _data(n, d), 1, rng=np.random.default_rng(0), rho=rho, iterations=t
        )
        gamma = out.release["gamma"]
        assert gamma == coinpress_clip_radius(n, d, 0.1)
        per = [(math.sqrt(2) * gamma**2 / n, s) for s in out.release["noise_scales"]]
        assert _measured_rho(per) == pytest.approx(rho, rel=1e-12)


def test_coinpress_clips_rows_at_gamma(monkeypatch):
    """The clipped branch: with γ = 0.5 (patched) and no noise, one step's estimate is the second
    moment of the rows clipped to norm γ, computed here directly."""
    from mechanisms import coinpress

    monkeypatch.setattr(coinpress, "coinpress_clip_radius", lambda n, d, beta: 0.5)
    monkeypatch.setattr(coinpress, "coinpress_noise_scale", lambda n, g, r: 0.0)
    X = _data(400, 3)
    out = get_mechanism("coinpress_cov")(X, 1, rng=np.random.default_rng(0), rho=1.0, iterations=1)
    norms = np.linalg.norm(X, axis=1)
    W = X * np.minimum(1.0, 0.5 / norms)[:, None]
    assert out.diagnostics["n_clipped_gamma"] == int(np.sum(norms > 0.5)) > 0
    np.testing.assert_allclose(out.covariance, W.T @ W / 400, atol=1e-14)
    assert coinpress.COVARIANCE_BOUND == 1.0


# ---------------------------------------------------------------------------------------------
# the output
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_output_orthonormal_covariance_released_and_reproducible(name):
    X = _data()
    a, b = _run(name, X), _run(name, X)
    assert a.components.shape == (6, 2)
    np.testing.assert_allclose(a.components.T @ a.components, np.eye(2), atol=1e-10)
    assert a.covariance.shape == (6, 6) and np.array_equal(a.covariance, a.covariance.T)
    assert a.components.tobytes() == b.components.tobytes()
    assert a.covariance.tobytes() == b.covariance.tobytes()
    assert a.release == b.release and a.guarantee.neighbouring == "replace-one-row"
    assert "n_clipped" in a.diagnostics and "n_clipped" not in a.release
    if name in ZCDP:
        assert a.guarantee.rho == zcdp_rho_tight(1.0, 1e-5)
        assert a.guarantee.as_dict()["rho"] == a.guarantee.rho


@pytest.mark.parametrize("name", ALL)
def test_output_does_not_depend_on_row_order(name):
    X = _data(200, 5)
    ref = _run(name, X)
    rng = np.random.default_rng(4)
    for _ in range(3):
        out = _run(name, X[rng.permutation(200)])
        assert out.covariance.tobytes() == ref.covariance.tobytes()
        assert out.components.tobytes() == ref.components.tobytes()
        assert out.release == ref.release


@pytest.mark.parametrize("name", ALL)
def test_refusals(name):
    X = _data()
    X[3] = 0.0
    X[3, 0] = 2.0
    with pytest.raises(PrivacyInputError, match="L2 norm above"):
        _run(name, X)
    assert _run(name, X, clip=True).diagnostics["n_clipped"] == 1
    with pytest.raises(PrivacyInputError):
        _run(name, _data(), epsilon=-1.0)
    if name in ("adaptive_cov", "coinpress_cov"):
        for bad in (0.0, 1.0, "x"):
            with pytest.raises(PrivacyInputError):
                _run(name, _data(), beta=bad)
    if name == "coinpress_cov":
        for bad in (0, 1.5, True):
            with pytest.raises(PrivacyInputError):
                _run(name, _data(), iterations=bad)


@pytest.mark.parametrize("name", ZCDP)
def test_explicit_rho_records_the_epsilon_it_certifies(name):
    out = _run(name, _data(), rho=0.05)
    assert out.guarantee.rho == 0.05
    assert out.guarantee.epsilon == zcdp_epsilon_tight(0.05, 1e-5)


# ---------------------------------------------------------------------------------------------
# the audit
# ---------------------------------------------------------------------------------------------


def test_whitebox_audit_gauss_cov_within_claim_and_halved_noise_caught():
    """GaussCov is one Gaussian of μ = sqrt(2ρ) on the full-sensitivity pair: exact ε(δ) 1.84 at
    ε = 2, δ = 10⁻⁵ (the zCDP conversion is looser than the exact profile); with half the noise,
    4.03 > 2: the white-box verdict says violation."""
    from experiments.audit import miscalibrated, whitebox_audit

    ok = whitebox_audit("gauss_cov", epsilon=2.0, delta=1e-5, trials=200)
    assert not ok["violation"] and ok["mu"] == pytest.approx(
        math.sqrt(2 * zcdp_rho_tight(2.0, 1e-5)), rel=1e-9
    )
    assert 1.83 < ok["exact_epsilon"] < 1.85
    bad = whitebox_audit(miscalibrated("gauss_cov", 0.5), epsilon=2.0, delta=1e-5, trials=200)
    assert bad["exact_violation"] and bad["exact_epsilon"] > 4.0


@pytest.mark.slow
@pytest.mark.parametrize(
    "name,factor", list(itertools.product(["coinpress_cov", "separate_cov"], [None]))
)
def test_design_audit_keeps_the_real_mechanism_within_claim(name, factor):
    from experiments.audit import audit_mechanism

    r = audit_mechanism(name, epsilon=2.0, delta=1e-5, trials=3000)
    assert not r["violation"] and r["audited_epsilon_lower"] <= 2.0


@pytest.mark.slow
def test_design_audit_catches_coinpress_with_its_noise_cut():
    """On unit-ball rows CoinPress is far more private than claimed (its clip radius γ is set for
    Gaussian rows of norm about sqrt(d)), so only a large cut shows: noise × 0.005."""
    from experiments.audit import audit_mechanism, miscalibrated

    r = audit_mechanism(miscalibrated("coinpress_cov", 0.005), epsilon=2.0, delta=1e-5, trials=3000)
    assert r["violation"] and r["audited_epsilon_lower"] > 2.0
