"""ρ-zCDP in the guarantee type and its conversion to (ε, δ) (mechanisms.calibration).

The conversion is dp-accounting's RDP accountant on a ``ZCDpEvent``; it is checked here against the
Bun–Steinke closed form ε = ρ + 2 sqrt(ρ ln(1/δ)) (looser: never below), against an independent
minimisation of the same per-order bound by SciPy, and the calibration ρ for (ε, δ) is checked to
certify (ε, δ) while a ρ larger by a relative 1e-9 does not.
"""

import itertools
import json
import math

import pytest
from scipy.optimize import minimize_scalar

from mechanisms import PrivacyGuarantee, PrivacyInputError
from mechanisms.calibration import (
    _zcdp_epsilon_fast,
    zcdp_budget,
    zcdp_epsilon_tight,
    zcdp_rho_tight,
    zcdp_to_epsilon,
)

EPS = [0.05, 0.3, 1.0, 2.0, 8.0]
DELTA = [1e-2, 1e-5, 1e-9]


def test_guarantee_records_rho_only_when_set():
    g = PrivacyGuarantee(1.0, 1e-5, "replace-one-row")
    assert "rho" not in g.as_dict()  # records of the other mechanisms keep their keys
    z = PrivacyGuarantee(1.0, 1e-5, "replace-one-row", rho=0.03)
    assert z.as_dict()["rho"] == 0.03 and json.loads(json.dumps(z.as_dict()))["rho"] == 0.03
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError):
            PrivacyGuarantee(1.0, 1e-5, "replace-one-row", rho=bad)


def _epsilon_by_scipy(rho, delta):
    """The per-order bound ρα + ln(1 − 1/α) − ln(δα)/(α − 1), minimised over α > 1 by SciPy."""
    f = lambda la: (
        rho * (1 + math.exp(la))
        + math.log1p(-1 / (1 + math.exp(la)))
        - math.log(delta * (1 + math.exp(la))) / math.exp(la)
    )
    r = minimize_scalar(
        f, bounds=(math.log(0.02), math.log(1e6)), method="bounded", options={"xatol": 1e-10}
    )
    return max(0.0, r.fun)


@pytest.mark.parametrize("rho,delta", list(itertools.product([1e-4, 0.01, 0.1, 1.0, 5.0], DELTA)))
def test_conversion_is_the_accountants_and_tighter_than_bun_steinke(rho, delta):
    e = zcdp_epsilon_tight(rho, delta)
    assert e <= zcdp_to_epsilon(rho, delta) + 1e-12
    # the order grid costs at most a relative 1e-5 against the continuous optimum
    assert _epsilon_by_scipy(rho, delta) - 1e-9 <= e <= _epsilon_by_scipy(rho, delta) * (1 + 1e-5)
    assert _zcdp_epsilon_fast(rho, delta) == pytest.approx(e, rel=1e-12)


@pytest.mark.parametrize("eps,delta", list(itertools.product(EPS, DELTA)))
def test_rho_for_epsilon_certifies_and_is_the_largest(eps, delta):
    rho = zcdp_rho_tight(eps, delta)
    assert zcdp_epsilon_tight(rho, delta) <= eps
    assert zcdp_epsilon_tight(rho * (1 + 1e-9), delta) > eps
    # at least Bun-Steinke's rho (the accountant's conversion is tighter)
    L = math.log(1 / delta)
    assert rho >= (math.sqrt(L + eps) - math.sqrt(L)) ** 2


def test_budget_from_epsilon_or_from_rho():
    rho, eps, dl = zcdp_budget(1.0, 1e-5, None)
    assert (eps, dl) == (1.0, 1e-5) and rho == zcdp_rho_tight(1.0, 1e-5)
    rho, eps, dl = zcdp_budget(123.0, 1e-5, 0.5)  # an explicit rho wins; epsilon is computed
    assert rho == 0.5 and eps == zcdp_epsilon_tight(0.5, 1e-5)
    for bad in (0.0, -1.0, "x", math.inf):
        with pytest.raises(PrivacyInputError):
            zcdp_budget(1.0, 1e-5, bad)
    with pytest.raises(PrivacyInputError):
        zcdp_budget(None, 1e-5, None)
