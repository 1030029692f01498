"""MOD-SULQ, input perturbation: JMLR 2013 (Chaudhuri, Sarwate, Sinha) Algorithm 1.

A = XᵀX/n plus a symmetric Gaussian matrix N with N_ij (i <= j) i.i.d. N(0, β²); release the
top-k eigenvectors of A + N.  Guarantee: (ε, δ)-DP, replace-one-row neighbours, rows of L2 norm
<= 1.  ``calibration="paper"`` (default): β of eq. (5) (Theorem 5);  ``calibration="tight"``: the
smallest β for the exact Gaussian profile of the same release, sensitivity √2/n
(:func:`mechanisms.calibration.mod_sulq_noise_scale_tight`, docs/calibration.md).
"""

from __future__ import annotations

import numpy as np

from ._base import (MechanismOutput, PrivacyGuarantee, check_data, check_delta, check_epsilon,
                    check_k, second_moment)
from .calibration import check_calibration, mod_sulq_noise_scale, mod_sulq_noise_scale_tight
from .linalg import symmetric_gaussian, top_k_eigenvectors


def mod_sulq(X, k: int, *, epsilon: float, delta: float, rng: np.random.Generator,
             clip: bool = False, calibration: str = "paper") -> MechanismOutput:
    """Algorithm 1 of JMLR 2013 with the noise standard deviation β of eq. (5) (``calibration="paper"``)
    or the smallest β for the exact Gaussian privacy profile (``calibration="tight"``).

    Release: ``status``, ``noise_scale`` (β: a function of n, d, ε, δ; n is public under
    replace-one-row), ``calibration``.  Diagnostics (not private): ``n_clipped``.
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    calibration = check_calibration(calibration)
    X, n_clipped = check_data(X, clip=clip)
    n, d = X.shape
    k = check_k(k, d)
    if calibration == "paper":
        beta = mod_sulq_noise_scale(n, d, epsilon, delta)
        note = "JMLR 2013 Theorem 5; noise sd beta of eq. (5)"
    else:
        beta = mod_sulq_noise_scale_tight(n, epsilon, delta)
        note = ("JMLR 2013 Algorithm 1 with the smallest beta for the exact Gaussian profile "
                "(sensitivity sqrt(2)/n; dp-accounting)")
    noisy = second_moment(X) + symmetric_gaussian(d, beta, rng)
    V = top_k_eigenvectors(noisy, k)
    guarantee = PrivacyGuarantee(epsilon, delta, "replace-one-row", note=note)
    return MechanismOutput(V, guarantee, release={"status": "ok", "noise_scale": beta, "calibration": calibration},
                           diagnostics={"n_clipped": n_clipped})
