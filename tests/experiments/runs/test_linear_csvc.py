"""Table 2's default classifier, the paper's linear SVM: the C-SVC with the linear kernel solved to
optimality (:class:`LinearCSVC`) and libSVM's tuning workflow around it (:class:`LinearCSVCSearch`)."""

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import MinMaxScaler
from sklearn.svm import SVC

from experiments.runs.classification import run_classification
from experiments.runs.classifiers import LinearCSVC, LinearCSVCSearch, distinct_rows, fit_classifier
from experiments.store.store import ResultStore
from tests.experiments.runs.test_classification_protocol import _base
from tests.experiments.runs.test_jmlr_runners import _kddcup_like_dir
from tests.experiments.runs.test_table2_convergence import _overlapping
from tests.hydra_helpers import compose_cfg


def _objective(w, b, C, Z, y, weights=None):
    """The C-SVC's primal objective ½‖w‖² + C Σ sᵢ max(0, 1 − yᵢ(wᵀzᵢ + b)), labels 1 -> +1, 0 -> −1."""
    sign = np.where(y == 1, 1.0, -1.0)
    weights = np.ones(len(y)) if weights is None else weights
    return 0.5 * w @ w + C * np.sum(weights * np.maximum(0.0, 1.0 - sign * (Z @ w + b)))


def test_two_symmetric_points_have_the_closed_form_solution():
    """x = +1 (label 1) and x = −1 (label 0): the objective ½w² + 2C·max(0, 1 − w) (b = 0 by
    symmetry) is minimised at w = min(1, 2C).  Tolerance 1e-6: the solver's relative gap is 1e-8."""
    Z, y = np.array([[1.0], [-1.0]]), np.array([1, 0])
    for C, w in ((0.1, 0.2), (0.25, 0.5), (10.0, 1.0), (2.0**15, 1.0)):
        m = LinearCSVC(C).fit(Z, y)
        assert m.converged_ and m.coef_[0] == pytest.approx(w, abs=1e-6)
        assert m.intercept_ == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("C", [0.01, 0.1, 1.0, 10.0])
def test_solves_the_problem_libsvm_solves(C):
    """Against libSVM itself (scikit-learn's SVC, linear kernel, stopping tolerance 1e-9): the same
    objective to 1e-6 relative, the same (w, b) to 1e-4 and the same predictions on 5,000 fresh
    points.  Measured: objectives within 7e-8, coefficients within 1e-5.  A regularised bias or the
    squared hinge (liblinear's LinearSVC) gives another (w, b) and fails."""
    Z, y = _overlapping(300)
    Z_new, _ = _overlapping(5000, seed=1)
    ours = LinearCSVC(C).fit(Z, y)
    ref = SVC(kernel="linear", C=C, tol=1e-9).fit(Z, y)
    ours_obj = _objective(ours.coef_, ours.intercept_, C, Z, y)
    ref_obj = _objective(ref.coef_.ravel(), ref.intercept_[0], C, Z, y)
    assert ours.converged_ and ours_obj <= ref_obj * (1 + 1e-6) and ref_obj <= ours_obj * (1 + 1e-6)
    assert np.allclose(ours.coef_, ref.coef_.ravel(), atol=1e-4)
    assert ours.intercept_ == pytest.approx(ref.intercept_[0], abs=1e-4)
    assert np.array_equal(ours.predict(Z_new), ref.predict(Z_new))
    assert ours.score(Z, y) == pytest.approx(ref.score(Z, y))


def test_repeated_rows_are_one_weighted_row():
    """Rows repeated m times are fitted once with weight m: the same solution as libSVM on every row
    (tolerance as above), and the solver sees only the distinct (row, label) pairs."""
    Z, y = _overlapping(120)
    reps = np.random.default_rng(2).integers(1, 6, size=len(y))
    Zr, yr = np.repeat(Z, reps, axis=0), np.repeat(y, reps)
    ours = LinearCSVC(3.0).fit(Zr, yr)
    ref = SVC(kernel="linear", C=3.0, tol=1e-9).fit(Zr, yr)
    assert ours.fit_rows_ == distinct_rows(Zr, yr)[0].size == 120
    assert np.allclose(ours.coef_, ref.coef_.ravel(), atol=1e-4)
    assert ours.intercept_ == pytest.approx(ref.intercept_[0], abs=1e-4)
    w = reps.astype(float)
    assert _objective(ours.coef_, ours.intercept_, 3.0, Z, y, w) == pytest.approx(
        _objective(ours.coef_, ours.intercept_, 3.0, Zr, yr), rel=1e-12
    )


def test_bad_input_is_refused():
    Z, y = _overlapping(50)
    with pytest.raises(ValueError, match="two classes"):
        LinearCSVC(1.0).fit(Z, np.zeros(50, dtype=int))
    with pytest.raises(ValueError, match="C must be positive"):
        LinearCSVC(0.0).fit(Z, y)
    with pytest.raises(ValueError, match="two classes"):
        LinearCSVCSearch([1.0], folds=5).fit(Z, np.ones(50, dtype=int))


