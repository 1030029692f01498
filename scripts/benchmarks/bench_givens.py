"""Benchmark of the fast chain's kernel parts, as paired ratios measured in one run.

  .venv/bin/python scripts/benchmarks/bench_givens.py --data-dir $PRIVPCA_DATA_DIR [--datasets census insurance kddcup]

For each data set at the smallest and the largest n of the Figures 3-4 grid (ε = 0.1, B = n ε/2 A in
its eigenbasis), after 200 equilibrating iterations:
  * one Givens iteration (1 sweep) on the full state Q (d × d) against the null-space-reduced state
    (d × r, ``null_space_split``), as PPCA runs it: ratio full / reduced;
  * the angle draw of all k(d − k) moves of one sweep: ``givens_angle`` (trig-free) against
    ``vonmises_numba`` followed by cos/sin of θ = φ/2 (+π): ratio trig / trig-free.
Medians over --repeats interleaved repetitions (the machine is shared: read the ratios, not the times).
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np
from numba import njit

from mechanisms.bingham import (
    givens_angle,
    givens_sweeps,
    null_space_split,
    seed_numba,
    vonmises_numba,
)
from mechanisms.bingham.givens import _column_energy, _weighted_dot

K = {"census": 8, "insurance": 11, "kddcup": 4}


@njit(cache=True)
def _angles_trig_free(A, C):
    acc = 0.0
    for t in range(A.shape[0]):
        c, s = givens_angle(A[t], C[t])
        acc += c + s
    return acc


@njit(cache=True)
def _angles_trig(A, C):
    acc = 0.0
    for t in range(A.shape[0]):
        phi = vonmises_numba(math.atan2(C[t], A[t]), math.sqrt(A[t] * A[t] + C[t] * C[t]))
        theta = 0.5 * phi
        if np.random.random() < 0.5:
            theta += math.pi
        acc += math.cos(theta) + math.sin(theta)
    return acc


@njit(cache=True)
def _move_inputs(Qt, b, k, A, C):
    """(a, c_ij) of every move of a sweep at the current state (without moving)."""
    d = Qt.shape[0]
    t = 0
    for i in range(k):
        cii = _column_energy(Qt, b, i)
        for j in range(k, d):
            A[t] = 0.5 * (cii - _column_energy(Qt, b, j))
            C[t] = _weighted_dot(Qt, b, i, j)
            t += 1


def _cpu(f, *args):
    t0 = time.process_time()
    f(*args)
    return time.process_time() - t0


def main(argv=None):
    from experiments.datasets import load_dataset
    from experiments.jmlr import n_grid

    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--datasets", nargs="+", default=list(K))
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument(
        "--iterations", type=int, default=20, help="timed Givens iterations per repetition"
    )
    args = ap.parse_args(argv)
    print(f"# paired medians over {args.repeats} interleaved repetitions; load {os.getloadavg()}")
    for name in args.datasets:
        X = np.asarray(load_dataset(name, data_dir=args.data_dir).X, dtype=np.float64)
        k = K[name]
        grid = n_grid(X.shape[0], 1000, 8)
        for n in (grid[0], grid[-1]):
            rng = np.random.default_rng([2013, n])
            Xn = X[rng.choice(X.shape[0], n, replace=False)] if n < X.shape[0] else X
            b = n * 0.1 / 2 * np.linalg.eigvalsh(Xn.T @ Xn / n)[::-1].copy()
            d = b.size
            active, null, b0 = null_space_split(b, k)
            b_red = np.ascontiguousarray(b[active] - b0)
            Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
            seed_numba(1)
            full = np.ascontiguousarray(Q.T)
            givens_sweeps(full, b, k, 200, np.empty(200), np.zeros((k, d)), 1)
            red = np.ascontiguousarray(full[:, active])  # the same state's active block
            A = np.empty(k * (d - k))
            C = np.empty(k * (d - k))
            _move_inputs(full, b, k, A, C)
            it = args.iterations
            state_ratio, angle_ratio, t_full, t_red = [], [], [], []
            for rep in range(args.repeats):
                seed_numba(rep)
                tf = _cpu(givens_sweeps, full.copy(), b, k, it, np.empty(it), np.zeros((k, d)), 1)
                seed_numba(rep)
                tr = _cpu(
                    givens_sweeps,
                    red.copy(),
                    b_red,
                    k,
                    it,
                    np.empty(it),
                    np.zeros((k, active.size)),
                    1,
                )
                ta = _cpu(_angles_trig, A, C)
                tb = _cpu(_angles_trig_free, A, C)
                state_ratio.append(tf / tr)
                angle_ratio.append(ta / tb)
                t_full.append(tf / it)
                t_red.append(tr / it)
            print(
                f"{name:9s} n={n:7d} d={d} r={active.size:3d} k={k}: ms/iteration full {1e3 * np.median(t_full):.3f}, "
                f"reduced {1e3 * np.median(t_red):.3f}; ratio full/reduced {np.median(state_ratio):.2f}; "
                f"angle draw trig/trig-free {np.median(angle_ratio):.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
