"""The benchmark (experiments/bench): one certified (ε, δ) for every mechanism, a mechanism of one's own
with one override, the plan's jobs, and the committed outputs redrawn byte for byte from the summary."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments.bench import currency
from experiments.bench.runner import Truth, entry, release_fields
from mechanisms.toolkit import PreparedData

REPO = Path(__file__).resolve().parents[3]
CURATED = REPO / "results" / "benchmark"

#: every registry mechanism but the peers (their own environment) and the slow online_pca
MECHANISMS = sorted(m for m in currency.PLANS if m not in currency.PEERS and m != "online_pca")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 8)) * np.linspace(2.0, 0.2, 8)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    return PreparedData(X)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::mechanisms.ChainConvergenceWarning")
@pytest.mark.parametrize("target", [(0.3, 1e-6), (3.0, 1e-6)])
def test_every_mechanism_certifies_the_same_target_under_replace_one_row(data, target):
    """Each registry mechanism, called as the benchmark calls it, states a guarantee that certifies
    at most the target (ε, δ) under replace-one-row, and (for the private ones) exactly its ε."""
    epsilon, delta = target
    truth = Truth.of(data, 2)
    for m in MECHANISMS:
        e = entry(m, epsilon, delta, ppca_iterations=20, ppca_chains=1)
        k = 1 if m in currency.K1_ONLY else 2
        tr = truth if k == 2 else Truth.of(data, 1)
        try:
            out = e.fn(data, k, rng=np.random.default_rng(1), clip=False)
        except ValueError:  # a refusal (e.g. too few rows for subspace_exact) is recorded as such
            continue
        f = release_fields(out, tr, k, epsilon, delta, e.name)
        if m == "pca":
            assert f["tier"] == "reference" and math.isinf(f["certified_epsilon"])
            continue
        assert f["certified_relation"] == "replace-one-row", m
        assert f["tier"] in ("proven", "nominal"), (m, f["tier"])
        assert f["certified_epsilon"] <= epsilon * (1 + 1e-9), m
        assert f["certified_delta"] <= delta * (1 + 1e-9), m
        if m != "random":
            assert f["certified_epsilon"] == pytest.approx(epsilon, rel=1e-6), m
        plan = currency.plan_for(m)
        if plan.kind == "pure":
            assert f["certified_delta"] == 0.0, m
        if plan.kind == "zcdp":
            assert f["rho"] is not None and f["rho"] > 0, m


def test_the_calls_use_the_tight_calibration_and_the_common_relation():
    e = entry("analyze_gauss", 1.0, 1e-6, ppca_iterations=10, ppca_chains=1)
    assert e.params["calibration"] == "tight" and e.params["neighbouring"] == "replace-one-row"
    for m in ("mod_sulq", "noisy_power", "streaming_power", "online_pca", "amin_cov"):
        assert (
            entry(m, 1.0, 1e-6, ppca_iterations=10, ppca_chains=1).params["calibration"] == "tight"
        )


def test_add_remove_is_converted_by_group_privacy():
    """private_sketch is proved under add/remove: run at (ε/2, δ/(1+e^{ε/2})), it certifies (ε, δ)
    under replace-one-row; an add/remove (ε, δ) claim read back is (2ε, (1+e^ε)δ)."""
    e = entry("private_sketch", 2.0, 1e-6, ppca_iterations=10, ppca_chains=1)
    assert e.params["epsilon"] == 1.0
    assert e.params["delta"] == pytest.approx(1e-6 / (1 + math.e))
    eps, delta, _ = currency.certified(
        {"epsilon": 1.0, "delta": 1e-6 / (1 + math.e), "neighbouring": "add-remove-one-row"}
    )
    assert (eps, delta) == (2.0, pytest.approx(1e-6))
    # an own mechanism claiming (eps, delta) under add/remove does not meet the target (eps, delta)
    eps, delta, _ = currency.certified(
        {"epsilon": 1.0, "delta": 1e-6, "neighbouring": "add-remove-one-row"}
    )
    assert currency.tier("mine", "proven", eps, delta, 1.0, 1e-6) == "over target"
    assert (
        currency.certified({"epsilon": 1.0, "delta": 0, "neighbouring": "entry-level"})[0] is None
    )


def _run(results: Path, *overrides: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(REPO / "run.py"), "experiment=benchmark", "scale=smoke",
           f"results_dir={results}", "quiet=true", *overrides]  # fmt: skip
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_an_own_mechanism_enters_with_one_override_and_resumes(tmp_path):
    """examples/my_mechanism's my_gauss beside ppca_iterative, by one override and no change to the
    harness; the same command again computes nothing."""
    own = "examples/my_mechanism/my_gauss.py:my_gauss"
    over = [f"experiment.mechanisms=[ppca_iterative,{own}]", "experiment.datasets=[gaussian10]",
            "experiment.epsilons=[1.0]"]  # fmt: skip
    r = _run(tmp_path, *over)
    assert r.returncode == 0, r.stderr
    from experiments.bench.summary import compact, leaderboard

    rows = compact(tmp_path, tmp_path / "s.parquet")
    mine = rows[rows.mechanism == "my_gauss"]
    assert len(mine) == 2 and set(mine.tier) == {"proven"}
    assert (mine.certified_epsilon == 1.0).all() and (mine.certified_delta == 1e-6).all()
    assert set(leaderboard(tmp_path / "s.parquet").mechanism) == {"my_gauss", "ppca_iterative"}
    n = len(list((tmp_path / "records").glob("*.json")))
    assert _run(tmp_path, *over).returncode == 0
    assert len(list((tmp_path / "records").glob("*.json"))) == n


def test_the_plan_has_one_job_per_cell_and_block():
    from experiments.plan.plan import build_benchmark_plan

    jobs = build_benchmark_plan("smoke", block=1, costs={})
    grid_cells = 2  # smoke: gaussian10, digits
    assert len(jobs) == 6 * grid_cells * 2 * 2  # mechanisms x data sets x epsilons x trial blocks
    assert len({j.name for j in jobs}) == len(jobs)
    j = jobs[0]
    assert "experiment.trial_range=[0,1]" in j.overrides and j.stage == "benchmark"


def test_the_leaderboard_ties_overlapping_intervals(tmp_path):
    import pandas as pd

    from experiments.bench.summary import COLUMNS, leaderboard, write_summary

    rows = []
    for m, vals in {"a": [0.9, 0.91, 0.92], "b": [0.2, 0.95, 0.7], "c": [0.1, 0.11, 0.12]}.items():
        for t, v in enumerate(vals):
            row = dict.fromkeys(COLUMNS)
            row.update(record_id=f"{m}{t}", dataset="x", family="x", n=10, d=3, k=1, mechanism=m,
                       tier="proven", epsilon_target=1.0, delta_target=1e-6, trial=t, status="ok",
                       q_F_normalised=v, seconds=0.1, scale="t")  # fmt: skip
            rows.append(row)
    write_summary(pd.DataFrame(rows), tmp_path / "s.parquet")
    lb = leaderboard(tmp_path / "s.parquet").set_index("mechanism")
    assert lb.loc["a", "rank"] == 1 and lb.loc["b", "rank"] == 1  # b's interval overlaps a's
    assert lb.loc["c", "rank"] == 2  # a's interval lies wholly above c's; b's does not


@pytest.mark.skipif(not (CURATED / "summary.parquet").exists(), reason="no committed summary")
def test_each_table_heading_gives_the_rho_of_its_zcdp_mechanisms():
    """The ρ-zCDP axis: every (data set, ε) table with a ρ-zCDP mechanism names the one ρ they ran
    at, the largest whose conversion certifies (ε, 10⁻⁶) (zcdp_rho_tight), and only those tables."""
    from experiments.bench.figures import _heading
    from experiments.bench.summary import leaderboard
    from mechanisms.calibration import zcdp_rho_tight

    lb = leaderboard(CURATED / "summary.parquet")
    for (ds, eps), g in lb.groupby(["dataset", "epsilon"]):
        head = _heading(ds, eps, g)
        if g["rho"].notna().any():
            assert head.endswith(f"(ρ-zCDP mechanisms: ρ = {zcdp_rho_tight(eps, 1e-6):.4g})")
        else:
            assert "ρ" not in head


@pytest.mark.slow
@pytest.mark.parametrize("folder", [CURATED, CURATED / "full"], ids=["quick", "full"])
def test_committed_outputs_are_drawn_from_the_committed_summary(tmp_path, folder):
    """Byte for byte: `scripts/benchmark.py draw [--out results/benchmark/full]` redraws the quick
    (full) scale's committed outputs from its summary.parquet."""
    from experiments.bench.figures import draw

    if not (folder / "summary.parquet").exists():
        pytest.skip(f"no committed summary in {folder.name}")
    drawn = draw(folder / "summary.parquet", tmp_path)
    assert drawn
    for p in drawn:
        committed = folder / p.relative_to(tmp_path)
        assert committed.exists(), f"{committed.name} is drawn but not committed"
        assert committed.read_bytes() == p.read_bytes(), f"{committed.name} differs"
    committed_figs = {p.name for p in (folder / "figures").glob("*.png")}
    assert committed_figs == {p.name for p in drawn if p.suffix == ".png"}


