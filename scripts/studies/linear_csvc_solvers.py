"""Table 2's linear C-SVC solved two ways on one paper-scale kddcup round: libSVM's SMO (scikit-learn's
``SVC(kernel="linear")``, stopping tolerance 1e-3, no iteration limit) and the interior-point solver
the harness uses (``experiments.runs.classifiers.LinearCSVC``).  Both fit the same problem, on the distinct
scaled (row, label) pairs weighted by their counts; for each C this prints each solver's seconds,
libSVM's iteration count, the primal objective of each solution on every training row, and the test
accuracy of each and the number of test rows on which their predictions differ.

The round: permutation ``--permutation`` of ``experiments.runs.classification.run_classification``'s split, a
Haar-uniform 4-dimensional subspace drawn from ``default_rng(--subspace-seed)`` (the ``random``
mechanism's law), features scaled to [-1, 1] on the training rows (svm-scale).

    python scripts/studies/linear_csvc_solvers.py --C 0.03125 0.5 8 128 2048 32768
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np
from sklearn.preprocessing import MinMaxScaler

from experiments.data.uci import load_dataset
from experiments.runs.classifiers import (
    SVM_CACHE_MB,
    DistinctRowsSVC,
    LinearCSVC,
    classification_split,
)
from mechanisms.linalg import random_orthonormal


def primal_objective(w, b, C, Z, y) -> float:
    """½‖w‖² + C Σᵢ max(0, 1 − yᵢ(wᵀzᵢ + b)) over every training row (labels 1 -> +1, 0 -> −1)."""
    sign = np.where(y == 1, 1.0, -1.0)
    return float(0.5 * w @ w + C * np.maximum(0.0, 1.0 - sign * (Z @ w + b)).sum())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--C", type=float, nargs="+", default=[2.0**e for e in range(-5, 16, 4)])
    ap.add_argument("--permutation", type=int, default=4)
    ap.add_argument("--subspace-seed", type=int, default=1)
    ap.add_argument("--data-dir", default=None, help="raw UCI files (default: PRIVPCA_DATA_DIR)")
    args = ap.parse_args(argv)

    ds = load_dataset("kddcup", data_dir=args.data_dir, download=False)
    y_all = (np.asarray(ds.y).astype(str) == "normal.").astype(int)
    _, train, test = classification_split(ds.X.shape[0], 0, args.permutation)
    V = random_orthonormal(ds.X.shape[1], 4, np.random.default_rng(args.subspace_seed))
    scaler = MinMaxScaler((-1.0, 1.0)).fit(ds.X[train] @ V)
    Z, Z_test = scaler.transform(ds.X[train] @ V), scaler.transform(ds.X[test] @ V)
    y, y_test = y_all[train], y_all[test]
    print(f"training rows {len(y)}, test rows {len(y_test)}")
    print(
        "C | interior point: s, objective, accuracy | libSVM: s, iterations, objective, accuracy | "
        "objective ratio libSVM/interior | test predictions that differ"
    )
    for C in args.C:
        t0 = time.perf_counter()
        ours = LinearCSVC(C).fit(Z, y)
        t_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        ref = DistinctRowsSVC(kernel="linear", C=C, cache_size=SVM_CACHE_MB).fit(Z, y)
        t_ref = time.perf_counter() - t0
        o_ours = primal_objective(ours.coef_, ours.intercept_, C, Z, y)
        o_ref = primal_objective(ref.coef_.ravel(), float(ref.intercept_[0]), C, Z, y)
        p_ours, p_ref = ours.predict(Z_test), ref.predict(Z_test)
        print(
            f"{C:g} | {t_ours:.2f}, {o_ours:.6g}, {np.mean(p_ours == y_test):.5f} | "
            f"{t_ref:.2f}, {int(np.sum(ref.n_iter_))}, {o_ref:.6g}, {np.mean(p_ref == y_test):.5f} | "
            f"{o_ref / o_ours:.7f} | {int(np.sum(p_ours != p_ref))}",
            flush=True,
        )


if __name__ == "__main__":
    main()
