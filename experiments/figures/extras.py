"""Figures of the experiments beyond the JMLR paper (docs/extra_experiments.md): sample complexity
against the dimension, and the online PCA regret."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.figures.style import (
    EXTRA_COLORS,
    labelled_style,
    legend_below,
    save,
    scale_text,
)

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


#: spread (in log10 d) between "not reached" markers drawn at the same (d, n)
CAP_MARKER_STEP = 0.05
#: the fewest distinct dimensions a slope is fitted on
MIN_SLOPE_POINTS = 3


def grid_floor(runs: pd.DataFrame, g: pd.DataFrame) -> pd.Series:
    """The smallest n searched for each summary record of ``g`` (one mechanism, one row per d): the
    smallest n among that mechanism's runs at that d (``runs``, the ``kind: run`` records), else the
    smallest n of the record's ``n_grid``; NaN when neither is known."""
    first = (
        runs.groupby("d")["n"].min()
        if len(runs) and {"d", "n"} <= set(runs.columns)
        else pd.Series(dtype=float)
    )
    out = []
    for _, r in g.iterrows():
        grid = r.get("n_grid")
        if r["d"] in first.index:
            out.append(float(first[r["d"]]))
        elif isinstance(grid, (list, tuple, np.ndarray)) and len(grid):
            out.append(float(min(grid)))
        else:
            out.append(np.nan)
    return pd.Series(out, index=g.index)


def slope_text(dims, n_star, floor) -> str:
    """The legend's note on a fitted slope of log n* against log d: ``", slope 1.50"`` when at least
    :data:`MIN_SLOPE_POINTS` distinct d reached n* above the grid's smallest n; otherwise why no slope
    is given (n* at the grid's smallest n is only an upper bound, so such points are left out).

    Parameters
    ----------
    dims, n_star, floor : array-like
        Per d: the dimension, n* (NaN where not reached) and the smallest n searched (NaN unknown).

    Returns
    -------
    str
    """
    slope, points, at_floor = fitted_slope(dims, n_star, floor)
    if slope is not None:
        return f", slope {slope:.2f}"
    why = [f"n* found at {points} d"] if points else []
    if at_floor:
        why.append(f"n* ≤ {int(min(at_floor)):,}, the grid's smallest n, at {len(at_floor)} d")
    return f", no slope ({'; '.join(why) or 'n* not reached'})"


def fitted_slope(dims, n_star, floor) -> tuple[float | None, int, list[float]]:
    """(slope of log n* against log d or None, the number of distinct d it would be fitted on, the
    n* at the grid's smallest n); the slope is None below :data:`MIN_SLOPE_POINTS` distinct d or when
    the fit is degenerate.  The same numbers as the dimension-scaling figure's legend."""
    dims = np.asarray(dims, dtype=float)
    n = np.asarray(n_star, dtype=float)
    floor = np.asarray(floor, dtype=float)
    reached = np.isfinite(n)
    low = reached & np.isfinite(floor) & (n <= floor)
    use = reached & ~low
    points = len(set(dims[use]))
    slope = None
    if points >= MIN_SLOPE_POINTS:
        x, y = np.log(dims[use]), np.log(n[use])
        if np.ptp(x) > 0:
            slope = float(np.polyfit(x, y, 1)[0])
    return slope, points, [float(v) for v in n[low]]


def neighbouring_by_mechanism(d: pd.DataFrame) -> dict[str, str]:
    """The neighbouring relation of each mechanism's records (its runs carry it; a summary record of
    the dimension-scaling search does not), "none" for non-private output left out; several are
    joined with " / "."""
    if "neighbouring" not in d.columns:
        return {}
    out = {}
    for mech, g in d.groupby("mechanism"):
        rel = sorted({str(x) for x in g.neighbouring.dropna() if str(x) not in ("none", "")})
        if rel:
            out[mech] = " / ".join(rel)
    return out


