"""Regenerate every JMLR figure and table from the results store (never from memory).

    python scripts/make_figures.py [--results results] [--scale smoke] [--out DIR] [--only fig3,table2]
    python scripts/make_figures.py --summary results/quick/summary --scale quick --out results/quick --curate

Writes ``<out>/figures/fig1.png`` ... ``fig5.png``, ``fig_classification.png`` (+ PDF) and
``<out>/tables/table1.csv``, ``table2.csv``, ``footnote1.csv``.  ``--out`` defaults to
``<results>/drawn/<scale>`` (``<results>/drawn/all`` without ``--scale``), a local directory that is
never committed.  The curated outputs (``results/quick`` and ``results/paper_scale``, see
:data:`CURATED`) are written only with ``--curate``, by ``scripts/curate.sh``, from the committed
summary of that scale.  Every figure names the scale of the records it draws; figures are drawn
deterministically (no date or version in the files), so drawing again from the same records gives
the same bytes.  Every drawing function takes a pandas DataFrame of records (the store's, or any
table with the same columns).  A figure whose records are missing is skipped with a message.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.compat import fill_legacy_protocol, legacy_guarantee_statuses
from experiments.jmlr import require_converged
from experiments.provenance import REPO_ROOT as REPO
from experiments.results import ResultStore

#: the curated output directory of each scale (committed; written only by ``--curate``)
CURATED = {"quick": REPO / "results" / "quick", "paper": REPO / "results" / "paper_scale"}

#: line styles of the paper's Figures 3-5 (PCA red solid, PPCA blue dashed, random green, MOD-SULQ purple)
#: MOD-SULQ and random are nearly equal on census and insurance (as in the paper): distinct markers
#: and a small horizontal offset (``X_OFFSET``, a factor on n) keep both visible.
STYLE = {
    "pca": dict(color="tab:red", ls="-", label="Non-private PCA"),
    "ppca": dict(color="tab:blue", ls="--", label="PPCA"),
    "random": dict(color="tab:green", ls="--", marker="o", mfc="none", ms=6, label="Random"),
    "mod_sulq": dict(color="tab:purple", ls="-.", marker="x", ms=6, label="MOD-SULQ"),
}
#: legend order of the paper (Figures 3-4 captions: PCA, PPCA, random, MOD-SULQ; Table 2 lists
#: MOD-SULQ before random, TABLE2_ORDER)
PAPER_ORDER = ["pca", "ppca", "random", "mod_sulq"]
#: row order of the paper's Table 1
TABLE1_ORDER = ["kddcup", "census", "localization", "insurance"]
TABLE2_ORDER = ["pca", "ppca", "mod_sulq", "random"]
X_OFFSET = {"random": 10**-0.025, "mod_sulq": 10**0.025}
#: why a panel of the paper cannot be drawn here
MISSING_PANEL = {
    "localization": "localization: raw data not available\n(UCI 'Localization Data for\n"
    "Person Activity', ConfLongDemo_JSI.txt;\nput it under PRIVPCA_DATA_DIR/"
    "localization/\nand run the Figure 4 sweep to draw this panel)"
}
PAPER_TABLE2 = {  # JMLR Table 2, accuracy (%) mean, std
    ("kddcup", "pca"): (98.97, 0.05),
    ("kddcup", "ppca"): (98.95, 0.05),
    ("kddcup", "mod_sulq"): (98.18, 0.65),
    ("kddcup", "random"): (98.23, 0.49),
    ("localization", "pca"): (100.0, 0.0),
    ("localization", "ppca"): (100.0, 0.0),
    ("localization", "mod_sulq"): (97.06, 2.17),
    ("localization", "random"): (96.28, 2.34),
}


def scale_text(d: pd.DataFrame, fallback: str | None = None) -> str:
    """ "scale: quick" (the scales of the records ``d``; ``fallback`` when none is recorded)."""
    scales = sorted({str(x) for x in d["scale"].dropna()}) if "scale" in d.columns else []
    if not scales:
        return f"scale: {fallback}" if fallback else "scale: not recorded"
    return "scale: " + ", ".join(scales)


def style(mech: str) -> dict:
    return STYLE.get(mech, dict(ls=":", label=mech))


#: how a guarantee that is not proven is labelled wherever a result is shown
GUARANTEE_LABELS = {
    "nominal (MCMC)": "nominal ε (MCMC), not proven",
    "unverified constants": "ε unverified (reconstructed constants)",
}


def guarantee_statuses(g: pd.DataFrame) -> set[str]:
    """The non-"proven" guarantee statuses of the records ``g`` (records without the field:
    :func:`experiments.compat.legacy_guarantee_statuses`)."""
    status = (
        g["guarantee_status"]
        if "guarantee_status" in g.columns
        else pd.Series(None, index=g.index, dtype=object)
    )
    return {str(x) for x in status.dropna() if x != "proven"} | legacy_guarantee_statuses(g, status)


def guarantee_suffix(g: pd.DataFrame) -> str:
    """Legend suffix, e.g. " [nominal ε (MCMC), not proven]"; "" when every record's ε is proven."""
    st = guarantee_statuses(g)
    return " [" + "; ".join(GUARANTEE_LABELS.get(x, x) for x in sorted(st)) + "]" if st else ""


