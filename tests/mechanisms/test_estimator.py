"""PrivatePCA as a scikit-learn user expects a decomposition to behave, and what it exposes.

The conformance suite itself is in tests/mechanisms/test_sklearn_checks.py.
"""

import inspect
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC

from mechanisms import MechanismOutput, PrivacyGuarantee, PrivacyInputError
from mechanisms.estimator import PrivatePCA, split_output


def test_estimator_api(small_data):
    est = PrivatePCA(
        mechanism="mod_sulq", n_components=3, epsilon=1.0, delta=0.01, random_state=0
    ).fit(small_data)
    assert est.components_.shape == (3, 8)
    assert est.n_components_ == 3
    assert np.allclose(est.components_ @ est.components_.T, np.eye(3), atol=1e-10)
    Z = est.transform(small_data)
    assert Z.shape == (small_data.shape[0], 3)
    assert np.allclose(est.inverse_transform(Z), Z @ est.components_)
    assert est.guarantee_.epsilon == 1.0 and est.guarantee_.neighbouring == "replace-one-row"
    again = PrivatePCA(
        mechanism="mod_sulq", n_components=3, epsilon=1.0, delta=0.01, random_state=0
    ).fit(small_data)
    assert np.array_equal(est.components_, again.components_)


def test_estimator_in_pipeline(small_data):
    y = (small_data[:, 0] > 0).astype(int)
    pipe = make_pipeline(PrivatePCA(mechanism="pca", n_components=2), LinearSVC())
    pipe.fit(small_data, y)
    assert pipe.score(small_data, y) > 0.9


def test_n_components_first_and_mechanism_keyword_only(small_data):
    """``PrivatePCA(2)`` as scikit-learn's ``PCA(2)``; the mechanism, like every other parameter, is
    keyword-only (as PCA's ``svd_solver``)."""
    params = list(inspect.signature(PrivatePCA).parameters.values())
    assert params[0].name == "n_components" and params[0].kind is params[0].POSITIONAL_OR_KEYWORD
    assert all(p.kind is p.KEYWORD_ONLY for p in params[1:])
    with pytest.raises(TypeError):
        PrivatePCA(2, "mod_sulq")
    est = PrivatePCA(2, random_state=0).fit(small_data)
    assert est.n_components_ == 2 and est.get_params()["mechanism"] == "ppca_iterative"


@pytest.mark.parametrize("k", [1, 3])
def test_default_mechanism_is_pure_and_proven(small_data, k):
    """Without a choice of mechanism: pure ε-DP (δ = 0), status "proven", replace-one-row, for k = 1
    and k > 1, and no δ asked for."""
    g = PrivatePCA(k, epsilon=0.5, random_state=0).fit(small_data).guarantee_
    assert (g.epsilon, g.delta, g.status, g.neighbouring) == (0.5, 0.0, "proven", "replace-one-row")


@pytest.mark.parametrize("first", ["mod_sulq", lambda X, k, *, rng, clip=False: None])
def test_a_mechanism_given_first_is_refused_with_the_new_spelling(small_data, first):
    with pytest.raises(
        ValueError, match=r"the mechanism is keyword-only: PrivatePCA\(n_components, "
    ):
        PrivatePCA(first).fit(small_data)


def test_estimator_needs_delta_for_mod_sulq(small_data):
    with pytest.raises(ValueError, match="delta"):
        PrivatePCA(mechanism="mod_sulq", n_components=2, epsilon=1.0).fit(small_data)


def test_estimator_unknown_mechanism(small_data):
    with pytest.raises(ValueError, match="unknown mechanism"):
        PrivatePCA(mechanism="nope").fit(small_data)


def test_clone_keeps_parameters_and_drops_fit(small_data):
    est = PrivatePCA(
        mechanism="analyze_gauss",
        n_components=2,
        epsilon=0.5,
        delta=0.01,
        row_norm_bound=2.0,
        clip=True,
        mechanism_params={"neighbouring": "replace-one-row"},
        keep_diagnostics=True,
        random_state=3,
    ).fit(small_data)
    copy = clone(est)
    assert copy.get_params() == est.get_params()
    assert copy.get_params()["mechanism_params"] is not est.mechanism_params  # deep-copied
    assert not hasattr(copy, "components_")


