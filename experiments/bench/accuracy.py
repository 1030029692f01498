"""Table 2's classification accuracy as a benchmark metric (JMLR 2013, section 6.4).

On a Table 2 cell (``kddcup-table2[-r<rows>]``, :mod:`experiments.bench.datasets`) the mechanism
releases a subspace U from the hold-out half of the permutation; the training and test rows (the
other half: 10% trains and tunes, the rest tests) are projected onto U and classified by the
paper's classifier as this project implements it for Table 2 (``linear_csvc``:
:class:`experiments.runs.classifiers.LinearCSVCSearch`, the linear C-SVC with libSVM's workflow:
features scaled to [-1, 1] on the training rows, C by 5-fold cross-validation over
2^-5, 2^-3, ..., 2^15, one final fit; docs/table2_protocol.md).  The classifier's random state is
the permutation's index, as in :func:`experiments.runs.classification.classification_round`.

The accuracy is post-processing of the release and of rows outside the database: it spends no
privacy.  A ⊥ release (no subspace) has no features to classify with and scores the majority-label
accuracy (the training rows' most frequent label predicted for every test row), the analogue of its
utility 0.
"""

from __future__ import annotations

import time

import numpy as np

from experiments.bench.datasets import TABLE2_PERMUTATION, Table2Rows

#: the Table 2 protocol's classifier fields (conf/experiment/classification.yaml's defaults)
CLASSIFIER = "linear_csvc"


def protocol() -> dict:
    """The classifier's protocol fields, the defaults of ``experiment=classification``."""
    from experiments.runs.settings import CV_FOLDS_DEFAULT, LOG2_C_DEFAULT

    return {
        "classifier": CLASSIFIER,
        "svm_log2_C": list(LOG2_C_DEFAULT[CLASSIFIER]),
        "svm_cv_folds": int(CV_FOLDS_DEFAULT[CLASSIFIER]),
        "feature_scaling": "minmax",
    }


def table2_accuracy(components: np.ndarray | None, rows: Table2Rows) -> dict:
    """Test accuracy of the Table 2 classifier on the rows projected onto ``components`` (d x k).

    Returns ``accuracy``, ``majority_accuracy``, ``svm_C``, ``svm_converged`` and
    ``accuracy_seconds`` (wall seconds of the projection and the fits)."""
    from experiments.runs.classifiers import fit_classifier, majority_label_accuracy

    t0 = time.perf_counter()
    majority = majority_label_accuracy(rows.y_train, rows.y_test)
    if components is None:
        return {"accuracy": majority, "majority_accuracy": majority, "svm_C": None,
                "svm_converged": None, "accuracy_seconds": time.perf_counter() - t0}  # fmt: skip
    V = np.asarray(components, dtype=np.float64)
    model, fit = fit_classifier(
        protocol(), rows.X_train @ V, rows.y_train, random_state=TABLE2_PERMUTATION
    )
    return {
        "accuracy": float(model.score(rows.X_test @ V, rows.y_test)),
        "majority_accuracy": majority,
        "svm_C": fit["svm_C"],
        "svm_converged": bool(fit["svm_converged"]),
        "accuracy_seconds": time.perf_counter() - t0,
    }
