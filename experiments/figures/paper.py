"""The JMLR paper's figures: Figure 1 (MOD-SULQ's bound), Figure 2 (sampler convergence), Figures 3-4
(utility vs n), Figure 5 (utility vs ε) and the classification figure beside Table 2.

Every function takes a pandas DataFrame of records (the store's, a summary's, or any table with the
same columns) and an output directory, and returns the written paths (:func:`.style.save`), or None
when the records it draws are missing.  ``scripts/make_figures.py`` (:mod:`.cli`) draws them all.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.figures.style import (
    STYLE,
    TABLE2_ORDER,
    guarantee_suffix,
    in_paper_order,
    labelled_style,
    legend_below,
    save,
    scale_text,
    style,
)
from experiments.figures.tables import (
    FOOTNOTE_DATASETS,
    PAPER_TABLE2,
    chain_sweeps,
    classification_records,
    latest_chains,
    paper_noise_only,
)

#: MOD-SULQ and random shifted apart in n (a factor) in Figures 3-4, so both stay visible
X_OFFSET = {"random": 10**-0.025, "mod_sulq": 10**0.025}
#: why a panel of the paper cannot be drawn here
MISSING_PANEL = {
    "localization": "localization: raw data not available\n(UCI 'Localization Data for\n"
    "Person Activity', ConfLongDemo_JSI.txt;\nput it under PRIVPCA_DATA_DIR/"
    "localization/\nand run the Figure 4 sweep to draw this panel)"
}


def fig1(df: pd.DataFrame, out: Path):
    """Figure 1: MOD-SULQ's upper bound on the correlation against n, one panel per d, one line per ε."""
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


#: Figure 2's y axis: the statistic of JMLR 2013 section 6.2 (mechanisms/diagnostics.py), named
#: here and defined in the figure's caption (REPRODUCTION.md, Figure 2; docs/outputs.md):
#: F_k^i(T) = ‖mean of chain i's first T draws‖_F / √k
FIG2_YLABEL = r"$\log F_k^{\,i}(T)$"
#: Figure 2: colour map and line style per chain drawn: the reference sampler, and the fast chain
#: per sweeps per iteration (others: grey, dotted)
FIG2_SAMPLERS = {
    ("reference", None): ("Blues", "-"),
    ("gibbs", 1): ("Greens", "-."),
    ("gibbs", 2): ("Oranges", "--"),
}


def fig2_label(row) -> str:
    """What one iteration of the record's sampler is (the x-axis unit of Figure 2)."""
    k = int(row["k"])
    if row.get("sampler") == "reference":
        return f"Hoff column Gibbs (reference): 1 iteration = {k} exact column draws"
    sweeps = chain_sweeps(row)
    pairs = "" if _missing(row.get("d")) else f" = {k * (int(row['d']) - k):,}"
    return (
        f"Givens chain (fast), {sweeps} sweep{'s' if sweeps > 1 else ''} per iteration "
        f"(1 sweep = all k(d-k){pairs} rotations)"
    )


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v))


def fig2(df: pd.DataFrame, out: Path):
    """log F_k^i(T) (CSS 2013 Figure 2) per data set: the reference (Hoff) chains and the fast Givens
    chains on the same axes, the latest record of each sampler and each number of sweeps per
    iteration (the fast chain of the PPCA releases runs 1, the convergence study's default 2), each
    labelled with what one of its iterations is."""
    d = df[df.experiment == "gibbs_convergence"]
    if d.empty:
        return None
    d = latest_chains(d)
    datasets = [x for x in ("kddcup", "insurance") if x in set(d.dataset)] + sorted(
        set(d.dataset) - {"kddcup", "insurance"}
    )
    fig, axes = plt.subplots(1, len(datasets), figsize=(6 * len(datasets), 4.2), squeeze=False)
    for ax, ds in zip(axes[0], datasets):
        rows = d[d.dataset == ds].sort_values(["sampler", "_sweeps"], kind="mergesort")
        rows = pd.concat([rows[rows.sampler == "reference"], rows[rows.sampler != "reference"]])
        for _, row in rows.iterrows():
            chain = (row["sampler"], None if row["_sweeps"] < 0 else int(row["_sweeps"]))
            cmap, ls = FIG2_SAMPLERS.get(chain, ("Greys", ":"))
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
    for ax in axes[0]:  # below each panel: inside, it covered the first iterations
        legend_below(ax, fontsize=6.5, frameon=False)
    fig.suptitle(
        "Figure 2: convergence from uniform starts, the paper's (Hoff) sampler and the fast chain · "
        + scale_text(d),
        y=1.03,
    )
    return save(fig, out, "fig2")


