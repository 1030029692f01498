"""No legend covers data: every figure ``scripts/make_figures.py`` draws from the committed summaries
(quick and paper scale) is checked with :func:`experiments.figures.style.legend_overlaps`, which
compares each legend's box with the drawn markers, error bars, lines and bars; and the check itself
finds a legend put on top of a marker, an error bar, a line and a bar."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

from experiments.figures import cli, extras, paper
from experiments.figures.style import legend_overlaps

REPO = Path(__file__).resolve().parents[3]
SUMMARIES = {"quick": REPO / "results/quick/summary", "paper": REPO / "results/paper_scale/summary"}
FIGURES = [
    "fig1",
    "fig2",
    "fig3",
    "fig4",
    "fig5",
    "fig_classification",
    "dimension_scaling",
    "online_regret",
]


@pytest.fixture
def overlaps_at_save(monkeypatch):
    """Every figure the drawing modules save, checked just before it is written: name -> overlaps."""
    found: dict[str, list[str]] = {}
    for module in (paper, extras):
        real = module.save

        def check(fig, out, name, *args, _real=real, **kwargs):
            found[name] = legend_overlaps(fig)
            return _real(fig, out, name, *args, **kwargs)

        monkeypatch.setattr(module, "save", check)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("scale", sorted(SUMMARIES))
def test_no_legend_covers_data_in_any_figure_drawn_from_a_committed_summary(
    scale, tmp_path, overlaps_at_save
):
    made = cli.make_all(
        REPO / "results", tmp_path, only=set(FIGURES), scale=scale, summary=SUMMARIES[scale]
    )
    drawn = {name for name, paths in made.items() if paths}
    assert {"fig1", "fig2", "fig3", "fig4", "fig5", "fig_classification"} <= drawn
    assert set(overlaps_at_save) == drawn
    assert {name: o for name, o in overlaps_at_save.items() if o} == {}


@pytest.mark.parametrize("kind", ["marker", "errorbar", "line", "bar", "hlines"])
def test_the_check_finds_a_legend_on_top_of_data(kind):
    """A legend placed over one data artist is reported; moved outside the axes, it is not."""
    fig, ax = plt.subplots(figsize=(4, 3))
    if kind == "marker":
        ax.plot([0.1, 0.9], [0.1, 0.9], ls="none", marker="o", label="data")
    elif kind == "errorbar":  # only the bar reaches the upper right corner; its marker does not
        ax.errorbar([0.9], [0.5], yerr=[0.45], ls="none", marker="o", label="data")
    elif kind == "line":
        ax.plot([0.0, 1.0], [0.95, 0.95], label="data")
    elif kind == "bar":
        ax.bar([0.9], [0.95], width=0.1, label="data")
    else:
        ax.hlines(0.95, 0.6, 1.0, label="data")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(loc="upper right")
    assert any("covers" in o for o in legend_overlaps(fig))
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
    assert legend_overlaps(fig) == []
    plt.close(fig)


def test_the_check_ignores_data_outside_the_axes_and_legends_beside_them():
    """A marker clipped away (outside the axes) is not covered by a legend there."""
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0.5, 1.5], [0.5, 0.5], ls="none", marker="o", label="data")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(loc="center left", bbox_to_anchor=(1.05, 0.5))
    assert legend_overlaps(fig) == []
    plt.close(fig)
