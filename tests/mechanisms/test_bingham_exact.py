"""The exact matrix Bingham sampler (MACG rejection, mechanisms/bingham/exact.py) and its use as an
oracle for the PPCA chains (fixed seeds throughout).

Tolerances.  Means are compared at 5 standard errors (a correct sampler fails such a check with
probability < 1e-6 per entry); the standard errors come from the draws themselves (i.i.d. exact
draws, or final states of independent chains).  Distributions are compared by the two-sample
Kolmogorov–Smirnov test at level ALPHA = 1e-3 per statistic, as in tests/mechanisms/test_bingham.py.  The power
of each check against a plausible error is measured in the tests themselves (`*_power` tests) or
stated in the docstring with the measured figure.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from mechanisms.bingham import acg_beta, run_bingham_chains, sample_vector_bingham
from mechanisms.bingham.exact import (
    macg_acceptance_rate,
    macg_log_accept,
    macg_log_bound,
    macg_log_ratio,
    sample_matrix_bingham,
)
from tests.mechanisms.test_bingham import sphere3_coord_cdf

ALPHA = 1e-3


def _rotation(rng, d):
    return np.linalg.qr(rng.standard_normal((d, d)))[0]


def _haar_frames(rng, m, d, k):
    Q, R = np.linalg.qr(rng.standard_normal((m, d, k)))
    return Q * np.sign(np.diagonal(R, axis1=1, axis2=2))[:, None, :]


# ---------------------------------------------------------------- the envelope bound


@pytest.mark.parametrize("d,k", [(3, 2), (5, 1), (6, 3), (10, 2), (10, 4), (30, 5)])
def test_ratio_never_exceeds_the_bound_and_the_bound_is_attained(d, k):
    """log r(V) − log M ≤ 0 (up to rounding, 1e-9) on 20,000 uniform frames and 20,000 MACG
    proposals for random B with eigenvalues of scale 0.3, 3 and 30, and on 2,000 exact draws at the
    scale 0.3; and = 0 on a frame built so that
    VᵀΩV = d·I, from k disjoint pairs of eigenvalues of Ω on either side of d (found in at least one
    of the three spectra wherever 2k < d), so M is then the supremum, not merely a bound."""
    rng = np.random.default_rng(d * 100 + k)
    attained = 0
    for scale in (0.3, 3.0, 30.0):
        lam = np.sort(rng.normal(0.0, scale, d))[::-1]
        R = _rotation(rng, d)
        B = (R * lam) @ R.T
        beta = acg_beta(lam)
        frames = [_haar_frames(rng, 20_000, d, k)]
        omega = beta - 2.0 * lam
        Y = rng.standard_normal((20_000, d, k)) / np.sqrt(omega)[:, None]
        frames.append(R @ np.linalg.qr(Y)[0])  # MACG proposals (span is what matters)
        if scale == 0.3:  # acceptance is too low for the sharper spectra
            frames.append(sample_matrix_bingham(B, k, 2000, rng=rng))
        for V in frames:
            assert macg_log_accept(V, B, beta).max() <= 1e-9
        # a frame with VᵀΩV = dI: column i = cos a e_p + sin a e_q with ω_p ≤ d ≤ ω_q
        lo, hi = np.flatnonzero(omega <= d), np.flatnonzero(omega >= d)
        if min(lo.size, hi.size) >= k and np.intersect1d(lo[:k], hi[-k:]).size == 0:
            W = np.zeros((d, k))
            for i, (p, q) in enumerate(zip(lo[:k], hi[-k:])):
                c2 = (omega[q] - d) / (omega[q] - omega[p])  # cos² a ω_p + sin² a ω_q = d
                W[p, i], W[q, i] = np.sqrt(c2), np.sqrt(1.0 - c2)
            assert abs(macg_log_accept(R @ W, B, beta)) < 1e-9
            attained += 1
    assert attained >= 1 or 2 * k >= d
    # the ratio itself (not only its difference) against its definition
    V = _haar_frames(rng, 5, d, k)
    Om = beta * np.eye(d) - 2.0 * B
    direct = [np.trace(v.T @ B @ v) + 0.5 * d * np.log(np.linalg.det(v.T @ Om @ v)) for v in V]
    np.testing.assert_allclose(macg_log_ratio(V, B, beta), direct, rtol=1e-12, atol=1e-10)
    assert macg_log_bound(d, k, beta) == pytest.approx(k * ((beta - d) / 2 + d / 2 * np.log(d)))


# ---------------------------------------------------------------- k = 1: the vector sampler


@pytest.mark.parametrize("lam", [(3.0, 1.0, 0.0, -1.0), (50.0, 49.0, 10.0, 0.0, 0.0, 0.0)])
def test_k1_is_the_vector_sampler_draw_for_draw_and_in_law(lam):
    """For k = 1 the MACG sampler consumes the same random numbers as sample_vector_bingham and makes
    the same decisions: identical draws (to rounding, 1e-12) from the same seed.  And in law, against
    draws of the vector sampler from another seed: KS of xᵀBx and of the squared top coordinate
    (5,000 draws each, level ALPHA)."""
    lam = np.array(lam)
    d = lam.size
    R = _rotation(np.random.default_rng(1), d)
    B = (R * lam) @ R.T
    V, info = sample_matrix_bingham(B, 1, 5000, rng=np.random.default_rng(7), return_info=True)
    x, info_v = sample_vector_bingham(B, 5000, rng=np.random.default_rng(7), return_info=True)
    assert V.shape == (5000, d, 1)
    np.testing.assert_allclose(V[:, :, 0], x, atol=1e-12)
    assert info["proposals"] == info_v["proposals"]
    y = sample_vector_bingham(B, 5000, rng=np.random.default_rng(8))
    v = V[:, :, 0]
    for f in (lambda z: np.einsum("mi,ij,mj->m", z, B, z), lambda z: (z @ R[:, -1]) ** 2):
        assert stats.ks_2samp(f(v), f(y)).pvalue > ALPHA


# ---------------------------------------------------------------- d = 3, k = 2: quadrature


def _sphere_expectation_nnT(b, n_t=400, n_phi=400):
    """E[n nᵀ] and E_unif[exp(−nᵀ diag(b) n)] for n on S² with density ∝ exp(−nᵀ diag(b) n):
    Gauss–Legendre in t = n₃ (the uniform measure on S² is dt dφ / 4π), the trapezoid rule in φ
    (periodic: spectrally accurate).  The integrand is a polynomial in t² and cos²φ times an
    exponential, so both rules converge to rounding at these sizes."""
    t, wt = np.polynomial.legendre.leggauss(n_t)
    phi = np.linspace(0.0, 2 * np.pi, n_phi, endpoint=False)
    s = np.sqrt(1.0 - t * t)[:, None]
    n = np.stack([s * np.cos(phi), s * np.sin(phi), np.repeat(t[:, None], n_phi, axis=1)])
    w = np.exp(-np.einsum("i,itp,itp->tp", b, n, n)) * wt[:, None] / (2 * n_phi)
    z = w.sum()
    return np.diag(np.einsum("itp,tp->i", n * n, w) / z), z


@pytest.mark.slow
@pytest.mark.parametrize("lam", [(2.0, 1.0, 0.0), (12.0, 11.0, 3.0), (40.0, 38.0, 0.0)])
def test_d3_k2_moments_and_laws_against_quadrature(lam):
    """d = 3, k = 2: exp(tr VᵀBV) = exp(tr B − nᵀBn) for the plane's unit normal n, so E[VVᵀ] =
    I − E[nnᵀ] and, the in-plane frame being uniform, E[v_j v_jᵀ] = (I − E[nnᵀ])/2 for each column j
    (a QR frame of the proposal instead of its polar frame biases the columns: measured 0.54 against
    0.45 for E[v₁₁²] at λ = (6, 5, 0), 40 standard errors).  20,000 draws with a non-diagonal B; every
    entry of the three matrices and E[tr VᵀAV] for a random A within 5 SE of the quadrature values.
    Then the normal's eigen-coordinates by one-sample KS against their exact CDFs (level ALPHA)."""
    lam = np.array(lam)
    rng = np.random.default_rng(11)
    R = _rotation(rng, 3)
    B = (R * lam) @ R.T
    m = 20_000
    V = sample_matrix_bingham(B, 2, m, rng=rng)
    Enn_eig, _ = _sphere_expectation_nnT(lam)
    P_exact = np.eye(3) - R @ Enn_eig @ R.T
    A = rng.standard_normal((3, 3))
    A = A @ A.T
    for X, target in [
        (np.einsum("mij,mlj->mil", V, V), P_exact),
        (np.einsum("mi,ml->mil", V[:, :, 0], V[:, :, 0]), P_exact / 2),
        (np.einsum("mi,ml->mil", V[:, :, 1], V[:, :, 1]), P_exact / 2),
        (np.einsum("mij,il,mlj->m", V, A, V), np.trace(A @ P_exact)),
    ]:
        se = X.std(axis=0) / np.sqrt(m)
        assert np.all(np.abs(X.mean(axis=0) - target) <= 5 * se + 1e-12), (X.mean(0), target)
    nrm_eig = np.cross(V[:, :, 0], V[:, :, 1]) @ R
    for perm in [(0, 1, 2), (1, 2, 0), (2, 0, 1)]:
        p = stats.kstest(nrm_eig[:, perm[2]], sphere3_coord_cdf(-lam[list(perm)])).pvalue
        assert p > ALPHA, perm


