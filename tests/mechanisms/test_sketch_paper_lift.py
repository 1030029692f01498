"""The `paper` lift of private_sketch against the exact privacy profile of its sketch.

The reconstructed lift w_p(ε, δ, r) = 16 sqrt(r log(2/δ))/ε · log(16r/δ) carries constants that the
paper text lost, but the claim does not need them: the exact profile δ_r(ε; s) of the released
sketch increases with s = 1/w², so any w >= w*(ε, δ, r) (:func:`sketch_lift_tight`, the root of
δ_r(ε; 1/w²) = δ) gives (ε, δ)-DP.  These tests certify w_p >= w* over the whole box
ε ∈ [0.05, 5], δ ∈ [1e-10, 0.1], r ∈ {1, ..., 200}, not only at grid points:

* w* is non-increasing in ε and in δ (a profile δ(ε) falls with ε; a larger target δ is met by a
  smaller lift) and non-decreasing in r (r − 1 sketch rows are a post-processing of r rows);
* w_p is decreasing in ε and δ and increasing in r (its formula).

So on a grid cell [ε₀, ε₁] × [δ₀, δ₁] × [r₀, r₁], w_p >= w_p(ε₁, δ₁, r₀) and w* <= w*(ε₀, δ₀, r₁):
the cell is covered when w_p(ε₁, δ₁, r₀) >= w*(ε₀, δ₀, r₁).  The monotonicity of w* is checked on
the grid as well.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import mechanisms.private_sketch as ps
from mechanisms._base import PrivacyInputError
from mechanisms.calibration import sketch_delta_for_epsilon, sketch_lift_tight
from mechanisms.private_sketch import (
    PAPER_LIFT_CERTIFIED_BOX,
    paper_lift_margin,
    private_sketch,
    private_sketch_lift,
)

BOX = PAPER_LIFT_CERTIFIED_BOX
EPS = np.geomspace(*BOX["epsilon"], 5)
DELTAS = np.geomspace(*BOX["delta"], 5)
RS = [1, 2, 5, 10, 20, 50, 100, 200]
assert (RS[0], RS[-1]) == BOX["r"]


def _tight_grid() -> dict:
    return {
        (i, j, l): sketch_lift_tight(float(e), float(dl), r)
        for (i, e), (j, dl), (l, r) in itertools.product(
            enumerate(EPS), enumerate(DELTAS), enumerate(RS)
        )
    }


TIGHT = _tight_grid()


def uncovered_cells(lift) -> list[tuple]:
    """Grid cells on which ``lift`` is not certified >= the exact requirement (see module docstring)."""
    bad = []
    for i, j, l in itertools.product(
        range(len(EPS) - 1), range(len(DELTAS) - 1), range(len(RS) - 1)
    ):
        if lift(float(EPS[i + 1]), float(DELTAS[j + 1]), RS[l]) < TIGHT[i, j, l + 1]:
            bad.append((EPS[i], EPS[i + 1], DELTAS[j], DELTAS[j + 1], RS[l], RS[l + 1]))
    return bad


def test_exact_requirement_is_monotone_on_the_grid():
    """The premises of the cell argument: w* falls with ε and δ, rises with r."""
    W = np.empty((len(EPS), len(DELTAS), len(RS)))
    for idx, w in TIGHT.items():
        W[idx] = w
    assert (
        np.all(np.diff(W, axis=0) <= 0)
        and np.all(np.diff(W, axis=1) <= 0)
        and np.all(np.diff(W, axis=2) >= 0)
    )


def test_paper_lift_covers_the_whole_box():
    """Every cell is covered: the paper's lift is at least the exact requirement on the whole box."""
    assert uncovered_cells(private_sketch_lift) == []


def test_cell_check_fails_for_a_lift_below_the_requirement():
    """The check has teeth: the smallest pointwise margin is 62.9 (ε = 5, δ = 0.1, r = 1), so the
    paper's constants cut by 70 leave cells uncovered, and cut by 50 still do not."""
    margins = {
        (e, dl, r): private_sketch_lift(float(e), float(dl), r) / TIGHT[i, j, l]
        for (i, e), (j, dl), (l, r) in itertools.product(
            enumerate(EPS), enumerate(DELTAS), enumerate(RS)
        )
    }
    worst = min(margins, key=margins.get)
    assert worst == (EPS[-1], DELTAS[-1], 1) and margins[worst] == pytest.approx(62.94, abs=0.01)
    assert uncovered_cells(lambda e, dl, r: private_sketch_lift(e, dl, r) / 70)
    assert uncovered_cells(lambda e, dl, r: private_sketch_lift(e, dl, r) / 2) == []


def test_profile_at_the_paper_lift_is_below_delta_on_the_grid():
    """Pointwise, directly: δ_r(ε; s = 1/w_p²) <= δ at every grid point (it underflows to 0: the
    paper's s is over 3,900 times smaller than the exact requirement's)."""
    for e, dl, r in itertools.product(EPS, DELTAS, RS):
        w = private_sketch_lift(float(e), float(dl), r)
        assert sketch_delta_for_epsilon(1.0 / w**2, r, float(e)) <= dl


def _release(epsilon, delta, r, **kw):
    X = np.random.default_rng(0).standard_normal((30, 4)) / 10
    return private_sketch(
        X, 1, rng=np.random.default_rng(1), epsilon=epsilon, delta=delta, sketch_size=r, **kw
    )


@pytest.mark.parametrize(
    "epsilon, delta, r", [(0.05, 1e-10, 200), (5.0, 0.1, 1), (1.0, 1e-5, 11), (1e4, 1e-5, 400)]
)
def test_paper_calibration_is_proven_where_the_lift_meets_the_profile(epsilon, delta, r):
    g = _release(epsilon, delta, r).guarantee
    assert g.status == "proven" and not g.exact and g.neighbouring == "add-remove-one-row"
    assert paper_lift_margin(private_sketch_lift(epsilon, delta, r), epsilon, delta, r) >= 1
    assert "exact chi-square privacy profile" in g.note


def test_paper_calibration_refused_where_the_lift_is_below_the_profile():
    """At ε = 3e4, δ = 0.1, r = 1 the reconstructed lift is 0.70 of the exact requirement: the worst
    neighbour (a unit row along a null direction) is attainable, so the claim would be false."""
    assert paper_lift_margin(private_sketch_lift(3e4, 0.1, 1), 3e4, 0.1, 1) == pytest.approx(
        0.698, abs=0.002
    )
    with pytest.raises(PrivacyInputError, match="calibration='tight'"):
        _release(3e4, 0.1, 1)
    assert _release(3e4, 0.1, 1, calibration="tight").guarantee.status == "proven"


def test_paper_calibration_unverified_where_the_requirement_cannot_be_computed(monkeypatch):
    def fails(*a):
        raise RuntimeError("no root")

    monkeypatch.setattr(ps, "sketch_lift_tight", fails)
    assert _release(1.0, 1e-5, 11).guarantee.status == "unverified constants"
