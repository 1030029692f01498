"""The condensed-regime oracle of BMF(B) (mechanisms/bingham/condensed.py) as a check of the PPCA
chains at the concentrations PPCA runs at: d = 512 and the real data sets' own B = (nε/2)·A.

Three parts, printed as Markdown tables (docs/sampler.md, "The condensed regime"):

``limit``
    the importance-sampling oracle against the condensed limit (k = 1, 2; B and 1.1·B) on the
    synthetic d = 512 spectrum of the tests, and for k = 1 against exact ACG draws.
``chains``
    the left and fast Givens chains against the oracle on that spectrum: z-scores of the chains'
    means (final states of independent chains from Haar starts) for B and 1.1·B, after 1 and 20
    iterations.
``data``
    the same on each data set's B at a given ε and k (full n; needs ``PRIVPCA_DATA_DIR``): the
    leakages, the oracle's effective sample size, the limit's gap, and the fast Givens chain's
    z-scores after ``--iterations`` iterations, two seeds each.

Usage::

    .venv/bin/python scripts/studies/bingham_condensed_oracle.py limit
    .venv/bin/python scripts/studies/bingham_condensed_oracle.py chains
    PRIVPCA_DATA_DIR=... .venv/bin/python scripts/studies/bingham_condensed_oracle.py data
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from threadpoolctl import threadpool_limits

from mechanisms.bingham import run_bingham_chains
from mechanisms.bingham.condensed import condensed_limit, condensed_moments, frame_statistics
from mechanisms.bingham.vector import sample_vector_bingham

#: the spectrum of tests/mechanisms/test_bingham_condensed.py (CONDENSED_LAM)
SYNTHETIC = np.concatenate(
    [[1000.0, 800.0, 150.0, 130.0, 110.0], np.linspace(2.0, 0.0, 100), np.zeros(407)]
)
#: (data set, ε, k): condensed cells of the paper's data sets at full n
DATA_CELLS = (("kddcup", 0.1, 4), ("census", 0.5, 4), ("census", 1.0, 8), ("insurance", 1.0, 2))


def _predicted(lim, lam) -> dict[str, float]:
    return {"row1": lim.row_sq[0], "subspace": lim.subspace, "q": lim.energy() / lam[0]}


def _chains(lam, k, sampler, n_chains, iterations, seed):
    with threadpool_limits(limits=1, user_api="blas"):
        res = run_bingham_chains(
            lam,
            k,
            rng=np.random.default_rng(seed),
            sampler=sampler,
            n_chains=n_chains,
            iterations=iterations,
            progress=False,
            record_every=iterations,
        )
    return res["V"]


def limit(args) -> None:
    print("| k | B | statistic | oracle ± SE | limit | gap | exact (k = 1) ± SE | ESS / draws |")
    print("|---|---|---|---|---|---|---|---|")
    for k in (1, 2):
        for scale in (1.0, 1.1):
            lam = SYNTHETIC * scale
            oracle = condensed_moments(lam, k, args.draws, rng=np.random.default_rng(args.seed))
            lim = condensed_limit(lam, k)
            exact = None
            if k == 1 and scale == 1.0:
                x = sample_vector_bingham(
                    eig=(lam, None), size=args.draws, rng=np.random.default_rng(args.seed + 1)
                )
                exact = frame_statistics(x[:, :, None], lam, 1)
            for key, value in _predicted(lim, lam).items():
                ex = ""
                if exact is not None:
                    e = exact[key]
                    ex = f"{e.mean():.5f} ± {e.std(ddof=1) / np.sqrt(e.size):.5f}"
                gap = 100 * (value / oracle.mean[key] - 1)
                print(
                    f"| {k} | {scale:g}·B | {key} | {oracle.mean[key]:.5f} ± {oracle.se[key]:.5f}"
                    f" | {value:.5f} | {gap:+.3f}% | {ex} | {oracle.ess:,.0f} / {oracle.draws:,} |"
                )


def chains(args) -> None:
    oracle = condensed_moments(SYNTHETIC, 2, args.draws, rng=np.random.default_rng(args.seed))
    print("| chain | chains | iterations | B | z row 1 | z subspace | z q | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for sampler, n_chains in (("left", 500), ("gibbs", 100)):
        for iterations in (1, 20):
            for scale in (1.0, 1.1):
                t0 = time.perf_counter()
                V = _chains(SYNTHETIC * scale, 2, sampler, n_chains, iterations, args.seed)
                z = oracle.z_scores(frame_statistics(V, SYNTHETIC, 2))
                print(
                    f"| {sampler} | {n_chains} | {iterations} | {scale:g}·B | {z['row1']:+.1f} | "
                    f"{z['subspace']:+.1f} | {z['q']:+.1f} | {time.perf_counter() - t0:.1f} |"
                )


def data(args) -> None:
    from experiments.data.uci import load_dataset

    data_dir = os.environ.get("PRIVPCA_DATA_DIR")
    print(
        "| data set | n | d | ε | k | max Sⱼ | ESS / draws | limit gap (subspace) "
        "| iterations | z row 1 | z subspace | z q |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, eps, k in DATA_CELLS:
        X = load_dataset(name, data_dir=data_dir, download=False).X
        n, d = X.shape
        evals = np.clip(np.sort(np.linalg.eigvalsh(X.T @ X / n))[::-1], 0.0, None)
        lam = 0.5 * n * eps * evals
        oracle = condensed_moments(lam, k, args.draws, rng=np.random.default_rng(args.seed))
        lim = condensed_limit(lam, k)
        gap = 100 * (lim.subspace / oracle.mean["subspace"] - 1)
        head = (
            f"| {name} | {n:,} | {d} | {eps:g} | {k} | {lim.max_leakage:.3f} | "
            f"{oracle.ess:,.0f} / {oracle.draws:,} | {gap:+.3f}% "
        )
        for iterations in args.iterations:
            for seed in (args.seed, args.seed + 1):
                V = _chains(lam, k, "gibbs", args.chains, iterations, seed)
                z = oracle.z_scores(frame_statistics(V, lam, k))
                print(
                    f"{head}| {iterations} | {z['row1']:+.1f} | {z['subspace']:+.1f} | "
                    f"{z['q']:+.1f} |"
                )
                head = "| | | | | | | | "


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="part", required=True)
    for name in ("limit", "chains", "data"):
        p = sub.add_parser(name)
        p.add_argument("--draws", type=int, default=20_000)
        p.add_argument("--seed", type=int, default=5)
        if name == "data":
            p.add_argument("--chains", type=int, default=400)
            p.add_argument("--iterations", type=int, nargs="+", default=[5, 20, 100])
    args = ap.parse_args()
    {"limit": limit, "chains": chains, "data": data}[args.part](args)


if __name__ == "__main__":
    main()
