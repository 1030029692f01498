"""The installed distribution holds every package of the source tree (a package listed by hand in
pyproject.toml is one that can be forgotten, as ``experiments.peers`` once was)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import find_packages

REPO = Path(__file__).resolve().parent.parent


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