def labelled_style(mech: str, g: pd.DataFrame) -> dict:
    st = dict(style(mech))
    st["label"] = st["label"] + guarantee_suffix(g)
    return st


def in_paper_order(mechanisms, order=PAPER_ORDER) -> list:
    """Mechanisms in the paper's order (others after, alphabetically)."""
    present = list(dict.fromkeys(mechanisms))
    return [m for m in order if m in present] + sorted(m for m in present if m not in order)


def save(
    fig,
    out: Path,
    name: str,
    formats: tuple[str, ...] = ("png", "pdf"),
    png_metadata: dict | None = None,
) -> list[Path]:
    """The one way a figure is written: ``<out>/<name>.<format>`` at 130 dpi, then closed.  Nothing
    dated goes into a file (the PDF without its creation date; ``png_metadata`` may drop the PNG's
    software tag too), so drawing an unchanged figure again gives identical bytes."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.{fmt}" for fmt in formats]
    for p in paths:
        meta = {"CreationDate": None} if p.suffix == ".pdf" else png_metadata
        fig.savefig(p, dpi=130, bbox_inches="tight", metadata=meta)
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
    fig.suptitle(
        "Figure 1: MOD-SULQ correlation bound (δ = 0.01) · "
        + scale_text(d, "none (an analytic bound, the same at every scale)"),
        y=1.04,
    )
    return save(fig, out, "fig1")


#: Figure 2's y axis: the statistic of JMLR 2013 section 6.2 (mechanisms/diagnostics.py)
FIG2_YLABEL = r"$\log F_k^{\,i}(T)$ = log($\|$mean of chain $i$'s first $T$ draws$\|_F / \sqrt{k}$)"
#: Figure 2: colour map and line style per sampler
FIG2_SAMPLERS = {"reference": ("Blues", "-"), "gibbs": ("Oranges", "--")}


def fig2_label(row) -> str:
    """What one iteration of the record's sampler is (the x-axis unit of Figure 2)."""
    k = int(row["k"])
    if row.get("sampler") == "reference":
        return f"Hoff column Gibbs (reference): 1 iteration = {k} exact column draws"
    sweeps = row.get("sweeps_per_iteration")
    sweeps = 2 if _missing(sweeps) else int(sweeps)
    pairs = "" if _missing(row.get("d")) else f" = {k * (int(row['d']) - k):,}"
    return (
        f"Givens chain (fast): 1 iteration = {sweeps} sweep{'s' if sweeps > 1 else ''} "
        f"of all k(d-k){pairs} rotations"
    )


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v))


