"""The exact Gaussian privacy profile against an independent computation of the privacy-loss tail."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from mechanisms.calibration import (
    analyze_gauss_noise_scale,
    gaussian_delta_for_epsilon,
    gaussian_epsilon_for_delta,
    gaussian_mu,
)


def _delta_by_integration(mu: float, eps: float) -> float:
    """δ(ε) = ∫ max(0, p1(x) − e^ε p0(x)) dx for N(μ, 1) against N(0, 1), by quadrature."""
    f = lambda x: max(0.0, stats.norm.pdf(x, mu) - math.exp(eps) * stats.norm.pdf(x))
    return integrate.quad(f, -10, mu + 12, limit=400, points=[mu / 2 + eps / mu])[0]


@pytest.mark.parametrize("mu,eps", [(0.5, 0.1), (1.0, 0.5), (2.0, 1.0), (4.0, 3.0), (0.2, 0.0)])
def test_delta_matches_quadrature(mu, eps):
    # quadrature error ~1e-10; the closed form must agree to 1e-8
    assert gaussian_delta_for_epsilon(mu, eps) == pytest.approx(
        _delta_by_integration(mu, eps), abs=1e-8
    )


def test_epsilon_inverts_delta_and_classical_bound_is_loose():
    # Dwork-Roth's sigma = sqrt(2 ln(1.25/delta))/eps is sufficient, so the exact eps(delta) is below eps
    for eps, delta in [(0.5, 1e-5), (0.9, 1e-6), (0.1, 1e-3)]:
        sigma = analyze_gauss_noise_scale(eps, delta)
        e = gaussian_epsilon_for_delta(gaussian_mu(1.0, sigma), delta)
        assert 0 < e < eps
        assert gaussian_delta_for_epsilon(gaussian_mu(1.0, sigma), e) == pytest.approx(
            delta, rel=1e-6
        )


def test_composition_is_quadrature():
    assert gaussian_mu(2.0, 4.0, compositions=16) == pytest.approx(2.0)
    # monotone: more noise, smaller epsilon
    eps = [gaussian_epsilon_for_delta(m, 1e-5) for m in np.linspace(0.1, 3, 10)]
    assert np.all(np.diff(eps) > 0)