@pytest.mark.parametrize(
    "lam",
    [
        (2.0, 1.0, 0.0),
        pytest.param((12.0, 11.0, 3.0), marks=pytest.mark.slow),
        pytest.param((40.0, 38.0, 0.0), marks=pytest.mark.slow),
    ],
)
def test_acceptance_rate_is_c_of_B_times_omega_over_M(lam):
    """P(accept) = c(B)|Ω|^{k/2}/M with c(B) = e^{tr B} E_unif[e^{−nᵀBn}] (d = 3, k = 2; quadrature).
    The rate of 20,000 acceptances has relative standard error √((1 − p)/20,000) ≤ 0.71%; tolerance
    5 SE.  A bound M too small by a factor (an invalid sampler) or too large shows here."""
    lam = np.array(lam)
    _, c_sphere = _sphere_expectation_nnT(lam)
    predicted = macg_acceptance_rate(lam, 2, lam.sum() + np.log(c_sphere))
    _, info = sample_matrix_bingham(
        eig=(lam, None), k=2, size=20_000, rng=np.random.default_rng(5), return_info=True
    )
    p = info["acceptance_rate"]
    assert 0.0 < predicted < 1.0
    assert abs(p - predicted) < 5 * predicted * np.sqrt((1 - predicted) / 20_000)