def fig2(df: pd.DataFrame, out: Path):
    """log F_k^i(T) (CSS 2013 Figure 2) per data set, the reference (Hoff) chains and the fast Givens
    chains on the same axes, each labelled with what one of its iterations is."""
    d = df[df.experiment == "gibbs_convergence"]
    if d.empty:
        return None
    if "sampler" not in d.columns:
        d = d.assign(sampler="gibbs")
    d = d.sort_values("timestamp").groupby(["dataset", "sampler"]).tail(1)
    datasets = [x for x in ("kddcup", "insurance") if x in set(d.dataset)] + sorted(
        set(d.dataset) - {"kddcup", "insurance"}
    )
    fig, axes = plt.subplots(1, len(datasets), figsize=(6 * len(datasets), 4.2), squeeze=False)
    for ax, ds in zip(axes[0], datasets):
        rows = d[d.dataset == ds]
        for _, row in sorted(rows.iterrows(), key=lambda r: r[1]["sampler"] != "reference"):
            cmap, ls = FIG2_SAMPLERS.get(row["sampler"], ("Greys", ":"))
            it = np.asarray(row["traces.iterations"])
            chains = row["traces.log_F"]
            colors = plt.get_cmap(cmap)(np.linspace(0.45, 0.9, max(len(chains), 1)))
            for i, tr in enumerate(chains):
                ax.plot(
                    it,
                    tr,
                    lw=0.9,
                    ls=ls,
                    color=colors[i],
                    label=f"{fig2_label(row)} ({len(chains)} chains)" if i == 0 else None,
                )
        ax.axhline(np.log(0.01), color="k", ls=":", lw=0.8, label="F = 0.01")
        r0 = rows.iloc[0]
        parts = [f"k = {int(r0['k'])}"] + [
            f"{lab} = {fmt(r0.get(col))}"
            for col, lab, fmt in (
                ("d", "d", lambda v: f"{int(v)}"),
                ("n", "n", lambda v: f"{int(v):,}"),
                ("epsilon", "ε", lambda v: f"{float(v):g}"),
            )
            if not _missing(r0.get(col))
        ]
        ax.set_title(f"{ds} ({', '.join(parts)})")
        ax.set_xlabel("iteration T (unit: see legend)")
        ax.set_ylabel(FIG2_YLABEL)
        # below the panel: inside, it covered the first iterations, where the chains differ most
        ax.legend(fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.15), frameon=False)
    fig.suptitle(
        "Figure 2: convergence from uniform starts, the paper's (Hoff) sampler and the fast chain · "
        + scale_text(d),
        y=1.03,
    )
    return save(fig, out, "fig2")


def utility_vs_n(df: pd.DataFrame, datasets: list[str], out: Path, name: str, title: str):
    """Figures 3-4: q_F vs n per data set; a panel whose data is missing says why (``MISSING_PANEL``)."""
    d = (
        df[(df.experiment == "utility_vs_n") & df.dataset.isin(datasets)]
        if "experiment" in df
        else df.iloc[0:0]
    )
    if d.empty:
        return None
    panels = [x for x in datasets if x in set(d.dataset) or x in MISSING_PANEL]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.8), squeeze=False)
    handles: dict[str, object] = {}
    for ax, ds in zip(axes[0], panels):
        sub = d[d.dataset == ds]
        if sub.empty:
            ax.text(
                0.5,
                0.5,
                MISSING_PANEL[ds],
                ha="center",
                va="center",
                transform=ax.transAxes,
                fontsize=9,
            )
            ax.set_title(f"{ds} (not reproduced)")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_xlabel("n (subsample size)")
            ax.set_ylabel("utility q_F(U)")
            continue
        for mech in in_paper_order(sub.mechanism):
            g = sub[sub.mechanism == mech]
            s = g.groupby("n")["q_F"].agg(["mean", "std"]).reset_index().fillna(0.0)
            line = ax.errorbar(
                s.n * X_OFFSET.get(mech, 1.0),
                s["mean"],
                yerr=s["std"],
                capsize=3,
                **labelled_style(mech, g),
            )
            handles.setdefault(line.get_label(), line)
        split = sub.split.iloc[0]
        ax.set_xscale("log")
        n_ticks(ax, sorted(sub.n.unique()))
        ax.set_title(f"{ds} (k = {int(sub.k.iloc[0])}{', ' + split + ' split' if split else ''})")
        ax.set_xlabel("n (subsample size)")
        ax.set_ylabel("utility q_F(U)")
        ax.grid(alpha=0.3)
    # one legend below the panels: inside a panel it can hide a curve (with two points, the
    # non-private line runs along the top where the legend goes)
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=min(len(handles), 4),
        fontsize=8,
        frameon=False,
    )
    offset = [STYLE[m]["label"] for m in X_OFFSET if m in set(d.mechanism)]
    notes = ["bars: ±1 sd"] + ([" and ".join(offset) + " offset slightly in n"] if offset else [])
    fig.suptitle(f"{title} ({'; '.join(notes)}) · {scale_text(d)}", y=1.03)
    return save(fig, out, name)


def _short_n(n: float) -> str:
    """Compact tick label of a sample size: 500, 1.6k, 49k, 494k, 1.2M."""
    n = float(n)
    if n < 1000:
        return f"{n:.0f}"
    if n < 1e6:
        return f"{n / 1e3:.{1 if n < 1e4 else 0}f}k"
    return f"{n / 1e6:.1f}M"


