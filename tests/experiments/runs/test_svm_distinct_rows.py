"""Table 2's RBF SVM fitted on the distinct (row, label) pairs with their counts as sample weights
(experiments.runs.classifiers.DistinctRowsSVC): the same C-SVC problem as fitting every row, and predictions
expanded from the distinct test rows bit for bit."""

import numpy as np
import pytest
from sklearn.svm import SVC

from experiments.runs.classifiers import DistinctRowsSVC, distinct_rows, fit_classifier


def _duplicated(seed=0, n=80):
    """Two overlapping Gaussian classes of n distinct points each; every class-1 point repeated 5-29
    times, class-0 points once (the repeated class dominates unless the counts are weighted), plus
    five class-0 points repeated with label 1 (same features, different labels).  Shuffled."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0.0, 1.0, (n, 2)), rng.normal(1.0, 1.0, (n, 2))])
    y = np.r_[np.zeros(n, int), np.ones(n, int)]
    counts = np.where(y == 1, rng.integers(5, 30, 2 * n), 1)
    X = np.vstack([np.repeat(X, counts, axis=0), X[:5]])
    y = np.r_[np.repeat(y, counts), np.ones(5, int)]
    order = rng.permutation(len(X))
    return X[order], y[order], 2 * n + 5


def _grid(seed=1, n=2000):
    return np.random.default_rng(seed).normal(0.5, 1.5, (n, 2))


def test_distinct_rows_decides_on_bytes_and_labels():
    X = np.array([[1.0, 2.0], [0.0, 1.0], [1.0, 2.0], [-0.0, 1.0], [1.0, 2.0], [0.0, 1.0]])
    first, inverse, counts = distinct_rows(X)
    assert list(first) == [0, 1, 3]  # first occurrence order; -0.0 is kept apart from 0.0
    assert list(counts) == [3, 2, 1] and np.array_equal(X[first][inverse], X)
    y = np.array(["a", "b", "a", "a", "b", "b"])
    first, inverse, counts = distinct_rows(X, y)
    # (1, 2) occurs with labels a, a, b: two pairs; (0, 1) with b, b: one pair
    assert list(first) == [0, 1, 3, 4] and list(counts) == [2, 2, 1, 1]
    assert np.array_equal(X[first][inverse], X) and np.array_equal(y[first][inverse], y)


@pytest.mark.parametrize("tol, max_diff", [(1e-3, 1e-2), (1e-9, 1e-8)])
def test_weighted_distinct_fit_solves_the_duplicated_problem(tol, max_diff):
    """Both fits stop when libSVM's largest KKT violation is below ``tol``, so each decision function is
    within a small multiple of ``tol`` of the common optimum's; their difference is allowed 10 x tol (measured
    1.8e-3 at tol 1e-3 and 5.0e-10 at 1e-9).  The same pairs fitted without their counts give a
    different classifier (|difference| 2.2, 797 of the 2,000 labels flipped): the
    comparison fails if the weights are dropped."""
    X, y, n_pairs = _duplicated()
    G = _grid()
    full = SVC(C=1.0, gamma=0.5, tol=tol).fit(X, y)
    dist = DistinctRowsSVC(C=1.0, gamma=0.5, tol=tol).fit(X, y)
    assert dist.fit_rows_ == dist.shape_fit_[0] == n_pairs and len(X) > 5 * n_pairs
    f_full, f_dist = full.decision_function(G), dist.decision_function(G)
    assert np.max(np.abs(f_full - f_dist)) < max_diff
    assert np.mean(full.predict(G) == dist.predict(G)) >= 0.995
    first, _, _ = distinct_rows(X, y)
    unweighted = SVC(C=1.0, gamma=0.5, tol=tol).fit(X[first], y[first])
    f_unw = unweighted.decision_function(G)
    assert np.max(np.abs(f_full - f_unw)) > 1.0
    assert np.sum(full.predict(G) != unweighted.predict(G)) > 200


def test_given_sample_weights_are_summed_over_duplicates():
    """Sample weights of repeated pairs add up: the same problem as SVC with those weights on every
    row (tol 1e-9, difference allowed 1e-8 as above)."""
    X, y, _ = _duplicated(seed=2)
    w = np.random.default_rng(3).uniform(0.5, 2.0, len(X))
    G = _grid(seed=4, n=500)
    full = SVC(C=1.0, gamma=0.5, tol=1e-9).fit(X, y, sample_weight=w)
    dist = DistinctRowsSVC(C=1.0, gamma=0.5, tol=1e-9).fit(X, y, sample_weight=w)
    assert np.max(np.abs(full.decision_function(G) - dist.decision_function(G))) < 1e-8


def test_prediction_on_distinct_rows_is_bit_for_bit():
    """predict and decision_function evaluate each distinct row once and expand: bit-identical to
    libSVM evaluating every row of the same fitted model."""
    X, y, _ = _duplicated(seed=5)
    model = DistinctRowsSVC(C=1.0, gamma=0.5).fit(X, y)
    rng = np.random.default_rng(6)
    T = np.vstack([X, _grid(seed=7, n=300)])[rng.permutation(len(X) + 300)]
    assert distinct_rows(T)[0].size < len(T) / 3  # mostly repeated rows
    assert np.array_equal(model.predict(T), SVC.predict(model, T))
    assert np.array_equal(model.decision_function(T), SVC.decision_function(model, T))
    assert model.score(T, np.zeros(len(T), int)) == np.mean(SVC.predict(model, T) == 0)


def test_fit_classifier_records_how_the_rbf_svm_was_fitted():
    X, y, n_pairs = _duplicated(seed=8)
    proto = {"classifier": "rbf_default", "feature_scaling": "minmax"}
    model, info = fit_classifier(proto, X, y)
    assert isinstance(model.named_steps["svm"], DistinctRowsSVC)
    assert info["svm_duplicates"] == "weighted" and info["svm_fit_rows"] == n_pairs
    assert info["svm_fits_converged"] == info["svm_fits"] == 1
    model, info = fit_classifier(proto, X, y, distinct=False)
    assert type(model.named_steps["svm"]) is SVC
    assert info["svm_duplicates"] == "kept" and info["svm_fit_rows"] == len(X)
    rbf = dict(
        classifier="rbf",
        feature_scaling="minmax",
        svm_log2_C=[0, 2, 2],
        svm_log2_gamma=[-1, 1, 2],
        svm_cv_folds=3,
        svm_cv_rows=200,
    )
    model, info = fit_classifier(rbf, X, y)
    assert isinstance(model.svm_, DistinctRowsSVC) and type(model).__name__ == "SubsetGridRBF"
    assert info["svm_duplicates"] == "weighted" and info["svm_fit_rows"] == n_pairs
    assert info["svm_fits"] == 13 and info["svm_converged"]
