"""JMLR experiment runners end to end on tiny settings, resume, figures, and the Figure 1 bound."""

import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize_scalar

from experiments.runs.jmlr import run_sulq_bound, run_utility_vs_epsilon, run_utility_vs_n
from experiments.runs.sweep import n_grid
from experiments.store.store import ResultStore
from mechanisms.bounds import mod_sulq_correlation_upper_bound, mod_sulq_phi_range
from mechanisms.calibration import mod_sulq_noise_scale
from tests.hydra_helpers import compose_cfg

REPO = Path(__file__).resolve().parents[3]


def test_n_grid():
    assert n_grid(100_000, 1000, 3) == [1000, 10000, 100000]
    assert n_grid(500, 1000, 4) == [500]
    assert n_grid(5000, 1000, 1) == [5000]


def test_utility_vs_n_runs_and_resumes(tmp_path):
    cfg = compose_cfg(
        [
            "experiment=utility_vs_n",
            "mechanism=mod_sulq",
            "scale=smoke",
            f"results_dir={tmp_path}",
            "quiet=true",
        ]
    )
    first = run_utility_vs_n(cfg)
    assert first["records_written"] == 2 * 1 * 2  # 2 sizes x 1 subset x 2 restarts
    df = ResultStore(tmp_path).load()
    assert sorted(df.n.unique()) == [500, 5000]
    assert set(df.neighbouring) == {"replace-one-row"} and set(df.epsilon) == {0.1}
    assert set(df.scale) == {"smoke"} and set(df.experiment) == {"utility_vs_n"}
    assert (df.q_F <= df.q_F_opt + 1e-12).all()
    again = run_utility_vs_n(cfg)
    assert again["records_written"] == 0
    assert len(ResultStore(tmp_path).load()) == 4


def test_adding_restarts_keeps_earlier_ones(tmp_path):
    base = [
        "experiment=utility_vs_n",
        "mechanism=mod_sulq",
        "scale=smoke",
        f"results_dir={tmp_path}",
        "quiet=true",
        "experiment.n_grid=[1000]",
    ]
    run_utility_vs_n(compose_cfg(base))
    before = ResultStore(tmp_path).load().set_index("restart").q_F
    run_utility_vs_n(compose_cfg(base + ["scale.restarts.default=4"]))
    after = ResultStore(tmp_path).load().set_index("restart").q_F
    assert len(after) == 4
    assert np.array_equal(after.loc[before.index].values, before.values)


def test_utility_vs_epsilon(tmp_path):
    cfg = compose_cfg(
        [
            "experiment=utility_vs_epsilon",
            "mechanism=mod_sulq",
            "scale=smoke",
            "experiment.epsilons=[0.1,10.0]",
            f"results_dir={tmp_path}",
            "quiet=true",
        ]
    )
    run_utility_vs_epsilon(cfg)
    df = ResultStore(tmp_path).load()
    assert len(df) == 2 * 2 and set(df.delta) == {0.05}
    means = df.groupby("epsilon_grid").q_F.mean()
    assert means[10.0] > means[0.1]  # more privacy budget, more utility


def test_sulq_bound_matches_independent_minimisation(tmp_path):
    """Eq. (21) minimised by SciPy's bounded scalar search over Φ of eq. (22), written out independently."""
    for n, d, eps in [(10**3, 50, 0.1), (10**5, 500, 1.0), (10**4, 100, 0.5), (10**6, 1000, 0.01)]:
        beta = mod_sulq_noise_scale(n, d, eps, 0.01)
        lo = max(
            1 / math.sqrt(2 * math.pi * d),
            math.sqrt(1 - math.exp(-2 * math.log(8 * d) / (d - 1))),
            math.sqrt(1 - math.exp(-(2 / beta**2 + math.log(256)) / (d - 1))),
        )

        def value(phi):
            logk = (d - 1) * math.log(1 / math.sqrt(1 - phi**2)) - math.log(8)
            frac = (1 / beta**2 + math.log(2)) / logk
            if logk <= 0 or not 0 <= frac <= 1:
                return 1.0
            return 1 - (1 - phi) / 4 * (1 - frac) ** 2

        if lo >= 1:
            expected = 1.0
        else:
            res = minimize_scalar(
                value, bounds=(lo, 1 - 1e-12), method="bounded", options={"xatol": 1e-10}
            )
            expected = min(res.fun, value(lo))
        got = mod_sulq_correlation_upper_bound(n, d, eps, 0.01)
        assert got == pytest.approx(expected, abs=2e-4), (n, d, eps)
        assert mod_sulq_phi_range(d, beta) == pytest.approx(lo)


