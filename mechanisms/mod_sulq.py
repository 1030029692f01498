"""MOD-SULQ, input perturbation: JMLR 2013 (Chaudhuri, Sarwate, Sinha) Algorithm 1.

A = XᵀX/n plus a symmetric Gaussian matrix N with N_ij (i <= j) i.i.d. N(0, β²); release the
top-k eigenvectors of A + N.  Guarantee: (ε, δ)-DP, replace-one-row neighbours, rows of L2 norm
<= 1.  ``calibration="paper"`` (default): β of eq. (5) (Theorem 5);  ``calibration="tight"``: the
smallest β for the exact Gaussian profile of the same release, sensitivity √2/n
(:func:`mechanisms.calibration.mod_sulq_noise_scale_tight`, docs/calibration.md);
``calibration="sulq"``: the noise variance of the original SULQ method, 8 d² log²(d/δ)/(n² ε²)
(Blum, Dwork, McSherry & Nissim 2005, as quoted in JMLR 2013 section 3.1), on the symmetric noise
of Algorithm 1 (:func:`sulq_noise_scale`); ``calibration="variance"``: eq. (5)'s β read as the
noise variance (standard deviation √β), one reading of how the paper's code may have used eq. (5),
measured in REPRODUCTION.md (Figure 3(b)).  Both alternatives hold Theorem 5's guarantee only where
their noise is at least eq. (5)'s, which :func:`mod_sulq` checks.
"""

from __future__ import annotations

import math

import numpy as np

from ._base import (
    MechanismOutput,
    PrivacyGuarantee,
    check_data,
    check_delta,
    check_epsilon,
    check_k,
    second_moment,
)
from .calibration import check_calibration, mod_sulq_noise_scale, mod_sulq_noise_scale_tight
from .linalg import symmetric_gaussian, top_k_eigenvectors

#: MOD-SULQ's noise calibrations: eq. (5) (default), the exact Gaussian profile, the original SULQ
#: variance, eq. (5)'s β as the variance
MOD_SULQ_CALIBRATIONS = ("paper", "tight", "sulq", "variance")


def sulq_noise_scale(n: int, d: int, epsilon: float, delta: float) -> float:
    """Standard deviation of the original SULQ noise, JMLR 2013 section 3.1 (Blum et al. 2005):
    variance 8 d² log²(d/δ)/(n² ε²), i.e.

        β_SULQ = 2√2 · d · log(d/δ) / (n ε).

    It is 5.24 times the β of eq. (5) for kddcup's d = 116, δ = 0.01, ε = 0.1 (at every n); the
    release with it is (ε, δ)-DP by Theorem 5 wherever β_SULQ >= β of eq. (5) (adding more
    independent Gaussian noise is post-processing), which :func:`mod_sulq` checks.
    """
    if int(n) != n or n < 1 or int(d) != d or d < 1:
        raise ValueError(f"n and d must be integers >= 1, got n={n!r}, d={d!r}")
    eps, dl = check_epsilon(epsilon), check_delta(delta)
    if dl >= d:
        raise ValueError(
            f"delta = {delta} must be below d = {d} for the SULQ variance (log(d/delta) > 0)"
        )
    return 2.0 * math.sqrt(2.0) * d * math.log(d / dl) / (n * eps)


