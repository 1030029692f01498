"""Every command in the README's code blocks runs as typed and exits with status 0.

The conventions below are stated in the README ("Commands in this README"), so a reader knows how a
command shown there is shortened here:

* A ```bash block holds commands, one per line (a trailing ``\\`` continues a line, ``#`` starts a
  comment); a ```python block is one program.  Other blocks (```text, ```yaml) are not run.
* ``.venv/bin/python`` is the interpreter running this test (under ``make test``, that very file).
* ``make run [ARGS="..."]`` runs as ``.venv/bin/python run.py ...`` (the Makefile's recipe, checked
  below); ``make test`` is the command that runs this test and is not run again.
* Smoke scale: an HTML comment ``<!-- smoke: COMMAND => SMOKE FORM -->`` on a line of its own replaces
  COMMAND (its text with continuation lines joined by one space) by SMOKE FORM.  Otherwise a
  ``run.py`` command runs with ``scale=smoke`` (replacing any ``scale=``) and
  ``scripts/reproduce.sh quick|paper`` runs as ``scripts/reproduce.sh smoke`` and a script's
  ``--scale quick|paper`` as ``--scale smoke``.  A smoke form identical to an earlier command's runs
  once.
* All commands run in order, in one temporary copy of the repository's files (without ``.git``,
  ``.venv``, ``data/`` and the results store), with ``/tmp/`` in a command moved into the temporary
  directory: the repository itself is never written.
* A command that reads the raw UCI files (a real data set named, or ``reproduce.sh``) needs
  ``PRIVPCA_DATA_DIR``; without it the command is skipped (a failure when ``CI=true``).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, require_real_data

README = REPO / "README.md"
SMOKE_NOTE = re.compile(r"^<!--\s*smoke:\s*(.+?)\s*=>\s*(.+?)\s*-->", re.S | re.M)
BLOCK = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
REAL_DATA = re.compile(
    r"dataset=\S*\b(kddcup|census|insurance|localization)\b|reproduce\.sh|"
    r"experiment=(table1|classification|gibbs_convergence|utility_vs_n|peers)\b|"
    r"PRIVPCA_DATA_DIR"
)
# copied into the temporary project: everything but what is large, generated or version control
SKIP_NAMES = {".git", ".venv", ".venv-peers", "__pycache__", ".pytest_cache", ".hypothesis"}
SKIP_PATHS = {REPO / "data", REPO / "results" / "records", REPO / "results" / "hydra"}
TIMEOUT_S = 600


def _bash_commands(body: str) -> list[str]:
    """The commands of one bash block: continuation lines joined, comments and blank lines dropped."""
    commands, current = [], ""
    for line in body.splitlines():
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            current += stripped[:-1].strip() + " "
            continue
        current += stripped.strip()
        text = _strip_comment(current).strip()
        if text:
            commands.append(text)
        current = ""
    return commands


def _strip_comment(line: str) -> str:
    """The line without a trailing shell comment (a ``#`` outside quotes, after a space or at the start)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def readme_commands(text: str) -> list[tuple[str, str]]:
    """(kind, command) for every runnable code block of the README, in order."""
    out = []
    for lang, body in BLOCK.findall(text):
        if lang in ("bash", "sh", "shell"):
            out += [("bash", c) for c in _bash_commands(body)]
        elif lang == "python":
            out.append(("python", body))
    return out


def smoke_notes(text: str) -> dict[str, str]:
    return {" ".join(a.split()): " ".join(b.split()) for a, b in SMOKE_NOTE.findall(text)}


def smoke_form(command: str, notes: dict[str, str]) -> str | None:
    """The command as the test runs it, or None for ``make test``."""
    if command in notes:
        return notes[command]
    if command == "make test":
        return None
    m = re.fullmatch(r"make run(?:\s+ARGS=(\"[^\"]*\"|'[^']*'))?", command)
    if m:
        command = ".venv/bin/python run.py " + (shlex.split(m.group(1))[0] if m.group(1) else "")
    if re.search(r"\brun\.py\b", command):
        if re.search(r"(?<![\w.])scale=\w+", command):
            command = re.sub(r"(?<![\w.])scale=\w+", "scale=smoke", command)
        else:
            command = command.rstrip() + " scale=smoke"
    command = re.sub(r"(scripts/reproduce\.sh)\s+(quick|paper)\b", r"\1 smoke", command.strip())
    return re.sub(r"--scale[ =](quick|paper)\b", "--scale smoke", command)


def _cases():
    text = README.read_text()
    notes = smoke_notes(text)
    cases, seen = [], set()
    for i, (kind, command) in enumerate(readme_commands(text)):
        run_as = command if kind == "python" else smoke_form(command, notes)
        if run_as is None or run_as in seen:
            continue
        seen.add(run_as)
        label = f"{i:02d}-" + re.sub(r"\W+", "_", command.splitlines()[0])[:60]
        marks = [pytest.mark.slow, pytest.mark.realdata] if REAL_DATA.search(run_as) else []
        cases.append(pytest.param(kind, command, run_as, id=label, marks=marks))
    return cases


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A copy of the repository's files, in which the commands run."""
    root = tmp_path_factory.mktemp("readme")
    dst = root / "project"

    def ignore(directory, names):
        return [n for n in names if n in SKIP_NAMES or Path(directory, n) in SKIP_PATHS]

    shutil.copytree(REPO, dst, ignore=ignore, symlinks=True)
    # .venv/bin/python: this interpreter (a wrapper, since a symlink outside its venv loses the venv)
    python = dst / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    python.chmod(0o755)
    return dst


def _environment(project: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(project)
    env["MPLBACKEND"] = "Agg"
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    return env


@pytest.mark.slow
@pytest.mark.parametrize("kind, command, run_as", _cases())
def test_readme_command_runs(project, kind, command, run_as):
    if REAL_DATA.search(run_as):
        require_real_data()
    tmp = project.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    if kind == "python":
        argv = [str(project / ".venv" / "bin" / "python"), "-c", run_as]
    else:
        argv = ["bash", "-c", "set -eo pipefail; " + run_as.replace("/tmp/", f"{tmp}/")]
    proc = subprocess.run(
        argv,
        cwd=project,
        env=_environment(project),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert proc.returncode == 0, (
        f"README command failed (exit {proc.returncode}):\n  {command}\n"
        f"run as:\n  {run_as}\n--- stderr (tail) ---\n{proc.stderr[-3000:]}"
    )


def test_readme_has_commands_and_one_python_form():
    """The README shows its commands, every Python call as ``.venv/bin/python`` (no bare ``python``)."""
    text = README.read_text()
    commands = [c for kind, c in readme_commands(text) if kind == "bash"]
    assert len(commands) >= 10
    bare = [c for c in commands if re.search(r"(^|\s|;)python3?\s", c)]
    assert not bare, f"commands calling a bare python (fails without the venv activated): {bare}"
    for line in text.splitlines():  # inline code outside blocks follows the same form
        for code in re.findall(r"`([^`]+)`", line):
            assert not re.match(r"python3? (run\.py|scripts/|-m )", code), (
                f"bare python in README: {code}"
            )


def test_readme_scripts_run_the_project_python():
    """A shell script the README runs calls Python as ``.venv/bin/python`` unless ``PYTHON`` says
    otherwise: a bare ``python`` fails without an activated environment (and a smoke form may not
    run the script itself)."""
    text = README.read_text()
    scripts = {m for _, c in readme_commands(text) for m in re.findall(r"scripts/[\w.-]+\.sh", c)}
    assert scripts, "the README runs no shell script"
    for name in sorted(scripts):
        path = REPO / name
        if not path.exists():
            continue  # the command itself fails in test_readme_command_runs
        body = path.read_text()
        if "python" in body.replace("#!/usr/bin/env bash", ""):
            assert re.search(r"PYTHON:?[-=]\.venv/bin/python", body), (
                f"{name} does not default to .venv/bin/python"
            )


def test_every_smoke_note_matches_a_command():
    """A smoke note whose command left the README would silently stop shortening anything."""
    text = README.read_text()
    commands = {c for kind, c in readme_commands(text) if kind == "bash"}
    stale = [c for c in smoke_notes(text) if c not in commands]
    assert not stale, f"smoke notes for commands not in the README: {stale}"


def test_make_run_is_run_py():
    """The test runs ``make run ARGS=...`` as ``.venv/bin/python run.py ...``: the Makefile's recipe."""
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^run:.*\n\t\$\(PY\) run\.py \$\(ARGS\)\s*$", makefile, re.M)
    assert re.search(r"^PY\s*:=\s*\$\(VENV\)/bin/python", makefile, re.M)
    assert re.search(r"^VENV\s*:=\s*\.venv", makefile, re.M)


def test_smoke_form_rules():
    """The shortening rules themselves (so a README command is never run at a larger scale)."""
    assert smoke_form(".venv/bin/python run.py", {}) == ".venv/bin/python run.py scale=smoke"
    assert (
        smoke_form(".venv/bin/python run.py a=1 scale=paper b=2", {})
        == ".venv/bin/python run.py a=1 scale=smoke b=2"
    )
    assert smoke_form(".venv/bin/python run.py hydra.launcher.scale=3", {}).endswith(
        "scale=3 scale=smoke"
    )
    assert (
        smoke_form('make run ARGS="mechanism=pca dataset=kddcup"', {})
        == ".venv/bin/python run.py mechanism=pca dataset=kddcup scale=smoke"
    )
    assert (
        smoke_form("JOBS=2 scripts/reproduce.sh paper", {}) == "JOBS=2 scripts/reproduce.sh smoke"
    )
    assert smoke_form("make test", {}) is None
    assert (
        smoke_form(".venv/bin/python scripts/x.py --scale paper", {})
        == ".venv/bin/python scripts/x.py --scale smoke"
    )
    assert (
        smoke_form("scripts/studies/audit_table.sh", {"scripts/studies/audit_table.sh": "true"})
        == "true"
    )
    assert _bash_commands("a \\\n  b  # c\n# d\n\ne '#x'\n") == ["a b", "e '#x'"]
