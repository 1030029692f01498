"""Tests of the Singhal–Steinke estimators (the package mechanisms/subspace/)."""

import math

import numpy as np
import pytest
from scipy import integrate

from mechanisms._base import PrivacyInputError
from mechanisms.metrics import projector_distance
from mechanisms.subspace import (
    approx_parameters,
    exact_min_samples,
    exact_null_score,
    exact_ptr_pass_probability,
    exact_ptr_threshold,
    paper_exact_min_samples,
    stable_histogram_threshold,
    subspace_approx,
    subspace_exact,
    truncated_laplace,
    truncated_laplace_params,
    truncated_laplace_survival,
    truncated_laplace_variance,
)
from mechanisms.subspace._known_broken import _subspace_exact_paper_unfixed


def planted_exact(n, d, k, rng, n_adv=0):
    """Rows exactly in a k-dim subspace: integer combinations of an integer basis (exact in float64),
    scaled by a power of two (exact) so that every norm is <= 1; ``n_adv`` integer rows in general
    position replace the first rows.  Returns (X, orthonormal basis of the planted subspace)."""
    B = rng.integers(-3, 4, size=(d, k))
    while np.linalg.matrix_rank(B) < k:
        B = rng.integers(-3, 4, size=(d, k))
    X = (rng.integers(-(2**20), 2**20, size=(n, k)) @ B.T).astype(float)
    if n_adv:
        X[:n_adv] = rng.integers(-(2**20), 2**20, size=(n_adv, d))
    X[~X.any(axis=1)] = B[:, 0]  # no zero rows
    X /= 2.0 ** np.ceil(np.log2(np.linalg.norm(X, axis=1).max()))
    return X, np.linalg.qr(B.astype(float))[0]


def gaussian_gap(n, d, k, gamma2, rng):
    U = np.linalg.qr(rng.standard_normal((d, d)))[0]
    lam = np.r_[np.ones(k), gamma2 * np.ones(d - k)]
    X = (rng.standard_normal((n, d)) * np.sqrt(lam)) @ U.T
    return X / np.linalg.norm(X, axis=1).max(), U[:, :k]


# ------------------------------------------------------------------ truncated Laplace (Lemma A.14)


def test_truncated_laplace_params_formula():
    lam, A = truncated_laplace_params(2.0, 0.5, 1e-6)
    assert lam == pytest.approx(4.0)
    assert A == pytest.approx(4.0 * math.log(1 + (math.exp(0.5) - 1) / 2e-6))
    # A <= (Δ/ε) log(1/δ) for small ε (the remark after Lemma A.14)
    assert A <= 4.0 * math.log(1e6)


def test_truncated_laplace_draws_match_density():
    """Support [-A, A]; sample variance vs closed form (also checked by quadrature).

    200k draws: relative s.e. of the variance ~ sqrt(Var(x²))/E x²/sqrt(n) < 1%; tolerance 3%."""
    rng = np.random.default_rng(0)
    eps, delta = 1.0, 1e-3
    lam, A = truncated_laplace_params(2.0, eps, delta)
    x = truncated_laplace(2.0, eps, delta, rng, size=200_000)
    assert np.all(np.abs(x) <= A)
    var = truncated_laplace_variance(2.0, eps, delta)
    num = (
        integrate.quad(lambda y: y * y * math.exp(-y / lam), 0, A)[0]
        / integrate.quad(lambda y: math.exp(-y / lam), 0, A)[0]
    )
    assert var == pytest.approx(num, rel=1e-8)
    assert np.var(x) == pytest.approx(var, rel=0.03)
    assert abs(np.mean(x)) < 0.05 * math.sqrt(var)


def test_truncated_laplace_privacy_ratio():
    """Lemma A.14: for shifts |s| <= Δ, p(x)/p(x - s) <= e^ε where both are positive; the mass of
    p outside the support of the shifted density is <= δ."""
    eps, delta, D = 0.7, 1e-4, 2.0
    lam, A = truncated_laplace_params(D, eps, delta)
    B = 1 / (2 * lam * (1 - math.exp(-A / lam)))
    tail = B * integrate.quad(lambda y: math.exp(-y / lam), A - D, A)[0]
    assert tail <= delta * (1 + 1e-9)
    assert (1 / lam) * D <= eps + 1e-12


