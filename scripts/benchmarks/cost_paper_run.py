#!/usr/bin/env python
"""Measure the cost of the paper-scale run (conf/scale/paper.yaml) and extrapolate its wall time.

For each UCI data set: one representative Figures 3-4 PPCA group (``scale.restarts.ppca`` restarts as
the chains of one ``ppca_restarts`` call on a subset of the largest n), timed in CPU seconds of this
process (robust to other processes sharing the machine) and wall seconds, at a reduced number of
iterations (``--iterations``; the per-iteration cost does not depend on the iteration count, so the
chain part is scaled to 20,000 iterations) and at 1 and 2 Givens sweeps per iteration; the Figure-2
chains (reference and fast, 5 x 40,000 iterations) from a short timed run; and the whole run
extrapolated: groups = n_points x subsets per data set, each group = data + restarts x chain.

    .venv/bin/python scripts/benchmarks/cost_paper_run.py --data-dir $PRIVPCA_DATA_DIR [--iterations 1000]
    # per n of the grid:
    .venv/bin/python scripts/benchmarks/cost_paper_run.py --data-dir $PRIVPCA_DATA_DIR --per-n --iterations 300

Last stdout line: JSON with every measured number and the extrapolated totals (CPU seconds; the wall
time on 2 idle cores is at least CPU / 2).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import _one_thread  # noqa: F401  (before NumPy: one BLAS thread)
import numpy as np

from mechanisms.bingham import run_bingham_chains
from mechanisms.ppca import ppca_restarts
from mechanisms.toolkit import PreparedData

K = {"kddcup": 4, "insurance": 11, "census": 8}
PAPER = {
    "iterations": 20000,
    "restarts": 10,
    "n_points": 8,
    "subsets": 5,
    "fig2_chains": 5,
    "fig2_iterations": 40000,
}


class Clock:
    def __enter__(self):
        self.w, self.c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *a):
        self.wall, self.cpu = time.perf_counter() - self.w, time.process_time() - self.c


def _compile_kernels():
    """Run both chains once on a tiny problem so that Numba compilation stays outside the timings."""
    for sampler in ("gibbs", "reference"):
        run_bingham_chains(
            np.linspace(1, 0, 6),
            2,
            rng=np.random.default_rng(0),
            n_chains=1,
            iterations=4,
            progress=False,
            sampler=sampler,
        )


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--datasets", nargs="+", default=["census", "insurance", "kddcup"])
    ap.add_argument(
        "--iterations", type=int, default=1000, help="iterations per chain actually run"
    )
    ap.add_argument(
        "--fig2-iterations", type=int, default=40, help="reference iterations actually timed"
    )
    ap.add_argument(
        "--per-n",
        action="store_true",
        help="instead: CPU ms per iteration of the exact-column (reference) and the 1-sweep Givens chain "
        "at every n of the paper's grid (one random subset each, one chain from a uniform start)",
    )
    args = ap.parse_args(argv)
    from experiments.data.uci import load_dataset

    if args.per_n:
        return per_n(args)

    _compile_kernels()
    out = {
        "paper": PAPER,
        "measured_iterations": args.iterations,
        "load": os.getloadavg(),
        "datasets": {},
    }
    total = {1: 0.0, 2: 0.0, "reference": 0.0}
    fig2_total = 0.0
    for name in args.datasets:
        with Clock() as t_load:
            ds = load_dataset(name, data_dir=args.data_dir)
        X = np.asarray(ds.X, dtype=np.float64)
        with (
            Clock() as t_data
        ):  # the largest group's data: full set, validated, A formed, once per group
            data = PreparedData(X)
        row = {
            "n": int(X.shape[0]),
            "d": int(X.shape[1]),
            "k": K[name],
            "load_cpu_s": t_load.cpu,
            "group_data_cpu_s": t_data.cpu,
        }
        for sweeps in (1, 2, "reference"):
            rngs = [np.random.default_rng([0, r]) for r in range(PAPER["restarts"])]
            sampler = "reference" if sweeps == "reference" else "gibbs"
            with Clock() as t:
                ppca_restarts(
                    data,
                    K[name],
                    epsilon=0.1,
                    rngs=rngs,
                    sampler=sampler,
                    iterations=args.iterations,
                    progress=False,
                    warn=False,
                    sweeps_per_iteration=None if sampler == "reference" else sweeps,
                )
            chain_cpu_20k = t.cpu / PAPER["restarts"] * PAPER["iterations"] / args.iterations
            group_cpu = t_data.cpu + PAPER["restarts"] * chain_cpu_20k
            groups = PAPER["n_points"] * PAPER["subsets"]
            row[f"sweeps{sweeps}"] = {
                "group_measured_wall_s": t.wall,
                "group_measured_cpu_s": t.cpu,
                "chain_cpu_s_per_20k": chain_cpu_20k,
                "group_cpu_s": group_cpu,
                "dataset_ppca_cpu_s": groups * group_cpu,
            }
            total[sweeps] += groups * group_cpu
        if name in ("kddcup", "insurance"):  # Figure 2
            scale = X.shape[0] * 0.1 / 2
            evals = scale * np.linalg.eigvalsh(data.A)[::-1].copy()
            with Clock() as t_ref:
                run_bingham_chains(
                    evals,
                    K[name],
                    rng=np.random.default_rng(1),
                    sampler="reference",
                    n_chains=1,
                    iterations=args.fig2_iterations,
                    progress=False,
                )
            with Clock() as t_fast:
                run_bingham_chains(
                    evals,
                    K[name],
                    rng=np.random.default_rng(1),
                    sampler="gibbs",
                    n_chains=1,
                    iterations=20 * args.fig2_iterations,
                    progress=False,
                )
            n_it = PAPER["fig2_chains"] * PAPER["fig2_iterations"]
            ref = t_ref.cpu / args.fig2_iterations * n_it
            fast = t_fast.cpu / (20 * args.fig2_iterations) * n_it
            row["fig2"] = {
                "reference_cpu_s": ref,
                "fast_cpu_s": fast,
                "reference_ms_per_it": 1e3 * t_ref.cpu / args.fig2_iterations,
            }
            fig2_total += ref + fast
        out["datasets"][name] = row
        print(
            f"{name:9s} n={row['n']:7d} d={row['d']:4d} k={row['k']:2d} | group data {t_data.cpu:6.2f} cpu-s | "
            f"chain/20k it: 1 sweep {row['sweeps1']['chain_cpu_s_per_20k']:7.1f}, 2 sweeps "
            f"{row['sweeps2']['chain_cpu_s_per_20k']:7.1f}, exact columns "
            f"{row['sweepsreference']['chain_cpu_s_per_20k']:7.1f} cpu-s | Figs 3-4 PPCA: "
            f"{row['sweeps1']['dataset_ppca_cpu_s']:8.0f} / {row['sweeps2']['dataset_ppca_cpu_s']:8.0f} / "
            f"{row['sweepsreference']['dataset_ppca_cpu_s']:8.0f} cpu-s"
            + (
                f" | Fig 2 reference {row['fig2']['reference_cpu_s']:7.0f} fast {row['fig2']['fast_cpu_s']:5.0f} cpu-s"
                if "fig2" in row
                else ""
            ),
            flush=True,
        )
    out["ppca_cpu_s"] = {f"sweeps{s}": v for s, v in total.items()}
    out["fig2_cpu_s"] = fig2_total
    out["load_after"] = os.getloadavg()
    print(
        f"PPCA Figs 3-4: {total[1]:.0f} cpu-s (1 sweep) / {total[2]:.0f} cpu-s (2 sweeps) / "
        f"{total['reference']:.0f} cpu-s (exact column Gibbs); Figure 2: "
        f"{fig2_total:.0f} cpu-s; on 2 idle cores at best (x + Figure 2) / 2",
        flush=True,
    )
    print(json.dumps(out, default=float))


def per_n(args):
    """Per-iteration CPU cost of both chains over the n grid of Figures 3-4 (the cost of an iteration of the
    column sampler falls with n: fewer proposals per column at lower concentration)."""
    from experiments.data.uci import load_dataset
    from experiments.runs.sweep import n_grid

    _compile_kernels()
    out = {"iterations": args.iterations, "load": os.getloadavg(), "datasets": {}}
    for name in args.datasets:
        X = np.asarray(load_dataset(name, data_dir=args.data_dir).X, dtype=np.float64)
        rng = np.random.default_rng(0)
        k = K[name]
        rows = []
        for n in n_grid(X.shape[0], 1000, PAPER["n_points"]):
            idx = rng.choice(X.shape[0], n, replace=False)
            b = n * 0.1 / 2 * np.linalg.eigvalsh(X[idx].T @ X[idx] / n)[::-1].copy()
            row = {"n": n, "concentration": float(b[0])}
            for label, chains, kw in (
                ("exact_columns", 1, {"sampler": "reference", "track_F": False}),
                ("givens1", PAPER["restarts"], {"sweeps_per_iteration": 1, "track_F": False}),
            ):  # as PPCA runs them: a group's Givens chains in lockstep, the column chains one by one
                with Clock() as t:
                    run_bingham_chains(
                        b,
                        k,
                        rng=rng,
                        n_chains=chains,
                        iterations=args.iterations,
                        progress=False,
                        **kw,
                    )
                row[f"{label}_ms_per_it"] = 1e3 * t.cpu / (args.iterations * chains)
            rows.append(row)
            print(
                f"{name:9s} n={n:7d} n*eps/2*lambda1={b[0]:9.0f} | CPU ms/chain-iteration: exact columns "
                f"{row['exact_columns_ms_per_it']:.3f}, Givens 1 sweep {row['givens1_ms_per_it']:.3f}",
                flush=True,
            )
        chains = (
            PAPER["subsets"] * PAPER["restarts"] * PAPER["iterations"] / 1e3
        )  # per n: 50 chains x 20k it, in s/ms
        tot = {
            lab: sum(r[f"{lab}_ms_per_it"] for r in rows) * chains
            for lab in ("exact_columns", "givens1")
        }
        out["datasets"][name] = {"rows": rows, "figs34_ppca_cpu_s": tot}
        print(
            f"{name:9s} Figures 3-4 PPCA (8 n x 5 subsets x 10 chains x 20,000 it): exact columns "
            f"{tot['exact_columns']:.0f} CPU-s, Givens 1 sweep {tot['givens1']:.0f} CPU-s",
            flush=True,
        )
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, default=float))


if __name__ == "__main__":
    main()
