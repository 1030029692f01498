"""The committed figures and tables are what the current code draws from the committed summaries, and
the documented commands leave every committed file untouched (one writer per output file)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.figures import cli
from experiments.figures import paper as make_figures
from experiments.figures import peers as plot_peers

REPO = Path(__file__).resolve().parents[3]

#: curated directory per scale (scripts/curate.sh)
CURATED = {"quick": REPO / "results" / "quick", "paper": REPO / "results" / "paper_scale"}
#: committed figures no summary can redraw: the calibration figure is drawn from the records of its own
#: sweeps (docs/calibration.md), which no committed summary holds
NOT_FROM_A_SUMMARY = {"calibration.png", "calibration.pdf"}


def _differing(drawn: Path, committed: Path) -> list[str]:
    return [
        p.name
        for p in sorted(drawn.iterdir())
        if not (committed / p.name).exists() or (committed / p.name).read_bytes() != p.read_bytes()
    ]


@pytest.mark.slow
@pytest.mark.parametrize("scale", sorted(CURATED))
def test_committed_figures_and_tables_are_drawn_from_the_committed_summary(scale, tmp_path):
    """Byte for byte: PNG and PDF carry no date and are drawn deterministically.  A figure changed in the
    code without `scripts/curate.sh SCALE` being run fails here (and so does a stale summary)."""
    cur = CURATED[scale]
    made = cli.make_all(REPO / "results", tmp_path, scale=scale, summary=cur / "summary")
    assert made.get("fig3") and made.get("table1"), (
        "the summary holds no Figure 3 or Table 1 records"
    )
    assert _differing(tmp_path / "figures", cur / "figures") == []
    assert _differing(tmp_path / "tables", cur / "tables") == []
    drawn = {p.name for p in (tmp_path / "figures").iterdir()}
    if scale == "quick" and (cur / "tables" / "peers.csv").exists():
        assert (
            plot_peers.main(
                [
                    "--tables",
                    str(cur / "tables"),
                    "--scale",
                    scale,
                    "--out",
                    str(tmp_path / "peers"),
                ]
            )
            == 0
        )
        assert _differing(tmp_path / "peers", cur / "figures") == []
        drawn |= {p.name for p in (tmp_path / "peers").iterdir()}
    committed = {p.name for p in (cur / "figures").iterdir()}
    assert committed - drawn - NOT_FROM_A_SUMMARY == set(), (
        "committed figures no code draws from the summary"
    )


@pytest.mark.slow
def test_every_drawn_figure_names_its_scale(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from experiments.store.summary import load_summary

    texts = []
    real = make_figures.save

    def capture(fig, out, name):
        texts.append(
            " ".join(t.get_text() for t in fig.findobj(match=lambda o: hasattr(o, "get_text")))
        )
        return real(fig, out, name)

    monkeypatch.setattr(make_figures, "save", capture)
    df = load_summary(CURATED["paper"] / "summary")
    make_figures.utility_vs_n(df, ["census", "kddcup"], tmp_path, "fig3", "Figure 3")
    make_figures.fig5(df, tmp_path)
    make_figures.fig1(df, tmp_path)
    make_figures.utility_vs_n(
        df[df.experiment == "utility_vs_n"].assign(scale="smoke"),
        ["census"],
        tmp_path,
        "fig3s",
        "Figure 3",
    )
    plt.close("all")
    assert len(texts) == 4 and all("scale: " in t for t in texts)
    assert "scale: paper" in texts[0] and "scale: paper" in texts[1] and "scale: smoke" in texts[3]
    assert "scale: none" in texts[2]  # Figure 1 is an analytic bound


@pytest.mark.slow
def test_make_figures_refuses_to_write_a_curated_directory_without_curate(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "make_figures.py"),
            "--summary",
            str(CURATED["quick"] / "summary"),
            "--scale",
            "quick",
            "--out",
            str(CURATED["quick"]),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and "curate" in proc.stderr
    assert cli.default_out(Path("results"), "smoke") == Path("results/drawn/smoke")
    assert not cli.is_curated(REPO / "results" / "drawn" / "smoke")
    assert cli.is_curated(REPO / "results" / "paper_scale" / "figures")


@pytest.mark.slow
def test_make_figures_on_a_curated_directory_says_how_to_draw_its_summary():
    """``--results results/quick`` without ``--out``: the default output lies inside the curated
    directory; the refusal names what the user typed and the command that works, not an --out."""
    proc = subprocess.run(
        [sys.executable, "scripts/make_figures.py", "--results", "results/quick"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert "--results results/quick is a curated" in proc.stderr
    assert "--summary results/quick/summary --out DIR" in proc.stderr
    assert "--out results/quick" not in proc.stderr


@pytest.mark.slow
def test_summarize_results_refuses_to_write_a_curated_summary_without_curate(tmp_path):
    summary = CURATED["quick"] / "summary" / "records.csv"
    before = summary.read_bytes()
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "summarize_results.py"),
            "--results",
            str(tmp_path),
            "--out",
            str(CURATED["quick"] / "summary"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and "curate" in proc.stderr
    assert summary.read_bytes() == before


def _copy_of_the_repository(dest: Path) -> Path:
    """The working tree as it would be committed (tracked and unignored files), in a new git repository."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    for name in filter(None, files):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    subprocess.run([*git, "add", "-A"], cwd=dest, check=True)
    subprocess.run([*git, "commit", "-qm", "snapshot"], cwd=dest, check=True)
    return dest


