"""The experiments beyond the paper end to end at scale=smoke: dimension scaling, online regret, their figures, and
single runs of the six mechanisms beyond the JMLR paper through run.py on the spiked data set."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from experiments.runs.extra import (
    doubling_grid,
    fit_slope,
    run_dimension_scaling,
    run_online_regret,
    thin_positions,
)
from experiments.store.store import ResultStore
from tests.hydra_helpers import compose_cfg

REPO = Path(__file__).resolve().parents[3]
CONTRACT = (
    "dataset",
    "n",
    "d",
    "k",
    "mechanism",
    "epsilon",
    "delta",
    "neighbouring",
    "seed",
    "q_F",
    "q_F_opt",
    "wall_seconds",
)


def test_grid_helpers():
    assert doubling_grid(250, 2000) == [250, 500, 1000, 2000]
    assert doubling_grid(250, 1999) == [250, 500, 1000]
    t = thin_positions(5000, 200)
    assert len(t) <= 200 and t[0] == 1 and t[-1] == 5000 and np.all(np.diff(t) > 0)
    assert thin_positions(3, 200).tolist() == [1, 2, 3]
    assert fit_slope([10, 100, 1000], [5, 50, 500]) == pytest.approx(1.0)
    assert fit_slope([10, 100], [5, None]) is None


def test_dimension_scaling_runs_resumes_and_finds_n_star(tmp_path):
    cfg = compose_cfg(
        [
            "experiment=dimension_scaling",
            "mechanism=mod_sulq",
            "scale=smoke",
            f"results_dir={tmp_path}",
            "quiet=true",
        ]
    )
    first = run_dimension_scaling(cfg)
    assert first["records_written"] > 0
    df = ResultStore(tmp_path).load(experiment="dimension_scaling")
    runs, summ = df[df.kind == "run"], df[df.kind == "summary"]
    assert sorted(summ.d) == [6, 12] and set(runs.d) == {6, 12}
    assert set(runs.restart) == {0, 1} and set(runs.neighbouring) == {"replace-one-row"}
    assert set(runs.epsilon) == {0.5} and runs.projector_distance.between(0, 1).all()
    assert set(runs.guarantee_status) == {"proven"} and set(summ.guarantee_status) == {"proven"}
    assert (runs.q_F <= runs.q_F_opt + 1e-12).all()
    for _, s in summ.iterrows():  # n* is the first n whose mean utility reaches the target
        g = runs[runs.d == s.d].groupby("n").q_F_normalised.mean()
        reached = g[g >= 0.9]
        expect = None if reached.empty else int(reached.index.min())
        assert (None if s.n_star is None or s.n_star != s.n_star else int(s.n_star)) == expect
        assert list(g.index) == sorted(g.index) and (expect is None or g.index.max() == expect)
    assert first["n_star"] == {
        int(r.d): (None if r.n_star != r.n_star else int(r.n_star)) for _, r in summ.iterrows()
    }
    again = run_dimension_scaling(cfg)
    assert again["records_written"] == 0 and again["n_star"] == first["n_star"]
    assert len(ResultStore(tmp_path).load()) == len(df)


def test_dimension_scaling_bottom_counts_as_zero(tmp_path):
    # subspace_approx with eps 0.05 on n <= 500: t = 737 blocks > n rows -> ⊥ (q_F null), counted as utility 0
    cfg = compose_cfg(
        [
            "experiment=dimension_scaling",
            "mechanism=subspace_approx",
            "scale=smoke",
            "experiment.dims=[6]",
            "experiment.n_max=500",
            "epsilon=0.05",
            f"results_dir={tmp_path}",
            "quiet=true",
        ]
    )
    res = run_dimension_scaling(cfg)
    df = ResultStore(tmp_path).load(experiment="dimension_scaling")
    runs = df[df.kind == "run"]
    assert (runs.status == "bottom").any() and runs.q_F.isna().any()
    assert res["n_star"] == {6: None}
    s = df[df.kind == "summary"].iloc[0]
    assert s.search[0]["bottom_fraction"] > 0


def test_online_regret_runs_and_resumes(tmp_path):
    cfg = compose_cfg(
        ["experiment=online_regret", "scale=smoke", f"results_dir={tmp_path}", "quiet=true"]
    )
    first = run_online_regret(cfg)
    assert first["records_written"] == 2
    df = ResultStore(tmp_path).load(experiment="online_regret")
    assert sorted(df.tree) == [False, True]
    for _, r in df.iterrows():
        t = np.asarray(r["curve.t"])
        assert len(t) <= 200 and t[-1] == 128
        assert r["curve.regret"][-1] == pytest.approx(r.regret) and r["curve.opt"][
            -1
        ] == pytest.approx(r.opt)
        assert len(r["curve.theorem8"]) == len(t) == len(r["curve.theorem9"])
        assert 0 <= r.q_F <= r.q_F_opt + 1e-12 and r.d == 8 and r.n == 128
        assert "subspaces" not in r.index and "release.subspaces" not in r.index
        assert (
            "diagnostics_not_private.regret_curve" not in r.index
            and "diagnostics_not_private.gains" not in r.index
        )
        # regret and OPT come from the raw rows: recorded, but only among the labelled diagnostics
        assert (
            r["diagnostics_not_private.regret"] == pytest.approx(r.regret)
            and "release.regret" not in r.index
        )
    tree = df[df.tree].iloc[0]
    assert (
        tree.epsilon == 1.0 and tree.guarantee_exact
    )  # conf/experiment/online_regret.yaml: epsilon 1.0
    fpl = df[~df.tree].iloc[0]
    assert fpl.epsilon > 1.0 and not fpl.guarantee_exact  # composed bound over m releases
    assert run_online_regret(cfg)["records_written"] == 0


@pytest.mark.slow
def test_figures_from_a_small_store(tmp_path):
    root = tmp_path / "store"
    run_dimension_scaling(
        compose_cfg(
            [
                "experiment=dimension_scaling",
                "mechanism=pca",
                "scale=smoke",
                f"results_dir={root}",
                "quiet=true",
            ]
        )
    )
    store = ResultStore(root)
    for mech, slope in (
        ("mod_sulq", 1.5),
        ("ppca", 1.0),
    ):  # synthetic summaries: 3 dims, one censored
        for d in (10, 30, 100):
            n_star = None if (mech == "mod_sulq" and d == 100) else int(300 * d**slope)
            store.write(
                {
                    "run_key": {"m": mech, "d": d},
                    "experiment": "dimension_scaling",
                    "kind": "summary",
                    "mechanism": mech,
                    "d": d,
                    "k": 2,
                    "epsilon": 0.5,
                    "target": 0.9,
                    "n_star": n_star,
                    "n_grid": [250, 500, 1000000],
                    "timestamp": "t",
                }
            )
    run_online_regret(
        compose_cfg(
            ["experiment=online_regret", "scale=smoke", f"results_dir={root}", "quiet=true"]
        )
    )
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "make_figures.py"),
            "--results",
            str(root),
            "--out",
            str(out),
            "--only",
            "dimension_scaling,online_regret",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    for name in ("dimension_scaling", "online_regret"):
        for ext in ("png", "pdf"):
            assert (out / "figures" / f"{name}.{ext}").stat().st_size > 1000
    # the compact summary alone draws the same figures, byte for byte (the curated quick figures
    # are drawn from it)
    from experiments.store.summary import update_summary

    update_summary(root, tmp_path / "summary")
    again = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "make_figures.py"),
            "--summary",
            str(tmp_path / "summary"),
            "--out",
            str(tmp_path / "again"),
            "--only",
            "dimension_scaling,online_regret",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    for name in ("dimension_scaling", "online_regret"):
        for ext in ("png", "pdf"):
            assert (tmp_path / "again" / "figures" / f"{name}.{ext}").read_bytes() == (
                out / "figures" / f"{name}.{ext}"
            ).read_bytes(), name


@pytest.mark.slow
def test_figure_guides_and_labels(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from experiments.figures import extras as make_figures

    store = ResultStore(tmp_path)
    for d in (10, 30, 100):
        store.write(
            {
                "run_key": {"d": d},
                "experiment": "dimension_scaling",
                "kind": "summary",
                "mechanism": "ppca",
                "d": d,
                "k": 2,
                "epsilon": 0.5,
                "target": 0.9,
                "n_star": 40 * d,
                "n_grid": [1],
                "timestamp": "t",
            }
        )
    captured = []
    real_save = make_figures.save
    make_figures.save = lambda fig, out, name: captured.append(fig) or real_save(fig, out, name)
    try:
        make_figures.fig_dimension_scaling(store.load(), tmp_path)
    finally:
        make_figures.save = real_save
    ax = captured[0].axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("slope 1.00" in x for x in labels)
    for guide in ("√d", "∝ d (", "d^{3/2}"):
        assert any(guide in x and "guide" in x for x in labels)
    assert (
        ax.get_xlabel()
        and ax.get_ylabel()
        and ax.get_xscale() == "log"
        and ax.get_yscale() == "log"
    )


def _scaling_summary(mech, d, n_star, n_largest=None, floor=250):
    """A dimension-scaling summary record and its first run (at the grid's smallest n)."""
    return [
        {
            "experiment": "dimension_scaling",
            "kind": "summary",
            "mechanism": mech,
            "d": d,
            "k": 2,
            "epsilon": 0.5,
            "target": 0.9,
            "n_star": n_star,
            "n_largest_searched": n_star if n_star is not None else n_largest,
            "timestamp": "t",
            "scale": "quick",
        },
        {
            "experiment": "dimension_scaling",
            "kind": "run",
            "mechanism": mech,
            "d": d,
            "n": floor,
            "neighbouring": "none" if mech == "pca" else RELATIONS[mech],
            "timestamp": "t",
            "scale": "quick",
        },
    ]


RELATIONS = {
    "analyze_gauss": "add-remove-one-row",
    "mod_sulq": "replace-one-row",
    "subspace_approx": "replace-one-row",
    "ppca": "replace-one-row",
    "noisy_power": "replace-one-row",
}


def _draw_scaling(rows, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    from experiments.figures import extras

    captured = []
    real = extras.save
    extras.save = lambda fig, out, name: captured.append(fig) or real(fig, out, name)
    try:
        extras.fig_dimension_scaling(pd.DataFrame(rows), tmp_path)
    finally:
        extras.save = real
    return captured[0]


def test_dimension_scaling_slope_only_on_three_points_above_the_grid_floor(tmp_path):
    """A slope is printed for 3 distinct d above the grid's smallest n; none for 2 points, and
    none for a curve at the grid's smallest n (n* there is only an upper bound): never 'slope 0.00'
    for PCA's flat line at the floor."""
    rows = []
    for d in (10, 30, 100):
        rows += _scaling_summary("analyze_gauss", d, 100 * d)  # slope 1
        rows += _scaling_summary("pca", d, 250)  # at the floor
    rows += _scaling_summary("mod_sulq", 10, 16000) + _scaling_summary("mod_sulq", 30, 128000)
    rows += _scaling_summary("mod_sulq", 100, None, n_largest=256000)
    fig = _draw_scaling(rows, tmp_path)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    gauss = next(x for x in labels if x.startswith("analyze_gauss"))
    pca = next(x for x in labels if x.startswith("Non-private PCA"))
    sulq = next(x for x in labels if x.startswith("MOD-SULQ"))
    assert "slope 1.00" in gauss
    assert "slope" in pca and "no slope" in pca and "250" in pca and "0.00" not in pca
    assert "no slope" in sulq and "n* found at 2 d" in sulq and "1.89" not in sulq


@pytest.mark.slow
def test_dimension_scaling_labels_each_curve_with_its_neighbouring_relation(tmp_path):
    """Analyze Gauss (add-remove-one-row by default) and the replace-one-row mechanisms at one ε:
    each curve says its relation, and the title says the labels do; one relation for all goes in
    the title."""
    rows = []
    for d in (10, 30, 100):
        rows += _scaling_summary("analyze_gauss", d, 100 * d)
        rows += _scaling_summary("mod_sulq", d, 1000 * d)
        rows += _scaling_summary("pca", d, 250)
    fig = _draw_scaling(rows, tmp_path)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(x.startswith("analyze_gauss (add-remove-one-row)") for x in labels)
    assert any(x.startswith("MOD-SULQ (replace-one-row)") for x in labels)
    assert "neighbouring relation in its label" in ax.get_title()
    same = [r for r in rows if r["mechanism"] != "analyze_gauss"]
    ax = _draw_scaling(same, tmp_path).axes[0]
    assert "ε = 0.5 (replace-one-row)" in ax.get_title()
    assert not any("(replace-one-row)" in t.get_text() for t in ax.get_legend().get_texts())


def test_dimension_scaling_memory_cap_markers_do_not_sit_on_each_other(tmp_path):
    """Three searches stopped by the memory cap at the same (d, n), where a fourth mechanism's n* is
    drawn: the triangles are side by side, none on another or on the reached point."""
    rows = []
    for d in (10, 30, 100):
        rows += _scaling_summary("noisy_power", d, 640 * d)
    for mech in ("mod_sulq", "ppca", "subspace_approx"):
        rows += _scaling_summary(mech, 10, 16000) + _scaling_summary(mech, 30, 32000)
        rows += _scaling_summary(mech, 100, None, n_largest=64000)
    fig = _draw_scaling(rows, tmp_path)
    fig.canvas.draw()
    ax = fig.axes[0]
    points = []
    for line in ax.lines:
        if line.get_marker() in ("^", "o", "x"):
            xy = line.get_transform().transform(line.get_xydata())
            points += [(line.get_marker(), line.get_markersize(), p) for p in xy]
    caps = [(ms, p) for m, ms, p in points if m == "^"]
    assert len(caps) == 3
    px = fig.dpi / 72.0
    for ms, p in caps:
        for _, ms2, q in points:
            if q is p:
                continue
            assert np.max(np.abs(p - q)) >= (ms + ms2) / 2 * px * 0.99, (p, q)


def test_dimension_scaling_figure_from_the_committed_quick_summary(tmp_path):
    """The committed quick summary: no 'slope 0.00', Analyze Gauss's relation differs from the
    others' and is labelled, and no two memory-cap triangles share a position."""
    from experiments.store.summary import load_summary

    df = load_summary(REPO / "results/quick/summary")
    fig = _draw_scaling(df, tmp_path)
    fig.canvas.draw()
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert not any("slope 0.00" in x for x in labels)
    assert any(x.startswith("analyze_gauss (add-remove-one-row)") for x in labels)
    assert any(x.startswith("MOD-SULQ (replace-one-row)") for x in labels)
    caps = [
        tuple(np.round(line.get_transform().transform(line.get_xydata())[0]))
        for line in ax.lines
        if line.get_marker() == "^"
    ]
    assert len(caps) >= 2 and len(set(caps)) == len(caps)


@pytest.mark.slow
@pytest.mark.parametrize(
    "mechanism",
    [
        "noisy_power",
        "streaming_power",
        "online_pca",
        "private_sketch",
        "subspace_exact",
        "subspace_approx",
    ],
)
def test_single_run_on_spiked(tmp_path, mechanism):
    env = dict(os.environ, MPLBACKEND="Agg", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "run.py"),
            f"mechanism={mechanism}",
            "dataset=spiked",
            "scale=smoke",
            "dataset.size=1500",
            f"results_dir={tmp_path}",
            "quiet=true",
            "print_record=true",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(proc.stdout.strip().splitlines()[-1])
    for key in CONTRACT:
        assert key in rec
    assert (
        rec["mechanism"] == mechanism
        and rec["dataset"] == "spiked"
        and rec["n"] == 1500
        and rec["d"] == 50
    )
    assert rec["k"] == 2 and rec["delta"] == 0.01
    assert "info" not in rec and rec["release"]["status"] == rec["status"]
    assert "n_clipped" in rec["diagnostics_not_private"] and "n_clipped" not in rec["release"]
    assert (
        rec["guarantee_status"] == "proven"
    )  # private_sketch's paper lift: proven by its exact profile
    if rec["q_F"] is None:
        assert rec["status"] == "bottom" and rec["release"]["reason"]
    else:
        assert 0 <= rec["q_F"] <= rec["q_F_opt"] + 1e-12 and rec["status"] == "ok"
    if mechanism == "online_pca":
        diag = rec["diagnostics_not_private"]
        assert diag["regret"] == pytest.approx(diag["opt"] - diag["cumulative_gain"])
        assert all(
            not isinstance(v, (list, dict)) for v in [*diag.values(), *rec["release"].values()]
        )
        assert rec["neighbouring"] == "zero-out-one-row"
    assert len(list((tmp_path / "records").glob("*.json"))) == 1
