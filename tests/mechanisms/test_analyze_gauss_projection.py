"""Analyze Gauss with NTZ13's projection mechanism (``postprocess="projection"``).

* The Frobenius projection onto K = {S ⪰ 0, tr S ≤ 1} (:func:`project_psd_trace_ball`) is checked
  against a generic conic solver (clarabel, the SDP written out) on small cases, against the KKT
  conditions of its eigenvalue step, and against the properties any projection onto a closed convex
  set has: the result is in K, it is idempotent, non-expansive, and satisfies the variational
  inequality ⟨M − P(M), S − P(M)⟩ ≤ 0 for every S ∈ K.
* The option is post-processing: the guarantee is the same object, the noise scale the same, and the
  released components are bit for bit those of ``postprocess="none"`` (the projection never reorders
  eigenvectors), also when the projection has rank below k.
* The run key of the default configuration has no ``postprocess`` (old records keep their ids); the
  option is reachable from Hydra.
"""

from __future__ import annotations

import math
from pathlib import Path

import clarabel
import numpy as np
import pytest
import yaml
from scipy import sparse

from experiments.store.compat import keyed_mechanism_params
from mechanisms import PrivacyInputError
from mechanisms.analyze_gauss import (
    analyze_gauss,
    project_onto_capped_simplex,
    project_psd_trace_ball,
)

ROOT = Path(__file__).resolve().parents[2]


def _random_symmetric(rng, d, scale=1.0, shift=0.0):
    G = rng.standard_normal((d, d)) * scale
    return (G + G.T) / 2 + shift * np.eye(d)


def _cases(seed=0, count=12):
    """Symmetric matrices inside K, with trace above 1, with negative eigenvalues, and with both."""
    rng = np.random.default_rng(seed)
    out = []
    for j in range(count):
        d = 2 + j % 4
        kind = j % 4
        if kind == 0:  # inside K: a second moment of rows in the unit ball
            X = rng.standard_normal((7, d))
            X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0) * 1.5
            out.append(X.T @ X / 7)
        elif kind == 1:  # PSD, trace above 1
            G = rng.standard_normal((d, d))
            out.append(G @ G.T)
        elif kind == 2:  # indefinite, small
            out.append(_random_symmetric(rng, d, 0.3))
        else:  # indefinite, large
            out.append(_random_symmetric(rng, d, 3.0, shift=1.0))
    return out


def _svec_index(d):
    """Clarabel's PSD triangle order: the upper triangle by columns, off-diagonals scaled by √2."""
    return [(i, j) for j in range(d) for i in range(j + 1)]


def _clarabel_projection(M):
    """argmin ‖S − M‖_F² subject to S ⪰ 0 and tr S ≤ 1, solved as a conic QP by clarabel on the
    scaled half-vectorisation s = svec(S) (‖S‖_F = ‖s‖₂)."""
    d = M.shape[0]
    idx = _svec_index(d)
    scale = np.array([1.0 if i == j else math.sqrt(2.0) for i, j in idx])
    m = np.array([M[i, j] for i, j in idx]) * scale
    p = len(idx)
    P = sparse.csc_matrix(2.0 * np.eye(p))
    q = -2.0 * m
    trace_row = np.array([1.0 if i == j else 0.0 for i, j in idx])
    A = sparse.csc_matrix(np.vstack([trace_row, -np.eye(p)]))
    b = np.concatenate([[1.0], np.zeros(p)])
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-10
    solver = clarabel.DefaultSolver(
        P, q, A, b, [clarabel.NonnegativeConeT(1), clarabel.PSDTriangleConeT(d)], settings
    )
    sol = solver.solve()
    assert str(sol.status) == "Solved", sol.status
    s = np.asarray(sol.x) / scale
    S = np.zeros((d, d))
    for (i, j), v in zip(idx, s):
        S[i, j] = S[j, i] = v
    return S


# ---------------------------------------------------------------------------------------------
# The projection
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("j", range(12))
def test_projection_matches_a_conic_solver(j):
    """Closed form against clarabel's interior-point solution of the SDP (tolerance 1e-6 in
    Frobenius norm: the solver's, set to 1e-10 on the gap and feasibility)."""
    M = _cases()[j]
    P = project_psd_trace_ball(M)
    S = _clarabel_projection(M)
    assert np.linalg.norm(P - S) <= 1e-6, (P, S)


