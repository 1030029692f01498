"""Compact summary (experiments/summary.py): figures redrawn from it alone, merge without duplicates."""

import sys
import warnings
from pathlib import Path

import pandas as pd

from experiments.jmlr import run_gibbs_convergence, run_utility_vs_epsilon
from experiments.results import ResultStore
from experiments.summary import RECORDS_CSV, TRACES_CSV, load_summary, update_summary
from tests.hydra_helpers import compose_cfg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import make_figures  # noqa: E402


def _runs(tmp_path, samplers=("gibbs", "reference")):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for s in samplers:
            run_gibbs_convergence(compose_cfg(["experiment=gibbs_convergence", "dataset=gaussian10", "scale=smoke",
                                               f"experiment.sampler={s}", f"results_dir={tmp_path}", "quiet=true"]))
        run_utility_vs_epsilon(compose_cfg(["experiment=utility_vs_epsilon", "mechanism=mod_sulq", "scale=smoke",
                                            "experiment.epsilons=[0.1,1.0]", f"results_dir={tmp_path}",
                                            "quiet=true"]))


def test_figures_from_summary_equal_figures_from_store(tmp_path):
    store = tmp_path / "store"
    _runs(store)
    counts = update_summary(store, tmp_path / "summary")
    n_records = len(list(ResultStore(store).iter_records()))
    assert counts["records"] == n_records
    from_store = make_figures.make_all(store, tmp_path / "a", {"fig2", "fig5"})
    from_summary = make_figures.make_all(store, tmp_path / "b", {"fig2", "fig5"}, summary=tmp_path / "summary")
    for name in ("fig2", "fig5"):
        assert from_store[name] and from_summary[name]
        png_a = (tmp_path / "a" / "figures" / f"{name}.png").read_bytes()
        png_b = (tmp_path / "b" / "figures" / f"{name}.png").read_bytes()
        assert png_a == png_b, name
    # Figure 2 has both samplers, each with its own iteration label
    df = load_summary(tmp_path / "summary")
    g = df[df.experiment == "gibbs_convergence"]
    assert set(g.sampler) == {"gibbs", "reference"}
    labels = {make_figures.fig2_label(r) for _, r in g.iterrows()}
    assert any("2 sweeps" in x for x in labels) and any("exact column draws" in x for x in labels)


def test_summary_merges_by_record_id_without_duplicates(tmp_path):
    store = tmp_path / "store"
    _runs(store, samplers=("gibbs",))
    update_summary(store, tmp_path / "summary")
    first = pd.read_csv(tmp_path / "summary" / RECORDS_CSV)
    traces_first = pd.read_csv(tmp_path / "summary" / TRACES_CSV)
    update_summary(store, tmp_path / "summary")             # same records again: nothing added
    again = pd.read_csv(tmp_path / "summary" / RECORDS_CSV)
    assert len(again) == len(first) and again.record_id.is_unique
    assert len(pd.read_csv(tmp_path / "summary" / TRACES_CSV)) == len(traces_first)
    # a later run into ANOTHER store extends the same summary
    other = tmp_path / "other"
    _runs(other, samplers=("reference",))
    update_summary(other, tmp_path / "summary")
    merged = pd.read_csv(tmp_path / "summary" / RECORDS_CSV)
    assert merged.record_id.is_unique
    assert set(merged[merged.experiment == "gibbs_convergence"].sampler) == {"gibbs", "reference"}
    assert len(merged) == len(first) + 1   # the mod_sulq records share ids (same runs): not duplicated
