"""The benchmark's measured cost model (experiments/bench/costs.py), its k-suffixed spiked and Table 2
cells (datasets.py) and Table 2's classification accuracy as a metric (accuracy.py, summary.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments.bench import costs, datasets
from experiments.bench.accuracy import table2_accuracy
from experiments.bench.datasets import Table2Rows

REPO = Path(__file__).resolve().parents[3]
DATA_DIR = os.environ.get("PRIVPCA_DATA_DIR")


def test_the_power_law_fit_recovers_exact_exponents():
    """Points drawn exactly from s = 3e-7 n^1.1 d^1.9: least squares in logs recovers a, b, c to
    rounding (1e-9 relative); two points are too few for three parameters."""
    pts = [(n, d, 3e-7 * n**1.1 * d**1.9) for n in (200, 1000, 5000) for d in (50, 200, 1000)]
    fit = costs.fit_power_law(pts)
    assert fit["b"] == pytest.approx(1.1, rel=1e-9) and fit["c"] == pytest.approx(1.9, rel=1e-9)
    assert fit["a"] == pytest.approx(3e-7, rel=1e-7)
    assert costs.power_law(fit, 25000, 1000) == pytest.approx(3e-7 * 25000**1.1 * 1000**1.9)
    assert costs.fit_power_law(pts[:2]) is None
    # one distinct n: the n exponent is 0, d's is still fitted
    one_n = [(1000, d, 2.0 * d**2) for d in (10, 100, 1000)]
    f = costs.fit_power_law(one_n)
    assert f["b"] == 0.0 and f["c"] == pytest.approx(2.0, rel=1e-9)


def _job(name):
    from experiments.plan.plan import Job

    return Job(name, "benchmark", (), f"benchmark/{name.split('/')[2]}", 0.0)


def test_jobs_are_priced_by_the_measured_table():
    """startup + the cell's fixed CPU-s + trials x release (+ the accuracy of trials below
    accuracy_trials on a Table 2 cell); an unmeasured spiked cell by its mechanism's power law;
    nothing measured: the default."""
    fit = {"a": 1e-6, "b": 1.0, "c": 1.0, "points": 4}
    table = {
        "job_startup": 2.0,
        "cells": {
            "kddcup": {
                "n": 494021,
                "d": 116,
                "k": 4,
                "fixed": 3.0,
                "release": {
                    "gauss_cov": {"seconds": 1.5, "releases": 3},
                    "streaming_power": {"refused": "too few rows"},
                },
            },
            "kddcup-table2": {
                "n": 247010,
                "d": 116,
                "k": 4,
                "fixed": 2.0,
                "accuracy": 40.0,
                "release": {"pca": {"seconds": 0.5}},
            },
        },
        "spiked_fits": {"mod_sulq": fit, "(fixed)": {"a": 1e-5, "b": 1.0, "c": 0.0}},
    }
    jobs = [
        _job("benchmark/kddcup/gauss_cov/eps1/t0-20"),
        _job("benchmark/kddcup-table2/pca/eps1/t0-10"),
        _job("benchmark/kddcup-table2/pca/eps1/t10-20"),
        _job("benchmark/spiked-d200-n25000/mod_sulq/eps1/t5-10"),
        _job("benchmark/kddcup/ppca/eps1/t0-20"),
        _job("benchmark/spiked-d200-n5000-k1/dp_pca/eps1/t0-20"),  # k = 1: not on the k = 2 law
        _job("benchmark/kddcup/streaming_power/eps1/t0-20"),
    ]
    got = [j.cost for j in costs.estimate_jobs(jobs, table, accuracy_trials=5, unmeasured=60.0)]
    assert got[0] == pytest.approx(2.0 + 3.0 + 20 * 1.5)
    assert got[1] == pytest.approx(2.0 + 2.0 + 10 * 0.5 + 5 * 40.0)
    assert got[2] == pytest.approx(2.0 + 2.0 + 10 * 0.5)  # no trial below 5
    assert got[3] == pytest.approx(2.0 + 1e-5 * 25000 + 5 * 1e-6 * 25000 * 200)
    assert got[4] == 60.0 and got[5] == 60.0
    assert got[6] == pytest.approx(2.0 + 3.0)  # a refusal: start-up and the cell, no release


def test_the_benchmark_plan_prices_its_jobs_by_the_measured_table():
    """build_benchmark_plan's job costs start-up + the cell's fixed CPU-s + trials x release, plus
    the grid's accuracy_trials x one classification on a Table 2 cell; unmeasured: the default."""
    from omegaconf import OmegaConf

    from experiments.plan.plan import build_benchmark_plan

    grids = OmegaConf.load(REPO / "conf" / "experiment" / "benchmark.yaml").experiment.grids
    acc = int(grids.paper.accuracy_trials)
    assert 0 < acc <= 10  # classified trials fall in the first block of 10 only
    table = {
        "job_startup": 2.0,
        "cells": {
            "kddcup-table2": {"n": 247010, "d": 116, "k": 4, "fixed": 3.0, "accuracy": 40.0,
                              "release": {"pca": {"seconds": 0.5}}},
            "gaussian10": {"n": 5000, "d": 10, "k": 2, "fixed": 1.0,
                           "release": {"pca": {"seconds": 0.25}}},
        },
    }  # fmt: skip
    jobs = build_benchmark_plan("paper", mechanisms=("pca", "random"),
                                datasets=("kddcup-table2", "gaussian10"), epsilons=(1.0,),
                                block=10, costs=table)  # fmt: skip
    assert {j.name: j.cost for j in jobs} == pytest.approx(
        {
            "benchmark/kddcup-table2/pca/eps1/t0-10": 2.0 + 3.0 + 10 * 0.5 + acc * 40.0,
            "benchmark/kddcup-table2/pca/eps1/t10-20": 2.0 + 3.0 + 10 * 0.5,
            "benchmark/kddcup-table2/random/eps1/t0-10": 60.0,
            "benchmark/kddcup-table2/random/eps1/t10-20": 60.0,
            "benchmark/gaussian10/pca/eps1/t0-10": 2.0 + 1.0 + 10 * 0.25,
            "benchmark/gaussian10/pca/eps1/t10-20": 2.0 + 1.0 + 10 * 0.25,
            "benchmark/gaussian10/random/eps1/t0-10": 60.0,
            "benchmark/gaussian10/random/eps1/t10-20": 60.0,
        }
    )
    assert {j.units for j in jobs} == {10.0} and {j.kind for j in jobs} == {
        "benchmark/pca",
        "benchmark/random",
    }


