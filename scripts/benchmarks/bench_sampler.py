#!/usr/bin/env python
"""Benchmark the matrix-Bingham samplers at the paper's shapes and concentrations.

For each (d, k) of CSS 2013 Table 1 with B = n ε/2 · A (ε = 0.1, full n):
  * seconds per iteration of the fast Givens chain and of the reference (Hoff) chain, and their ratio;
  * mixing at stationarity: both samplers restarted from the fast chains' final states (after the
    diagnostics passed) for the same number of iterations; bulk-ESS of the q_F trace per iteration
    (4 chains; with --quick skipped for d > 200, where the reference costs ~0.25 s per iteration);
  * iterations until the diagnostics pass (split-R̂ < 1.01 and bulk-ESS ≥ 400 on the second
    half of the first T iterations, T on a doubling grid).

A is synthetic unless --data-dir is given and ``experiments.data.uci.load_dataset`` exists:
top-k eigenvalues decay geometrically (ratio 0.7) and sum to the Table-1 q_F(V_k); the
tail (d − k eigenvalues, geometric ratio 0.97, starting at half of λ_k) carries 10 % of
the trace.  The samplers work in the eigenbasis of B, so only the spectrum matters.

Runs on one BLAS thread.  Last stdout line: one JSON object
{"speedup": {"116,4": x, ...}, "seconds_per_20000_iterations_513_8": s}.

    .venv/bin/python scripts/benchmarks/bench_sampler.py --quick      # < 2 minutes
    .venv/bin/python scripts/benchmarks/bench_sampler.py --mixing --data-dir $PRIVPCA_DATA_DIR   # mixing per iteration:
        # fast chain at 1 and 2 sweeps, reference, rstiefel (the paper's sampler); real A at the full n
        # and n = 1,000; ESS/iteration, integrated autocorrelation time and lag-1 autocorrelation of
        # q_F and two subspace statistics (docs/sampler.md)
    .venv/bin/python scripts/benchmarks/bench_sampler.py --mixing --data-dir $PRIVPCA_DATA_DIR \
        --samplers fast-1 left left-2 left-1-m8   # the left-Givens study: mixing per iteration and
        # per CPU-second against the fast chain (docs/sampler.md, "Left Givens moves")
    .venv/bin/python scripts/benchmarks/bench_sampler.py               # full (20,000 iterations x 4 chains)
"""

from __future__ import annotations

import argparse
import json
import re
import time

import _one_thread  # noqa: F401  (before NumPy: one BLAS thread)
import numpy as np

from mechanisms.bingham import (
    chain_generators,
    givens_sweeps,
    kernel_states,
    reference_gibbs_sweep,
    rstiefel_gibbs_sweep,
    run_bingham_chains,
)
from mechanisms.bingham.left_givens import run_left_givens_chains
from mechanisms.diagnostics import summarize_chains

SHAPES = [  # name, d, k, n, Table-1 q_F(V_k)
    ("kddcup", 116, 4, 494_021, 0.6587),
    ("census", 513, 8, 199_523, 0.7321),
    ("localization", 44, 10, 164_860, 0.5672),
    ("insurance", 150, 11, 9_822, 0.5118),
]
EPSILON = 0.1


def synthetic_spectrum(d: int, k: int, top_sum: float) -> np.ndarray:
    top = 0.7 ** np.arange(k)
    top *= top_sum / top.sum()
    tail = 0.5 * top[-1] * 0.97 ** np.arange(d - k)
    tail *= min(1.0, (top_sum / 9.0) / tail.sum())  # tail ≈ 10 % of the trace
    return np.concatenate([top, tail])


def spectrum_for(name, d, k, top_sum, data_dir):
    if data_dir is not None:
        try:
            from experiments.data.uci import (
                load_dataset,
            )  # lazy: only the real-data benchmark needs it

            ds = load_dataset(name, data_dir=data_dir)
            X = np.asarray(ds.X, dtype=np.float64)
            return np.linalg.eigvalsh(X.T @ X / X.shape[0])[::-1], X.shape[0], "real"
        except Exception as exc:  # pragma: no cover - depends on local data
            print(
                f"# {name}: real data unavailable ({exc!r}); using synthetic spectrum", flush=True
            )
    return synthetic_spectrum(d, k, top_sum), None, "synthetic"


