"""The tables behind Figures 2–5 (experiments.figures.tables): values computed by hand from a few
records built here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from experiments.figures import tables


def _utility_records() -> pd.DataFrame:
    rows = [
        # PPCA at n = 100: q_F 0.2 and 0.4, one release failed its check
        dict(mechanism="ppca", n=100, q_F=0.2, converged="True", rhat=1.002),
        dict(mechanism="ppca", n=100, q_F=0.4, converged="False", rhat=1.05),
        dict(mechanism="random", n=100, q_F=0.1, converged=None, rhat=np.nan),
        dict(mechanism="pca", n=100, q_F=0.7, converged=None, rhat=np.nan),
    ]
    df = pd.DataFrame(rows).rename(
        columns={
            "converged": "diagnostics_not_private.converged",
            "rhat": "diagnostics_not_private.rhat",
        }
    )
    return df.assign(experiment="utility_vs_n", dataset="toy")


def test_utility_vs_n_table_means_spreads_and_checks(tmp_path):
    (path,) = tables.utility_vs_n_table(_utility_records(), tmp_path)
    t = pd.read_csv(path)
    assert list(t.mechanism) == ["pca", "ppca", "random"]  # the paper's order
    ppca = t[t.mechanism == "ppca"].iloc[0]
    assert ppca.q_F_mean == pytest.approx(0.3)
    # the table keeps 6 decimals
    assert ppca.q_F_sd == pytest.approx(np.std([0.2, 0.4], ddof=1), abs=5e-7)
    assert (ppca.records, ppca.converged, ppca.rhat_max) == (2, 1, 1.05)
    assert t[t.mechanism == "pca"].iloc[0].q_F_sd == 0.0  # one record: no spread, not NaN
    assert np.isnan(t[t.mechanism == "random"].iloc[0].converged)  # not sampled: no check


def test_utility_vs_epsilon_table_is_keyed_by_epsilon(tmp_path):
    df = _utility_records().assign(experiment="utility_vs_epsilon", epsilon_grid=0.5)
    (path,) = tables.utility_vs_epsilon_table(df, tmp_path)
    t = pd.read_csv(path)
    assert set(t.epsilon) == {0.5} and len(t) == 3


def test_sampler_convergence_reads_F_at_half_and_final_iterations(tmp_path):
    T = np.array([100, 200, 300, 400])
    F = np.array([[0.5, 0.2, 0.1, 0.05], [0.4, 0.3, 0.08, 0.06]])
    df = pd.DataFrame(
        [
            {
                "experiment": "gibbs_convergence",
                "dataset": "toy",
                "sampler": "gibbs",
                "timestamp": "t",
                "traces.iterations": T,
                "traces.log_F": list(np.log(F)),
                "rhat": 1.001,
                "concentration": 7.0,
                "top_concentration": 3.5,
            }
        ]
    )
    (path,) = tables.sampler_convergence_table(df, tmp_path)
    row = pd.read_csv(path).iloc[0]
    assert (row.T_half, row.F_min_half, row.F_max_half) == (200, 0.2, 0.3)
    assert (row.T_final, row.F_min_final, row.F_max_final) == (400, 0.05, 0.06)
    assert row.chains == 2
    assert (row.n_eps_over_2, row.n_eps_over_2_lambda1) == (7.0, 3.5)


def test_sampler_convergence_keeps_one_row_per_sweeps_per_iteration(tmp_path):
    """The fast chain at 1 and at 2 sweeps per iteration (and a record that predates the field: the
    chain's default, 2, so the older of the two 2-sweep records is left out), beside the reference."""
    T = np.array([100, 200])

    def rec(sampler, sweeps, stamp, f):
        r = {
            "experiment": "gibbs_convergence",
            "dataset": "toy",
            "sampler": sampler,
            "timestamp": stamp,
            "traces.iterations": T,
            "traces.log_F": [np.log([f, f / 2])],
        }
        return r if sweeps is None else {**r, "sweeps_per_iteration": sweeps}

    df = pd.DataFrame(
        [
            rec("reference", None, "a", 0.4),
            rec("gibbs", None, "a", 0.3),
            rec("gibbs", 2.0, "b", 0.2),
            rec("gibbs", 1.0, "c", 0.1),
        ]
    )
    (path,) = tables.sampler_convergence_table(df, tmp_path)
    t = pd.read_csv(path)
    assert list(zip(t.sampler, t.sweeps_per_iteration.fillna(-1), t.F_max_half)) == [
        ("gibbs", 1, 0.1),
        ("gibbs", 2, 0.2),
        ("reference", -1, 0.4),
    ]


def test_missing_experiments_draw_nothing(tmp_path):
    empty = pd.DataFrame({"experiment": ["table1"]})
    assert tables.utility_vs_n_table(empty, tmp_path) is None
    assert tables.utility_vs_epsilon_table(empty, tmp_path) is None
    assert tables.sampler_convergence_table(empty, tmp_path) is None


def test_mod_sulq_calibrations_are_listed_apart_and_figures_keep_eq5(tmp_path):
    """MOD-SULQ records with the original SULQ noise (``release.calibration = sulq``) are their own
    rows of the utility table and of Table 2, never pooled with eq. (5)'s; a MOD-SULQ record that
    does not say is eq. (5)'s ("paper"); the paper's figures draw eq. (5) only."""
    rows = [
        dict(mechanism="mod_sulq", n=100, q_F=0.5, cal=None),
        dict(mechanism="mod_sulq", n=100, q_F=0.3, cal="paper"),
        dict(mechanism="mod_sulq", n=100, q_F=0.1, cal="sulq"),
        dict(mechanism="random", n=100, q_F=0.05, cal=None),
    ]
    df = pd.DataFrame(rows).rename(columns={"cal": "release.calibration"})
    df = df.assign(experiment="utility_vs_n", dataset="toy")
    (path,) = tables.utility_vs_n_table(df, tmp_path)
    t = pd.read_csv(path)
    got = {(m, c): q for m, c, q in zip(t.mechanism, t.calibration, t.q_F_mean)}
    assert got == {
        ("mod_sulq", "paper"): pytest.approx(0.4),
        ("mod_sulq", "sulq"): 0.1,
        ("random", "-"): 0.05,
    }
    assert list(tables.paper_noise_only(df).q_F) == [0.5, 0.3, 0.05]
    cls = df.assign(experiment="classification", dataset="kddcup", accuracy=df.q_F, scale="paper")
    cls = cls.assign(classifier="linear_csvc", svm_loss="hinge", feature_scaling="minmax")
    cls = cls.assign(random_entries="gaussian", random_projection="orthonormal", svm_converged=True)
    (path,) = tables.table2(cls, tmp_path)
    t2 = pd.read_csv(path)
    sulq = t2[(t2.mechanism == "mod_sulq") & (t2.calibration == "sulq")]
    eq5 = t2[(t2.mechanism == "mod_sulq") & (t2.calibration == "paper")]
    assert (sulq.rounds.item(), eq5.rounds.item()) == (1, 2) and eq5.accuracy_pct.item() == 40.0
