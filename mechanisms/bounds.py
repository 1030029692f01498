"""Theoretical utility bounds (for plotting against measurements)."""

from __future__ import annotations

import math

import numpy as np

from .calibration import mod_sulq_noise_scale


def mod_sulq_phi_range(d: int, beta: float) -> float:
    """Lower end of the interval Φ of JMLR eq. (22) (the upper end is 1, excluded)."""
    return max(
        1.0 / math.sqrt(2.0 * math.pi * d),
        math.sqrt(-math.expm1(-2.0 * math.log(8.0 * d) / (d - 1))),
        math.sqrt(-math.expm1(-(2.0 / beta**2 + math.log(256.0)) / (d - 1))),
    )


def mod_sulq_correlation_upper_bound(
    n: int, d: int, epsilon: float, delta: float, grid: int = 4000
) -> float:
    """JMLR Theorem 15, eq. (21): an upper bound on E|⟨v̂₁, v₁⟩| for MOD-SULQ on a worst-case dataset.

        min over φ ∈ Φ of  1 − (1−φ)/4 · (1 − (1/β² + log 2) / ((d−1)·log(1/sqrt(1−φ²)) − log 8))²

    with β from eq. (5) and Φ from eq. (22).  The minimum over φ is taken on a
    grid of ``grid`` points of [φ_min, 1) that is uniform in log(1 − φ) (the
    bound varies fastest near 1).  Where the inner fraction is not in [0, 1]
    the packing argument gives nothing and that φ is skipped; if no φ remains
    the bound is the trivial 1.
    """
    beta = mod_sulq_noise_scale(n, d, epsilon, delta)
    phi_min = mod_sulq_phi_range(d, beta)
    if phi_min >= 1.0:
        return 1.0
    one_minus = np.geomspace(1.0 - phi_min, 1e-12, grid)
    phi = 1.0 - one_minus
    log_k = (d - 1) * (-0.5 * np.log1p(-phi * phi)) - math.log(8.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = (1.0 / beta**2 + math.log(2.0)) / log_k
    ok = (log_k > 0) & (frac >= 0) & (frac <= 1)
    if not np.any(ok):
        return 1.0
    values = 1.0 - (1.0 - phi[ok]) / 4.0 * (1.0 - frac[ok]) ** 2
    return float(min(1.0, values.min()))