def test_the_committed_cost_table_prices_every_job_of_the_full_scale():
    """Every job of the full scale's plan has a measured (or fitted) price, none the default."""
    from experiments.plan.plan import build_benchmark_plan

    table = costs.load()
    if not table:
        pytest.skip("no committed cost table")
    jobs = build_benchmark_plan("paper", costs={})
    unpriced = [j.name for j in costs.estimate_jobs(jobs, table, unmeasured=float("nan"))
                if not np.isfinite(j.cost) and "localization" not in j.name]  # fmt: skip
    assert unpriced == []


def test_k_suffixed_spiked_cells_have_their_own_k_and_stream():
    a, b = datasets.expand(["spiked-d50-n300", "spiked-d50-n300-k1"], (), ())
    assert (a.k, b.k) == (2, 1) and (a.n, a.d) == (b.n, b.d) == (300, 50)
    Xa, Xb = datasets.load(a).X, datasets.load(b).X
    assert Xa.shape == Xb.shape == (300, 50) and not np.array_equal(Xa, Xb)
    # the k = 2 cell keeps its stream [0, d, n]: the same rows as before k entered the name
    from experiments.data.synthetic import spiked

    ref = spiked(300, 50, 2, spike=1.0, sigma=0.01, rng=np.random.default_rng([0, 50, 300]),
                 row_scaling="clip")  # fmt: skip
    assert np.array_equal(Xa, ref.X)
    assert np.all(np.linalg.norm(Xb, axis=1) <= 1 + 1e-12)