# ---------------------------------------------------------------- d = 6, k = 3: importance sampling


@pytest.mark.slow
def test_d6_k3_moments_and_acceptance_against_importance_sampling():
    """d = 6, k = 3, non-diagonal B with spectrum (4, 3.5, 3, 1, 0.5, 0): E[VVᵀ] (all 36 entries)
    and E[tr VᵀAV] of 20,000 exact draws against self-normalised importance sampling from 400,000
    uniform frames.  Tolerance: 5 times the combined standard error (the draws' sd/√m and the
    importance estimate's delta-method SE).  The acceptance rate against c(B) from the same uniform
    frames (its relative SE combines both, tolerance 5 SE)."""
    lam = np.array([4.0, 3.5, 3.0, 1.0, 0.5, 0.0])
    d, k = 6, 3
    rng = np.random.default_rng(21)
    R = _rotation(rng, d)
    B = (R * lam) @ R.T
    A = rng.standard_normal((d, d))
    A = A @ A.T
    m = 20_000
    V, info = sample_matrix_bingham(B, k, m, rng=rng, return_info=True)
    U = _haar_frames(rng, 400_000, d, k)
    logw = np.einsum("mij,il,mlj->m", U, B, U)
    w = np.exp(logw - logw.max())
    W = w.sum()
    for f in (
        lambda X: np.einsum("mij,mlj->mil", X, X).reshape(len(X), -1),
        lambda X: np.einsum("mij,il,mlj->m", X, A, X)[:, None],
    ):
        fv, fu = f(V), f(U)
        mu_is = (w @ fu) / W
        se_is = np.sqrt((w**2) @ (fu - mu_is) ** 2) / W
        se = np.sqrt(fv.var(axis=0) / m + se_is**2)
        assert np.all(np.abs(fv.mean(axis=0) - mu_is) <= 5 * se + 1e-12)
    log_c = logw.max() + np.log(w.mean())
    rel_se_c = w.std() / w.mean() / np.sqrt(w.size)
    predicted = macg_acceptance_rate(lam, k, log_c)
    p = info["acceptance_rate"]
    rel_se = np.hypot(np.sqrt((1 - p) / m), rel_se_c)
    assert abs(p / predicted - 1.0) < 5 * rel_se


