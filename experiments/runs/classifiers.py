"""The classifiers of Table 2 (Chaudhuri, Sarwate & Sinha 2013, section 6.4): the train/test split,
the feature scaling, the SVMs (the paper's linear C-SVC with C tuned by cross-validation, libSVM's
RBF C-SVC with its defaults or a tuned grid, liblinear's linear SVM), the fit on distinct rows, and
the convergence rule that tables apply to classification records.

The runner that projects the data and writes the records is ``experiments.runs.classification.run_classification``;
the protocol and its measurements are in docs/table2_protocol.md.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from experiments.runs.streams import subset_rng

__all__ = [
    "CLASSIFIERS",
    "FEATURE_SCALINGS",
    "SVM_CACHE_MB",
    "SVM_LOSSES",
    "DistinctRowsSVC",
    "LinearCSVC",
    "LinearCSVCSearch",
    "SubsetGridRBF",
    "UnconvergedFitError",
    "classification_split",
    "distinct_rows",
    "fit_classifier",
    "linear_svm_search",
    "log2_grid",
    "majority_label_accuracy",
    "rbf_svm_default",
    "require_converged",
    "split_sizes",
]


#: Table 2 classifier options (JMLR 2013 section 6.4 says "a linear SVM ... implemented by libSVM";
#: ``linear_csvc`` is that, the default; the others are alternatives, docs/table2_protocol.md)
CLASSIFIERS = ("linear_csvc", "rbf_default", "rbf", "linear")
SVM_LOSSES = ("hinge", "squared_hinge")
FEATURE_SCALINGS = ("none", "standard", "minmax")


def classification_split(n_rows: int, seed: int, permutation: int, max_rows: int | None = None):
    """Rows of one Table-2 permutation (JMLR 2013 section 6.4): (hold-out half, training rows, test rows).
    The permutation is drawn from ``subset_rng(seed, permutation)`` (optionally cut to ``max_rows``);
    its first half computes the subspace, 10% of the rest (at least 2 rows) trains, the remainder tests."""
    order = subset_rng(seed, permutation).permutation(n_rows)
    if max_rows:
        order = order[: int(max_rows)]
    half, n_train = split_sizes(n_rows, max_rows)
    rest = order[half:]
    return order[:half], rest[:n_train], rest[n_train:]


def split_sizes(n_rows: int, max_rows: int | None = None) -> tuple[int, int]:
    """(hold-out rows, training rows) of a Table-2 permutation of ``n_rows`` rows cut to
    ``max_rows`` (:func:`classification_split`)."""
    rows = min(int(n_rows), int(max_rows)) if max_rows else int(n_rows)
    half = rows // 2
    return half, max(2, int(round(0.1 * (rows - half))))


def _scaler(scaling: str):
    """The feature scaling step (fitted on the training rows only)."""
    from sklearn.preprocessing import MinMaxScaler, StandardScaler

    if scaling not in FEATURE_SCALINGS:
        raise ValueError(f"feature scaling must be one of {FEATURE_SCALINGS}, got {scaling!r}")
    return {
        "none": "passthrough",
        "standard": StandardScaler(),
        "minmax": MinMaxScaler(feature_range=(-1.0, 1.0)),
    }[scaling]


def linear_svm_search(loss: str, scaling: str, c_grid, *, cv: int = 3, max_iter: int = 1000):
    """Linear SVM with C chosen by ``cv``-fold grid search, after optional feature scaling.

    ``loss="hinge"`` is the C-SVC objective, solved by liblinear's dual coordinate descent (which on
    the projected kddcup features needs far more than 1,000 iterations from C = 0.1 up);
    ``"squared_hinge"`` is solved in the primal by liblinear's trust-region Newton method, which
    converges in a few iterations at every C of the grid (docs/table2_protocol.md).  ``scaling`` is
    fitted on the training rows only: ``"standard"`` (zero mean, unit variance per feature),
    ``"minmax"`` (libSVM's ``svm-scale`` default range [-1, 1]) or ``"none"``.
    """
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline
    from sklearn.svm import LinearSVC

    if loss not in SVM_LOSSES:
        raise ValueError(f"svm loss must be one of {SVM_LOSSES}, got {loss!r}")
    scaler = _scaler(scaling)
    # liblinear implements the plain hinge only in the dual; the squared hinge is fastest primal.
    # The dual solver visits coordinates in a random order: fixed here so a record can be re-run exactly.
    svm = LinearSVC(loss=loss, dual=(loss == "hinge"), max_iter=int(max_iter), random_state=0)
    pipe = Pipeline([("scale", scaler), ("svm", svm)])
    return GridSearchCV(pipe, {"svm__C": [float(c) for c in c_grid]}, cv=int(cv))


def log2_grid(spec) -> list[float]:
    """``[start, stop, step]`` of base-2 exponents -> ``[2**start, 2**(start+step), ..., <= 2**stop]``
    (libSVM's ``grid.py`` notation: ``-log2c -5,15,2`` is C = 2^-5, 2^-3, ..., 2^15)."""
    start, stop, step = (int(v) for v in spec)
    if step <= 0 or stop < start:
        raise ValueError(f"log2 grid needs start <= stop and step > 0, got {list(spec)}")
    return [2.0**e for e in range(start, stop + 1, step)]


class _ScaledSVM:
    """Prediction and accuracy of a search that scaled its features (``scaler_``, None for no
    scaling) before fitting ``svm_``: test rows pass through the same map."""

    def predict(self, X):
        return self.svm_.predict(
            np.asarray(X) if self.scaler_ is None else self.scaler_.transform(X)
        )

    def score(self, X, y) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))


