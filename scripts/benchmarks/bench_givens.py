"""Cost per chain-iteration of the PPCA chains, as paired ratios measured in one run.

  .venv/bin/python scripts/benchmarks/bench_givens.py --data-dir $PRIVPCA_DATA_DIR [--datasets ...]

For each UCI data set at its full n (ε = 0.1, B = n ε/2 A in its eigenbasis, its null space dropped
as PPCA does; a data set whose raw file is missing gets a synthetic spectrum of its Table 1 shape, as
in ``bench_sampler.py``), after equilibrating iterations, the CPU time of one chain-iteration
(1 Givens sweep) of

  * ``baseline``: the single-chain kernel with the moves taken row of V by row of V
    (``_baseline_givens.py``);
  * ``1 chain``: ``mechanisms.bingham.givens_sweeps`` on one chain per call (column by column,
    four rows of V per pass, angles from the tracked entries of QᵀBQ);
  * ``angle draws alone``: the k(d − k) angle draws of one sweep (``givens_angle``: Best–Fisher
    below κ = 25, the Gaussian envelope on sin(X/2) above) on the (a, c_ij) of the equilibrated
    state, without the rotations and bookkeeping: the share of an iteration that drawing the angles
    takes;
  * ``Best–Fisher draws alone``: the same draws with Best–Fisher at every κ;
  * ``lockstep``: the same kernel on ``--chains`` chains per call (per chain-iteration = call / chains);
  * ``driver's group``: the same kernel on as many chains per call as the chain driver puts together
    (``LOCKSTEP_BYTES`` of state, at most ``--chains``; its size is printed);
  * ``exact column``: one iteration of Hoff's sampler with exact column draws (``sampler=reference``);
  * ``rstiefel``: one iteration of the port of the paper's own sampler (``sampler=rstiefel``, Python;
    timed over ``--slow-iterations``).

Medians over ``--repeats`` interleaved repetitions, ratios to ``1 chain`` within each repetition.  The
machine's SIMD width is printed first (LLVM's host features), and for each data set the range of κ
over the pairs at the equilibrated state (the draws that the two "draws alone" columns time).  NumPy
runs with one BLAS thread, because CPU time counts every thread of the process.  Read the ratios,
not the times, on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import time

import _one_thread  # noqa: F401  (before NumPy: one BLAS thread)
import numpy as np
from _baseline_givens import givens_sweeps as baseline_sweeps
from bench_sampler import synthetic_spectrum
from numba import njit

from experiments.data.uci import DataUnavailableError, load_dataset
from mechanisms.bingham import kernel_states, null_space_split, run_bingham_chains
from mechanisms.bingham.chains import lockstep_group_size
from mechanisms.bingham.column import COLUMN_POWER_ITERATIONS, _proxy_rest, column_gibbs_sweeps
from mechanisms.bingham.givens import (
    KAPPA_GAUSSIAN_ENVELOPE,
    _givens_angle_best_fisher,
    givens_angle,
    givens_sweeps,
)
from mechanisms.bingham.rstiefel import rstiefel_gibbs_sweep

K = {"kddcup": 4, "census": 8, "localization": 10, "insurance": 11}
#: (d, n, Table 1's q_F(V_k)) of the data sets whose files may be missing
SYNTHETIC = {"localization": (44, 164_860, 0.5672)}


@njit(cache=True)
def _seed_baseline(seed):
    np.random.seed(seed)


def vector_width() -> str:
    """The widest SIMD extension LLVM reports for this CPU, as 'N-bit (M doubles)'."""
    import llvmlite.binding as llvm

    features = llvm.get_host_cpu_features()
    for name, bits in (("avx512f", 512), ("avx", 256), ("sse2", 128)):
        if features.get(name, False):
            return f"{bits}-bit ({bits // 64} doubles per register, {name})"
    return "unknown"


def _cpu(f, *args) -> float:
    t0 = time.process_time()
    f(*args)
    return time.process_time() - t0


def _spectrum(name, data_dir):
    X = np.asarray(load_dataset(name, data_dir=data_dir).X, dtype=np.float64)
    n = X.shape[0]
    return n * 0.1 / 2 * np.linalg.eigvalsh(X.T @ X / n)[::-1].copy()


def _equilibrated(b, k, chains, burn):
    """``chains`` states (C, d, r) of the reduced chain after ``burn`` iterations, and b on them."""
    active, _null, b0 = null_space_split(b, k)
    b_red = np.ascontiguousarray(b[active] - b0)
    rng = np.random.default_rng(2013)
    d = b.size
    Qt = np.empty((chains, d, active.size))
    for c in range(chains):
        Qt[c] = np.linalg.qr(rng.standard_normal((d, d)))[0][active].T
    state = kernel_states([np.random.default_rng([2013, c]) for c in range(chains)])
    givens_sweeps(
        Qt, b_red, k, burn, np.empty((chains, burn)), np.zeros((chains, k, active.size)), 1, state
    )
    return Qt, b_red, state


@njit(cache=True)
def _draw_angles(a, cij, state, reps, best_fisher_only):
    acc = 0.0
    for _ in range(reps):
        for t in range(a.size):
            if best_fisher_only:
                kappa = np.sqrt(a[t] * a[t] + cij[t] * cij[t])
                ct, st = _givens_angle_best_fisher(a[t], cij[t], kappa, state, 0)
            else:
                ct, st = givens_angle(a[t], cij[t], state, 0)
            acc += ct * st
    return acc


def _pair_parameters(Qt1, b, k):
    """(a, c_ij) of the k(d − k) pairs (i < k <= j) at the state ``Qt1`` (1, d, r): the von Mises
    parameters of their Givens angles, κ = ‖(a, c_ij)‖."""
    Q = Qt1[0]
    C = (Q * b) @ Q.T
    diag = np.diag(C)
    a = np.ascontiguousarray(((diag[:k, None] - diag[None, k:]) / 2).ravel())
    return a, np.ascontiguousarray(C[:k, k:].ravel())


def _time_angle_draws(a, cij, reps, state, best_fisher_only=False):
    """CPU time of one sweep's k(d − k) angle draws alone (``givens_angle``, or Best–Fisher at every
    κ), on the pairs' (a, c_ij) of :func:`_pair_parameters`."""
    _draw_angles(a[:1], cij[:1], state, 1, best_fisher_only)  # compiled before timing
    return _cpu(_draw_angles, a, cij, state, reps, best_fisher_only) / reps


