"""How every figure looks and is written: the mechanisms' styles (colours, markers, labels) for all
figures, legend orders, the guarantee and scale labels, and :func:`save`, the one way a figure is
written."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.store.compat import legacy_guarantee_statuses

#: line styles of the paper's Figures 3-5 (PCA red solid, PPCA blue dashed, random green, MOD-SULQ purple)
#: MOD-SULQ and random are nearly equal on census and insurance (as in the paper): distinct markers
#: and a small horizontal offset (``experiments.figures.paper.X_OFFSET``, a factor on n) keep both
#: visible.
STYLE = {
    "pca": dict(color="tab:red", ls="-", label="Non-private PCA"),
    "ppca": dict(color="tab:blue", ls="--", label="PPCA"),
    "random": dict(color="tab:green", ls="--", marker="o", mfc="none", ms=6, label="Random"),
    "mod_sulq": dict(color="tab:purple", ls="-.", marker="x", ms=6, label="MOD-SULQ"),
}
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
#: the peers comparison (:mod:`experiments.figures.peers`), drawn in this order: privpca's PPCA in
#: the paper's PPCA colour and line, the peers' implementations in their own
PEERS_STYLE = {
    "ppca": dict(color="tab:blue", ls="--", marker="o", label="privpca PPCA"),
    "ppca_iterative": dict(color="tab:cyan", ls="-", marker="s", label="privpca PPCA (iterative)"),
    "diffprivlib_pca": dict(color="tab:orange", ls="-.", marker="^", label="diffprivlib 0.6.6 PCA"),
    "opendp_pca": dict(color="tab:red", ls=":", marker="v", label="OpenDP 0.16 PCA"),
}
#: the calibration comparison (:mod:`experiments.figures.calibration`): colour and name per
#: mechanism (its line style says the calibration)
CALIBRATION_STYLE = {
    **{
        m: dict(color=STYLE[m]["color"], label=STYLE[m]["label"])
        for m in ("pca", "random", "mod_sulq")
    },
    "analyze_gauss": dict(color="tab:orange", label="Analyze Gauss"),
    "private_sketch": dict(color="tab:brown", label="private_sketch"),
}

#: legend order of the paper (Figures 3-4 captions: PCA, PPCA, random, MOD-SULQ; Table 2 lists
#: MOD-SULQ before random, TABLE2_ORDER)
PAPER_ORDER = ["pca", "ppca", "random", "mod_sulq"]
#: row order of the paper's Table 2 (also the order of the classification figure)
TABLE2_ORDER = ["pca", "ppca", "mod_sulq", "random"]


def scale_text(d: pd.DataFrame, fallback: str | None = None) -> str:
    """ "scale: quick" (the scales of the records ``d``; ``fallback`` when none is recorded)."""
    scales = sorted({str(x) for x in d["scale"].dropna()}) if "scale" in d.columns else []
    if not scales:
        return f"scale: {fallback}" if fallback else "scale: not recorded"
    return "scale: " + ", ".join(scales)


def style(mech: str) -> dict:
    """The line style of ``mech`` in the paper's figures (dotted, named by its key, when it has none)."""
    return STYLE.get(mech, dict(ls=":", label=mech))


#: how a guarantee that is not proven is labelled wherever a result is shown
GUARANTEE_LABELS = {
    "nominal (MCMC)": "nominal ε (MCMC), not proven",
    "unverified constants": "ε unverified (reconstructed constants)",
}


def guarantee_statuses(g: pd.DataFrame) -> set[str]:
    """The non-"proven" guarantee statuses of the records ``g`` (records without the field:
    :func:`experiments.store.compat.legacy_guarantee_statuses`)."""
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
    """:func:`style` with the guarantee status of the records ``g`` in its label."""
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


def _no_marker(marker) -> bool:
    return marker is None or (isinstance(marker, str) and marker in ("", " ", "None", "none"))


def _segments_meet_box(p0: np.ndarray, p1: np.ndarray, box) -> bool:
    """Does any segment ``p0[i]``-``p1[i]`` (display coordinates) meet the rectangle ``box``?  The
    segments are clipped to the box (Liang–Barsky); a segment with a non-finite end is skipped."""
    ok = np.isfinite(p0).all(axis=1) & np.isfinite(p1).all(axis=1)
    p0, p1 = p0[ok], p1[ok]
    if not len(p0):
        return False
    t0, t1 = np.zeros(len(p0)), np.ones(len(p0))
    delta = p1 - p0
    for axis, lo, hi in ((0, box.x0, box.x1), (1, box.y0, box.y1)):
        dx, x = delta[:, axis], p0[:, axis]
        flat = dx == 0
        outside = flat & ((x < lo) | (x > hi))
        t0[outside], t1[outside] = 1.0, 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            ta, tb = (lo - x) / dx, (hi - x) / dx
        enter, leave = np.minimum(ta, tb), np.maximum(ta, tb)
        t0 = np.where(flat, t0, np.maximum(t0, enter))
        t1 = np.where(flat, t1, np.minimum(t1, leave))
    return bool(np.any(t0 <= t1))


def _grown(box, pad: float):
    from matplotlib.transforms import Bbox

    return Bbox.from_extents(box.x0 - pad, box.y0 - pad, box.x1 + pad, box.y1 + pad)


