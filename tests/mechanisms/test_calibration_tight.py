"""calibration="tight": every Gaussian mechanism's σ (or lift) against the exact privacy profile.

The tight σ comes from Google's dp-accounting; it is checked here against this package's own,
independently written, Balle–Wang closed form (``gaussian_epsilon_for_delta``) with the sensitivity
and the composition count derived again in the test.  Tolerances: the library stops its binary
search within a relative 1e-7 of the smallest σ, so the exact ε(δ) at the returned σ must lie in
[ε (1 − 1e-5), ε (1 + 1e-9)] — a σ just 0.01% too large (not tight) or too small (not private) fails.
"""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from mechanisms._base import PrivacyInputError
from mechanisms.analyze_gauss import analyze_gauss
from mechanisms.calibration import (
    analyze_gauss_noise_scale,
    analyze_gauss_noise_scale_tight,
    gaussian_epsilon_for_delta,
    gaussian_epsilon_tight,
    gaussian_mu,
    gaussian_sigma,
    gaussian_sigma_tight,
    mod_sulq_noise_scale,
    mod_sulq_noise_scale_tight,
    outer_product_sensitivity,
    sketch_delta_for_epsilon,
    sketch_lift_tight,
    zcdp_rho_for,
    zcdp_to_epsilon,
)
from mechanisms.mod_sulq import mod_sulq
from mechanisms.noisy_power import noisy_power, noisy_power_noise_scale, noisy_power_row_noise_scale
from mechanisms.online_pca import (
    TreeAggregator,
    online_pca,
    tree_height,
    tree_node_noise_scale,
    tree_released_nodes_per_element,
)
from mechanisms.private_sketch import GaussianRowSketch, private_sketch, private_sketch_lift
from mechanisms.streaming_power import streaming_power, streaming_power_noise_scale

EPS_GRID = [0.05, 0.1, 0.5, 0.99, 2.0, 8.0]
DELTA_GRID = [1e-2, 1e-5, 1e-9]


def assert_tight(sensitivity, sigma, epsilon, delta, compositions=1):
    """The exact ε(δ) of `compositions` Gaussian releases (sensitivity, sigma) is ε, from below."""
    e = gaussian_epsilon_for_delta(gaussian_mu(sensitivity, sigma, compositions), delta)
    assert e <= epsilon * (1 + 1e-9), f"not private: exact eps {e} > {epsilon}"
    assert e >= epsilon * (1 - 1e-5), f"not tight: exact eps {e} well below {epsilon}"


# ---------------------------------------------------------------------------------------------
# the library calibration against the closed form
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps,delta", list(itertools.product(EPS_GRID, DELTA_GRID)))
def test_gaussian_sigma_tight_meets_exact_profile_with_equality(eps, delta):
    for sens, T in [(1.0, 1), (math.sqrt(2) / 1000, 1), (1.0, 7), (0.3, 50)]:
        assert_tight(sens, gaussian_sigma_tight(sens, eps, delta, T), eps, delta, T)


def test_gaussian_sigma_tight_is_linear_in_sensitivity_and_sqrt_compositions():
    s = gaussian_sigma_tight(1.0, 0.5, 1e-6)
    assert gaussian_sigma_tight(1e-5, 0.5, 1e-6) == pytest.approx(1e-5 * s, rel=1e-12)
    # T releases at std σ are one release at std σ/sqrt(T)
    assert gaussian_sigma_tight(1.0, 0.5, 1e-6, 9) == pytest.approx(3 * s, rel=1e-6)


def test_gaussian_epsilon_tight_is_the_exact_composed_epsilon():
    for sens, sigma, T, delta in [
        (1.0, 3.0, 1, 1e-5),
        (math.sqrt(2), 20.0, 100, 1e-6),
        (1.0, 0.8, 4, 1e-3),
    ]:
        exact = gaussian_epsilon_for_delta(gaussian_mu(sens, sigma, T), delta)
        got = gaussian_epsilon_tight(sens, sigma, delta, T)
        # pessimistic discretisation (interval 1e-4 in the privacy loss): an upper bound, close
        assert exact - 1e-9 <= got <= exact + 2e-4


