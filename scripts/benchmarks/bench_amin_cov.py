"""Wall and CPU time of ``amin_cov`` (Amin et al. 2019) on a UCI data set, one BLAS thread.

Each repeat calls the mechanism on the whole data set (an array, so the second moment is formed
inside the call, from the rows in canonical order) and reports the medians over the repeats of the
call and of its parts: the second moment (sort + XᵀX), the eigenvalues, and the k (or r − 1)
eigenvector draws.  The parts are timed by repeating them outside the mechanism, on the same data.

Usage::

    PRIVPCA_DATA_DIR=... .venv/bin/python scripts/benchmarks/bench_amin_cov.py --dataset census \\
        --k 8 --repeats 5 [--rank 512]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import _one_thread  # noqa: F401  (before NumPy: one BLAS thread)
import numpy as np

from mechanisms.amin_cov import _canonical_second_moment, amin_cov


def _timed(f):
    w, c = time.perf_counter(), time.process_time()
    out = f()
    return out, time.perf_counter() - w, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="census")
    ap.add_argument("--data-dir", default=os.environ.get("PRIVPCA_DATA_DIR"))
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--rank", type=int, default=None)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    from experiments.data.uci import load_dataset

    X = np.ascontiguousarray(load_dataset(args.dataset, data_dir=args.data_dir).X, dtype=np.float64)
    n, d = X.shape
    rows = {"call": [], "second_moment": [], "eigvalsh": []}
    cpu = []
    for rep in range(args.repeats):
        _, w, c = _timed(
            lambda: amin_cov(
                X, args.k, epsilon=args.epsilon, rng=np.random.default_rng(rep), rank=args.rank
            )
        )
        rows["call"].append(w)
        cpu.append(c)
        A, w, _ = _timed(lambda: _canonical_second_moment(X))
        rows["second_moment"].append(w)
        _, w, _ = _timed(lambda: np.linalg.eigvalsh(A))
        rows["eigvalsh"].append(w)
    med = {k: statistics.median(v) for k, v in rows.items()}
    med["draws_and_rest"] = med["call"] - med["second_moment"] - med["eigvalsh"]
    print(
        json.dumps(
            {
                "dataset": args.dataset,
                "n": n,
                "d": d,
                "k": args.k,
                "rank": args.rank or args.k,
                "epsilon": args.epsilon,
                "repeats": args.repeats,
                "median_wall_s": {k: round(v, 3) for k, v in med.items()},
                "median_cpu_s_call": round(statistics.median(cpu), 3),
                "load_average": os.getloadavg(),
            }
        )
    )


if __name__ == "__main__":
    main()
