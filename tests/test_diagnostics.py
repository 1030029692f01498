from __future__ import annotations

import numpy as np
import pytest

from mechanisms.diagnostics import ess, f_k_statistic, f_k_trace, split_rhat, summarize_chains


def _ar1(rng, m, n, rho):
    x = np.empty((m, n))
    x[:, 0] = rng.standard_normal(m)
    e = rng.standard_normal((m, n)) * np.sqrt(1 - rho**2)
    for t in range(1, n):
        x[:, t] = rho * x[:, t - 1] + e[:, t]
    return x


def test_rhat_iid_chains_close_to_one():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 4000))
    assert split_rhat(x) < 1.01


def test_rhat_detects_shifted_chain():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 2000))
    x[0] += 0.5  # theory: R̂ ≈ sqrt(1 + 0.25·var-of-split-means) ≈ 1.026
    assert split_rhat(x) > 1.01
    x[0] += 0.5
    assert split_rhat(x) > 1.05


def test_rhat_detects_trend_within_chain():
    """split-R̂ catches a chain that has not converged (drift), even with a single chain."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2000)) + np.linspace(0, 3, 2000)
    assert split_rhat(x) > 1.1


def test_ess_iid():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5000))
    e = ess(x)
    # ESS of 20,000 iid draws: within ±10% (sd of the estimator is ~3% here)
    assert 0.9 * 20000 < e < 1.1 * 20000


def test_ess_ar1():
    """AR(1) with ρ = 0.9: τ = (1 + ρ)/(1 − ρ) = 19, ESS ≈ mn/19."""
    rng = np.random.default_rng(4)
    x = _ar1(rng, 4, 20000, 0.9)
    e = ess(x)
    target = 4 * 20000 / 19.0
    assert 0.8 * target < e < 1.2 * target


def test_summarize_chains_flags():
    rng = np.random.default_rng(5)
    good = summarize_chains(rng.standard_normal((4, 2000)))
    assert good["converged"] and good["rhat"] < 1.01 and good["ess"] > 400
    bad = summarize_chains(_ar1(rng, 4, 300, 0.99))
    assert not bad["converged"]


def test_f_k_trace_and_statistic():
    rng = np.random.default_rng(6)
    T, d, k = 400, 6, 2
    V = np.linalg.qr(rng.standard_normal((d, k)))[0]
    signs = np.where(np.arange(T) % 2 == 0, 1.0, -1.0)
    samples = signs[:, None, None] * V[None]
    F = f_k_trace(samples)
    assert F[0] == pytest.approx(1.0)  # ‖V‖_F/√k = 1
    assert F[1] == pytest.approx(0.0, abs=1e-15)
    assert f_k_statistic(samples.sum(0), T) == pytest.approx(F[-1], abs=1e-15)
    const = f_k_trace(np.repeat(V[None], 10, axis=0))
    np.testing.assert_allclose(const, 1.0)