def n_ticks(ax, ns) -> None:
    """Label the log n axis at the sizes drawn (at most 6 labels, so they never collide); no minor labels
    (on a grid spanning less than a decade matplotlib labels minor ticks, and they overlap)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    ns = [float(n) for n in ns]
    step = max(1, -(-len(ns) // 6))
    shown = ns[::-1][::step][::-1]  # always keep the largest n (the full data set)
    ax.xaxis.set_major_locator(FixedLocator(shown))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _short_n(v)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())


def _one_value(d: pd.DataFrame, col: str):
    """The single value of ``col`` in ``d`` (None when absent or not unique)."""
    if col not in d.columns:
        return None
    vals = d[col].dropna().unique()
    return vals[0] if len(vals) == 1 else None


def fig5(df: pd.DataFrame, out: Path):
    """Figure 5: q_F vs ε; the title gives MOD-SULQ's δ, the samples per ε and PPCA's burn-in (from records)."""
    d = df[df.experiment == "utility_vs_epsilon"]
    if d.empty:
        return None
    fig, ax = plt.subplots(figsize=(5.8, 3.9))
    for mech in in_paper_order(d.mechanism):
        g = d[d.mechanism == mech]
        s = g.groupby("epsilon_grid")["q_F"].agg(["mean", "std"]).reset_index().fillna(0.0)
        ax.errorbar(s.epsilon_grid, s["mean"], yerr=s["std"], capsize=3, **labelled_style(mech, g))
    ax.set_xscale("log")
    ax.set_xlabel("ε")
    ax.set_ylabel("utility q_F(U)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    private = d[d.mechanism != "pca"]
    samples = (
        sorted(set(private.groupby(["mechanism", "epsilon_grid"]).size())) if len(private) else []
    )
    ms, pp = d[d.mechanism == "mod_sulq"], d[d.mechanism == "ppca"]
    delta = _one_value(ms, "delta")
    burn_in = _one_value(pp, "iterations") if "iterations" in pp else None
    if burn_in is None:
        burn_in = _one_value(pp, "config.ppca_iterations")
    parts = [
        f"MOD-SULQ δ = {delta:g}" if delta is not None else None,
        f"{'/'.join(map(str, samples))} samples per ε" if samples else None,
        f"PPCA burn-in T = {int(burn_in):,}" if burn_in is not None else None,
    ]
    ax.set_title(
        "Figure 5: utility vs ε (d = 10 Gaussian, n = 5,000, k = 2) · "
        + scale_text(d)
        + "\n"
        + ", ".join(p for p in parts if p)
        + "; bars: ±1 sd",
        fontsize=9,
    )
    return save(fig, out, "fig5")


def table1(df: pd.DataFrame, out: Path):
    d = df[df.experiment == "table1"]
    if d.empty:
        return None
    cols = [
        "dataset",
        "split",
        "n",
        "d",
        "k",
        "q_F",
        "q_F_over_trace",
        "paper_n",
        "paper_d",
        "paper_q_F",
    ]
    extra = [c for c in ("paper_ratio", "rel_diff_q_F") if c in d.columns]
    t = d.sort_values("timestamp", kind="mergesort").groupby("dataset").tail(1)[cols + extra]
    # rows in the paper's order (ties in the timestamp must not decide it: store and summary differ)
    t = t.assign(
        _o=[TABLE1_ORDER.index(x) if x in TABLE1_ORDER else len(TABLE1_ORDER) for x in t.dataset]
    )
    t = t.sort_values(["_o", "dataset"], kind="mergesort").drop(columns="_o")
    out.mkdir(parents=True, exist_ok=True)
    t.to_csv(out / "table1.csv", index=False)
    return [out / "table1.csv"]


#: the protocol columns of a classification record (experiments.jmlr.classification_protocol)
PROTOCOL_COLUMNS = [
    "classifier",
    "svm_loss",
    "feature_scaling",
    "random_entries",
    "random_projection",
]
#: footnote 1's data sets (accuracy after PCA no better than the majority label)
FOOTNOTE_DATASETS = ["census", "insurance"]


def classification_records(df: pd.DataFrame, datasets: list[str] | None = None) -> pd.DataFrame:
    """Classification records with the protocol columns filled (records that predate them get their
    old protocol, :func:`experiments.compat.fill_legacy_protocol`; the random-projection columns only
    apply to the random mechanism, "-" for the others)."""
    if "experiment" not in df.columns:
        return df.iloc[0:0]
    d = df[df.experiment == "classification"].copy()
    if datasets is not None:
        d = d[d.dataset.isin(datasets)]
    if d.empty:
        return d
    require_converged(d)  # a fit stopped at its iteration limit is refused, not averaged
    d = fill_legacy_protocol(d)
    for col in PROTOCOL_COLUMNS:
        if col.startswith("random_"):
            d[col] = d[col].astype(object)  # all-NaN (float) when no random records are present
            d.loc[d.mechanism != "random", col] = "-"
    if "scale" not in d:
        d["scale"] = None
    d["scale"] = d["scale"].fillna("-")
    return d


def table2(df: pd.DataFrame, out: Path):
    """Table 2 (kddcup, localization) per scale and protocol, beside the paper's numbers."""
    d = classification_records(df)
    d = d[~d.dataset.isin(FOOTNOTE_DATASETS)] if len(d) else d
    if d.empty:
        return None
    keys = ["dataset", "scale", *PROTOCOL_COLUMNS, "mechanism"]
    g = d.groupby(keys, dropna=False)["accuracy"].agg(["mean", "std", "count"]).reset_index()
    g["accuracy_pct"] = (100 * g["mean"]).round(2)
    g["std_pct"] = (100 * g["std"].fillna(0.0)).round(2)
    g["paper_accuracy_pct"] = [
        PAPER_TABLE2.get((a, b), (np.nan, np.nan))[0] for a, b in zip(g.dataset, g.mechanism)
    ]
    g["paper_std_pct"] = [
        PAPER_TABLE2.get((a, b), (np.nan, np.nan))[1] for a, b in zip(g.dataset, g.mechanism)
    ]
    g["guarantee"] = [
        ", ".join(sorted(guarantee_statuses(d[(d.dataset == a) & (d.mechanism == b)]))) or "proven"
        for a, b in zip(g.dataset, g.mechanism)
    ]
    g.loc[g.mechanism == "pca", "guarantee"] = "none (non-private)"
    g["order"] = [
        TABLE2_ORDER.index(m) if m in TABLE2_ORDER else len(TABLE2_ORDER) for m in g.mechanism
    ]
    g = g.sort_values(["dataset", "scale", "classifier", "svm_loss", "feature_scaling", "order"])
    t = g[
        [
            "dataset",
            "mechanism",
            "guarantee",
            "accuracy_pct",
            "std_pct",
            "count",
            "paper_accuracy_pct",
            "paper_std_pct",
            "scale",
            *PROTOCOL_COLUMNS,
        ]
    ].rename(columns={"count": "rounds"})
    out.mkdir(parents=True, exist_ok=True)
    t.to_csv(out / "table2.csv", index=False)
    return [out / "table2.csv"]