# ------------------------------------------------------------------ exact case (fixed Algorithm 1)
# Privacy of the fix: tests/mechanisms/test_subspace_exact_privacy.py.


def test_exact_recovers_planted_subspace():
    """Problem 4.1 with ℓ = 1 (one adversarial row, general position) and n = the fixed sample bound:
    the gap is n − 3 >= 2 + 2A, so every run releases s_* (pass probability exactly 1)."""
    rng = np.random.default_rng(1)
    eps, delta, k = 1.0, 1e-3, 2
    n = int(math.ceil(exact_min_samples(1, eps, delta))) + 1
    X, U = planted_exact(n, 5, k, rng, n_adv=1)
    for seed in range(3):
        out = subspace_exact(X, k, rng=np.random.default_rng(seed), epsilon=eps, delta=delta, ell=1)
        assert out.status == "ok" and out.release["status"] == "ok"
        assert out.components.shape == (5, 2)
        np.testing.assert_allclose(out.components.T @ out.components, np.eye(2), atol=1e-10)
        assert projector_distance(out.components, U) < 1e-12
    assert out.guarantee.neighbouring == "replace-one-row" and out.guarantee.exact
    assert out.guarantee.epsilon == eps and out.guarantee.delta == delta
    assert out.guarantee.status == "proven" and "propose-test-release" in out.guarantee.note
    # Lemma 4.3: u(s_*) = (n − 1) − 1 (one adversarial row, lines of s_* hold one row each), runner-up 1
    assert out.diagnostics["top_score"] == n - 2 and out.diagnostics["runner_up_score"] == 1
    assert out.diagnostics["pass_probability"] == 1.0
    # the release holds no exact data statistic
    assert set(out.release) == {"status", "bottom", "threshold"}


def test_exact_bottom_on_general_position_data():
    """Points in general position in R^4: every 2-dim span holds 2 points (score 1), gap 0 -> ⊥ surely."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((40, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    out = subspace_exact(X, 2, rng=rng, epsilon=1.0, delta=1e-3)
    assert out.components is None and out.status == "bottom"
    assert out.diagnostics["gap"] == 0 and out.diagnostics["pass_probability"] == 0.0
    assert out.release["status"] == "bottom" and out.release["bottom"] is True


def test_exact_small_gap_gives_bottom():
    """Planted subspace with n = 3 rows: gap u(s_*) = 3 − 1 = 2 <= τ − A, so ⊥ surely."""
    rng = np.random.default_rng(3)
    X, _ = planted_exact(3, 5, 2, rng)
    out = subspace_exact(X, 2, rng=rng, epsilon=1.0, delta=1e-3)
    assert out.components is None and out.status == "bottom"
    assert out.diagnostics["gap"] == 2 and out.diagnostics["pass_probability"] == 0.0


def test_exact_too_large_raises():
    rng = np.random.default_rng(4)
    X, _ = planted_exact(200, 6, 3, rng)
    for fn in (subspace_exact, _subspace_exact_paper_unfixed):
        with pytest.raises(PrivacyInputError, match="max_candidates"):
            fn(X, 3, rng=rng, epsilon=1.0, delta=1e-3)
        out = fn(X, 3, rng=rng, epsilon=1.0, delta=1e-3, too_many="bottom")
        assert (
            out.components is None
            and out.status == "bottom"
            and "too many" in out.release["reason"]
        )
        assert set(out.release) == {
            "status",
            "bottom",
            "reason",
        }  # nothing data-dependent on this path
        with pytest.raises(PrivacyInputError, match="too_many"):
            fn(X, 3, rng=rng, epsilon=1.0, delta=1e-3, too_many="nope")


def test_exact_threshold_and_sample_bounds():
    """τ = 2 + A; fixed bound 3ℓ + 2A + 2; the paper's 3ℓ + 2 max(4 log(1/δ)/ε, 2A) + 2."""
    eps, delta = 1.0, 1e-6
    _, A = truncated_laplace_params(2.0, eps, delta)
    assert exact_ptr_threshold(eps, delta) == pytest.approx(2 + A)
    assert exact_min_samples(3, eps, delta) == pytest.approx(9 + 2 * A + 2)
    assert paper_exact_min_samples(3, eps, delta) == pytest.approx(
        9 + 2 * max(4 * math.log(1e6), 2 * A) + 2
    )
    # pass probability: 0 at gap <= 2, 1/2 at gap = τ, 1 at gap >= 2 + 2A (A at δ₀, slightly above A(δ))
    tau = exact_ptr_threshold(eps, delta)
    assert exact_ptr_pass_probability(2.0, eps, delta) == 0.0
    assert exact_ptr_pass_probability(tau, eps, delta) == pytest.approx(0.5, abs=1e-12)
    assert exact_ptr_pass_probability(2 * tau - 2, eps, delta) == 1.0


