"""Tests of the Hardt–Price private power method (mechanisms/noisy_power.py)."""

import math

import numpy as np
import pytest

from mechanisms._base import PrivacyInputError
from mechanisms.calibration import gaussian_sigma, zcdp_rho_for, zcdp_to_epsilon
from mechanisms.linalg import random_orthonormal, top_k_eigenvectors
from mechanisms.metrics import projector_distance
from mechanisms.noisy_power import (
    PAPER_EPS_FACTOR,
    noisy_power,
    noisy_power_laplace_scale,
    noisy_power_noise_scale,
    noisy_power_row_noise_scale,
    noisy_power_zcdp_noise_scale,
)


def spiked(n, d, k, rng, spike=20.0):
    U = random_orthonormal(d, k, rng)
    Xs = rng.standard_normal((n, k)) * math.sqrt(spike) @ U.T + rng.standard_normal((n, d))
    Xs /= np.linalg.norm(Xs, axis=1).max()
    return Xs, U


def test_noise_scale_formulas():
    eps, delta, p, L = 0.5, 1e-6, 4, 7
    assert noisy_power_noise_scale(eps, delta, p, L) == pytest.approx(
        math.sqrt(4 * p * L * math.log(1e6)) / eps
    )
    assert noisy_power_row_noise_scale(eps, delta, L, "replace-one-row") == pytest.approx(
        math.sqrt(2) * math.sqrt(4 * L * math.log(1e6)) / eps
    )
    assert noisy_power_row_noise_scale(eps, delta, L, "add-remove-one-row") == pytest.approx(
        math.sqrt(4 * L * math.log(1e6)) / eps
    )
    assert noisy_power_laplace_scale(eps, p, L) == pytest.approx(p * L / eps)
    assert noisy_power_laplace_scale(
        eps, p, L, d=9, neighbouring="replace-one-row"
    ) == pytest.approx(2 * L * 3 * 2 / eps)


def test_paper_sigma_is_dp_by_zcdp():
    """The paper's sigma gives total rho = eps^2/(8 log 1/delta), which is (eps, delta)-DP in the stated range."""
    for eps, delta in [(0.1, 1e-5), (1.0, 1e-6), (2.0, 1e-3)]:
        p, L = 3, 5
        sigma = noisy_power_noise_scale(eps, delta, p, L)
        rho = (
            L * p / (2 * sigma**2)
        )  # per-product L2 sensitivity sqrt(p) (entry-level, ||X||_inf factored out)
        assert rho == pytest.approx(eps**2 / (8 * math.log(1 / delta)))
        assert zcdp_to_epsilon(rho, delta) <= eps + 1e-12
        # the zCDP-exact inversion is never larger and is tight
        sz = noisy_power_zcdp_noise_scale(eps, delta, p, L)
        assert sz <= sigma
        assert zcdp_to_epsilon(L * p / (2 * sz**2), delta) == pytest.approx(eps)


def test_gaussian_sigma_min_of_valid_calibrations():
    s = gaussian_sigma(1.0, 0.5, 1e-5)
    assert s <= math.sqrt(2 * math.log(1.25e5)) / 0.5 + 1e-12
    assert s <= math.sqrt(1 / (2 * zcdp_rho_for(0.5, 1e-5))) + 1e-12
    # composition T times costs sqrt(T) under zCDP
    assert gaussian_sigma(1.0, 3.0, 1e-5, compositions=4) == pytest.approx(
        2 * gaussian_sigma(1.0, 3.0, 1e-5, compositions=1)
    )


def test_row_sensitivity_bound_sqrt2():
    """max ||(xx^T - yy^T) X||_F over unit x, y, orthonormal X is sqrt(2) (attained), never above."""
    rng = np.random.default_rng(0)
    d, p = 6, 3
    worst = 0.0
    for _ in range(3000):
        X = random_orthonormal(d, p, rng)
        x = rng.standard_normal(d)
        x /= np.linalg.norm(x)
        y = rng.standard_normal(d)
        y /= np.linalg.norm(y)
        worst = max(worst, np.linalg.norm((np.outer(x, x) - np.outer(y, y)) @ X))
    assert worst <= math.sqrt(2) + 1e-12
    X = np.eye(d)[:, :p]
    E = np.outer(X[:, 0], X[:, 0]) - np.outer(X[:, 1], X[:, 1])
    assert np.linalg.norm(E @ X) == pytest.approx(math.sqrt(2))