def iterations_to_converge(qF: np.ndarray) -> int | None:
    n = qF.shape[1]
    T = 16
    while T <= n:
        if summarize_chains(qF[:, T // 2 : T])["converged"]:
            return T
        T *= 2
    if T // 2 != n and summarize_chains(qF[:, n // 2 :])["converged"]:
        return n
    return None


def time_reference(evals, k, n_iter, rng):
    d = evals.size
    B = np.diag(evals)
    V = np.linalg.qr(rng.standard_normal((d, k)))[0]
    reference_gibbs_sweep(V, B, rng)  # warm-up
    t0 = time.perf_counter()
    for _ in range(n_iter):
        reference_gibbs_sweep(V, B, rng)
    return (time.perf_counter() - t0) / n_iter


# ---------------------------------------------------------------------------------------------
# --mixing: mixing per iteration at stationarity of every sampler, on the real second moments
# ---------------------------------------------------------------------------------------------

MIX_SAMPLERS = ("fast-1", "fast-2", "reference", "rstiefel")
MIX_LABEL = {
    "fast-1": "Givens chain, 1 sweep/iteration",
    "fast-2": "Givens chain, 2 sweeps/iteration",
    "reference": "Hoff column Gibbs, exact column draws (our reference)",
    "rstiefel": "Hoff column Gibbs, ONE coordinate sweep per column (rstiefel, the paper's)",
}


#: the left-Givens study sampler (mechanisms.bingham.left_givens): ``left`` = 1 sweep per iteration
#: over the pairs (a, j), a < m = k; ``left-S`` = S sweeps; ``left-S-mM`` = S sweeps with m = M
LEFT_SAMPLER = re.compile(r"^left(?:-(\d+))?(?:-m(\d+))?$")


def mix_sampler(name: str) -> str:
    """argparse type of ``--samplers``: one of MIX_SAMPLERS or a left-Givens spec (LEFT_SAMPLER)."""
    if name in MIX_SAMPLERS or LEFT_SAMPLER.match(name):
        return name
    raise argparse.ArgumentTypeError(
        f"unknown sampler {name!r}: one of {', '.join(MIX_SAMPLERS)}, left, left-S or left-S-mM"
    )


def left_spec(sampler: str, k: int) -> tuple[int, int]:
    """(sweeps per iteration, top rows m) of a left-Givens sampler name."""
    sweeps, rows = LEFT_SAMPLER.match(sampler).groups()
    return int(sweeps or 1), int(rows or k)


def trace_chain(
    sampler: str, evals: np.ndarray, k: int, V0: np.ndarray, iters: int, rng: np.random.Generator
) -> np.ndarray:
    """Per-iteration statistics of one chain from the frame V0 (eigen-coordinates of B, descending
    eigenvalues): columns q(t) = tr(VᵀBV)/‖b‖ (∝ q_F), s1(t) = ‖Vᵀe_1‖² and sk(t) = ‖Vᵀe_k‖² (squared
    cosines between span V and the top / k-th eigenvector: subspace statistics, frame-invariant)."""
    d = evals.size
    out = np.empty((iters, 3))
    if sampler.startswith("left"):
        sweeps, rows = left_spec(sampler, k)
        res = run_left_givens_chains(
            evals,
            k,
            rng=rng,
            n_chains=1,
            iterations=iters,
            sweeps=sweeps,
            rows=rows,
            init=V0[None],
            record_rows=[0, k - 1],
        )
        out[:, 0] = res["energy"][0]
        out[:, 1:] = res["row_norms"][0]
    elif sampler.startswith("fast"):
        sweeps = int(sampler.split("-")[1])
        state = kernel_states(chain_generators(rng, 1))
        Q = np.linalg.qr(np.hstack([V0, np.linalg.qr(rng.standard_normal((d, d)))[0][:, : d - k]]))[
            0
        ]
        Q[:, :k] = V0
        Qt = np.ascontiguousarray(Q.T)[None]  # one chain: (1, d, d)
        energy = np.empty((1, 1))
        sum_V = np.zeros((1, k, d))
        for t in range(iters):
            givens_sweeps(Qt, evals, k, 1, energy, sum_V, sweeps, state)
            if t % 1000 == 999:
                Qn, R = np.linalg.qr(Qt[0].T)
                Qt[0] = (Qn * np.sign(np.diag(R))).T
            out[t] = energy[0, 0], Qt[0, :k, 0] @ Qt[0, :k, 0], Qt[0, :k, k - 1] @ Qt[0, :k, k - 1]
    else:
        sweep = reference_gibbs_sweep if sampler == "reference" else rstiefel_gibbs_sweep
        B = np.diag(evals)
        V = np.array(V0)
        for t in range(iters):
            sweep(V, B, rng)
            out[t] = np.einsum("ij,i,ij->", V, evals, V), V[0] @ V[0], V[k - 1] @ V[k - 1]
    return out


def autocorr_summary(chains: np.ndarray) -> dict:
    """Bulk-ESS per draw, integrated autocorrelation time (draws / ESS) and mean lag-1 autocorrelation."""
    m, n = chains.shape
    ess = summarize_chains(chains)["ess"]
    x = chains - chains.mean(axis=1, keepdims=True)
    lag1 = float(np.mean([(c[1:] @ c[:-1]) / (c @ c) if c @ c > 0 else np.nan for c in x]))
    return {"ess_per_it": ess / (m * n), "tau": m * n / ess, "lag1": lag1}


def kernel_cpu_per_iteration(
    sampler: str, evals: np.ndarray, k: int, V0: np.ndarray, iters: int, rng: np.random.Generator
) -> float:
    """CPU seconds per iteration and chain of a fast or left chain run as a release runs it: all
    chains in one driver call from the frames ``V0`` (n_chains, d, k), no per-iteration Python and
    no statistics but the energy trace; the fast chain with PPCA's null-space reduction and lockstep
    (``run_bingham_chains(..., track_F=False)``)."""
    n_chains = V0.shape[0]
    t0 = time.process_time()
    if sampler.startswith("left"):
        sweeps, rows = left_spec(sampler, k)
        run_left_givens_chains(
            evals,
            k,
            rng=rng,
            n_chains=n_chains,
            iterations=iters,
            sweeps=sweeps,
            rows=rows,
            init=V0,
        )
    else:
        run_bingham_chains(
            evals,
            k,
            rng=rng,
            sampler="gibbs",
            n_chains=n_chains,
            iterations=iters,
            record_every=iters,
            progress=False,
            sweeps_per_iteration=int(sampler.split("-")[1]),
            init=V0,
            track_F=False,
        )
    return (time.process_time() - t0) / (n_chains * iters)


def ess_spread_main(args) -> None:
    """Relative standard deviation of the bulk-ESS per draw of ``--chains`` × ``--mix-iters`` draws,
    over 200 simulated stationary AR(1) traces per lag-1 autocorrelation ρ: the standard error
    that a table's draw count implies for an ESS per iteration near (1 − ρ)/(1 + ρ)."""
    rng = np.random.default_rng(args.seed)
    m, n = args.chains, args.mix_iters
    for rho in (-0.15, 0.0, 0.25, 0.45):
        vals = np.empty(200)
        for r in range(vals.size):
            e = rng.standard_normal((m, n))
            x = np.empty_like(e)
            x[:, 0] = e[:, 0] / np.sqrt(1.0 - rho * rho)
            for t in range(1, n):
                x[:, t] = rho * x[:, t - 1] + e[:, t]
            vals[r] = summarize_chains(x)["ess"] / (m * n)
        print(
            f"{m} x {n} draws, AR(1) rho {rho:+.2f}: ESS/draw mean {vals.mean():.3f} "
            f"(exact {(1 - rho) / (1 + rho):.3f}), relative SD {vals.std() / vals.mean():.3f}",
            flush=True,
        )


def mixing_main(args) -> None:
    from experiments.data.uci import load_dataset

    datasets = [s for name in args.datasets for s in SHAPES if s[0] == name]
    rows = []
    print(
        "# mixing at stationarity: 4 chains per sampler, restarted from equilibrated fast chains; "
        "statistics q = tr(VᵀAV), s1 = ‖Vᵀu_1‖², sk = ‖Vᵀu_k‖²",
        flush=True,
    )
    for name, _d, k, _n, _q in datasets:
        ds = load_dataset(name, data_dir=args.data_dir)
        X = np.asarray(ds.X, dtype=np.float64)
        d = X.shape[1]  # the data's d (census: 512 on the test split), not the paper's
        for n in args.n:
            rng = np.random.default_rng([args.seed, n])
            Xn = X if n <= 0 or n >= X.shape[0] else X[rng.choice(X.shape[0], n, replace=False)]
            nn = Xn.shape[0]
            evals = (EPSILON * nn / 2) * np.linalg.eigvalsh(Xn.T @ Xn / nn)[::-1].copy()
            # equilibrate: fast chains (2 sweeps/iteration) from uniform starts, diagnostics must pass
            eq = run_bingham_chains(
                evals,
                k,
                rng=rng,
                sampler="gibbs",
                n_chains=args.chains,
                iterations=args.burn,
                record_every=args.burn,
                progress=False,
            )
            diag = summarize_chains(eq["energy"][:, args.burn // 2 :])
            for sampler in args.samplers:
                cheap = sampler.startswith(("fast", "left"))
                iters = (
                    args.mix_iters
                    if cheap
                    else (args.slow_iters_large if d > 200 else args.slow_iters)
                )
                t0 = time.perf_counter()
                c0 = time.process_time()
                tr = np.stack(
                    [
                        trace_chain(sampler, evals, k, eq["V"][c], iters, rng)
                        for c in range(args.chains)
                    ]
                )
                sec = (time.perf_counter() - t0) / (args.chains * iters)
                cpu = (time.process_time() - c0) / (args.chains * iters)
                kernel_cpu = None
                if cheap and args.time_reps > 0:
                    kernel_cpu = float(
                        np.median(
                            [
                                kernel_cpu_per_iteration(
                                    sampler, evals, k, eq["V"], args.time_iters, rng
                                )
                                for _ in range(args.time_reps)
                            ]
                        )
                    )
                row = {
                    "dataset": name,
                    "d": d,
                    "k": k,
                    "n": nn,
                    "concentration": float(evals[0]),
                    "equilibrated": bool(diag["converged"]),
                    "sampler": sampler,
                    "iterations": iters,
                    "s_per_it": sec,
                    "cpu_s_per_it": cpu,
                    "kernel_cpu_s_per_it": kernel_cpu,
                }
                for j, stat in enumerate(("q", "s1", "sk")):
                    for key, v in autocorr_summary(tr[:, :, j]).items():
                        row[f"{stat}_{key}"] = v
                    if kernel_cpu:
                        row[f"{stat}_ess_per_cpu_s"] = row[f"{stat}_ess_per_it"] / kernel_cpu
                rows.append(row)
                per_cpu = (
                    " | kernel {:.4f} CPU-ms/it, ESS/CPU-s q {:.0f} s1 {:.0f} sk {:.0f}".format(
                        kernel_cpu * 1e3,
                        row["q_ess_per_cpu_s"],
                        row["s1_ess_per_cpu_s"],
                        row["sk_ess_per_cpu_s"],
                    )
                    if kernel_cpu
                    else ""
                )
                print(
                    f"{name:9s} n={nn:7d} conc={evals[0]:9.1f} {sampler:9s} it={iters:5d} "
                    f"{sec * 1e3:8.2f} ms/it | ESS/it q {row['q_ess_per_it']:.3f} s1 {row['s1_ess_per_it']:.3f}"
                    f" sk {row['sk_ess_per_it']:.3f} | lag-1 q {row['q_lag1']:+.3f} s1 {row['s1_lag1']:+.3f}"
                    f" sk {row['sk_lag1']:+.3f} | tau q {row['q_tau']:.2f}{per_cpu}",
                    flush=True,
                )
    print("# mixing rows: " + json.dumps(rows, default=float))


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="short runs (< 2 minutes)")
    ap.add_argument(
        "--data-dir", default=None, help="use real A from experiments.data.uci.load_dataset"
    )
    ap.add_argument("--seed", type=int, default=2013)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument(
        "--mixing",
        action="store_true",
        help="mixing per iteration at stationarity of fast-1, fast-2, reference and rstiefel "
        "on the real data (needs --data-dir)",
    )
    ap.add_argument("--datasets", nargs="+", default=["kddcup", "insurance", "census"])
    ap.add_argument(
        "--n", nargs="+", type=int, default=[0, 1000], help="subsample sizes (0 = all rows)"
    )
    ap.add_argument(
        "--burn", type=int, default=2000, help="--mixing: equilibration iterations (fast-2)"
    )
    ap.add_argument(
        "--mix-iters", type=int, default=4000, help="--mixing: iterations of the fast chains"
    )
    ap.add_argument(
        "--slow-iters", type=int, default=400, help="--mixing: reference/rstiefel iterations"
    )
    ap.add_argument("--slow-iters-large", type=int, default=120, help="same for d > 200")
    ap.add_argument(
        "--samplers",
        nargs="+",
        default=list(MIX_SAMPLERS),
        type=mix_sampler,
        help="samplers measured by --mixing (default: the four of MIX_SAMPLERS); also the "
        "left-Givens study sampler: left (1 sweep over the pairs with a top-k row), left-S "
        "(S sweeps per iteration), left-S-mM (pairs with one of the top M rows)",
    )
    ap.add_argument(
        "--time-iters",
        type=int,
        default=1000,
        help="--mixing: iterations of the CPU-time runs of the fast and left chains",
    )
    ap.add_argument(
        "--time-reps",
        type=int,
        default=3,
        help="--mixing: CPU-time runs per fast or left sampler (the median is reported; 0: none)",
    )
    ap.add_argument(
        "--ess-spread",
        action="store_true",
        help="relative SD of the bulk-ESS of --chains x --mix-iters simulated AR(1) draws",
    )
    args = ap.parse_args(argv)
    if args.ess_spread:
        return ess_spread_main(args)
    if args.mixing:
        if args.data_dir is None:
            ap.error("--mixing needs --data-dir")
        return mixing_main(args)
    rng = np.random.default_rng(args.seed)

    # warm up Numba (compilation is cached on disk, but keep it out of the timings)
    run_bingham_chains(np.linspace(1, 0, 6), 2, rng=rng, n_chains=1, iterations=4, progress=False)

    speedup = {}
    sec20k = None
    rows = []
    for name, d, k, n_full, top_sum in SHAPES:
        evals_A, n_real, source = spectrum_for(name, d, k, top_sum, args.data_dir)
        n = n_real or n_full
        evals_B = n * EPSILON / 2 * evals_A
        if args.quick:
            fast_iters = 2000 if d > 200 else 4000
            ref_time_iters = 3 if d > 200 else 10
            mix_iters = 0 if d > 200 else (200 if d > 120 else 400)
        else:
            fast_iters = 20000
            ref_time_iters = 10 if d > 200 else 40
            mix_iters = 300 if d > 200 else 2000
        # --- fast chain from uniform starts: timing, and iterations until the diagnostics pass
        res = run_bingham_chains(
            evals_B,
            k,
            rng=rng,
            sampler="gibbs",
            n_chains=args.chains,
            iterations=fast_iters,
            record_every=100,
            progress=False,
        )
        s_fast = res["seconds"] / (args.chains * fast_iters)
        qF = res["energy"] / (n * EPSILON / 2)
        diag_f = summarize_chains(qF[:, fast_iters // 2 :])
        conv_f = iterations_to_converge(qF)
        # --- reference chain: timing
        s_ref = time_reference(evals_B, k, ref_time_iters, rng)
        # --- mixing at stationarity: both samplers restarted from the fast chains' final states
        #     (draws from the target after the diagnostics passed), same number of iterations;
        #     bulk-ESS per iteration of the q_F trace, no burn-in needed.
        ess_per_it_f = ess_per_it_r = None
        conv_r = None
        if mix_iters:
            start = res["V"]
            mf = run_bingham_chains(
                evals_B,
                k,
                rng=rng,
                sampler="gibbs",
                n_chains=args.chains,
                iterations=mix_iters,
                record_every=mix_iters,
                progress=False,
                init=start,
            )
            mr = run_bingham_chains(
                evals_B,
                k,
                rng=rng,
                sampler="reference",
                n_chains=args.chains,
                iterations=mix_iters,
                record_every=mix_iters,
                progress=False,
                init=start,
            )
            scale = n * EPSILON / 2
            ess_per_it_f = summarize_chains(mf["energy"] / scale)["ess"] / (args.chains * mix_iters)
            ess_per_it_r = summarize_chains(mr["energy"] / scale)["ess"] / (args.chains * mix_iters)
        ref_mix_iters = mix_iters
        ratio = s_ref / s_fast
        key = f"{d},{k}"
        speedup[key] = round(ratio, 1)
        if (d, k) == (513, 8):
            sec20k = round(20000 * s_fast, 1)
        row = dict(
            dataset=name,
            source=source,
            d=d,
            k=k,
            n=n,
            concentration=float(evals_B[0]),
            fast_s_per_it=s_fast,
            ref_s_per_it=s_ref,
            speedup=ratio,
            fast_ess_per_it=ess_per_it_f,
            ref_ess_per_it=ess_per_it_r,
            fast_iters_to_converge=conv_f,
            ref_iters_to_converge=conv_r,
            fast_rhat=diag_f["rhat"],
            fast_iters=fast_iters,
            ref_mix_iters=ref_mix_iters,
        )
        rows.append(row)
        print(
            f"{name:13s} d={d:4d} k={k:2d} n*eps/2*l1={evals_B[0]:9.1f} | fast {s_fast * 1e3:8.3f} ms/it"
            f" | ref {s_ref * 1e3:9.2f} ms/it | speed-up {ratio:7.1f}x | ESS/it fast "
            f"{('%.3f' % ess_per_it_f) if ess_per_it_f is not None else '  n/a'}"
            f" ref {('%.3f' % ess_per_it_r) if ess_per_it_r is not None else '  n/a'}"
            f" | iters to converge (fast, uniform starts) {conv_f}",
            flush=True,
        )
    print("# rows: " + json.dumps(rows, default=float))
    print(json.dumps({"speedup": speedup, "seconds_per_20000_iterations_513_8": sec20k}))


if __name__ == "__main__":
    main()
