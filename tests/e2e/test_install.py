"""Where the harness reads and writes, from its checkout and from an installed copy.

From the checkout, configs come from ``conf/`` and a relative ``results_dir`` is taken from the
project's root; an installed copy (``pip install .``) reads the configs shipped in its wheel, takes a
relative ``results_dir`` from the current directory, caches under the user's cache folder and
records ``git_commit: null`` (:mod:`experiments.paths`).  Either way Hydra's run folders go under
the same root as the records, and a store whose ``records/`` cannot be written stops a run in one
line before anything is computed.  The slow test builds and installs a wheel and runs the default
job from it, outside the source tree.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from experiments import paths
from experiments.errors import StoreWriteError
from experiments.store import provenance
from experiments.store.store import ResultStore

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def installed_copy(monkeypatch, tmp_path):
    """The harness as an installed copy would see itself: no checkout around its packages."""
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(paths, "SOURCE_ROOT", site)
    monkeypatch.setattr(paths, "SHIPPED_CONFIG_DIR", site / "experiments" / "conf")
    provenance.git_commit.cache_clear()
    yield site
    provenance.git_commit.cache_clear()


def test_from_the_checkout_everything_is_relative_to_its_root():
    assert paths.checkout_root() == REPO and paths.is_checkout()
    assert paths.config_dir() == REPO / "conf"
    assert paths.results_root("results") == REPO / "results"
    assert paths.results_root("/elsewhere/store") == Path("/elsewhere/store")
    assert paths.raw_data_dir() == REPO / "data" / "raw"
    assert paths.default_cache_dir() == REPO / "data" / "cache"


def test_the_checkout_records_its_commit():
    provenance.git_commit.cache_clear()
    commit = provenance.git_commit()
    assert isinstance(commit, str) and commit


def test_an_installed_copy_reads_its_shipped_configs_and_writes_from_the_current_directory(
    installed_copy, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    assert paths.checkout_root() is None and not paths.is_checkout()
    assert paths.config_dir() == installed_copy / "experiments" / "conf"
    assert paths.results_root("results") == tmp_path / "results"
    assert paths.results_root(tmp_path / "abs") == tmp_path / "abs"
    assert paths.raw_data_dir() == paths.user_cache_root() / "data" / "raw"
    assert paths.default_cache_dir() == paths.user_cache_root() / "data" / "cache"
    assert installed_copy not in paths.raw_data_dir().parents


def test_an_installed_copy_records_no_commit_and_its_version(installed_copy):
    stamp = provenance.record_provenance(OmegaConf.create({"seed": 0}))
    assert stamp["git_commit"] is None
    assert stamp["versions"]["privpca"] == metadata.version("privpca")


def test_the_cache_variable_overrides_the_default_cache(monkeypatch, tmp_path):
    monkeypatch.setenv(paths.CACHE_ENV_VAR, str(tmp_path / "c"))
    assert paths.cache_dir() == tmp_path / "c"
    monkeypatch.delenv(paths.CACHE_ENV_VAR)
    assert paths.cache_dir() == paths.default_cache_dir()


def _register_schema() -> None:
    """Register the command line's typed schema, which ``conf/config.yaml``'s defaults list names
    (:mod:`experiments.app.schema`, or the command line module that holds it)."""
    import importlib

    for module in ("experiments.app.schema", "experiments.app.cli"):
        try:
            importlib.import_module(module).register_schema()
            return
        except ImportError:
            continue


def _hydra_dirs(overrides: list[str]) -> tuple[str, str]:
    _register_schema()
    with initialize_config_dir(config_dir=str(paths.config_dir()), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    return str(cfg.hydra.run.dir), str(cfg.hydra.sweep.dir)


def test_hydra_run_folders_follow_the_records_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the current directory does not move them
    run_dir, sweep_dir = _hydra_dirs([])
    assert Path(run_dir).parent == REPO / "results" / "hydra" / "runs"
    assert Path(sweep_dir).parent == REPO / "results" / "hydra" / "multirun"
    run_dir, _ = _hydra_dirs([f"results_dir={tmp_path / 'store'}"])
    assert Path(run_dir).parent == tmp_path / "store" / "hydra" / "runs"


def test_hydra_run_folders_of_an_installed_copy_are_under_the_current_directory(
    installed_copy, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(paths, "SHIPPED_CONFIG_DIR", REPO / "conf")  # the same files, shipped
    run_dir, _ = _hydra_dirs(["results_dir=out"])
    assert Path(run_dir).parent == tmp_path / "out" / "hydra" / "runs"


def test_a_writable_store_passes_the_check_and_keeps_nothing_of_it(tmp_path):
    """The check creates nothing: a new store stays absent (a run refused later for its settings
    leaves no folder behind), and an existing records/ stays empty."""
    store = ResultStore(tmp_path / "store")
    store.check_writable()
    assert not (tmp_path / "store").exists() and list(tmp_path.iterdir()) == []
    store.records_dir.mkdir(parents=True)
    store.check_writable()
    assert list(store.records_dir.iterdir()) == []


def test_records_that_are_a_file_fail_the_check_in_one_line(tmp_path):
    (tmp_path / "records").write_text("not a folder")
    with pytest.raises(StoreWriteError) as info:
        ResultStore(tmp_path).check_writable()
    message = str(info.value)
    assert "\n" not in message and str(tmp_path / "records") in message
    assert "Not a directory" in message and "nothing was computed" in message
    assert info.value.errno == errno.ENOTDIR


def test_records_the_system_refuses_fail_the_check(tmp_path, monkeypatch):
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(StoreWriteError, match="Permission denied") as info:
        ResultStore(tmp_path).check_writable()
    assert info.value.errno == errno.EACCES


def test_a_run_checks_its_store_before_any_work(tmp_path, monkeypatch):
    from experiments.app import dispatch

    (tmp_path / "records").write_text("not a folder")

    def no_work(*args, **kwargs):
        raise AssertionError("the experiment started although its records cannot be written")

    monkeypatch.setattr(dispatch, "instantiate", no_work)
    _register_schema()
    with initialize_config_dir(config_dir=str(paths.config_dir()), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[f"results_dir={tmp_path}"])
    with pytest.raises(StoreWriteError):
        dispatch.run_experiment(cfg)


@pytest.mark.slow
def test_run_py_refuses_an_unwritable_records_folder_in_one_line(tmp_path):
    (tmp_path / "records").write_text("not a folder")
    proc = subprocess.run(
        [sys.executable, str(REPO / "run.py"), f"results_dir={tmp_path}", "scale=smoke"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("Error (results store): records cannot be written to")
    assert proc.stdout.strip() == ""  # nothing computed, nothing printed


# -- a wheel, installed and run outside the source tree -------------------------------------------

#: what a wheel is built from (the rest of the checkout is not needed to build it)
BUILD_INPUTS = (
    "pyproject.toml",
    "setup.py",
    "MANIFEST.in",
    "README.md",
    "LICENSE",
    "conf",
    "mechanisms",
    "experiments",
)

#: run in the installed copy: every subpackage imported from it, then run.py's default job
PROBE = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys
    from importlib import metadata
    from pathlib import Path

    site = Path(sys.argv[1]).resolve()
    # the checkout's editable install must not stand in for a module the wheel lacks
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
    imported = []
    for top in ("mechanisms", "experiments"):
        pkg = importlib.import_module(top)
        imported.append(top)
        for info in pkgutil.walk_packages(pkg.__path__, prefix=top + "."):
            if info.ispkg:
                importlib.import_module(info.name)
                imported.append(info.name)
    outside = [m for m in imported if site not in Path(sys.modules[m].__file__).resolve().parents]
    assert not outside, f"imported from outside the installed copy: {outside}"

    from experiments import paths

    assert paths.checkout_root() is None, paths.checkout_root()
    shipped = sorted(str(p.relative_to(paths.config_dir())) for p in paths.config_dir().rglob("*.yaml"))
    console = [e for e in metadata.distribution("privpca").entry_points
               if e.group == "console_scripts" and e.name == "privpca"]
    if console:  # the console command, as a user types it
        sys.argv = ["privpca", "results_dir=out"]
        try:
            code = console[0].load()()
        except SystemExit as exc:
            code = exc.code
        assert not code, code
    else:  # run.py's default job through the installed code
        from hydra import compose, initialize_config_dir
        from experiments.app.dispatch import run_experiment

        for module in ("experiments.app.schema", "experiments.app.cli"):  # the typed schema
            try:
                importlib.import_module(module).register_schema()
                break
            except ImportError:
                continue
        with initialize_config_dir(config_dir=str(paths.config_dir()), version_base="1.3"):
            cfg = compose(config_name="config", overrides=["results_dir=out"])
        run_experiment(cfg)
    print(json.dumps({"imported": imported, "shipped": shipped, "console": bool(console)}))
    """
)


