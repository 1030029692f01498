"""The rstiefel-faithful sampler (Hoff 2009 column Gibbs with ONE coordinate sweep per column), used to
measure the paper's own sampler's mixing (scripts/benchmarks/bench_sampler.py --mixing)."""

import numpy as np
import pytest
from scipy import integrate

from mechanisms.bingham import run_bingham_chains, sample_vector_bingham, seed_numba
from mechanisms.bingham.rstiefel import _rtheta_tilted_beta


@pytest.mark.parametrize(
    "shape_b,a", [(1.5, -20.0), (1.5, 0.0), (4.5, 3.0), (69.5, 500.0), (0.5, 40.0)]
)
def test_tilted_beta_draws_match_quadrature(shape_b, a):
    # θ ∝ θ^{-1/2} (1 − θ)^{b−1} exp(aθ) on (0, 1): mean of 20,000 draws against quadrature.
    # The standard error is sd/√20000 ≤ 0.5/141 ≈ 0.0035; tolerance 5 SE (computed from the exact sd).
    seed_numba(3)
    draws = np.array([_rtheta_tilted_beta(shape_b, a) for _ in range(8000)])

    def dens(t):  # up to a constant, scaled by exp(−a) to avoid overflow
        return (
            np.exp(-0.5 * np.log(t) + (shape_b - 1) * np.log1p(-t) + a * (t - 1.0))
            if 0 < t < 1
            else 0.0
        )

    # help quad find the peak near the mode 1 − (b − 1)/a of a strongly tilted density
    pts = [1 - (shape_b - 1) / a] if a > 10 and shape_b > 1 else None
    z = integrate.quad(dens, 0, 1, points=pts, limit=200)[0]
    mean = integrate.quad(lambda t: t * dens(t), 0, 1, points=pts, limit=200)[0] / z
    second = integrate.quad(lambda t: t * t * dens(t), 0, 1, points=pts, limit=200)[0] / z
    se = np.sqrt(max(second - mean**2, 0.0) / draws.size)
    assert draws.min() >= 0 and draws.max() <= 1
    assert abs(draws.mean() - mean) < 5 * se + 1e-4


@pytest.mark.slow
def test_rstiefel_chain_targets_bmf():
    # k = 1: time average of xᵀBx over 4 chains x 3,000 iterations against 200,000 exact draws.
    # xᵀBx has sd < 1.3 here and the chain is nearly independent per iteration (ESS/it ≈ 1, measured),
    # so the standard error is ≈ 0.012; tolerance 0.06.  A sampler without the exponential tilt
    # (uniform on the sphere) gives E = 0.75 instead of ≈ 1.53.
    b = np.array([3.0, 1.0, 0.0, -1.0])
    rng = np.random.default_rng(0)
    res = run_bingham_chains(
        b, 1, rng=rng, sampler="rstiefel", n_chains=4, iterations=3000, progress=False
    )
    x = sample_vector_bingham(np.diag(b), size=200_000, rng=np.random.default_rng(1))
    assert abs(res["energy"][:, 200:].mean() - (x**2 @ b).mean()) < 0.06
    # k = 2: against the exact-column reference chain (two MCMC estimates, SE ≈ 0.015 each; tol 0.08)
    r2 = run_bingham_chains(
        b, 2, rng=rng, sampler="rstiefel", n_chains=4, iterations=2000, progress=False
    )
    ref = run_bingham_chains(
        b, 2, rng=rng, sampler="reference", n_chains=4, iterations=2000, progress=False
    )
    assert abs(r2["energy"][:, 200:].mean() - ref["energy"][:, 200:].mean()) < 0.08
    for V in r2["V"]:
        assert np.allclose(V.T @ V, np.eye(2), atol=1e-10)


@pytest.mark.slow
def test_cholesky_vector_bingham_matches_eigen_sampler():
    # the reference sweep's exact column draw (Cholesky proposals) against the eigen-based ACG sampler:
    # E[x xᵀ] entries from 8,000 draws each (SE ≤ 0.0056 per estimate, ≤ 0.008 for the difference);
    # tolerance 0.04.  A wrong proposal (e.g. Ω^{-1/2} vs Ω^{1/2}) moves E[x_1²] by > 0.2.
    from mechanisms.bingham import sample_vector_bingham_cholesky

    rng = np.random.default_rng(4)
    R = np.linalg.qr(rng.standard_normal((5, 5)))[0]
    M = R @ np.diag([5.0, 2.0, 0.0, -1.0, -3.0]) @ R.T
    a = np.array([sample_vector_bingham_cholesky(M, rng) for _ in range(8000)])
    b = sample_vector_bingham(M, size=8000, rng=np.random.default_rng(5))
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0)
    assert np.abs(a.T @ a / len(a) - b.T @ b / len(b)).max() < 0.04