@pytest.mark.skipif(not (CURATED / "summary.parquet").exists(), reason="no committed summary")
def test_a_summary_holds_one_scale(tmp_path, monkeypatch):
    """The leaderboard pools a cell's releases, so a store of another scale is refused before the
    summary is written; one of the same scale merges."""
    from experiments.bench import summary

    rows = summary.read_summary(CURATED / "summary.parquet").head(4)
    assert set(rows["scale"]) == {"quick"}
    out = tmp_path / "summary.parquet"
    summary.write_summary(rows, out)
    before = out.read_bytes()
    paper = rows.assign(record_id=rows["record_id"] + "p", scale="paper")
    monkeypatch.setattr(summary, "records_frame", lambda store: paper)
    with pytest.raises(summary.MixedScalesError, match="paper, quick"):
        summary.compact(tmp_path, out)
    assert out.read_bytes() == before
    quick = rows.assign(record_id=rows["record_id"] + "q")
    monkeypatch.setattr(summary, "records_frame", lambda store: quick)
    assert len(summary.compact(tmp_path, out)) == 8


@pytest.mark.skipif(not (CURATED / "summary.parquet").exists(), reason="no committed summary")
def test_curate_takes_one_scale_of_a_mixed_store(tmp_path, monkeypatch):
    """A store holding two scales is refused without ``scale`` (nothing written), and with it only
    that scale's records reach the summary; a scale the store does not hold is refused."""
    from experiments.bench import summary

    rows = summary.read_summary(CURATED / "summary.parquet").head(4)
    smoke = rows.assign(record_id=rows["record_id"] + "s", scale="smoke")
    mixed = pd.concat([rows, smoke], ignore_index=True)
    monkeypatch.setattr(summary, "records_frame", lambda store: mixed)
    out = tmp_path / "summary.parquet"
    with pytest.raises(summary.MixedScalesError, match="quick, smoke; choose one with --scale"):
        summary.compact(tmp_path, out)
    assert not out.exists()
    with pytest.raises(summary.MixedScalesError, match="no benchmark records of the scale paper"):
        summary.compact(tmp_path, out, scale="paper")
    assert not out.exists()
    got = summary.compact(tmp_path, out, scale="smoke")
    assert set(got["scale"]) == {"smoke"} and set(got["record_id"]) == set(smoke["record_id"])


