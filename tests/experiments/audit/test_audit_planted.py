"""Planted defects the audit must catch unaided, each by the mode that looks where it hides: the
search's bit-level and release statistics (a row's signs in the lowest mantissa bits of MOD-SULQ's
output), the white-box verdict on the exact ε(δ) of a long enough stream at the claimed δ (online
PCA's tree noise without √(1 + H)), the search's heavy-axis designs (PPCA with ε doubled in the
exponent); and the honest mechanisms kept within their claims by the same statistics."""

import math

import numpy as np
import pytest

from experiments.audit import (
    PLANTED_VARIANTS,
    measure_mu,
    planted_variant,
    search_audit,
    whitebox_audit,
)
from experiments.audit.designs import bingham_expected_bound, catalogue, heavy_axis_masses
from experiments.audit.statistics import (
    BitFeatures,
    ReleaseFeatures,
    mantissa_bits,
    value_bytes,
)
from experiments.audit.whitebox import EXACT_TOLERANCE, exact_epsilon, whitebox_verdict
from mechanisms import MechanismOutput, PrivacyGuarantee, get_mechanism
from mechanisms.calibration import gaussian_epsilon_for_delta
from mechanisms.online_pca import tree_node_noise_scale

# ---------------------------------------------------------------------------------------------
# The statistics
# ---------------------------------------------------------------------------------------------


def test_mantissa_bits_reads_the_lowest_bits():
    one = 1.0
    up1 = np.nextafter(1.0, 2.0)  # 1 + 2⁻⁵²: lowest bit set
    up2 = np.nextafter(up1, 2.0)  # 1 + 2⁻⁵¹: second bit set, lowest clear
    got = mantissa_bits([one, up1, up2, -up1, 0.0], n_bits=2)
    assert got.tolist() == [[0, 0], [1, 0], [0, 1], [1, 0], [0, 0]]
    with pytest.raises(ValueError):
        mantissa_bits([1.0], n_bits=0)


def test_bit_features_of_components_and_bottom():
    V = np.array([[1.0], [np.nextafter(0.5, 1.0)]])
    bf = BitFeatures((2, 1), n_bits=2)
    assert bf.names == ["bit0[V 0,0]", "bit1[V 0,0]", "bit0[V 1,0]", "bit1[V 1,0]", "lowbits[V]"]
    assert bf(V).tolist() == [0, 0, 1, 0, 1]
    assert bf(None).tolist() == [-1] * 5  # ⊥


def _output(V, release):
    g = PrivacyGuarantee(1.0, 0.0, "replace-one-row")
    return MechanismOutput(V, g, release=release, diagnostics={})


def test_release_features_values_bits_and_fixed_noise_references():
    V1, V0 = np.eye(2)[:, :1], np.eye(2)[:, 1:]
    ref1 = _output(V1, {"status": "ok", "noise_scale": 0.5, "trace": np.arange(3.0)})
    ref0 = _output(V0, {"status": "ok", "noise_scale": 0.5, "trace": np.arange(3.0)})
    rf = ReleaseFeatures.from_references(ref1, ref0)
    names = rf.names
    assert "release[noise_scale]" in names and "bit0[release[noise_scale]]" in names
    assert [n for n in names if "release[trace]" in n] == [
        f"release[trace][{i}]" for i in range(3)
    ] + [f"bit0[release[trace][{i}]]" for i in range(3)]
    assert "ref[components]=D" in names and "ref[status]=D'" in names
    assert "release[status]" not in names  # a string is compared by its bytes only
    row = dict(zip(names, rf(V1, {"status": "ok", "noise_scale": np.nextafter(0.5, 1.0)})))
    assert row["release[noise_scale]"] == np.nextafter(0.5, 1.0)
    assert row["bit0[release[noise_scale]]"] == 1.0
    assert row["ref[components]=D"] == 1.0 and row["ref[components]=D'"] == 0.0
    assert row["ref[noise_scale]=D"] == 0.0  # one unit in the last place away: other bytes
    assert row["release[trace][0]"] == -math.inf and row["ref[trace]=D"] == 0.0  # absent
    assert value_bytes(1.0) != value_bytes(np.nextafter(1.0, 2.0))
    assert value_bytes("ok") == value_bytes("ok") and value_bytes(None) != value_bytes("None")


