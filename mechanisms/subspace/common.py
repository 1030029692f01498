"""What the Singhal–Steinke estimators share: their neighbouring relation and the truncated Laplace law.

The paper states its guarantees "with respect to changing one column" (Definition A.11 and the remark
after it; Theorems 1.1/1.2), one point per column; here one point is one row, so the relation is
``"replace-one-row"`` (:data:`NEIGHBOURING`).

TLap(Δ, ε, δ) (Lemma A.14, [GDGK20]) is the noise of the paper's exact case: density ∝ exp(−|x|/λ)
on [−A, A].  :func:`mechanisms.subspace.subspace_exact` calibrates its test with its own rounding of
these parameters (``_noise_params`` in :mod:`.exact`); the paper's Algorithm 1 and the known-broken
variants (:mod:`._known_broken`) draw from it as written.
"""

from __future__ import annotations

import math

import numpy as np

#: The neighbouring relation of both estimators (and of the known-broken variants).
NEIGHBOURING = "replace-one-row"


def truncated_laplace_params(
    sensitivity: float, epsilon: float, delta: float
) -> tuple[float, float]:
    """(λ, A) of TLap(Δ, ε, δ), Lemma A.14 ([GDGK20]): λ = Δ/ε, A = (Δ/ε) log(1 + (e^ε - 1)/(2δ))."""
    lam = sensitivity / epsilon
    A = lam * math.log1p(math.expm1(epsilon) / (2.0 * delta))
    return lam, A


def truncated_laplace(
    sensitivity: float,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    size: int | tuple[int, ...] | None = None,
) -> np.ndarray:
    """Draws from density ∝ exp(-|x|/λ) on [-A, A] (Lemma A.14), by inverting the CDF of |x|."""
    lam, A = truncated_laplace_params(sensitivity, epsilon, delta)
    u = rng.random(size)
    mag = -lam * np.log1p(-u * (1.0 - math.exp(-A / lam)))
    sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
    return sign * mag


def truncated_laplace_variance(sensitivity: float, epsilon: float, delta: float) -> float:
    """Exact variance of TLap(Δ, ε, δ): E x² = 2λ² - A e^{-A/λ}(A + 2λ) / (1 - e^{-A/λ})."""
    lam, A = truncated_laplace_params(sensitivity, epsilon, delta)
    e = math.exp(-A / lam)
    return (2 * lam**2 - e * (A**2 + 2 * A * lam + 2 * lam**2)) / (1 - e)


def truncated_laplace_survival(t: float, sensitivity: float, epsilon: float, delta: float) -> float:
    """P[Z > t] for Z ~ TLap(Δ, ε, δ) (Lemma A.14), in closed form.

    For 0 <= t < A: ∫_t^A B e^{-y/λ} dy = (e^{-t/λ} − e^{-A/λ}) / (2 (1 − e^{-A/λ})); 0 for t >= A;
    1 − P[Z > −t] for t < 0 (the density is symmetric).
    """
    lam, A = truncated_laplace_params(sensitivity, epsilon, delta)
    if t >= A:
        return 0.0
    if t < 0:
        return 1.0 - truncated_laplace_survival(-t, sensitivity, epsilon, delta)
    e_A = math.exp(-A / lam)
    return (math.exp(-t / lam) - e_A) / (2.0 * (1.0 - e_A))
