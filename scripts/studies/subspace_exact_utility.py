"""Utility of ``subspace_exact`` against the paper's (non-private) Algorithm 1.

Regime of Singhal–Steinke Lemma 4.4 (Problem 4.1), at its worst case (Lemma 4.3 tight): s_* = a
random k-plane of R^d (k = 2); ℓ rows of s_* on one line L of s_*, n − 2ℓ rows in general position
in s_*, and ℓ adversarial rows in general position in a second plane s' = span(L, a) ⊄ s_*.  Then
u(s_*) = n − 2ℓ, u(s') = ℓ and every other candidate scores 1, so the score gap is n − 3ℓ.

For each n the two mechanisms are run ``--trials`` times on one such data set (fresh noise each run):
"MC" = fraction of runs returning s_* with its Monte Carlo standard error sqrt(p(1−p)/trials);
"exact" = the success probability computed from the mechanism's own scores (fixed: the closed form
P[gap + TLap(2, ε, δ₀) > τ]; paper: ∫ p(x) Π_j F(x + G_* − G_j) dx over the TLap density p and CDF F, by
quadrature).  Prints a Markdown table and the sample bounds.

    python scripts/studies/subspace_exact_utility.py --epsilon 1 --delta 1e-6 --ell 1 --trials 300
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
import time

import numpy as np
from scipy import integrate

from mechanisms.metrics import projector_distance
from mechanisms.subspace import (
    exact_min_samples,
    exact_ptr_pass_probability,
    exact_ptr_threshold,
    paper_exact_min_samples,
    subspace_exact,
    truncated_laplace_params,
    truncated_laplace_survival,
)
from mechanisms.subspace._known_broken import _subspace_exact_paper_unfixed


def worst_case_data(
    n: int, d: int, ell: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Problem 4.1 data with gap exactly n − 3ℓ (k = 2); returns (X, orthonormal basis of s_*).

    The rows lie *exactly* in their subspaces (the estimator decides membership in exact arithmetic):
    integer combinations of integer vectors b₁, b₂, a with coefficients up to 2²⁰ in magnitude (general
    position within each plane), scaled by one power of two so that every norm is <= 1 (exact)."""
    if n < 3 * ell + 2:
        raise ValueError(f"n must be >= 3ℓ + 2 = {3 * ell + 2}")
    B = rng.integers(-3, 4, size=(d, 3))
    while np.linalg.matrix_rank(B) < 3:
        B = rng.integers(-3, 4, size=(d, 3))
    b1, b2, a = B[:, 0], B[:, 1], B[:, 2]  # s_* = span(b1, b2); L = span(b1); s' = span(b1, a)

    def combos(m, u, v):
        c = rng.integers(-(2**20), 2**20, size=(m, 2))
        c[c[:, 1] == 0, 1] = 1  # off the line L
        return np.outer(c[:, 0], u) + np.outer(c[:, 1], v)

    X = np.vstack([combos(n - 2 * ell, b1, b2), np.tile(b1, (ell, 1)), combos(ell, b1, a)]).astype(
        float
    )
    X /= 2.0 ** np.ceil(np.log2(np.linalg.norm(X, axis=1).max()))
    return X[rng.permutation(n)], np.linalg.qr(B[:, :2].astype(float))[0]


def paper_success_probability(gaps: np.ndarray, star: int, epsilon: float, delta: float) -> float:
    """P[argmax_j gaps_j + ξ_j = star], ξ_j i.i.d. TLap(2, ε, δ): ∫ p(x) Π_{j≠*} F(x + G_* − G_j) dx."""
    lam, A = truncated_laplace_params(2.0, epsilon, delta)
    B = 1 / (2 * lam * (1 - math.exp(-A / lam)))
    others = np.delete(gaps, star) - gaps[star]
    vals, mult = np.unique(others, return_counts=True)

    def integrand(x):
        out = B * math.exp(-abs(x) / lam)
        for v, m in zip(vals, mult):
            out *= (1.0 - truncated_laplace_survival(x - v, 2.0, epsilon, delta)) ** m
        return out

    return integrate.quad(integrand, -A, A, points=[0.0], limit=400)[0]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--ell", type=int, default=1)
    ap.add_argument("--d", type=int, default=4)
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument(
        "--n",
        type=int,
        nargs="*",
        default=None,
        help="sample sizes (default: a grid over both bounds)",
    )
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    eps, delta, ell, k = args.epsilon, args.delta, args.ell, 2
    b_fixed = exact_min_samples(ell, eps, delta)
    b_paper = paper_exact_min_samples(ell, eps, delta)
    ns = args.n or sorted({int(v) for v in np.linspace(3 * ell + 2, b_paper + 8, 14).round()})
    print(
        "command: python scripts/studies/subspace_exact_utility.py "
        + shlex.join(sys.argv[1:] if argv is None else argv)
    )
    print(
        f"eps={eps} delta={delta} ell={ell} k={k} d={args.d} trials={args.trials} seed={args.seed}; "
        f"worst-case Problem 4.1 data (gap = n - 3*ell)"
    )
    tau = exact_ptr_threshold(eps, delta)
    print(f"TLap(2, eps, delta0) bound A = {tau - 2:.2f}; threshold tau = 2 + A = {tau:.2f}")
    print(
        f"sure-success bounds: fixed n >= 3l + 2A + 2 = {b_fixed:.1f}; paper (our NULL score) "
        f"n >= 3l + 2 max(4 log(1/d)/e, 2A) + 2 = {b_paper:.1f}; paper as printed "
        f"3l + 8 log(1/d)/e + 2 = {3 * ell + 8 * math.log(1 / delta) / eps + 2:.1f}"
    )
    print()
    print("| n | gap | fixed: exact | fixed: MC ± s.e. | paper: exact | paper: MC ± s.e. |")
    print("|---|---|---|---|---|---|")
    t0 = time.perf_counter()
    for n in ns:
        X, U = worst_case_data(n, args.d, ell, np.random.default_rng([args.seed, n]))
        row = []
        for fn in (subspace_exact, _subspace_exact_paper_unfixed):
            hits = 0
            for t in range(args.trials):
                out = fn(
                    X,
                    k,
                    rng=np.random.default_rng([args.seed, n, t]),
                    epsilon=eps,
                    delta=delta,
                    ell=ell,
                    max_candidates=10**6,
                )
                hits += out.components is not None and projector_distance(out.components, U) < 1e-6
            p_mc = hits / args.trials
            row.append((out, p_mc, math.sqrt(p_mc * (1 - p_mc) / args.trials)))
        (fo, fp, fse), (po, pp, pse) = row
        gap = fo.diagnostics["gap"]
        assert gap == n - 3 * ell, (n, gap)
        p_fixed = exact_ptr_pass_probability(gap, eps, delta)
        # paper: NULL (score null_score) and the candidates; only the top one has a non-zero gap
        null, top, second = (
            po.diagnostics["null_score"],
            po.diagnostics["top_score"],
            po.diagnostics["second_score"],
        )
        m = po.diagnostics["n_candidates"] + 1  # candidates + NULL
        gaps = np.zeros(m)
        gaps[0] = max(0.0, top - second - 1.0)  # index 0 = the top one
        star = 0 if top == n - 2 * ell and top > null else 1  # s_* is the top, or has gap 0
        p_paper = paper_success_probability(gaps, star, eps, delta)
        print(
            f"| {n} | {gap:.0f} | {p_fixed:.4f} | {fp:.3f} ± {fse:.3f} | {p_paper:.4f} | {pp:.3f} ± {pse:.3f} |"
        )
        sys.stdout.flush()
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