def test_bad_arguments():
    with pytest.raises(ValueError):
        sample_matrix_bingham(np.eye(3), 4, rng=np.random.default_rng(0))
    with pytest.raises(ValueError):
        sample_matrix_bingham(None, 1, rng=np.random.default_rng(0))
    with pytest.raises(RuntimeError):  # acceptance ~1e-9 at gap 20: gives up
        sample_matrix_bingham(
            np.diag([100.0, 80.0] + [0.0] * 8),
            2,
            10,
            rng=np.random.default_rng(0),
            max_proposals=10_000,
        )
    V = sample_matrix_bingham(np.diag([3.0, 2.0, 1.0, 0.0]), 2, rng=np.random.default_rng(0))
    assert V.shape == (4, 2)
    np.testing.assert_allclose(V.T @ V, np.eye(2), atol=1e-12)


# ---------------------------------------------------------------- the chains against the oracle

#: (eigenvalues of B, k): moderate concentration, top k eigenvalues within 1 so the oracle runs
#: (acceptance 0.078 and 0.027, measured); three zero eigenvalues, so PPCA's Givens chain drops
#: the null space (track_F=False) and the Figure-2 chain (track_F=True) does not.
ORACLE_SETTINGS = {
    "d8k2": (np.array([40.0, 39.0, 20.0, 10.0, 5.0, 0.0, 0.0, 0.0]), 2),
    "d8k3": (np.array([30.0, 29.5, 29.0, 10.0, 5.0, 0.0, 0.0, 0.0]), 3),
}
N_ORACLE = 3000


def _oracle_stats(V, lam, k):
    """q_F = tr(VᵀAV) with A = B/λ₁, and the squared cosines of the k principal angles between span V
    and the top-k eigenvectors (eigen-coordinates: the first k rows), largest first."""
    q = np.einsum("mij,i,mij->m", V, lam, V) / lam[0]
    cos2 = np.linalg.svd(V[:, :k, :], compute_uv=False) ** 2
    return {"q_F": q, **{f"cos2_angle_{i + 1}": cos2[:, i] for i in range(k)}}


def _exact_stats(name, seed=2):
    lam, k = ORACLE_SETTINGS[name]
    X = sample_matrix_bingham(eig=(lam, None), k=k, size=N_ORACLE, rng=np.random.default_rng(seed))
    return _oracle_stats(X, lam, k)


def _chain_stats(name, sampler, iterations, *, scale=1.0, sweeps=None, track_F=False, seed=3):
    """Final states of N_ORACLE independent chains from Haar starts (i.i.d. draws of the chain's law
    after ``iterations``), run for B·scale, statistics taken for B."""
    lam, k = ORACLE_SETTINGS[name]
    res = run_bingham_chains(
        lam * scale,
        k,
        rng=np.random.default_rng(seed),
        sampler=sampler,
        n_chains=N_ORACLE,
        iterations=iterations,
        progress=False,
        track_F=track_F,
        sweeps_per_iteration=sweeps,
        record_every=iterations,
    )
    return _oracle_stats(res["V"], lam, k)


def _ks_pvalues(a, b):
    return {key: stats.ks_2samp(a[key], b[key]).pvalue for key in a}


@pytest.mark.parametrize("name", sorted(ORACLE_SETTINGS))
@pytest.mark.parametrize(
    "sampler,track_F",
    [("gibbs", False), ("gibbs", True), pytest.param("reference", False, marks=pytest.mark.slow)],
)
def test_chains_match_exact_draws(name, sampler, track_F):
    """Final states of 3,000 independent chains (20 iterations from Haar starts; the default 2 Givens
    sweeps per iteration) against 3,000 exact draws: two-sample KS of q_F and of each principal
    angle's squared cosine, each at level ALPHA.  Power at this size, measured in the tests below:
    B scaled by 1.2, or a single Givens sweep from the Haar start, give p-values below 1e-50."""
    exact = _exact_stats(name)
    chain = _chain_stats(name, sampler, 20, track_F=track_F)
    p = _ks_pvalues(exact, chain)
    assert min(p.values()) > ALPHA, p