def footnote1(df: pd.DataFrame, out: Path):
    """Footnote 1: on census and insurance, projected-classifier accuracy beside always predicting the
    majority label (mean over rounds; ``gain_pct`` = accuracy - majority, its sd over rounds)."""
    d = classification_records(df, FOOTNOTE_DATASETS)
    if d.empty:
        return None
    if "majority_accuracy" not in d:
        return None
    d = d.dropna(subset=["majority_accuracy"]).copy()
    if "d_classified" not in d:
        d["d_classified"] = d["d"]
    d["gain"] = d.accuracy - d.majority_accuracy
    keys = [
        "dataset",
        "scale",
        "classifier",
        "svm_loss",
        "feature_scaling",
        "d_classified",
        "mechanism",
    ]
    g = (
        d.groupby(keys, dropna=False)
        .agg(
            accuracy_pct=("accuracy", "mean"),
            majority_accuracy_pct=("majority_accuracy", "mean"),
            gain_pct=("gain", "mean"),
            gain_sd_pct=("gain", "std"),
            rounds=("accuracy", "size"),
        )
        .reset_index()
    )
    for c in ("accuracy_pct", "majority_accuracy_pct", "gain_pct", "gain_sd_pct"):
        g[c] = (100 * g[c]).round(2)
    out.mkdir(parents=True, exist_ok=True)
    g.to_csv(out / "footnote1.csv", index=False)
    return [out / "footnote1.csv"]


GROUP_MARKERS = ["o", "s", "^", "v", "D", "P"]


