"""Figure functions of experiments.figures.paper (all but Figure 2) and the tables of
experiments.figures.tables, on small DataFrames of records."""

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from experiments.figures import paper as make_figures
from experiments.figures import tables

matplotlib.use("Agg")
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def captured(monkeypatch):
    figs = []
    real = make_figures.save
    monkeypatch.setattr(
        make_figures, "save", lambda fig, out, name: figs.append(fig) or real(fig, out, name)
    )
    return figs


def _utility(datasets, mechs=("mod_sulq", "random", "ppca", "pca")):
    rng = np.random.default_rng(0)
    rows = [
        {
            "experiment": "utility_vs_n",
            "dataset": ds,
            "split": None,
            "mechanism": m,
            "n": n,
            "k": 4,
            "q_F": float(rng.uniform()),
        }
        for ds in datasets
        for m in mechs
        for n in (100, 1000)
        for _ in range(3)
    ]
    return pd.DataFrame(rows)


def _classification():
    rows = []
    for scale, reps in (("quick", 2), ("paper", 3)):
        for mech, acc in (("random", 0.97), ("pca", 0.988), ("mod_sulq", 0.98), ("ppca", 0.988)):
            for r in range(reps):
                rows.append(
                    {
                        "experiment": "classification",
                        "dataset": "kddcup",
                        "mechanism": mech,
                        "k": 4,
                        "scale": scale,
                        "accuracy": acc + r / 1000,
                        "svm_loss": "hinge",
                        "feature_scaling": "standard",
                        "random_entries": "uniform" if mech == "random" else None,
                        "random_projection": "orthonormal" if mech == "random" else None,
                        "majority_accuracy": 0.8,
                        "d_classified": 116,
                        "guarantee_status": "nominal (MCMC)" if mech == "ppca" else "proven",
                    }
                )
        for ds in ("census", "insurance"):
            for r in range(reps):
                rows.append(
                    {
                        "experiment": "classification",
                        "dataset": ds,
                        "mechanism": "pca",
                        "k": 8,
                        "scale": scale,
                        "accuracy": 0.94 + r / 1000,
                        "majority_accuracy": 0.94,
                        "svm_loss": "hinge",
                        "feature_scaling": "standard",
                        "d_classified": 512,
                    }
                )
    rows.append(
        {
            "experiment": "classification",
            "dataset": "census",
            "mechanism": "pca",
            "k": 8,
            "scale": "quick",
            "accuracy": 0.93,
            "majority_accuracy": 0.93,
            "svm_loss": "hinge",
            "feature_scaling": "standard",
            "d_classified": 510,
            "drop_feature_prefixes": ["income="],
        }
    )
    # a legacy record (before the protocol fields): read as squared hinge, unscaled, Haar random
    rows.append(
        {
            "experiment": "classification",
            "dataset": "kddcup",
            "mechanism": "random",
            "k": 4,
            "scale": "paper",
            "accuracy": 0.95,
        }
    )
    return pd.DataFrame(rows)


def test_legends_follow_the_paper_order(tmp_path, captured):
    make_figures.utility_vs_n(
        _utility(["census", "kddcup"]), ["census", "kddcup"], tmp_path, "fig3", "t"
    )
    (legend,) = captured[0].legends  # one legend, below the panels
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == ["Non-private PCA", "PPCA", "Random", "MOD-SULQ"]


def test_random_and_mod_sulq_stay_distinguishable(tmp_path, captured):
    """Identical curves: distinct markers and x positions (offset), so neither hides the other."""
    df = _utility(["insurance"], mechs=("random", "mod_sulq"))
    df.loc[df.mechanism == "mod_sulq", "q_F"] = df.loc[df.mechanism == "random", "q_F"].values
    make_figures.utility_vs_n(df, ["insurance"], tmp_path, "fig4", "t")
    lines = {c.get_label(): c.lines[0] for c in captured[0].axes[0].containers}
    r, m = lines["Random"], lines["MOD-SULQ"]
    assert r.get_marker() != m.get_marker()
    assert np.all(np.asarray(r.get_xdata(), float) < np.asarray(m.get_xdata(), float))
    assert np.allclose(np.asarray(r.get_ydata(), float), np.asarray(m.get_ydata(), float))


