"""The Wishart mechanism (JXZ16 / IS16), a known-broken audit variant: published as (ε, 0)-DP, not DP.

* The counterexample of mechanisms/_wishart_known_broken.py, run: on X = {e₁, 0, …} and
  X′ = {e₂, 0, …} (replace-one-row, d = 2, n = 2 and 50) the event {Â₁₁ ≤ 1/n} never happens
  under X (Â − A(X) = W is positive definite: checked on every draw) and happens under X′ with
  probability F_{χ²₃}(2ε/3), the same for every n; so no finite ε bounds the ratio of the two
  probabilities.
* The variant keeps the published claim with status "known false", is not registered, and is reached
  only by ``experiment.variant=wishart``.
* The search catches it unaided (slow: about 20 s here).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import chi2

from experiments.audit import PLANTED_VARIANTS, planted_variant, search_audit
from mechanisms import MECHANISMS
from mechanisms._wishart_known_broken import (
    wishart_counterexample_probability,
    wishart_mechanism,
    wishart_noise,
    wishart_scale,
)


def _pair(n: int, d: int = 2):
    X1 = np.zeros((n, d))
    X1[0, 0] = 1.0  # e₁ then zero rows
    X0 = np.zeros((n, d))
    X0[0, 1] = 1.0  # e₂ then zero rows
    return X1, X0


def _draws(X, runs, seed, epsilon=2.0):
    rng = np.random.default_rng(seed)
    return np.array(
        [
            wishart_mechanism(X, 1, epsilon=epsilon, rng=rng).release["noisy_second_moment"]
            for _ in range(runs)
        ]
    )


def test_counterexample_probability_is_the_chi_square_cdf():
    """F_{χ²_{d+1}}(2ε/3): 0.279 for d = 2, ε = 2 (to 1e-3), positive for every ε > 0."""
    assert wishart_counterexample_probability(2, 2.0) == pytest.approx(chi2.cdf(4 / 3, 3))
    assert wishart_counterexample_probability(2, 2.0) == pytest.approx(0.279, abs=1e-3)
    for eps in (0.01, 0.1, 1.0, 10.0):
        assert wishart_counterexample_probability(5, eps) > 0


@pytest.mark.parametrize("n", [2, 50])
def test_event_impossible_under_one_dataset_has_positive_probability_under_its_neighbour(n):
    """2,000 runs per dataset (fixed seeds).  Under X: Â − A(X) is positive definite on every draw, so
    Â₁₁ > 1/n on every draw (count 0, exactly).  Under X′: the frequency of Â₁₁ ≤ 1/n is within 4
    binomial standard errors (0.040) of F_{χ²₃}(4/3) = 0.279, whatever n.  P[E | X′] ≤ e^ε·0 + δ then
    fails for every ε and every δ < 0.2: the claimed (2, 0) in particular."""
    runs, eps = 2000, 2.0
    X1, X0 = _pair(n)
    A1 = X1.T @ X1 / n
    hats1, hats0 = _draws(X1, runs, seed=[n, 1]), _draws(X0, runs, seed=[n, 0])
    assert all(np.linalg.eigvalsh(H - A1).min() > 0 for H in hats1)  # the support {Â ≻ A(X)}
    assert np.count_nonzero(hats1[:, 0, 0] <= 1.0 / n) == 0
    p = wishart_counterexample_probability(2, eps)
    freq = float(np.mean(hats0[:, 0, 0] <= 1.0 / n))
    assert abs(freq - p) <= 4 * math.sqrt(p * (1 - p) / runs), (freq, p)
    assert freq > 0.2


def test_wishart_noise_has_the_wishart_mean_and_diagonal_law():
    """E[W] = (d + 1)·c·I (to 4 standard errors over 20,000 draws) and W₁₁/c ~ χ²_{d+1}
    (Kolmogorov–Smirnov distance below 0.015; the 1% critical value at 20,000 draws is 0.0115)."""
    d, c, runs = 3, 0.25, 20000
    rng = np.random.default_rng(4)
    Ws = np.array([wishart_noise(d, c, rng) for _ in range(runs)])
    mean = Ws.mean(axis=0)
    se = Ws.std(axis=0) / math.sqrt(runs)
    assert np.all(np.abs(mean - (d + 1) * c * np.eye(d)) <= 4 * se)
    x = np.sort(Ws[:, 0, 0] / c)
    ks = np.max(np.abs(np.arange(1, runs + 1) / runs - chi2.cdf(x, d + 1)))
    assert ks < 0.015


def test_guarantee_records_the_published_claim_as_known_false():
    X1, _ = _pair(10)
    out = wishart_mechanism(X1, 1, epsilon=2.0, rng=np.random.default_rng(0))
    g = out.guarantee
    assert (g.epsilon, g.delta, g.neighbouring, g.status) == (
        2.0,
        0.0,
        "replace-one-row",
        "known false",
    )
    assert out.release["wishart_scale"] == wishart_scale(10, 2.0) == pytest.approx(3 / (2 * 10 * 2))
    assert out.components.shape == (2, 1)


def test_reproducible_and_independent_of_row_order():
    X = np.random.default_rng(3).standard_normal((30, 4))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    ref = wishart_mechanism(X, 2, epsilon=1.0, rng=np.random.default_rng(7))
    perm = np.random.default_rng(1).permutation(30)
    out = wishart_mechanism(X[perm], 2, epsilon=1.0, rng=np.random.default_rng(7))
    assert out.components.tobytes() == ref.components.tobytes()
    assert (
        out.release["noisy_second_moment"].tobytes() == ref.release["noisy_second_moment"].tobytes()
    )


def test_not_registered_and_selected_only_as_a_variant():
    assert "wishart" not in MECHANISMS and "wishart_mechanism" not in MECHANISMS
    assert PLANTED_VARIANTS["wishart"][0] == "mod_sulq"
    with pytest.raises(ValueError):
        planted_variant("wishart", "ppca")
    v = planted_variant("wishart", "mod_sulq")
    assert v.audit_design == "mod_sulq" and v.audit_name.startswith("wishart[")
    assert not hasattr(wishart_mechanism, "audit_name")  # the variant is a wrapper


@pytest.mark.slow
def test_search_catches_the_wishart_mechanism():
    """The search, catalogue only, 200 calibration and 2,000 certifying runs per dataset: it must
    certify more than the claimed 2 (measured 3.84 at seed 0, on "repeated-eig n=21", through the
    released matrix's entry Â₂₂ below its support bound under D′; P = 0.292 against 0.0025)."""
    r = search_audit(
        planted_variant("wishart"),
        epsilon=2.0,
        delta=1e-5,
        calibration_trials=200,
        trials=2000,
        n_random=0,
        seed=0,
    )
    assert r["violation"] and r["audited_epsilon_lower"] > 2.0, r["leaderboard"]
    assert r["statistic"].startswith("release[noisy_second_moment]")