def test_sulq_bound_hand_value():
    """d = 50, tiny n (β huge, 1/β² ~ 0): φ_min = sqrt(1 − exp(−2 ln 400 / 49)) = 0.4657...,
    and at φ_min the bracket is 1 − ln2/(49·(−½ ln(1−φ²)) − ln 8) = 1 − 0.6931/(5.99 − 2.079)."""
    phi = math.sqrt(1 - math.exp(-2 * math.log(400) / 49))
    assert phi == pytest.approx(0.4657, abs=1e-4)
    at_phi_min = (
        1
        - (1 - phi) / 4 * (1 - math.log(2) / (49 * -0.5 * math.log(1 - phi**2) - math.log(8))) ** 2
    )
    bound = mod_sulq_correlation_upper_bound(10, 50, 0.01, 0.01)
    assert bound <= at_phi_min + 1e-9
    assert bound == pytest.approx(0.9074, abs=5e-4)


def test_sulq_bound_runner_monotone_in_n(tmp_path):
    cfg = compose_cfg(
        [
            "experiment=sulq_bound",
            "experiment.dims=[50]",
            "experiment.epsilons=[0.1]",
            "experiment.log10_n.num=8",
            f"results_dir={tmp_path}",
            "quiet=true",
        ]
    )
    run_sulq_bound(cfg)
    df = ResultStore(tmp_path).load().sort_values("n")
    assert len(df) == 8
    assert np.all(np.diff(df.bound.values) >= -1e-12)


@pytest.mark.slow
def test_sweep_killed_midway_resumes_without_loss_or_duplicates(tmp_path):
    args = [
        sys.executable,
        str(REPO / "run.py"),
        "experiment=utility_vs_n",
        "mechanism=mod_sulq",
        "scale=smoke",
        "scale.restarts.default=40",
        "experiment.n_grid=[2000]",
        f"results_dir={tmp_path}",
        "quiet=true",
    ]
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    records = tmp_path / "records"
    deadline = time.time() + 120
    while time.time() < deadline and (
        not records.exists() or len(list(records.glob("*.json"))) < 5
    ):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed_at = len(list(records.glob("*.json")))
    assert 5 <= killed_at
    before = {p.name: p.read_text() for p in records.glob("*.json")}
    subprocess.run(args, cwd=REPO, check=True, capture_output=True, timeout=300)
    store = ResultStore(tmp_path)
    df = store.load()
    assert len(df) == 40 and df.restart.nunique() == 40
    for name, text in before.items():  # nothing already written was changed
        assert (records / name).read_text() == text
        json.loads(text)
    store.clean_temporaries()


def _fake_store(root: Path):
    store = ResultStore(root)
    rng = np.random.default_rng(0)
    i = 0
    for ds in ("census", "kddcup", "localization", "insurance"):
        for mech in ("pca", "ppca", "mod_sulq", "random"):
            for n in (1000, 10000):
                for r in range(3):
                    i += 1
                    store.write(
                        {
                            "run_key": {"i": i},
                            "experiment": "utility_vs_n",
                            "dataset": ds,
                            "split": "x",
                            "mechanism": mech,
                            "n": n,
                            "k": 4,
                            "q_F": float(rng.uniform(0, 1)),
                            "timestamp": "t",
                        }
                    )
    for mech in ("pca", "ppca", "mod_sulq"):
        for eps in (0.1, 1.0):
            i += 1
            store.write(
                {
                    "run_key": {"i": i},
                    "experiment": "utility_vs_epsilon",
                    "dataset": "gaussian10",
                    "mechanism": mech,
                    "epsilon_grid": eps,
                    "q_F": eps / 2,
                    "timestamp": "t",
                }
            )
    for mech in ("pca", "ppca"):
        for r in range(2):
            i += 1
            store.write(
                {
                    "run_key": {"i": i},
                    "experiment": "classification",
                    "dataset": "kddcup",
                    "mechanism": mech,
                    "accuracy": 0.98 + r / 100,
                    "timestamp": "t",
                }
            )
    i += 1
    store.write(
        {
            "run_key": {"i": i},
            "experiment": "gibbs_convergence",
            "dataset": "kddcup",
            "k": 4,
            "n": 100,
            "traces": {"iterations": [1, 2, 3], "log_F": [[0, -1, -2], [0, -0.5, -3]]},
            "timestamp": "t",
        }
    )
    for d in (50, 100):
        for lg in (2, 3):
            i += 1
            store.write(
                {
                    "run_key": {"i": i},
                    "experiment": "sulq_bound",
                    "d": d,
                    "epsilon": 0.1,
                    "log10_n": lg,
                    "bound": 0.9,
                    "timestamp": "t",
                }
            )


