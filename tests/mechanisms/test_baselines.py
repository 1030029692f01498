"""pca, random, mod_sulq, analyze_gauss: output, determinism, calibration, bad input."""

import math

import numpy as np
import pytest
from scipy import stats

import mechanisms.analyze_gauss as ag_module
import mechanisms.mod_sulq as ms_module
from mechanisms import PrivacyInputError, get_mechanism
from mechanisms._base import second_moment
from mechanisms.calibration import (
    analyze_gauss_noise_scale,
    mod_sulq_noise_scale,
    mod_sulq_noise_scale_root,
)
from mechanisms.metrics import optimal_q_F, q_F

PARAMS = {
    "pca": {},
    "random": {},
    "mod_sulq": {"epsilon": 0.5, "delta": 0.01},
    "analyze_gauss": {"epsilon": 0.5, "delta": 0.01},
}


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_orthonormal_and_deterministic(name, small_data):
    f = get_mechanism(name)
    out1 = f(small_data, 3, rng=np.random.default_rng(7), **PARAMS[name])
    out2 = f(small_data, 3, rng=np.random.default_rng(7), **PARAMS[name])
    V = out1.components
    assert V.shape == (8, 3)
    assert np.allclose(V.T @ V, np.eye(3), atol=1e-10)
    assert np.array_equal(V, out2.components)
    g = out1.guarantee
    assert g.neighbouring in {"none", "replace-one-row", "add-remove-one-row"}


def test_pca_is_optimal(small_data):
    out = get_mechanism("pca")(small_data, 3)
    A = second_moment(small_data)
    assert q_F(out.components, A) == pytest.approx(optimal_q_F(A, 3))
    assert math.isinf(out.guarantee.epsilon)


def test_random_subspace_is_uniform(rng):
    """E[VVᵀ] = (k/d) I for the Haar law; 2,000 draws, entries' s.e. <= sqrt(k/d/2000)~0.01; tol 0.05."""
    X = np.zeros((5, 6))
    f = get_mechanism("random")
    P = np.mean([(lambda V: V @ V.T)(f(X, 2, rng=rng).components) for _ in range(2000)], axis=0)
    assert np.allclose(P, np.eye(6) * 2 / 6, atol=0.05)


def test_mod_sulq_noise_scale_formula():
    # eq. (5) by hand: n=1000, d=10, eps=0.1, delta=0.01
    n, d, eps, delta = 1000, 10, 0.1, 0.01
    log_term = math.log((100 + 10) / (0.01 * 2 * math.sqrt(2 * math.pi)))
    expected = 11 / (1000 * 0.1) * math.sqrt(2 * log_term) + 1 / (1000 * math.sqrt(0.1))
    assert mod_sulq_noise_scale(n, d, eps, delta) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(0.11 * math.sqrt(2 * 7.693565) + 0.0031623, rel=1e-4)


@pytest.mark.parametrize(
    "n,d,eps,delta", [(100, 5, 0.1, 0.01), (10**5, 513, 0.1, 0.01), (50, 2, 2.0, 0.5)]
)
def test_mod_sulq_eq5_bounds_the_exact_root(n, d, eps, delta):
    """Eq. (5) must be >= the root of the quadratic in Theorem 5's proof (else under-noised)."""
    root = mod_sulq_noise_scale_root(n, d, eps, delta)
    beta = mod_sulq_noise_scale(n, d, eps, delta)
    assert beta >= root
    # and the root does satisfy the privacy equation
    s = math.sqrt(2 * math.log((d * d + d) / (delta * 2 * math.sqrt(2 * math.pi))))
    assert 1 / (2 * root**2) * (2 * (d + 1) * root * s / n + 2 / n**2) == pytest.approx(
        eps, rel=1e-9
    )


def _capture_noise(monkeypatch, module, X, call, reps):
    captured = []
    real = module.top_k_eigenvectors

    def spy(M, k):
        captured.append(M.copy())
        return real(M, k)

    monkeypatch.setattr(module, "top_k_eigenvectors", spy)
    scales = [call(np.random.default_rng(100 + r)).release["noise_scale"] for r in range(reps)]
    return np.stack(captured), scales[0]


def test_mod_sulq_noise_has_variance_beta_squared(monkeypatch, small_data):
    """Added noise N = (A+N) − A: symmetric, entries (diagonal too) i.i.d. N(0, β²).
    100 draws x 36 upper entries = 3,600 samples: KS test of N/β against N(0,1) at alpha = 1e-3,
    and the variance within 10% (relative s.e. sqrt(2/3600) = 2.4%)."""
    X = small_data
    eps, delta = 0.3, 0.05
    noisy, beta = _capture_noise(
        monkeypatch,
        ms_module,
        X,
        lambda r: ms_module.mod_sulq(X, 2, epsilon=eps, delta=delta, rng=r),
        100,
    )
    assert beta == pytest.approx(mod_sulq_noise_scale(X.shape[0], X.shape[1], eps, delta))
    N = noisy - second_moment(X)
    assert np.allclose(N, N.transpose(0, 2, 1))
    iu = np.triu_indices(X.shape[1])
    z = N[:, iu[0], iu[1]].ravel() / beta
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert z.var() == pytest.approx(1.0, rel=0.10)