@pytest.mark.slow
def test_the_documented_commands_leave_every_committed_file_untouched(tmp_path):
    """run.py (a single run, Table 1, a small sweep) and the figure scripts with their defaults write only
    into the local, ignored results store: `git status` stays clean."""
    repo = _copy_of_the_repository(tmp_path / "repo")
    env = dict(
        os.environ,
        MPLBACKEND="Agg",
        PYTHONPATH=str(repo),
        PRIVPCA_DATA_DIR=str(repo / "tests/fixtures/uci"),
    )
    py = sys.executable
    commands = [
        [py, "run.py", "scale=smoke"],
        [py, "run.py", "experiment=table1"],
        [py, "run.py", "-m", "scale=smoke", "mechanism=pca,mod_sulq", "seed=1,2"],
        [
            py,
            "run.py",
            "experiment=utility_vs_n",
            "dataset=gaussian10",
            "mechanism=mod_sulq",
            "scale=smoke",
        ],
        [py, "scripts/summarize_results.py", "--scale", "smoke"],
        [py, "scripts/make_figures.py"],
        [py, "scripts/make_figures.py", "--results", "results", "--scale", "smoke"],
        [py, "scripts/make_figures.py", "--summary", "results/quick/summary", "--scale", "quick"],
    ]
    for cmd in commands:
        proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{cmd}:\n{proc.stdout}\n{proc.stderr}"
    assert (repo / "results" / "records").is_dir() and (
        repo / "results" / "drawn" / "smoke" / "tables"
    ).is_dir()
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert status == ""


@pytest.mark.slow
@pytest.mark.parametrize(
    "script,args,needle",
    [
        ("make_figures.py", ["--only", "fig3,tabel2"], "--only tabel2: no such figure or table"),
        ("make_figures.py", ["--scale", "quik"], "--scale quik: no such scale"),
        ("make_figures.py", ["--results", "{missing}"], "no records/ directory"),
        ("summarize_results.py", ["--scale", "quik"], "--scale quik: no such scale"),
        ("summarize_results.py", ["--results", "{missing}"], "no records/ directory"),
    ],
)
def test_a_typo_in_a_drawing_or_summary_command_is_refused(tmp_path, script, args, needle):
    """Before, each of these drew or summarised nothing (or a directory named after the typo) and
    exited 0."""
    store = tmp_path / "store"
    (store / "records").mkdir(parents=True)
    args = [a.replace("{missing}", str(tmp_path / "missing")) for a in args]
    if "--results" not in args:
        args = ["--results", str(store), *args]
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / script), *args, "--out", str(tmp_path / "out")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "missing").exists()