@pytest.mark.parametrize("name", sorted(ORACLE_SETTINGS))
@pytest.mark.parametrize("sampler", ["gibbs", pytest.param("reference", marks=pytest.mark.slow)])
def test_oracle_rejects_a_chain_for_B_scaled_by_1_2(name, sampler):
    """Power: a chain whose target is BMF(1.2·B) (a 20% error in the concentration) is rejected at
    level ALPHA by the smallest p-value of the same tests (measured: below 1e-50 on every setting and
    chain)."""
    p = _ks_pvalues(_exact_stats(name), _chain_stats(name, sampler, 20, scale=1.2))
    assert min(p.values()) < ALPHA, p


@pytest.mark.parametrize("name", sorted(ORACLE_SETTINGS))
def test_oracle_rejects_an_unconverged_givens_chain(name):
    """Power: one Givens sweep from a Haar start (1 iteration at 1 sweep per iteration) is rejected
    at level ALPHA (measured: smallest p below 1e-190).  Two sweeps are not distinguishable at this size
    and concentration (measured p = 0.038 to 0.78), the reason the correct-chain test runs 20 iterations."""
    p = _ks_pvalues(_exact_stats(name), _chain_stats(name, "gibbs", 1, sweeps=1))
    assert min(p.values()) < ALPHA, p


# ------------------------------------------- high dimension: census's d, near the condensation point

#: d = 512 (census's), k = 2: a bulk of eigenvalues in [0, 2] and two at 250 and 200, just below the
#: point (top eigenvalue about d/2) where the law starts to condense on the top eigenvectors; there
#: the law is most sensitive to B (exact draws: B·1.1 moves the mean q_F from 0.061 to 0.102) and the MACG
#: envelope still accepts 70% of its proposals, so exact draws are cheap (measured).
HIGH_DIM_LAM = np.concatenate([[250.0, 200.0], np.linspace(2.0, 0.0, 510)])


def _high_dim_stats(V):
    q = np.einsum("mij,i,mij->m", V, HIGH_DIM_LAM, V) / HIGH_DIM_LAM[0]
    cos2 = np.linalg.svd(V[:, :2, :], compute_uv=False) ** 2
    return {"q_F": q, "cos2_angle_1": cos2[:, 0], "cos2_angle_2": cos2[:, 1]}


def _high_dim_chain(sampler, n_chains, *, scale=1.0):
    res = run_bingham_chains(
        HIGH_DIM_LAM * scale,
        2,
        rng=np.random.default_rng(3),
        sampler=sampler,
        n_chains=n_chains,
        iterations=20,
        progress=False,
        record_every=20,
    )
    return _high_dim_stats(res["V"])


@pytest.mark.slow
def test_chains_match_exact_draws_in_high_dimension():
    """At census's dimension, d = 512, k = 2 (:data:`HIGH_DIM_LAM`): the final states of independent
    chains (20 iterations from Haar starts) against 1,000 exact MACG draws, two-sample KS of q_F and
    of both principal angles' squared cosines at level ALPHA: the fast Givens chain (400 chains, its
    default 2 sweeps per iteration; measured p = 0.33, 0.31, 0.92) and the left Givens chain (1,000
    chains, 1 sweep; measured p = 0.57, 0.69, 0.078).  Power at these sizes: the left chain run for
    B·1.1 is rejected (measured smallest p 1e-75; B·1.05: 3e-16).  The fast chain holds a d × d
    completion per chain, hence its 400 chains (about 30 s)."""
    exact = _high_dim_stats(
        sample_matrix_bingham(
            eig=(HIGH_DIM_LAM, None), k=2, size=1000, rng=np.random.default_rng(2)
        )
    )
    for sampler, n_chains in (("gibbs", 400), ("left", 1000)):
        p = _ks_pvalues(exact, _high_dim_chain(sampler, n_chains))
        assert min(p.values()) > ALPHA, (sampler, p)
    p = _ks_pvalues(exact, _high_dim_chain("left", 1000, scale=1.1))
    assert min(p.values()) < ALPHA, p