@pytest.mark.skipif(not (CURATED / "summary.parquet").exists(), reason="no committed summary")
def test_curate_leaves_out_cells_stopped_mid_way(tmp_path, monkeypatch):
    """A cell with fewer than the scale's trials (a run stopped mid-cell) never reaches the summary
    by default; whole cells and refusals do; ``complete=False`` keeps it."""
    from experiments.bench import summary

    rows = summary.read_summary(CURATED / "summary.parquet")
    trials = summary.scale_trials("quick")
    cells = rows[rows["status"] != "refused"].groupby(list(summary.CELL), dropna=False)
    whole = [g for _, g in cells if len(g) == trials][:2]
    refused = rows[rows["status"] == "refused"].head(1)
    assert len(whole) == 2 and len(refused) == 1
    cut = whole[1][whole[1]["trial"] < trials - 2]  # the last two trials never written
    store = pd.concat([whole[0], cut, refused], ignore_index=True)
    monkeypatch.setattr(summary, "records_frame", lambda s: store)
    got = summary.compact(tmp_path, tmp_path / "a.parquet", scale="quick", complete=True)
    key = tuple(cut.iloc[0][list(summary.CELL)])
    assert got.attrs["left_out"] == [key]
    assert set(got["record_id"]) == set(whole[0]["record_id"]) | set(refused["record_id"])
    kept = summary.compact(tmp_path, tmp_path / "b.parquet", scale="quick")
    assert len(kept) == len(store)


def _timing_out_peer(monkeypatch, calls: list, timing_out=lambda trial: True):
    """``diffprivlib_pca`` as the benchmark configures it (its ``timeout`` option included), its
    release replaced by one that hits the cap (status ``timeout``, no subspace) where
    ``timing_out(call number)`` says so, and finishes otherwise."""
    import dataclasses

    from experiments.bench import runner
    from mechanisms import MechanismOutput, PrivacyGuarantee

    real_entry = runner.entry

    def release(data, k, rng=None, clip=False):
        calls.append(len(calls))
        g = PrivacyGuarantee(1.0, 0.0, "replace-one-row", exact=False, note="stand-in",
                             status="certified by peer, unproven")  # fmt: skip
        if timing_out(len(calls) - 1):
            return MechanismOutput(None, g, release={"status": "timeout"})
        V = np.linalg.qr(rng.standard_normal((data.shape[1], k)))[0]
        return MechanismOutput(V, g, release={"status": "ok"})

    def fake_entry(spec, *a, **kw):
        e = real_entry(spec, *a, **kw)
        return dataclasses.replace(e, params={**e.params, "timeout": 1.0}, fn=release)

    monkeypatch.setattr(runner, "entry", fake_entry)
    monkeypatch.setattr(runner, "peers_available", lambda: True)


