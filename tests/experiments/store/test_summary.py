"""Compact summary (experiments/store/summary.py): figures redrawn from it alone, merge without duplicates."""

import os
import warnings

import pandas as pd
import pytest

from experiments.figures import cli, tables
from experiments.figures import paper as make_figures
from experiments.runs.jmlr import run_gibbs_convergence, run_utility_vs_epsilon
from experiments.store.store import ResultStore, record_id
from experiments.store.summary import (
    RECORDS_CSV,
    SUMMARY_NESTED,
    TRACES_CSV,
    SummaryError,
    latest_table1,
    load_summary,
    update_summary,
)
from tests.hydra_helpers import compose_cfg


def _runs(tmp_path, samplers=("gibbs", "reference")):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for s in samplers:
            run_gibbs_convergence(
                compose_cfg(
                    [
                        "experiment=gibbs_convergence",
                        "dataset=gaussian10",
                        "scale=smoke",
                        f"experiment.sampler={s}",
                        f"results_dir={tmp_path}",
                        "quiet=true",
                    ]
                )
            )
        run_utility_vs_epsilon(
            compose_cfg(
                [
                    "experiment=utility_vs_epsilon",
                    "mechanism=mod_sulq",
                    "scale=smoke",
                    "experiment.epsilons=[0.1,1.0]",
                    f"results_dir={tmp_path}",
                    "quiet=true",
                ]
            )
        )


@pytest.mark.slow
def test_figures_from_summary_equal_figures_from_store(tmp_path):
    store = tmp_path / "store"
    _runs(store)
    counts = update_summary(store, tmp_path / "summary")
    n_records = len(list(ResultStore(store).iter_records()))
    assert counts["records"] == n_records
    from_store = cli.make_all(store, tmp_path / "a", {"fig2", "fig5"})
    from_summary = cli.make_all(
        store, tmp_path / "b", {"fig2", "fig5"}, summary=tmp_path / "summary"
    )
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
    update_summary(store, tmp_path / "summary")  # same records again: nothing added
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
    assert (
        len(merged) == len(first) + 1
    )  # the mod_sulq records share ids (same runs): not duplicated


@pytest.mark.slow
def test_replace_drops_the_rows_a_changed_protocol_supersedes(tmp_path):
    """Records of another protocol have new ids: a plain merge keeps the old rows beside them;
    ``replace`` drops the old rows of its (experiment, mechanism) pairs, and no other row."""
    _runs(tmp_path / "first", samplers=("gibbs",))
    second = tmp_path / "second"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        run_utility_vs_epsilon(
            compose_cfg(
                [
                    "experiment=utility_vs_epsilon",
                    "mechanism=mod_sulq",
                    "scale=smoke",
                    "experiment.epsilons=[0.5]",
                    f"results_dir={second}",
                    "quiet=true",
                ]
            )
        )
    pair = "utility_vs_epsilon/mod_sulq"
    cases = (
        ((), True),
        ((pair,), False),
        ((f"{pair}:epsilon=0.5",), True),  # a condition no old row meets
        ((f"{pair}:scale=smoke",), False),
    )
    for i, (replace, kept_old) in enumerate(cases):
        out = tmp_path / f"summary-{i}"
        update_summary(tmp_path / "first", out)
        before = pd.read_csv(out / RECORDS_CSV)
        old_ids = set(before[before.mechanism == "mod_sulq"].record_id)
        counts = update_summary(second, out, "smoke", replace)
        after = pd.read_csv(out / RECORDS_CSV)
        new_ids = set(after[after.mechanism == "mod_sulq"].record_id) - old_ids
        assert new_ids and old_ids and after.record_id.is_unique
        assert (old_ids <= set(after.record_id)) is kept_old
        assert counts["replaced"] == (0 if kept_old else len(old_ids))
        assert set(after[after.experiment == "gibbs_convergence"].record_id) == set(
            before[before.experiment == "gibbs_convergence"].record_id
        )
        assert len(pd.read_csv(out / TRACES_CSV)) == len(
            pd.read_csv(out / TRACES_CSV).drop_duplicates()
        )
    # a pair the store holds no records of drops nothing
    out = tmp_path / "summary-absent"
    update_summary(tmp_path / "first", out)
    n_rows = len(pd.read_csv(out / RECORDS_CSV))
    assert update_summary(second, out, "smoke", ("utility_vs_n/ppca",))["replaced"] == 0
    assert len(pd.read_csv(out / RECORDS_CSV)) > n_rows
    for bad in ("utility_vs_n", "utility_vs_n/ppca:classifier", "a/b/c"):
        with pytest.raises(ValueError, match="EXPERIMENT/MECHANISM"):
            update_summary(second, out, "smoke", (bad,))


