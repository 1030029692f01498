"""Wall and CPU time of ``dp_pca`` and ``k_dp_pca`` on a UCI data set, one BLAS thread.

Each repeat calls the mechanism on the whole data set (an array) with a fresh generator; the
conversion of (ε, δ) into ρ (dp-accounting, cached per (ε, δ) for the process) is timed apart, once,
before the repeats, and reported as ``budget_seconds``.

Usage::

    PRIVPCA_DATA_DIR=... .venv/bin/python scripts/benchmarks/bench_dp_pca.py --dataset census \\
        --k 2 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import _one_thread  # noqa: F401  (before NumPy: one BLAS thread)
import numpy as np

from mechanisms.calibration import zcdp_budget
from mechanisms.dp_pca import dp_pca
from mechanisms.k_dp_pca import k_dp_pca


def _timed(f):
    w, c = time.perf_counter(), time.process_time()
    f()
    return time.perf_counter() - w, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="census")
    ap.add_argument("--data-dir", default=os.environ.get("PRIVPCA_DATA_DIR"))
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    from experiments.data.uci import load_dataset

    X = np.ascontiguousarray(load_dataset(args.dataset, data_dir=args.data_dir).X, dtype=np.float64)
    budget, _ = _timed(lambda: zcdp_budget(args.epsilon, args.delta, None))
    rows = {}
    for name, fn, k in (("dp_pca", dp_pca, 1), ("k_dp_pca", k_dp_pca, args.k)):
        walls, cpus = [], []
        for r in range(args.repeats):
            rng = np.random.default_rng(r)
            w, c = _timed(lambda: fn(X, k, rng=rng, epsilon=args.epsilon, delta=args.delta))
            walls.append(w)
            cpus.append(c)
        rows[name] = {
            "k": k,
            "median_wall_seconds": statistics.median(walls),
            "median_cpu_seconds": statistics.median(cpus),
            "walls": walls,
        }
    print(
        json.dumps(
            {
                "dataset": args.dataset,
                "n": int(X.shape[0]),
                "d": int(X.shape[1]),
                "epsilon": args.epsilon,
                "delta": args.delta,
                "budget_seconds": budget,
                "mechanisms": rows,
                "load_average": os.getloadavg(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
