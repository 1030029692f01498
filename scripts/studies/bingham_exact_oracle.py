"""The exact matrix Bingham sampler (MACG rejection) as an oracle for the PPCA chains.

Four parts, printed as Markdown tables (docs/sampler.md, "Exact oracle for k > 1"):

``acceptance``
    the exact sampler's acceptance rate for d = 10, k = 2, B = diag(b₁, b₁ − gap, 0, …, 0): the
    fraction of accepted proposals (``--accept`` acceptances, at most ``--budget`` proposals) and,
    with its standard error, the mean of the acceptance probabilities r(V)/M over the proposals
    (the same expectation, without the coin; the only estimate where no proposal is accepted).
``chains``
    two-sample Kolmogorov–Smirnov p-values of q_F = tr(VᵀAV) (A = B/b₁) and of the squared cosines
    of the k principal angles to the top-k eigenvectors, between ``--m`` exact draws and the final
    states of ``--m`` independent chains from Haar starts: correct chains, and wrong ones (B scaled,
    too few sweeps) to show the power.  The smallest p-value over the k + 1 statistics is printed.
``null``
    the calibration of those tests for the correct chains: repetitions with fresh seeds.
``fk``
    the F_k statistic of JMLR 2013 §6.2, F_k(T) = ‖(1/T) Σ_t V_t‖_F / √k: for T i.i.d. exact draws
    E[T·F_k(T)²] = 1 exactly (E V = 0, ‖V‖²_F = k); for a chain at stationarity T·F_k² estimates
    the integrated autocorrelation time of V's entries.  Chains started from exact draws.

Usage::

    .venv/bin/python scripts/studies/bingham_exact_oracle.py acceptance
    .venv/bin/python scripts/studies/bingham_exact_oracle.py chains --m 3000
    .venv/bin/python scripts/studies/bingham_exact_oracle.py null --m 3000 --reps 20
    .venv/bin/python scripts/studies/bingham_exact_oracle.py fk --chains 200 --T 1000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from mechanisms.bingham import acg_beta, run_bingham_chains
from mechanisms.bingham.exact import macg_log_accept, sample_matrix_bingham

SETTINGS = {
    "d8k2": (np.array([40.0, 39.0, 20.0, 10.0, 5.0, 0.0, 0.0, 0.0]), 2),
    "d8k3": (np.array([30.0, 29.5, 29.0, 10.0, 5.0, 0.0, 0.0, 0.0]), 3),
}


def acceptance(args) -> None:
    d, k = 10, 2
    print(
        "| b₁ | gap b₁ − b₂ | proposals | accepted | accepted / proposals | mean r/M ± SE | seconds |"
    )
    print("|---|---|---|---|---|---|---|")
    for b1 in args.b1:
        for gap in args.gaps:
            if gap > b1:  # b₂ < 0 would leave 0 as the second eigenvalue
                continue
            lam = np.array([b1, b1 - gap] + [0.0] * (d - 2))
            beta = acg_beta(lam)
            rng = np.random.default_rng(args.seed)
            t0 = time.perf_counter()
            n_prop = n_acc = 0
            s1 = s2 = 0.0
            omega = beta - 2.0 * lam
            while n_prop < args.budget and n_acc < args.accept:
                m = min(200_000, args.budget - n_prop)
                Y = rng.standard_normal((m, d, k)) / np.sqrt(omega)[:, None]
                V = np.linalg.qr(Y)[0]  # the acceptance probability depends on the span only
                a = np.exp(macg_log_accept(V, np.diag(lam), beta))
                n_acc += int(np.sum(rng.random(m) < a))
                s1 += a.sum()
                s2 += (a * a).sum()
                n_prop += m
            mean = s1 / n_prop
            se = np.sqrt(max(s2 / n_prop - mean**2, 0.0) / n_prop)
            print(
                f"| {b1:g} | {gap:g} | {n_prop:,} | {n_acc:,} | {n_acc / n_prop:.3g} | "
                f"{mean:.3g} ± {se:.2g} | {time.perf_counter() - t0:.1f} |"
            )


def _stats(V, lam, k):
    q = np.einsum("mij,i,mij->m", V, lam, V) / lam[0]
    cos2 = np.linalg.svd(V[:, :k, :], compute_uv=False) ** 2
    return [q] + [cos2[:, i] for i in range(k)]


def chains(args) -> None:
    variants = [
        ("gibbs, 20 it. × 2 sweeps (PPCA: null space dropped)", "gibbs", 20, 2, 1.0, False),
        ("gibbs, 20 it. × 2 sweeps (full chain, Figure 2)", "gibbs", 20, 2, 1.0, True),
        ("gibbs, 20 it. × 1 sweep", "gibbs", 20, 1, 1.0, False),
        ("reference, 20 it.", "reference", 20, None, 1.0, False),
        ("gibbs for 1.2·B", "gibbs", 20, 2, 1.2, False),
        ("reference for 1.2·B", "reference", 20, None, 1.2, False),
        ("gibbs for 1.1·B", "gibbs", 20, 2, 1.1, False),
        ("reference for 1.1·B", "reference", 20, None, 1.1, False),
        ("gibbs for 1.05·B", "gibbs", 20, 2, 1.05, False),
        ("gibbs, 1 sweep from Haar", "gibbs", 1, 1, 1.0, False),
        ("gibbs, 2 sweeps from Haar", "gibbs", 1, 2, 1.0, False),
        ("gibbs, 3 sweeps from Haar", "gibbs", 3, 1, 1.0, False),
        ("reference, 1 iteration from Haar", "reference", 1, None, 1.0, False),
    ]
    names = list(SETTINGS)
    exact = {}
    for name in names:
        lam, k = SETTINGS[name]
        X, info = sample_matrix_bingham(
            eig=(lam, None),
            k=k,
            size=args.m,
            rng=np.random.default_rng(args.seed),
            return_info=True,
        )
        exact[name] = _stats(X, lam, k)
        print(
            f"{name}: B = diag({', '.join(f'{x:g}' for x in lam)}), k = {k}, "
            f"acceptance {info['acceptance_rate']:.3g}"
        )
    print()
    print("| chain | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for label, sampler, T, sweeps, scale, track_F in variants:
        cells = []
        for name in names:
            lam, k = SETTINGS[name]
            res = run_bingham_chains(
                lam * scale,
                k,
                rng=np.random.default_rng(args.seed + 1),
                sampler=sampler,
                n_chains=args.m,
                iterations=T,
                sweeps_per_iteration=sweeps,
                track_F=track_F,
                record_every=T,
                progress=False,
            )
            S = _stats(res["V"], lam, k)
            p = min(stats.ks_2samp(a, b).pvalue for a, b in zip(exact[name], S))
            cells.append(f"{p:.2g}")
        print(f"| {label} | " + " | ".join(cells) + " |")


def null(args) -> None:
    """The tests' calibration: ``--reps`` independent repetitions (new exact draws, new chains) of the
    correct-chain comparison; per statistic the p-values should be uniform (KS against U(0, 1)), and
    the smallest of the k + 1 falls below 1e-3 with probability at most (k + 1)·1e-3."""
    print(
        "| setting | chain | repetitions | p-values per statistic: KS p against U(0,1) | "
        "fraction of min p < 0.05 | smallest p |"
    )
    print("|---|---|---|---|---|---|")
    for name, (lam, k) in SETTINGS.items():
        for sampler in ("gibbs", "reference"):
            P = []
            for r in range(args.reps):
                X = sample_matrix_bingham(
                    eig=(lam, None), k=k, size=args.m, rng=np.random.default_rng([args.seed, r])
                )
                res = run_bingham_chains(
                    lam,
                    k,
                    rng=np.random.default_rng([args.seed + 1, r]),
                    sampler=sampler,
                    n_chains=args.m,
                    iterations=20,
                    record_every=20,
                    track_F=False,
                    progress=False,
                )
                P.append(
                    [
                        stats.ks_2samp(a, b).pvalue
                        for a, b in zip(_stats(X, lam, k), _stats(res["V"], lam, k))
                    ]
                )
            P = np.array(P)
            unif = ", ".join(f"{stats.kstest(P[:, j], 'uniform').pvalue:.2g}" for j in range(k + 1))
            print(
                f"| {name} | {sampler} | {args.reps} | {unif} | {np.mean(P.min(1) < 0.05):.2f} | "
                f"{P.min():.2g} |"
            )


def fk(args) -> None:
    print("| setting | sampler | chains × T | mean T·F_k(T)² ± SE |")
    print("|---|---|---|---|")
    for name, (lam, k) in SETTINGS.items():
        rng = np.random.default_rng(args.seed)
        n, T = args.chains, args.T
        X = sample_matrix_bingham(eig=(lam, None), k=k, size=n * T, rng=rng).reshape(n, T, -1, k)
        f2 = T * np.sum(X.mean(axis=1) ** 2, axis=(1, 2)) / k
        print(
            f"| {name} | i.i.d. exact | {n} × {T} | {f2.mean():.3f} ± {f2.std() / np.sqrt(n):.3f} |"
        )
        starts = X[:, 0]
        for sampler in ("gibbs", "reference"):
            res = run_bingham_chains(
                lam,
                k,
                rng=np.random.default_rng(args.seed + 1),
                sampler=sampler,
                n_chains=n,
                iterations=T,
                record_every=T,
                init=starts,
                progress=False,
            )
            f2 = T * res["F"][:, -1] ** 2
            print(
                f"| {name} | {sampler} | {n} × {T} | {f2.mean():.3f} ± {f2.std() / np.sqrt(n):.3f} |"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="part", required=True)
    a = sub.add_parser("acceptance")
    a.add_argument("--b1", type=float, nargs="+", default=[10.0, 100.0])
    a.add_argument("--gaps", type=float, nargs="+", default=[0.0, 1.0, 5.0, 10.0, 20.0])
    a.add_argument("--accept", type=int, default=2000)
    a.add_argument("--budget", type=int, default=4_000_000)
    c = sub.add_parser("chains")
    c.add_argument("--m", type=int, default=3000)
    nl = sub.add_parser("null")
    nl.add_argument("--m", type=int, default=3000)
    nl.add_argument("--reps", type=int, default=20)
    f = sub.add_parser("fk")
    f.add_argument("--chains", type=int, default=200)
    f.add_argument("--T", type=int, default=1000)
    for p in (a, c, nl, f):
        p.add_argument("--seed", type=int, default=2)
    args = ap.parse_args()
    {"acceptance": acceptance, "chains": chains, "null": null, "fk": fk}[args.part](args)


if __name__ == "__main__":
    main()