def _spread_caps(caps: list[tuple[str, float, float]], reached: set[tuple[float, float]]):
    """x positions of the "not reached" markers ``caps`` (mechanism, d, n): markers that share a
    (d, n) are spread sideways in log d, and moved off a reached n* drawn there."""
    groups: dict[tuple[float, float], list[int]] = {}
    for i, (_, dim, n) in enumerate(caps):
        groups.setdefault((dim, n), []).append(i)
    x = [c[1] for c in caps]
    for (dim, n), members in groups.items():
        k = len(members)
        occupied = (dim, n) in reached
        if k == 1 and not occupied:
            continue
        offsets = range(1, k + 1) if occupied else [j - (k - 1) / 2 for j in range(k)]
        for i, j in zip(members, offsets):
            x[i] = dim * 10 ** (CAP_MARKER_STEP * j)
    return x


def fig_dimension_scaling(df: pd.DataFrame, out: Path):
    """n*(d) per mechanism (log-log) with guide lines of slope 1/2, 1, 3/2; in the legend, each
    curve's neighbouring relation (when the mechanisms' differ) and its fitted slope (only on at
    least :data:`MIN_SLOPE_POINTS` distinct d above the grid's smallest n)."""
    if df.empty or not {"experiment", "kind"} <= set(df.columns):
        return None
    exp = df[df.experiment == "dimension_scaling"]
    d = exp[exp.get("kind") == "summary"]
    if d.empty:
        return None
    runs = exp[exp.get("kind") == "run"]
    d = d.sort_values("timestamp", kind="mergesort").groupby(["mechanism", "d"]).tail(1)
    relations = neighbouring_by_mechanism(runs)
    one_relation = len(set(relations.values())) == 1
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    anchors, caps, reached = [], [], set()
    for mech, g in d.groupby("mechanism"):
        g = g.sort_values("d")
        n = pd.to_numeric(g.n_star, errors="coerce")
        ok = n.notna()
        floor = grid_floor(runs[runs.mechanism == mech], g)
        note = slope_text(g.d, n, floor)
        st = labelled_style(mech, g)
        label = st.pop("label")
        if mech in relations and not one_relation:
            label += f" ({relations[mech]})"
        st["ls"] = "-"
        st.setdefault("color", EXTRA_COLORS.get(mech))
        st.setdefault("marker", "o")
        line = ax.plot(g.d[ok], n[ok], label=f"{label}{note}", **st)[0]
        reached |= {(float(a), float(b)) for a, b in zip(g.d[ok], n[ok])}
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
            caps += [(line.get_color(), float(a), float(b)) for a, b in zip(g.d[~ok], top)]
        if ok.any():
            anchors.append((float(g.d[ok].iloc[0]), float(n[ok].iloc[0])))
    for (colour, _, n_top), x in zip(caps, _spread_caps(caps, reached)):
        ax.plot([x], [n_top], marker="^", ls="none", mfc="none", ms=8, color=colour)
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
    relation = (
        f" ({next(iter(relations.values()))})"
        if one_relation
        else " (each curve's neighbouring relation in its label)"
        if relations
        else ""
    )
    ax.set_title(
        f"Sample complexity vs d (spiked model, k = {int(d.k.iloc[0])}, ε = {eps}{relation};\n"
        f"△ = not reached up to that n; △ at one n side by side) · {scale_text(d)}",
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
    axes[0].set_ylabel("regret (energy)")
    axes[1].set_ylabel("regret / OPT")
    axes[1].set_yscale("log")
    for ax in axes:  # below each panel: inside, it covered the curves
        legend_below(ax, fontsize=7, frameon=False)
    r = d.iloc[0]
    fig.suptitle(
        f"Online PCA regret (DTTZ 2014), spiked model d = {int(r['d'])}, k = {int(r['k'])}, "
        f"per-step ε = {r['config.epsilon']:g}, δ = {r['config.delta']:g} · {scale_text(d)}"
    )
    return save(fig, out, "online_regret")