def _time_kernel(Qt, b, k, it, state):
    C = Qt.shape[0]
    return _cpu(
        givens_sweeps, Qt, b, k, it, np.empty((C, it)), np.zeros((C, k, Qt.shape[2])), 1, state
    ) / (it * C)


def _time_baseline(Qt1, b, k, it):
    return _cpu(baseline_sweeps, Qt1, b, k, it, np.empty(it), np.zeros((k, Qt1.shape[1])), 1) / it


def _time_exact_column(b, k, V, it):
    rng = np.random.default_rng(5)
    d = b.size
    args = (
        V,
        b,
        _proxy_rest(b, k),
        rng,
        it,
        np.empty(it),
        np.zeros((d, k)),
        COLUMN_POWER_ITERATIONS,
    )
    return _cpu(column_gibbs_sweeps, *args, np.zeros(2, dtype=np.int64)) / it


def _time_rstiefel(b, k, V, it):
    rng = np.random.default_rng(6)
    B = np.diag(b)
    t0 = time.process_time()
    for _ in range(it):
        rstiefel_gibbs_sweep(V, B, rng)
    return (time.process_time() - t0) / it


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--datasets", nargs="+", default=list(K))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=20, help="timed Givens iterations per chain")
    ap.add_argument("--chains", type=int, default=10, help="chains per lockstep call")
    ap.add_argument("--burn", type=int, default=200)
    ap.add_argument("--slow-iterations", type=int, default=3)
    args = ap.parse_args(argv)
    print(f"# SIMD: {vector_width()}; load {os.getloadavg()}")
    print(f"# ms per chain-iteration (medians of {args.repeats}); ratios = other / '1 chain'")
    for name in args.datasets:
        k = K[name]
        try:
            b = _spectrum(name, args.data_dir)
        except DataUnavailableError:  # the shape of Table 1, a synthetic spectrum (bench_sampler's)
            d, n, q_F = SYNTHETIC[name]
            b = n * 0.1 / 2 * synthetic_spectrum(d, k, q_F)
            print(f"# {name}: raw data not found, synthetic spectrum of its shape", flush=True)
        Qt, b_red, state = _equilibrated(b, k, args.chains, args.burn)
        d, r = Qt.shape[1], Qt.shape[2]
        group = lockstep_group_size(args.chains, d, r)
        V0 = run_bingham_chains(
            b,
            k,
            rng=np.random.default_rng(1),
            n_chains=1,
            iterations=args.burn,
            track_F=False,
            sweeps_per_iteration=1,
        )["V"][0]
        a, cij = _pair_parameters(Qt[:1], b_red, k)
        kappa = np.hypot(a, cij)
        print(
            f"# {name}: κ of the pairs at the equilibrated state: min {kappa.min():.3g}, median "
            f"{np.median(kappa):.3g}, max {kappa.max():.3g}; "
            f"{np.mean(kappa < KAPPA_GAUSSIAN_ENVELOPE):.0%} below {KAPPA_GAUSSIAN_ENVELOPE:g}",
            flush=True,
        )
        _seed_baseline(1)
        keys = (
            "baseline",
            "1 chain",
            "angle draws alone",
            "Best–Fisher draws alone",
            "lockstep",
            "driver's group",
            "exact column",
            "rstiefel",
        )
        rows = {key: [] for key in keys}
        it = args.iterations
        for rep in range(args.repeats):
            one = _time_kernel(Qt[:1].copy(), b_red, k, it, state[:, :1].copy())
            rows["1 chain"].append(one)
            rows["baseline"].append(_time_baseline(Qt[0].copy(), b_red, k, it) / one)
            draws = _time_angle_draws(a, cij, it, state[:, :1].copy())
            rows["angle draws alone"].append(draws / one)
            bf = _time_angle_draws(a, cij, it, state[:, :1].copy(), True)
            rows["Best–Fisher draws alone"].append(bf / one)
            lock_it = max(1, it // 2)
            rows["lockstep"].append(_time_kernel(Qt.copy(), b_red, k, lock_it, state.copy()) / one)
            rows["driver's group"].append(
                _time_kernel(Qt[:group].copy(), b_red, k, lock_it, state[:, :group].copy()) / one
            )
            col_it = max(1, it // 4)
            rows["exact column"].append(
                _time_exact_column(b, k, np.ascontiguousarray(V0), col_it) / one
            )
            if args.slow_iterations > 0:
                rows["rstiefel"].append(_time_rstiefel(b, k, V0.copy(), args.slow_iterations) / one)
        one_ms = 1e3 * np.median(rows["1 chain"])
        ratios = "; ".join(
            f"{key} {np.median(v):.2f}x" for key, v in rows.items() if key != "1 chain" and v
        )
        print(
            f"{name:12s} d={d} r={r} k={k}: 1 chain {one_ms:.3f} ms; {ratios} "
            f"(driver's group: {group} chains)",
            flush=True,
        )


if __name__ == "__main__":
    main()