@pytest.mark.parametrize(
    "relation,factor", [("add-remove-one-row", 1.0), ("replace-one-row", math.sqrt(2))]
)
def test_analyze_gauss_noise_scale(monkeypatch, small_data, relation, factor):
    X = small_data
    eps, delta = 0.5, 1e-3
    expected = factor * math.sqrt(2 * math.log(1.25 / delta)) / eps
    assert analyze_gauss_noise_scale(eps, delta, factor) == pytest.approx(expected)
    noisy, scale = _capture_noise(
        monkeypatch,
        ag_module,
        X,
        lambda r: ag_module.analyze_gauss(
            X, 2, epsilon=eps, delta=delta, rng=r, neighbouring=relation
        ),
        100,
    )
    assert scale == pytest.approx(expected)
    N = noisy - X.T @ X
    iu = np.triu_indices(X.shape[1])
    z = N[:, iu[0], iu[1]].ravel() / expected
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert z.var() == pytest.approx(1.0, rel=0.10)


def test_mod_sulq_utility_grows_with_n(rng):
    """Sanity: at large n MOD-SULQ finds the top subspace; at tiny n it does not."""
    from tests.conftest import unit_ball_data

    X = unit_ball_data(200_000, 5, rng, spectrum=[10, 1, 0.1, 0.1, 0.1])
    out = get_mechanism("mod_sulq")(X, 1, epsilon=1.0, delta=0.01, rng=rng)
    A = second_moment(X)
    assert q_F(out.components, A) / optimal_q_F(A, 1) > 0.99


BAD_CASES = [
    ({"X": np.full((5, 3), np.nan)}, "NaN"),
    ({"X": np.ones((5, 3))}, "norm above"),
    ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": -1.0}, "epsilon"),
    ({"epsilon": float("nan")}, "epsilon"),
    ({"delta": 0.0}, "delta"),
    ({"delta": 1.0}, "delta"),
    ({"k": 0}, "k must"),
    ({"k": 3}, "k must"),
    ({"X": np.zeros((0, 3))}, "empty"),
    ({"X": np.zeros(3)}, "2-D"),
    ({"X": np.array([["a", "b"]])}, "numeric"),
]


@pytest.mark.parametrize("name", ["mod_sulq", "analyze_gauss"])
@pytest.mark.parametrize("change,message", BAD_CASES)
def test_bad_input_is_refused(name, change, message):
    args = {"X": np.full((5, 3), 0.1), "k": 2, "epsilon": 0.5, "delta": 0.01}
    args.update(change)
    X, k = args.pop("X"), args.pop("k")
    with pytest.raises(PrivacyInputError, match=message):
        get_mechanism(name)(X, k, rng=np.random.default_rng(0), **args)


def test_analyze_gauss_refuses_epsilon_at_least_one():
    with pytest.raises(PrivacyInputError, match="epsilon must be < 1"):
        get_mechanism("analyze_gauss")(
            np.full((5, 3), 0.1), 1, epsilon=1.0, delta=0.01, rng=np.random.default_rng(0)
        )


def test_clipping_is_recorded():
    X = np.array([[2.0, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 3.0]])
    out = get_mechanism("mod_sulq")(
        X, 1, epsilon=1.0, delta=0.01, rng=np.random.default_rng(0), clip=True
    )
    assert out.diagnostics["n_clipped"] == 2


def test_sparse_input_refused():
    sp = pytest.importorskip("scipy.sparse")
    with pytest.raises(PrivacyInputError, match="sparse"):
        get_mechanism("pca")(sp.csr_matrix(np.eye(3) * 0.5), 1)


def test_prepared_data_caches_second_moment_and_is_read_only(small_data):
    from mechanisms._base import PreparedData

    data = PreparedData(small_data)
    assert second_moment(data.X) is data.A
    assert np.allclose(data.A, small_data.T @ small_data / small_data.shape[0])
    with pytest.raises(ValueError):
        data.X[0, 0] = 1.0
    out_a = get_mechanism("mod_sulq")(
        data, 2, epsilon=0.5, delta=0.01, rng=np.random.default_rng(1)
    )
    out_b = get_mechanism("mod_sulq")(
        small_data, 2, epsilon=0.5, delta=0.01, rng=np.random.default_rng(1)
    )
    assert np.array_equal(out_a.components, out_b.components)
    # a fresh array with the same values is not served from the cache
    assert second_moment(small_data.copy()) is not data.A


def test_prepared_data_is_rechecked_for_a_tighter_row_bound():
    from mechanisms._base import PreparedData, check_data

    data = PreparedData(np.array([[0.9, 0.0], [0.0, 0.2]]))
    assert check_data(data)[0] is data.X
    with pytest.raises(PrivacyInputError, match="norm above the bound 0.5"):
        check_data(data, row_norm_bound=0.5)
    clipped, n = check_data(data, row_norm_bound=0.5, clip=True)
    assert n == 1 and np.linalg.norm(clipped[0]) == pytest.approx(0.5)