def test_feature_names_and_pandas_output(small_data):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(small_data, columns=[f"f{i}" for i in range(8)])
    est = PrivatePCA(
        mechanism="ppca",
        n_components=2,
        epsilon=1.0,
        random_state=0,
        mechanism_params={"iterations": 50, "n_chains": 1, "warn": False},
    )
    est.set_output(transform="pandas").fit(frame)
    assert list(est.feature_names_in_) == list(frame.columns)
    assert list(est.get_feature_names_out()) == ["privatepca0", "privatepca1"]
    out = est.transform(frame)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["privatepca0", "privatepca1"]
    assert np.allclose(out.to_numpy(), small_data @ est.components_.T)
    with pytest.raises(ValueError, match="feature names"):
        est.transform(frame.rename(columns={"f0": "other"}))


def test_grid_search_over_n_components(small_data):
    """GridSearchCV clones and refits through the pipeline and picks among the declared grid.

    The labels depend on the second coordinate only; the data's top principal direction is the
    first coordinate (variance 5 against 3), so non-private k = 1 keeps almost nothing of the label
    and k = 2 keeps it: the search must choose k = 2 (k = 1 scores about 0.5, k = 2 above 0.9).
    """
    y = (small_data[:, 1] > 0).astype(int)
    pipe = make_pipeline(PrivatePCA(mechanism="pca", random_state=0), LinearSVC())
    search = GridSearchCV(pipe, {"privatepca__n_components": [1, 2]}, cv=3).fit(small_data, y)
    assert search.best_params_ == {"privatepca__n_components": 2}
    scores = search.cv_results_["mean_test_score"]
    assert scores[0] < 0.7 < 0.9 < scores[1]
    assert search.best_estimator_[0].n_components_ == 2


def test_pickle_round_trip(small_data):
    est = PrivatePCA(
        mechanism="analyze_gauss", n_components=2, epsilon=0.5, delta=0.01, random_state=0
    ).fit(small_data)
    back = pickle.loads(pickle.dumps(est))
    assert np.array_equal(back.transform(small_data), est.transform(small_data))


# -- validation: scikit-learn's messages for generic errors, the project's for privacy ones -------

SKLEARN_ERRORS = [
    (np.array([[np.nan, 0.1, 0.0], [0.1, 0.1, 0.0]]), 1, ValueError, "Input X contains NaN"),
    (np.array([[np.inf, 0.1, 0.0], [0.1, 0.1, 0.0]]), 1, ValueError, "Input X contains infinity"),
    (np.zeros((0, 3)), 1, ValueError, r"0 sample\(s\)"),
    (np.array([0.1, 0.2, 0.3]), 1, ValueError, "Reshape your data"),
    (np.array([[1 + 1j, 0.0, 0.0]]), 1, ValueError, "Complex data not supported"),
    # the shape without its row count (n): scikit-learn's wording, which its own checks look for
    (np.full((4, 1), 0.1), 1, ValueError, r"1 feature\(s\) \(shape=\(, 1\)\) while a minimum of 2"),
    (np.zeros((4, 0)), 1, ValueError, r"0 feature\(s\) \(shape=\(, 0\)\) while a minimum of 2"),
    (
        np.full((4, 3), 0.1),
        0,
        ValueError,
        "n_components must satisfy 1 <= n_components < n_features = 3",
    ),
    (np.full((4, 3), 0.1), 3, ValueError, "n_components must satisfy"),
    (np.full((4, 3), 0.1), 1.5, ValueError, "n_components must be an integer"),
    (np.full((4, 3), 0.1), True, ValueError, "n_components must be an integer"),
]


@pytest.mark.parametrize("X,k,error,message", SKLEARN_ERRORS)
def test_generic_bad_input_reads_like_scikit_learn(X, k, error, message):
    with pytest.raises(error, match=message):
        PrivatePCA(mechanism="mod_sulq", n_components=k, delta=0.01, random_state=0).fit(X)


def test_sparse_input_refused_by_scikit_learn():
    sp = pytest.importorskip("scipy.sparse")
    with pytest.raises(TypeError, match="Sparse data was passed"):
        PrivatePCA(mechanism="mod_sulq", n_components=1, delta=0.01).fit(
            sp.csr_matrix(np.eye(3) * 0.5)
        )


