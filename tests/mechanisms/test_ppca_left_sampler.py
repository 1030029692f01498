"""PPCA with ``sampler="left"``: the left Givens chain (mechanisms/bingham/left_givens.py) as an
optional sampler of PPCA's releases (CSS 2013, Algorithm 2), through
``mechanisms.bingham.run_bingham_chains``.

The release's law is compared with exact MACG draws (``mechanisms.bingham.exact``) at the oracle
settings of tests/mechanisms/test_bingham_exact.py, by two-sample Kolmogorov–Smirnov tests at level
ALPHA = 1e-3 per statistic with fixed seeds; the same comparison rejects a release drawn for the
wrong ε (measured p-values in the docstrings).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mechanisms import ChainConvergenceWarning
from mechanisms.bingham import run_bingham_chains
from mechanisms.bingham.left_givens import run_left_givens_chains
from mechanisms.ppca import SAMPLERS, gibbs_convergence_traces, ppca, ppca_restarts
from tests.mechanisms.test_bingham_exact import (
    N_ORACLE,
    ORACLE_SETTINGS,
    _exact_stats,
    _ks_pvalues,
    _oracle_stats,
)

ALPHA = 1e-3

#: rows of the oracle data sets (8 eigen-directions, each repeated REPEAT times)
REPEAT = 125


def _oracle_data(name: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray, int, float]:
    """(X, U, k, ε): data whose PPCA target at ε = 1 is BMF(U diag(λ) Uᵀ) for the oracle setting
    ``name`` (λ, k), U a random rotation (so the sampler works in a basis it has to find).

    X repeats each row c_j u_jᵀ REPEAT times, c_j² = 2 λ_j d / n with n = d·REPEAT rows, so
    XᵀX/n = Σ_j c_j² u_j u_jᵀ / d and B = (n ε / 2)·XᵀX/n = U diag(λ) Uᵀ at ε = 1; every row has
    norm² c_j² ≤ 2·40·8/1,000 < 1."""
    lam, k = ORACLE_SETTINGS[name]
    d = lam.size
    n = d * REPEAT
    U = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))[0]
    rows = np.sqrt(2.0 * lam * d / n)[:, None] * U.T
    X = np.repeat(rows, REPEAT, axis=0)
    return X, U, k, 1.0


def test_oracle_data_has_the_oracle_target():
    """The construction above: (n ε / 2)·XᵀX/n = U diag(λ) Uᵀ to rounding (1e-12 relative), rows of
    norm ≤ 1."""
    for name in ORACLE_SETTINGS:
        X, U, _k, eps = _oracle_data(name)
        lam = ORACLE_SETTINGS[name][0]
        n = X.shape[0]
        B = n * eps / 2.0 * (X.T @ X / n)
        np.testing.assert_allclose(B, U @ np.diag(lam) @ U.T, atol=1e-12 * lam.max())
        assert np.linalg.norm(X, axis=1).max() <= 1.0


def _left_release_stats(name: str, epsilon_factor: float = 1.0, seed: int = 3) -> dict:
    """N_ORACLE independent PPCA releases with sampler="left" (20 iterations, restarts as chains: each
    release is one chain's final state), mapped to B's eigen-coordinates, their oracle statistics for
    the true B.  ``epsilon_factor`` scales ε (and so B) for the power check."""
    X, U, k, eps = _oracle_data(name)
    lam = ORACLE_SETTINGS[name][0]
    outs = ppca_restarts(
        X,
        k,
        epsilon=eps * epsilon_factor,
        rngs=[np.random.default_rng([seed, r]) for r in range(N_ORACLE)],
        sampler="left",
        iterations=20,
        warn=False,
    )
    V = np.stack([U.T @ o.components for o in outs])
    return _oracle_stats(V, lam, k)


@pytest.mark.parametrize("name", sorted(ORACLE_SETTINGS))
def test_left_release_law_matches_exact_draws(name):
    """3,000 PPCA releases (sampler "left", 1 left sweep per iteration, 20 iterations from Haar
    starts) against 3,000 exact MACG draws of the same BMF(B): KS of q_F and of each principal
    angle's squared cosine with the top-k eigenvectors, each at level ALPHA (measured smallest p:
    0.058 on d8k2, 0.26 on d8k3).  The releases are taken in the data's coordinates and mapped back
    by the rotation U: the same releases with the chain's rows left in its decreasing order (frames
    not mapped back to the eigensolver's order) give p = 0 in double precision on both settings."""
    p = _ks_pvalues(_exact_stats(name), _left_release_stats(name))
    assert min(p.values()) > ALPHA, p


