"""Table 2's classifier choice, the convergence record of every SVM fit and its refusal, and MOD-SULQ's
alternative (original SULQ) noise."""

import math

import numpy as np
import pandas as pd
import pytest

from experiments.runs.classification import run_classification
from experiments.runs.classifiers import (
    CLASSIFIERS,
    SubsetGridRBF,
    UnconvergedFitError,
    fit_classifier,
    log2_grid,
    rbf_svm_default,
    require_converged,
)
from experiments.store.store import ResultStore
from mechanisms._base import second_moment
from mechanisms.calibration import mod_sulq_noise_scale
from mechanisms.linalg import symmetric_gaussian, top_k_eigenvectors
from mechanisms.mod_sulq import mod_sulq, sulq_noise_scale
from tests.experiments.runs.test_jmlr_runners import _kddcup_like_dir
from tests.hydra_helpers import compose_cfg


def _overlapping(n=400, seed=0):
    """Two overlapping Gaussian classes in 3 dimensions (not separable: the hinge dual needs many passes)."""
    rng = np.random.default_rng(seed)
    y = (rng.uniform(size=n) < 0.3).astype(int)
    Z = rng.standard_normal((n, 3)) + 0.8 * y[:, None]
    return Z, y


def _linear(loss, max_iter, C=(10.0, 100.0)):
    return {
        "classifier": "linear",
        "svm_loss": loss,
        "feature_scaling": "standard",
        "svm_C_grid": list(C),
        "svm_cv_folds": 3,
        "svm_max_iter": max_iter,
    }


# --- every fit's convergence is recorded -------------------------------------------------------------


def test_fit_stopped_at_its_iteration_limit_is_recorded():
    Z, y = _overlapping()
    _, info = fit_classifier(_linear("hinge", 2), Z, y)
    assert info["svm_fits"] == 2 * 3 + 1  # 2 C values x 3 folds + the final fit
    assert info["svm_converged"] is False and info["svm_fits_converged"] < info["svm_fits"]


def test_primal_squared_hinge_converges_at_every_C():
    """The linear protocol's converging solver: liblinear's primal Newton method for the squared hinge."""
    Z, y = _overlapping()
    _, info = fit_classifier(_linear("squared_hinge", 1000, C=(0.01, 1.0, 1000.0)), Z, y)
    assert info["svm_converged"] is True and info["svm_fits_converged"] == info["svm_fits"] == 10


def test_aggregation_refuses_unconverged_records():
    ok = pd.DataFrame(
        {
            "dataset": ["kddcup"] * 2,
            "mechanism": ["random"] * 2,
            "accuracy": [0.9, 0.8],
            "svm_converged": [True, True],
        }
    )
    assert require_converged(ok) is ok
    bad = ok.assign(svm_converged=[True, False])
    with pytest.raises(UnconvergedFitError, match="1 classification record.*kddcup/random: 1"):
        require_converged(bad)
    assert len(require_converged(bad, allow_unconverged=True)) == 2  # only when asked explicitly
    # records without the flag: their ConvergenceWarning count decides
    legacy = pd.DataFrame(
        {"dataset": ["kddcup"], "mechanism": ["pca"], "svm_convergence_warnings": [3]}
    )
    with pytest.raises(UnconvergedFitError):
        require_converged(legacy)
    assert len(require_converged(legacy.assign(svm_convergence_warnings=[0]))) == 1


def test_table2_and_the_figure_refuse_unconverged_records(tmp_path):

    from experiments.figures import paper, tables

    rows = pd.DataFrame(
        {
            "experiment": "classification",
            "dataset": "kddcup",
            "mechanism": "random",
            "scale": "paper",
            "accuracy": [0.97, 0.81],
            "svm_loss": "hinge",
            "feature_scaling": "standard",
            "classifier": "linear",
            "random_entries": "gaussian",
            "random_projection": "orthonormal",
            "svm_converged": [True, False],
        }
    )
    for draw in (tables.table2, paper.fig_classification):
        with pytest.raises(UnconvergedFitError):
            draw(rows, tmp_path)
    assert tables.table2(rows.iloc[:1], tmp_path)  # the converged record alone is drawn