def test_entry_level_sensitivity_bound():
    rng = np.random.default_rng(1)
    d, p = 7, 3
    for _ in range(200):
        X = random_orthonormal(d, p, rng)
        i, j = rng.integers(d, size=2)
        E = np.zeros((d, d))
        E[i, j] = 1.0
        assert np.linalg.norm(E @ X) <= math.sqrt(p) * np.abs(X).max() + 1e-12
        assert np.abs(E @ X).sum() <= p * np.abs(X).max() + 1e-12


@pytest.mark.parametrize("neighbouring", ["entry-level", "replace-one-row"])
def test_empirical_noise_matches_formula_gaussian(neighbouring):
    """With X = 0, every noisy product is pure noise: its sample std must match the formula.

    d*p = 40*6 = 240 entries per product, 6 products -> 1440 draws per run; relative standard error
    of the sample std ~ 1/sqrt(2*240) ~ 4.6%, so a 15% tolerance per product is > 3 sigma.
    """
    rng = np.random.default_rng(2)
    d, k, L = 40, 3, 5
    X = np.zeros((10, d))
    out = noisy_power(
        X,
        k,
        rng=rng,
        epsilon=0.7,
        delta=1e-5,
        iterations=L,
        neighbouring=neighbouring,
        return_trace=True,
    )
    assert out.release["n_noisy_products"] == L + 1
    assert len(out.release["trace"]) == L + 1
    if neighbouring == "entry-level":
        assert out.release["noise_scale"] == pytest.approx(
            noisy_power_noise_scale(0.7, 1e-5, 6, L + 1)
        )
    else:
        assert out.release["noise_scale"] == pytest.approx(
            noisy_power_row_noise_scale(0.7, 1e-5, L + 1)
        )
    for Y, s in zip(out.release["trace"], out.release["noise_std_per_iteration"]):
        assert np.std(Y) == pytest.approx(s, rel=0.15)
    # entry-level multiplies by ||X_{l-1}||_inf, which is < 1 for a random orthonormal start
    if neighbouring == "entry-level":
        assert out.release["noise_std_per_iteration"][0] < out.release["noise_scale"]


def test_empirical_noise_laplace():
    """Laplace(b) has std sqrt(2) b; 15% tolerance as above (heavier tails, still > 3 sigma)."""
    rng = np.random.default_rng(3)
    d, k, L = 40, 3, 4
    out = noisy_power(
        np.zeros((5, d)),
        k,
        rng=rng,
        epsilon=1.0,
        delta=1e-5,
        iterations=L,
        noise="laplace",
        neighbouring="replace-one-row",
        return_trace=True,
    )
    assert out.guarantee.delta == 0.0
    b = out.release["noise_scale"]
    assert b == pytest.approx(2 * (L + 1) * math.sqrt(d * 6) / 1.0)
    assert out.release["noise_std_per_iteration"] == [math.sqrt(2) * b] * (L + 1)
    for Y in out.release["trace"]:
        assert np.std(Y) == pytest.approx(math.sqrt(2) * b, rel=0.15)


@pytest.mark.parametrize("calibration", ["zcdp", "tight"])
def test_laplace_noise_refuses_a_gaussian_calibration(calibration):
    """The Laplace variant composes by basic composition; recording 'zcdp' would misstate it."""
    with pytest.raises(PrivacyInputError, match="calibration must be 'paper' for noise='laplace'"):
        noisy_power(
            np.zeros((5, 8)),
            2,
            rng=np.random.default_rng(0),
            epsilon=1.0,
            noise="laplace",
            calibration=calibration,
        )