def test_table2_cells_name_the_hold_out_half():
    full, cut = datasets.expand(["kddcup-table2", "kddcup-table2-r4000"], (), ())
    assert full.family == cut.family == "table2" and full.k == cut.k == 4
    assert (full.n, full.d) == (494021 // 2, 116) and (cut.n, cut.rows) == (2000, 4000)
    with pytest.raises(ValueError):
        datasets.expand(["kddcup-table3"], (), ())


@pytest.mark.skipif(not DATA_DIR, reason="PRIVPCA_DATA_DIR not set (kddcup's raw file)")
def test_the_table2_database_excludes_the_classified_rows():
    """The database is the hold-out half; the training and test rows are the other half's, in the
    proportions of Table 2 (10% of the rest trains), and no row index is shared."""
    from experiments.runs.classifiers import classification_split

    cell = datasets.expand(["kddcup-table2-r4000"], (), ())[0]
    ds = datasets.load(cell, DATA_DIR)
    hold, train, test = classification_split(494021, 0, 0, 4000)
    assert len(set(hold) | set(train) | set(test)) == 4000
    assert ds.X.shape == (2000, 116) and ds.table2.X_train.shape == (200, 116)
    assert ds.table2.X_test.shape == (1800, 116)
    full = datasets.load(datasets.expand(["kddcup"], (), ())[0], DATA_DIR)
    assert np.array_equal(ds.X, full.X[hold]) and np.array_equal(ds.table2.X_test, full.X[test])
    y = (np.asarray(full.y).astype(str) == "normal.").astype(int)
    assert np.array_equal(ds.table2.y_train, y[train])


def _rows(seed=0, n_train=300, n_test=1000, d=6):
    """Labels decided by the sign of coordinate 0 (with a margin), other coordinates noise."""
    rng = np.random.default_rng(seed)

    def draw(n):
        X = rng.standard_normal((n, d)) * 0.2
        y = (rng.random(n) < 0.3).astype(int)
        X[:, 0] = np.where(y == 1, 0.5, -0.5) + 0.1 * rng.standard_normal(n)
        return X, y

    (a, b), (c, e) = draw(n_train), draw(n_test)
    return Table2Rows(a, b, c, e, "1")


def test_table2_accuracy_classifies_on_the_released_subspace():
    """On the informative direction the linear C-SVC separates the classes (the margin is 5 noise
    standard deviations: accuracy above 0.99); on a noise direction it can do no better than the
    majority label (about 0.7) plus chance (below 0.8); ⊥ scores the majority-label accuracy."""
    rows = _rows()
    e = np.eye(6)
    good = table2_accuracy(e[:, [0]], rows)
    bad = table2_accuracy(e[:, [3, 4]], rows)
    none = table2_accuracy(None, rows)
    assert good["accuracy"] > 0.99 and good["svm_converged"]
    assert bad["accuracy"] < 0.8
    assert none["accuracy"] == none["majority_accuracy"] == pytest.approx(np.mean(rows.y_test == 0))


def test_the_accuracy_leaderboard_ranks_only_releases_with_an_accuracy(tmp_path):
    from experiments.bench.summary import COLUMNS, accuracy_leaderboard, leaderboard, write_summary

    rows = []
    accs = {"a": [0.97, 0.98, None], "b": [0.80, 0.81, None], "c": [0.5, 0.99, None]}
    for m, vals in accs.items():
        for t, v in enumerate(vals):
            row = dict.fromkeys(COLUMNS)
            row.update(record_id=f"{m}{t}", dataset="kddcup-table2", family="table2", n=10, d=3,
                       k=1, mechanism=m, tier="proven", epsilon_target=1.0, delta_target=1e-6,
                       trial=t, status="ok", q_F_normalised=0.5, seconds=0.1, accuracy=v,
                       majority_accuracy=0.8, scale="t")  # fmt: skip
            rows.append(row)
    write_summary(pd.DataFrame(rows), tmp_path / "s.parquet")
    acc = accuracy_leaderboard(tmp_path / "s.parquet").set_index("mechanism")
    assert (acc.trials == 2).all()
    assert acc.loc["a", "accuracy"] == pytest.approx(0.975)
    assert acc.loc["a", "rank"] == 1 and acc.loc["c", "rank"] == 1 and acc.loc["b", "rank"] == 2
    lb = leaderboard(tmp_path / "s.parquet").set_index("mechanism")
    assert (lb.trials == 3).all() and (lb.accuracy_trials == 2).all()


@pytest.mark.slow
@pytest.mark.skipif(not DATA_DIR, reason="PRIVPCA_DATA_DIR not set (kddcup's raw file)")
def test_the_benchmark_records_accuracy_for_its_first_trials(tmp_path):
    """run.py on a small Table 2 cell: trial 0 has an accuracy (accuracy_trials=1), trial 1 none."""
    cmd = [sys.executable, str(REPO / "run.py"), "experiment=benchmark", "scale=smoke",
           f"results_dir={tmp_path}", "quiet=true", "experiment.mechanisms=[pca,mod_sulq]",
           "experiment.datasets=[kddcup-table2-r4000]", "experiment.epsilons=[1.0]",
           "experiment.trials=2", "experiment.accuracy_trials=1"]  # fmt: skip
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    recs = [json.loads(p.read_text()) for p in (tmp_path / "records").glob("*.json")]
    by = {(x["mechanism"], x["trial"]): x for x in recs if x.get("experiment") == "benchmark"}
    assert set(by) == {("pca", 0), ("pca", 1), ("mod_sulq", 0), ("mod_sulq", 1)}
    for m in ("pca", "mod_sulq"):
        assert 0.5 < by[m, 0]["accuracy"] <= 1.0 and by[m, 0]["n"] == 2000
        assert by[m, 1].get("accuracy") is None


def test_scale_options_reach_the_mechanism_but_never_its_privacy_parameters():
    from experiments.bench.runner import entry
    from experiments.errors import UserError

    e = entry("diffprivlib_pca", 1.0, 1e-6, ppca_iterations=10, ppca_chains=1,
              options={"timeout": 10})  # fmt: skip
    assert e.params["timeout"] == 10 and e.params["epsilon"] == 1.0
    assert (
        entry("diffprivlib_pca", 1.0, 1e-6, ppca_iterations=10, ppca_chains=1).params["timeout"]
        == 60
    )  # the configured cap where the scale sets none: a different record key
    for bad in ({"epsilon": 5.0}, {"delta": 0.1}):
        with pytest.raises(UserError):
            entry("diffprivlib_pca", 1.0, 1e-6, ppca_iterations=10, ppca_chains=1, options=bad)
    with pytest.raises(UserError):  # the currency's own options (tight calibration) stay
        entry("mod_sulq", 1.0, 1e-6, ppca_iterations=10, ppca_chains=1,
              options={"calibration": "classic"})  # fmt: skip


def test_a_mechanism_of_ones_own_takes_no_scale_options():
    """Options a scale sets for a mechanism of one's own are refused in one line, not ignored; with
    none it enters as before."""
    from experiments.bench.runner import entry
    from experiments.errors import UserError

    own = "examples/my_mechanism/my_gauss.py:my_gauss"
    assert entry(own, 1.0, 1e-6, ppca_iterations=10, ppca_chains=1).params["target"] == own
    with pytest.raises(UserError, match="takes no options"):
        entry(own, 1.0, 1e-6, ppca_iterations=10, ppca_chains=1, options={"timeout": 10})


def test_the_epsilon_exponent_is_fitted_within_each_data_set():
    """seconds = c_ds · ε^-1 on two data sets with different c: the exponent is -1 whatever the
    c (one intercept per data set); a data set with a median below the floor, or with fewer than
    three ε, is left out; a mechanism with none left has no exponent."""
    import pandas as pd

    eps = [0.1, 1.0, 10.0]
    rows = [("a", "m", e, 30.0 / e * f) for e in eps for f in (0.9, 1.0, 1.1)]  # median 30/e
    rows += [("b", "m", e, 400.0 / e) for e in (1.0, 3.0, 10.0)]  # another c and other ε
    rows += [("c", "m", e, 0.1) for e in eps]  # below EPSILON_FIT_MIN_S: left out
    rows += [("a", "flat", e, 2.0) for e in eps] + [("a", "two", e, 9.0) for e in eps[:2]]
    frame = pd.DataFrame(rows, columns=["dataset", "mechanism", "epsilon_target", "seconds"])
    fits = costs.fit_epsilon_exponents(frame)
    assert fits["m"]["exponent"] == pytest.approx(-1.0) and fits["m"]["datasets"] == 2
    assert fits["flat"]["exponent"] == pytest.approx(0.0)
    assert "two" not in fits


def test_a_job_at_another_epsilon_is_priced_by_the_exponent():
    table = {
        "job_startup": 2.0,
        "cells": {"gaussian10": {"n": 5000, "d": 10, "k": 2, "fixed": 1.0,
                                 "release": {"pca": {"seconds": 0.5}}}},
        "epsilon_exponents": {"pca": {"exponent": -1.0, "datasets": 1}},
    }  # fmt: skip
    jobs = [
        _job("benchmark/gaussian10/pca/eps0.1/t0-20"),
        _job("benchmark/gaussian10/pca/eps1/t0-20"),
    ]
    got = [j.cost for j in costs.estimate_jobs(jobs, table)]
    assert got == pytest.approx([2.0 + 1.0 + 20 * 0.5 * 10.0, 2.0 + 1.0 + 20 * 0.5])