@pytest.mark.slow
def test_figures_from_a_small_store(tmp_path):
    _fake_store(tmp_path)
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "make_figures.py"), "--results", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    drawn = (
        tmp_path / "drawn" / "all"
    )  # the default --out: inside the store, never a curated directory
    for name in ("fig1", "fig2", "fig3", "fig4", "fig5"):
        for ext in ("png", "pdf"):
            assert (drawn / "figures" / f"{name}.{ext}").stat().st_size > 1000
    t2 = pd.read_csv(drawn / "tables" / "table2.csv")
    assert set(t2.mechanism) == {"pca", "ppca"}
    assert t2.loc[t2.mechanism == "pca", "paper_accuracy_pct"].item() == 98.97
    assert t2.loc[t2.mechanism == "pca", "accuracy_pct"].item() == pytest.approx(98.5)


@pytest.mark.slow
def test_figure_axes_are_labelled(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from experiments.figures import paper as make_figures

    _fake_store(tmp_path)
    df = ResultStore(tmp_path).load()
    captured = []
    real_save = make_figures.save
    make_figures.save = lambda fig, out, name: captured.append(fig) or real_save(fig, out, name)
    try:
        make_figures.utility_vs_n(df, ["census", "kddcup"], tmp_path, "fig3", "t")
        make_figures.fig5(df, tmp_path)
    finally:
        make_figures.save = real_save
    for fig in captured:
        for ax in fig.axes:
            assert ax.get_xlabel() and ax.get_ylabel()
            assert (
                ax.get_legend() is not None or fig.legends
            )  # Figures 3-4: one legend below the panels


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["submitit_test", "local_parallel"])
def test_sweep_through_hydra_launchers(tmp_path, launcher):
    """The cluster path (submitit, local executor) and the joblib path run a two-job sweep."""
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "run.py"),
            "-m",
            f"hydra/launcher={launcher}",
            "experiment=utility_vs_n",
            "scale=smoke",
            "mechanism=pca,random",
            f"results_dir={tmp_path}",
            "quiet=true",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    df = ResultStore(tmp_path).load()
    assert set(df.mechanism) == {"pca", "random"}
    assert len(df) == 2 * 1 + 2 * 2  # pca: 2 sizes x 1 restart; random: 2 sizes x 2 restarts
    if launcher == "submitit_test":
        assert list((tmp_path / "hydra" / "multirun").rglob("*.submitit*")) or list(
            (tmp_path / "hydra" / "multirun").rglob("*_submitted.pkl")
        )


def _kddcup_like_dir(tmp_path: Path) -> Path:
    """A raw-format kddcup file built from the fixture rows (normal x10, attacks x60: 450 rows)."""
    import gzip

    rows = gzip.open(
        REPO / "tests" / "fixtures" / "uci" / "kddcup99" / "kddcup.data_10_percent.gz", "rt"
    ).read()
    rows = [r for r in rows.splitlines() if r.strip()]
    out = [r for r in rows for _ in range(10 if r.endswith("normal.") else 60)]
    d = tmp_path / "data" / "kddcup99"
    d.mkdir(parents=True)
    (d / "kddcup.data_10_percent").write_text("\n".join(out) + "\n")
    return tmp_path / "data"


def test_classification_runner_and_its_key(tmp_path):
    from experiments.runs.classification import run_classification

    data = _kddcup_like_dir(tmp_path)
    base = [
        "experiment=classification",
        "mechanism=pca",
        "scale=smoke",
        f"data_dir={data}",
        f"results_dir={tmp_path / 'res'}",
        "quiet=true",
        "scale.classification.max_rows=null",
    ]
    out = run_classification(compose_cfg(base))
    assert out["records_written"] == 1
    df = ResultStore(tmp_path / "res").load()
    assert 0.5 <= df.accuracy.item() <= 1.0 and df.positive_label.item() == "normal."
    assert (
        df.n_train.item() == 22 and df.n_test.item() == 203
    )  # 450 -> 225 hold-out, 10% of 225 trains
    # same settings: resumed; another feature scaling: a different run, recorded separately
    assert run_classification(compose_cfg(base))["records_written"] == 0
    assert (
        run_classification(compose_cfg(base + ["experiment.feature_scaling=standard"]))[
            "records_written"
        ]
        == 1
    )


