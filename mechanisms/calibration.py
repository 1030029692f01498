"""Noise scales, concentrations and the shared Gaussian/zCDP calibration helpers.

Each function names the paper and equation it implements; the tests check each
value against the formula and, statistically, against the noise actually added.

Here: CSS13's MOD-SULQ β (eq. (5)) and PPCA concentration, DTTZ14's Δ_{ε,δ}, and the generic
Gaussian-mechanism calibration (classical and zCDP) that the other mechanisms build on.  Noise scales
that only make sense with one mechanism's parameters sit with that mechanism:
``noisy_power.noisy_power_noise_scale`` / ``_row_noise_scale`` / ``_zcdp_noise_scale`` /
``_laplace_scale`` (HP14), ``streaming_power.streaming_power_noise_scale``,
``online_pca.algorithm1_noise_scale`` / ``tree_node_noise_scale`` (DTTZ14 §4),
``private_sketch.private_sketch_lift`` (U18), ``subspace.truncated_laplace_params`` /
``stable_histogram_threshold`` (SS21).
"""

from __future__ import annotations

import math

from ._base import check_delta, check_epsilon


def _mod_sulq_log_term(d: int, delta: float) -> float:
    """log((d² + d) / (2·sqrt(2π)·δ)): the union-bound term of JMLR Theorem 5's proof."""
    return math.log((d * d + d) / (delta * 2.0 * math.sqrt(2.0 * math.pi)))


def mod_sulq_noise_scale(n: int, d: int, epsilon: float, delta: float) -> float:
    """Standard deviation β of MOD-SULQ's symmetric Gaussian noise, JMLR eq. (5).

        β = (d+1)/(n ε) · sqrt(2 log((d²+d)/(2 sqrt(2π) δ))) + 1/(n sqrt(ε))

    (ε, δ)-DP for replace-one-row neighbours with rows of L2 norm <= 1
    (Theorem 5).  Eq. (5) is an upper bound on the positive root of the
    quadratic solved in the proof (see :func:`mod_sulq_noise_scale_root`), so
    using it is conservative.
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    log_term = _mod_sulq_log_term(d, dl)
    if log_term <= 0:
        raise ValueError(f"delta = {delta} too large for d = {d}: log((d²+d)/(2 sqrt(2π) δ)) <= 0")
    return (d + 1) / (n * eps) * math.sqrt(2.0 * log_term) + 1.0 / (n * math.sqrt(eps))


def mod_sulq_noise_scale_root(n: int, d: int, epsilon: float, delta: float) -> float:
    """The exact β solving the proof of JMLR Theorem 5 (the quadratic before eq. (5)).

        ε = 1/(2β²) · (2(d+1)γ/n + 2/n²),  γ = β·sqrt(2 log((d²+d)/(2 sqrt(2π) δ)))

    i.e. 2εβ² − (2(d+1)s/n)·β − 2/n² = 0 with s = sqrt(2 log(...)).  Only used to
    check that eq. (5) is at least this large.
    """
    eps = check_epsilon(epsilon)
    s = math.sqrt(2.0 * _mod_sulq_log_term(d, check_delta(delta)))
    a, b, c = 2.0 * eps, -2.0 * (d + 1) * s / n, -2.0 / n**2
    return (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)


def analyze_gauss_noise_scale(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Δ_{ε,δ} = sensitivity · sqrt(2 ln(1.25/δ)) / ε: Analyze Gauss (DTTZ 2014) Algorithm 1.

    Standard deviation of each upper-triangular noise entry added to the
    *unnormalised* covariance AᵀA (rows of norm <= 1).  The L2 sensitivity of
    the upper triangle of AᵀA is ‖aaᵀ‖_F = ‖a‖² <= 1 under add/remove-one-row;
    under replace-one-row it is ‖aaᵀ − bbᵀ‖_F <= sqrt(2).  The Gaussian-mechanism
    theorem the paper invokes (Dwork & Roth 2014, Thm A.1) needs ε < 1.
    """
    eps = check_epsilon(epsilon, upper=1.0)
    dl = check_delta(delta)
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / dl)) / eps


def ppca_concentration(n: int, epsilon: float) -> float:
    """Scale n·ε/2 of PPCA's matrix Bingham BMF(n ε/2 · A), JMLR Algorithm 2."""
    return n * check_epsilon(epsilon) / 2.0