def fig_classification(df: pd.DataFrame, out: Path, name: str = "fig_classification"):
    """Accuracy per mechanism (mean ± 1 sd over rounds) per data set and scale, the paper's Table 2
    beside it (open black diamonds); for footnote 1's data sets a grey bar marks the majority-label
    accuracy.  One panel per data set; within a panel, one group per (scale, protocol)."""
    d = classification_records(df)
    if d.empty:
        return None
    d = d.copy()
    d["group"] = d.scale + " · " + d.classifier + " · " + d.svm_loss + "/" + d.feature_scaling
    if (
        "drop_feature_prefixes" in d
    ):  # e.g. census without its income (label) columns: another group
        dropped = d.drop_feature_prefixes.map(
            lambda v: ", ".join(v) if isinstance(v, (list, tuple)) else ""
        )
        d["group"] += np.where(dropped != "", " · without " + dropped + "*", "")
    elif "d_classified" in d:  # a summary keeps no lists: such a run shows as a smaller d
        several = d.groupby(["dataset", "group"]).d_classified.transform("nunique") > 1
        d["group"] += np.where(several, " · d = " + d.d_classified.map(lambda v: f"{v:.0f}"), "")
    datasets = [x for x in ["kddcup", "localization", *FOOTNOTE_DATASETS] if x in set(d.dataset)]
    datasets += sorted(set(d.dataset) - set(datasets))
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.6 * len(datasets), 4.2), squeeze=False)
    for ax, ds in zip(axes[0], datasets):
        sub = d[d.dataset == ds]
        groups = sorted(sub.group.unique(), key=lambda g: (not g.startswith("paper"), g))
        mechs = in_paper_order(sub.mechanism, TABLE2_ORDER)
        width = 0.8 / max(1, len(groups))
        for gi, grp in enumerate(groups):
            gsub = sub[sub.group == grp]
            for mi, mech in enumerate(mechs):
                acc = 100 * gsub.loc[gsub.mechanism == mech, "accuracy"]
                if acc.empty:
                    continue
                x = mi - 0.4 + width * (gi + 0.5)
                ax.errorbar(
                    [x],
                    [acc.mean()],
                    yerr=[acc.std() if len(acc) > 1 else 0.0],
                    capsize=3,
                    color=style(mech).get("color"),
                    marker=GROUP_MARKERS[gi % len(GROUP_MARKERS)],
                    ls="none",
                )
                if (
                    ds in FOOTNOTE_DATASETS
                    and "majority_accuracy" in gsub
                    and gsub.majority_accuracy.notna().any()
                ):
                    maj = 100 * gsub.loc[gsub.mechanism == mech, "majority_accuracy"].mean()
                    ax.hlines(maj, x - width / 2, x + width / 2, color="0.4", lw=2)
        for mi, mech in enumerate(mechs):
            paper = PAPER_TABLE2.get((ds, mech))
            if paper:
                ax.errorbar(
                    [mi + 0.42],
                    [paper[0]],
                    yerr=[paper[1]],
                    color="k",
                    marker="D",
                    mfc="none",
                    ls="none",
                    capsize=3,
                    label="paper (Table 2)" if mi == 0 else None,
                )
        labels = []
        for mech in mechs:
            lab = style(mech).get("label", mech)
            suffix = guarantee_suffix(sub[sub.mechanism == mech])  # e.g. PPCA's nominal ε (MCMC)
            if suffix:
                lab += "\n" + suffix.strip()
            if mech == "random":
                ent = sub.loc[
                    sub.mechanism == "random", ["random_entries", "random_projection"]
                ].drop_duplicates()
                lab += "\n(" + "; ".join(f"{e}, {p}" for e, p in ent.itertuples(index=False)) + ")"
            labels.append(lab)
        ax.set_xticks(range(len(mechs)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_xlim(-0.6, len(mechs) - 0.3)
        ax.set_ylabel("test accuracy (%)")
        ax.set_xlabel("mechanism (subspace from the hold-out half)")
        k = _one_value(sub, "k")
        ax.set_title(ds + (f" (k = {int(k)})" if k is not None else ""), fontsize=10)
        ax.grid(alpha=0.3, axis="y")
        from matplotlib.lines import Line2D

        handles = [
            Line2D(
                [],
                [],
                color="0.3",
                marker=GROUP_MARKERS[gi % len(GROUP_MARKERS)],
                ls="none",
                label=grp,
            )
            for gi, grp in enumerate(groups)
        ]
        handles += [
            h for h, lab in zip(*ax.get_legend_handles_labels()) if lab == "paper (Table 2)"
        ]
        if ds in FOOTNOTE_DATASETS:
            handles.append(Line2D([], [], color="0.4", lw=2, label="majority label"))
        ax.legend(
            handles=handles, fontsize=7, title="scale · classifier · loss/scaling", title_fontsize=7
        )
    fig.suptitle(
        "Classification in the k-dimensional subspace (JMLR Table 2; bars: ±1 sd over rounds) · "
        + scale_text(d),
        y=1.02,
    )
    return save(fig, out, name)


#: colours of the mechanisms beyond the JMLR paper (the JMLR ones keep STYLE's)
EXTRA_COLORS = {
    "analyze_gauss": "tab:olive",
    "noisy_power": "tab:orange",
    "subspace_approx": "tab:cyan",
    "subspace_exact": "tab:brown",
    "private_sketch": "tab:pink",
    "streaming_power": "tab:gray",
    "online_pca": "tab:gray",
}

#: reference slopes drawn as guide lines in the dimension-scaling figure (theory, constants free)
GUIDES = [
    (0.5, "∝ √d (guide: Analyze Gauss)", ":"),
    (1.0, "∝ d (guide: PPCA)", "--"),
    (1.5, "∝ d^{3/2} (guide: MOD-SULQ)", "-."),
]


def largest_searched(search, n_grid) -> int:
    """The largest n a dimension-scaling search tried (n* lies above it when it was not reached)."""
    from experiments.summary import largest_searched as f

    return f(search, n_grid)


def fig_dimension_scaling(df: pd.DataFrame, out: Path):
    """n*(d) per mechanism (log-log) with guide lines of slope 1/2, 1, 3/2; fitted slopes in the legend."""
    if df.empty or "experiment" not in df.columns:
        return None
    d = df[(df.experiment == "dimension_scaling") & (df.get("kind") == "summary")]
    if d.empty:
        return None
    d = d.sort_values("timestamp").groupby(["mechanism", "d"]).tail(1)
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    anchors = []
    for mech, g in d.groupby("mechanism"):
        g = g.sort_values("d")
        n = pd.to_numeric(g.n_star, errors="coerce")
        ok = n.notna()
        slope = ""
        if ok.sum() >= 2:
            slope = f", slope {np.polyfit(np.log(g.d[ok]), np.log(n[ok]), 1)[0]:.2f}"
        st = labelled_style(mech, g)
        label = st.pop("label")
        st["ls"] = "-"
        st.setdefault("color", EXTRA_COLORS.get(mech))
        st.setdefault("marker", "o")
        line = ax.plot(g.d[ok], n[ok], label=f"{label}{slope}", **st)[0]
        if (~ok).any():  # not reached: open triangle at the largest n searched (n* is above it)
            if "n_largest_searched" in g:  # the summary's column (experiments.summary)
                top = list(g.n_largest_searched[~ok])
            else:
                top = [
                    largest_searched(srch, grid)
                    for srch, grid in zip(
                        g.get("search", pd.Series([None] * len(g), index=g.index))[~ok],
                        g.n_grid[~ok],
                    )
                ]
            ax.plot(g.d[~ok], top, marker="^", ls="none", mfc="none", ms=8, color=line.get_color())
        if ok.any():
            anchors.append((float(g.d[ok].iloc[0]), float(n[ok].iloc[0])))
    dims = np.array(sorted(d.d.unique()), dtype=float)
    if anchors and dims.size >= 2:
        d0 = dims[0]
        n0 = float(
            np.exp(
                np.median(
                    [np.log(a[1]) - 0 * a[0] for a in anchors if a[0] == d0]
                    or [np.log(anchors[0][1])]
                )
            )
        )
        for p, lab, ls in GUIDES:
            ax.plot(dims, n0 * (dims / d0) ** p, color="0.45", ls=ls, lw=1, label=lab)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dimension d")
    ax.set_ylabel(f"n* (mean q_F ≥ {d.target.iloc[0]:g}·q_F(V_k))")
    ax.grid(alpha=0.3, which="both")
    ax.legend(
        fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0)
    )  # beside the axes: hides no line
    eps = ", ".join(f"{e:g}" for e in sorted(d.epsilon.unique()))
    ax.set_title(
        f"Sample complexity vs d (spiked model, k = {int(d.k.iloc[0])}, ε = {eps}; "
        f"△ = not reached up to that n) · {scale_text(d)}",
        fontsize=9,
    )
    return save(fig, out, "dimension_scaling")


def fig_online_regret(df: pd.DataFrame, out: Path):
    """Regret vs m for Algorithm 2 (tree=False) and the tree version, with OPT and the rate curves."""
    if df.empty or "experiment" not in df.columns:
        return None
    d = df[df.experiment == "online_regret"]
    if d.empty:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = {False: "tab:orange", True: "tab:blue"}
    names = {False: "Algorithm 2 (Gaussian FPL, tree=False)", True: "tree aggregation (tree=True)"}
    for tree, g in d.groupby("tree"):
        tree = bool(tree)
        t = np.asarray(g["curve.t"].iloc[0], dtype=float)
        same = [np.asarray(x, dtype=float) for x in g["curve.regret"] if len(x) == len(t)]
        reg = np.mean(same, axis=0)
        opt = np.mean(
            [np.asarray(x, dtype=float) for x in g["curve.opt"] if len(x) == len(t)], axis=0
        )
        c = colors[tree]
        axes[0].plot(t, reg, color=c, label=f"regret, {names[tree]} ({len(same)} runs)")
        axes[1].plot(t, reg / opt, color=c, label=names[tree])
        bound = "theorem8" if tree else "theorem9"
        rate = np.mean(
            [np.asarray(x, dtype=float) for x in g[f"curve.{bound}"] if len(x) == len(t)], axis=0
        )
        axes[0].plot(
            t, rate, color=c, ls=":", label=f"{'Thm 8' if tree else 'Thm 9'} rate (constants 1)"
        )
        axes[1].plot(
            t, rate / opt, color=c, ls=":", label=f"{'Thm 8' if tree else 'Thm 9'} rate / OPT"
        )
    axes[0].plot(t, opt, color="k", lw=1, label="OPT (best fixed k-subspace)")
    axes[0].set_yscale("log")
    axes[1].axhline(1.0, color="k", lw=0.8, ls="--", label="regret = OPT (no learning)")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("stream length m")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("regret (energy)")
    axes[1].set_ylabel("regret / OPT")
    axes[1].set_yscale("log")
    r = d.iloc[0]
    fig.suptitle(
        f"Online PCA regret (DTTZ 2014), spiked model d = {int(r['d'])}, k = {int(r['k'])}, "
        f"per-step ε = {r['config.epsilon']:g}, δ = {r['config.delta']:g} · {scale_text(d)}"
    )
    return save(fig, out, "online_regret")


def make_all(
    results: Path,
    out: Path,
    only: set[str] | None = None,
    scale: str | None = None,
    summary: Path | None = None,
) -> dict[str, list[Path] | None]:
    """Draw from the JSON store ``results``, or from the compact summary directory ``summary``
    (experiments/summary.py) when given."""
    if summary is not None:
        from experiments.summary import load_summary

        df = load_summary(summary)
    else:
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
        "fig3": lambda: utility_vs_n(
            df, ["census", "kddcup"], out / "figures", "fig3", "Figure 3: utility vs n"
        ),
        "fig4": lambda: utility_vs_n(
            df, ["localization", "insurance"], out / "figures", "fig4", "Figure 4: utility vs n"
        ),
        "fig5": lambda: fig5(df, out / "figures"),
        "table1": lambda: table1(df, out / "tables"),
        "table2": lambda: table2(df, out / "tables"),
        "footnote1": lambda: footnote1(df, out / "tables"),
        "fig_classification": lambda: fig_classification(df, out / "figures"),
        "dimension_scaling": lambda: fig_dimension_scaling(df, out / "figures"),
        "online_regret": lambda: fig_online_regret(df, out / "figures"),
    }
    made = {}
    for name, job in jobs.items():
        if only and name not in only:
            continue
        made[name] = job()
        print(
            f"{name}: {'no records, skipped' if made[name] is None else ', '.join(map(str, made[name]))}"
        )
    return made