def test_truncated_laplace_survival_matches_quadrature():
    eps, delta = 0.8, 1e-4
    lam, A = truncated_laplace_params(2.0, eps, delta)
    B = 1 / (2 * lam * (1 - math.exp(-A / lam)))
    for t in (-A - 1, -A / 2, -0.3, 0.0, 0.7, A / 3, A - 1e-3, A, A + 2):
        lo = min(max(t, -A), A)
        num = (
            B
            * integrate.quad(
                lambda y: math.exp(-abs(y) / lam), lo, A, points=[0.0] if lo < 0 else None
            )[0]
        )
        assert truncated_laplace_survival(t, 2.0, eps, delta) == pytest.approx(num, abs=1e-12)


def test_exact_null_score_matches_paper_for_small_eps():
    # for eps <= ln 3 the paper's 4 log(1/δ)/ε dominates 2A
    assert exact_null_score(3, 0.5, 1e-6) == pytest.approx(3 + 4 * math.log(1e6) / 0.5 + 1)
    _, A = truncated_laplace_params(2.0, 5.0, 1e-6)
    assert exact_null_score(3, 5.0, 1e-6) == pytest.approx(3 + 2 * A + 1)


def test_exact_bad_inputs():
    rng = np.random.default_rng(5)
    X, _ = planted_exact(20, 4, 2, rng)
    Y = 2 * X / np.linalg.norm(X, axis=1, keepdims=True)
    with pytest.raises(PrivacyInputError):
        subspace_exact(Y, 2, rng=rng, epsilon=1.0, delta=1e-3)
    out = subspace_exact(Y, 2, rng=rng, epsilon=1.0, delta=1e-3, clip=True)
    assert out.diagnostics["n_clipped"] == 20
    subspace_exact(
        X, 2, rng=rng, epsilon=1.0, delta=1e-3, ell=0
    )  # ℓ = 0 is a valid problem parameter
    for ell in (-1, 1.5, True):
        with pytest.raises(PrivacyInputError, match="ell"):
            subspace_exact(X, 2, rng=rng, epsilon=1.0, delta=1e-3, ell=ell)
    for kw in (dict(max_candidates=0), dict(max_candidates=2.5)):
        with pytest.raises(PrivacyInputError, match="max_candidates"):
            subspace_exact(X, 2, rng=rng, epsilon=1.0, delta=1e-3, **kw)
    with pytest.raises(PrivacyInputError, match="ell"):  # the paper's NULL argument needs ℓ >= 1
        _subspace_exact_paper_unfixed(X, 2, rng=rng, epsilon=1.0, delta=1e-3, ell=0)
    with pytest.raises(PrivacyInputError):
        subspace_exact(X, 4, rng=rng, epsilon=1.0, delta=1e-3)
    with pytest.raises(PrivacyInputError):
        subspace_exact(X, 2, rng=rng, epsilon=0, delta=1e-3)
    with pytest.raises(
        PrivacyInputError, match="floating-point"
    ):  # δ must exceed the reserved share
        subspace_exact(X, 2, rng=rng, epsilon=1.0, delta=1e-13)


# ------------------------------------------------------------------ approximate case (Algorithm 2)