def test_runner_records_convergence_and_refuses_to_summarise(tmp_path):
    data = _kddcup_like_dir(tmp_path)
    base = [
        "experiment=classification",
        "mechanism=random",
        "scale=smoke",
        f"data_dir={data}",
        f"results_dir={tmp_path / 'res'}",
        "quiet=true",
        "scale.classification.max_rows=null",
        "experiment.classifier=linear",
        "experiment.svm_C_grid=[100.0]",
    ]
    with pytest.raises(UnconvergedFitError):
        run_classification(
            compose_cfg(base + ["experiment.svm_loss=hinge", "experiment.svm_max_iter=1"])
        )
    rec = ResultStore(tmp_path / "res").load()
    assert rec.svm_converged.item() == False and rec.svm_fits.item() == 4  # noqa: E712
    assert rec.svm_fits_converged.item() < 4


# --- the classifier choice ---------------------------------------------------------------------------


def test_log2_grid_is_libsvm_notation():
    assert (
        log2_grid([-5, 15, 2]) == [2.0**e for e in range(-5, 16, 2)]
        and len(log2_grid([-5, 15, 2])) == 11
    )
    assert log2_grid([-15, 3, 2])[-1] == 8.0 and len(log2_grid([-15, 3, 2])) == 10
    assert log2_grid([-5, 15, 4]) == [2.0**-5, 2.0**-1, 8.0, 128.0, 2048.0, 32768.0]
    with pytest.raises(ValueError, match="log2 grid"):
        log2_grid([3, 1, 1])


def test_rbf_default_is_libsvms_default():
    Z, y = _overlapping()
    model, info = fit_classifier({"classifier": "rbf_default", "feature_scaling": "minmax"}, Z, y)
    svm = model.named_steps["svm"]
    assert svm.kernel == "rbf" and svm.C == 1.0 and svm.gamma == pytest.approx(1 / 3)
    assert model.named_steps["scale"].feature_range == (-1.0, 1.0)
    assert info == {
        "svm_C": 1.0,
        "svm_gamma": pytest.approx(1 / 3),
        "svm_fits": 1,
        "svm_fits_converged": 1,
        "svm_converged": True,
        "svm_duplicates": "weighted",
        "svm_fit_rows": len(Z),
    }
    assert rbf_svm_default(7).named_steps["svm"].gamma == pytest.approx(1 / 7)


