"""What tight calibration buys: the paper's noise against the smallest noise for the exact profile.

    python scripts/plot_calibration.py [--results results/calibration] [--scale quick] [--out DIR]

Reads the results store (records of ``experiment=utility_vs_n`` for pca, random, mod_sulq and
analyze_gauss on kddcup and census, and ``experiment=dimension_scaling`` for mod_sulq and
analyze_gauss, each mechanism with ``mechanism.fn.calibration=paper`` and ``=tight``; commands in
``docs/calibration.md``) and writes ``<out>/calibration.png`` (+ PDF): utility q_F versus n per data
set, and n*(d) with fitted slopes.  Prints the numbers behind the figure as Markdown tables.
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
from experiments.figures.style import CALIBRATION_STYLE, save, scale_text
from experiments.store.compat import fill_unkeyed_defaults
from experiments.store.store import ResultStore

CAL_COL = "run_key.mechanism_params.calibration"


def with_calibration(df: pd.DataFrame) -> pd.DataFrame:
    """Add a ``calibration`` column: the run key's value, 'paper' when absent (the default is not keyed,
    :func:`experiments.store.compat.fill_unkeyed_defaults`),
    '-' for mechanisms without noise (pca, random)."""
    df = df.copy()
    cal = df[CAL_COL] if CAL_COL in df.columns else pd.Series([None] * len(df), index=df.index)
    df["calibration"] = fill_unkeyed_defaults(cal, "calibration")
    df.loc[df.mechanism.isin(["pca", "random"]), "calibration"] = "-"
    return df


def series_label(mech: str, cal: str) -> str:
    return CALIBRATION_STYLE.get(mech, {}).get("label", mech) + ("" if cal == "-" else f" ({cal})")


def line_style(mech: str, cal: str) -> dict:
    return dict(
        color=CALIBRATION_STYLE.get(mech, {}).get("color"),
        ls="-" if cal in ("-", "tight") else "--",
        marker="o" if cal == "tight" else None,
        ms=4,
    )


def markdown(table: pd.DataFrame, floatfmt: str = "{:.4g}") -> str:
    """A DataFrame as a Markdown table (index levels first), without the optional tabulate package."""
    t = table.reset_index()

    def fmt(v) -> str:
        if v is None or (isinstance(v, float) and pd.isna(v)):
            return "—"
        if isinstance(v, (int, np.integer)) or (
            isinstance(v, float) and v.is_integer() and abs(v) >= 100
        ):
            return f"{int(v):,}"
        return floatfmt.format(v) if isinstance(v, float) else str(v)

    rows = ["| " + " | ".join(fmt(c) for c in t.columns) + " |", "|" + "---|" * len(t.columns)]
    rows += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in t.itertuples(index=False)]
    return "\n".join(rows)


def utility_table(d: pd.DataFrame) -> pd.DataFrame:
    return (
        d.groupby(["dataset", "mechanism", "calibration", "n"])["q_F"]
        .agg(["mean", "std", "count"])
        .reset_index()
    )


def summary_table(d: pd.DataFrame) -> pd.DataFrame:
    d = d.sort_values("timestamp").groupby(["mechanism", "calibration", "d"]).tail(1)
    cols = ["mechanism", "calibration", "d", "n_star"] + (
        ["search"] if "search" in d.columns else []
    )
    return d[cols].sort_values(["mechanism", "calibration", "d"])


def fitted_slope(g: pd.DataFrame) -> float | None:
    n = pd.to_numeric(g.n_star, errors="coerce")
    ok = n.notna()
    if ok.sum() < 2:
        return None
    return float(np.polyfit(np.log(g.d[ok].astype(float)), np.log(n[ok]), 1)[0])


def plot(df: pd.DataFrame, out: Path) -> list[Path] | None:
    if df.empty:
        return None
    df = with_calibration(df)
    util = df[(df.experiment == "utility_vs_n") & df.dataset.isin(["kddcup", "census"])]
    dims = df[(df.experiment == "dimension_scaling") & (df.get("kind") == "summary")]
    datasets = [x for x in ("kddcup", "census") if x in set(util.dataset)]
    panels = len(datasets) + (1 if not dims.empty else 0)
    if panels == 0:
        return None
    fig, axes = plt.subplots(1, panels, figsize=(5.0 * panels, 3.9), squeeze=False)
    axes = list(axes[0])
    for ax, ds in zip(axes, datasets):
        t = utility_table(util[util.dataset == ds])
        for (mech, cal), g in t.groupby(["mechanism", "calibration"]):
            ax.errorbar(
                g.n,
                g["mean"],
                yerr=g["std"].fillna(0.0),
                capsize=2,
                label=series_label(mech, cal),
                **line_style(mech, cal),
            )
        ax.set_xscale("log")
        ax.set_title(
            f"{ds} (k = {int(util[util.dataset == ds].k.iloc[0])}; ε = 0.1, δ = 0.01)", fontsize=9
        )
        ax.set_xlabel("n (subsample size)")
        ax.set_ylabel("utility q_F")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    if not dims.empty:
        ax = axes[-1]
        s = summary_table(dims)
        for (mech, cal), g in s.groupby(["mechanism", "calibration"]):
            g = g.sort_values("d")
            n = pd.to_numeric(g.n_star, errors="coerce")
            slope = fitted_slope(g)
            lab = series_label(mech, cal) + ("" if slope is None else f", slope {slope:.2f}")
            line = ax.plot(
                g.d[n.notna()], n[n.notna()], label=lab, **{**line_style(mech, cal), "marker": "o"}
            )[0]
            if (
                n.isna().any()
            ):  # not reached: open triangle at the largest n searched (n* is above it)
                top = [
                    srch[-1]["n"] if isinstance(srch, list) and srch else np.nan
                    for srch in g.get("search", pd.Series([None] * len(g), index=g.index))[n.isna()]
                ]
                ax.plot(
                    g.d[n.isna()],
                    top,
                    marker="^",
                    ls="none",
                    mfc="none",
                    ms=8,
                    color=line.get_color(),
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("dimension d")
        ax.set_ylabel("n* (mean q_F ≥ 0.9·q_F(V_k))")
        ax.set_title(
            f"n* vs d, spiked model (ε = {dims.epsilon.iloc[0]:g}; △ = not reached up to that n)",
            fontsize=9,
        )
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.suptitle(
        "Paper calibration (dashed) vs tight calibration from the exact Gaussian profile (solid, o) · "
        + scale_text(df),
        y=1.03,
        fontsize=10,
    )
    return save(fig, out, "calibration")


def print_tables(df: pd.DataFrame) -> None:
    df = with_calibration(df)
    util = df[df.experiment == "utility_vs_n"]
    if not util.empty:
        t = utility_table(util)
        t["cell"] = t.apply(
            lambda r: f"{r['mean']:.3f} ± {0 if pd.isna(r['std']) else r['std']:.3f}", axis=1
        )
        for ds, g in t.groupby("dataset"):
            wide = g.pivot_table(
                index=["mechanism", "calibration"], columns="n", values="cell", aggfunc="first"
            )
            print(f"\n### utility q_F versus n, {ds} (mean ± sd over subsets x restarts)\n")
            print(markdown(wide))
        noise = util[util.mechanism.isin(["mod_sulq", "analyze_gauss"])]
        if "noise_scale" in noise.columns and not noise.empty:
            ns = (
                noise.groupby(["dataset", "mechanism", "n", "calibration"])["noise_scale"]
                .first()
                .unstack()
            )
            if {"paper", "tight"} <= set(ns.columns):
                ns["paper/tight"] = ns["paper"] / ns["tight"]
                per = (
                    ns.reset_index()
                    .groupby(["dataset", "mechanism"])
                    .agg(
                        smallest_n=("n", "min"),
                        paper_std=("paper", "first"),
                        tight_std=("tight", "first"),
                        ratio_min=("paper/tight", "min"),
                        ratio_max=("paper/tight", "max"),
                    )
                )
                print(
                    "\n### noise std at the smallest n, paper against tight (ratio over all n: min, max)\n"
                )
                print(markdown(per))
    dims = df[(df.experiment == "dimension_scaling") & (df.get("kind") == "summary")]
    if not dims.empty:
        s = summary_table(dims)
        print("\n### n*(d), spiked model (None = not reached within the grid / memory cap)\n")
        print(
            markdown(
                s.assign(n_star=s.n_star.astype(object)).pivot_table(
                    index=["mechanism", "calibration"],
                    columns="d",
                    values="n_star",
                    aggfunc="first",
                )
            )
        )
        print("\n### fitted slope of log n* against log d\n")
        for (mech, cal), g in s.groupby(["mechanism", "calibration"]):
            sl = fitted_slope(g.sort_values("d"))
            pts = int(pd.to_numeric(g.n_star, errors="coerce").notna().sum())
            print(f"- {mech} ({cal}): {'n/a' if sl is None else f'{sl:.2f}'} on {pts} points")


def noise_ratio_table(
    settings=((0.1, 0.01), (0.5, 0.01), (1.0, 1e-5), (2.0, 1e-5)),
) -> pd.DataFrame:
    """paper/tight noise std (lift for private_sketch) of every Gaussian mechanism, from the library
    functions themselves (no records): MOD-SULQ at n = 10,000, d = 100; Analyze Gauss add/remove;
    noisy_power row-level replace-one-row with L' = 8 products (against its default zCDP σ: its
    paper σ is the same formula up to constants); streaming_power B = 500; online_pca tree at
    m = 5,000 (not a power of two) and m = 4,096; private_sketch r = 11 (lift w)."""
    from mechanisms.calibration import (
        analyze_gauss_noise_scale,
        analyze_gauss_noise_scale_tight,
        mod_sulq_noise_scale,
        mod_sulq_noise_scale_tight,
        sketch_lift_tight,
    )
    from mechanisms.noisy_power import noisy_power_row_noise_scale
    from mechanisms.online_pca import tree_node_noise_scale
    from mechanisms.private_sketch import private_sketch_lift
    from mechanisms.streaming_power import streaming_power_noise_scale

    rows = []
    for eps, delta in settings:
        r = {
            "epsilon": eps,
            "delta": delta,
            "mod_sulq (d=100)": mod_sulq_noise_scale(10_000, 100, eps, delta)
            / mod_sulq_noise_scale_tight(10_000, eps, delta),
            "analyze_gauss": (
                analyze_gauss_noise_scale(eps, delta) / analyze_gauss_noise_scale_tight(eps, delta)
                if eps < 1
                else float("nan")
            ),
            "noisy_power zcdp/tight (L'=8)": (
                noisy_power_row_noise_scale(eps, delta, 8, "replace-one-row", "zcdp")
                / noisy_power_row_noise_scale(eps, delta, 8, "replace-one-row", "tight")
            ),
            "streaming_power": (
                streaming_power_noise_scale(eps, delta, 500)
                / streaming_power_noise_scale(eps, delta, 500, "tight")
            ),
            "online_pca tree m=5000": (
                tree_node_noise_scale(eps, delta, 5000)
                / tree_node_noise_scale(eps, delta, 5000, calibration="tight")
            ),
            "online_pca tree m=4096": (
                tree_node_noise_scale(eps, delta, 4096)
                / tree_node_noise_scale(eps, delta, 4096, calibration="tight")
            ),
            "private_sketch lift w (r=11)": private_sketch_lift(eps, delta, 11)
            / sketch_lift_tight(eps, delta, 11),
            "tight lift w": sketch_lift_tight(eps, delta, 11),
        }
        rows.append(r)
    return pd.DataFrame(rows).set_index(["epsilon", "delta"])


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--results", default="results/calibration", help="results store root (contains records/)"
    )
    ap.add_argument(
        "--out",
        default=None,
        help="where calibration.png/.pdf go (default <results>/drawn/<scale>, not committed)",
    )
    ap.add_argument(
        "--curate", action="store_true", help="allow --out to be a curated (committed) directory"
    )
    ap.add_argument("--scale", default="quick", help="use only records of this scale")
    args = ap.parse_args(argv)
    out = Path(args.out) if args.out else Path(args.results) / "drawn" / (args.scale or "all")
    if is_curated(out) and not args.curate:
        ap.error(f"--out {out} is a curated (committed) directory: add --curate to write there")
    df = ResultStore(Path(args.results)).load()
    if not df.empty and args.scale:
        df = df[df.scale == args.scale]
    paths = plot(df, out)
    print(
        "### paper / tight noise std (lift w for private_sketch), from the calibration functions\n"
    )
    print(markdown(noise_ratio_table(), floatfmt="{:.3g}"))
    print_tables(df)
    print("\nwrote: " + (", ".join(map(str, paths)) if paths else "nothing (no records)"))