@pytest.mark.parametrize("name", sorted(ORACLE_SETTINGS))
def test_oracle_rejects_left_releases_for_the_wrong_epsilon(name):
    """Power: releases drawn at 1.2·ε (target BMF(1.2·B)) are rejected at level ALPHA by the same
    comparison (measured smallest p: 1.4e-48 on d8k2, 2.8e-56 on d8k3)."""
    p = _ks_pvalues(_exact_stats(name), _left_release_stats(name, epsilon_factor=1.2))
    assert min(p.values()) < ALPHA, p


def _easy_data(seed: int = 7, n: int = 400, d: int = 12) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.linspace(2.0, 0.1, d)
    return X / np.linalg.norm(X, axis=1).max()


def test_left_release_is_a_frame_and_records_its_sampler():
    """A release with sampler="left" is an orthonormal d × k frame (to 1e-12), names its sampler and
    sweeps per iteration in the release (1 by default, as set otherwise), and carries the nominal
    MCMC guarantee whose note names the sampler."""
    X = _easy_data()
    out = ppca(X, 3, epsilon=1.0, rng=np.random.default_rng(1), sampler="left", iterations=400)
    V = out.components
    assert V.shape == (12, 3)
    np.testing.assert_allclose(V.T @ V, np.eye(3), atol=1e-12)
    assert out.release["sampler"] == "left"
    assert out.release["sweeps_per_iteration"] == 1
    assert out.release["n_chains"] == 4 and out.release["released_chain"] == 0
    assert out.guarantee.exact is False and out.guarantee.status == "nominal (MCMC)"
    assert "(left," in out.guarantee.note
    out3 = ppca(
        X,
        3,
        epsilon=1.0,
        rng=np.random.default_rng(1),
        sampler="left",
        iterations=50,
        sweeps_per_iteration=3,
        warn=False,
    )
    assert out3.release["sweeps_per_iteration"] == 3
    assert "left" in SAMPLERS
    with pytest.raises(ValueError, match="unknown sampler"):
        ppca(X, 3, epsilon=1.0, rng=np.random.default_rng(1), sampler="lefty")


def test_left_release_converges_on_an_easy_problem():
    """d = 12, k = 3, n = 400, ε = 1 (n·ε/2·λ₁ = 12.6): 4 chains × 2,000 iterations pass the
    release's rule (split-R̂ < 1.01 and bulk-ESS ≥ 400) without a warning (measured R̂ 1.0001, ESS
    5,324 of 4,000 draws).  The rule can fail: 8
    iterations (4 draws per chain after burn-in) do not pass it and warn."""
    X = _easy_data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ChainConvergenceWarning)
        out = ppca(X, 3, epsilon=1.0, rng=np.random.default_rng(2), sampler="left", iterations=2000)
    diag = out.diagnostics
    assert diag["converged"] is True
    assert diag["rhat"] < diag["rhat_threshold"] and diag["ess"] >= diag["min_ess"] == 400
    with pytest.warns(ChainConvergenceWarning, match="PPCA left sampler did NOT pass"):
        short = ppca(X, 3, epsilon=1.0, rng=np.random.default_rng(2), sampler="left", iterations=8)
    assert short.diagnostics["converged"] is False


def test_left_restart_is_its_single_chain_release():
    """Restart r of a group is bit for bit the single-chain release with its generator (the property
    the grouped releases of Figures 3-4 rely on), for the left chain as for the Givens chain."""
    X = _easy_data(n=300)
    group = ppca_restarts(
        X,
        3,
        epsilon=1.0,
        rngs=[np.random.default_rng(s) for s in (10, 11, 12)],
        sampler="left",
        iterations=200,
        warn=False,
    )
    alone = ppca(
        X,
        3,
        epsilon=1.0,
        rng=np.random.default_rng(11),
        sampler="left",
        iterations=200,
        n_chains=1,
        warn=False,
    )
    np.testing.assert_array_equal(group[1].components, alone.components)
    assert group[1].release["sampler"] == "left"


