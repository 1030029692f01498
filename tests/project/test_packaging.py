"""The distribution: it holds every package of the source tree (a package listed by hand in
pyproject.toml is one that can be forgotten, as ``experiments.peers`` once was); constraints.txt pins
the versions the stored records re-run with, and the environment has them (CI installs through the
Makefile, which uses that file); it carries its license and citation.  An installed copy run outside
the source tree: tests/e2e/test_install.py."""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import find_packages

REPO = Path(__file__).resolve().parents[2]


def _source_packages() -> set[str]:
    """Every folder below mechanisms/ and experiments/ that holds an ``__init__.py``, dotted."""
    found = set()
    for top in ("mechanisms", "experiments"):
        for init in (REPO / top).rglob("__init__.py"):
            found.add(".".join(init.parent.relative_to(REPO).parts))
    return found


def test_the_package_list_is_every_package_of_the_tree():
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools_cfg = config["tool"]["setuptools"]
    assert isinstance(setuptools_cfg["packages"], dict)  # discovered ({"find": ...}), not a list
    include = setuptools_cfg["packages"]["find"]["include"]
    packaged = set(find_packages(where=str(REPO), include=include))
    source = _source_packages()
    assert "experiments.peers" in source and "mechanisms.bingham" in source
    assert packaged == source


#: the packages whose versions the stored records re-run bit for bit with (numpy's wheel bundles
#: its OpenBLAS); pyarrow, not installed in the reference environment, is not pinned
RERUN_STACK = (
    "numpy",
    "scipy",
    "scikit-learn",
    "numba",
    "llvmlite",
    "pandas",
    "hydra-core",
    "omegaconf",
    "clarabel",
    "dp-accounting",
    "threadpoolctl",
)


def _constraints() -> dict[str, str]:
    pins = {}
    for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt pins exact versions: {line!r}"
            pins[name.strip().lower()] = version.strip()
    return pins


def test_the_constraints_pin_the_rerun_stack():
    """Every package a bit-for-bit rerun depends on is pinned (the engine's and the benchmark's
    packages may be pinned beside them)."""
    missing = set(RERUN_STACK) - set(_constraints())
    assert not missing, f"constraints.txt does not pin {sorted(missing)}"


def test_the_installed_versions_are_the_constraints():
    from importlib import metadata

    installed = {name: metadata.version(name) for name in _constraints()}
    assert installed == _constraints(), "the environment is not the one constraints.txt pins"


def test_the_install_and_the_docs_use_the_constraints():
    assert "-c constraints.txt" in (REPO / "Makefile").read_text(encoding="utf-8")
    assert "constraints.txt" in (REPO / "docs" / "running.md").read_text(encoding="utf-8")


def test_license_citation_and_ignored_build_outputs():
    import yaml

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["project"]["license"] == "MIT"
    assert (REPO / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["cff-version"] == "1.2.0" and citation["type"] == "software"
    assert citation["version"] == config["project"]["version"]
    titles = [ref["title"] for ref in citation["references"]]
    assert len(titles) == 5 and "Privately Learning Subspaces" in titles
    ignored = (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "build/" in ignored and "dist/" in ignored
