"""Every registered mechanism: one shared row-norm check whatever container the data arrive in, and
an output split into the release (what the guarantee covers) and diagnostics (not private)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mechanisms import MECHANISMS, MechanismOutput, PrivacyInputError, get_mechanism
from mechanisms._base import GUARANTEE_STATUSES, NEIGHBOURING_RELATIONS, PreparedData

EPS, DELTA = 0.5, 1e-3

#: cheap parameters for each registered mechanism (a mechanism added to the registry without an
#: entry here fails test_every_mechanism_has_test_parameters)
PARAMS = {
    "pca": {},
    "random": {},
    "mod_sulq": {"epsilon": EPS, "delta": DELTA},
    "analyze_gauss": {"epsilon": EPS, "delta": DELTA},
    "ppca": {"epsilon": EPS, "sampler": "exact"},
    "ppca_iterative": {"epsilon": EPS},
    "amin_cov": {"epsilon": EPS},
    "noisy_power": {"epsilon": EPS, "delta": DELTA},
    "streaming_power": {
        "epsilon": EPS,
        "delta": DELTA,
        "block_size": 4,
    },  # private: rows need norm <= 1
    "online_pca": {"epsilon": EPS, "delta": DELTA},
    "private_sketch": {"epsilon": EPS, "delta": DELTA},
    "subspace_exact": {"epsilon": EPS, "delta": DELTA},
    "subspace_approx": {"epsilon": EPS, "delta": DELTA},
    "dp_pca": {"epsilon": EPS, "delta": DELTA, "batch_size": 4},
    "k_dp_pca": {"epsilon": EPS, "delta": DELTA, "batch_size": 2},
    # rho-zCDP at the largest rho certifying (EPS, DELTA)
    "gauss_cov": {"epsilon": EPS, "delta": DELTA},
    "separate_cov": {"epsilon": EPS, "delta": DELTA},
    "adaptive_cov": {"epsilon": EPS, "delta": DELTA, "beta": 0.1},
    "coinpress_cov": {"epsilon": EPS, "delta": DELTA, "iterations": 2},
    # pure epsilon-DP
    "lap_cov": {"epsilon": EPS},
    "separate_lap_cov": {"epsilon": EPS},
}

#: field names that are exact statistics of the raw data or sampler internals wherever they occur
NEVER_RELEASED = {
    "n_clipped",
    "concentration",
    "proposals",
    "acceptance_rate",
    "acceptance_rates",
    "rhat",
    "ess",
    "converged",
    "seconds",
    "gains",
    "regret",
    "regret_curve",
    "opt",
    "cumulative_gain",
    "max_true_count",
    "n_nonempty_cells",
    "top_score",
    "second_score",
    "winner_score",
    "n_candidates",
    "n_rows",
    "noise_scale_normalised",
}


def _long_rows(n: int = 12, d: int = 3, norm: float = 13.0) -> np.ndarray:
    X = np.random.default_rng(0).standard_normal((n, d))
    return norm * X / np.linalg.norm(X, axis=1, keepdims=True)


def _run(name, data, **extra):
    return get_mechanism(name)(data, 1, rng=np.random.default_rng(1), **PARAMS[name], **extra)


def test_every_mechanism_has_test_parameters():
    assert set(PARAMS) == set(MECHANISMS)


def test_output_has_no_legacy_info():
    fields = {f.name for f in dataclasses.fields(MechanismOutput)}
    assert fields == {"components", "guarantee", "release", "diagnostics", "covariance"}


def _containers(X):
    return {
        "array": X,
        "list of rows": [list(r) for r in X],
        "PreparedData(bound=100)": PreparedData(X, row_norm_bound=100.0),
    }


@pytest.mark.parametrize("name", sorted(MECHANISMS))
@pytest.mark.parametrize("container", ["array", "list of rows", "PreparedData(bound=100)"])
def test_row_norm_bound_enforced_for_every_container(name, container):
    """Rows of norm 13 are refused whatever they arrive in — a PreparedData validated for a looser
    bound (100) included (online_pca used to accept it under its (ε, δ) claim) — and with
    clip=True they are scaled back and counted (a diagnostic, never released)."""
    X = _long_rows()
    with pytest.raises(PrivacyInputError, match="norm above the bound"):
        _run(name, _containers(X)[container])
    out = _run(name, _containers(X)[container], clip=True)
    assert out.diagnostics["n_clipped"] == X.shape[0]
    assert "n_clipped" not in out.release


@pytest.mark.parametrize("name", ["online_pca", "streaming_power", "private_sketch"])
def test_row_norm_bound_enforced_for_row_iterators(name):
    """The streaming mechanisms also take a one-pass iterator of rows: same check, same message."""
    X = _long_rows()
    extra = {"horizon": X.shape[0]} if name == "online_pca" else {}
    with pytest.raises(PrivacyInputError, match="norm above the bound"):
        _run(name, iter(X), **extra)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_release_and_diagnostics_are_separate(name):
    """Every output has a release with a status and diagnostics with the exact clipped count; no
    exact data statistic is ever in the release; the guarantee names a known relation and status."""
    X = _long_rows(norm=0.9)
    out = _run(name, X)
    assert isinstance(out.release, dict) and isinstance(out.diagnostics, dict)
    assert out.release["status"] in ("ok", "bottom") and out.status == out.release["status"]
    assert (out.components is None) == (out.status == "bottom")
    assert "n_clipped" in out.diagnostics
    assert not (set(out.release) & NEVER_RELEASED), set(out.release) & NEVER_RELEASED
    assert out.guarantee.neighbouring in NEIGHBOURING_RELATIONS
    assert out.guarantee.status in GUARANTEE_STATUSES


@pytest.mark.parametrize(
    "name,extra",
    [
        ("analyze_gauss", {"neighbouring": "add-remove-one-row"}),
        ("noisy_power", {"neighbouring": "add-remove-one-row"}),
        ("private_sketch", {}),
    ],
)
def test_add_remove_noise_scale_is_independent_of_n(name, extra):
    """Under add/remove-one-row n is not public: the released noise scale must not depend on it, and
    n itself may only be a diagnostic."""
    rng = np.random.default_rng(4)
    outs = []
    for n in (30, 3000):
        X = rng.uniform(-0.4, 0.4, (n, 5))
        outs.append(get_mechanism(name)(X, 2, rng=rng, **PARAMS[name], **extra))
    assert all(o.guarantee.neighbouring == "add-remove-one-row" for o in outs)
    assert outs[0].release["noise_scale"] == outs[1].release["noise_scale"]
    for o, n in zip(outs, (30, 3000)):
        assert "n" not in o.release and "n_rows" not in o.release
