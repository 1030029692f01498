"""The audit table drawn from the store's records (experiments/audit/report.py): a tiny table of three
cheap real audits, its summary, its verdicts, its redraw from the summary alone, and the rows whose
outcome differs from their expectation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.audit import report
from experiments.audit.runner import audit_run_key, run_audit
from experiments.audit.table_runs import TABLE_RUNS, TableRun
from tests.hydra_helpers import compose_cfg

WB = ("experiment.mechanism=mod_sulq", "experiment.mode=whitebox", "delta=0.1")
#: an honest white-box row, its 25%-cut control (exact ε(δ) 2.5 against the claim 2), an honest
#: design-audit row and an honest search (the catalogue, no learned testers, no time budget), at a
#: few hundred runs per side
TINY = (
    TableRun("wb/mod_sulq", "white-box, δ = 0.1", (*WB, "experiment.trials=200"), "ok"),
    TableRun("wb/mod_sulq/noise_cut", "white-box, δ = 0.1",
             (*WB, "experiment.trials=200", "experiment.variant=noise_cut"), "caught"),
    TableRun("design/mod_sulq", "controls since 2019",
             ("experiment.mechanism=mod_sulq", "experiment.trials=300"), "ok"),
    TableRun("search/mod_sulq", "search, every mechanism",
             ("experiment.mechanism=mod_sulq", "experiment.mode=search", "experiment.trials=200",
              "experiment.calibration_trials=20", "experiment.n_random=0", "experiment.learned=[]"),
             "ok"),
)  # fmt: skip


def _cfg(run: TableRun, store):
    return compose_cfg(["experiment=audit", *run.overrides, f"results_dir={store}", "quiet=true"])


@pytest.fixture(scope="module")
def tiny_store(tmp_path_factory):
    """The store of the three audits, and each run with the run key of its record."""
    store = tmp_path_factory.mktemp("audit_store")
    keyed = []
    for run in TINY:
        record = run_audit(_cfg(run, store))
        key = audit_run_key(_cfg(run, store))
        assert key == record["run_key"]  # the key the drawing looks up is the one run.py stored
        keyed.append((run, key))
    return store, keyed


def _by_name(rows):
    return {r["name"]: r for r in rows}


def test_table_runs_are_unique_and_expect_known_outcomes():
    names = [r.name for r in TABLE_RUNS]
    assert len(set(names)) == len(names)
    assert len({r.overrides for r in TABLE_RUNS}) == len(TABLE_RUNS)
    with pytest.raises(ValueError, match="expect must be one of"):
        TableRun("x", "planted defects", (), "fine")


def test_the_search_section_audits_every_registered_mechanism():
    """The section "search, every mechanism" runs the search on each mechanism of the registry, at
    the table's search settings: a mechanism registered without its row fails here."""
    from mechanisms import MECHANISMS

    section = [r for r in TABLE_RUNS if r.section == "search, every mechanism"]
    assert sorted(r.name.removeprefix("search/") for r in section) == sorted(MECHANISMS)
    for r in section:
        assert "experiment.mode=search" in r.overrides and r.expect == "ok"


def test_summary_verdicts_and_redraw_from_the_summary_alone(tiny_store, tmp_path):
    store, keyed = tiny_store
    out = tmp_path / "out"
    paths = report.curate(store, keyed, out)
    assert [p.name for p in paths] == [report.SUMMARY_FILE, report.TABLE_FILE]
    rows = _by_name(report.read_summary(out / report.SUMMARY_FILE))
    assert list(rows) == [r.name for r in TINY]
    honest, cut, design, search = (rows[r.name] for r in TINY)
    assert honest["outcome"] == "not caught" and honest["mode"] == "whitebox"
    assert float(honest["exact_epsilon"]) == pytest.approx(0.0978, abs=1e-3)
    # the cut variant's exact ε(δ) is 1.25 x the claim whatever the trials: caught by it
    assert cut["outcome"] == "caught" and "exact" in cut["caught_by"]
    assert cut["variant"] == "noise_cut" and float(cut["claimed_epsilon"]) == 2.0
    # the trade-off curve's readings beside the event's bound: a bound for the white-box Gaussian
    # statistic, an estimate for the design audit's; a Jeffreys interval around each point estimate
    assert cut["gdp_epsilon_reading"] == "bound" and design["gdp_epsilon_reading"] == "estimate"
    # (200 runs per side: the certified ε, 1.87, stays below the exact 2.5; the fit reads 2.85)
    assert 0.0 < float(cut["gdp_epsilon_lower"]) < float(cut["exact_epsilon"])
    assert float(cut["gdp_epsilon_fit"]) > float(cut["gdp_epsilon_lower"])
    for r in (honest, cut, design, search):
        assert float(r["jeffreys_low"]) <= float(r["jeffreys_high"])
    assert design["mode"] == "design" and design["exact_epsilon"] == ""
    assert design["point_estimate"] != "" and int(design["trials"]) == 300
    assert search["mode"] == "search" and search["calibration_trials"] == "20"
    assert search["design_statistic"].endswith(f"; {search['designs_tried']} designs tried")
    text = (out / report.TABLE_FILE).read_text()
    assert "Every row with a record shows the outcome it is expected to show." in text
    assert "| μ-GDP fitted ε | GDP-certified ε | Jeffreys interval (95%) |" in text
    assert "**VIOLATION caught**" in text and "| `wb/mod_sulq` |" in text
    # the markdown is drawn from the summary alone, byte for byte
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / report.SUMMARY_FILE).write_bytes((out / report.SUMMARY_FILE).read_bytes())
    report.draw(alone)
    assert (alone / report.TABLE_FILE).read_bytes() == (out / report.TABLE_FILE).read_bytes()
    report.curate(store, keyed, out)  # curating the same store again changes nothing
    assert (out / report.TABLE_FILE).read_text() == text


