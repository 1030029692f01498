from __future__ import annotations

import numpy as np
import pytest

from mechanisms._base import PrivacyInputError
from mechanisms.metrics import q_F
from mechanisms.ppca import gibbs_convergence_traces, ppca
from mechanisms.ppca_iterative import ppca_iterative


def _data(n=3000, d=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.linspace(3, 0.3, d)
    X /= np.linalg.norm(X, axis=1).max()
    return X


def test_ppca_k1_exact_guarantee_and_info():
    X = _data()
    out = ppca(X, 1, epsilon=0.5, rng=np.random.default_rng(1))
    g = out.guarantee
    assert (g.epsilon, g.delta, g.neighbouring, g.exact) == (0.5, 0.0, "replace-one-row", True)
    assert out.components.shape == (8, 1)
    assert abs(np.linalg.norm(out.components) - 1) < 1e-10
    rel, diag = out.release, out.diagnostics
    assert rel["sampler"] == "exact" and rel["status"] == "ok" and g.status == "proven"
    assert diag["converged"] is None and diag["rhat"] is None
    assert diag["n_clipped"] == 0 and 0 < diag["acceptance_rate"] <= 1 and diag["proposals"] >= 1
    A = X.T @ X / X.shape[0]
    assert diag["concentration"] == pytest.approx(X.shape[0] * 0.25 * np.linalg.eigvalsh(A)[-1])
    # nothing computed from the raw data is in the release
    for key in ("concentration", "acceptance_rate", "proposals", "n_clipped", "n", "seconds"):
        assert key not in rel


def test_ppca_gibbs_guarantee_info_orthonormal_deterministic():
    X = _data()
    kw = dict(epsilon=1.0, iterations=600, n_chains=3, progress=False)
    out1 = ppca(X, 3, rng=np.random.default_rng(2), **kw)
    out2 = ppca(X, 3, rng=np.random.default_rng(2), **kw)
    np.testing.assert_array_equal(out1.components, out2.components)
    V = out1.components
    assert V.shape == (8, 3)
    assert np.abs(V.T @ V - np.eye(3)).max() < 1e-10
    g = out1.guarantee
    assert (g.epsilon, g.delta, g.neighbouring, g.exact) == (1.0, 0.0, "replace-one-row", False)
    assert "MCMC" in g.note and g.status == "nominal (MCMC)"
    for key in ("sampler", "iterations", "burn_in", "n_chains"):
        assert key in out1.release
    for key in ("converged", "rhat", "ess", "n_clipped", "concentration", "q_F_trace_mean"):
        assert key in out1.diagnostics and key not in out1.release
    # the guarantee (part of the release) does not quote the data-dependent R-hat / ESS
    for value in (out1.diagnostics["rhat"], out1.diagnostics["ess"]):
        assert f"{value:.6f}" not in g.note and f"{value:.3f}" not in g.note
    assert "converged=" not in g.note
    assert out1.release["sampler"] == "gibbs" and out1.release["iterations"] == 600
    assert out1.diagnostics["converged"] is True


def test_ppca_reference_sampler_runs():
    X = _data(d=6)
    out = ppca(
        X,
        2,
        epsilon=1.0,
        rng=np.random.default_rng(3),
        sampler="reference",
        iterations=60,
        n_chains=2,
        progress=False,
        warn=False,
    )
    assert out.release["sampler"] == "reference"
    assert np.abs(out.components.T @ out.components - np.eye(2)).max() < 1e-10


def test_ppca_nonconverged_warns():
    X = _data()
    with pytest.warns(RuntimeWarning, match="did NOT pass convergence"):
        out = ppca(
            X,
            3,
            epsilon=1.0,
            rng=np.random.default_rng(4),
            iterations=8,
            n_chains=2,
            progress=False,
        )
    assert out.diagnostics["converged"] is False


def test_ppca_validation():
    X = _data()
    rng = np.random.default_rng(5)
    with pytest.raises(PrivacyInputError):
        ppca(X * 2, 2, epsilon=1.0, rng=rng)
    with pytest.raises(PrivacyInputError):
        ppca(X, 8, epsilon=1.0, rng=rng)
    with pytest.raises(PrivacyInputError):
        ppca(X, 2, epsilon=0.0, rng=rng)
    with pytest.raises(ValueError):
        ppca(X, 2, epsilon=1.0, rng=rng, sampler="exact")
    with pytest.raises(ValueError):
        ppca(X, 2, epsilon=1.0, rng=rng, sampler="nope")
    out = ppca(X * 2, 1, epsilon=1.0, rng=rng, clip=True)
    assert out.diagnostics["n_clipped"] > 0


def test_ppca_high_concentration_utility():
    """At n ε/2 λ₁ ~ 1e4 the released subspace captures nearly all of the optimal energy."""
    X = _data(n=20000)
    out = ppca(
        X,
        2,
        epsilon=1.0,
        rng=np.random.default_rng(6),
        iterations=400,
        n_chains=2,
        progress=False,
        warn=False,
    )
    A = X.T @ X / X.shape[0]
    w = np.linalg.eigvalsh(A)[::-1]
    assert q_F(out.components, A) > 0.97 * w[:2].sum()


def test_ppca_iterative_guarantee_and_split():
    X = _data()
    out = ppca_iterative(X, 3, epsilon=0.9, rng=np.random.default_rng(7))
    g = out.guarantee
    assert (g.epsilon, g.delta, g.neighbouring, g.exact) == (0.9, 0.0, "replace-one-row", True)
    assert out.release["epsilon_per_step"] == pytest.approx([0.3, 0.3, 0.3])
    assert sum(out.release["epsilon_per_step"]) == pytest.approx(0.9)
    A = X.T @ X / X.shape[0]
    assert out.diagnostics["concentration"] == pytest.approx(
        X.shape[0] * 0.15 * np.linalg.eigvalsh(A)[-1]
    )
    V = out.components
    assert np.abs(V.T @ V - np.eye(3)).max() < 1e-10
    out2 = ppca_iterative(X, 3, epsilon=0.9, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(V, out2.components)


def test_ppca_iterative_k1_equals_ppca_law():
    """k = 1: iterative PPCA is the same exact draw as PPCA (same ε, same law): E[q_F] agree."""
    X = _data(n=300, d=4)
    A = X.T @ X / X.shape[0]
    rng = np.random.default_rng(8)
    a = np.array(
        [q_F(ppca_iterative(X, 1, epsilon=0.05, rng=rng).components, A) for _ in range(1500)]
    )
    b = np.array([q_F(ppca(X, 1, epsilon=0.05, rng=rng).components, A) for _ in range(1500)])
    assert abs(a.mean() - b.mean()) < 5 * np.sqrt(a.var() / 1500 + b.var() / 1500)


def test_gibbs_convergence_traces_shapes():
    X = _data()
    A = X.T @ X / X.shape[0]
    res = gibbs_convergence_traces(
        A,
        X.shape[0],
        0.5,
        2,
        n_chains=3,
        iterations=500,
        rng=np.random.default_rng(9),
        record_every=50,
        progress=False,
    )
    assert res["log_F"].shape == (3, 10) and res["T"][-1] == 500
    assert res["q_F"].shape == (3, 500)
    assert np.all(np.isfinite(res["log_F"]))
    assert res["log_F"][:, -1].mean() < res["log_F"][:, 0].mean()


def test_progress_disabled_in_ci(monkeypatch):
    from experiments.runs.progress import progress_enabled

    monkeypatch.setenv("CI", "1")
    assert progress_enabled(None) is False
    assert progress_enabled(True) is True


def test_library_reads_no_environment():
    # whether to show progress (CI, a terminal) is the experiments layer's decision, never the library's
    import re
    from pathlib import Path

    lib = Path(__file__).resolve().parents[2] / "mechanisms"
    offenders = [
        f"{p.name}:{i}"
        for p in sorted(lib.rglob("*.py"))
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"os\.environ|getenv|isatty", line)
    ]
    assert not offenders, offenders


def test_chain_progress_is_reported_to_a_callback():
    from mechanisms.bingham import run_bingham_chains

    seen = []
    run_bingham_chains(
        np.linspace(2.0, 0.0, 6),
        2,
        rng=np.random.default_rng(0),
        n_chains=2,
        iterations=30,
        record_every=10,
        progress=seen.append,
    )
    assert sum(seen) == 2 * 30 and all(s > 0 for s in seen)


def test_a_bingham_scale_beyond_the_samplers_range_is_refused_not_a_hang():
    """n·ε/2 above MAX_BINGHAM_SCALE used to hang the exact k = 1 sampler (from about 10¹⁸) and the
    Givens chain (from about 10²²): now one PrivacyInputError, with a text that names no count.  At
    the limit itself both samplers still finish."""
    from mechanisms import get_mechanism
    from mechanisms.calibration import MAX_BINGHAM_SCALE

    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 6)) * np.linspace(3, 0.3, 6)
    X /= np.linalg.norm(X, axis=1).max()
    at_limit = 2 * MAX_BINGHAM_SCALE / 500
    for name, k, kw in (
        ("ppca", 1, {}),
        ("ppca", 2, {"iterations": 200}),
        ("ppca_iterative", 2, {}),
    ):
        fn = get_mechanism(name)
        with pytest.raises(PrivacyInputError, match="epsilon too large") as err:
            fn(X, k, rng=np.random.default_rng(1), epsilon=1e300, **kw)
        assert "500" not in str(err.value)
        out = fn(X, k, rng=np.random.default_rng(1), epsilon=at_limit, **kw)
        assert out.components.shape == (6, k)
