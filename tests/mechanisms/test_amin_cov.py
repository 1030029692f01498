"""Amin et al. (2019) Algorithm 1 (``amin_cov``): calibration against sensitivities found by brute force
over neighbouring pairs, the budget split, the covariance's construction, row-order independence,
reproducibility, refusals, and the eigenvector sampler shared with ``ppca_iterative``."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import mechanisms.ppca_iterative as ppi
from mechanisms import PrivacyInputError, get_mechanism
from mechanisms.amin_cov import amin_cov
from mechanisms.ppca_iterative import ppca_iterative, sample_iterative_eigenvectors


def _data(n=60, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.linspace(2.0, 0.5, d)
    return X / np.linalg.norm(X, axis=1, keepdims=True) * rng.uniform(0.3, 1.0, (n, 1))


def _grid(d, steps=8):
    """Unit vectors on a grid of the sphere (d = 2: angles k·π/steps; d = 3: a lat-long grid), the
    zero row, and a half-norm row: candidate rows of neighbouring datasets."""
    rows = [np.zeros(d)]
    if d == 2:
        rows += [np.array([math.cos(t), math.sin(t)]) for t in np.arange(steps) * math.pi / steps]
    else:
        for a in np.arange(steps) * math.pi / steps:
            for b in np.arange(steps // 2 + 1) * math.pi / (steps // 2):
                rows.append(
                    np.array([math.cos(a) * math.sin(b), math.sin(a) * math.sin(b), math.cos(b)])
                )
    rows.append(0.5 * rows[1])
    return rows


def _brute_force_eigenvalue_sensitivity(d, m, steps=4):
    """max over replace-one neighbours (datasets of 1 or 2 base rows plus one differing row, all rows
    from :func:`_grid`) of the L1 change of the m largest eigenvalues of XᵀX."""
    rows = np.array(_grid(d, steps))
    outer = np.einsum("ri,rj->rij", rows, rows)
    bases = [
        outer[list(b)].sum(axis=0)
        for nb in (1, 2)
        for b in itertools.combinations_with_replacement(range(len(rows)), nb)
    ]
    pairs = np.array(list(itertools.combinations(range(len(rows)), 2)))
    best = 0.0
    for B in bases:
        l1 = np.linalg.eigvalsh(B + outer[pairs[:, 0]])[:, ::-1][:, :m]
        l0 = np.linalg.eigvalsh(B + outer[pairs[:, 1]])[:, ::-1][:, :m]
        best = max(best, float(np.abs(l1 - l0).sum(axis=1).max()))
    return best


@pytest.fixture(scope="module")
def brute_eigen():
    return {m: _brute_force_eigenvalue_sensitivity(3, m) for m in (1, 2, 3)}


@pytest.mark.slow
def test_brute_force_eigenvalue_sensitivity(brute_eigen):
    """Replace-one-row: 1 for the top eigenvalue, 2 for two or more (Lidskii's bound, attained)."""
    assert brute_eigen[1] == pytest.approx(1.0, abs=1e-9)
    assert brute_eigen[2] == pytest.approx(2.0, abs=1e-9)
    assert brute_eigen[3] == pytest.approx(2.0, abs=1e-9)
    # add/remove (one row added to the same bases): the changes sum to |x|^2 <= 1
    rows, worst = _grid(3), 0.0
    for i, j in itertools.product(range(len(rows)), repeat=2):
        X0 = np.array([rows[i]])
        X1 = np.vstack([X0, rows[j]])
        worst = max(
            worst, np.abs(np.linalg.eigvalsh(X1.T @ X1) - np.linalg.eigvalsh(X0.T @ X0)).sum()
        )
    assert worst == pytest.approx(1.0, abs=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("calibration", ["paper", "tight"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_laplace_scale_matches_brute_force_sensitivity(brute_eigen, calibration, rank):
    """The eigenvalues carry Laplace noise of scale Δ/(n ε_0) on A = XᵀX/n: Δ = 2 (the paper's
    Lap(2/ε_0)) or the brute-force sensitivity of r eigenvalues ("tight"); the noise is the first
    draw from rng, so the same seed reproduces it from the independently derived scale."""
    X = _data(n=50, d=3)
    n, eps = X.shape[0], 1.3
    eps0 = eps / 2  # the "half" split, derived here independently
    delta_l1 = 2.0 if calibration == "paper" else brute_eigen[rank]
    scale = delta_l1 / (n * eps0)
    out = amin_cov(
        X, 1, epsilon=eps, rng=np.random.default_rng(5), calibration=calibration, rank=rank
    )
    assert out.release["eigenvalue_noise_scale"] == pytest.approx(scale, rel=1e-12)
    lam = np.linalg.eigvalsh(X.T @ X / n)[::-1][:rank]
    expected = lam + np.random.default_rng(5).laplace(0.0, scale, rank)
    np.testing.assert_allclose(out.release["eigenvalues"], expected, rtol=0, atol=1e-13)


def test_exponent_matches_brute_force_score_sensitivity(monkeypatch):
    """Each draw is ∝ exp(c · uᵀ P XᵀX P u): the exponential mechanism needs c = ε_i/(2Δ) with Δ the
    largest change of the score uᵀXᵀXu under replace-one (found by brute force: 1).  ``tight`` uses
    that, the paper's ε_i/4 is Δ = 2 (conservative); recorded from the matrices the sampler gets."""
    rows = _grid(2, steps=16)
    us = [np.array([math.cos(t), math.sin(t)]) for t in np.linspace(0, math.pi, 64)]
    delta = max(abs(float(u @ a) ** 2 - float(u @ b) ** 2) for u in us for a in rows for b in rows)
    assert delta == pytest.approx(1.0, abs=1e-9)
    X = _data(n=40, d=3)
    eps = 0.8
    seen = []
    real = ppi.sample_vector_bingham

    def spy(M, **kw):
        seen.append(np.array(M))
        return real(M, **kw)

    monkeypatch.setattr(ppi, "sample_vector_bingham", spy)
    for calibration, want in (("paper", 1 / 4), ("tight", 1 / (2 * delta))):
        seen.clear()
        out = amin_cov(X, 2, epsilon=eps, rng=np.random.default_rng(0), calibration=calibration)
        eps_i = out.release["epsilon_per_vector"]
        assert len(seen) == 2
        # first draw: N = I, so the parameter is c·XᵀX exactly (up to rounding of A's product)
        np.testing.assert_allclose(seen[0], want * eps_i[0] * (X.T @ X), rtol=1e-10, atol=1e-12)
        assert out.release["exponent_per_vector"] == pytest.approx([want * e for e in eps_i])
        assert seen[1].shape == (2, 2)  # second draw: on the complement of the first
        assert np.trace(seen[1]) <= want * eps_i[1] * np.trace(X.T @ X) + 1e-9


@pytest.mark.parametrize("split", ["half", "uniform"])
@pytest.mark.parametrize("eps", [0.1, 1.0, 3.7])
@pytest.mark.parametrize("k,rank", [(1, None), (2, 3), (2, 4)])
def test_budget_split_sums_to_epsilon(split, eps, k, rank):
    out = amin_cov(
        _data(n=30, d=4), k, epsilon=eps, rng=np.random.default_rng(1), split=split, rank=rank
    )
    rel = out.release
    r = k if rank is None else rank
    m = min(r, 3)  # the d-th vector (r = d = 4) is free
    assert len(rel["epsilon_per_vector"]) == m and len(rel["eigenvalues"]) == r
    total = math.fsum([rel["epsilon_eigenvalues"], *rel["epsilon_per_vector"]])
    assert total == pytest.approx(eps, rel=1e-12)
    assert out.guarantee.epsilon == eps and out.guarantee.delta == 0.0
    assert out.guarantee.neighbouring == "replace-one-row" and out.guarantee.status == "proven"
    if split == "half":
        assert rel["epsilon_eigenvalues"] == pytest.approx(eps / 2)
        assert rel["epsilon_per_vector"] == pytest.approx([eps / (2 * m)] * m)
    else:
        assert rel["epsilon_per_vector"] == pytest.approx([eps / (m + 1)] * m)
        assert rel["epsilon_eigenvalues"] == pytest.approx(eps / (m + 1))


@pytest.mark.parametrize("rank", [None, 3, 4])
def test_covariance_is_the_sum_of_noisy_eigenpairs(rank):
    X = _data(n=80, d=4)
    out = amin_cov(X, 2, epsilon=2.0, rng=np.random.default_rng(3), rank=rank)
    C, V, lam = out.covariance, out.components, np.array(out.release["eigenvalues"])
    assert C.shape == (4, 4) and np.array_equal(C, C.T)
    np.testing.assert_allclose(V.T @ V, np.eye(2), atol=1e-12)
    # θ̂_1, θ̂_2 (the components) are eigenvectors of Ĉ with eigenvalues λ̂_1, λ̂_2
    np.testing.assert_allclose(C @ V, V * lam[:2], atol=1e-12)
    assert np.trace(C) == pytest.approx(lam.sum(), abs=1e-12)
    assert np.linalg.matrix_rank(C, tol=1e-12) <= len(lam)
    assert "eigenvalues_exact" in out.diagnostics and "eigenvalues_exact" not in out.release


def test_covariance_estimates_the_second_moment():
    """Many rows and a large ε: Ĉ (full rank, the paper's algorithm) is close to A."""
    X = _data(n=20000, d=4, seed=2)
    A = X.T @ X / X.shape[0]
    out = amin_cov(X, 1, epsilon=50.0, rng=np.random.default_rng(0), rank=4, calibration="tight")
    assert np.linalg.norm(out.covariance - A) < 0.02 * np.linalg.norm(A)


def test_clamp_keeps_eigenvalues_in_the_unit_interval():
    X = np.tile(np.eye(3)[0] * 0.01, (5, 1))  # tiny eigenvalues, noise of scale 2/(5·0.25) = 1.6
    out = amin_cov(X, 1, epsilon=0.5, rng=np.random.default_rng(0), rank=3, clamp_eigenvalues=True)
    assert all(0.0 <= v <= 1.0 for v in out.release["eigenvalues"])
    assert np.all(np.linalg.eigvalsh(out.covariance) >= -1e-12)


def test_output_does_not_depend_on_row_order():
    X = _data(n=70, d=5, seed=4)
    ref = amin_cov(X, 2, epsilon=1.0, rng=np.random.default_rng(9), rank=5)
    for seed in range(3):
        perm = np.random.default_rng(seed).permutation(X.shape[0])
        out = amin_cov(X[perm], 2, epsilon=1.0, rng=np.random.default_rng(9), rank=5)
        assert out.components.tobytes() == ref.components.tobytes()
        assert out.covariance.tobytes() == ref.covariance.tobytes()
        assert out.release == ref.release


def test_reproducible_from_the_generator():
    X = _data()
    a = amin_cov(X, 2, epsilon=1.0, rng=np.random.default_rng(11), rank=3)
    b = amin_cov(X, 2, epsilon=1.0, rng=np.random.default_rng(11), rank=3)
    c = amin_cov(X, 2, epsilon=1.0, rng=np.random.default_rng(12), rank=3)
    assert a.covariance.tobytes() == b.covariance.tobytes() and a.release == b.release
    assert a.components.tobytes() == b.components.tobytes()
    assert a.covariance.tobytes() != c.covariance.tobytes()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"epsilon": 0.0},
        {"epsilon": float("nan")},
        {"split": "golden"},
        {"calibration": "loose"},
        {"rank": 1},  # below k = 2
        {"rank": 5},  # above d = 4
        {"rank": 2.5},
        {"rank": True},
        {"clamp_eigenvalues": "yes"},
        {"epsilon": 1e9},  # n·ε_i/4 beyond the samplers' range
    ],
)
def test_refuses_bad_parameters_in_one_line(kwargs):
    params = {"epsilon": 1.0, **kwargs}
    with pytest.raises(PrivacyInputError) as exc:
        amin_cov(_data(n=10**4 // 100), 2, rng=np.random.default_rng(0), **params)
    assert "\n" not in str(exc.value)


def test_refuses_rows_above_the_bound_without_quoting_them():
    X = _data()
    X[3] *= 7.123456
    with pytest.raises(PrivacyInputError) as exc:
        amin_cov(X, 1, epsilon=1.0, rng=np.random.default_rng(0))
    assert "7.12" not in str(exc.value) and "\n" not in str(exc.value)
    out = amin_cov(X, 1, epsilon=1.0, rng=np.random.default_rng(0), clip=True)
    assert out.diagnostics["n_clipped"] == 1


def test_registered_and_ppca_iterative_shares_the_sampler():
    """``ppca_iterative`` is the shared sampler at concentration n·ε/(2k) per draw, bit for bit."""
    assert get_mechanism("amin_cov") is amin_cov
    X = _data(n=50, d=5)
    n, k, eps = X.shape[0], 3, 0.9
    a = ppca_iterative(X, k, epsilon=eps, rng=np.random.default_rng(2))
    V, _ = sample_iterative_eigenvectors(
        X.T @ X / n, [n * eps / k / 2] * k, rng=np.random.default_rng(2)
    )
    np.testing.assert_allclose(a.components, V, atol=1e-12)