def test_shapes_orthonormality_and_guarantee(small_data):
    rng = np.random.default_rng(4)
    for output in ("projected", "first-k"):
        out = noisy_power(
            small_data,
            2,
            rng=rng,
            epsilon=1.0,
            delta=1e-5,
            output=output,
            neighbouring="replace-one-row",
        )
        V = out.components
        assert V.shape == (8, 2)
        np.testing.assert_allclose(V.T @ V, np.eye(2), atol=1e-10)
        assert out.guarantee.epsilon == 1.0 and out.guarantee.delta == 1e-5
        assert out.guarantee.neighbouring == "replace-one-row"
    # the library default is the per-person (row-level) relation; entry-level only by name
    out = noisy_power(small_data, 2, rng=rng, epsilon=1.0, delta=1e-5)
    assert out.guarantee.neighbouring == "replace-one-row"
    assert out.release["noise_scale"] == pytest.approx(
        noisy_power_row_noise_scale(1.0, 1e-5, out.release["n_noisy_products"], "replace-one-row")
    )
    out = noisy_power(small_data, 2, rng=rng, epsilon=1.0, delta=1e-5, neighbouring="entry-level")
    assert out.guarantee.neighbouring == "entry-level"
    assert "NOT a row-level" in out.guarantee.note


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_add_remove_noise_scale_does_not_depend_on_n(noise):
    """Under add/remove n is not public: the released noise scale must be the same for any n,
    and n (and sigma/n, which reveals it) may only appear among the diagnostics."""
    rng = np.random.default_rng(8)
    outs = [
        noisy_power(
            rng.uniform(-0.4, 0.4, (n, 6)),
            2,
            rng=rng,
            epsilon=1.0,
            delta=1e-5,
            noise=noise,
            neighbouring="add-remove-one-row",
            iterations=3,
        )
        for n in (30, 3000)
    ]
    assert outs[0].release["noise_scale"] == outs[1].release["noise_scale"]
    assert outs[0].release["noise_std_per_iteration"] == outs[1].release["noise_std_per_iteration"]
    for out, n in zip(outs, (30, 3000)):
        assert out.diagnostics["n"] == n
        assert out.diagnostics["noise_scale_normalised"] == pytest.approx(
            out.release["noise_scale"] / n
        )
        assert "n" not in out.release and "noise_scale_normalised" not in out.release


def test_recovers_top_subspace_with_weak_noise():
    """Large epsilon, many rows: the output should be close to the true top-k subspace.

    Noise std (zcdp, eps=50) is ~0.6 per entry against eigen-gap ~ n*spike/d ~ 10^4: the projector
    distance should be tiny; threshold 0.1 leaves a wide margin, while a random 2-dim subspace of R^10
    has distance ~ 1.
    """
    rng = np.random.default_rng(5)
    X, U = spiked(4000, 10, 2, rng)
    A = X.T @ X
    out = noisy_power(
        X,
        2,
        rng=rng,
        epsilon=50.0,
        delta=1e-5,
        neighbouring="replace-one-row",
        calibration="zcdp",
        iterations=10,
    )
    assert projector_distance(out.components, top_k_eigenvectors(A, 2)) < 0.1


def test_default_iterations_and_p(small_data):
    out = noisy_power(small_data, 2, rng=np.random.default_rng(0), epsilon=1.0, delta=1e-5)
    assert out.release["p"] == 4
    assert out.release["iterations"] == math.ceil(math.log(8) / 0.5)


def test_bad_inputs(small_data):
    rng = np.random.default_rng(6)
    kw = dict(rng=rng, epsilon=1.0, delta=1e-5)
    bad = small_data.copy()
    bad[0, 0] = np.nan
    with pytest.raises(PrivacyInputError):
        noisy_power(bad, 2, **kw)
    with pytest.raises(PrivacyInputError):
        noisy_power(small_data * 3, 2, **kw)
    out = noisy_power(small_data * 3, 2, clip=True, **kw)
    assert out.diagnostics["n_clipped"] > 0
    with pytest.raises(PrivacyInputError):
        noisy_power(small_data, 2, rng=rng, epsilon=0.0, delta=1e-5)
    with pytest.raises(PrivacyInputError):
        noisy_power(small_data, 2, rng=rng, epsilon=1.0, delta=1.5)
    with pytest.raises(PrivacyInputError):
        noisy_power(small_data, 8, **kw)
    with pytest.raises(PrivacyInputError):
        noisy_power(small_data, 2, p=1, **kw)
    with pytest.raises(PrivacyInputError):
        noisy_power(small_data, 2, neighbouring="row", **kw)
    # the paper's sigma is not proven outside eps <= 2.34 log(1/delta)
    with pytest.raises(PrivacyInputError):
        noisy_power(
            small_data, 2, rng=rng, epsilon=PAPER_EPS_FACTOR * math.log(1e3) * 1.01, delta=1e-3
        )
    noisy_power(
        small_data,
        2,
        rng=rng,
        epsilon=PAPER_EPS_FACTOR * math.log(1e3) * 1.01,
        delta=1e-3,
        calibration="zcdp",
    )
