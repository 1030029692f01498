"""Figures of the experiments beyond the JMLR paper (docs/extra_experiments.md): sample complexity
against the dimension, and the online PCA regret."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.figures.style import EXTRA_COLORS, labelled_style, save, scale_text

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