def test_transform_validates_like_scikit_learn(small_data):
    est = PrivatePCA(mechanism="pca", n_components=2).fit(small_data)
    with pytest.raises(ValueError, match="X has 3 features, but PrivatePCA is expecting 8"):
        est.transform(small_data[:, :3])
    bad = small_data.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        est.transform(bad)
    with pytest.raises(ValueError, match="Reshape your data"):
        est.transform(small_data[0])
    with pytest.raises(ValueError, match="expects 2"):
        est.inverse_transform(np.zeros((3, 5)))


@pytest.mark.parametrize(
    "params,message",
    [
        ({"epsilon": 0.0}, "epsilon must be a finite number > 0"),
        ({"epsilon": "abc"}, "epsilon must be a number"),
        ({"delta": 1.5}, r"delta must lie in \(0, 1\)"),
    ],
)
def test_privacy_parameters_keep_their_messages(small_data, params, message):
    est = PrivatePCA(mechanism="mod_sulq", n_components=2, delta=0.01, random_state=0).set_params(
        **params
    )
    with pytest.raises(PrivacyInputError, match=message):
        est.fit(small_data)


@pytest.mark.parametrize("bound", [0.0, -1.0, float("inf"), float("nan"), "x"])
def test_bad_row_norm_bound_refused(small_data, bound):
    with pytest.raises(ValueError, match="row_norm_bound must be"):
        PrivatePCA(mechanism="pca", row_norm_bound=bound).fit(small_data)


@pytest.mark.parametrize("state", ["x", -1, 1.5])
def test_bad_random_state_refused(small_data, state):
    with pytest.raises(ValueError, match="random_state must be None, an int.*, a Generator"):
        PrivatePCA(mechanism="pca", random_state=state).fit(small_data)


def _bad_values(constraints) -> list:
    """A value of no valid type, and one bad value per constraint that has them (scikit-learn's
    generator of invalid values, as in its check_param_validation)."""
    from sklearn.utils._param_validation import generate_invalid_param_val, make_constraint

    values = [type("BadType", (), {})()]
    for constraint in constraints:
        try:
            values.append(generate_invalid_param_val(make_constraint(constraint)))
        except NotImplementedError:
            pass
    return values


def test_parameter_constraints_are_complete_and_every_bad_value_is_named(small_data):
    # one constraint per constructor parameter; a bad type or value of any validated parameter is
    # refused naming it: in the estimator's words for OWN_WORDING, in scikit-learn's otherwise
    from sklearn.base import clone
    from sklearn.utils._param_validation import InvalidParameterError

    from mechanisms.estimator import OWN_WORDING

    est = PrivatePCA(mechanism="pca", n_components=1)
    assert set(est._parameter_constraints) == set(est.get_params(deep=False))
    validated = {p: c for p, c in est._parameter_constraints.items() if c != "no_validation"}
    checked = 0
    for name, constraints in validated.items():
        for value in _bad_values(constraints):
            with pytest.raises(ValueError) as err:
                clone(est).set_params(**{name: value}).fit(small_data)
            if name in OWN_WORDING:
                assert type(err.value) is ValueError and str(err.value).startswith(f"{name} must")
            else:
                assert isinstance(err.value, InvalidParameterError)
                assert str(err.value).startswith(f"The '{name}' parameter of PrivatePCA must be")
            checked += 1
    assert checked > len(validated)  # bad values within a valid type were tried too


# -- row norms: refuse, clip (recorded) or declare a public bound ---------------------------------


def test_rows_above_the_bound_refused_by_default_without_naming_them(small_data):
    """The refusal names the public bound and the way out, not which row, how many or its norm."""
    X = small_data.copy()
    X[7] *= 3 / np.linalg.norm(X[7])
    with pytest.raises(
        PrivacyInputError, match=r"^some row has L2 norm above the bound 1(\.0)?: .*clip=True"
    ) as exc:
        PrivatePCA(mechanism="mod_sulq", n_components=2, delta=0.01).fit(X)
    assert "7" not in str(exc.value) and "3" not in str(exc.value)