def test_capped_simplex_satisfies_its_kkt_conditions():
    """μ = max(λ − τ, 0) with τ ≥ 0, Σμ ≤ r, and τ > 0 only when Σμ = r (to 1e-12 relative)."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        m = int(rng.integers(1, 9))
        lam = rng.standard_normal(m) * rng.choice([0.1, 1.0, 10.0])
        r = float(rng.choice([0.5, 1.0, 3.0]))
        mu, tau = project_onto_capped_simplex(lam, r)
        assert tau >= 0
        np.testing.assert_array_equal(mu, np.maximum(lam - tau, 0.0))
        assert mu.sum() <= r * (1 + 1e-12)
        if tau > 0:
            assert mu.sum() == pytest.approx(r, rel=1e-12)
        else:
            assert np.maximum(lam, 0).sum() <= r


def test_capped_simplex_matches_brute_force_on_its_support():
    """The optimum over every candidate support set (the KKT solution restricted to it, kept when
    feasible) equals the sort-based answer: an independent check of τ."""
    import itertools

    rng = np.random.default_rng(5)
    for _ in range(100):
        lam = rng.standard_normal(5) * 2
        best, best_val = None, math.inf
        for size in range(0, 6):
            for supp in itertools.combinations(range(5), size):
                for capped in (False, True):
                    mu = np.zeros(5)
                    s = list(supp)
                    if capped and s:
                        t = (lam[s].sum() - 1.0) / len(s)
                        if t < 0:
                            continue
                        mu[s] = lam[s] - t
                    else:
                        mu[s] = lam[s]
                    if np.any(mu < -1e-12) or mu.sum() > 1 + 1e-12:
                        continue
                    val = float(np.sum((mu - lam) ** 2))
                    if val < best_val:
                        best, best_val = mu, val
        got, _ = project_onto_capped_simplex(lam, 1.0)
        np.testing.assert_allclose(got, best, atol=1e-12)


def test_projection_properties():
    """In K, idempotent, fixed on K, non-expansive, and the variational inequality of a projection
    (tolerances 1e-12, floating point only)."""
    rng = np.random.default_rng(11)
    for _ in range(100):
        d = int(rng.integers(2, 7))
        M = _random_symmetric(rng, d, float(rng.choice([0.1, 1.0, 5.0])))
        N = _random_symmetric(rng, d, float(rng.choice([0.1, 1.0, 5.0])))
        P = project_psd_trace_ball(M)
        assert np.linalg.eigvalsh(P).min() >= -1e-12 and np.trace(P) <= 1 + 1e-12
        np.testing.assert_allclose(project_psd_trace_ball(P), P, atol=1e-12)
        PN = project_psd_trace_ball(N)
        assert np.linalg.norm(P - PN) <= np.linalg.norm(M - N) + 1e-12
        for _ in range(5):  # points of K: convex combinations of xxᵀ, ‖x‖ ≤ 1
            X = rng.standard_normal((3, d))
            X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
            w = rng.dirichlet(np.ones(4))[:3]
            S = (X.T * w) @ X
            assert np.sum((M - P) * (S - P)) <= 1e-12
    X = np.random.default_rng(2).standard_normal((9, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    A = X.T @ X / 9  # a second moment of unit rows: trace 1, in K
    np.testing.assert_allclose(project_psd_trace_ball(A), A, atol=1e-12)


def test_projection_refuses_a_bad_radius():
    with pytest.raises(ValueError):
        project_onto_capped_simplex([1.0, 2.0], 0.0)
    with pytest.raises(ValueError):
        project_onto_capped_simplex([np.nan], 1.0)


# ---------------------------------------------------------------------------------------------
# The option in the mechanism
# ---------------------------------------------------------------------------------------------


def _byte_sorted(X):
    X = np.ascontiguousarray(X, dtype=np.float64)
    keys = X.view(np.dtype((np.void, X.dtype.itemsize * X.shape[1]))).ravel()
    return X[np.argsort(keys, kind="stable")]


def _data(n=40, d=6, seed=1):
    X = np.random.default_rng(seed).standard_normal((n, d)) * np.linspace(1.0, 0.2, d)
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)


SETTINGS = [
    dict(epsilon=0.5, delta=1e-5),
    dict(epsilon=0.5, delta=1e-5, neighbouring="replace-one-row"),
    dict(epsilon=3.0, delta=1e-5, calibration="tight"),
    dict(epsilon=0.05, delta=1e-5),  # noise >> signal: the projection has rank below k
]


@pytest.mark.parametrize("params", SETTINGS)
def test_projection_keeps_the_guarantee_and_the_components(params):
    """The guarantee is equal as an object, the noise scale the same, and the components equal bit for
    bit (the rows given in byte order, the order the projection path sums them in)."""
    X = _byte_sorted(_data())
    for seed in range(5):
        none = analyze_gauss(X, 3, rng=np.random.default_rng(seed), **params)
        proj = analyze_gauss(
            X, 3, rng=np.random.default_rng(seed), postprocess="projection", **params
        )
        assert proj.guarantee == none.guarantee
        assert proj.release == {**none.release, "postprocess": "projection"}
        assert proj.components.tobytes() == none.components.tobytes()
        assert proj.diagnostics["n_clipped"] == none.diagnostics["n_clipped"]
        assert proj.diagnostics["projection_threshold"] >= 0


def test_projection_with_rank_below_k_breaks_ties_by_the_noisy_order():
    """At ε = 0.05 on 40 rows the noise dominates: the projection of noisy/n onto K keeps fewer than
    k = 3 positive eigenvalues in every one of these runs, and the released subspace is still the noisy
    matrix's top 3 (bit for bit, previous test)."""
    X = _byte_sorted(_data())
    ranks = [
        analyze_gauss(
            X, 3, epsilon=0.05, delta=1e-5, rng=np.random.default_rng(s), postprocess="projection"
        ).diagnostics["projected_rank"]
        for s in range(5)
    ]
    assert max(ranks) < 3, ranks


