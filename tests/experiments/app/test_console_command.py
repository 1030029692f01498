"""The ``privpca`` console command: the entry point ``pyproject.toml`` declares, the same app as
``run.py``, its ``--help``; and what importing the harness costs (the command line and Hydra load
only with :mod:`experiments.app`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
#: the console command, as its installed script calls it
PRIVPCA = [sys.executable, "-c", "from experiments.app.lifecycle import main; main()"]


def _run(command, *args, cwd=REPO):
    return subprocess.run(
        [*command, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=dict(os.environ, MPLBACKEND="Agg"),
        timeout=300,
    )


def test_the_project_scripts_entry_point_resolves_to_the_command_line():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    entry = metadata.EntryPoint(name="privpca", value=scripts["privpca"], group="console_scripts")
    from experiments.app.lifecycle import main

    assert entry.load() is main


@pytest.mark.slow
def test_privpca_runs_the_same_app_as_run_py(tmp_path):
    """Same overrides, same record (id, result, configuration), also from another directory."""
    args = ["mechanism=mod_sulq", "n=1000", "seed=3", "scale=smoke", "print_record=true"]
    via_run_py = _run(
        [sys.executable, str(REPO / "run.py")], *args, f"results_dir={tmp_path / 'a'}"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    via_privpca = _run(PRIVPCA, *args, f"results_dir={tmp_path / 'b'}", cwd=elsewhere)
    records = []
    for proc in (via_run_py, via_privpca):
        assert proc.returncode == 0, proc.stderr
        records.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    a, b = records
    assert a["record_id"] == b["record_id"] and a["q_F"] == b["q_F"]
    a["config"].pop("results_dir"), b["config"].pop("results_dir")
    assert a["config"] == b["config"]
    assert list(elsewhere.iterdir()) == []  # nothing written where the command ran


def test_privpca_refuses_a_mistake_in_one_line(tmp_path):
    proc = _run(PRIVPCA, "mechanism=ppcaa", f"results_dir={tmp_path}")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().startswith("Error (bad value): unknown mechanism 'ppcaa'; valid: ")
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [PRIVPCA, [sys.executable, str(REPO / "run.py")]])
def test_help_lists_the_groups_their_options_and_the_typed_keys(command):
    proc = _run(command, "--help")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    page = proc.stdout
    assert "Config groups" in page and "Top-level keys" in page
    groups = {line.split()[0]: line for line in page.splitlines() if line.startswith("  ")}
    for group in ("dataset", "mechanism", "experiment", "scale", "hydra/launcher"):
        assert group in groups, page
    assert "ppca*" in page and "gaussian10*" in page and "local_parallel" in page  # the defaults
    assert groups["epsilon"].split() == ["epsilon", "float", "0.1"]
    assert groups["n"].split() == ["n", "int", "or", "null", "null"]
    assert groups["k"].split() == ["k", "int", "${dataset.k}"]
    assert "+rerun" in groups
    assert "Hydra" in page and "--hydra-help" in page  # Hydra's own page stays reachable


def test_help_shows_the_choices_of_the_command_line():
    """An experiment that selects its mechanism, and a --config-dir adding one: shown as chosen."""
    proc = _run(
        PRIVPCA,
        "experiment=online_regret",
        "--config-dir",
        str(REPO / "examples" / "my_mechanism" / "conf"),
        "--help",
    )
    assert proc.returncode == 0, proc.stderr
    assert "online_pca*" in proc.stdout and "spiked*" in proc.stdout and "my_gauss" in proc.stdout


@pytest.mark.parametrize(
    "module,absent",
    [
        ("experiments.errors", ("hydra", "pandas", "omegaconf", "experiments.app")),
        ("experiments.threads", ("hydra", "pandas", "experiments.app")),
        ("experiments.store.store", ("hydra", "experiments.app")),
        ("experiments.app.schema", ("hydra", "pandas")),  # Hydra only when the schema registers
    ],
)
def test_importing_a_harness_module_does_not_import_the_command_line(module, absent):
    code = f"import sys, {module}; print(','.join(m for m in {list(absent)!r} if m in sys.modules))"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"import {module} imported {proc.stdout.strip()}"