def test_approx_parameters_and_threshold():
    prm = approx_parameters(6000, 10, 2, 1.0, 1e-5, 0.01, C0=8, C1=2, C2=1)
    assert prm["t"] == math.ceil(8 * math.log(1e5))
    assert prm["m"] == 6000 // prm["t"] and prm["q"] == 4
    t, m = prm["t"], prm["m"]
    assert prm["cell_width"] == pytest.approx(
        0.01 * math.sqrt(20) * (math.sqrt(2) + math.sqrt(math.log(2 * t))) / math.sqrt(m)
    )
    tau = stable_histogram_threshold(1.0, 1e-5)
    # a count-1 cell is released with probability exactly delta
    assert 0.5 * math.exp(-(tau - 1) * 1.0 / 2) == pytest.approx(1e-5)
    # t/2 must exceed tau for the defaults to be usable at all
    assert t / 2 > tau


def test_histogram_noise_scale_empirical():
    """The added Laplace noise has scale 2/ε: recover it from many calls on a fixed cell count.

    We use 400 runs with ε = 1; the noisy best count minus the true count is Laplace(2) (the best
    cell is the unique non-empty one when all blocks agree exactly: data exactly on a plane).
    s.e. of the sample std ~ sqrt(5/4)/sqrt(400)*... ~ 6%; tolerance 20%."""
    rng0 = np.random.default_rng(6)
    X, _ = planted_exact(2000, 6, 2, rng0)
    diffs = []
    for s in range(400):
        out = subspace_approx(
            X,
            2,
            rng=np.random.default_rng(s),
            epsilon=1.0,
            delta=1e-3,
            gamma=0.01,
            C0=8,
            C1=1,
            C2=1,
        )
        assert out.diagnostics["n_nonempty_cells"] == 1
        diffs.append(out.diagnostics["best_noisy_count"] - out.diagnostics["max_true_count"])
    assert np.std(diffs) == pytest.approx(math.sqrt(2) * 2.0, rel=0.2)


def test_approx_recovers_with_large_gap():
    """Large multiplicative gap λ_{k+1}/λ_k = 1e-6, with the public bound γ = 0.01 (>= sqrt(1e-6), as
    Remark 5.2 allows an upper bound): the output is close to the true subspace.

    Tolerance 0.35 in projector (sine) distance (observed over 12 seeds: 11 non-⊥, errors 0.04–0.11); a random
    2-dim subspace in R^10 is at ~0.9+.  Some runs may return ⊥, so we
    require >= 3 of 5."""
    ok = 0
    for s in range(5):
        rng = np.random.default_rng(100 + s)
        X, U = gaussian_gap(24000, 10, 2, 1e-6, rng)
        out = subspace_approx(X, 2, rng=rng, epsilon=1.0, delta=1e-5, gamma=0.01)
        assert out.guarantee.neighbouring == "replace-one-row"
        if out.components is not None:
            ok += 1
            np.testing.assert_allclose(out.components.T @ out.components, np.eye(2), atol=1e-10)
            assert projector_distance(out.components, U) < 0.35
    assert ok >= 3


def test_approx_bottom_without_gap():
    """Isotropic data: the blocks' subspaces disagree, no cell holds t/2 points -> ⊥."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((6000, 10))
    X /= np.linalg.norm(X, axis=1).max()
    out = subspace_approx(X, 2, rng=rng, epsilon=1.0, delta=1e-5, gamma=0.01)
    assert out.components is None
    assert out.release["status"] == "bottom" and out.release["bottom"] is True


def test_approx_too_few_samples_bottom():
    rng = np.random.default_rng(8)
    X, _ = gaussian_gap(50, 10, 2, 1e-4, rng)
    out = subspace_approx(X, 2, rng=rng, epsilon=1.0, delta=1e-5, gamma=0.01)
    assert out.components is None and "too few samples" in out.release["reason"]


def test_approx_bad_inputs():
    rng = np.random.default_rng(9)
    X, _ = gaussian_gap(500, 10, 2, 1e-4, rng)
    for kw in [dict(gamma=0), dict(C0=-1), dict(epsilon=0), dict(delta=2)]:
        args = dict(rng=rng, epsilon=1.0, delta=1e-5, gamma=0.01)
        args.update(kw)
        with pytest.raises(PrivacyInputError):
            subspace_approx(X, 2, **args)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(PrivacyInputError):
        subspace_approx(bad, 2, rng=rng, epsilon=1.0, delta=1e-5)
