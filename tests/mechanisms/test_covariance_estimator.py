"""PrivateCovariance: scikit-learn's covariance conventions (covariance_, location_, precision_, the
inherited score / mahalanobis / error_norm, get_params and clone), the public row-norm bound, the
full-rank request, and the one-line refusal of a mechanism that releases no covariance."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import linalg
from sklearn.base import clone
from sklearn.covariance import EmpiricalCovariance

from mechanisms import MechanismOutput, PrivacyGuarantee, PrivacyInputError, PrivateCovariance
from mechanisms.amin_cov import amin_cov


def _data(n=400, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.linspace(2.0, 0.5, d)
    return X / np.linalg.norm(X, axis=1, keepdims=True) * rng.uniform(0.3, 1.0, (n, 1))


def test_fit_sets_sklearns_covariance_attributes():
    X = _data()
    est = PrivateCovariance(epsilon=1.0, random_state=0).fit(X)
    d = X.shape[1]
    assert isinstance(est, EmpiricalCovariance)
    assert est.covariance_.shape == (d, d) and np.array_equal(est.covariance_, est.covariance_.T)
    assert np.array_equal(est.location_, np.zeros(d))  # not centred
    np.testing.assert_allclose(est.precision_, linalg.pinvh(est.covariance_), rtol=1e-10)
    np.testing.assert_array_equal(est.get_precision(), est.precision_)
    assert est.n_features_in_ == d and est.components_.shape == (1, d)
    assert est.guarantee_.epsilon == 1.0 and est.guarantee_.neighbouring == "replace-one-row"
    assert est.release_["status"] == "ok" and est.release_["rank"] == d  # full rank asked for
    assert not hasattr(est, "diagnostics_")
    # the same release as the mechanism called directly
    out = amin_cov(X, 1, epsilon=1.0, rng=np.random.default_rng(0), rank=d)
    np.testing.assert_array_equal(est.covariance_, out.covariance)
    # inherited methods work on the private estimate
    assert np.isfinite(est.error_norm(X.T @ X / X.shape[0]))
    assert est.mahalanobis(X[:5]).shape == (5,)
    assert isinstance(est.score(X), float)


def test_params_clone_and_reproducibility():
    est = PrivateCovariance(epsilon=0.7, mechanism_params={"split": "uniform"}, random_state=3)
    params = est.get_params()
    assert params["epsilon"] == 0.7 and params["mechanism"] == "amin_cov"
    assert "assume_centered" not in params  # a class attribute, not a parameter
    X = _data()
    a, b = est.fit(X).covariance_.copy(), clone(est).fit(X).covariance_
    assert np.array_equal(a, b)
    assert est.release_["split"] == "uniform"


def test_row_norm_bound_rescales_the_covariance():
    """Rows of norm <= B: the mechanism sees X / B and the estimate is B² times its covariance (B a
    power of two, so X·B / B is X exactly and the releases agree bit for bit)."""
    X, B = _data(), 8.0
    small = PrivateCovariance(random_state=1).fit(X)
    big = PrivateCovariance(row_norm_bound=B, random_state=1).fit(X * B)
    np.testing.assert_array_equal(big.covariance_, small.covariance_ * B**2)
    with pytest.raises(PrivacyInputError):
        PrivateCovariance(row_norm_bound=1.0).fit(X * B)
    clipped = PrivateCovariance(clip=True, keep_diagnostics=True, random_state=1).fit(X * B)
    assert clipped.diagnostics_["n_clipped"] > 0


def test_rank_and_components_are_passed_through():
    X = _data()
    est = PrivateCovariance(
        n_components=2, mechanism_params={"rank": 2}, random_state=0, store_precision=False
    ).fit(X)
    assert est.release_["rank"] == 2 and est.components_.shape == (2, 4)
    assert np.linalg.matrix_rank(est.covariance_, tol=1e-12) <= 2
    assert est.precision_ is None
    with pytest.raises(ValueError, match="n_components"):
        PrivateCovariance(n_components=4).fit(X)


def test_refuses_a_mechanism_that_releases_no_covariance_in_one_line():
    X = _data()
    for mech in ("ppca_iterative", "mod_sulq"):
        with pytest.raises(ValueError) as exc:
            PrivateCovariance(mechanism=mech, delta=1e-5, random_state=0).fit(X)
        msg = str(exc.value)
        assert "releases no covariance" in msg and "\n" not in msg


def test_any_callable_that_sets_covariance_is_accepted():
    def half_moment(X, k, *, rng, clip=False, epsilon=1.0):
        """Not private: a stand-in that releases the second moment halved."""
        A = X.T @ X / X.shape[0]
        g = PrivacyGuarantee(float("inf"), 0.0, "none")
        return MechanismOutput(np.eye(X.shape[1])[:, :k], g, {"status": "ok"}, {}, covariance=A / 2)

    X = _data()
    est = PrivateCovariance(mechanism=half_moment).fit(X)
    np.testing.assert_allclose(est.covariance_, X.T @ X / X.shape[0] / 2)


def test_refusals_quote_no_data():
    X = _data()
    X[7] *= 9.87654
    with pytest.raises(PrivacyInputError) as exc:
        PrivateCovariance().fit(X)
    assert "9.87" not in str(exc.value)
    with pytest.raises(ValueError):
        PrivateCovariance().fit(X[:, :1])  # one feature: k < d impossible


@pytest.mark.slow
def test_passes_scikit_learns_estimator_checks():
    """scikit-learn's conformance suite (41 checks; the array-API one skips without SCIPY_ARRAY_API),
    with clip=True: the suite's data have rows above norm 1, which the default refuses."""
    from sklearn.utils.estimator_checks import check_estimator

    res = check_estimator(PrivateCovariance(epsilon=5.0, clip=True, random_state=0), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in res if r["status"] == "failed"]
    assert not failed, failed
