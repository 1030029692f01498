"""Do an honest mechanism's lowest mantissa bits differ in law between neighbouring datasets?

For each design (the design audit's pair and a few of the search's catalogue), the mechanism is run
``--trials`` times on each dataset; every output is reduced to the search's bit-level statistics
(``experiments.audit.statistics.BitFeatures``: the two lowest mantissa bits of every entry of
``components`` and the number of entries whose lowest bit is 1).  For every statistic this prints the
frequency of "bit = 1" (or the mean count) under D and D′ and the two-sample z score; then, as the
search does, one (statistic, event) is chosen on the first half of the runs and certified by
Clopper–Pearson on the second half: a valid lower bound on the ε of the code as run (floating point
included), so a bound above 0 on an honest mechanism would be a real finding.

    python scripts/studies/audit_low_bits.py --mechanism mod_sulq --trials 100000
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np

from experiments.audit.bounds import choose_event, epsilon_lower_bound
from experiments.audit.common import audit_params, resolve
from experiments.audit.designs import catalogue, design_for
from experiments.audit.statistics import BitFeatures

#: catalogue designs measured beside the design audit's own pair
CATALOGUE_DESIGNS = ("zero-base n=2 d=2", "small n=2 d=2", "rank1-base c=1 d=3", "k2 c=1 d=4")


def bit_statistics(fn, des, trials: int, seed: int, j: int, params: dict):
    """Bit-level statistics (trials x m) of ``trials`` runs on each dataset of ``des``."""
    bits = BitFeatures((des.X1.shape[1], des.k), 2)
    out = []
    for side, X in ((1, des.X1), (0, des.X0)):
        rng = np.random.default_rng([seed, 41, j, side])
        out.append(
            np.array([bits(fn(X, des.k, rng=rng, **params).components) for _ in range(trials)])
        )
    return bits.names, out[0], out[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mechanism", default="mod_sulq")
    ap.add_argument("--trials", type=int, default=100_000, help="runs per dataset and design")
    ap.add_argument("--epsilon", type=float, default=2.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--confidence", type=float, default=0.95)
    args = ap.parse_args()
    name, fn = resolve(args.mechanism)
    params = audit_params(fn, name, args.epsilon, args.delta, {})
    probe = np.zeros((100, 3))
    probe[0, 0] = 1.0
    relation = fn(probe, 1, rng=np.random.default_rng(0), **params).guarantee.neighbouring
    cat = {
        d.name: d for d in catalogue(relation, name=name, epsilon=args.epsilon, delta=args.delta)
    }
    designs = [design_for(name, relation, epsilon=args.epsilon, delta=args.delta)]
    designs += [cat[nm] for nm in CATALOGUE_DESIGNS if nm in cat]
    alpha = 1.0 - args.confidence
    half = args.trials // 2
    for j, des in enumerate(designs):
        t0 = time.perf_counter()
        names, S1, S0 = bit_statistics(fn, des, args.trials, args.seed, j, params)
        print(f"\n## {name}, design {des.name} ({des.description}), {args.trials} runs per dataset")
        print("| statistic | mean under D | mean under D′ | z |")
        print("|---|---|---|---|")
        zmax = 0.0
        for f, nm in enumerate(names):
            a, b = S1[:, f], S0[:, f]
            se = np.sqrt(a.var() / a.size + b.var() / b.size)
            z = (a.mean() - b.mean()) / se if se > 0 else 0.0
            zmax = max(zmax, abs(z))
            print(f"| {nm} | {a.mean():.4f} | {b.mean():.4f} | {z:+.2f} |")
        best = {"epsilon_lower": -1.0}
        for f in range(len(names)):
            ev = choose_event(S1[:half, f], S0[:half, f], args.delta, alpha)
            if ev.get("epsilon_lower", -1.0) > best["epsilon_lower"]:
                best = {**ev, "feature": f}
        hi, lo = (
            (S1[half:], S0[half:]) if best["orientation"] == "D1>D0" else (S0[half:], S1[half:])
        )
        col = best["feature"]

        def count(s):
            t = best["threshold"]
            return (
                int(np.sum(s[:, col] >= t))
                if best["tail"] == "upper"
                else int(np.sum(s[:, col] <= t))
            )

        n = hi.shape[0]
        bound = float(epsilon_lower_bound(count(hi), n, count(lo), n, args.delta, alpha))
        print(
            f"\nlargest |z| {zmax:.2f} over {len(names)} statistics; event chosen on the first half: "
            f"{names[col]} {'>=' if best['tail'] == 'upper' else '<='} {best['threshold']:g} "
            f"({best['orientation']}), certified on the second half ({n} runs per dataset): "
            f"epsilon_lower = {bound:.3f} at confidence {args.confidence:g} "
            f"({time.perf_counter() - t0:.0f} s)"
        )


if __name__ == "__main__":
    main()
