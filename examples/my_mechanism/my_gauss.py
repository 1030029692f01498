"""An example of one's own mechanism, kept OUTSIDE the ``mechanisms`` package (docs/own_mechanism.md).

``my_gauss``: the Gaussian mechanism on the second-moment matrix A = XᵀX/n, calibrated for the
replace-one-row relation, then the top-k eigenvectors of the noisy matrix.  It is MOD-SULQ
(Chaudhuri, Sarwate & Sinha, JMLR 2013, Algorithm 1) with the noise of the Gaussian mechanism for the
exact L2 sensitivity instead of the paper's eq. (5):

* Replacing row x by y changes A by E = (xxᵀ − yyᵀ)/n, and
  ‖xxᵀ − yyᵀ‖_F² = ‖x‖⁴ + ‖y‖⁴ − 2(xᵀy)² <= 2 for rows of norm <= 1.
  The release is the upper triangle (diagonal included) of A + N, whose squared L2 change is
  Σ_{i<=j} E_ij² <= ‖E‖_F² <= 2/n²: sensitivity Δ = √2 / n.
* Each upper-triangular entry of N is N(0, σ²) with σ = ``mechanisms.toolkit.gaussian_sigma``
  (Δ, ε, δ): the smaller of the zCDP calibration (Bun & Steinke 2016, Prop. 1.3) and, for ε < 1, the
  classical one (Dwork & Roth 2014, Thm A.1).  Guarantee: (ε, δ)-DP, replace-one-row.
* The eigenvectors are post-processing.

It uses the project's shared helpers (validation, calibration, linear algebra) through the toolkit for
mechanism authors, ``mechanisms.toolkit``, and nothing else of the package; nothing of the harness is
edited to run it.
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.toolkit import (
    MechanismOutput,
    PrivacyGuarantee,
    check_data,
    check_delta,
    check_epsilon,
    check_k,
    gaussian_sigma,
    second_moment,
    symmetric_gaussian,
    top_k_eigenvectors,
)


def my_gauss_noise_scale(n: int, epsilon: float, delta: float) -> float:
    """σ of each upper-triangular noise entry: Gaussian mechanism with sensitivity √2/n (module docstring)."""
    return gaussian_sigma(math.sqrt(2.0) / n, epsilon, delta)


def my_gauss(
    X, k: int, *, epsilon: float, delta: float, rng: np.random.Generator, clip: bool = False
) -> MechanismOutput:
    """Top-k eigenvectors of XᵀX/n + N, N symmetric Gaussian with σ = :func:`my_gauss_noise_scale`."""
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    X, n_clipped = check_data(
        X, clip=clip
    )  # refuses NaN/inf, empty, 1-D; rows of norm > 1 unless clip
    n, d = X.shape
    k = check_k(k, d)
    sigma = my_gauss_noise_scale(n, epsilon, delta)
    V = top_k_eigenvectors(second_moment(X) + symmetric_gaussian(d, sigma, rng), k)
    guarantee = PrivacyGuarantee(
        epsilon,
        delta,
        "replace-one-row",
        note="Gaussian mechanism on XᵀX/n, sensitivity sqrt(2)/n (examples/my_mechanism)",
    )
    # sigma depends only on public n, epsilon, delta; the clipped-row count is an exact data statistic
    return MechanismOutput(
        V,
        guarantee,
        release={"status": "ok", "noise_scale": sigma},
        diagnostics={"n_clipped": n_clipped},
    )