def test_gibbs_convergence_runner(tmp_path):
    from experiments.runs.jmlr import run_gibbs_convergence

    cfg = compose_cfg(
        [
            "experiment=gibbs_convergence",
            "dataset=gaussian10",
            "scale=smoke",
            f"results_dir={tmp_path}",
            "quiet=true",
        ]
    )
    assert run_gibbs_convergence(cfg)["records_written"] == 1
    rec = ResultStore(tmp_path).load().iloc[0]
    log_f = np.array(rec["traces.log_F"])
    assert log_f.shape == (2, 20)  # smoke: 2 chains, 200 iterations / 10
    assert rec["traces.iterations"][-1] == 200 and np.all(np.isfinite(log_f))
    assert rec.neighbouring == "replace-one-row" and rec.concentration == pytest.approx(
        5000 * 0.1 / 2
    )
    assert rec.guarantee_status == "nominal (MCMC)"  # the chains' epsilon is nominal, not proven
    assert run_gibbs_convergence(cfg)["records_written"] == 0
    assert rec.sweeps_per_iteration == 2 and "run_key.sweeps_per_iteration" not in rec.index


def test_gibbs_convergence_at_one_sweep_per_iteration(tmp_path):
    """The fast chain of the grouped releases (1 Givens sweep per iteration): its own record, beside
    the default chain's (2 sweeps), whose run key stays as it was; other samplers refuse the option."""
    from experiments.runs.jmlr import run_gibbs_convergence

    base = [
        "experiment=gibbs_convergence",
        "dataset=gaussian10",
        "scale=smoke",
        f"results_dir={tmp_path}",
        "quiet=true",
    ]
    assert run_gibbs_convergence(compose_cfg(base))["records_written"] == 1
    one = compose_cfg(base + ["experiment.sweeps_per_iteration=1"])
    assert run_gibbs_convergence(one)["records_written"] == 1
    assert run_gibbs_convergence(one)["records_written"] == 0
    df = ResultStore(tmp_path).load().sort_values("sweeps_per_iteration")
    assert list(df.sweeps_per_iteration) == [1, 2]
    assert list(df["run_key.sweeps_per_iteration"].fillna(2)) == [1, 2]
    assert not np.array_equal(df.iloc[0]["traces.log_F"], df.iloc[1]["traces.log_F"])
    for bad in (
        ["experiment.sweeps_per_iteration=0"],
        ["experiment.sweeps_per_iteration=1", "experiment.sampler=reference"],
    ):
        with pytest.raises(ValueError, match="sweeps_per_iteration"):
            run_gibbs_convergence(compose_cfg(base + bad))


def _ppca_group_cfg(tmp_path, *extra):
    return compose_cfg(
        [
            "experiment=utility_vs_n",
            "mechanism=ppca",
            "scale=smoke",
            f"results_dir={tmp_path}",
            "quiet=true",
            "k=2",
            "+scale.ppca_restarts_as_chains=true",
            "scale.restarts.ppca=3",
            "ppca_iterations=60",
            *extra,
        ]
    )


@pytest.mark.slow
def test_utility_vs_n_ppca_restarts_as_chains_parallel_and_resume(tmp_path):
    import warnings

    from mechanisms.ppca import ppca

    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", RuntimeWarning
        )  # 60 iterations: diagnostics may fail, recorded
        first = run_utility_vs_n(_ppca_group_cfg(tmp_path / "par", "workers=2"))
        assert first["records_written"] == 2 * 1 * 3  # 2 sizes x 1 subset x 3 restarts
        serial = run_utility_vs_n(_ppca_group_cfg(tmp_path / "ser", "workers=1"))
        assert serial["records_written"] == 6
    par = ResultStore(tmp_path / "par").load().sort_values(["n", "restart"])
    ser = ResultStore(tmp_path / "ser").load().sort_values(["n", "restart"])
    # same releases whatever the number of worker processes
    assert list(par.components_sha256) == list(ser.components_sha256)
    assert par.components_sha256.nunique() == 6
    assert set(par.restarts_as_chains) == {True}
    assert set(par["diagnostics_not_private.diagnosed_chains"]) == {3} and set(
        par["release.n_chains"]
    ) == {1}
    assert set(par["run_key.mechanism_params.n_chains"]) == {1}
    # each record is the single-chain release of its own stream
    row = par.iloc[4]
    from experiments.data.configured import load_configured, subsample

    cfg = _ppca_group_cfg(tmp_path / "par")
    ds = load_configured(cfg.dataset, cfg.data_dir)
    Xs, _, _ = subsample(ds.X, int(row.n), np.random.default_rng(row.subset_stream))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        single = ppca(
            Xs,
            2,
            epsilon=0.1,
            rng=np.random.default_rng(row.mechanism_stream),
            sampler="auto",
            iterations=60,
            n_chains=1,
            progress=False,
        )
    from experiments.store.records import components_digest

    assert components_digest(single.components) == row.components_sha256
    # resume: nothing to do; a deleted record is recomputed bit for bit from its own stream
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert (
            run_utility_vs_n(_ppca_group_cfg(tmp_path / "par", "workers=2"))["records_written"] == 0
        )
        store = ResultStore(tmp_path / "par")
        from experiments.store.store import record_id

        rid = next(
            record_id(r["run_key"])
            for r in store.iter_records()
            if r["components_sha256"] == row.components_sha256
        )
        store.path(rid).unlink()
        assert (
            run_utility_vs_n(_ppca_group_cfg(tmp_path / "par", "workers=2"))["records_written"] == 1
        )
    redone = ResultStore(tmp_path / "par").get(rid)
    assert redone["components_sha256"] == row.components_sha256
    assert redone["group_restarts"] == [int(row.restart)]