def _artist_name(artist, ax) -> str:
    """How an overlap names a data artist: its label (an error bar's part: its container's), or its
    colour when it has none."""
    from matplotlib.colors import to_hex

    label = str(artist.get_label())
    if label.startswith("_"):  # a part of an error bar: named by its container
        for c in ax.containers:
            if artist in list(c.get_children()):
                label = str(c.get_label())
                break
    if label.startswith("_"):
        get = getattr(artist, "get_color", None) or getattr(artist, "get_facecolor", None)
        try:
            colour = to_hex(np.asarray(get()).reshape(-1, 4)[0] if get else "k")
        except (TypeError, ValueError):
            colour = "?"
        label = f"unlabelled, colour {colour}"
    return f"{type(artist).__name__} {label!r}"


def _covers(artist, box, px_per_point: float) -> bool:
    """Does the drawn ``artist`` (a line's markers and segments, a line collection's segments, a
    scatter's markers, a patch) meet the display-coordinate rectangle ``box``?"""
    from matplotlib.collections import LineCollection, PathCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    if isinstance(artist, Line2D):
        xy = artist.get_transform().transform(np.asarray(artist.get_xydata(), dtype=float))
        if not _no_marker(artist.get_marker()):
            pad = artist.get_markersize() * px_per_point / 2
            near = _grown(box, pad)
            fin = np.isfinite(xy).all(axis=1)
            x, y = xy[fin, 0], xy[fin, 1]
            if np.any((x >= near.x0) & (x <= near.x1) & (y >= near.y0) & (y <= near.y1)):
                return True
        if artist.get_linestyle() not in ("None", "", " ") and len(xy) >= 2:
            near = _grown(box, artist.get_linewidth() * px_per_point / 2)
            return _segments_meet_box(xy[:-1], xy[1:], near)
        return False
    if isinstance(artist, LineCollection):
        tr = artist.get_transform()
        widths = artist.get_linewidths()
        near = _grown(box, (max(widths) if len(widths) else 1.0) * px_per_point / 2)
        for seg in artist.get_segments():
            seg = tr.transform(np.asarray(seg, dtype=float))
            if len(seg) >= 2 and _segments_meet_box(seg[:-1], seg[1:], near):
                return True
        return False
    if isinstance(artist, PathCollection):
        xy = artist.get_offset_transform().transform(np.asarray(artist.get_offsets(), float))
        sizes = artist.get_sizes()
        near = _grown(box, np.sqrt(max(sizes) if len(sizes) else 36.0) * px_per_point / 2)
        x, y = xy[:, 0], xy[:, 1]
        return bool(np.any((x >= near.x0) & (x <= near.x1) & (y >= near.y0) & (y <= near.y1)))
    if isinstance(artist, Patch):
        ext = artist.get_window_extent()
        return ext.width > 0 and ext.height > 0 and ext.overlaps(box)
    return False


def legend_overlaps(fig) -> list[str]:
    """What the legends of ``fig`` cover: one line per (legend, data artist) whose drawn extents
    meet, empty when no legend covers data.

    The figure is drawn first.  Each legend's box is its window extent; the data are every visible
    artist in an axes' lines (a line's marker positions, padded by half the marker size, and its
    segments), collections (an error bar's or ``hlines``' segments, a scatter's markers) and
    patches (bars), in display coordinates, each only where it is drawn (inside its clip box).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        A drawn or undrawn figure.

    Returns
    -------
    list of str
        ``"legend 'LABEL…' covers Line2D 'MOD-SULQ' (axes 0)"`` for each overlap.
    """
    from matplotlib.transforms import Bbox

    fig.canvas.draw()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    legends += list(fig.legends)
    px_per_point = fig.dpi / 72.0
    found = []
    for leg in legends:
        box = leg.get_window_extent()
        texts = [t.get_text() for t in leg.get_texts()]
        name = f"legend {(texts[0] if texts else '')[:40]!r}"
        for i, ax in enumerate(fig.axes):
            for artist in [*ax.lines, *ax.collections, *ax.patches]:
                if not artist.get_visible():
                    continue
                clip = artist.get_clip_box() if artist.get_clip_on() else None
                seen = box if clip is None else Bbox.intersection(box, clip)
                if seen is None or seen.width <= 0 or seen.height <= 0:
                    continue
                if _covers(artist, seen, px_per_point):
                    found.append(f"{name} covers {_artist_name(artist, ax)} (axes {i})")
    return found


def legend_below(ax, handles=None, labels=None, pad_points: float = 6.0, **kwargs):
    """A legend for ``ax`` centred under it, below its tick labels and x label: outside the axes, so
    it covers no data whatever the data are.  Call it once the axes is complete (its tick labels
    decide where its bottom is).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes, drawn.
    handles, labels : list, optional
        As for :meth:`matplotlib.axes.Axes.legend` (default: the axes' own).
    pad_points : float
        Gap between the axes' decorations and the legend, in points.
    **kwargs
        Further arguments of :meth:`matplotlib.axes.Axes.legend` (``fontsize``, ``ncol``, ...).

    Returns
    -------
    matplotlib.legend.Legend
    """
    fig = ax.figure
    below = ax.get_tightbbox(fig.canvas.get_renderer()).y0 - pad_points * fig.dpi / 72.0
    x_mid = (ax.bbox.x0 + ax.bbox.x1) / 2
    anchor = fig.transFigure.inverted().transform((x_mid, below))
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    elif labels is None:
        labels = [h.get_label() for h in handles]
    return ax.legend(
        handles,
        labels,
        loc="upper center",
        bbox_to_anchor=tuple(anchor),
        bbox_transform=fig.transFigure,
        **kwargs,
    )