def mod_sulq(
    X,
    k: int,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    clip: bool = False,
    calibration: str = "paper",
) -> MechanismOutput:
    """Algorithm 1 of JMLR 2013 with the noise standard deviation β of eq. (5) (``calibration="paper"``),
    the smallest β for the exact Gaussian privacy profile (``calibration="tight"``) or the original
    SULQ noise of section 3.1 (``calibration="sulq"``, :func:`sulq_noise_scale`; larger than eq. (5)),
    or standard deviation √β, eq. (5)'s β read as a variance (``calibration="variance"``).

    Parameters
    ----------
    X : array-like of shape (n, d) or PreparedData
        Data, rows of L2 norm at most 1 (see ``clip``).
    k : int
        Dimension of the released subspace, 1 <= k < d.
    epsilon : float
        Privacy parameter ε > 0.
    delta : float
        Privacy parameter δ in (0, 1).
    rng : numpy.random.Generator
        Source of the noise matrix N.
    clip : bool, default False
        Scale rows above the unit norm back onto the unit ball instead of refusing them.
    calibration : {"paper", "tight", "sulq", "variance"}, default "paper"
        β of eq. (5), the smallest β for the exact Gaussian profile (sensitivity √2/n,
        :func:`mechanisms.calibration.mod_sulq_noise_scale_tight`), the original SULQ noise
        (:func:`sulq_noise_scale`), or √β (eq. (5)'s β as the variance).  ``sulq`` and
        ``variance`` are refused where their noise would be below eq. (5)'s (for ``variance``,
        where β > 1).

    Returns
    -------
    MechanismOutput
        ``components`` (d x k, orthonormal): the top-k eigenvectors of A + N; the guarantee
        ((ε, δ)-DP, replace-one-row); release ``status``, ``noise_scale`` (β: a function of n, d,
        ε, δ; n is public under replace-one-row), ``calibration``; diagnostics (not private)
        ``n_clipped``.

    References
    ----------
    K. Chaudhuri, A. D. Sarwate and K. Sinha, "A near-optimal algorithm for differentially-private
    principal components", JMLR 14 (2013), Algorithm 1 (MOD-SULQ), eq. (5) and Theorem 5.
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    calibration = check_calibration(calibration, MOD_SULQ_CALIBRATIONS)
    X, n_clipped = check_data(X, clip=clip)
    n, d = X.shape
    k = check_k(k, d)
    if calibration == "paper":
        beta = mod_sulq_noise_scale(n, d, epsilon, delta)
        note = "JMLR 2013 Theorem 5; noise sd beta of eq. (5)"
    elif calibration == "sulq":
        beta = sulq_noise_scale(n, d, epsilon, delta)
        if beta < mod_sulq_noise_scale(n, d, epsilon, delta):  # a function of (n, d, ε, δ) only
            raise ValueError(
                "the SULQ noise is below eq. (5)'s for these n, d, epsilon, delta: Theorem 5 "
                "does not cover it; use calibration='paper'"
            )
        note = (
            "JMLR 2013 Theorem 5 (noise at least eq. (5)'s); noise sd of the original SULQ, "
            "variance 8 d^2 log^2(d/delta)/(n^2 epsilon^2), JMLR 2013 section 3.1"
        )
    elif calibration == "variance":
        beta_eq5 = mod_sulq_noise_scale(n, d, epsilon, delta)
        if beta_eq5 > 1.0:  # then √β < β; a function of (n, d, ε, δ) only
            raise ValueError(
                "eq. (5)'s beta exceeds 1 for these n, d, epsilon, delta, so its square root is "
                "below it: Theorem 5 does not cover it; use calibration='paper'"
            )
        beta = math.sqrt(beta_eq5)
        note = (
            "JMLR 2013 Theorem 5 (noise at least eq. (5)'s); noise variance beta of eq. (5), "
            "sd sqrt(beta)"
        )
    else:
        beta = mod_sulq_noise_scale_tight(n, epsilon, delta)
        note = (
            "JMLR 2013 Algorithm 1 with the smallest beta for the exact Gaussian profile "
            "(sensitivity sqrt(2)/n; dp-accounting)"
        )
    noisy = second_moment(X) + symmetric_gaussian(d, beta, rng)
    V = top_k_eigenvectors(noisy, k)
    guarantee = PrivacyGuarantee(epsilon, delta, "replace-one-row", note=note)
    return MechanismOutput(
        V,
        guarantee,
        release={"status": "ok", "noise_scale": beta, "calibration": calibration},
        diagnostics={"n_clipped": n_clipped},
    )
