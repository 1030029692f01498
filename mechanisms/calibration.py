"""Noise scales, concentrations and the shared Gaussian/zCDP calibration helpers.

Each function names the paper and equation it implements; the tests check each
value against the formula and, statistically, against the noise actually added.

Here: CSS13's MOD-SULQ β (eq. (5)) and PPCA concentration, DTTZ14's Δ_{ε,δ}, the generic
Gaussian-mechanism calibration (classical and zCDP) that the other mechanisms build on, and the
**tight** calibrations (``calibration="tight"`` of every Gaussian mechanism): the smallest σ for
the exact privacy profile, computed by Google's ``dp-accounting`` library
(:func:`gaussian_sigma_tight`, :func:`gaussian_epsilon_tight`), and the exact profile of the
Gaussian-sketch release of ``private_sketch`` (:func:`sketch_delta_for_epsilon`,
:func:`sketch_lift_tight`).  Derivations: ``docs/calibration.md``.  Noise scales
that only make sense with one mechanism's parameters sit with that mechanism:
``noisy_power.noisy_power_noise_scale`` / ``_row_noise_scale`` / ``_zcdp_noise_scale`` /
``_laplace_scale`` (HP14), ``streaming_power.streaming_power_noise_scale``,
``online_pca.algorithm1_noise_scale`` / ``tree_node_noise_scale`` (DTTZ14 §4),
``private_sketch.private_sketch_lift`` (U14), ``subspace.truncated_laplace_params`` /
``stable_histogram_threshold`` (SS21).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ._base import PrivacyInputError, check_delta, check_epsilon

#: ``calibration`` values of the Gaussian mechanisms: the paper's sufficient formula (default, the
#: reproduction's) or the smallest noise for the exact privacy profile (docs/calibration.md).
CALIBRATIONS = ("paper", "tight")


def check_calibration(calibration: str, allowed: tuple[str, ...] = CALIBRATIONS) -> str:
    """Return ``calibration`` if it is one of ``allowed``; else a clear :class:`PrivacyInputError`."""
    if calibration not in allowed:
        raise PrivacyInputError(f"calibration must be one of {list(allowed)}, got {calibration!r}")
    return calibration


def outer_product_sensitivity(neighbouring: str) -> float:
    """L2 sensitivity of the upper triangle (diagonal included) of Σ_rows a aᵀ, rows ‖a‖ <= 1.

    With D the change of Σ a aᵀ, ‖upper(D)‖² = (‖D‖_F² + Σ_i D_ii²)/2 <= ‖D‖_F².
    add/remove one row, or zero out one row: D = aaᵀ, ‖D‖_F = ‖a‖² <= 1, attained by a = e_1
    (then upper(D) = e_1e_1ᵀ);
    replace one row: D = xxᵀ − yyᵀ, ‖D‖_F² = ‖x‖⁴ + ‖y‖⁴ − 2(x·y)² <= 2, attained by x = e_1,
    y = e_2 (D diagonal, so ‖upper(D)‖ = ‖D‖_F = √2).  Divide by n for A = XᵀX/n (MOD-SULQ).
    """
    if neighbouring in ("add-remove-one-row", "zero-out-one-row"):
        return 1.0
    if neighbouring == "replace-one-row":
        return math.sqrt(2.0)
    raise PrivacyInputError(
        "neighbouring must be 'add-remove-one-row', 'zero-out-one-row' or "
        f"'replace-one-row', got {neighbouring!r}"
    )


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


def mod_sulq_noise_scale_tight(n: int, epsilon: float, delta: float) -> float:
    """``calibration="tight"`` β of MOD-SULQ: the smallest std of the i.i.d. upper-triangle noise on
    A = XᵀX/n that makes the release (ε, δ)-DP for replace-one-row neighbours.

    The released upper triangle of A has L2 sensitivity √2/n (:func:`outer_product_sensitivity`,
    attained), and A + N is one Gaussian mechanism, so β = :func:`gaussian_sigma_tight` (√2/n, ε, δ).
    Eq. (5) bounds the same release through a union bound over entries; it is larger by about
    (d + 1)/√2 (tested: tight <= eq. (5) always).
    """
    if int(n) != n or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    return gaussian_sigma_tight(outer_product_sensitivity("replace-one-row") / n, epsilon, delta)


def analyze_gauss_noise_scale_tight(
    epsilon: float, delta: float, sensitivity: float = 1.0
) -> float:
    """``calibration="tight"`` std of Analyze Gauss's upper-triangle noise on XᵀX: the smallest σ
    for the exact Gaussian profile at the given L2 sensitivity (1 add/remove, √2 replace; see
    :func:`outer_product_sensitivity`): :func:`gaussian_sigma_tight`.  Any ε > 0."""
    return gaussian_sigma_tight(sensitivity, epsilon, delta)


#: Largest scale n·ε/2 of PPCA's Bingham law the samplers accept.  B = n·ε/2·A has eigenvalues up to
#: that scale (rows of norm <= 1), and the samplers resolve differences of order 1 between them: at a
#: scale s a float's spacing is s·2⁻⁵² (2·10⁻⁷ at 10⁹), beyond which the exact k = 1 sampler's
#: acceptance test and the Givens angles lose the law (and, from about 10¹⁸ and 10²², never accept).
MAX_BINGHAM_SCALE = 1e9


def ppca_concentration(n: int, epsilon: float) -> float:
    """Scale n·ε/2 of PPCA's matrix Bingham BMF(n ε/2 · A), JMLR Algorithm 2; refused above
    :data:`MAX_BINGHAM_SCALE` with a fixed message (n is public under replace-one-row, but the message
    names no count)."""
    scale = n * check_epsilon(epsilon) / 2.0
    if not scale <= MAX_BINGHAM_SCALE:
        raise PrivacyInputError(
            f"epsilon too large for the Bingham samplers: n*epsilon/2 must be at most "
            f"{MAX_BINGHAM_SCALE:g} (floating-point range of the exact draws)"
        )
    return scale


# ---------------------------------------------------------------------------------------------
# Generic Gaussian calibration (classical and zCDP), shared by the mechanisms of HP14, DTTZ14 §4, U14
# ---------------------------------------------------------------------------------------------

# The two Bun–Steinke conversions below are kept by hand on purpose: they DEFINE the default
# (calibration="paper") noise of streaming_power, online_pca's tree and noisy_power's
# calibration="zcdp", whose stored records depend on these exact numbers.  dp-accounting does not
# compute this formula (its RDP accountant converts ρ-zCDP with a tighter bound, which
# tests/mechanisms/test_calibration_tight.py uses to check that these are sound upper bounds); wherever a tight
# number is wanted, calibration="tight" uses the library (gaussian_sigma_tight below).


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


def gaussian_sigma(
    sensitivity: float, epsilon: float, delta: float, compositions: int = 1
) -> float:
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
    return float(
        brentq(lambda e: gaussian_delta_for_epsilon(mu, e) - dl, 0.0, hi, xtol=1e-12, rtol=1e-12)
    )


# ---------------------------------------------------------------------------------------------
# Tight calibration from the exact Gaussian privacy profile, by Google's dp-accounting library
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _unit_gaussian_sigma_tight(epsilon: float, delta: float, compositions: int) -> float:
    from dp_accounting.pld import accountant, common

    # the library's binary search stops within an absolute 1e-7 of the smallest std, on the side that
    # satisfies δ(ε) <= δ; at unit sensitivity that is a relative 1e-7 (σ is linear in Δ)
    return float(
        accountant.get_smallest_gaussian_noise(
            common.DifferentialPrivacyParameters(epsilon, delta),
            num_queries=compositions,
            sensitivity=1.0,
        )
    )


def gaussian_sigma_tight(
    sensitivity: float, epsilon: float, delta: float, compositions: int = 1
) -> float:
    """Smallest noise std σ such that ``compositions`` (adaptive) Gaussian releases, each of L2
    sensitivity ``sensitivity`` and std σ, are together (ε, δ)-DP — the ``calibration="tight"``
    noise of every Gaussian mechanism here.

    Computed by ``dp_accounting.pld.accountant.get_smallest_gaussian_noise`` (Google's dp-accounting):
    a binary search on the exact Gaussian profile δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)
    (Balle & Wang 2018, Thm 8), with the T-fold composition taken as one Gaussian of sensitivity
    sqrt(T)·Δ (exact: μ-GDP composes as μ² adds, Dong, Roth & Su 2022, Cor. 2).  The library is
    called at unit sensitivity and the result scaled by Δ (σ is linear in Δ), so its absolute
    tolerance (1e-7) is a relative one; it returns the end of its bracket that satisfies the target.
    Valid for every ε > 0 (no ε < 1 condition).
    """
    eps, dl = check_epsilon(epsilon), check_delta(delta)
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise ValueError(f"sensitivity must be a finite number > 0, got {sensitivity!r}")
    if int(compositions) != compositions or compositions < 1:
        raise ValueError(f"compositions must be an integer >= 1, got {compositions!r}")
    return sensitivity * _unit_gaussian_sigma_tight(eps, dl, int(compositions))


def gaussian_epsilon_tight(
    sensitivity: float, sigma: float, delta: float, compositions: int = 1
) -> float:
    """ε(δ) of ``compositions`` Gaussian releases of sensitivity Δ and std σ, by dp-accounting's
    privacy-loss distribution (``from_gaussian_mechanism`` with sensitivity sqrt(T)·Δ, pessimistic
    discretisation: an upper bound within about 1e-4 of the exact value)."""
    from dp_accounting.pld import privacy_loss_distribution

    dl = check_delta(delta)
    mu = gaussian_mu(sensitivity, sigma, compositions)
    pld = privacy_loss_distribution.from_gaussian_mechanism(1.0 / mu, sensitivity=1.0)
    return float(pld.get_epsilon_for_delta(dl))


# ---------------------------------------------------------------------------------------------
# Exact privacy profile of a Gaussian sketch (the release of private_sketch)
# ---------------------------------------------------------------------------------------------


def sketch_delta_for_epsilon(s: float, r: int, epsilon: float) -> float:
    """Exact δ(ε) between r i.i.d. draws of N(0, 1) and of N(0, 1 + s) (both orders, the larger).

    This is the whole privacy profile of the Gaussian sketch Z = Φ X̃ (r x d, Φ standard Gaussian):
    Z's rows are i.i.d. N(0, Σ), Σ = X̃ᵀX̃; adding a row x gives Σ + xxᵀ; whitening by Σ^{-1/2}
    leaves N(0, I) against N(0, I + vvᵀ), v = Σ^{-1/2}x, which differ only along v, with
    s = ‖v‖² = xᵀΣ⁻¹x <= ‖x‖²/λ_min(Σ).  The log-likelihood ratio of the r draws along v is
    L = a·S − b, a = s/(2(1+s)), b = (r/2) log(1+s), S = Σ z_i² ~ χ²_r (without x) or (1+s)χ²_r
    (with x), so both hockey-stick divergences are chi-square tail differences:

        δ_add(ε)    = P[χ²_r > c₁/(1+s)] − e^ε P[χ²_r > c₁],       c₁ = (ε + b)/a,
        δ_remove(ε) = P[χ²_r < c₂]       − e^ε P[χ²_r < c₂/(1+s)], c₂ = (b − ε)/a  (0 if c₂ <= 0).

    Both increase with s (N(0,1) vs N(0,1+s') for s' < s is a post-processing: add N(0, c) noise
    and rescale), so the worst case over neighbours is s = 1/λ_min(Σ).  Derivation: docs/calibration.md.
    """
    from scipy.stats import chi2

    if s <= 0:
        return 0.0
    r = int(r)
    a = s / (2.0 * (1.0 + s))
    b = 0.5 * r * math.log1p(s)
    c1 = (epsilon + b) / a
    # e^ε·P[...] in log space (ε may be large and the tails tiny)
    d_add = chi2.sf(c1 / (1.0 + s), r) - math.exp(epsilon + chi2.logsf(c1, r))
    c2 = (b - epsilon) / a
    d_remove = (
        0.0 if c2 <= 0 else chi2.cdf(c2, r) - math.exp(epsilon + chi2.logcdf(c2 / (1.0 + s), r))
    )
    return max(0.0, float(d_add), float(d_remove))


@lru_cache(maxsize=1024)
def sketch_lift_tight(epsilon: float, delta: float, r: int) -> float:
    """Smallest lift w (singular-value floor of X̃ = [X; w I]) such that the r-row Gaussian sketch
    Z = Φ X̃ is (ε, δ)-DP for add/remove-one-row neighbours with ‖x‖ <= 1: the root in w of
    :func:`sketch_delta_for_epsilon` (1/w², r, ε) = δ (λ_min(X̃ᵀX̃) >= w², so s <= 1/w²), returned
    rounded up by a relative 1e-9 so that the profile at w is <= δ."""
    from scipy.optimize import brentq

    eps, dl = check_epsilon(epsilon), check_delta(delta)
    if int(r) != r or r < 1:
        raise ValueError(f"r must be an integer >= 1, got {r!r}")
    f = lambda log_w: sketch_delta_for_epsilon(math.exp(-2.0 * log_w), int(r), eps) - dl  # noqa: E731
    lo, hi = -2.0, 2.0
    while f(lo) <= 0:
        lo -= 2.0
    while f(hi) > 0:
        hi += 2.0
    log_w = brentq(f, lo, hi, xtol=1e-12, rtol=1e-12)
    w = math.exp(log_w) * (1.0 + 1e-9)
    while f(math.log(w)) > 0:  # brentq's root may sit on the wrong side by its tolerance
        w *= 1.0 + 1e-9
    return w


# ---------------------------------------------------------------------------------------------
# ρ-zCDP mechanisms: the (ε, δ) a ρ certifies, and the largest ρ that certifies an (ε, δ)
# ---------------------------------------------------------------------------------------------

#: Rényi orders at which a ρ-zCDP guarantee (RDP ε(α) = ρα for every α > 1, Bun & Steinke 2016,
#: Definition 1.1) is converted: 4,000 geometrically spaced orders in [1.02, 10⁶] (ratio 1.0045
#: between neighbours), which holds the optimum α* ≈ 1 + sqrt(ln(1/δ)/ρ) for every ρ in
#: [10⁻⁹, 10³] and δ in [10⁻³⁰, 0.5).
ZCDP_ORDERS: tuple[float, ...] = tuple(
    float(1.02 * (1e6 / 1.02) ** (i / 3999)) for i in range(4000)
)


@lru_cache(maxsize=4096)
def _zcdp_epsilon(rho: float, delta: float) -> float:
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

    acc = RdpAccountant(orders=list(ZCDP_ORDERS))
    acc.compose(dp_accounting.ZCDpEvent(rho))
    return float(acc.get_epsilon(delta))


def zcdp_epsilon_tight(rho: float, delta: float) -> float:
    """The ε at ``delta`` that ρ-zCDP certifies: dp-accounting's RDP accountant on a
    ``ZCDpEvent(ρ)`` over :data:`ZCDP_ORDERS`.

    The accountant applies, at each order α, the conversion of Canonne, Kamath & Steinke (2020,
    Proposition 12) / Asoodeh et al. (2021): ε = ρα + ln(1 − 1/α) − ln(δα)/(α − 1), and takes the
    minimum over the orders.  It is never larger than Bun & Steinke's closed form
    ρ + 2 sqrt(ρ ln(1/δ)) (:func:`zcdp_to_epsilon`, the α-optimum of the basic conversion), which
    tests/mechanisms/test_zcdp.py checks.  Any order gives a valid ε, so the finite grid only costs tightness.
    """
    dl = check_delta(delta)
    try:
        r = float(rho)
    except (TypeError, ValueError):
        raise PrivacyInputError(f"rho must be a number, got {rho!r}") from None
    if not (math.isfinite(r) and r > 0):
        raise PrivacyInputError(f"rho must be a finite number > 0, got {rho!r}")
    return _zcdp_epsilon(r, dl)


def _zcdp_epsilon_fast(rho: float, delta: float) -> float:
    """The accountant's conversion (see :func:`zcdp_epsilon_tight`) vectorised over the same
    orders, for the bisection of :func:`zcdp_rho_tight`, whose end point the library then checks;
    tests/mechanisms/test_zcdp.py holds the two to a relative 1e-12."""
    a = np.asarray(ZCDP_ORDERS)
    eps = rho * a + np.log1p(-1.0 / a) - np.log(delta * a) / (a - 1.0)
    return max(0.0, float(eps.min()))


@lru_cache(maxsize=4096)
def zcdp_rho_tight(epsilon: float, delta: float) -> float:
    """The largest ρ whose conversion :func:`zcdp_epsilon_tight` (ρ, δ) is at most ε: the ρ at
    which a ρ-zCDP mechanism runs to be (ε, δ)-DP.

    Bisection on ρ (the converted ε increases with ρ at every order, so with their minimum), started
    from Bun & Steinke's ρ (:func:`zcdp_rho_for`, which certifies ε since the accountant's
    conversion is tighter), to a relative width of 1e-12; the lower end, which certifies, is
    returned.  A ρ larger by a relative 1e-9 does not certify ε (tested).
    """
    eps, dl = check_epsilon(epsilon), check_delta(delta)
    lo = zcdp_rho_for(eps, dl)
    if _zcdp_epsilon_fast(lo, dl) > eps:  # pragma: no cover - the accountant is tighter (tested)
        raise RuntimeError("the RDP conversion is looser than Bun-Steinke's: dp-accounting changed")
    hi = 2.0 * lo
    while _zcdp_epsilon_fast(hi, dl) <= eps:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-13 * lo:
        mid = 0.5 * (lo + hi)
        if _zcdp_epsilon_fast(mid, dl) <= eps:
            lo = mid
        else:
            hi = mid
    # the library itself must certify the returned ρ (its scalar arithmetic may round otherwise)
    while _zcdp_epsilon(lo, dl) > eps:  # pragma: no cover - at most a few ulps
        lo *= 1.0 - 1e-12
    return lo


def zcdp_budget(
    epsilon: float | None, delta: float, rho: float | None
) -> tuple[float, float, float]:
    """``(rho, epsilon, delta)`` a ρ-zCDP mechanism runs at and records.

    ``rho`` None: ρ = :func:`zcdp_rho_tight` (ε, δ), the largest that certifies (ε, δ), and the
    recorded ε is the requested one.  ``rho`` given: the mechanism runs at that ρ and the recorded ε
    is :func:`zcdp_epsilon_tight` (ρ, δ) (``epsilon`` is then not used: the harness passes its
    configured ε to every mechanism).
    """
    dl = check_delta(delta)
    if rho is None:
        if epsilon is None:
            raise PrivacyInputError("give epsilon (with delta) or rho")
        eps = check_epsilon(epsilon)
        return zcdp_rho_tight(eps, dl), eps, dl
    eps = zcdp_epsilon_tight(rho, dl)
    return float(rho), eps, dl