def test_clipping_is_recorded_only_in_diagnostics(small_data):
    X = small_data.copy()
    X[:5] *= 4  # the largest row of small_data has norm 1: these 5 are now > 1
    n_over = int(np.sum(np.linalg.norm(X, axis=1) > 1))
    assert n_over >= 5
    est = PrivatePCA(
        mechanism="mod_sulq",
        n_components=2,
        delta=0.01,
        clip=True,
        keep_diagnostics=True,
        random_state=0,
    ).fit(X)
    assert est.diagnostics_["n_clipped"] == n_over
    assert "n_clipped" not in est.release_
    # the clipped fit is the fit on the clipped data
    clipped = X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    ref = PrivatePCA(mechanism="mod_sulq", n_components=2, delta=0.01, random_state=0).fit(clipped)
    assert np.allclose(est.components_, ref.components_, atol=1e-12)


def test_public_row_norm_bound_scales_the_data(small_data):
    """Rows bounded by B = 10: the fit is the unit-bound fit on X / 10 (same seed, same release)."""
    X = small_data * 10
    est = PrivatePCA(
        mechanism="mod_sulq", n_components=2, delta=0.01, row_norm_bound=10.0, random_state=0
    ).fit(X)
    ref = PrivatePCA(mechanism="mod_sulq", n_components=2, delta=0.01, random_state=0).fit(
        small_data
    )
    assert np.allclose(est.components_, ref.components_, atol=1e-12)
    assert est.guarantee_ == ref.guarantee_
    with pytest.raises(PrivacyInputError, match="norm above the bound 5"):
        PrivatePCA(mechanism="mod_sulq", n_components=2, delta=0.01, row_norm_bound=5.0).fit(X)


# -- release versus diagnostics --------------------------------------------------------------------


def test_only_the_release_is_exposed_by_default(small_data):
    est = PrivatePCA(
        mechanism="ppca",
        n_components=2,
        epsilon=1.0,
        random_state=0,
        mechanism_params={"iterations": 50, "n_chains": 2, "warn": False},
    ).fit(small_data)
    assert est.release_["status"] == "ok"
    assert not hasattr(est, "diagnostics_") and not hasattr(est, "info_")
    # PPCA's Bingham concentration n·ε/2·λ₁ is an exact data statistic: a diagnostic only
    assert "concentration" not in est.release_
    est.set_params(keep_diagnostics=True).fit(small_data)
    assert "concentration" in est.diagnostics_ and "n_clipped" in est.diagnostics_
    est.set_params(keep_diagnostics=False).fit(small_data)
    assert not hasattr(est, "diagnostics_")  # a refit does not leave the old diagnostics behind
    assert "diagnostics_ : dict, only with ``keep_diagnostics=True``. NOT private" in " ".join(
        PrivatePCA.__doc__.split()
    )


def _fake(components, *, release=None, diagnostics=None):
    def mechanism(X, k, *, rng, clip=False, epsilon):
        return MechanismOutput(
            components,
            PrivacyGuarantee(epsilon, 0.0, "replace-one-row"),
            release=dict(release or {}),
            diagnostics=dict(diagnostics or {}),
        )

    return mechanism


def test_split_output_separates_release_from_diagnostics():
    V = np.eye(3)[:, :1]
    new = _fake(V, release={"noisy_count": 4.2}, diagnostics={"true_count": 4})(
        None, 1, rng=None, epsilon=1.0
    )
    release, diagnostics = split_output(new)
    assert release == {"status": "ok", "noisy_count": 4.2}
    assert diagnostics == {"true_count": 4}


def test_bottom_error_message_has_no_diagnostics(small_data):
    fake = _fake(None, release={"status": "bottom"}, diagnostics={"true_max": 123456})
    est = PrivatePCA(mechanism=fake, n_components=2, keep_diagnostics=True)
    with pytest.raises(RuntimeError) as err:
        est.fit(small_data)
    assert (
        "bottom" in str(err.value)
        and "123456" not in str(err.value)
        and "true_max" not in str(err.value)
    )


def test_callable_mechanism(small_data):
    V = np.linalg.qr(np.random.default_rng(0).standard_normal((8, 2)))[0]
    est = PrivatePCA(
        mechanism=_fake(V, diagnostics={"secret": 1}), n_components=2, epsilon=0.7
    ).fit(small_data)
    assert np.array_equal(est.components_, V.T)
    assert est.guarantee_.epsilon == 0.7
    assert est.release_ == {"status": "ok"}