def _peer_cfg(results: Path, *extra: str):
    from tests.hydra_helpers import compose_cfg

    return compose_cfg(["experiment=benchmark", "scale=smoke", f"results_dir={results}",
                        "quiet=true", "experiment.mechanisms=[diffprivlib_pca]",
                        "experiment.datasets=[gaussian10]", "experiment.epsilons=[1.0]",
                        "experiment.trials=6", *extra])  # fmt: skip


def test_a_cell_whose_first_releases_time_out_stops_and_is_listed_as_timed_out(
    tmp_path, monkeypatch
):
    """With ``stop_after_timeouts: 3`` a peer's cell stops after its first three releases hit the
    cap, and its one refusal record names the cap; curated, the refusal alone stands for the cell.
    A job of later trials decides from the stored records as the whole run does; without the
    setting, or when one of the first three finishes, every trial runs."""
    from experiments.bench import runner, summary

    calls: list = []
    _timing_out_peer(monkeypatch, calls)
    stop = "++experiment.grids.smoke.stop_after_timeouts=3"
    got = runner.run_benchmark(_peer_cfg(tmp_path / "a", stop, "experiment.trial_range=[0,3]"))
    assert len(calls) == 3 and got["refused_cells"] == 0
    got = runner.run_benchmark(_peer_cfg(tmp_path / "a", stop))  # the later trials' job
    assert len(calls) == 3 and got["refused_cells"] == 1
    rows = summary.compact(tmp_path / "a", tmp_path / "a.parquet", scale="smoke", complete=False)
    assert list(rows["status"]) == ["refused"]
    assert rows["reason"].iloc[0] == (
        "timed out: its first 3 releases each hit the 1 s wall-clock cap; the other 3 were not run"
    )
    runner.run_benchmark(_peer_cfg(tmp_path / "a", stop))  # resumes: nothing more
    assert len(calls) == 3

    calls.clear()
    runner.run_benchmark(_peer_cfg(tmp_path / "b"))  # the setting absent: all six run
    assert len(calls) == 6
    calls.clear()
    _timing_out_peer(monkeypatch, calls, timing_out=lambda i: i != 1)
    got = runner.run_benchmark(_peer_cfg(tmp_path / "c", stop))  # trial 1 finished: all six run
    assert len(calls) == 6 and got["refused_cells"] == 0


def test_a_peer_cell_stopped_after_timeouts_is_priced_at_those_releases():
    """The cost table prices a peer whose timed releases all hit the cap at the releases the grid
    lets it make (``stop_after_timeouts``), not at every trial, and no release above its cap."""
    from experiments.bench.costs import estimate_jobs
    from experiments.plan.plan import Job

    table = {"job_startup": 2.0, "cells": {"gaussian10": {"n": 1000, "d": 10, "fixed": 1.0,
             "release": {"diffprivlib_pca": {"releases": 1, "seconds": 60.0, "timeouts": 1},
                         "opendp_pca": {"releases": 1, "seconds": 5.0}}}}}  # fmt: skip

    def job(m, lo, hi):
        return Job(f"benchmark/gaussian10/{m}/eps1/t{lo}-{hi}", "benchmark", (), m, hi - lo)

    jobs = [job("diffprivlib_pca", 0, 20), job("diffprivlib_pca", 0, 2), job("diffprivlib_pca", 5, 10),
            job("opendp_pca", 0, 20)]  # fmt: skip
    got = [j.cost for j in estimate_jobs(jobs, table, stop_after_timeouts=3)]
    assert got == [3.0 + 3 * 60, 3.0 + 2 * 60, 3.0, 3.0 + 20 * 5]
    assert estimate_jobs(jobs[:1], table)[0].cost == 3.0 + 20 * 60
    caps = {"diffprivlib_pca": 60.0, "opendp_pca": 4.0}
    capped = estimate_jobs(jobs, table, stop_after_timeouts=3, caps=caps)
    assert capped[3].cost == 3.0 + 20 * 4.0  # a release priced at most at its cap
    assert capped[0].cost == got[0]
