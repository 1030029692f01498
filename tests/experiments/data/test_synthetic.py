"""Synthetic data: shapes, row norms, eigen-structure, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.data.synthetic import EQ27_EIGENVALUES, gaussian10, load_synthetic, spiked
from mechanisms.metrics import projector_distance


def _top_eigvecs(X, k):
    w, U = np.linalg.eigh(X.T @ X / X.shape[0])
    return w[::-1], U[:, ::-1][:, :k]


@pytest.mark.parametrize("row_scaling", ["max", "clip"])
def test_gaussian10_shape_and_norms(row_scaling):
    ds = gaussian10(5000, np.random.default_rng(1), row_scaling=row_scaling)
    assert ds.X.shape == (5000, 10) and ds.X.dtype == np.float64
    norms = np.linalg.norm(ds.X, axis=1)
    assert norms.max() <= 1 + 1e-12
    if row_scaling == "max":
        assert norms.max() == pytest.approx(1.0) and ds.scale > 1
    assert ds.y is None and ds.split == "synthetic" and len(ds.feature_names) == 10
    assert ds.true_subspace.shape == (10, 2)


@pytest.mark.parametrize("basis", ["identity", "random"])
def test_gaussian10_eigenvalues_match_eq27(basis):
    """Sample eigenvalues of scale² * XᵀX/n vs eq. (27).

    Monte-Carlo tolerance: an eigenvalue estimate of a Gaussian sample has standard deviation
    ≈ λ_i sqrt(2/n) plus O(sqrt(λ_1 λ_i / n)) leakage from the other directions; we allow
    5 * (λ_i sqrt(2/n) + sqrt(λ_1 λ_i / n)) (≈ 0.07 for λ_1, ≈ 0.0018 for λ = 0.001)."""
    n = 5000
    ds = gaussian10(n, np.random.default_rng(123), basis=basis)
    lam = np.array(EQ27_EIGENVALUES)
    w, V = _top_eigvecs(ds.X * ds.scale, 2)
    tol = 5 * (lam * np.sqrt(2 / n) + np.sqrt(lam[0] * lam / n))
    assert np.all(np.abs(w - lam) <= tol), (w, lam, tol)
    # the top-2 sample subspace is close to the population one
    assert projector_distance(V, ds.true_subspace) < 0.05
    if basis == "identity":
        np.testing.assert_array_equal(ds.true_subspace, np.eye(10)[:, :2])


def test_gaussian10_seeded_determinism():
    a = load_synthetic("gaussian10", seed=5)
    b = load_synthetic("gaussian10", seed=5)
    c = load_synthetic("gaussian10", seed=6)
    np.testing.assert_array_equal(a.X, b.X)
    assert not np.array_equal(a.X, c.X)
    assert load_synthetic("gaussian10", n=100).X.shape == (100, 10)


def test_spiked_structure():
    n, d, k = 20000, 50, 3
    ds = spiked(n, d, k, spike=1.0, sigma=0.2, rng=np.random.default_rng(0))
    assert ds.X.shape == (n, d)
    assert np.linalg.norm(ds.X, axis=1).max() == pytest.approx(1.0)
    U = ds.true_subspace
    np.testing.assert_allclose(U.T @ U, np.eye(k), atol=1e-12)
    pop = ds.population_eigenvalues
    assert pop.sum() == pytest.approx(1.0)  # normalisation D makes E||z||^2 = 1
    np.testing.assert_allclose(pop[:k], (1 + 0.04) / (3 + 50 * 0.04))
    # before row scaling E||z||^2 = 1
    assert np.mean(np.sum((ds.X * ds.scale) ** 2, axis=1)) == pytest.approx(1.0, rel=0.02)
    w, V = _top_eigvecs(ds.X * ds.scale, k)
    assert projector_distance(V, U) < 0.1
    np.testing.assert_allclose(w[:k], pop[:k], rtol=0.05)


def test_spiked_lambdas_clip_and_errors():
    ds = spiked(
        1000, 20, 2, lambdas=[2.0, 1.0], sigma=0.1, rng=1, basis="identity", row_scaling="clip"
    )
    assert np.linalg.norm(ds.X, axis=1).max() <= 1 + 1e-12
    np.testing.assert_array_equal(ds.true_subspace, np.eye(20)[:, :2])
    assert (
        ds.population_eigenvalues[0] > ds.population_eigenvalues[1] > ds.population_eigenvalues[2]
    )
    with pytest.raises(ValueError):
        spiked(10, 5, 6)
    with pytest.raises(ValueError):
        spiked(10, 5, 2, lambdas=[1.0])
    with pytest.raises(ValueError, match="row_scaling"):
        gaussian10(10, 0, row_scaling="nope")


def test_load_synthetic_spiked_and_unknown():
    a = load_synthetic("spiked", n=300, seed=2, d=30, k=4)
    b = load_synthetic("spiked", n=300, seed=2, d=30, k=4)
    assert a.X.shape == (300, 30) and a.true_subspace.shape == (30, 4)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.true_subspace, b.true_subspace)
    with pytest.raises(ValueError, match="gaussian10, spiked"):
        load_synthetic("nope")
