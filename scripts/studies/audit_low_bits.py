"""Do an honest mechanism's lowest mantissa bits differ in law between neighbouring datasets?

For each design (the design audit's pair and a few of the search's catalogue), the mechanism is run
``--trials`` times on each dataset; every output is reduced to the search's bit-level statistics
(``experiments.audit.statistics.BitFeatures``: the two lowest mantissa bits of every entry of
``components`` and the number of entries whose lowest bit is 1).  For every statistic this prints the
frequency of "bit = 1" (or the mean count) under D and D′ and the two-sample z score; then, as the
search does, one (statistic, event) is chosen on the first half of the runs and certified by
Clopper–Pearson on the second half: a valid lower bound on the ε of the code as run (floating point
included), so a bound above 0 on an honest mechanism would be a real finding.  To tell a leak through
the bits from a difference in the values the bits belong to, the entry with the largest |z| is
stratified by its binade (the exponent of |entry|): per binade, the frequency of its lowest bit under
D and D′, and the frequency under D′ predicted from D's per-binade frequencies and D′'s binades.

    python scripts/studies/audit_low_bits.py --mechanism mod_sulq --trials 100000
"""

from __future__ import annotations

import argparse
import math
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np

from experiments.audit.bounds import choose_event, epsilon_lower_bound
from experiments.audit.common import audit_params, resolve
from experiments.audit.designs import catalogue, design_for
from experiments.audit.statistics import BitFeatures, mantissa_bits

#: catalogue designs measured beside the design audit's own pair
CATALOGUE_DESIGNS = ("zero-base n=2 d=2", "small n=2 d=2", "rank1-base c=1 d=3", "k2 c=1 d=4")


def bit_statistics(fn, des, trials: int, seed: int, j: int, params: dict):
    """Bit-level statistics (trials x m) and the components (trials x d·k) of ``trials`` runs on
    each dataset of ``des``."""
    bits = BitFeatures((des.X1.shape[1], des.k), 2)
    stats, values = [], []
    for side, X in ((1, des.X1), (0, des.X0)):
        rng = np.random.default_rng([seed, 41, j, side])
        V = np.array([fn(X, des.k, rng=rng, **params).components for _ in range(trials)])
        values.append(V.reshape(trials, -1))
        stats.append(np.array([bits(v) for v in V]))
    return bits.names, stats[0], stats[1], values[0], values[1]


def by_binade(v1: np.ndarray, v0: np.ndarray, min_count: int = 200) -> None:
    """Print the lowest bit's frequency per binade of one entry under D (``v1``) and D′ (``v0``)."""
    b1, b0 = mantissa_bits(v1)[:, 0], mantissa_bits(v0)[:, 0]
    x1, x0 = np.frexp(np.abs(v1))[1], np.frexp(np.abs(v0))[1]
    print("| binade of the entry | runs under D | under D′ | bit 0 = 1 under D | under D′ | z |")
    print("|---|---|---|---|---|---|")
    predicted = 0.0
    for x in sorted(set(x1.tolist()) | set(x0.tolist())):
        m1, m0 = x1 == x, x0 == x
        if m1.any():
            predicted += m0.mean() * b1[m1].mean()
        if m1.sum() < min_count or m0.sum() < min_count:
            continue
        p1, p0 = b1[m1].mean(), b0[m0].mean()
        se = math.sqrt(p1 * (1 - p1) / m1.sum() + p0 * (1 - p0) / m0.sum())
        z = (p1 - p0) / se if se > 0 else 0.0
        print(f"| [2^{x - 1}, 2^{x}) | {m1.sum()} | {m0.sum()} | {p1:.4f} | {p0:.4f} | {z:+.2f} |")
    print(
        f"\nbit 0 = 1 under D′: observed {b0.mean():.4f}, predicted from D's per-binade frequencies and "
        f"D′'s binades {predicted:.4f} (under D {b1.mean():.4f})"
    )


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
        names, S1, S0, V1, V0 = bit_statistics(fn, des, args.trials, args.seed, j, params)
        print(f"\n## {name}, design {des.name} ({des.description}), {args.trials} runs per dataset")
        print("| statistic | mean under D | mean under D′ | z |")
        print("|---|---|---|---|")
        zs = []
        for f, nm in enumerate(names):
            a, b = S1[:, f], S0[:, f]
            se = np.sqrt(a.var() / a.size + b.var() / b.size)
            zs.append((a.mean() - b.mean()) / se if se > 0 else 0.0)
            print(f"| {nm} | {a.mean():.4f} | {b.mean():.4f} | {zs[-1]:+.2f} |")
        best = {"epsilon_lower": -1.0}
        for f in range(len(names)):
            ev = choose_event(S1[:half, f], S0[:half, f], args.delta, alpha)
            if ev.get("epsilon_lower", -1.0) > best["epsilon_lower"]:
                best = {**ev, "feature": f}
        hi, lo = (
            (S1[half:], S0[half:]) if best["orientation"] == "D1>D0" else (S0[half:], S1[half:])
        )
        col, t = best["feature"], best["threshold"]

        def count(s):
            return (
                int(np.sum(s[:, col] >= t))
                if best["tail"] == "upper"
                else int(np.sum(s[:, col] <= t))
            )

        n = hi.shape[0]
        bound = float(epsilon_lower_bound(count(hi), n, count(lo), n, args.delta, alpha))
        print(
            f"\nlargest |z| {max(map(abs, zs)):.2f} over {len(names)} statistics; event chosen on the "
            f"first half (bound {best['epsilon_lower']:.3f} there): {names[col]} "
            f"{'>=' if best['tail'] == 'upper' else '<='} {t:g} ({best['orientation']}), certified on "
            f"the second half ({n} runs per dataset): epsilon_lower = {bound:.3f} at confidence "
            f"{args.confidence:g} ({time.perf_counter() - t0:.0f} s)\n"
        )
        entry = int(
            np.argmax([abs(z) if nm.startswith("bit0[") else 0.0 for nm, z in zip(names, zs)])
        )
        cell = [nm for nm in names if nm.startswith("bit0[")].index(names[entry])
        print(f"{names[entry]} by binade:\n")
        by_binade(V1[:, cell], V0[:, cell])


if __name__ == "__main__":
    main()