def test_figure4_says_why_localization_is_missing(tmp_path, captured):
    paths = make_figures.utility_vs_n(
        _utility(["insurance"]), ["localization", "insurance"], tmp_path, "fig4", "t"
    )
    assert all(p.stat().st_size > 1000 for p in paths)
    ax = captured[0].axes[0]
    text = " ".join(t.get_text() for t in ax.texts)
    assert (
        "localization" in ax.get_title()
        and "not available" in text
        and "ConfLongDemo_JSI.txt" in text
    )
    assert "MANIFEST" not in text  # a file the repository does not hold
    assert captured[0].axes[1].get_title().startswith("insurance")


def test_figure5_title_gives_delta_samples_and_burn_in(tmp_path, captured):
    rows = [
        {
            "experiment": "utility_vs_epsilon",
            "mechanism": m,
            "epsilon_grid": e,
            "q_F": 0.5,
            "delta": 0.05 if m == "mod_sulq" else 0.0,
            "iterations": 1000 if m == "ppca" else None,
        }
        for m in ("pca", "mod_sulq", "ppca")
        for e in (0.1, 1.0)
        for _ in range(1 if m == "pca" else 7)
    ]
    make_figures.fig5(pd.DataFrame(rows), tmp_path)
    title = captured[0].axes[0].get_title()
    assert "δ = 0.05" in title and "7 samples per ε" in title and "burn-in T = 1,000" in title
    labels = [t.get_text() for t in captured[0].axes[0].get_legend().get_texts()]
    assert labels == ["Non-private PCA", "PPCA", "MOD-SULQ"]


def test_classification_figure_and_tables(tmp_path, captured):
    df = _classification()
    paths = make_figures.fig_classification(df, tmp_path)
    assert [p.suffix for p in paths] == [".png", ".pdf"] and all(
        p.stat().st_size > 1000 for p in paths
    )
    titles = [ax.get_title() for ax in captured[0].axes]
    assert [t.split(" ")[0] for t in titles] == ["kddcup", "census", "insurance"]
    legend = [t.get_text() for t in captured[0].axes[0].get_legend().get_texts()]
    assert (
        "paper · linear · hinge/standard" in legend and "quick · linear · hinge/standard" in legend
    )
    assert (
        "paper · linear · squared_hinge/none" in legend and "paper (Table 2)" in legend
    )  # the legacy record
    census = [t.get_text() for t in captured[0].axes[1].get_legend().get_texts()]
    assert (
        "quick · linear · hinge/standard · d = 510" in census
        and "quick · linear · hinge/standard · d = 512" in census
        and "majority label" in census
    )
    ticks = {
        t.get_text().split("\n")[0]: t.get_text() for t in captured[0].axes[0].get_xticklabels()
    }
    assert "nominal ε (MCMC), not proven" in ticks["PPCA"]  # MCMC PPCA labelled as everywhere
    assert "not proven" not in ticks["MOD-SULQ"] and "not proven" not in ticks["Non-private PCA"]
    t2 = pd.read_csv(tables.table2(df, tmp_path)[0])
    assert set(t2.dataset) == {"kddcup"}
    row = t2[(t2.scale == "paper") & (t2.mechanism == "random") & (t2.svm_loss == "hinge")]
    assert row.accuracy_pct.item() == pytest.approx(97.1) and row.rounds.item() == 3
    assert row.random_entries.item() == "uniform" and row.paper_accuracy_pct.item() == 98.23
    legacy = t2[(t2.svm_loss == "squared_hinge")]
    assert legacy.random_entries.item() == "gaussian" and legacy.feature_scaling.item() == "none"
    order = list(t2[(t2.scale == "paper") & (t2.svm_loss == "hinge")].mechanism)
    assert order == ["pca", "ppca", "mod_sulq", "random"]
    fn = pd.read_csv(tables.footnote1(df, tmp_path)[0])
    assert set(fn.dataset) == {"census", "insurance"}
    q = fn[(fn.dataset == "census") & (fn.scale == "quick") & (fn.d_classified == 512)]
    assert q.accuracy_pct.item() == pytest.approx(94.05) and q.majority_accuracy_pct.item() == 94.0
    assert q.gain_pct.item() == pytest.approx(0.05)


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_figure3_legend_hides_no_curve(tmp_path, captured):
    """Two points per curve (smoke scale): the legend sits below the panels, outside every axes, so it
    cannot cover the non-private line along the top."""
    df = _utility(["census", "kddcup"]).assign(scale="smoke")
    df.loc[df.mechanism == "pca", "q_F"] = 0.99
    make_figures.utility_vs_n(df, ["census", "kddcup"], tmp_path, "fig3", "Figure 3")
    fig = captured[0]
    fig.canvas.draw()
    (legend,) = fig.legends
    box = legend.get_window_extent()
    assert not any(_overlap(box, ax.get_window_extent()) for ax in fig.axes)
    assert "scale: smoke" in fig._suptitle.get_text()


