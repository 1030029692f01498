"""Analyze Gauss: Dwork, Talwar, Thakurta, Zhang (STOC 2014) Algorithm 1.

Release C = XᵀX + E with E symmetric, upper-triangular entries i.i.d.
N(0, Δ²), Δ = sqrt(2 ln(1.25/δ))/ε, then take the top-k eigenvectors of C
(post-processing).  Guarantee: (ε, δ)-DP for add/remove-one-row neighbours with
rows of L2 norm <= 1 (sensitivity ‖aaᵀ‖_F <= 1), ε < 1 (Gaussian-mechanism theorem).

``neighbouring="replace-one-row"`` scales Δ by sqrt(2) (sensitivity
‖aaᵀ − bbᵀ‖_F <= sqrt(2)) so that it can be compared with MOD-SULQ and PPCA on
the same footing.

``calibration="paper"`` (default) uses Δ_{ε,δ} above (ε < 1); ``calibration="tight"`` the smallest
std for the exact Gaussian profile at the same sensitivity (any ε > 0;
:func:`mechanisms.calibration.analyze_gauss_noise_scale_tight`, docs/calibration.md).
"""

from __future__ import annotations

import math

import numpy as np

from ._base import (
    MechanismOutput,
    PrivacyGuarantee,
    PrivacyInputError,
    check_data,
    check_delta,
    check_epsilon,
    check_k,
)
from .calibration import (
    analyze_gauss_noise_scale,
    analyze_gauss_noise_scale_tight,
    check_calibration,
)
from .linalg import symmetric_gaussian, top_k_eigenvectors

SENSITIVITY = {"add-remove-one-row": 1.0, "replace-one-row": math.sqrt(2.0)}


def analyze_gauss(
    X,
    k: int,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    neighbouring: str = "add-remove-one-row",
    clip: bool = False,
    calibration: str = "paper",
) -> MechanismOutput:
    """Algorithm 1 of DTTZ 2014 followed by the top-k eigenvectors of the noisy covariance.

    Parameters
    ----------
    X : array-like of shape (n, d)
        The data; every row must have L2 norm at most 1 (see ``clip``).
    k : int
        Dimension of the released subspace, 1 <= k < d.
    epsilon : float
        Privacy parameter ε > 0 (``calibration="paper"`` needs ε < 1).
    delta : float
        Privacy parameter δ in (0, 1).
    rng : numpy.random.Generator
        Source of the noise matrix E.
    neighbouring : {"add-remove-one-row", "replace-one-row"}, default "add-remove-one-row"
        The relation the guarantee refers to; replace-one-row multiplies the sensitivity by √2.
    clip : bool, default False
        Scale rows above the unit norm back onto the unit ball instead of refusing them.
    calibration : {"paper", "tight"}, default "paper"
        ``"paper"``: noise std Δ_{ε,δ} = √(2 ln(1.25/δ))/ε times the sensitivity; ``"tight"``: the
        smallest std for the exact Gaussian privacy profile.

    Returns
    -------
    MechanismOutput
        ``components`` (top-k eigenvectors of XᵀX + E), the (ε, δ) guarantee, ``release`` with
        ``status``, ``noise_scale`` (a function of ε, δ and the relation only, never of n, so it is
        public under add/remove too) and ``calibration``; ``diagnostics`` (not private) with
        ``n_clipped``.

    References
    ----------
    Dwork, Talwar, Thakurta and Zhang, "Analyze Gauss: optimal bounds for privacy-preserving
    principal component analysis", STOC 2014, Algorithm 1.
    """
    if neighbouring not in SENSITIVITY:
        raise PrivacyInputError(
            f"neighbouring must be one of {sorted(SENSITIVITY)}, got {neighbouring!r}"
        )
    calibration = check_calibration(calibration)
    epsilon = check_epsilon(epsilon, upper=1.0 if calibration == "paper" else None)
    delta = check_delta(delta)
    X, n_clipped = check_data(X, clip=clip)
    d = X.shape[1]
    k = check_k(k, d)
    if calibration == "paper":
        scale = analyze_gauss_noise_scale(epsilon, delta, SENSITIVITY[neighbouring])
        note = "DTTZ 2014 Algorithm 1 (Gaussian mechanism on the covariance)"
    else:
        scale = analyze_gauss_noise_scale_tight(epsilon, delta, SENSITIVITY[neighbouring])
        note = (
            "DTTZ 2014 Algorithm 1 with the smallest noise for the exact Gaussian profile "
            "(dp-accounting)"
        )
    C = X.T @ X
    noisy = (C + C.T) / 2 + symmetric_gaussian(d, scale, rng)
    V = top_k_eigenvectors(noisy, k)
    guarantee = PrivacyGuarantee(epsilon, delta, neighbouring, note=note)
    return MechanismOutput(
        V,
        guarantee,
        release={"status": "ok", "noise_scale": scale, "calibration": calibration},
        diagnostics={"n_clipped": n_clipped},
    )