def default_out(results: Path, scale: str | None) -> Path:
    """Where figures go without ``--out``: ``<results>/drawn/<scale>`` (local, never committed)."""
    return results / "drawn" / (scale or "all")


def is_curated(path: Path) -> bool:
    """Is ``path`` one of the committed curated directories (or inside one)?"""
    path = path.resolve()
    return any(path == c or c in path.parents for c in CURATED.values())


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--results", default="results", help="results store root (contains records/)")
    ap.add_argument(
        "--out",
        default=None,
        help="where figures/ and tables/ go (default: <results>/drawn/<scale>, not committed)",
    )
    ap.add_argument("--only", default="", help="comma-separated subset, e.g. fig3,table2")
    ap.add_argument(
        "--scale", default=None, help="use only records of this scale (smoke, quick, paper)"
    )
    ap.add_argument(
        "--summary",
        default=None,
        help="draw from this compact summary directory (scripts/summarize_results.py) "
        "instead of the JSON records",
    )
    ap.add_argument(
        "--curate",
        action="store_true",
        help="allow --out to be a curated, committed directory (results/quick, "
        "results/paper_scale); scripts/curate.sh passes it",
    )
    args = ap.parse_args(argv)
    results = Path(args.results)
    out = Path(args.out) if args.out else default_out(results, args.scale)
    if is_curated(out) and not args.curate:
        ap.error(
            f"--out {out} is a curated (committed) directory: it is written only by "
            "scripts/curate.sh (or add --curate); choose another --out"
        )
    make_all(
        results,
        out,
        set(filter(None, args.only.split(","))) or None,
        args.scale,
        Path(args.summary) if args.summary else None,
    )