class SubsetGridRBF(_ScaledSVM):
    """libSVM's workflow for an RBF C-SVC (Hsu, Chang & Lin, "A Practical Guide to Support Vector
    Classification", sections 2.2 (scaling) and 3.2 (grid search)): scale each feature to [-1, 1] on
    the training rows, choose (C, γ) by ``cv``-fold cross-validation over a base-2 grid on a random
    subset of at most ``cv_rows`` training rows (the guide's recipe for large training sets), then train on all
    training rows with the chosen (C, γ).  ``cv_rows=None`` cross-validates on every training row.
    ``distinct``: the final fit is a :class:`DistinctRowsSVC` (the same problem, on the distinct
    scaled (row, label) pairs weighted by their counts); the cross-validation fits are plain ``SVC``.
    """

    def __init__(
        self,
        c_grid,
        gamma_grid,
        *,
        cv: int = 3,
        cv_rows: int | None = 2000,
        scaling: str = "minmax",
        random_state: int = 0,
        distinct: bool = True,
    ):
        self.c_grid, self.gamma_grid = [float(c) for c in c_grid], [float(g) for g in gamma_grid]
        self.distinct = bool(distinct)
        self.cv, self.cv_rows, self.scaling, self.random_state = (
            int(cv),
            cv_rows,
            scaling,
            random_state,
        )

    def fit(self, X, y):
        from sklearn.base import clone
        from sklearn.model_selection import GridSearchCV

        scaler = None if self.scaling == "none" else clone(_scaler(self.scaling))
        Xs = np.asarray(X) if scaler is None else scaler.fit_transform(X)
        y = np.asarray(y)
        rows = np.arange(len(Xs))
        if self.cv_rows and len(Xs) > int(self.cv_rows):
            rng = np.random.default_rng(self.random_state)
            rows = np.sort(rng.choice(len(Xs), int(self.cv_rows), replace=False))
        search = GridSearchCV(
            SVC(kernel="rbf", cache_size=SVM_CACHE_MB),
            {"C": self.c_grid, "gamma": self.gamma_grid},
            cv=self.cv,
            refit=False,
        ).fit(Xs[rows], y[rows])
        self.best_params_ = dict(search.best_params_)
        self.n_cv_fits_ = len(search.cv_results_["params"]) * self.cv
        self.cv_rows_used_ = int(len(rows))
        self.scaler_ = scaler
        final = DistinctRowsSVC if self.distinct else SVC
        self.svm_ = final(kernel="rbf", cache_size=SVM_CACHE_MB, **self.best_params_).fit(Xs, y)
        self.fit_rows_ = int(self.svm_.shape_fit_[0])
        return self