def _printed_summaries(monkeypatch):
    """The summary tables the runners print, captured as DataFrames."""
    from experiments.runs import classification, jmlr, sweep

    tables, finish = [], sweep.finish_experiment

    def capture(cfg, name, written, summary):
        tables.append(summary)
        return finish(cfg, name, written, summary)

    for runners in (jmlr, classification):
        monkeypatch.setattr(runners, "finish_experiment", capture)
    return tables


@pytest.mark.slow
def test_printed_summary_covers_exactly_this_runs_records(tmp_path, monkeypatch):
    """A runner's printed mean and count are over the records its own keys name, never pooled with
    other runs of the same store (another ε, calibration, data set or protocol option)."""
    from experiments.runs.classification import run_classification

    tables = _printed_summaries(monkeypatch)
    base = ["mechanism=mod_sulq", "scale=smoke", f"results_dir={tmp_path}", "quiet=true"]
    vs_n = base + ["experiment=utility_vs_n"]
    for extra in (
        ["epsilon=0.1"],
        ["epsilon=1.0"],
        ["epsilon=1.0", "mechanism.fn.calibration=sulq"],
    ):
        run_utility_vs_n(compose_cfg(vs_n + extra))
    store = ResultStore(tmp_path).load(experiment="utility_vs_n")
    assert len(store) == 3 * 4  # three runs of 2 sizes x 2 restarts in one store
    for table, eps, calibration in zip(tables, (0.1, 1.0, 1.0), (None, None, "sulq")):
        col = "run_key.mechanism_params.calibration"
        cal = store[col] if col in store else pd.Series(None, index=store.index)
        own = store[
            (store.epsilon == eps) & (cal.isna() if calibration is None else cal == calibration)
        ]
        assert list(table["count"]) == [2, 2]
        assert np.allclose(table["mean"], own.groupby("n").q_F.mean().to_numpy(), rtol=0, atol=0)

    tables.clear()
    vs_eps = base + ["experiment=utility_vs_epsilon", "experiment.epsilons=[0.1,10.0]"]
    run_utility_vs_epsilon(compose_cfg(vs_eps + ["dataset=gaussian10"]))
    run_utility_vs_epsilon(compose_cfg(vs_eps + ["dataset=spiked"]))
    store = ResultStore(tmp_path).load(experiment="utility_vs_epsilon")
    assert set(store.dataset) == {"gaussian10", "spiked"}
    spiked = store[store.dataset == "spiked"].groupby("epsilon_grid").q_F.mean().to_numpy()
    assert list(tables[1]["count"]) == [2, 2] and np.array_equal(tables[1]["mean"], spiked)

    tables.clear()
    data = _kddcup_like_dir(tmp_path)
    cls = [
        "experiment=classification",
        "mechanism=pca",
        "scale=smoke",
        f"data_dir={data}",
        f"results_dir={tmp_path / 'cls'}",
        "quiet=true",
        "scale.classification.max_rows=null",
    ]
    run_classification(compose_cfg(cls))
    run_classification(compose_cfg(cls + ["experiment.feature_scaling=standard"]))
    records = ResultStore(tmp_path / "cls").load()
    assert len(records) == 2 and [list(t["count"]) for t in tables] == [[1], [1]]
    standard = records[records["run_key.feature_scaling"] == "standard"].accuracy.item()
    assert tables[1]["mean"].item() == standard