def test_projection_output_does_not_depend_on_row_order_and_is_reproducible():
    X = _data(seed=4)
    ref = analyze_gauss(
        X, 2, epsilon=0.5, delta=1e-5, rng=np.random.default_rng(9), postprocess="projection"
    )
    for seed in range(3):
        perm = np.random.default_rng(seed).permutation(X.shape[0])
        out = analyze_gauss(
            X[perm],
            2,
            epsilon=0.5,
            delta=1e-5,
            rng=np.random.default_rng(9),
            postprocess="projection",
        )
        assert out.components.tobytes() == ref.components.tobytes()
        assert out.release == ref.release and out.diagnostics == ref.diagnostics
    other = analyze_gauss(
        X, 2, epsilon=0.5, delta=1e-5, rng=np.random.default_rng(10), postprocess="projection"
    )
    assert other.components.tobytes() != ref.components.tobytes()


@pytest.mark.parametrize("bad", ["Projection", "clip", None, 1])
def test_unknown_postprocessing_is_refused_in_one_line(bad):
    X = _data()
    with pytest.raises(PrivacyInputError) as exc:
        analyze_gauss(X, 2, epsilon=0.5, delta=1e-5, rng=np.random.default_rng(0), postprocess=bad)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("postprocess must be one of")


# ---------------------------------------------------------------------------------------------
# Run keys and Hydra
# ---------------------------------------------------------------------------------------------


def test_default_config_keeps_the_run_key_of_earlier_records():
    """conf/mechanism/analyze_gauss.yaml's postprocess is the unkeyed default: its run key's parameters
    are those of a record written before the option existed."""
    fn = yaml.safe_load((ROOT / "conf" / "mechanism" / "analyze_gauss.yaml").read_text())["fn"]
    assert fn["postprocess"] == "none" and fn["calibration"] == "paper"
    assert set(keyed_mechanism_params(fn)) == {"epsilon", "delta", "neighbouring"}
    assert (
        keyed_mechanism_params({**fn, "postprocess": "projection"})["postprocess"] == "projection"
    )


def test_projection_is_configurable_from_hydra():
    from hydra.utils import instantiate

    from tests.hydra_helpers import compose_cfg

    cfg = compose_cfg(
        ["mechanism=analyze_gauss", "epsilon=0.5", "mechanism.fn.postprocess=projection"]
    )
    fn = instantiate(cfg.mechanism.fn)
    out = fn(_data(), 2, rng=np.random.default_rng(0))
    assert out.release["postprocess"] == "projection"