def test_heavy_axis_designs_follow_the_claim():
    assert heavy_axis_masses(2.0) == [3.0, 1.5, 0.75]
    cat = {d.name: d for d in catalogue("replace-one-row", name="ppca", epsilon=2.0)}
    des = cat["heavy-axis w=1.5 d=2"]
    np.testing.assert_allclose(des.X1.T @ des.X1, np.diag([1.0, 1.5]))
    np.testing.assert_allclose(des.X0.T @ des.X0, np.diag([0.0, 2.5]))


@pytest.mark.slow
def test_bingham_expected_bound_matches_the_sampler():
    """The exact d = 2 law behind the expected audits quoted for PPCA: on the heavy-axis pair w = 1.5
    the best event's probabilities agree with 4,000 draws per dataset of PPCA run at ε = 4 (tolerance
    4 binomial standard errors, ≤ 0.019); the expected bounds are those docs/audit.md quotes (to
    1e-3: a Riemann sum on 2·10⁵ points), and an honest ε = 2 stays below its claim on its own best
    pair (w = 3)."""
    ev = bingham_expected_bound(4.0, 1.5, 10000)
    assert ev["expected_epsilon_lower"] == pytest.approx(2.689, abs=1e-3)
    assert bingham_expected_bound(4.0, 1.5, 2000)["expected_epsilon_lower"] == pytest.approx(
        2.322, abs=1e-3
    )
    assert bingham_expected_bound(2.0, 3.0, 10000)["expected_epsilon_lower"] == pytest.approx(
        1.274, abs=1e-3
    )
    cat = {d.name: d for d in catalogue("replace-one-row", name="ppca", epsilon=2.0)}
    des, fn, n = cat["heavy-axis w=1.5 d=2"], get_mechanism("ppca"), 4000
    for X, p in ((des.X1, ev["p_D"]), (des.X0, ev["p_Dprime"])):
        rng = np.random.default_rng(8)
        v1 = [fn(X, 1, rng=rng, epsilon=4.0, sampler="exact").components[0, 0] for _ in range(n)]
        freq = float(np.mean(np.square(v1) >= ev["threshold"]))
        assert abs(freq - p) <= 4 * math.sqrt(p * (1 - p) / n) + 1e-12, (freq, p)


# ---------------------------------------------------------------------------------------------
# The planted defects: explicit selection only
# ---------------------------------------------------------------------------------------------


def test_planted_variants_are_selected_explicitly(tmp_path):
    from experiments.audit import run_audit
    from tests.hydra_helpers import compose_cfg

    assert set(PLANTED_VARIANTS) == {
        "sign_bit",
        "tree_without_height",
        "doubled_exponent",
        "wishart",  # published, not planted: tests/experiments/audit/test_wishart_known_broken.py
    }
    with pytest.raises(ValueError):
        planted_variant("sign_bit", "ppca")  # a MOD-SULQ defect asked for another mechanism
    with pytest.raises(ValueError):
        planted_variant("no_such_defect")
    base = ["experiment=audit", f"results_dir={tmp_path}", "quiet=true"]
    with pytest.raises(ValueError):
        run_audit(compose_cfg(base + ["experiment.mechanism=ppca", "experiment.variant=sign_bit"]))
    cfg = compose_cfg(base)
    assert cfg.experiment.variant is None  # the default configuration reaches none of them


def test_sign_bit_variant_moves_only_the_lowest_bit():
    """Same noise stream: the variant's components are MOD-SULQ's up to one unit in the last place,
    and their lowest bits are the first row's signs (e₁: row 0 positive, row 1 not)."""
    X = np.vstack([np.eye(2)[0], np.tile([0.6, 0.8], (9, 1))])
    honest = get_mechanism("mod_sulq")(X, 1, rng=np.random.default_rng(4), epsilon=2.0, delta=1e-5)
    broken = planted_variant("sign_bit")(
        X, 1, rng=np.random.default_rng(4), epsilon=2.0, delta=1e-5
    )
    ulp = np.spacing(np.abs(honest.components))
    assert np.all(np.abs(broken.components - honest.components) <= ulp)
    assert mantissa_bits(broken.components)[:, 0].tolist() == [1.0, 0.0]
    assert broken.guarantee == honest.guarantee