def test_hand_written_zcdp_conversions_are_sound_per_the_library():
    # dp-accounting's RDP accountant converts rho-zCDP with a tighter bound: the Bun-Steinke formulas
    # kept for the default calibrations must never claim less than it does
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

    for rho, delta in [(0.01, 1e-5), (0.5, 1e-6), (2.0, 1e-3)]:
        acc = RdpAccountant(orders=np.linspace(1.01, 200, 2000).tolist())
        acc.compose(dp_accounting.ZCDpEvent(rho))
        assert acc.get_epsilon(delta) <= zcdp_to_epsilon(rho, delta) + 1e-9
    for eps, delta in itertools.product(EPS_GRID, DELTA_GRID):
        assert zcdp_to_epsilon(zcdp_rho_for(eps, delta), delta) == pytest.approx(eps, rel=1e-9)
        assert gaussian_sigma_tight(1.0, eps, delta) <= gaussian_sigma(1.0, eps, delta)


# ---------------------------------------------------------------------------------------------
# sensitivities
# ---------------------------------------------------------------------------------------------


def _upper_norm(D):
    return float(np.linalg.norm(D[np.triu_indices(D.shape[0])]))


def test_outer_product_sensitivity_is_attained_and_never_exceeded():
    rng = np.random.default_rng(0)
    e1, e2 = np.eye(5)[0], np.eye(5)[1]
    assert _upper_norm(np.outer(e1, e1)) == pytest.approx(
        outer_product_sensitivity("add-remove-one-row")
    )
    assert _upper_norm(np.outer(e1, e1) - np.outer(e2, e2)) == pytest.approx(
        outer_product_sensitivity("replace-one-row")
    )
    worst_add = worst_rep = 0.0
    for _ in range(3000):
        x, y = rng.normal(size=(2, 5))
        x *= rng.uniform() ** 0.2 / np.linalg.norm(x)
        y *= rng.uniform() ** 0.2 / np.linalg.norm(y)
        worst_add = max(worst_add, _upper_norm(np.outer(x, x)))
        worst_rep = max(worst_rep, _upper_norm(np.outer(x, x) - np.outer(y, y)))
    assert worst_add <= 1.0 + 1e-12 and worst_rep <= math.sqrt(2) + 1e-12
    with pytest.raises(PrivacyInputError):
        outer_product_sensitivity("entry-level")


# ---------------------------------------------------------------------------------------------
# each mechanism: tight σ from its own sensitivity and composition count, tight <= paper
# ---------------------------------------------------------------------------------------------