# ---------------------------------------------------------------------------------------------
# Generic Gaussian calibration (classical and zCDP), shared by the mechanisms of HP14, DTTZ14 §4, U18
# ---------------------------------------------------------------------------------------------

def zcdp_rho_for(epsilon: float, delta: float) -> float:
    """Largest ρ such that ρ-zCDP implies (ε, δ)-DP via ε = ρ + 2 sqrt(ρ log(1/δ)).

    Bun & Steinke (TCC 2016), Proposition 1.3; solving the quadratic in sqrt(ρ):
    ``sqrt(ρ) = sqrt(log(1/δ) + ε) - sqrt(log(1/δ))``.
    """
    L = math.log(1.0 / delta)
    return (math.sqrt(L + epsilon) - math.sqrt(L)) ** 2


def zcdp_to_epsilon(rho: float, delta: float) -> float:
    """ε of the (ε, δ)-DP guarantee implied by ρ-zCDP: ρ + 2 sqrt(ρ log(1/δ))."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def gaussian_sigma(sensitivity: float, epsilon: float, delta: float, compositions: int = 1) -> float:
    """Noise std of a Gaussian mechanism, L2 sensitivity ``sensitivity``, composed ``compositions`` times.

    Returns the smaller of two valid calibrations:
    (a) zCDP: σ = Δ sqrt(T / (2ρ)) with ρ = :func:`zcdp_rho_for` (ε, δ) (any ε > 0);
    (b) for T = 1 and ε < 1 only, the classical σ = Δ sqrt(2 ln(1.25/δ)) / ε
        (Dwork & Roth 2014, Theorem A.1) — for T > 1 the classical bound is not used.
    Both are individually sufficient, so their minimum is.
    """
    sig = sensitivity * math.sqrt(compositions / (2.0 * zcdp_rho_for(epsilon, delta)))
    if compositions == 1 and epsilon < 1.0:
        sig = min(sig, sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon)
    return sig


# ---------------------------------------------------------------------------------------------
# Exact privacy profile of the Gaussian mechanism (Balle & Wang, ICML 2018, Theorem 8)
# ---------------------------------------------------------------------------------------------

def gaussian_mu(sensitivity: float, sigma: float, compositions: int = 1) -> float:
    """μ = sqrt(T)·Δ/σ: T adaptive Gaussian releases of L2 sensitivity Δ and std σ are together
    exactly as private as one Gaussian with sensitivity/std ratio μ (μ-GDP; Dong, Roth & Su 2022,
    Corollary 2).  For unequal steps, combine in quadrature: μ = sqrt(Σ_t (Δ_t/σ_t)²)."""
    if not (sigma > 0 and sensitivity >= 0):
        raise ValueError(f"need sigma > 0 and sensitivity >= 0, got {sigma}, {sensitivity}")
    return math.sqrt(compositions) * sensitivity / sigma


def gaussian_delta_for_epsilon(mu: float, epsilon: float) -> float:
    """Exact δ(ε) of a Gaussian mechanism with ratio μ = Δ/σ (Balle & Wang 2018, Theorem 8):

        δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ).
    """
    from scipy.special import log_ndtr, ndtr

    if mu <= 0:
        return 0.0
    a = ndtr(mu / 2.0 - epsilon / mu)
    # e^ε Φ(−μ/2 − ε/μ) computed in log space (ε can be large)
    b = math.exp(epsilon + float(log_ndtr(-mu / 2.0 - epsilon / mu)))
    return max(0.0, float(a - b))


def gaussian_epsilon_for_delta(mu: float, delta: float) -> float:
    """Exact ε(δ) of a Gaussian mechanism with ratio μ = Δ/σ: the smallest ε >= 0 with
    :func:`gaussian_delta_for_epsilon` (μ, ε) <= δ (δ(ε) is decreasing in ε)."""
    from scipy.optimize import brentq

    dl = check_delta(delta)
    if gaussian_delta_for_epsilon(mu, 0.0) <= dl:
        return 0.0
    hi = 1.0
    while gaussian_delta_for_epsilon(mu, hi) > dl:
        hi *= 2.0
    return float(brentq(lambda e: gaussian_delta_for_epsilon(mu, e) - dl, 0.0, hi, xtol=1e-12, rtol=1e-12))