def test_rbf_grid_searches_a_subset_and_refits_on_all_rows():
    """CV on at most cv_rows rows (libSVM's guide for large sets), final fit on every training row, and
    the selected (C, gamma) is the one with the best CV score on that subset."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.preprocessing import MinMaxScaler
    from sklearn.svm import SVC

    Z, y = _overlapping(600)
    m = SubsetGridRBF([0.5, 8.0], [0.125, 2.0], cv=3, cv_rows=200, random_state=3).fit(Z, y)
    assert m.cv_rows_used_ == 200 and m.n_cv_fits_ == 12 and m.svm_.shape_fit_[0] == 600
    Zs = MinMaxScaler((-1, 1)).fit_transform(Z)
    rows = np.sort(np.random.default_rng(3).choice(600, 200, replace=False))
    ref = GridSearchCV(SVC(kernel="rbf"), {"C": [0.5, 8.0], "gamma": [0.125, 2.0]}, cv=3).fit(
        Zs[rows], y[rows]
    )
    assert m.best_params_ == ref.best_params_
    assert m.score(Z, y) == pytest.approx(
        SVC(kernel="rbf", **ref.best_params_).fit(Zs, y).score(Zs, y)
    )
    assert SubsetGridRBF([1.0], [1.0], cv_rows=None).fit(Z, y).cv_rows_used_ == 600


def test_unknown_classifier_is_refused():
    Z, y = _overlapping(50)
    with pytest.raises(ValueError, match="classifier"):
        fit_classifier({"classifier": "knn"}, Z, y)
    assert set(CLASSIFIERS) == {"linear_csvc", "rbf_default", "rbf", "linear"}


def test_default_config_is_the_papers_linear_svm_with_libsvms_grid():
    """The default classifier is the paper's linear C-SVC; the folds and C grid left null resolve to
    grid.py's defaults for it (5 folds, C = 2^-5, 2^-3, ..., 2^15) and to the values the alternatives
    were run with (3 folds, every 2^4), so the alternatives' records keep their run keys."""
    from experiments.runs.classification import classification_protocol

    cfg = compose_cfg(["experiment=classification"])
    e = cfg.experiment
    assert e.classifier == "linear_csvc" and e.feature_scaling == "minmax"
    assert e.svm_cv_folds is None and e.svm_log2_C is None
    assert list(e.svm_log2_gamma) == [-15, 3, 4] and e.svm_cv_rows == 2000
    proto = classification_protocol(cfg)
    assert proto["svm_cv_folds"] == 5 and proto["svm_log2_C"] == [-5, 15, 2]
    assert proto["svm_loss"] == "hinge" and proto["svm_max_iter"] == -1
    assert proto["svm_C_grid"] is None and proto["svm_log2_gamma"] is None
    rbf = classification_protocol(
        compose_cfg(["experiment=classification", "experiment.classifier=rbf"])
    )
    assert rbf["svm_cv_folds"] == 3 and rbf["svm_log2_C"] == [-5, 15, 4]
    for other in ("rbf_default", "linear"):
        c = compose_cfg(["experiment=classification", f"experiment.classifier={other}"])
        assert classification_protocol(c)["svm_cv_folds"] == 3


def test_rbf_default_ignores_the_grid_fields(tmp_path):
    """libSVM's defaults: the grid, the CV subset and the linear fields do not act and do not
    split its records; its scaling does."""
    from tests.experiments.runs.test_classification_protocol import _base

    data = _kddcup_like_dir(tmp_path)
    base = _base(tmp_path, data) + ["experiment.classifier=rbf_default"]
    assert run_classification(compose_cfg(base))["records_written"] == 1
    for extra in (
        ["experiment.svm_log2_C=[-1,3,2]"],
        ["experiment.svm_cv_rows=20"],
        ["experiment.svm_C_grid=[1.0]"],
        ["experiment.svm_loss=hinge"],
    ):
        assert run_classification(compose_cfg(base + extra))["records_written"] == 0, extra
    assert (
        run_classification(compose_cfg(base + ["experiment.feature_scaling=standard"]))[
            "records_written"
        ]
        == 1
    )
    rec = ResultStore(tmp_path / "res").load()
    assert (
        set(rec.classifier) == {"rbf_default"}
        and set(rec.svm_C) == {1.0}
        and rec.svm_converged.all()
        and set(rec.svm_duplicates) == {"weighted"}
        and (rec.svm_fit_rows <= rec.n_train).all()
    )


# --- MOD-SULQ: eq. (5) by default, the original SULQ noise when asked ---------------------------------


def _data(n=300, d=12, seed=1):
    X = np.random.default_rng(seed).standard_normal((n, d))
    return X / (1.01 * np.linalg.norm(X, axis=1, keepdims=True).max())


def test_default_noise_is_eq5_bit_for_bit():
    X = _data()
    n, d = X.shape
    out = mod_sulq(X, 3, epsilon=0.5, delta=0.01, rng=np.random.default_rng(7))
    beta = (d + 1) / (n * 0.5) * math.sqrt(
        2 * math.log((d * d + d) / (2 * math.sqrt(2 * math.pi) * 0.01))
    ) + 1 / (n * math.sqrt(0.5))  # eq. (5) by hand
    assert (
        out.release["noise_scale"] == pytest.approx(beta, rel=1e-14)
        and out.release["calibration"] == "paper"
    )
    manual = top_k_eigenvectors(
        second_moment(X)
        + symmetric_gaussian(d, mod_sulq_noise_scale(n, d, 0.5, 0.01), np.random.default_rng(7)),
        3,
    )
    assert np.array_equal(out.components, manual)


