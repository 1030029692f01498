"""How every figure looks and is written: the mechanisms' styles (colours, markers, labels) for all
figures, legend orders, the guarantee and scale labels, and :func:`save`, the one way a figure is
written."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from experiments.compat import legacy_guarantee_statuses

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