def test_driver_runs_the_chains_of_run_left_givens_chains():
    """run_bingham_chains(sampler="left") is the chain of run_left_givens_chains bit for bit: for
    eigenvalues in increasing order (as PPCA passes them) its frames are the study's, run on the
    decreasing order, with the rows reversed; its energy traces are equal; summing frames for F_k
    (track_F) and re-orthonormalising mid-chunk change nothing."""
    b = np.sort(np.random.default_rng(1).uniform(0.0, 30.0, 10))
    kw = dict(n_chains=3, iterations=250)
    for reorth in (1000, 70):
        ours = run_bingham_chains(
            b,
            3,
            rng=np.random.default_rng(2),
            sampler="left",
            track_F=False,
            reorth_every=reorth,
            **kw,
        )
        study = run_left_givens_chains(
            b[::-1], 3, rng=np.random.default_rng(2), reorth_every=reorth, **kw
        )
        np.testing.assert_array_equal(ours["V"], study["V"][:, ::-1])
        np.testing.assert_array_equal(ours["energy"], study["energy"])
        assert ours["sweeps_per_iteration"] == 1 and ours["sampler"] == "left"
        tracked = run_bingham_chains(
            b,
            3,
            rng=np.random.default_rng(2),
            sampler="left",
            track_F=True,
            record_every=50,
            reorth_every=reorth,
            **kw,
        )
        np.testing.assert_array_equal(tracked["V"], ours["V"])
        assert tracked["F"].shape == (3, 5) and np.all((tracked["F"] > 0) & (tracked["F"] <= 1))


def test_driver_left_with_ties_and_a_given_start():
    """Tied eigenvalues (B's null space) and an ``init`` frame in the caller's coordinates: the driver
    sorts stably, maps ``init`` into that order and the result back, so a chain started from the
    frame is the study's chain started from the same frame in decreasing order."""
    b = np.array([0.0, 0.0, 0.0, 4.0, 9.0, 9.0, 25.0])
    order = np.argsort(-b, kind="stable")
    init = np.linalg.qr(np.random.default_rng(5).standard_normal((2, 7, 2)))[0]
    ours = run_bingham_chains(
        b, 2, rng=np.random.default_rng(6), sampler="left", n_chains=2, iterations=40, init=init
    )
    study = run_left_givens_chains(
        b[order],
        2,
        rng=np.random.default_rng(6),
        n_chains=2,
        iterations=40,
        init=init[:, order],
    )
    np.testing.assert_array_equal(ours["V"][:, order], study["V"])
    np.testing.assert_array_equal(ours["energy"], study["energy"])


def test_figure2_traces_run_the_left_chain():
    """gibbs_convergence_traces accepts sampler="left" and records it with its sweeps."""
    X = _easy_data()
    A = X.T @ X / X.shape[0]
    res = gibbs_convergence_traces(
        A,
        X.shape[0],
        1.0,
        3,
        n_chains=3,
        iterations=300,
        rng=np.random.default_rng(4),
        sampler="left",
    )
    assert res["sampler"] == "left" and res["sweeps_per_iteration"] == 1
    assert res["log_F"].shape == (3, 3) and res["q_F"].shape == (3, 300)
    assert np.all(np.isfinite(res["log_F"]))


def test_left_run_key_differs_from_gibbs():
    """The sampler is a keyed mechanism parameter: a PPCA run with sampler=left has another run key
    than the same run with gibbs or the default auto, also for a release of a restarts-as-chains
    group; the command line accepts the choice."""
    from experiments.app.schema import check_mechanism_options
    from experiments.runs.ppca_groups import group_key
    from experiments.store.records import run_key
    from tests.hydra_helpers import compose_cfg

    base = ["experiment=utility_vs_n", "dataset=census", "mechanism=ppca", "scale=paper"]
    keys, group_keys = {}, {}
    for sampler in ("auto", "gibbs", "left"):
        overrides = base + [f"mechanism.fn.sampler={sampler}"]
        cfg = compose_cfg(overrides)
        check_mechanism_options(cfg, overrides)
        keys[sampler] = run_key(cfg)
        group_keys[sampler] = group_key(cfg, 1000, 0, 0)
    assert keys["left"]["mechanism_params"]["sampler"] == "left"
    assert keys["left"] != keys["gibbs"] and keys["left"] != keys["auto"]
    assert group_keys["left"] != group_keys["gibbs"] and group_keys["left"] != group_keys["auto"]