def test_sulq_noise_has_the_documented_scale():
    """β_SULQ = 2√2 d log(d/δ)/(n ε) (variance 8 d² log²(d/δ)/(n² ε²), JMLR 2013 section 3.1), 5.24 times
    eq. (5) at kddcup's d = 116, ε = 0.1, δ = 0.01, and it is the noise the release actually carries."""
    assert sulq_noise_scale(494021, 116, 0.1, 0.01) == pytest.approx(
        math.sqrt(8 * 116**2 * math.log(11600) ** 2 / (494021**2 * 0.01)), rel=1e-13
    )
    assert sulq_noise_scale(494021, 116, 0.1, 0.01) / mod_sulq_noise_scale(
        494021, 116, 0.1, 0.01
    ) == pytest.approx(5.244, abs=1e-3)
    X = _data()
    n, d = X.shape
    out = mod_sulq(X, 3, epsilon=0.5, delta=0.01, rng=np.random.default_rng(7), calibration="sulq")
    beta = sulq_noise_scale(n, d, 0.5, 0.01)
    assert out.release["noise_scale"] == beta and out.release["calibration"] == "sulq"
    assert beta > mod_sulq_noise_scale(n, d, 0.5, 0.01)
    manual = top_k_eigenvectors(
        second_moment(X) + symmetric_gaussian(d, beta, np.random.default_rng(7)), 3
    )
    assert np.array_equal(out.components, manual)
    assert (out.guarantee.epsilon, out.guarantee.delta) == (0.5, 0.01)
    # the draw's spread: 200 x 200 upper triangle (20,100 entries), relative s.e. of the sd ~0.5%; tol 3%
    N = symmetric_gaussian(200, beta, np.random.default_rng(0))
    assert np.std(N[np.triu_indices(200)]) == pytest.approx(beta, rel=0.03)


def test_sulq_noise_below_eq5_is_refused():
    """d = 2, δ = 0.01, ε = 10⁴: the SULQ sd (0.0030/n) is below eq. (5)'s (0.0109/n, its 1/(n√ε) term),
    so Theorem 5 does not cover it."""
    assert sulq_noise_scale(100, 2, 1e4, 0.01) < mod_sulq_noise_scale(100, 2, 1e4, 0.01)
    with pytest.raises(ValueError, match="below eq. \\(5\\)"):
        mod_sulq(
            _data(100, 2),
            1,
            epsilon=1e4,
            delta=0.01,
            rng=np.random.default_rng(0),
            calibration="sulq",
        )
    with pytest.raises(ValueError, match="calibration"):
        mod_sulq(
            _data(), 1, epsilon=1.0, delta=0.01, rng=np.random.default_rng(0), calibration="sulq2"
        )


def test_variance_reading_is_the_square_root_of_eq5():
    """calibration='variance': standard deviation √β with β of eq. (5), the noise the release carries
    (bit for bit against a hand-made draw), refused where β > 1 (there √β < β)."""
    X = _data()
    n, d = X.shape
    out = mod_sulq(
        X, 3, epsilon=0.5, delta=0.01, rng=np.random.default_rng(7), calibration="variance"
    )
    beta = mod_sulq_noise_scale(n, d, 0.5, 0.01)
    assert beta < 1 and out.release["noise_scale"] == math.sqrt(beta) > beta
    assert out.release["calibration"] == "variance"
    manual = top_k_eigenvectors(
        second_moment(X) + symmetric_gaussian(d, math.sqrt(beta), np.random.default_rng(7)), 3
    )
    assert np.array_equal(out.components, manual)
    assert mod_sulq_noise_scale(30, 12, 0.01, 0.01) > 1
    with pytest.raises(ValueError, match="square root is below it"):
        mod_sulq(
            _data(30),
            3,
            epsilon=0.01,
            delta=0.01,
            rng=np.random.default_rng(0),
            calibration="variance",
        )
