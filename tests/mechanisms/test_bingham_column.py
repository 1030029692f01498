"""The exact column conditional of the reference (Hoff 2009) sampler without a basis of the null space.

mechanisms.bingham.sample_bingham_column draws v_i ~ exp(xᵀBx) on the unit sphere of N = span(V_{-i})^⊥
with an ACG envelope whose Gaussian proposal is sampled through a low-rank covariance factor, and a β
certified by an inertia count.  Each ingredient is checked against a brute-force computation with an
explicit basis of N, and the draws against the eigendecomposition sampler (sample_vector_bingham).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from mechanisms.bingham import run_bingham_chains, sample_bingham_column, sample_vector_bingham
from mechanisms.bingham.column import _column_envelope, _n_above, _proxy_rest


def _case(rng, d, k, i):
    b = np.sort(rng.exponential(10.0, size=d) ** 2)[::-1].copy()
    V = np.linalg.qr(rng.standard_normal((d, k)))[0]
    M = np.ascontiguousarray(np.delete(V, i, axis=1))
    N = np.linalg.qr(M, mode="complete")[0][:, k - 1 :] if k > 1 else np.eye(d)
    return b, V, M, N


def test_sturm_count_matches_the_eigenvalues_of_the_compression():
    """#eigenvalues of B|_N above λ from the inertia of MᵀD⁻¹M equals the brute-force count (exact)."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        d = int(rng.integers(3, 12))
        k = int(rng.integers(2, d))
        b, V, M, N = _case(rng, d, k, int(rng.integers(k)))
        lam = float(rng.uniform(-1.0, 1.1 * b[0]))
        brute = int(np.sum(np.linalg.eigvalsh((N.T * b) @ N) > lam))
        assert _n_above(lam, b, M) == brute


def test_envelope_accepts_exactly_the_valid_betas_and_its_factor_is_the_conditional_covariance():
    """ok ⇔ D = βI − 2B ≻ 0 on N; when ok, |D|^{-1/2}(I + Q(C − I)Qᵀ) squared is N (NᵀDN)⁻¹ Nᵀ
    to 1e-9 (relative; rounding only)."""
    rng = np.random.default_rng(1)
    n_ok = n_bad = 0
    for _ in range(300):
        d = int(rng.integers(3, 30))
        k = int(rng.integers(1, min(d, 9)))
        b, V, M, N = _case(rng, d, k, int(rng.integers(k)))
        lam_max = float(np.linalg.eigvalsh((N.T * b) @ N).max())
        lam = lam_max + float(rng.uniform(-0.5, 0.5)) * max(1.0, lam_max)
        ok, beta, D, Q, Cm = _column_envelope(lam, b, _proxy_rest(b, k), M)
        valid = np.linalg.eigvalsh((N.T * D) @ N).min() > 0
        if not valid:
            assert not ok
            n_bad += 1
            continue
        if (
            not ok
        ):  # refused only for a near-singular T or D (numerical guard), never wrongly accepted
            continue
        n_ok += 1
        L = (np.eye(d) + Q @ Cm @ Q.T) / np.sqrt(np.abs(D))[:, None]
        target = N @ np.linalg.inv((N.T * D) @ N) @ N.T
        assert np.abs(L @ L.T - target).max() <= 1e-9 * np.abs(target).max()
    assert n_ok > 100 and n_bad > 50


@pytest.mark.parametrize(
    "d,k,i,seed",
    [(6, 3, 2, 0), (8, 1, 0, 1), (10, 4, 3, 2), pytest.param(40, 5, 1, 3, marks=pytest.mark.slow)],
)
def test_column_draws_match_the_eigendecomposition_sampler(d, k, i, seed):
    """20,000 column draws against 20,000 exact draws with an explicit basis of N: per statistic, a
    two-sample z-test of the means (|z| < 4.5) and a KS test (p > 1e-4): 4 cases x 4 statistics, so the
    family-wise false-alarm rate is below 1e-3.  Sensitivity, checked by mutation: a wrong envelope
    exponent ((m + 2)/2 instead of m/2 in the acceptance probability) fails three of the four cases."""
    rng = np.random.default_rng(seed)
    b = np.sort(rng.exponential(8.0, size=d) ** 2)[::-1].copy()
    V = np.linalg.qr(rng.standard_normal((d, k)))[0]
    M = np.delete(V, i, axis=1)
    N = np.linalg.qr(M, mode="complete")[0][:, k - 1 :] if k > 1 else np.eye(d)
    n = 20000
    ref = sample_vector_bingham((N.T * b) @ N, size=n, rng=rng) @ N.T
    out = np.empty((n, d))
    for r in range(n):
        W = V.copy()
        sample_bingham_column(W, i, b, rng)
        out[r] = W[:, i]
    if k > 1:
        assert np.abs(out @ M).max() < 1e-12  # each draw lies in N
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0)
    for f in (
        lambda X: (X * X) @ b,
        lambda X: X[:, 0] ** 2,
        lambda X: (X @ N[:, 0]) ** 2,
        lambda X: X @ N[:, -1],
    ):
        a, c = f(ref), f(out)
        z = (c.mean() - a.mean()) / np.sqrt(a.var() / n + c.var() / n)
        assert abs(z) < 4.5
        assert stats.ks_2samp(a, c).pvalue > 1e-4


def test_reference_chain_targets_bmf():
    """The reference chain (exact column Gibbs) and the Givens chain agree on E tr(VᵀBV) at stationarity
    (d = 12, k = 3; 4 chains x 3,000 iterations each after 500 burn-in; tolerance 5 combined standard errors
    from batch means)."""
    rng = np.random.default_rng(5)
    b = np.array([30.0, 22, 15, 9, 6, 4, 3, 2, 1, 0.5, 0.2, 0.0])

    def mean_se(sampler):
        r = run_bingham_chains(
            b, 3, rng=rng, sampler=sampler, n_chains=4, iterations=3500, progress=False
        )
        e = r["energy"][:, 500:]
        batch = e.reshape(4, 30, 100).mean(axis=2).ravel()
        return batch.mean(), batch.std(ddof=1) / np.sqrt(batch.size)

    m1, s1 = mean_se("reference")
    m2, s2 = mean_se("gibbs")
    assert abs(m1 - m2) < 5 * np.hypot(s1, s2)
