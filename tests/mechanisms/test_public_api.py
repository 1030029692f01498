"""The package's public surface: what users, examples and outside mechanisms import."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import mechanisms
from mechanisms import MECHANISMS, get_mechanism

ROOT = Path(__file__).resolve().parents[2]


def test_every_exported_name_resolves():
    for name in mechanisms.__all__:
        assert getattr(mechanisms, name) is not None, name


def test_estimator_is_exported_lazily():
    from mechanisms.estimator import PrivatePCA

    assert mechanisms.PrivatePCA is PrivatePCA


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_registered_mechanism_has_numpydoc_sections(name):
    doc = inspect.getdoc(get_mechanism(name)) or ""
    for section in ("Parameters", "Returns", "References"):
        assert re.search(rf"^{section}\n-{{{len(section)}}}$", doc, re.M), (
            f"{name}: no {section} section"
        )


def _has_sections(obj, sections) -> list[str]:
    doc = inspect.getdoc(obj) or ""
    return [s for s in sections if not re.search(rf"^{s}\n-{{{len(s)}}}$", doc, re.M)]


def test_estimator_has_numpydoc_sections():
    from mechanisms.estimator import PrivatePCA

    assert not _has_sections(PrivatePCA, ("Parameters", "Attributes", "References"))
    assert not _has_sections(PrivatePCA.fit, ("Parameters", "Returns"))


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_registered_mechanism_takes_X_first(name):
    params = list(inspect.signature(get_mechanism(name)).parameters)
    assert params[:2] == ["X", "k"], f"{name}: {params[:2]}"


def test_documents_and_examples_use_the_public_surface():
    # users are taught the package's exports, not its private modules
    places = [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "examples").rglob("*.py")),
    ]
    offenders = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in places
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if "mechanisms._base" in line
    ]
    assert not offenders, offenders


def test_experiments_import_exported_names_from_the_package():
    # a name of either public surface (mechanisms, mechanisms.toolkit) is imported from there
    import mechanisms.toolkit

    exported = set(mechanisms.__all__) | set(mechanisms.toolkit.__all__)
    offenders = []
    for path in sorted((ROOT / "experiments").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "mechanisms._base":
                offenders += [
                    f"{path.relative_to(ROOT)}:{node.lineno} {a.name}"
                    for a in node.names
                    if a.name in exported
                ]
    assert not offenders, offenders