def test_title_mentions_only_the_offsets_of_curves_it_draws(tmp_path, captured):
    make_figures.utility_vs_n(
        _utility(["census"], mechs=("ppca", "my_gauss")), ["census"], tmp_path, "f", "Mine"
    )
    assert "offset" not in captured[0]._suptitle.get_text()
    make_figures.utility_vs_n(_utility(["census"]), ["census"], tmp_path, "g", "Figure 3")
    assert "Random and MOD-SULQ offset slightly in n" in captured[1]._suptitle.get_text()


@pytest.mark.parametrize(
    "ns",
    [
        [500, 5000],
        [500, 700, 1000, 1500, 2200, 3300, 5000],
        list(np.unique(np.geomspace(1000, 494021, 10).astype(int))),
    ],
)
def test_n_tick_labels_never_collide(tmp_path, captured, ns):
    rows = [
        {
            "experiment": "utility_vs_n",
            "dataset": "gaussian10",
            "split": None,
            "mechanism": m,
            "n": int(n),
            "k": 2,
            "q_F": 0.5,
        }
        for m in ("ppca", "my_gauss")
        for n in ns
    ]
    make_figures.utility_vs_n(pd.DataFrame(rows), ["gaussian10"], tmp_path, "own", "Mine")
    fig = captured[0]
    fig.canvas.draw()
    ax = fig.axes[0]
    labels = [
        t
        for t in ax.get_xticklabels() + ax.get_xticklabels(minor=True)
        if t.get_text() and t.get_visible()
    ]
    boxes = [t.get_window_extent() for t in labels]
    assert len(labels) >= 2 and max(float(n) for n in ns) in ax.get_xticks()
    assert not any(_overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def _fig2_records():
    rows = []
    for ds, d, k in (("kddcup", 116, 4), ("insurance", 150, 11)):
        for sampler in ("reference", "gibbs"):
            T = np.arange(10, 410, 10)
            rows.append(
                {
                    "experiment": "gibbs_convergence",
                    "dataset": ds,
                    "sampler": sampler,
                    "k": k,
                    "d": d,
                    "n": 1000,
                    "epsilon": 0.1,
                    "scale": "smoke",
                    "timestamp": "t",
                    "sweeps_per_iteration": 2,
                    "traces.iterations": T,
                    "traces.log_F": [np.log(1 / np.sqrt(T)) + c for c in (0, 0.1)],
                }
            )
    return pd.DataFrame(rows)


def test_figure2_legend_leaves_the_traces_visible_and_the_y_label_is_short(tmp_path, captured):
    """The y label names the statistic (its formula is in the caption): it fits
    beside the panel instead of running past its height."""
    make_figures.fig2(_fig2_records(), tmp_path)
    fig = captured[0]
    fig.canvas.draw()
    for ax in fig.axes:
        legend = ax.get_legend()
        assert not _overlap(legend.get_window_extent(), ax.get_window_extent())  # below the panel
        assert ax.get_ylabel() == r"$\log F_k^{\,i}(T)$"
        label_height = ax.yaxis.label.get_window_extent().height
        assert label_height < 0.5 * ax.get_window_extent().height
    assert "scale: smoke" in fig._suptitle.get_text()


def test_figure2_draws_the_fast_chain_at_each_number_of_sweeps_labelled(tmp_path, captured):
    """Records of the fast chain with 1 sweep per iteration (the PPCA releases' chain) and with 2
    (the convergence study's default) are both drawn, each labelled by its sweeps per iteration;
    a record without the field is the chain's default, 2."""
    recs = _fig2_records()
    one = recs[recs.sampler == "gibbs"].assign(sweeps_per_iteration=1, timestamp="u")
    recs = pd.concat([recs, one], ignore_index=True)
    make_figures.fig2(recs, tmp_path)
    for ax in captured[0].axes:
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        fast = [x for x in labels if x.startswith("Givens chain")]
        assert len(fast) == 2
        assert any("1 sweep per iteration" in x for x in fast)
        assert any("2 sweeps per iteration" in x for x in fast)
        styles = {
            line.get_label(): (line.get_linestyle(), tuple(np.ravel(line.get_color())))
            for line in ax.lines
            if line.get_label().startswith("Givens")
        }
        assert len(set(styles.values())) == 2  # told apart by line style and colour too
        assert sum(1 for x in labels if x.startswith("Hoff")) == 1
    legacy = recs.iloc[[1]].drop(columns="sweeps_per_iteration")
    assert "2 sweeps per iteration" in make_figures.fig2_label(legacy.iloc[0])


def test_figures_3_and_4_state_epsilon_and_delta_from_the_records(tmp_path, captured):
    """ε and δ come from the records drawn (never a constant): the private releases' ε, and a δ
    that only MOD-SULQ uses named as MOD-SULQ's; non-private PCA (ε = ∞) and random (ε = 0) are
    left out."""
    df = _utility(["census"])
    eps = {"pca": float("inf"), "random": 0.0, "ppca": 0.1, "mod_sulq": 0.1}
    df["epsilon"] = df.mechanism.map(eps)
    df["delta"] = np.where(df.mechanism == "mod_sulq", 0.01, 0.0)
    make_figures.utility_vs_n(df, ["census"], tmp_path, "fig3", "Figure 3: utility vs n")
    title = captured[0]._suptitle.get_text()
    assert "ε = 0.1, δ = 0.01 (MOD-SULQ)" in title
    df["epsilon"] = df.mechanism.map({**eps, "ppca": 0.5, "mod_sulq": 0.5})
    df["delta"] = np.where(df.mechanism.isin(["mod_sulq", "ppca"]), 0.05, 0.0)
    make_figures.utility_vs_n(df, ["census"], tmp_path, "fig3b", "Figure 3: utility vs n")
    title = captured[1]._suptitle.get_text()
    assert "ε = 0.5, δ = 0.05" in title and "0.1" not in title and "(MOD-SULQ)" not in title


@pytest.mark.slow
@pytest.mark.parametrize("scale", ["quick", "paper"])
def test_the_committed_figures_3_and_4_state_the_papers_epsilon_delta_and_label_n_1000(
    tmp_path, captured, scale
):
    """As the paper's caption: ε = 0.1 and δ = 0.01; the n axis labels the grid's first size,
    n = 1,000, and the full data set."""
    from experiments.store.summary import load_summary

    summary = {"quick": "results/quick/summary", "paper": "results/paper_scale/summary"}[scale]
    df = load_summary(REPO / summary)
    for datasets in (["census", "kddcup"], ["localization", "insurance"]):
        make_figures.utility_vs_n(df, datasets, tmp_path, "f", "Figure")
        fig = captured[-1]
        assert "ε = 0.1, δ = 0.01 (MOD-SULQ)" in fig._suptitle.get_text()
        fig.canvas.draw()
        for ax in fig.axes:
            if not ax.get_xticks().size:  # the panel that says why it is missing
                continue
            labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
            ds = ax.get_title().split(" ")[0]
            full = int(df[(df.experiment == "utility_vs_n") & (df.dataset == ds)].n.max())
            assert labels[0] == "1,000" and labels[-1] == f"{full:,}", labels


def test_classification_figure_is_the_same_drawn_from_the_store_or_from_its_summary(tmp_path):
    """The summary keeps no lists (``drop_feature_prefixes``): the census runs without the income
    columns are told apart by their number of features either way, with the same legend, markers
    and bytes."""
    from experiments.figures import cli
    from experiments.store.store import ResultStore
    from experiments.store.summary import update_summary

    store = ResultStore(tmp_path / "store")
    for dropped, d_classified, acc in (([], 512, 0.974), (["income="], 510, 0.938)):
        for r in range(3):
            store.write(
                {
                    "run_key": {"dropped": dropped, "round": r},
                    "experiment": "classification",
                    "dataset": "census",
                    "mechanism": "pca",
                    "k": 8,
                    "scale": "quick",
                    "accuracy": acc + r / 1000,
                    "majority_accuracy": 0.938,
                    "classifier": "rbf",
                    "svm_loss": "hinge",
                    "feature_scaling": "minmax",
                    "svm_converged": True,
                    "d_classified": d_classified,
                    "drop_feature_prefixes": dropped,
                    "timestamp": f"t{r}",
                }
            )
    update_summary(tmp_path / "store", tmp_path / "summary")
    kw = dict(only={"fig_classification"}, scale="quick")
    cli.make_all(tmp_path / "store", tmp_path / "a", **kw)
    cli.make_all(tmp_path / "store", tmp_path / "b", summary=tmp_path / "summary", **kw)
    for ext in ("png", "pdf"):
        a = (tmp_path / "a" / "figures" / f"fig_classification.{ext}").read_bytes()
        b = (tmp_path / "b" / "figures" / f"fig_classification.{ext}").read_bytes()
        assert a == b, ext