def test_a_control_not_caught_and_an_honest_mechanism_flagged_are_listed(tiny_store, tmp_path):
    """Hand-edited records: the cut variant shows no violation, the honest MOD-SULQ one; the table
    must say so in their rows and in a line each, whatever the records' own verdicts say."""
    store, keyed = tiny_store
    edited = tmp_path / "edited"
    (edited / "records").mkdir(parents=True)
    for run, key in keyed:
        rid = report.table_row(run, key, None)["record_id"]
        record = json.loads((store / "records" / f"{rid}.json").read_text())
        if run.expect == "caught":
            record.update(audited_epsilon_lower=0.5, exact_epsilon=1.0)
        elif run.name == "wb/mod_sulq":
            record["audited_epsilon_lower"] = 3.0
        (edited / "records" / f"{rid}.json").write_text(json.dumps(record))
    report.curate(edited, keyed, tmp_path / "out")
    text = (tmp_path / "out" / report.TABLE_FILE).read_text()
    assert "2 row(s) differ from their expectation:" in text
    assert (
        "- `wb/mod_sulq/noise_cut` (white-box, δ = 0.1): a known-broken control, **not caught**"
        in text
    )
    assert "- `wb/mod_sulq` (white-box, δ = 0.1): expected ok" in text
    cut_row = next(
        line for line in text.splitlines() if line.startswith("| `wb/mod_sulq/noise_cut`")
    )
    assert "**not caught**" in cut_row and "**differs**" in cut_row


def test_a_run_without_a_record_keeps_its_curated_row_and_an_empty_store_is_refused(
    tiny_store, tmp_path
):
    store, keyed = tiny_store
    out = tmp_path / "out"
    report.curate(store, keyed, out)
    partial = tmp_path / "partial"
    (partial / "records").mkdir(parents=True)
    rid = report.table_row(*keyed[1], None)["record_id"]
    (partial / "records" / f"{rid}.json").write_bytes(
        (store / "records" / f"{rid}.json").read_bytes()
    )
    before = _by_name(report.read_summary(out / report.SUMMARY_FILE))
    report.curate(partial, keyed, out)  # only the cut variant's record: the others keep their rows
    assert _by_name(report.read_summary(out / report.SUMMARY_FILE)) == before
    fresh = report.summary_rows(partial, keyed)
    assert [r["outcome"] for r in fresh] == ["no record", "caught", "no record", "no record"]
    assert "3 run(s) have no record:" in report.markdown(
        report.read_summary(report.write_summary(fresh, tmp_path / "f" / report.SUMMARY_FILE))
    )
    with pytest.raises(ValueError, match="holds no audit record of the table's 4 runs") as err:
        report.summary_rows(tmp_path / "empty", keyed)
    assert "\n" not in str(err.value)


def test_committed_table_redraws_from_its_summary_and_shows_every_expected_outcome():
    """results/audit/audit_table.md is the drawing of results/audit/summary.csv, byte for byte; its
    summary holds a row with a record for every run of the table, each with its expected outcome."""
    committed = Path(__file__).resolve().parents[3] / "results" / "audit"
    rows = report.read_summary(committed / report.SUMMARY_FILE)
    drawn = report.markdown(rows)
    assert (committed / report.TABLE_FILE).read_text(encoding="utf-8") == drawn
    assert [r["name"] for r in rows] == [r.name for r in TABLE_RUNS]
    assert all(r["outcome"] != "no record" for r in rows)
    assert "Every row with a record shows the outcome it is expected to show." in drawn
