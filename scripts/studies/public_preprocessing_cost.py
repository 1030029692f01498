"""What the insurance preprocessing from public bounds costs in utility, against the paper's.

The paper's preprocessing (``insurance``) scales by statistics of the data, so a recorded ε treats
the preprocessed matrix as the database; the one from public bounds (``insurance_public``:
:func:`experiments.data.uci.insurance_public_matrix`, the CoIL 2000 dictionary's declared codes)
gives ε about the raw records.  Its rows are smaller (every row divided by sqrt(85) instead of the
largest row norm), so the same ε buys less signal.  For each preprocessing this prints, for PCA
(non-private), PPCA (``ppca_iterative``: k exact vector-Bingham draws, ε-DP), MOD-SULQ (JMLR 2013
Algorithm 1, calibration of eq. (5), (ε, δ)-DP) and a uniformly random k-subspace, the mean and
standard deviation over ``--restarts`` seeds of q_F/q_F(PCA) (the fraction of the optimum reached:
comparable across scalings) and q_F/tr(A), with tr(A) of each matrix (A = XᵀX/n).  The seeds are
the harness's (:func:`experiments.runs.streams.mechanism_stream` with seed 0, subset 0), computed with
one BLAS thread as every run of the harness.

    PRIVPCA_DATA_DIR=<raw UCI files> python scripts/studies/public_preprocessing_cost.py
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time

import numpy as np

from experiments.data.uci import load_dataset
from experiments.runs.streams import mechanism_stream
from experiments.threads import pinned_blas
from mechanisms.metrics import optimal_q_F, q_F
from mechanisms.mod_sulq import mod_sulq
from mechanisms.ppca_iterative import ppca_iterative
from mechanisms.random_projection import random_subspace
from mechanisms.toolkit import PreparedData


def _mechanisms(epsilon: float, delta: float):
    return {
        "ppca_iterative": lambda X, k, rng: ppca_iterative(X, k, epsilon=epsilon, rng=rng),
        "mod_sulq": lambda X, k, rng: mod_sulq(X, k, epsilon=epsilon, delta=delta, rng=rng),
        "random": lambda X, k, rng: random_subspace(X, k, rng=rng),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=11, help="rank (the paper's for insurance: 11)")
    ap.add_argument("--epsilon", type=float, default=0.1)
    ap.add_argument("--delta", type=float, default=0.01)
    ap.add_argument("--restarts", type=int, default=20, help="seeds per mechanism")
    args = ap.parse_args(argv)
    print("$ python scripts/studies/public_preprocessing_cost.py " + shlex.join(sys.argv[1:]))
    print(
        f"insurance, k = {args.k}, epsilon = {args.epsilon}, delta = {args.delta}, "
        f"{args.restarts} seeds each (mean ± sd)\n"
    )
    print("| preprocessing | d | tr(A) | mechanism | q_F / q_F(PCA) | q_F / tr(A) | seconds |")
    print("|---|---:|---:|---|---:|---:|---:|")
    with pinned_blas():
        for preprocessing in ("paper", "public"):
            ds = load_dataset("insurance", preprocessing=preprocessing, download=False)
            data = PreparedData(ds.X)
            A = data.A  # XᵀX / n, as the harness records it
            trace = float(np.trace(A))
            best = optimal_q_F(A, args.k)
            head = f"| {ds.name} | {ds.d} | {trace:.4f} |"
            print(f"{head} pca | 1 | {best / trace:.4f} | |")
            for name, mech in _mechanisms(args.epsilon, args.delta).items():
                vals, t0 = [], time.perf_counter()
                for restart in range(args.restarts):
                    rng = np.random.default_rng(mechanism_stream(0, 0, restart))
                    vals.append(q_F(mech(data, args.k, rng).components, A))
                vals = np.array(vals)
                secs = (time.perf_counter() - t0) / args.restarts
                print(
                    f"{head} {name} | {np.mean(vals / best):.4f} ± {np.std(vals / best, ddof=1):.4f}"
                    f" | {np.mean(vals / trace):.4f} ± {np.std(vals / trace, ddof=1):.4f}"
                    f" | {secs:.2f} |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