def test_a_class_rarer_than_the_folds_is_handled_as_svm_train_does():
    """One row of a class and five folds: the fold holding it trains on the other class alone, whose
    model predicts that class for its held-out rows (svm-train -v); the four others fit a C-SVC."""
    Z, _ = _overlapping(30)
    y = np.r_[np.ones(1, int), np.zeros(29, int)]
    m = LinearCSVCSearch([1.0, 4.0], folds=5).fit(Z, y)
    assert m.n_fits_ == 4 * 2 + 1 == m.n_fits_converged_
    assert m.cv_accuracy_.shape == (2,) and np.all(m.cv_accuracy_ >= 29 / 30)


def test_search_is_libsvms_workflow():
    """svm-scale on the training rows, pooled cross-validation accuracy per C over stratified folds
    shuffled by the random state, the smallest C among the best, and a final fit on every row."""
    Z, y = _overlapping(300)
    grid = [2.0**e for e in (-5, -3, -1, 1, 3)]
    m = LinearCSVCSearch(grid, folds=5, random_state=4).fit(Z, y)
    Zs = MinMaxScaler((-1, 1)).fit_transform(Z)
    correct = np.zeros(len(grid))
    for train, held in StratifiedKFold(5, shuffle=True, random_state=4).split(Zs, y):
        for i, C in enumerate(grid):
            correct[i] += np.sum(
                LinearCSVC(C).fit(Zs[train], y[train]).predict(Zs[held]) == y[held]
            )
    assert np.array_equal(m.cv_accuracy_, correct / len(y))
    assert m.best_C_ == grid[int(np.flatnonzero(correct == correct.max())[0])]
    final = LinearCSVC(m.best_C_).fit(Zs, y)
    assert np.array_equal(m.svm_.coef_, final.coef_) and m.svm_.intercept_ == final.intercept_
    assert m.n_fits_ == 5 * len(grid) + 1 == m.n_fits_converged_
    assert m.score(Z, y) == final.score(Zs, y)


def test_ties_go_to_the_smallest_C():
    """Separable classes: every C of the grid predicts every held-out row right; grid.py keeps the
    smallest C among equal scores, so does the search (in any grid order)."""
    rng = np.random.default_rng(0)
    y = np.r_[np.ones(40, int), np.zeros(40, int)]
    Z = rng.uniform(0.2, 1.0, size=(80, 2)) * np.where(y == 1, 1.0, -1.0)[:, None]
    m = LinearCSVCSearch([4.0, 1.0, 16.0], folds=5).fit(Z, y)
    assert np.all(m.cv_accuracy_ == 1.0) and m.best_C_ == 1.0


def test_fit_classifier_records_the_linear_csvc():
    Z, y = _overlapping(200)
    proto = {
        "classifier": "linear_csvc",
        "feature_scaling": "minmax",
        "svm_cv_folds": 5,
        "svm_log2_C": [-1, 3, 2],
    }
    model, info = fit_classifier(proto, np.repeat(Z, 2, axis=0), np.repeat(y, 2))
    assert info["svm_C"] in (0.5, 2.0, 8.0) and info["svm_gamma"] is None
    assert info["svm_fits"] == info["svm_fits_converged"] == 5 * 3 + 1 and info["svm_converged"]
    assert info["svm_duplicates"] == "weighted" and info["svm_fit_rows"] == 200


@pytest.mark.slow
def test_runner_default_is_the_linear_csvc_and_its_fields_split_the_key(tmp_path):
    """The runner's default records the resolved protocol; the C grid, the folds and the scaling
    split records, the RBF and liblinear fields do not."""
    data = _kddcup_like_dir(tmp_path)
    base = [a for a in _base(tmp_path, data) if not a.startswith("experiment.svm_log2_C")]
    assert run_classification(compose_cfg(base))["records_written"] == 1
    for extra in (
        ["experiment.svm_log2_gamma=[-3,-3,1]"],
        ["experiment.svm_cv_rows=20"],
        ["experiment.svm_C_grid=[1.0]"],
        ["experiment.svm_loss=squared_hinge"],
        ["experiment.svm_max_iter=5"],
        [
            "experiment.svm_log2_C=[-5,15,2]",
            "experiment.svm_cv_folds=5",
        ],  # the defaults, spelled out
    ):
        assert run_classification(compose_cfg(base + extra))["records_written"] == 0, extra
    for extra in (
        ["experiment.svm_log2_C=[-1,3,2]"],
        ["experiment.svm_cv_folds=3"],
        ["experiment.feature_scaling=standard"],
    ):
        assert run_classification(compose_cfg(base + extra))["records_written"] == 1, extra
    df = ResultStore(tmp_path / "res").load()
    first = df[(df.svm_cv_folds == 5) & (df.feature_scaling == "minmax")]
    first = first[first.svm_log2_C.map(tuple) == (-5, 15, 2)].squeeze()
    assert first.classifier == "linear_csvc" and first.svm_loss == "hinge"
    assert first.svm_fits == 5 * 11 + 1 and first.svm_converged
    assert first.svm_C in [2.0**e for e in range(-5, 16, 2)]
    assert first.svm_duplicates == "weighted" and first.svm_fit_rows <= first.n_train