def test_an_empty_scale_writes_no_summary_and_a_damaged_summary_is_named(tmp_path):
    """No records of the scale: refused, nothing written (an empty records.csv used to break every
    later merge).  A summary cut inside a row loses that row, not the merge; one cut inside its
    header is named, never merged into."""
    store = tmp_path / "store"
    _runs(store, samplers=("gibbs",))
    out = tmp_path / "summary"
    with pytest.raises(SummaryError, match="no records of scale paper"):
        update_summary(store, out, "paper")
    assert not (out / RECORDS_CSV).exists()
    update_summary(store, out)
    full = pd.read_csv(out / RECORDS_CSV)
    text = (out / RECORDS_CSV).read_text()
    cut = text[: text.rindex("\n", 0, len(text) - 1) + 12]  # the last row cut inside its record id
    (out / RECORDS_CSV).write_text(cut)
    update_summary(store, out)
    again = pd.read_csv(out / RECORDS_CSV)
    assert len(again) == len(full) and again.record_id.is_unique
    (out / RECORDS_CSV).write_text(text[:5])
    with pytest.raises(SummaryError, match="damaged"):
        update_summary(store, out)


def test_summary_keeps_each_ppca_release_diagnosis(tmp_path):
    """A PPCA release's convergence check and chain settings reach the summary (and only those
    nested fields), with the values of the JSON record; ``converged`` reads back as a bool."""
    store = tmp_path / "store"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for mech in ("ppca", "mod_sulq"):  # records with and without diagnostics in one summary
            run_utility_vs_epsilon(
                compose_cfg(
                    [
                        "experiment=utility_vs_epsilon",
                        f"mechanism={mech}",
                        "scale=smoke",
                        "experiment.epsilons=[1.0]",
                        f"results_dir={store}",
                        "quiet=true",
                    ]
                )
            )
    update_summary(store, tmp_path / "summary")
    df = load_summary(tmp_path / "summary").set_index("record_id")
    recs = [r for r in ResultStore(store).iter_records() if r.get("mechanism") == "ppca"]
    assert recs
    nested_cols = {c for c in df.columns if c.startswith(("release.", "diagnostics_not_private."))}
    allowed = {f"{part}.{k}" for part, keys in SUMMARY_NESTED.items() for k in keys}
    assert nested_cols <= allowed and "diagnostics_not_private.rhat" in nested_cols
    flags = df["diagnostics_not_private.converged"]
    assert flags.isna().any()  # the MOD-SULQ rows have no convergence check
    assert all(isinstance(v, bool) for v in flags.dropna())
    for rec in recs:
        row = df.loc[record_id(rec["run_key"])]
        diag = rec["diagnostics_not_private"]
        assert row["diagnostics_not_private.converged"] is diag["converged"]
        assert row["diagnostics_not_private.rhat"] == pytest.approx(diag["rhat"], rel=1e-12)
        for (
            part,
            keys,
        ) in SUMMARY_NESTED.items():  # every listed field the record has, with its value
            for key in set(keys) & set(rec[part]):
                want = rec[part][key]
                assert row[f"{part}.{key}"] == (
                    pytest.approx(want, rel=1e-12) if isinstance(want, float) else want
                )


def _table1_record(dataset, commit, stamp, q_F):
    key = {"experiment": "table1", "dataset": dataset, "split": "s", "git_commit": commit}
    return {
        "run_key": key,
        "experiment": "table1",
        "dataset": dataset,
        "split": "s",
        "q_F": q_F,
        "mechanism": "pca",
        "git_commit": commit,
        "timestamp": stamp,
    }


