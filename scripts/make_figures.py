#!/usr/bin/env python
"""Regenerate every JMLR figure and table from the results store (never from memory).

    python scripts/make_figures.py [--results results] [--out results] [--only fig3,table2]

Writes ``<out>/figures/fig1.png`` ... ``fig5.png`` (+ PDF) and ``<out>/tables/table1.csv``,
``table2.csv``.  A figure whose records are missing is skipped with a message.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from experiments.results import ResultStore  # noqa: E402

#: line styles of the paper's Figures 3-5 (PCA red solid, PPCA blue dashed, random green, MOD-SULQ purple)
STYLE = {
    "pca": dict(color="tab:red", ls="-", label="Non-private PCA"),
    "ppca": dict(color="tab:blue", ls="--", label="PPCA"),
    "random": dict(color="tab:green", ls="--", label="Random"),
    "mod_sulq": dict(color="tab:purple", ls="--", label="MOD-SULQ"),
}
PAPER_TABLE2 = {  # JMLR Table 2, accuracy (%) mean, std
    ("kddcup", "pca"): (98.97, 0.05), ("kddcup", "ppca"): (98.95, 0.05),
    ("kddcup", "mod_sulq"): (98.18, 0.65), ("kddcup", "random"): (98.23, 0.49),
    ("localization", "pca"): (100.0, 0.0), ("localization", "ppca"): (100.0, 0.0),
    ("localization", "mod_sulq"): (97.06, 2.17), ("localization", "random"): (96.28, 2.34),
}


def style(mech: str) -> dict:
    return STYLE.get(mech, dict(ls=":", label=mech))


def save(fig, out: Path, name: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    for p in paths:
        fig.savefig(p, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return paths


def fig1(df: pd.DataFrame, out: Path):
    d = df[df.experiment == "sulq_bound"]
    if d.empty:
        return None
    dims = sorted(d.d.unique())
    fig, axes = plt.subplots(1, len(dims), figsize=(4 * len(dims), 3.4), sharey=True, squeeze=False)
    for ax, dim in zip(axes[0], dims):
        sub = d[d.d == dim]
        for eps, g in sub.groupby("epsilon"):
            g = g.sort_values("log10_n")
            ax.plot(g.log10_n, g.bound, label=f"ε = {eps:g}")
        ax.set_title(f"d = {dim}")
        ax.set_xlabel("log10(n)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("upper bound on E|<v̂₁, v₁>| (Thm 15)")
    axes[0][-1].legend(fontsize=8)
    fig.suptitle("Figure 1: MOD-SULQ correlation bound (δ = 0.01)", y=1.04)
    return save(fig, out, "fig1")


def fig2(df: pd.DataFrame, out: Path):
    d = df[df.experiment == "gibbs_convergence"]
    if d.empty:
        return None
    d = d.sort_values("timestamp").groupby("dataset").tail(1)
    fig, axes = plt.subplots(1, len(d), figsize=(5 * len(d), 3.6), squeeze=False)
    for ax, (_, row) in zip(axes[0], d.iterrows()):
        it = np.asarray(row["traces.iterations"])
        for i, tr in enumerate(row["traces.log_F"]):
            ax.plot(it, tr, lw=0.9, label=f"chain {i + 1}")
        ax.axhline(np.log(0.01), color="k", ls=":", lw=0.8, label="F = 0.01")
        ax.set_title(f"{row['dataset']} (k = {row['k']}, n = {row['n']:,})")
        ax.set_xlabel("iteration T")
        ax.set_ylabel("log F_k^i(T)")
        ax.legend(fontsize=7)
    fig.suptitle("Figure 2: convergence of the PPCA sampler from uniform starts")
    return save(fig, out, "fig2")


def utility_vs_n(df: pd.DataFrame, datasets: list[str], out: Path, name: str, title: str):
    d = df[(df.experiment == "utility_vs_n") & df.dataset.isin(datasets)]
    if d.empty:
        return None
    present = [x for x in datasets if x in set(d.dataset)]
    fig, axes = plt.subplots(1, len(present), figsize=(5.2 * len(present), 3.8), squeeze=False)
    for ax, ds in zip(axes[0], present):
        sub = d[d.dataset == ds]
        for mech, g in sub.groupby("mechanism"):
            s = g.groupby("n")["q_F"].agg(["mean", "std"]).reset_index().fillna(0.0)
            ax.errorbar(s.n, s["mean"], yerr=s["std"], capsize=3, **style(mech))
        split = sub.split.iloc[0]
        ax.set_xscale("log")
        ax.set_title(f"{ds} (k = {sub.k.iloc[0]}{', ' + split + ' split' if split else ''})")
        ax.set_xlabel("n (subsample size)")
        ax.set_ylabel("utility q_F(U)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title + "  (ε = 0.1, δ = 0.01; bars: ±1 sd)")
    return save(fig, out, name)


def fig5(df: pd.DataFrame, out: Path):
    d = df[df.experiment == "utility_vs_epsilon"]
    if d.empty:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for mech, g in d.groupby("mechanism"):
        s = g.groupby("epsilon_grid")["q_F"].agg(["mean", "std"]).reset_index().fillna(0.0)
        ax.errorbar(s.epsilon_grid, s["mean"], yerr=s["std"], capsize=3, **style(mech))
    ax.set_xscale("log")
    ax.set_xlabel("ε")
    ax.set_ylabel("utility q_F(U)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Figure 5: utility vs ε (d = 10 Gaussian, n = 5,000, k = 2)")
    return save(fig, out, "fig5")


def table1(df: pd.DataFrame, out: Path):
    d = df[df.experiment == "table1"]
    if d.empty:
        return None
    cols = ["dataset", "split", "n", "d", "k", "q_F", "q_F_over_trace", "paper_n", "paper_d", "paper_q_F"]
    extra = [c for c in ("paper_ratio", "rel_diff_q_F") if c in d.columns]
    t = d.sort_values("timestamp").groupby("dataset").tail(1)[cols + extra]
    out.mkdir(parents=True, exist_ok=True)
    t.to_csv(out / "table1.csv", index=False)
    return [out / "table1.csv"]


def table2(df: pd.DataFrame, out: Path):
    d = df[df.experiment == "classification"]
    if d.empty:
        return None
    g = d.groupby(["dataset", "mechanism"])["accuracy"].agg(["mean", "std", "count"]).reset_index()
    g["accuracy_pct"] = (100 * g["mean"]).round(2)
    g["std_pct"] = (100 * g["std"].fillna(0.0)).round(2)
    g["paper_accuracy_pct"] = [PAPER_TABLE2.get((a, b), (np.nan, np.nan))[0] for a, b in zip(g.dataset, g.mechanism)]
    g["paper_std_pct"] = [PAPER_TABLE2.get((a, b), (np.nan, np.nan))[1] for a, b in zip(g.dataset, g.mechanism)]
    t = g[["dataset", "mechanism", "accuracy_pct", "std_pct", "count", "paper_accuracy_pct", "paper_std_pct"]]
    t = t.rename(columns={"count": "rounds"})
    out.mkdir(parents=True, exist_ok=True)
    t.to_csv(out / "table2.csv", index=False)
    return [out / "table2.csv"]


def make_all(results: Path, out: Path, only: set[str] | None = None,
             scale: str | None = None) -> dict[str, list[Path] | None]:
    df = ResultStore(results).load()
    if df.empty:
        print(f"no records under {results}/records", file=sys.stderr)
        return {}
    if scale and "scale" in df.columns:
        # records without a scale (Table 1, the Figure 1 bound) do not depend on it
        df = df[(df["scale"] == scale) | df["scale"].isna()]
    jobs = {
        "fig1": lambda: fig1(df, out / "figures"),
        "fig2": lambda: fig2(df, out / "figures"),
        "fig3": lambda: utility_vs_n(df, ["census", "kddcup"], out / "figures", "fig3",
                                     "Figure 3: utility vs n"),
        "fig4": lambda: utility_vs_n(df, ["localization", "insurance"], out / "figures", "fig4",
                                     "Figure 4: utility vs n"),
        "fig5": lambda: fig5(df, out / "figures"),
        "table1": lambda: table1(df, out / "tables"),
        "table2": lambda: table2(df, out / "tables"),
    }
    made = {}
    for name, job in jobs.items():
        if only and name not in only:
            continue
        made[name] = job()
        print(f"{name}: {'no records, skipped' if made[name] is None else ', '.join(map(str, made[name]))}")
    return made


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default="results", help="results store root (contains records/)")
    ap.add_argument("--out", default=None, help="where figures/ and tables/ go (default: --results)")
    ap.add_argument("--only", default="", help="comma-separated subset, e.g. fig3,table2")
    ap.add_argument("--scale", default=None, help="use only records of this scale (smoke, quick, paper)")
    args = ap.parse_args(argv)
    results = Path(args.results)
    make_all(results, Path(args.out) if args.out else results, set(filter(None, args.only.split(","))) or None,
             args.scale)


if __name__ == "__main__":
    main()
