"""Figures of the `peers` experiment from the results store (docs/peers.md).

    python scripts/plot_peers.py [--results results] [--out DIR]
    python scripts/plot_peers.py --tables results/quick/tables --out results/quick/figures --curate

Writes ``peers.png`` (q_F/q_F_opt versus n, one panel per dataset and certified ε; a run that hit the
wall-clock cap is drawn as a cross at the bottom of its panel), ``peers_time.png`` (median wall time
per run, the cap as a dotted line) and ``peers_sampler.png`` (the d = 2 check: E[sin²θ] with
±2 Monte Carlo standard errors against the exact target), and prints the tables it draws from.  The
figures are drawn from the tables alone (``peers.csv``,
``peers_sampler_check.csv``: ``--tables DIR`` reads the committed ones), deterministically, each
labelled with the scale of its records.  ``--out`` defaults to ``<results>/drawn/peers`` (not
committed); a curated directory is written only with ``--curate`` (``scripts/curate.sh``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.figures.cli import is_curated
from experiments.figures.style import PEERS_STYLE
from experiments.figures.style import save as save_figure
from experiments.peers import peers_tables
from experiments.store.store import ResultStore

#: the experiment's wall-clock cap per peer run (conf/experiment/peers.yaml), when drawn from tables
DEFAULT_CAP = 60.0
#: the scale named on the figures (``--scale``; the peers records are run at the default scale)
SCALE = {"text": "scale: quick"}

DATASET_ORDER = ["kddcup", "insurance", "spiked"]


def save(fig, out: Path, name: str) -> Path:
    """A peers figure, labelled with its scale, as one PNG (:func:`experiments.figures.style.save`)."""
    fig.text(1.0, 0.0, SCALE["text"], ha="right", va="top", fontsize=8, color="0.3")
    return save_figure(fig, out, name, formats=("png",), png_metadata={"Software": None})[0]


def grid_axes(table):
    datasets = [d for d in DATASET_ORDER if d in set(table.dataset)] + sorted(
        set(table.dataset) - set(DATASET_ORDER)
    )
    epsilons = sorted(table.epsilon_requested.unique())
    fig, axes = plt.subplots(
        len(datasets),
        len(epsilons),
        figsize=(5.2 * len(epsilons), 3.4 * len(datasets)),
        squeeze=False,
    )
    return fig, axes, datasets, epsilons


def utility_figure(table, out: Path) -> Path:
    fig, axes, datasets, epsilons = grid_axes(table)
    for i, ds in enumerate(datasets):
        for j, eps in enumerate(epsilons):
            ax = axes[i][j]
            cell = table[(table.dataset == ds) & (table.epsilon_requested == eps)]
            for mech, st in PEERS_STYLE.items():
                m = cell[cell.mechanism == mech].sort_values("n")
                if m.empty:
                    continue
                ok = m[m.ok > 0]
                ax.errorbar(
                    ok.n, ok.q_F_normalised, yerr=ok.q_F_normalised_sd.fillna(0), capsize=2, **st
                )
                stalled = m[m.ok == 0]
                if len(stalled):
                    shift = {"diffprivlib_pca": 0.92, "opendp_pca": 1.08}.get(
                        mech, 1.0
                    )  # both crosses visible
                    ax.scatter(
                        stalled.n * shift,
                        np.full(len(stalled), -0.04),
                        marker="x",
                        s=60,
                        color=st["color"],
                        clip_on=False,
                        zorder=5,
                    )
            ax.set_xscale("log")
            ax.set_ylim(-0.06, 1.02)
            ax.set_title(f"{ds}, certified ε = {eps:g}")
            ax.set_xlabel("n")
            ax.set_ylabel("q_F / q_F(optimal)")
            ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=4, bbox_to_anchor=(0.5, 1.02))
    fig.text(0.5, -0.01, "× at the bottom: every run timed out (wall-clock cap)", ha="center")
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return save(fig, out, "peers")


def time_figure(table, cap: float | None, out: Path) -> Path:
    fig, axes, datasets, epsilons = grid_axes(table)
    for i, ds in enumerate(datasets):
        for j, eps in enumerate(epsilons):
            ax = axes[i][j]
            cell = table[(table.dataset == ds) & (table.epsilon_requested == eps)]
            for mech, st in PEERS_STYLE.items():
                m = cell[cell.mechanism == mech].sort_values("n")
                if not m.empty:
                    ax.plot(m.n, m.median_seconds, **st)
            if cap:
                ax.axhline(cap, color="grey", ls=":", lw=1)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{ds}, certified ε = {eps:g}")
            ax.set_xlabel("n")
            ax.set_ylabel("wall time per run (s)")
            ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=4, bbox_to_anchor=(0.5, 1.02))
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return save(fig, out, "peers_time")


def sampler_figure(check, out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    ok = check[check.status == "ok"].reset_index(drop=True)
    y = np.arange(len(ok))
    ax.errorbar(ok.mean_sin2, y, xerr=2 * ok.mc_standard_error, fmt="o", capsize=3)
    target = float(check.target_mean_sin2.iloc[0])
    ax.axvline(target, color="k", ls="--", lw=1, label=f"exact target {target:.4f}")
    ax.set_yticks(y, [f"{r.implementation} (KS p={r.ks_pvalue:.1e})" for r in ok.itertuples()])
    ax.set_xlabel("E[sin²θ], ±2 Monte Carlo s.e.")
    ax.set_title(
        f"d = 2 vector Bingham, f(u) ∝ exp({check.kappa.iloc[0]:g} u₁²), "
        f"{int(check.draws.iloc[0])} draws each",
        fontsize=9,
    )
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return save(fig, out, "peers_sampler")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--results", default="results", help="results store root (holds records/)")
    ap.add_argument(
        "--tables",
        default=None,
        help="draw from this directory's peers.csv and peers_sampler_check.csv instead of the store",
    )
    ap.add_argument(
        "--scale", default="quick", help="the scale named on the figures (default quick)"
    )
    ap.add_argument(
        "--out", default=None, help="where the figures go (default <results>/drawn/peers)"
    )
    ap.add_argument(
        "--curate", action="store_true", help="allow --out to be a curated (committed) directory"
    )
    args = ap.parse_args(argv)
    out = Path(args.out) if args.out else Path(args.results) / "drawn" / "peers"
    if is_curated(out) and not args.curate:
        ap.error(
            f"--out {out} is a curated (committed) directory: written only by scripts/curate.sh"
        )
    SCALE["text"] = f"scale: {args.scale}"
    cap = DEFAULT_CAP
    if args.tables:
        tdir = Path(args.tables)
        table = pd.read_csv(tdir / "peers.csv") if (tdir / "peers.csv").exists() else pd.DataFrame()
        check = (
            pd.read_csv(tdir / "peers_sampler_check.csv")
            if (tdir / "peers_sampler_check.csv").exists()
            else pd.DataFrame()
        )
    else:
        store = ResultStore(args.results)
        table, check = peers_tables(store)
        recs = store.load(experiment="peers")
        if "diagnostics.timeout_seconds" in recs:
            caps = recs["diagnostics.timeout_seconds"].dropna().unique()
            cap = float(caps.max()) if len(caps) else None
    if table.empty and check.empty:
        print(
            f"no peers records in {args.tables or args.results}: run  python run.py experiment=peers  first"
        )
        return 1
    if not table.empty:
        print(table.to_string(index=False))
        print("written:", utility_figure(table, out), time_figure(table, cap, out))
    if not check.empty:
        print(check.to_string(index=False))
        print("written:", sampler_figure(check, out))
    return 0