def test_summary_keeps_the_latest_table1_record_per_data_set(tmp_path):
    """Table 1 is keyed by code version: records of several versions, in one store or merged from
    several, leave one row per data set in the summary, the latest."""
    first, second = ResultStore(tmp_path / "first"), ResultStore(tmp_path / "second")
    for ds in ("census", "kddcup"):
        first.write(_table1_record(ds, "a" * 40, "2026-01-01T00:00:00Z", 0.1))
        first.write(_table1_record(ds, "b" * 40, "2026-01-02T00:00:00Z", 0.2))
    update_summary(tmp_path / "first", tmp_path / "summary")
    rows = pd.read_csv(tmp_path / "summary" / RECORDS_CSV)
    assert sorted(rows.dataset) == ["census", "kddcup"] and set(rows.q_F) == {0.2}
    second.write(_table1_record("census", "c" * 40, "2026-01-03T00:00:00Z", 0.3))
    update_summary(tmp_path / "second", tmp_path / "summary")
    rows = pd.read_csv(tmp_path / "summary" / RECORDS_CSV).set_index("dataset")
    assert rows.index.is_unique and rows.q_F.to_dict() == {"census": 0.3, "kddcup": 0.2}


def test_table1_rows_in_the_papers_order(tmp_path):
    rows = [
        {
            "experiment": "table1",
            "dataset": ds,
            "split": "s",
            "n": 1,
            "d": 1,
            "k": 1,
            "q_F": 0.5,
            "q_F_over_trace": 0.5,
            "paper_n": 1,
            "paper_d": 1,
            "paper_q_F": 0.5,
            "timestamp": "2026-01-01T00:00:00Z",
        }
        for ds in ("insurance", "census", "kddcup")
    ]
    tables.table1(pd.DataFrame(rows), tmp_path)
    assert list(pd.read_csv(tmp_path / "table1.csv").dataset) == ["kddcup", "census", "insurance"]


def test_the_drawn_table1_shows_the_rows_the_summary_keeps(tmp_path):
    """One rule for both: with equal timestamps the larger record id wins, in the store's table and
    in the summary's (the drawn table used to keep whichever row came last)."""
    store = ResultStore(tmp_path / "store")
    drawn = {
        "n": 1,
        "d": 1,
        "k": 1,
        "q_F_over_trace": 0.5,
        "paper_n": 1,
        "paper_d": 1,
        "paper_q_F": 0.5,
    }
    for commit, q_F in (("a" * 40, 0.1), ("b" * 40, 0.2), ("c" * 40, 0.3)):
        store.write(_table1_record("census", commit, "2026-01-01T00:00:00Z", q_F) | drawn)
    records = store.load()
    kept = latest_table1(records)
    assert len(kept) == 1
    assert kept.record_id.iloc[0] == max(records.record_id)
    for shuffled in (records, records.iloc[::-1]):
        tables.table1(shuffled, tmp_path / "drawn")
        assert list(pd.read_csv(tmp_path / "drawn" / "table1.csv").q_F) == list(kept.q_F)
    update_summary(tmp_path / "store", tmp_path / "summary")
    assert list(pd.read_csv(tmp_path / "summary" / RECORDS_CSV).q_F) == list(kept.q_F)


def test_summarize_results_on_a_read_only_store_is_one_line(tmp_path, monkeypatch, capsys):
    """A store that cannot be written (read-only file system: mkstemp raises EROFS): exit status 2 and
    one line naming the file, the reason and --out, no traceback; nothing is written."""
    import errno
    import importlib.util
    import tempfile
    from pathlib import Path

    store = tmp_path / "store"
    ResultStore(store).write({"run_key": {"x": 1}, "experiment": "single", "q_F": 0.5})
    script = Path(__file__).resolve().parents[3] / "scripts" / "summarize_results.py"
    spec = importlib.util.spec_from_file_location("summarize_results", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def read_only(*args, dir=None, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(dir))

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    with pytest.raises(SystemExit) as stop:
        module.main(["--results", str(store)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "Read-only file system" in err and str(store / "summary") in err and "--out" in err
    assert not (store / "summary" / RECORDS_CSV).exists()
