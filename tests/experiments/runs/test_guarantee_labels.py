"""Records keep release and diagnostics apart; a result whose ε is not a proven guarantee (PPCA's
MCMC draw) is labelled as nominal wherever it is shown (records, figures, Table 2)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments.runs.jmlr import run_utility_vs_n
from experiments.store.store import ResultStore
from tests.hydra_helpers import compose_cfg

REPO = Path(__file__).resolve().parents[3]


def test_ppca_mcmc_record_is_nominal_and_keeps_diagnostics_apart(tmp_path):
    """PPCA with k = 2 runs the Gibbs chain: its record says "nominal (MCMC)"; the chain's R-hat and
    the concentration n·ε/2·λ₁ are stored only under diagnostics_not_private."""
    cfg = compose_cfg(
        [
            "experiment=utility_vs_n",
            "mechanism=ppca",
            "scale=smoke",
            "experiment.n_grid=[500]",
            f"results_dir={tmp_path}",
            "quiet=true",
        ]
    )
    run_utility_vs_n(cfg)
    df = ResultStore(tmp_path).load()
    assert len(df) >= 1
    r = df.iloc[0]
    assert r.guarantee_status == "nominal (MCMC)" and not r.guarantee_exact
    assert r["release.sampler"] == "gibbs" and r.sampler == "gibbs"
    for key in ("rhat", "ess", "converged", "concentration", "n_clipped"):
        assert f"diagnostics_not_private.{key}" in r.index and f"release.{key}" not in r.index
        assert key not in r.index  # no unlabelled copy at the top level
    assert "info" not in df.columns and not any(c.startswith("info.") for c in df.columns)


def _store(root: Path) -> ResultStore:
    store = ResultStore(root)
    rng = np.random.default_rng(0)
    i = 0
    rows = [
        ("ppca", {"guarantee_status": "nominal (MCMC)", "guarantee_exact": False}),
        ("mod_sulq", {"guarantee_status": "proven", "guarantee_exact": True}),
        ("random", {"guarantee_exact": True}),
    ]  # written before guarantee_status
    for mech, g in rows:
        for n in (1000, 10000):
            i += 1
            store.write(
                {
                    "run_key": {"i": i},
                    "experiment": "utility_vs_n",
                    "dataset": "census",
                    "split": "x",
                    "mechanism": mech,
                    "n": n,
                    "k": 4,
                    "q_F": float(rng.uniform()),
                    "timestamp": "t",
                    **g,
                }
            )
        i += 1
        store.write(
            {
                "run_key": {"i": i},
                "experiment": "utility_vs_epsilon",
                "dataset": "gaussian10",
                "mechanism": mech,
                "epsilon_grid": 0.1,
                "q_F": 0.5,
                "timestamp": "t",
                **g,
            }
        )
        i += 1
        store.write(
            {
                "run_key": {"i": i},
                "experiment": "classification",
                "dataset": "kddcup",
                "mechanism": mech,
                "accuracy": 0.9,
                "timestamp": "t",
                **g,
            }
        )
    # a PPCA record written before guarantee_status existed: exact=False means an MCMC draw
    i += 1
    store.write(
        {
            "run_key": {"i": i},
            "experiment": "utility_vs_epsilon",
            "dataset": "gaussian10",
            "mechanism": "ppca",
            "epsilon_grid": 1.0,
            "q_F": 0.6,
            "timestamp": "t",
            "guarantee_exact": False,
        }
    )
    for mech, status in (("ppca", "nominal (MCMC)"), ("analyze_gauss", "proven")):
        for d in (10, 100):
            i += 1
            store.write(
                {
                    "run_key": {"i": i},
                    "experiment": "dimension_scaling",
                    "kind": "summary",
                    "mechanism": mech,
                    "d": d,
                    "k": 2,
                    "epsilon": 0.5,
                    "target": 0.9,
                    "n_star": 40 * d,
                    "n_grid": [1],
                    "timestamp": "t",
                    "guarantee_status": status,
                }
            )
    return store


def _legend_labels(fig) -> list[str]:
    """Labels of the axes' legends and of the figure's (Figures 3-4 have one legend below the panels)."""
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    return [t.get_text() for lg in legends for t in lg.get_texts()]


@pytest.mark.slow
def test_figures_and_table2_label_nominal_epsilon(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from experiments.figures import extras, tables
    from experiments.figures import paper as make_figures

    df = _store(tmp_path).load()
    captured = {}
    real_save = make_figures.save

    def capture(fig, out, name):
        captured[name] = fig
        return real_save(fig, out, name)

    make_figures.save = extras.save = capture
    try:
        make_figures.utility_vs_n(df, ["census"], tmp_path, "fig3", "t")
        make_figures.fig5(df, tmp_path)
        extras.fig_dimension_scaling(df, tmp_path)
        tables.table2(df, tmp_path)
    finally:
        make_figures.save = extras.save = real_save
    for name in ("fig3", "fig5", "dimension_scaling"):
        labels = _legend_labels(captured[name])
        ppca = [x for x in labels if x.startswith("PPCA")]
        assert ppca and all("nominal ε (MCMC), not proven" in x for x in ppca), (name, labels)
        others = [x for x in labels if x.startswith(("MOD-SULQ", "Random", "analyze_gauss"))]
        assert others and not any("nominal" in x for x in others), (name, labels)
    t2 = pd.read_csv(tmp_path / "table2.csv").set_index("mechanism")
    assert t2.loc["ppca", "guarantee"] == "nominal (MCMC)"
    assert t2.loc["mod_sulq", "guarantee"] == "proven" and t2.loc["random", "guarantee"] == "proven"


def test_estimator_error_does_not_print_diagnostics():
    """A ⊥ answer raises with the status and the (public) reason, never the diagnostics."""
    from mechanisms.estimator import PrivatePCA

    X = np.random.default_rng(0).uniform(-0.3, 0.3, (50, 10))
    with pytest.raises(RuntimeError) as err:
        PrivatePCA(2, mechanism="subspace_approx", epsilon=1.0, delta=1e-5, random_state=0).fit(X)
    msg = str(err.value)
    assert "bottom" in msg and "too few samples" in msg
    assert "n_clipped" not in msg and "max_true_count" not in msg
