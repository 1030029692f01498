"""ppca_restarts: the restarts of one (n, subset) run as the chains of one call."""

import warnings

import numpy as np
import pytest

from mechanisms._base import PreparedData, check_data, second_moment
from mechanisms.bingham import run_bingham_chains, sample_vector_bingham
from mechanisms.diagnostics import summarize_chains
from mechanisms.ppca import _bmf_target, ppca, ppca_restarts


def _data(n=400, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.linspace(2.0, 0.3, d)
    return X / np.linalg.norm(X, axis=1, keepdims=True).max()


@pytest.mark.parametrize("sampler,sweeps", [("gibbs", None), ("gibbs", 1), ("reference", None)])
def test_each_restart_is_bit_identical_to_a_single_chain_release(sampler, sweeps):
    # the property that makes every restart record keep its own guarantee: restart r IS the
    # single-chain release with stream r (same final state, bit for bit), whatever the other restarts
    X = PreparedData(_data())
    streams = [[7, 1, 0, r] for r in range(3)]
    outs = ppca_restarts(
        X,
        2,
        epsilon=1.0,
        rngs=[np.random.default_rng(s) for s in streams],
        sampler=sampler,
        iterations=40,
        progress=False,
        warn=False,
        sweeps_per_iteration=sweeps,
    )
    assert len(outs) == 3
    for r, (s, out) in enumerate(zip(streams, outs)):
        single = ppca(
            X,
            2,
            epsilon=1.0,
            rng=np.random.default_rng(s),
            sampler=sampler,
            iterations=40,
            n_chains=1,
            progress=False,
            warn=False,
            sweeps_per_iteration=sweeps,
        )
        assert np.array_equal(out.components, single.components)
        assert out.release["restart_index"] == r and out.release["restarts_in_group"] == 3
        if sampler == "gibbs":
            assert out.release["sweeps_per_iteration"] == (sweeps or 2)
        assert (
            out.guarantee.epsilon == 1.0 and out.guarantee.delta == 0.0 and not out.guarantee.exact
        )
        # the same release and guarantee status as the single-chain release (only the restart
        # bookkeeping is added); the guarantee does not depend on the data
        assert {
            k: v for k, v in out.release.items() if k not in ("restart_index", "restarts_in_group")
        } == single.release
        assert out.guarantee.status == single.guarantee.status == "nominal (MCMC)"
    # a group of one (resume of a single missing restart) gives the same release as well
    alone = ppca_restarts(
        X,
        2,
        epsilon=1.0,
        rngs=[np.random.default_rng(streams[1])],
        sampler=sampler,
        iterations=40,
        progress=False,
        warn=False,
        sweeps_per_iteration=sweeps,
    )[0]
    assert np.array_equal(alone.components, outs[1].components)


def test_restarts_are_distinct_and_diagnosed_across_their_chains():
    X = PreparedData(_data())
    rngs = [np.random.default_rng([3, r]) for r in range(4)]
    outs = ppca_restarts(
        X, 2, epsilon=1.0, rngs=rngs, sampler="gibbs", iterations=400, progress=False
    )
    V = [o.components for o in outs]
    for i in range(4):
        assert np.allclose(V[i].T @ V[i], np.eye(2), atol=1e-12)
        for j in range(i):
            assert not np.allclose(V[i], V[j])
    # the recorded diagnostics are those of the 4 restart chains' q_F traces (recomputed here)
    # B's eigenvalues exactly as the mechanism computes them (the chains amplify a 1e-17 difference)
    _, _, _, _, scale, evals_B, _, _ = _bmf_target(
        second_moment(check_data(X)[0]), X.shape[0], 2, 1.0, "gibbs", "uniform"
    )
    traces = [
        run_bingham_chains(
            evals_B,
            2,
            rng=np.random.default_rng([3, r]),
            n_chains=1,
            iterations=400,
            progress=False,
            track_F=False,
        )["energy"][0, 200:]
        / scale
        for r in range(4)
    ]
    diag = summarize_chains(np.stack(traces))
    assert outs[0].diagnostics["rhat"] == pytest.approx(diag["rhat"], rel=1e-9)
    assert outs[0].diagnostics["ess"] == pytest.approx(diag["ess"], rel=1e-9)
    assert all(o.diagnostics["diagnosed_chains"] == 4 for o in outs)


def test_non_converged_group_warns_and_records():
    X = PreparedData(_data(n=5000))
    with pytest.warns(RuntimeWarning, match="did NOT pass"):
        outs = ppca_restarts(
            X,
            2,
            epsilon=1.0,
            rngs=[np.random.default_rng(r) for r in range(2)],
            sampler="gibbs",
            iterations=8,
            progress=False,
        )
    assert all(o.diagnostics["converged"] is False for o in outs)


def test_final_states_follow_the_exact_law_k1():
    # k = 1, d = 3: the final states of 1,500 restarts (30 iterations each) against the exact ACG
    # sampler.  E[x_i²] per coordinate: 1,500 draws of x_i² ∈ [0, 1] give a standard error ≤ 0.013;
    # tolerance 0.05 (~4 SE).  A chain that had not moved (uniform law: 1/3 each) or a wrong
    # conditional (e.g. no tilt) misses the exact values (≈ 0.82, 0.15, 0.03) by ≥ 0.3.
    b = np.array([2.0, 0.0, -2.0])
    rngs = [np.random.default_rng([11, r]) for r in range(1500)]
    outs = ppca_restarts_from_diag(b, rngs)
    x2 = np.array([(o.components[:, 0] ** 2) for o in outs])
    exact = sample_vector_bingham(np.diag(b), size=200_000, rng=np.random.default_rng(5)) ** 2
    assert np.abs(x2.mean(axis=0) - exact.mean(axis=0)).max() < 0.05


def ppca_restarts_from_diag(b, rngs):
    from mechanisms.ppca import ppca_restarts_from_second_moment

    # A = diag(b)/scale with n·ε/2 = 1 (n = 2, ε = 1): B = diag(b) exactly
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return ppca_restarts_from_second_moment(
            np.diag(b), 2, 1, epsilon=1.0, rngs=rngs, sampler="gibbs", iterations=30, progress=False
        )


def test_bad_arguments():
    X = PreparedData(_data())
    with pytest.raises(ValueError, match="at least one"):
        ppca_restarts(X, 2, epsilon=1.0, rngs=[], sampler="gibbs")
    with pytest.raises(ValueError, match="n_chains"):
        ppca_restarts(X, 2, epsilon=1.0, rngs=[np.random.default_rng(0)], n_chains=4)
    with pytest.raises(ValueError, match="uniform"):
        ppca_restarts(X, 2, epsilon=1.0, rngs=[np.random.default_rng(0)], start="pca")