# ---------------------------------------------------------------------------------------------
# Defect 1: a row's signs in the lowest mantissa bits of MOD-SULQ (the search)
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_search_catches_sign_bit_mod_sulq():
    """True ε = ∞ on every pair whose first rows differ in sign pattern (the catalogue puts the
    differing row first).  The lowest bit of an entry is then 1 under one dataset and 0 under the
    other on every run, so the certified bound is the ceiling of 300 trials, 4.39 > 2: a sure catch
    unless the search stops looking at the bits."""
    r = search_audit(
        planted_variant("sign_bit"),
        epsilon=2.0,
        delta=1e-5,
        calibration_trials=60,
        trials=300,
        n_random=0,
        seed=0,
    )
    assert r["violation"] and r["audited_epsilon_lower"] > 2.0, r["leaderboard"]
    assert r["at_ceiling"] and r["statistic"].startswith("bit0[V ")
    assert r["mechanism"] == PLANTED_VARIANTS["sign_bit"][2]


@pytest.mark.slow
def test_search_with_bit_and_release_statistics_keeps_mod_sulq_within_claim():
    """The honest MOD-SULQ on the same search: its lowest bits are the rounding of a continuous draw,
    nearly uniform and (to within what 10⁵ runs per side resolve) equally distributed under both
    datasets (docs/audit.md), so no event on them certifies above the claim; the release fields are
    public (n, d, ε, δ and the calibration), equal in the two fixed-noise reference runs."""
    r = search_audit(
        "mod_sulq", epsilon=2.0, delta=1e-5, calibration_trials=60, trials=300, n_random=0, seed=0
    )
    assert not r["violation"] and r["audited_epsilon_lower"] <= 2.0, r["leaderboard"]
    assert r["fixed_noise_differences"] == ["components"]


# ---------------------------------------------------------------------------------------------
# Defect 2: online PCA's tree noise without √(1 + H) (the white-box audit)
# ---------------------------------------------------------------------------------------------


def test_tree_without_height_exact_epsilon_on_a_32_row_stream():
    """The white-box tap measures, on the default 32-row stream, the six tree nodes holding the first
    row (H = 5) with the one-level noise: μ = √6·Δ/σ₁ (relative tolerance 1e-9, floating point only),
    exact ε(δ = 10⁻⁵) = 4.28 against the claim of 2; the honest tree stays below its claim."""
    eps, dl = 2.0, 1e-5
    m = measure_mu(planted_variant("tree_without_height"), epsilon=eps, delta=dl)
    assert m["n_releases"] == 6 and m["design"].X1.shape[0] == 32
    assert m["mu"] == pytest.approx(math.sqrt(6) / tree_node_noise_scale(eps, dl, 1), rel=1e-9)
    assert exact_epsilon(m, dl) == pytest.approx(gaussian_epsilon_for_delta(m["mu"], dl), rel=1e-9)
    assert 4.27 < exact_epsilon(m, dl) < 4.29
    assert exact_epsilon(measure_mu("online_pca", epsilon=eps, delta=dl), dl) <= eps


@pytest.mark.slow
def test_whitebox_catches_tree_without_height_at_the_claimed_delta():
    """At the claimed δ = 10⁻⁵ a few hundred runs certify little (expected bound 0.93 with 300 runs),
    but the exact ε(δ) the audit computes from the measured noise is 4.28 > 2: the verdict must say
    violation.  The honest online PCA, same audit: exact 1.56, no violation."""
    r = whitebox_audit(planted_variant("tree_without_height"), epsilon=2.0, delta=1e-5, trials=300)
    assert r["exact_violation"] and r["violation"] and r["verdict"].startswith("VIOLATION")
    assert r["exact_epsilon"] > 4.0
    ok = whitebox_audit("online_pca", epsilon=2.0, delta=1e-5, trials=300)
    assert not ok["violation"] and ok["exact_epsilon"] < 2.0 and "consistent" in ok["verdict"]


