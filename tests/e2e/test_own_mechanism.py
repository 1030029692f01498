"""The worked example of docs/own_mechanism.md, end to end at smoke scale: a mechanism kept outside
the package (examples/my_mechanism) keeps the contract, runs in a Hydra sweep beside PPCA through
``--config-dir`` and ``PYTHONPATH`` only, and is drawn in a figure."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "my_mechanism"


@pytest.fixture
def my_gauss_module(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    import my_gauss

    return my_gauss


def test_sensitivity_bound_of_my_gauss():
    """Δ = sqrt(2) for n = 1: the upper triangle of xxᵀ − yyᵀ never exceeds it and e1, e2 attain it."""
    rng = np.random.default_rng(0)
    iu = np.triu_indices(6)
    worst = 0.0
    for _ in range(2000):
        x, y = rng.standard_normal((2, 6))
        x, y = x / np.linalg.norm(x) * rng.uniform(0, 1) ** 0.1, y / np.linalg.norm(y)
        worst = max(worst, np.linalg.norm((np.outer(x, x) - np.outer(y, y))[iu]))
    assert worst <= math.sqrt(2) + 1e-12
    e1, e2 = np.eye(6)[:2]
    assert np.isclose(np.linalg.norm((np.outer(e1, e1) - np.outer(e2, e2))[iu]), math.sqrt(2))


@pytest.mark.parametrize("epsilon,delta", [(0.1, 0.01), (0.5, 1e-5), (2.0, 1e-6)])
def test_my_gauss_noise_is_enough_for_the_claim(my_gauss_module, epsilon, delta):
    """The exact privacy profile of the Gaussian mechanism (Balle & Wang 2018, Thm 8) at the σ used
    gives ε(δ) <= the claimed ε (tolerance 1e-9 for the root finder); fails if σ were too small."""
    from mechanisms.calibration import gaussian_epsilon_for_delta

    n = 1234
    sigma = my_gauss_module.my_gauss_noise_scale(n, epsilon, delta)
    exact = gaussian_epsilon_for_delta((math.sqrt(2) / n) / sigma, delta)
    assert exact <= epsilon + 1e-9
    # (not tight: at (0.1, 0.01) the classical calibration's exact epsilon is about 0.007, i.e. the
    # claim is conservative -- sufficient, which is all a privacy claim needs)


@pytest.mark.slow
def test_my_gauss_keeps_the_contract(my_gauss_module):
    from experiments.audit.contract import check_mechanism

    report = check_mechanism(
        my_gauss_module.my_gauss, epsilon=0.5, delta=1e-5, audit_trials=1000, audit_time_budget=10
    )
    report.raise_if_failed()
    assert report.status_of("audit") in {"passed", "skipped"}


@pytest.mark.slow
def test_my_gauss_in_a_sweep_beside_ppca_and_in_a_figure(tmp_path):
    """The docs' commands, verbatim apart from results_dir: no file of the harness is edited."""
    results = tmp_path / "results"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(EXAMPLE), str(REPO)]))
    sweep = [
        sys.executable,
        "run.py",
        "-m",
        "--config-dir",
        "examples/my_mechanism/conf",
        "experiment=utility_vs_n",
        "dataset=gaussian10",
        "scale=smoke",
        "mechanism=ppca,my_gauss",
        f"results_dir={results}",
        "progress=false",
        "quiet=true",
        "print_record=true",
    ]
    proc = subprocess.run(sweep, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summaries = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [s["mechanism"] for s in summaries] == ["ppca", "my_gauss"]

    from experiments.store.store import ResultStore

    df = ResultStore(results).load(experiment="utility_vs_n", dataset="gaussian10")
    # smoke scale: n in {500, 5000}, 1 subset; restarts: ppca 1, others 2
    assert sorted(df[df.mechanism == "ppca"].n) == [500, 5000]
    mine = df[df.mechanism == "my_gauss"]
    assert sorted(mine.n) == [500, 500, 5000, 5000]
    assert set(mine.neighbouring) == {"replace-one-row"}
    assert set(mine.epsilon) == {0.1} and set(mine.delta) == {0.01}
    assert ((mine.q_F > 0) & (mine.q_F <= mine.q_F_opt + 1e-12)).all()
    assert mine.components_sha256.nunique() == 4  # four different releases (two seeds x two n)

    # a stored run of the outside mechanism re-runs bit for bit (the record holds the resolved _target_)
    rid = mine.sort_values("n").record_id.iloc[-1]
    rerun = subprocess.run(
        [
            sys.executable,
            "run.py",
            f"results_dir={results}",
            f"+rerun={rid}",
            "quiet=true",
            "print_record=true",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert json.loads(rerun.stdout.strip().splitlines()[-1])["reproduced"] is True

    out = tmp_path / "fig"
    plot = subprocess.run(
        [
            sys.executable,
            "examples/my_mechanism/plot.py",
            "--results",
            str(results),
            "--out",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert plot.returncode == 0, plot.stderr[-3000:]
    # the per-mechanism means it prints are the ones docs/own_mechanism.md shows (4 decimals: same
    # seeds, same code; only rounding-level differences between CPUs could move them, far below 1e-4)
    printed = [line for line in plot.stdout.splitlines() if "mean q_F by n:" in line]
    documented = [
        line
        for line in (REPO / "docs" / "own_mechanism.md").read_text().splitlines()
        if "mean q_F by n:" in line
    ]
    assert sorted(printed) == sorted(documented)
    png = out / "utility_vs_n_gaussian10.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert "my_gauss mean q_F by n" in plot.stdout and "ppca mean q_F by n" in plot.stdout