def _unit_rows(n, d, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


@pytest.mark.parametrize("eps,delta", list(itertools.product([0.1, 0.5, 2.0], [1e-2, 1e-6])))
def test_mod_sulq_tight(eps, delta):
    for n, d in [(500, 5), (10_000, 50), (100_000, 500)]:
        beta = mod_sulq_noise_scale_tight(n, eps, delta)
        assert_tight(math.sqrt(2) / n, beta, eps, delta)
        assert beta <= mod_sulq_noise_scale(n, d, eps, delta)
    X = _unit_rows(400, 6)
    out = mod_sulq(
        X, 2, epsilon=eps, delta=delta, rng=np.random.default_rng(1), calibration="tight"
    )
    assert out.release["noise_scale"] == mod_sulq_noise_scale_tight(400, eps, delta)
    assert out.release["calibration"] == "tight" and out.guarantee.neighbouring == "replace-one-row"


def test_mod_sulq_gain_is_about_d_over_sqrt2():
    # eq. (5) is conservative by roughly (d + 1)/sqrt(2) in sigma
    for d in (10, 100, 1000):
        ratio = mod_sulq_noise_scale(10_000, d, 0.5, 1e-5) / mod_sulq_noise_scale_tight(
            10_000, 0.5, 1e-5
        )
        assert 0.5 * (d + 1) / math.sqrt(2) < ratio < 3 * (d + 1) / math.sqrt(2)


@pytest.mark.parametrize("relation", ["add-remove-one-row", "replace-one-row"])
def test_analyze_gauss_tight(relation):
    sens = outer_product_sensitivity(relation)
    for eps, delta in itertools.product([0.05, 0.5, 0.99], DELTA_GRID):
        s = analyze_gauss_noise_scale_tight(eps, delta, sens)
        assert_tight(sens, s, eps, delta)
        assert s <= analyze_gauss_noise_scale(eps, delta, sens)
    X = _unit_rows(300, 5)
    # tight is valid for every eps (the paper's theorem needs eps < 1, and refuses it)
    out = analyze_gauss(
        X,
        2,
        epsilon=3.0,
        delta=1e-5,
        rng=np.random.default_rng(0),
        neighbouring=relation,
        calibration="tight",
    )
    assert_tight(sens, out.release["noise_scale"], 3.0, 1e-5)
    with pytest.raises(PrivacyInputError):
        analyze_gauss(
            X, 2, epsilon=3.0, delta=1e-5, rng=np.random.default_rng(0), neighbouring=relation
        )


@pytest.mark.parametrize("relation", ["entry-level", "replace-one-row", "add-remove-one-row"])
def test_noisy_power_tight_composes_over_every_noisy_product(relation):
    X = _unit_rows(300, 8)
    for eps, delta, L, output in [
        (0.5, 1e-5, 4, "projected"),
        (2.0, 1e-3, 7, "first-k"),
        (0.1, 1e-6, 1, "projected"),
    ]:
        out = noisy_power(
            X,
            2,
            rng=np.random.default_rng(0),
            epsilon=eps,
            delta=delta,
            iterations=L,
            p=3,
            neighbouring=relation,
            calibration="tight",
            output=output,
        )
        T = L + 1 if output == "projected" else L  # noisy products, derived again here
        assert out.release["n_noisy_products"] == T
        sens = {
            "entry-level": math.sqrt(3),
            "replace-one-row": math.sqrt(2),
            "add-remove-one-row": 1.0,
        }[relation]
        # entry-level: std and sensitivity both carry the factor ||X_{l-1}||_inf, which cancels
        assert_tight(sens, out.release["noise_scale"], eps, delta, T)
        paper = (
            noisy_power_noise_scale(eps, delta, 3, T)
            if relation == "entry-level"
            else noisy_power_row_noise_scale(eps, delta, T, relation, "paper")
        )
        zcdp = (
            noisy_power_row_noise_scale(eps, delta, T, relation, "zcdp")
            if relation != "entry-level"
            else None
        )
        assert out.release["noise_scale"] <= paper and (
            zcdp is None or out.release["noise_scale"] <= zcdp
        )
    with pytest.raises(PrivacyInputError):
        noisy_power(
            X,
            2,
            rng=np.random.default_rng(0),
            epsilon=1.0,
            noise="laplace",
            neighbouring=relation,
            calibration="tight",
        )


def test_streaming_power_tight():
    X = _unit_rows(2000, 6)
    for eps, delta, B in [(0.5, 1e-6, 100), (4.0, 1e-3, 250)]:
        out = streaming_power(
            X,
            2,
            rng=np.random.default_rng(0),
            block_size=B,
            epsilon=eps,
            delta=delta,
            calibration="tight",
        )
        # disjoint blocks: one Gaussian release per row, sensitivity sqrt(2)/B, no composition
        assert_tight(math.sqrt(2) / B, out.release["noise_scale"], eps, delta, 1)
        assert out.release["noise_scale"] <= streaming_power_noise_scale(eps, delta, B)


def _released_nodes_per_element(m):
    """Brute force: feed m elements to a TreeAggregator; count, per element, the noised nodes holding it."""
    noised = []
    agg = TreeAggregator(m, (1,), noise=lambda: np.zeros(1))
    for _ in range(m):
        before = set(agg._done)
        agg.add(np.zeros(1))
        noised.extend(set(agg._done) - before)
    counts = [0] * m
    for h, j in noised:
        for t in range(j << h, (j + 1) << h):
            counts[t] += 1
    return counts


@pytest.mark.parametrize("m", [1, 2, 3, 7, 8, 9, 100, 128])
def test_tree_released_nodes_per_element(m):
    counts = _released_nodes_per_element(m)
    assert max(counts) == tree_released_nodes_per_element(m) <= 1 + tree_height(m)


@pytest.mark.parametrize("relation", ["zero-out-one-row", "replace-one-row"])
def test_online_pca_tight(relation):
    X = _unit_rows(100, 4)
    sens = outer_product_sensitivity(relation)
    out = online_pca(
        X,
        1,
        rng=np.random.default_rng(0),
        epsilon=0.5,
        delta=1e-5,
        neighbouring=relation,
        calibration="tight",
        keep_subspaces=False,
        keep_curves=False,
    )
    assert_tight(
        sens, out.release["node_noise_scale"], 0.5, 1e-5, max(_released_nodes_per_element(100))
    )
    assert out.release["node_noise_scale"] <= tree_node_noise_scale(0.5, 1e-5, 100, relation)
    alg2 = online_pca(
        X,
        1,
        rng=np.random.default_rng(0),
        epsilon=0.5,
        delta=1e-5,
        neighbouring=relation,
        tree=False,
        calibration="tight",
        keep_subspaces=False,
        keep_curves=False,
    )
    assert_tight(sens, alg2.release["noise_scale"], 0.5, 1e-5, 1)  # each step (eps, delta)-DP
    exact_total = gaussian_epsilon_for_delta(
        gaussian_mu(sens, alg2.release["noise_scale"], 100), 1e-5
    )
    assert exact_total - 1e-9 <= alg2.guarantee.epsilon <= exact_total + 2e-4


# ---------------------------------------------------------------------------------------------
# private_sketch: the release, its exact profile, and the tight lift
# ---------------------------------------------------------------------------------------------


def _sketch_delta_by_quadrature(s, r, eps):
    """Both hockey-stick divergences between N(0,1)^r and N(0,1+s)^r as integrals over S = Σz²."""
    a, b = s / (2 * (1 + s)), r / 2 * math.log1p(s)
    p_with = lambda u: stats.chi2.pdf(u / (1 + s), r) / (1 + s)  # density of S with the row
    p_without = lambda u: stats.chi2.pdf(u, r)
    hi = stats.chi2.ppf(1 - 1e-16, r) * (1 + s) * 2
    add = integrate.quad(
        lambda u: max(0.0, p_with(u) - math.exp(eps) * p_without(u)),
        0,
        hi,
        limit=500,
        points=[max((eps + b) / a, 1e-9)],
    )[0]
    rem = integrate.quad(
        lambda u: max(0.0, p_without(u) - math.exp(eps) * p_with(u)),
        0,
        hi,
        limit=500,
        points=[max((b - eps) / a, 1e-9)],
    )[0]
    return max(add, rem)


@pytest.mark.parametrize(
    "s,r,eps", [(0.14, 11, 2.0), (0.5, 3, 0.5), (0.01, 50, 0.05), (1.0, 1, 1.0), (0.3, 12, 0.0)]
)
def test_sketch_profile_matches_quadrature(s, r, eps):
    assert sketch_delta_for_epsilon(s, r, eps) == pytest.approx(
        _sketch_delta_by_quadrature(s, r, eps), rel=1e-6, abs=1e-10
    )


@pytest.mark.slow
def test_sketch_profile_matches_dp_accounting_pld():
    # dp-accounting's PLD built from the privacy loss's CDF (pessimistic rounding) is an upper
    # bound on the exact delta, within its discretisation (interval 1e-3 here)
    from dp_accounting.pld import privacy_loss_distribution as pldlib

    s, r, eps = 0.2, 11, 1.0
    a, b = s / (2 * (1 + s)), r / 2 * math.log1p(s)
    # privacy loss L = aS - b, S ~ (1+s) chi2_r under the larger-variance (with-row) law
    pld = pldlib.create_from_cdf(
        lambda l: stats.chi2.cdf((l + b) / a / (1 + s), r), value_discretization_interval=1e-3
    )
    exact = sketch_delta_for_epsilon(s, r, eps)
    lib = pld.get_delta_for_epsilon(eps)
    assert exact <= lib + 1e-12 and lib <= exact * 1.02 + 1e-9


def test_sketch_profile_increases_with_s():
    for r, eps in [(11, 2.0), (3, 0.2)]:
        ds = [sketch_delta_for_epsilon(s, r, eps) for s in np.geomspace(1e-3, 3, 30)]
        assert np.all(np.diff(ds) >= -1e-15) and ds[-1] > ds[0]


@pytest.mark.parametrize(
    "eps,delta,r", [(2.0, 1e-5, 11), (0.1, 1e-6, 12), (1.0, 1e-2, 40), (8.0, 1e-9, 3)]
)
def test_sketch_lift_tight_is_the_smallest_lift(eps, delta, r):
    w = sketch_lift_tight(eps, delta, r)
    assert sketch_delta_for_epsilon(1 / w**2, r, eps) <= delta
    assert sketch_delta_for_epsilon(1 / (w * (1 - 1e-6)) ** 2, r, eps) > delta
    assert w < private_sketch_lift(eps, delta, r)


def test_sketch_lift_tight_matches_the_measured_value_and_gain():
    # an independent computation gives w ~ 2.65 at eps = 2, delta = 1e-5, r = 11, against 1,547
    w = sketch_lift_tight(2.0, 1e-5, 11)
    assert w == pytest.approx(2.65, abs=0.01)
    assert private_sketch_lift(2.0, 1e-5, 11) == pytest.approx(1547, abs=1)
    assert 1e5 < (private_sketch_lift(2.0, 1e-5, 11) / w) ** 2 < 1e7


def test_the_sketch_release_has_covariance_XtX_plus_w2I():
    # what the privacy analysis assumes: Z's rows are i.i.d. N(0, XᵀX + w²I).  Average ZᵀZ/r over
    # 4000 sketches (r = 5): each entry's std error is at most sqrt(2/20000) x the largest variance,
    # so 6 standard errors (0.06 x 3.1) bounds the deviation with negligible false-failure rate.
    rng = np.random.default_rng(3)
    X = _unit_rows(30, 3, seed=4)
    w, r, reps = 1.3, 5, 4000
    acc = np.zeros((3, 3))
    for _ in range(reps):
        sk = GaussianRowSketch(3, r, rng)
        sk.update(X)
        sk.lift(w)
        acc += sk.Z.T @ sk.Z / r
    target = X.T @ X + w**2 * np.eye(3)
    scale = np.sqrt(
        np.outer(np.diag(target), np.diag(target)) + target**2
    )  # sd of one Wishart entry
    assert np.all(np.abs(acc / reps - target) <= 6 * scale / math.sqrt(reps * r))


def test_private_sketch_tight_output():
    X = _unit_rows(500, 6)
    out = private_sketch(
        X, 2, rng=np.random.default_rng(0), epsilon=2.0, delta=1e-5, calibration="tight"
    )
    assert out.release["lift"] == sketch_lift_tight(2.0, 1e-5, 12)
    assert out.guarantee.exact and out.guarantee.neighbouring == "add-remove-one-row"
    V = out.components
    assert np.allclose(V.T @ V, np.eye(2), atol=1e-10)


# ---------------------------------------------------------------------------------------------
# bad input, config and run key
# ---------------------------------------------------------------------------------------------


def test_unknown_calibration_is_refused_by_every_mechanism():
    X = _unit_rows(64, 4)
    rng = np.random.default_rng(0)
    calls = [
        lambda: mod_sulq(X, 1, epsilon=0.5, delta=1e-5, rng=rng, calibration="exact"),
        lambda: analyze_gauss(X, 1, epsilon=0.5, delta=1e-5, rng=rng, calibration="exact"),
        lambda: noisy_power(X, 1, epsilon=0.5, delta=1e-5, rng=rng, calibration="exact"),
        lambda: streaming_power(
            X, 1, block_size=16, epsilon=0.5, delta=1e-5, rng=rng, calibration="exact"
        ),
        lambda: online_pca(X, 1, epsilon=0.5, delta=1e-5, rng=rng, calibration="exact"),
        lambda: private_sketch(X, 1, epsilon=0.5, delta=1e-5, rng=rng, calibration="exact"),
    ]
    for call in calls:
        with pytest.raises(PrivacyInputError, match="calibration"):
            call()


@pytest.mark.slow
def test_run_key_carries_calibration_only_when_not_paper():
    from experiments.store.records import run_key
    from tests.hydra_helpers import compose_cfg

    for mech in ("mod_sulq", "analyze_gauss", "streaming_power", "online_pca", "private_sketch"):
        default = run_key(compose_cfg([f"mechanism={mech}"]))["mechanism_params"]
        assert "calibration" not in default  # records written before the knob keep their keys
        tight = run_key(compose_cfg([f"mechanism={mech}", "mechanism.fn.calibration=tight"]))[
            "mechanism_params"
        ]
        assert (
            tight["calibration"] == "tight"
            and {k: v for k, v in tight.items() if k != "calibration"} == default
        )
    assert (
        run_key(compose_cfg(["mechanism=noisy_power"]))["mechanism_params"]["calibration"] == "zcdp"
    )


def test_audit_miscalibration_scales_the_tight_noise_too():
    # the audit's "noise x f, claim unchanged" hook must reach the tight noise scales, or an audit of
    # a broken tight calibration would silently test the correct one
    from experiments.audit import miscalibrated

    X = _unit_rows(64, 4)
    cases = [
        ("mod_sulq", {}),
        ("analyze_gauss", {}),
        ("noisy_power", {"neighbouring": "replace-one-row"}),
        ("noisy_power", {"neighbouring": "entry-level"}),
        ("online_pca", {"tree": True}),
        ("online_pca", {"tree": False}),
    ]
    for name, extra in cases:
        kw = dict(epsilon=0.5, delta=1e-5, calibration="tight", **extra)
        if name == "online_pca":
            kw.update(keep_subspaces=False, keep_curves=False)
        fn = {
            "mod_sulq": mod_sulq,
            "analyze_gauss": analyze_gauss,
            "noisy_power": noisy_power,
            "online_pca": online_pca,
        }[name]
        good = fn(X, 1, rng=np.random.default_rng(0), **kw).release["noise_scale"]
        bad = miscalibrated(name, 0.5)(X, 1, rng=np.random.default_rng(0), **kw).release[
            "noise_scale"
        ]
        assert bad == pytest.approx(0.5 * good, rel=1e-12), (name, extra)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    n=st.integers(1, 10**7),
    d=st.integers(2, 2000),
    eps=st.floats(0.01, 0.99),
    log_delta=st.floats(-12, -1),
    L=st.integers(1, 60),
    m=st.integers(1, 10**6),
    r=st.integers(1, 60),
)
def test_tight_never_exceeds_paper(n, d, eps, log_delta, L, m, r):
    # property over random settings where every paper formula applies (eps < 1, so also
    # eps <= 2.34 log(1/delta) for noisy_power's paper sigma)
    delta = 10.0**log_delta
    assert mod_sulq_noise_scale_tight(n, eps, delta) <= mod_sulq_noise_scale(n, d, eps, delta)
    for rel in ("add-remove-one-row", "replace-one-row"):
        s = outer_product_sensitivity(rel)
        assert analyze_gauss_noise_scale_tight(eps, delta, s) <= analyze_gauss_noise_scale(
            eps, delta, s
        )
        tree_rel = (
            "zero-out-one-row" if rel == "add-remove-one-row" else rel
        )  # online_pca's relations
        assert tree_node_noise_scale(eps, delta, m, tree_rel, "tight") <= tree_node_noise_scale(
            eps, delta, m, tree_rel
        )
        assert noisy_power_row_noise_scale(
            eps, delta, L, rel, "tight"
        ) <= noisy_power_row_noise_scale(eps, delta, L, rel, "paper")
    assert streaming_power_noise_scale(eps, delta, 100, "tight") <= streaming_power_noise_scale(
        eps, delta, 100
    )
    assert sketch_lift_tight(eps, delta, r) <= private_sketch_lift(eps, delta, r)