@pytest.mark.slow
def test_whitebox_certifies_tree_without_height_at_delta_one_tenth():
    """At δ = 0.1 the same defect is also caught statistically: μ = 1.93 on 32 rows, exact ε(δ) 3.58,
    expected bound 2.73 with 2,000 runs per dataset (model_event); its sampling standard deviation is
    about 0.1, so the bound exceeds 2 with several standard deviations to spare."""
    r = whitebox_audit(planted_variant("tree_without_height"), epsilon=2.0, delta=0.1, trials=2000)
    assert r["statistical_violation"] and r["audited_epsilon_lower"] > 2.0, r
    assert r["expected_epsilon_lower"] > 2.6


def test_whitebox_verdict_counts_the_exact_epsilon():
    assert whitebox_verdict(2.0, 0.5, 2.877).startswith("VIOLATION: the exact epsilon(delta)")
    assert (
        whitebox_verdict(2.0, 0.5, 2.0 * (1 + EXACT_TOLERANCE / 2)) == "consistent with the claim"
    )
    assert whitebox_verdict(2.0, 2.2, 1.0).startswith("VIOLATION: audited lower bound")
    # a tight calibration meets its claim up to its numerical inversion (exact 1.99999996): no violation
    r = whitebox_audit("mod_sulq", epsilon=2.0, delta=1e-5, trials=50, calibration="tight")
    assert 1.9999 < r["exact_epsilon"] <= 2.0 and not r["violation"]


@pytest.mark.slow
def test_run_audit_whitebox_reports_the_exact_violation(tmp_path):
    from experiments.audit import run_audit
    from tests.hydra_helpers import compose_cfg

    rec = run_audit(
        compose_cfg(
            [
                "experiment=audit",
                f"results_dir={tmp_path}",
                "quiet=true",
                "experiment.mechanism=online_pca",
                "experiment.mode=whitebox",
                "experiment.variant=tree_without_height",
                "experiment.trials=100",
            ]
        )
    )
    assert rec["delta"] == 1e-5 and rec["n_D"] == 32
    assert rec["violation"] and rec["verdict"].startswith("VIOLATION: the exact epsilon(delta)")
    assert rec["run_key"]["variant"] == "tree_without_height"


# ---------------------------------------------------------------------------------------------
# Defect 3: PPCA (k = 1) with ε doubled in the exponent (the search)
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_search_catches_doubled_exponent_ppca():
    """True ε = 4 against the claim of 2.  Among its catalogue the search finds the heavy-axis pair
    (base mass 1.5 along e₂, e₁ vs e₂) and the event "‖V̂ᵀe₁‖² large".  With the event known in
    advance, 10,000 runs per dataset would certify 2.69 in expectation (bingham_expected_bound); chosen
    from 300 calibration runs it certifies less, measured 2.31–2.48 over seeds 0–2.  The sampling
    standard deviation of the bound is about 0.1, so 2 is cleared by three or more."""
    r = search_audit(
        planted_variant("doubled_exponent"),
        epsilon=2.0,
        delta=1e-5,
        calibration_trials=300,
        trials=10000,
        n_random=0,
        seed=0,
    )
    assert r["violation"] and r["audited_epsilon_lower"] > 2.0, r["leaderboard"]
    assert r["design"].startswith("heavy-axis")


@pytest.mark.slow
def test_search_keeps_ppca_within_claim():
    """The honest PPCA on the same search: measured 0.70–0.92 over seeds 0–2 (its best design's
    expected bound is 1.27 at 10,000 runs); a correct ε-DP mechanism exceeds its claim with
    probability at most 5%."""
    r = search_audit(
        "ppca", epsilon=2.0, delta=1e-5, calibration_trials=300, trials=10000, n_random=0, seed=0
    )
    assert not r["violation"] and r["audited_epsilon_lower"] <= 2.0, r["leaderboard"]
