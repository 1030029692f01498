"""MOD-SULQ, input perturbation: JMLR 2013 (Chaudhuri, Sarwate, Sinha) Algorithm 1.

A = XᵀX/n plus a symmetric Gaussian matrix N with N_ij (i <= j) i.i.d. N(0, β²),
β from eq. (5); release the top-k eigenvectors of A + N.
Guarantee: (ε, δ)-DP, replace-one-row neighbours, rows of L2 norm <= 1 (Theorem 5).
"""

from __future__ import annotations

import numpy as np

from ._base import (MechanismOutput, PrivacyGuarantee, check_data, check_delta, check_epsilon,
                    check_k, second_moment)
from .calibration import mod_sulq_noise_scale
from .linalg import symmetric_gaussian, top_k_eigenvectors


def mod_sulq(X, k: int, *, epsilon: float, delta: float, rng: np.random.Generator,
             clip: bool = False) -> MechanismOutput:
    """Algorithm 1 of JMLR 2013 with the noise standard deviation β of eq. (5).

    Release: ``status``, ``noise_scale`` (β: a function of n, d, ε, δ; n is public under
    replace-one-row).  Diagnostics (not private): ``n_clipped``.
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    X, n_clipped = check_data(X, clip=clip)
    n, d = X.shape
    k = check_k(k, d)
    beta = mod_sulq_noise_scale(n, d, epsilon, delta)
    noisy = second_moment(X) + symmetric_gaussian(d, beta, rng)
    V = top_k_eigenvectors(noisy, k)
    guarantee = PrivacyGuarantee(epsilon, delta, "replace-one-row",
                                 note="JMLR 2013 Theorem 5; noise sd beta of eq. (5)")
    return MechanismOutput(V, guarantee, release={"status": "ok", "noise_scale": beta},
                           diagnostics={"n_clipped": n_clipped})