def distinct_rows(X, y=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct rows of ``X`` (of ``(X[i], y[i])`` pairs when ``y`` is given), decided on the exact
    bytes of each row: ``(first, inverse, counts)`` with ``X[first]`` the distinct rows in order of first
    occurrence, ``X[first][inverse] == X`` row for row and ``counts[r]`` the rows equal to ``X[first[r]]``.
    Rows with the same features and different labels are different pairs; rows whose values compare
    equal but whose bytes differ (``0.0`` and ``-0.0``) are kept apart, which is always safe."""
    X = np.ascontiguousarray(X)
    if X.ndim != 2:
        raise ValueError(f"distinct_rows needs a 2-d array, got shape {X.shape}")
    n = X.shape[0]
    parts = [X.view(np.uint8).reshape(n, -1)]
    if y is not None:
        y = np.asarray(y)
        if y.shape != (n,):
            raise ValueError(f"labels of shape {y.shape} for {n} rows")
        codes = np.unique(y, return_inverse=True)[1].astype(np.int64).reshape(n, 1)
        parts.append(codes.view(np.uint8))
    rows = np.ascontiguousarray(np.hstack(parts)) if len(parts) > 1 else parts[0]
    keys = rows.view(np.dtype((np.void, rows.shape[1]))).ravel()
    _, first, inverse, counts = np.unique(
        keys, return_index=True, return_inverse=True, return_counts=True
    )
    order = np.argsort(first, kind="stable")  # first occurrence order
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order], rank[inverse.ravel()], counts[order]


class DistinctRowsSVC(SVC):
    """libSVM's C-SVC (:class:`sklearn.svm.SVC`, same parameters) fitted on the distinct (row, label)
    pairs of its training data, each weighted by its count, and evaluated once per distinct row.

    The C-SVC's primal objective ½‖w‖² + Σ_i C·s_i·hinge_i sums one term per training row, so m rows
    with the same features and label (sample weights s_j) contribute exactly what one row with weight
    Σ s_j does (libSVM's per-row bound C·s_i): the fit solves the same optimisation problem as
    :class:`~sklearn.svm.SVC` on every row, its solution agreeing up to libSVM's stopping tolerance
    ``tol`` (the dual iterates differ, so not bit for bit).  Prediction and ``decision_function``
    evaluate each distinct input row once and expand the results back: bit for bit what ``SVC`` gives
    for the same fitted model.  Distinctness is decided on the exact bytes of the float64 rows libSVM
    receives (:func:`distinct_rows`).  ``fit_rows_`` is the number of rows the solver saw.
    """

    def fit(self, X, y, sample_weight=None):
        X = np.asarray(X, dtype=np.float64)
        first, inverse, _ = distinct_rows(X, y)
        weights = np.ones(len(X)) if sample_weight is None else np.asarray(sample_weight, float)
        super().fit(
            X[first],
            np.asarray(y)[first],
            sample_weight=np.bincount(inverse, weights=weights, minlength=first.size),
        )
        self.fit_rows_ = int(first.size)
        return self

    def _on_distinct(self, method, X):
        X = np.asarray(X, dtype=np.float64)
        first, inverse, _ = distinct_rows(X)
        return method(X[first])[inverse]

    def predict(self, X):
        return self._on_distinct(super().predict, X)

    def decision_function(self, X):
        return self._on_distinct(super().decision_function, X)


class LinearCSVC:
    """The C-SVC with the linear kernel, libSVM's formulation (Chang & Lin, "LIBSVM: a library for
    support vector machines", 2011, eq. (1) with K(x, x') = xᵀx'), solved to optimality:

        min over (w, b, ξ) of  ½‖w‖² + C Σᵢ sᵢ ξᵢ   subject to  yᵢ (wᵀxᵢ + b) ≥ 1 − ξᵢ,  ξᵢ ≥ 0,

    yᵢ = +1 for ``classes_[1]`` and −1 for ``classes_[0]``, the bias b not regularised, sᵢ the
    weight of row i.  The rows are first merged into their distinct (row, label) pairs, each
    weighted by its count (:func:`distinct_rows`): m equal pairs add m·C·ξ, as one pair with weight
    m does, so the problem is the one on every row.  The primal is a quadratic programme in
    d + 1 + (distinct pairs) variables, solved by Clarabel's interior-point method (Goulart & Chen
    2024) to its default relative gap and feasibility tolerances of 1e-8; the objective is divided
    by Σ sᵢ first (the same minimiser).  libSVM's SMO solver stops
    at a KKT violation of 1e-3 and needs up to 7·10⁷ iterations per fit at the top of libSVM's C
    grid on Table 2's projected features (docs/table2_protocol.md, where the two are compared).

    ``converged_`` is False (and a :class:`~sklearn.exceptions.ConvergenceWarning` is raised) when
    the solver stops short of its tolerances.  Prediction is ``classes_[1]`` where wᵀx + b > 0.
    """

    def __init__(self, C: float = 1.0):
        self.C = float(C)

    def fit(self, X, y):
        import clarabel
        import scipy.sparse as sp

        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y)
        self.classes_ = np.unique(y)
        if self.classes_.size != 2:
            raise ValueError(f"the C-SVC needs two classes, got {self.classes_.size}")
        if not (np.isfinite(self.C) and self.C > 0):
            raise ValueError(f"C must be positive and finite, got {self.C}")
        first, inverse, _ = distinct_rows(X, y)
        Xd, weights = X[first], np.bincount(inverse, minlength=first.size).astype(np.float64)
        sign = np.where(y[first] == self.classes_[1], 1.0, -1.0)
        m, d = Xd.shape
        total = weights.sum()  # objective / Σ s: the same minimiser, its size independent of n
        P = sp.block_diag([sp.identity(d) / total, sp.csc_matrix((1 + m, 1 + m))], format="csc")
        q = np.concatenate([np.zeros(d + 1), self.C * weights / total])
        slack = -sp.identity(m, format="csc")
        margin = sp.csc_matrix(-sign[:, None] * np.hstack([Xd, np.ones((m, 1))]))
        A = sp.vstack(
            [sp.hstack([sp.csc_matrix((m, d + 1)), slack]), sp.hstack([margin, slack])],
            format="csc",
        )
        b = np.concatenate([np.zeros(m), -np.ones(m)])
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        solution = clarabel.DefaultSolver(
            P, q, A, b, [clarabel.NonnegativeConeT(2 * m)], settings
        ).solve()
        x = np.asarray(solution.x, dtype=np.float64)
        self.coef_, self.intercept_ = x[:d].copy(), float(x[d])
        self.solver_status_ = str(solution.status)
        self.converged_ = self.solver_status_ == "Solved"
        self.fit_rows_ = int(m)
        if not self.converged_:
            warnings.warn(
                f"the C-SVC's solver stopped with status {self.solver_status_}",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def decision_function(self, X) -> np.ndarray:
        return np.asarray(X, dtype=np.float64) @ self.coef_ + self.intercept_

    def predict(self, X) -> np.ndarray:
        return self.classes_[(self.decision_function(X) > 0).astype(int)]

    def score(self, X, y) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))


class LinearCSVCSearch(_ScaledSVM):
    """libSVM's tuning workflow for the linear kernel (Hsu, Chang & Lin, "A Practical Guide to Support
    Vector Classification", sections 2.2 and 3.2; libSVM's ``svm-scale`` and ``tools/grid.py``):
    each feature scaled to [−1, 1] on the training rows, C chosen by ``folds``-fold cross-validation
    over ``c_grid`` on every training row, then one :class:`LinearCSVC` fit on all training rows
    with the chosen C.

    The folds are stratified by label and shuffled with ``random_state`` (``svm-train -v`` also
    stratifies, with C's ``rand``).  The score of a C is the share of training rows predicted
    correctly when held out (``svm-train -v``'s "Cross Validation Accuracy", pooled over the folds);
    among equal scores the smallest C wins, as in ``grid.py``.  Attributes: ``best_C_``,
    ``cv_accuracy_`` (one per C), ``n_fits_`` and ``n_fits_converged_`` (the cross-validation fits
    and the final one; a fold whose training part holds one class fits nothing and predicts that
    class, as ``svm-train`` does), ``fit_rows_`` (the distinct pairs the final fit saw).
    """

    def __init__(self, c_grid, *, folds: int = 5, scaling: str = "minmax", random_state: int = 0):
        self.c_grid = [float(c) for c in c_grid]
        self.folds, self.scaling, self.random_state = int(folds), scaling, int(random_state)

    def fit(self, X, y):
        from sklearn.base import clone
        from sklearn.model_selection import StratifiedKFold

        self.scaler_ = None if self.scaling == "none" else clone(_scaler(self.scaling))
        Xs = np.asarray(X) if self.scaler_ is None else self.scaler_.fit_transform(X)
        y = np.asarray(y)
        if np.unique(y).size != 2:
            raise ValueError("the C-SVC needs training rows of two classes")
        folds = StratifiedKFold(self.folds, shuffle=True, random_state=self.random_state)
        correct = np.zeros(len(self.c_grid), dtype=np.int64)
        fits = []
        with warnings.catch_warnings():  # a class with fewer rows than folds: some folds lack it
            warnings.filterwarnings("ignore", "The least populated class", UserWarning)
            splits = list(folds.split(Xs, y))
        for train, held in splits:
            labels = np.unique(y[train])
            for i, C in enumerate(self.c_grid):
                if labels.size < 2:  # as svm-train: a model of one class predicts that class
                    correct[i] += int(np.sum(y[held] == labels[0]))
                    continue
                model = LinearCSVC(C).fit(Xs[train], y[train])
                correct[i] += int(np.sum(model.predict(Xs[held]) == y[held]))
                fits.append(model.converged_)
        best = np.flatnonzero(correct == correct.max())
        self.best_C_ = min(self.c_grid[i] for i in best)  # the smallest C among the best (grid.py)
        self.cv_accuracy_ = correct / len(y)
        self.svm_ = LinearCSVC(self.best_C_).fit(Xs, y)
        fits.append(self.svm_.converged_)
        self.n_fits_, self.n_fits_converged_ = len(fits), int(sum(fits))
        self.fit_rows_ = self.svm_.fit_rows_
        return self


#: libSVM's kernel cache (MB) for the RBF fits; it changes only the speed, never the solution
SVM_CACHE_MB = 500


def rbf_svm_default(n_features: int, scaling: str = "minmax", *, distinct: bool = True):
    """libSVM's ``svm-train`` defaults after ``svm-scale``: RBF C-SVC with C = 1 and γ = 1/(number of
    features), features scaled to [-1, 1] on the training rows.  ``distinct``: the SVM is a
    :class:`DistinctRowsSVC` (the same problem, fitted on the distinct scaled (row, label) pairs with
    their counts as weights); ``False``: a plain :class:`~sklearn.svm.SVC` on every row."""
    from sklearn.pipeline import Pipeline

    svm = (DistinctRowsSVC if distinct else SVC)(
        kernel="rbf", C=1.0, gamma=1.0 / int(n_features), cache_size=SVM_CACHE_MB
    )
    return Pipeline([("scale", _scaler(scaling)), ("svm", svm)])


def fit_classifier(
    proto: dict, Z, y, *, random_state: int = 0, distinct: bool = True
) -> tuple[object, dict]:
    """Fit the Table-2 classifier ``proto["classifier"]`` on the training rows ``(Z, y)``.

    ``linear_csvc`` (the default: the paper's linear C-SVC, :class:`LinearCSVCSearch`, always fitted
    on the distinct pairs), ``rbf_default``, ``rbf`` or ``linear`` (liblinear).
    Returns the fitted model (``.score(X, y)``) and the record fields that say what was fitted and
    whether it converged: ``svm_C``, ``svm_gamma`` (None for the linear SVM), ``svm_fits`` (every fit:
    the cross-validation fits plus the final one), ``svm_fits_converged`` (those that stopped at the
    solver's tolerance: a fit that raised scikit-learn's ``ConvergenceWarning`` stopped at its
    iteration limit), ``svm_converged`` (all of them did), ``svm_duplicates`` (how the final fit
    treated repeated training rows: ``"weighted"``, the RBF classifiers with ``distinct``, fitted once
    per distinct scaled (row, label) pair with its count as sample weight, :class:`DistinctRowsSVC`;
    ``"kept"``, every row fitted) and ``svm_fit_rows`` (the rows the final fit's solver saw).
    ``distinct=False`` fits the RBF classifiers on every row (the same optimisation problem).
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        if proto["classifier"] == "linear_csvc":
            model = LinearCSVCSearch(
                log2_grid(proto["svm_log2_C"]),
                folds=proto["svm_cv_folds"],
                scaling=proto["feature_scaling"],
                random_state=random_state,
            ).fit(Z, y)
            C, gamma, fits, fit_rows = model.best_C_, None, model.n_fits_, model.fit_rows_
        elif proto["classifier"] == "linear":
            model = linear_svm_search(
                proto["svm_loss"],
                proto["feature_scaling"],
                proto["svm_C_grid"],
                cv=proto["svm_cv_folds"],
                max_iter=proto["svm_max_iter"],
            ).fit(Z, y)
            C, gamma = float(model.best_params_["svm__C"]), None
            fits = len(model.cv_results_["params"]) * proto["svm_cv_folds"] + 1
            fit_rows = int(len(Z))
        elif proto["classifier"] == "rbf_default":
            model = rbf_svm_default(Z.shape[1], proto["feature_scaling"], distinct=distinct).fit(
                Z, y
            )
            C, gamma, fits = 1.0, 1.0 / Z.shape[1], 1
            fit_rows = int(model.named_steps["svm"].shape_fit_[0])
        elif proto["classifier"] == "rbf":
            model = SubsetGridRBF(
                log2_grid(proto["svm_log2_C"]),
                log2_grid(proto["svm_log2_gamma"]),
                cv=proto["svm_cv_folds"],
                cv_rows=proto["svm_cv_rows"],
                scaling=proto["feature_scaling"],
                random_state=random_state,
                distinct=distinct,
            ).fit(Z, y)
            C, gamma, fits = (
                model.best_params_["C"],
                model.best_params_["gamma"],
                model.n_cv_fits_ + 1,
            )
            fit_rows = model.fit_rows_
        else:
            raise ValueError(
                f"classifier must be one of {CLASSIFIERS}, got {proto['classifier']!r}"
            )
    unconverged = min(fits, sum(issubclass(w.category, ConvergenceWarning) for w in caught))
    return model, {
        "svm_C": float(C),
        "svm_gamma": None if gamma is None else float(gamma),
        "svm_fits": int(fits),
        "svm_fits_converged": int(fits - unconverged),
        "svm_converged": unconverged == 0,
        "svm_duplicates": "weighted"
        if proto["classifier"] == "linear_csvc" or (distinct and proto["classifier"] != "linear")
        else "kept",
        "svm_fit_rows": int(fit_rows),
    }


class UnconvergedFitError(ValueError):
    """Classification records hold SVM fits that stopped at their iteration limit."""


def _flag_false(v) -> bool:
    return (
        v is not None
        and not (isinstance(v, float) and np.isnan(v))
        and str(v) not in ("True", "1", "1.0")
    )


def require_converged(records: pd.DataFrame, allow_unconverged: bool = False) -> pd.DataFrame:
    """``records`` (classification records), refused if any of their SVM fits did not converge.

    A record's fits converged if its ``svm_converged`` is true; a record without that field counts
    as not converged when its ``svm_convergence_warnings`` is positive.  Averaging a fit stopped at
    its iteration limit would put an unfinished optimisation into Table 2, so
    :class:`UnconvergedFitError` is raised unless ``allow_unconverged``.
    """
    if records.empty:
        return records
    has_flag = (
        records["svm_converged"].notna()
        if "svm_converged" in records
        else pd.Series(False, index=records.index)
    )
    bad = records["svm_converged"].map(_flag_false) if "svm_converged" in records else ~has_flag
    bad = bad & has_flag
    if "svm_convergence_warnings" in records:
        warned = pd.to_numeric(records["svm_convergence_warnings"], errors="coerce").fillna(0) > 0
        bad |= ~has_flag & warned
    if bad.any() and not allow_unconverged:
        groups = records[bad].groupby(["dataset", "mechanism"]).size()
        where = ", ".join(f"{d}/{m}: {c}" for (d, m), c in groups.items())
        raise UnconvergedFitError(
            f"{int(bad.sum())} classification record(s) hold SVM fits stopped at their iteration limit ({where}); "
            "re-run them with a classifier that converges (experiment.classifier=linear_csvc, rbf_default or rbf, or "
            "linear with svm_loss=squared_hinge)"
        )
    return records


def majority_label_accuracy(y_train: np.ndarray, y_test: np.ndarray) -> float:
    """Test accuracy of always predicting the training split's most frequent label (footnote 1's yardstick)."""
    values, counts = np.unique(y_train, return_counts=True)
    return float(np.mean(y_test == values[np.argmax(counts)]))
