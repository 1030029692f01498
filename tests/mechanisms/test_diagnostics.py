from __future__ import annotations

import numpy as np
import pytest

from mechanisms.diagnostics import (
    ESS_ESTIMATOR,
    ess,
    f_k_statistic,
    f_k_trace,
    split_rhat,
    summarize_chains,
)
from tests.ess_reference import CASES, reference_chains


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


#: (bulk-ESS, rank split-R̂) of each case of ``tests/ess_reference.py``, as ArviZ 0.23.4 computes them
#: (``arviz.ess(x, method="bulk")``, ``arviz.rhat(x, method="rank")``; numpy 2.4.6, scipy 1.17.1),
#: printed by ``python tests/ess_reference.py`` in a virtual environment holding arviz and numpy
#: (the module's docstring gives the two commands).  ArviZ's R-hat needs two chains (None: not
#: compared; the project's split-R̂ of one chain compares its two halves).
ARVIZ_REFERENCE = {
    "iid 4 x 1000": (3517.6976436702257, 0.9997725471784776),
    "AR(1) 0.5, 4 x 1000": (1318.4284121863977, 1.0033172826455243),
    "AR(1) 0.9, 2 x 500": (58.42920779145018, 1.02665609913628),
    "AR(1) -0.9, 4 x 1000": (14408.23996531185, 1.0038325683093214),
    "AR(1) 0.99, 4 x 40": (6.17450404385399, 2.2635529006232744),
    "AR(1) 0.3, 1 x 1001": (567.2031193477081, None),
    "iid rounded to 0.5, 3 x 400": (1214.0838299476718, 1.0013852033450876),
    "AR(1) 0.2, 10 x 10000": (65728.56469464563, 1.0000392604181325),
}
#: relative tolerance against ArviZ: the two compute the same sums in other orders (FFT length,
#: averaged monotone pairs), measured within 4e-15 over 400 random shapes; the smallest difference a
#: changed step makes on these cases is 7.5e-5 (the improved truncation of "AR(1) 0.9, 2 x 500")
ARVIZ_RTOL = 1e-10


def test_reference_cases_are_those_of_the_stored_values():
    assert set(ARVIZ_REFERENCE) == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_bulk_ess_equals_arviz(name):
    """The bulk-ESS is ArviZ's, step for step: split chains, rank normalisation, Geyer's initial
    positive and monotone sequences, the improved truncation (the even lag of the first non-positive
    pair, once, when positive), the lags read up to n - 2 and the floor 1/log10(S) of tau.  Each
    case exercises one of them (``tests/ess_reference.py``); the paper's truncation alone
    (τ̂ = −1 + 2 Σ P̂_j) is off by 7.5e-5 to 0.17 on every case."""
    assert ess(reference_chains(name)) == pytest.approx(ARVIZ_REFERENCE[name][0], rel=ARVIZ_RTOL)


@pytest.mark.parametrize("name", sorted(n for n, v in ARVIZ_REFERENCE.items() if v[1] is not None))
def test_split_rhat_equals_arviz(name):
    """Rank-normalised split-R̂: the larger of the bulk and the folded version, as ArviZ's
    ``method="rank"``."""
    assert split_rhat(reference_chains(name)) == pytest.approx(
        ARVIZ_REFERENCE[name][1], rel=ARVIZ_RTOL
    )


def test_ess_of_constant_and_nan_chains():
    """Constant chains: the number of split draws (ArviZ's convention); a NaN draw: NaN."""
    assert ess(np.ones((3, 51))) == 150.0
    x = reference_chains("iid 4 x 1000")
    x[2, 7] = np.nan
    assert np.isnan(ess(x))


def test_ess_estimator_named_in_the_diagnostics():
    from mechanisms.ppca import _diagnose_trace

    diag = _diagnose_trace(reference_chains("iid 4 x 1000"), 1.01, None)
    assert diag["ess_estimator"] == ESS_ESTIMATOR and "arviz" in ESS_ESTIMATOR
    assert diag["ess"] == pytest.approx(ARVIZ_REFERENCE["iid 4 x 1000"][0], rel=ARVIZ_RTOL)


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
