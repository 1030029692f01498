"""Seconds per call of the covariance mechanisms (Dong, Liang & Yi; CoinPress) at census's shape.

Rows are random points of the unit ball (n = 99,762, d = 512, k = 10: census's shape; the time does
not depend on the values), BLAS limited to one thread; the median of ``--repeats`` calls per
mechanism, each on the same PreparedData-free array (the mechanisms compute their own XᵀX).

    python scripts/benchmarks/bench_covariance.py --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

from mechanisms import get_mechanism

NAMES = [
    "gauss_cov",
    "separate_cov",
    "adaptive_cov",
    "lap_cov",
    "separate_lap_cov",
    "coinpress_cov",
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=99762)
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.n, args.d))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * rng.uniform(1.0, 3.0, (args.n, 1))
    with threadpool_limits(limits=1, user_api="blas"):
        for name in NAMES:
            fn = get_mechanism(name)
            params = {"epsilon": 1.0} if "lap" in name else {"epsilon": 1.0, "delta": 1e-5}
            fn(X[:1000], args.k, rng=np.random.default_rng(0), **params)  # imports, caches
            times = []
            for r in range(args.repeats):
                t0 = time.perf_counter()
                fn(X, args.k, rng=np.random.default_rng(r), **params)
                times.append(time.perf_counter() - t0)
            print(f"{name:18s} median {statistics.median(times):6.2f} s  ({args.repeats} calls)")


if __name__ == "__main__":
    main()
