"""Utility of dp_pca (k = 1) and k_dp_pca (k = 2) on spiked covariance data, against n.

Model: z = N(0, I_d) + √λ · U s, s ~ N(0, I_k), U a uniformly random d × k orthonormal basis (the
spiked covariance I + λUUᵀ, sub-Gaussian: the papers' regime).  Rows are divided by the public bound
3·√(d + λk) and clipped onto the unit ball (``clip=True``; the count is a diagnostic).  Error: the
squared sine distance ‖UUᵀ − VVᵀ‖²_F / 2 (for k = 1, 1 − (uᵀv)²), against non-private PCA of the
same rows and, as a baseline, the Hardt–Price private power method (``noisy_power``, zCDP).

Usage::

    .venv/bin/python scripts/studies/dp_pca_spiked.py --k 2 --d 200 --epsilon 1 --delta 0.01 \\
        --trials 10 --out results/studies/k_dp_pca_spiked.csv
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics

import numpy as np

from mechanisms import get_mechanism


def sample(n, d, k, spike, rng):
    U = np.linalg.qr(rng.standard_normal((d, k)))[0]
    Z = rng.standard_normal((n, d)) + math.sqrt(spike) * rng.standard_normal((n, k)) @ U.T
    return Z / (3.0 * math.sqrt(d + spike * k)), U


def sin2(U, V):
    return float(np.linalg.norm(U @ U.T - V @ V.T, "fro") ** 2 / 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--d", type=int, default=200)
    ap.add_argument("--spike", type=float, default=10.0)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=0.01)
    ap.add_argument("--n", type=int, nargs="+", default=[5000, 10000, 20000, 50000, 100000])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    mech = "dp_pca" if a.k == 1 else "k_dp_pca"
    rows = []
    for n in a.n:
        errs: dict[str, list[float]] = {mech: [], "noisy_power": [], "pca": []}
        for t in range(a.trials):
            rng = np.random.default_rng([n, t])
            X, U = sample(n, a.d, a.k, a.spike, rng)
            kw = dict(epsilon=a.epsilon, delta=a.delta, clip=True)
            errs[mech].append(sin2(U, get_mechanism(mech)(X, a.k, rng=rng, **kw).components))
            np_out = get_mechanism("noisy_power")(X, a.k, rng=rng, calibration="zcdp", **kw)
            errs["noisy_power"].append(sin2(U, np_out.components))
            errs["pca"].append(sin2(U, get_mechanism("pca")(X, a.k, rng=rng, clip=True).components))
        for name, e in errs.items():
            rows.append(
                {
                    "mechanism": name,
                    "n": n,
                    "d": a.d,
                    "k": a.k,
                    "epsilon": a.epsilon,
                    "delta": a.delta,
                    "trials": a.trials,
                    "mean_sin2": statistics.fmean(e),
                    "sd_sin2": statistics.stdev(e) if len(e) > 1 else 0.0,
                }
            )
            print(f"n={n:>7} {name:>12}: sin^2 = {statistics.fmean(e):.4f}")
    if a.out:
        with open(a.out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