def utility_vs_n(df: pd.DataFrame, datasets: list[str], out: Path, name: str, title: str):
    """Figures 3-4: q_F vs n per data set; a panel whose data is missing says why (``MISSING_PANEL``)."""
    d = (
        paper_noise_only(df[(df.experiment == "utility_vs_n") & df.dataset.isin(datasets)])
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
    privacy = privacy_text(d)
    fig.suptitle(
        f"{title}{', ' + privacy if privacy else ''} · {scale_text(d)}\n{'; '.join(notes)}",
        y=1.06,
    )
    return save(fig, out, name)


def _n_label(n: float) -> str:
    """Tick label of a sample size, exact: 1,000, 9,822, 494,021."""
    return f"{int(round(float(n))):,}"


def n_ticks(ax, ns, gap_points: float = 6.0) -> None:
    """Label the log n axis at the sizes drawn, exactly (``1,000``), always the smallest and the
    largest n (the grid's start and the full data set) and, between them, as many as fit without two
    labels closer than ``gap_points``; no minor labels (on a grid spanning less than a decade
    matplotlib labels minor ticks, and they overlap).  Call it once the axis' scale and data are set."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    ns = sorted({float(n) for n in ns})
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    size = FontProperties(size=matplotlib.rcParams["xtick.labelsize"])
    gap = gap_points * fig.dpi / 72.0

    def span(n):
        x = ax.transData.transform((n, 1.0))[0]
        w = renderer.get_text_width_height_descent(_n_label(n), size, ismath=False)[0]
        return x - w / 2, x + w / 2

    shown = [ns[-1]]
    if len(ns) > 1:
        last_left = span(ns[-1])[0]
        kept_right = None
        for n in ns[:-1]:
            left, right = span(n)
            if right + gap > last_left:
                break
            if kept_right is None or left >= kept_right + gap:
                shown.insert(len(shown) - 1, n)
                kept_right = right
    ax.xaxis.set_major_locator(FixedLocator(shown))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _n_label(v)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())


def privacy_text(d: pd.DataFrame) -> str:
    """The privacy parameters of the private releases among the records ``d`` (finite ε > 0; the
    non-private PCA, ε = ∞, and the data-independent random subspace, ε = 0, are left out), as a
    caption states them: "ε = 0.1, δ = 0.01 (MOD-SULQ)"; a δ that only some mechanisms use names
    them; "" when no record says.

    Parameters
    ----------
    d : pandas.DataFrame
        Records with ``epsilon``, ``delta`` and ``mechanism`` columns.

    Returns
    -------
    str
    """
    if "epsilon" not in d.columns:
        return ""
    eps = pd.to_numeric(d["epsilon"], errors="coerce")
    private = d[np.isfinite(eps) & (eps > 0)]
    if private.empty:
        return ""
    parts = ["ε = " + ", ".join(f"{e:g}" for e in sorted(set(eps[private.index])))]
    if "delta" in private.columns:
        delta = pd.to_numeric(private["delta"], errors="coerce")
        positive = private[delta > 0]
        if positive.empty:
            parts.append("δ = 0")
        else:
            text = "δ = " + ", ".join(f"{x:g}" for x in sorted(set(delta[positive.index])))
            users = in_paper_order(positive.mechanism)
            if set(users) != set(private.mechanism):
                text += " (" + ", ".join(style(m).get("label", m) for m in users) + ")"
            parts.append(text)
    return ", ".join(parts)


def _one_value(d: pd.DataFrame, col: str):
    """The single value of ``col`` in ``d`` (None when absent or not unique)."""
    if col not in d.columns:
        return None
    vals = d[col].dropna().unique()
    return vals[0] if len(vals) == 1 else None


def fig5(df: pd.DataFrame, out: Path):
    """Figure 5: q_F vs ε; the title gives MOD-SULQ's δ, the samples per ε and PPCA's burn-in (from records)."""
    d = paper_noise_only(df[df.experiment == "utility_vs_epsilon"])
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
    # below the axes: inside, it covered MOD-SULQ's error bars at the middle ε
    legend_below(ax, fontsize=8, ncol=2, frameon=False)
    return save(fig, out, "fig5")


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
    d["group"] += np.where(d.calibration.isin(["paper", "-"]), "", " · " + d.calibration + " noise")
    if "d_classified" in d:
        # runs of one protocol on different features (census without its income columns: the
        # record's list `drop_feature_prefixes`) are told apart by the number of features, which
        # the store's records and the summary (it keeps no lists) both hold: the same legend and
        # markers whichever of the two is drawn
        several = d.groupby(["dataset", "group"]).d_classified.transform("nunique") > 1
        d_text = d.d_classified.map(lambda v: "" if _missing(v) else f" · d = {float(v):.0f}")
        d["group"] += np.where(several, d_text, "")
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
        # below the panel: inside, it covered error bars (kddcup's linear MOD-SULQ, insurance's)
        legend_below(
            ax,
            handles,
            fontsize=7,
            title="scale · classifier · loss/scaling",
            title_fontsize=7,
            frameon=False,
        )
    fig.suptitle(
        "Classification in the k-dimensional subspace (JMLR Table 2; bars: ±1 sd over rounds) · "
        + scale_text(d),
        y=1.02,
    )
    return save(fig, out, name)