def _files(root: Path) -> set[str]:
    """Every file below ``root`` but Python's and numba's caches, relative."""
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def _build_isolation_flags() -> list[str]:
    """``--no-build-isolation`` where this environment can build the wheel itself (setuptools that
    reads PEP 639 licenses and builds wheels), so no index is needed; otherwise pip fetches the
    build requirements from the package index."""
    try:
        major = int(metadata.version("setuptools").split(".")[0])
    except metadata.PackageNotFoundError:
        return []
    return ["--no-build-isolation"] if major >= 77 else []


@pytest.mark.slow
def test_an_installed_copy_runs_the_default_job_outside_the_source_tree(tmp_path):
    src, site, work, home = (tmp_path / n for n in ("src", "site", "work", "home"))
    for name in BUILD_INPUTS:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            src.mkdir(exist_ok=True)
            shutil.copy2(source, src / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PRIVPCA_CACHE_DIR")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1")
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", *_build_isolation_flags()]
        + ["--target", str(site), str(src)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    installed = _files(site)
    assert (site / "experiments" / "conf" / "config.yaml").is_file()

    work.mkdir()
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    env.update(
        PYTHONPATH=str(site),  # the installed copy only: the checkout is not on the path
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        NUMBA_CACHE_DIR=str(tmp_path / "numba"),
        MPLBACKEND="Agg",
    )
    proc = subprocess.run(
        [sys.executable, str(probe), str(site)],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])

    packages = {
        ".".join(p.parent.relative_to(REPO).parts)
        for top in ("mechanisms", "experiments")
        for p in (REPO / top).rglob("__init__.py")
    }
    assert set(report["imported"]) == packages
    assert report["shipped"] == sorted(
        str(p.relative_to(REPO / "conf")) for p in (REPO / "conf").rglob("*.yaml")
    )
    # the records under the chosen results directory, taken from the current directory
    assert sorted(p.name for p in work.iterdir()) == ["out"]
    (record_file,) = (work / "out" / "records").glob("*.json")
    record = json.loads(record_file.read_text())
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert record["git_commit"] is None and record["versions"]["privpca"] == version
    assert record["dataset"] == "gaussian10" and record["mechanism"] == "ppca"
    if report["console"]:
        assert list((work / "out" / "hydra" / "runs").iterdir())
    # nothing written into the installed copy
    assert _files(site) == installed
