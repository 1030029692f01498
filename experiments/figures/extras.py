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
    from experiments.store.summary import largest_searched as f

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


def scaling_curves(df: pd.DataFrame) -> dict[str, dict]:
    """The dimension-scaling numbers the figure draws, per mechanism: the latest ``kind: summary``
    record per (mechanism, d), and from them

    * ``records``: those records (sorted by d),
    * ``d``, ``n_star`` (NaN where not reached), ``n_largest_searched`` (where a search stopped),
      ``floor`` (the grid's smallest n, :func:`grid_floor`): arrays over d,
    * ``slope``, ``points``, ``at_floor``: :func:`fitted_slope`,
    * ``relation``: the neighbouring relation of its runs (:func:`neighbouring_by_mechanism`), or
      None.

    Parameters
    ----------
    df : pandas.DataFrame
        Records (a store's or a summary's).

    Returns
    -------
    dict
        Mechanism -> the numbers above; empty when there are no dimension-scaling summaries.
    """
    if df.empty or not {"experiment", "kind"} <= set(df.columns):
        return {}
    exp = df[df.experiment == "dimension_scaling"]
    d = exp[exp.kind == "summary"]
    if d.empty:
        return {}
    runs = exp[exp.kind == "run"]
    d = d.sort_values("timestamp", kind="mergesort").groupby(["mechanism", "d"]).tail(1)
    relations = neighbouring_by_mechanism(runs)
    curves = {}
    for mech, g in d.groupby("mechanism"):
        g = g.sort_values("d")
        n = pd.to_numeric(g.n_star, errors="coerce")
        if "n_largest_searched" in g:  # the summary's column (experiments.store.summary)
            top = pd.to_numeric(g.n_largest_searched, errors="coerce")
        else:
            top = pd.Series(
                [
                    largest_searched(srch, grid)
                    for srch, grid in zip(
                        g.get("search", pd.Series([None] * len(g), index=g.index)),
                        g.get("n_grid", pd.Series([None] * len(g), index=g.index)),
                    )
                ],
                index=g.index,
                dtype=float,
            )
        floor = grid_floor(runs[runs.mechanism == mech], g)
        slope, points, at_floor = fitted_slope(g.d, n, floor)
        curves[mech] = {
            "records": g,
            "d": g.d.to_numpy(dtype=float),
            "n_star": n.to_numpy(dtype=float),
            "n_largest_searched": top.to_numpy(dtype=float),
            "floor": floor.to_numpy(dtype=float),
            "slope": slope,
            "points": points,
            "at_floor": at_floor,
            "relation": relations.get(mech),
        }
    return curves


def fig_dimension_scaling(df: pd.DataFrame, out: Path):
    """n*(d) per mechanism (log-log) with guide lines of slope 1/2, 1, 3/2; in the legend, each
    curve's neighbouring relation (when the mechanisms' differ) and its fitted slope (only on at
    least :data:`MIN_SLOPE_POINTS` distinct d above the grid's smallest n): :func:`scaling_curves`."""
    curves = scaling_curves(df)
    if not curves:
        return None
    d = pd.concat([c["records"] for c in curves.values()])
    relations = {m: c["relation"] for m, c in curves.items() if c["relation"]}
    one_relation = len(set(relations.values())) == 1
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    anchors, caps, reached = [], [], set()
    for mech, c in curves.items():
        dims, n = c["d"], c["n_star"]
        ok = np.isfinite(n)
        note = slope_text(dims, n, c["floor"])
        st = labelled_style(mech, c["records"])
        label = st.pop("label")
        if mech in relations and not one_relation:
            label += f" ({relations[mech]})"
        st["ls"] = "-"
        st.setdefault("color", EXTRA_COLORS.get(mech))
        st.setdefault("marker", "o")
        line = ax.plot(dims[ok], n[ok], label=f"{label}{note}", **st)[0]
        reached |= {(float(a), float(b)) for a, b in zip(dims[ok], n[ok])}
        # not reached: open triangle at the largest n searched (n* is above it)
        top = c["n_largest_searched"]
        caps += [(line.get_color(), float(a), float(b)) for a, b in zip(dims[~ok], top[~ok])]
        if ok.any():
            anchors.append((float(dims[ok][0]), float(n[ok][0])))
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


#: the two online-regret variants, by ``tree``: name, colour, and the theorem whose rate is drawn
REGRET_VARIANTS = {
    False: ("Algorithm 2 (Gaussian FPL, tree=False)", "tab:orange", "theorem9"),
    True: ("tree aggregation (tree=True)", "tab:blue", "theorem8"),
}


def regret_means(df: pd.DataFrame) -> dict[bool, dict]:
    """The online-regret curves the figure draws, per variant (``tree``): the mean over its runs of
    the regret, OPT and the theorem's rate at the stored steps ``t`` (runs whose curve has other
    steps left out), and ``runs``, how many were averaged.

    Parameters
    ----------
    df : pandas.DataFrame
        Records (a store's or a summary's).

    Returns
    -------
    dict
        ``tree`` -> {"t", "regret", "opt", "rate", "runs"} (arrays over t and an int); empty when
        there are no online-regret records.
    """
    if df.empty or "experiment" not in df.columns:
        return {}
    d = df[df.experiment == "online_regret"]
    if d.empty:
        return {}
    out = {}
    for tree, g in d.groupby("tree"):
        tree = bool(tree)
        t = np.asarray(g["curve.t"].iloc[0], dtype=float)

        def mean(col):
            return np.mean([np.asarray(x, dtype=float) for x in g[col] if len(x) == len(t)], axis=0)

        out[tree] = {
            "t": t,
            "regret": mean("curve.regret"),
            "opt": mean("curve.opt"),
            "rate": mean(f"curve.{REGRET_VARIANTS[tree][2]}"),
            "runs": sum(1 for x in g["curve.regret"] if len(x) == len(t)),
        }
    return out


def fig_online_regret(df: pd.DataFrame, out: Path):
    """Regret vs m for Algorithm 2 (tree=False) and the tree version, with OPT and the rate curves
    (:func:`regret_means`)."""
    curves = regret_means(df)
    if not curves:
        return None
    d = df[df.experiment == "online_regret"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for tree, c in curves.items():
        name, colour, bound = REGRET_VARIANTS[tree]
        thm = "Thm 8" if bound == "theorem8" else "Thm 9"
        t, reg, opt, rate = c["t"], c["regret"], c["opt"], c["rate"]
        axes[0].plot(t, reg, color=colour, label=f"regret, {name} ({c['runs']} runs)")
        axes[1].plot(t, reg / opt, color=colour, label=name)
        axes[0].plot(t, rate, color=colour, ls=":", label=f"{thm} rate (constants 1)")
        axes[1].plot(t, rate / opt, color=colour, ls=":", label=f"{thm} rate / OPT")
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
