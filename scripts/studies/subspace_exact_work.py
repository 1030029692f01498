"""Work of ``subspace_exact``: its public bound against measured time (docs/subspace_exact_privacy.md, §8).

For each case: the work bound :func:`mechanisms.subspace.exact_work_bound` (n, d, k and the public
bit bound of the lines' entries), whether the default cap refuses it, and, for the cases run, the
seconds of the exact search and seconds per work unit.  Rows are unit-ball Gaussian ("gauss"), the
same with a subnormal entry in every row ("subnormal"), or with entries whose exponents spread over
[-1020, 0] ("spread": lines of about 1,070 bits, the costly case).  Then the running time of two
neighbouring datasets (one row replaced by a copy of another): the time depends on the data.

    python scripts/studies/subspace_exact_work.py            # about a minute on a 2-core machine
    python scripts/studies/subspace_exact_work.py --quick    # skips the n = 16, k = 8 run (10 s)
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from mechanisms.rational_subspaces import candidate_flats, primitive_rows
from mechanisms.subspace import DEFAULT_MAX_WORK, exact_entry_bits, exact_work_bound


def rows(kind: str, n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "spread":
        X = np.ldexp(rng.uniform(0.5, 1.0, (n, d)), -rng.integers(0, 1020, (n, d)))
        X[:, 0] = 0.5
    else:
        X = rng.standard_normal((n, d))
    X = X / (np.linalg.norm(X, axis=1, keepdims=True) * 1.001)
    if kind == "subnormal":
        X[:, 0] = 5e-324 * rng.integers(1, 2**40, n)
    return X


def search_seconds(X: np.ndarray, k: int, precision_bits: int | None = None) -> float:
    start = time.perf_counter()
    candidate_flats(primitive_rows(X, precision_bits), k)
    return time.perf_counter() - start


CASES = [  # (kind, n, d, k, precision_bits, run)
    ("gauss", 16, 20, 8, None, False),
    ("gauss", 16, 20, 8, 64, True),
    ("subnormal", 2000, 20, 1, None, True),
    ("spread", 2000, 20, 1, None, True),
    ("spread", 200, 20, 2, None, True),
    ("spread", 50, 20, 3, None, True),
    ("spread", 12, 20, 6, None, True),
    ("gauss", 12, 20, 6, None, True),
    ("gauss", 50, 20, 3, 64, True),
]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="skip the n = 16, k = 8 run")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(f"default max_work = {DEFAULT_MAX_WORK:.0e}")
    print(
        "| rows | n | d | k | precision_bits | entry bits | work bound | default cap | seconds | µs per unit |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind, n, d, k, pb, run in CASES:
        bits = exact_entry_bits(1.0, False, pb)
        bound = exact_work_bound(n, d, k, bits)
        verdict = "refused" if bound > DEFAULT_MAX_WORK else "runs"
        secs = per = "—"
        if run and not (args.quick and k == 8):
            X = rows(kind, n, d, np.random.default_rng([args.seed, n, d, k]))
            t = search_seconds(X, k, pb)
            secs, per = f"{t:.2f}", f"{t / bound * 1e6:.3f}"
        pbs = "exact" if pb is None else str(pb)
        print(
            f"| {kind} | {n} | {d} | {k} | {pbs} | {bits} | {bound:.2g} | {verdict} | {secs} | {per} |"
        )
    rng = np.random.default_rng([args.seed, 1])
    X = rows("gauss", 60, 20, rng)
    Y = X.copy()
    Y[17] = X[16]
    times = {}
    for name, A in (("X", X), ("X' (row 17 := row 16)", Y)):
        times[name] = statistics.median(search_seconds(A, 2) for _ in range(15)) * 1e3
    print()
    print("neighbours, n = 60, d = 20, k = 2, median of 15 searches:")
    for name, ms in times.items():
        print(f"  {name}: {ms:.1f} ms")


if __name__ == "__main__":
    main()
