"""The package's two public surfaces (mechanisms/__init__.py): ``mechanisms`` for users and
``mechanisms.toolkit`` for authors of mechanisms.

* Every name of each ``__all__`` resolves, and each ``__all__`` is the list its page shows
  (docs/mechanisms.md, "Public surfaces"; docs/own_mechanism.md, "The toolkit") and, for the
  toolkit, the list of its module docstring.
* The toolkit's names are the library's own objects, the ones its mechanisms use; the names that
  code imported from ``mechanisms`` before the toolkit existed still resolve there, to the same
  objects, without being part of its surface.
* The worked example of an outside mechanism (``examples/``) and the Python code of
  docs/own_mechanism.md reach into the library through ``mechanisms`` and ``mechanisms.toolkit``
  only, and only for names of their ``__all__`` (so never for an underscore name).  Parsed, not run.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import mechanisms
import mechanisms.toolkit as toolkit

ROOT = Path(__file__).resolve().parents[2]
SURFACES = {"mechanisms": mechanisms, "mechanisms.toolkit": toolkit}
OWN_DOC = ROOT / "docs" / "own_mechanism.md"
EXAMPLES = sorted((ROOT / "examples").rglob("*.py"))
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)

#: what code imported from ``mechanisms`` before the toolkit existed (the harness still does)
FORMER_NAMES = (
    "PreparedData",
    "ROW_NORM_TOLERANCE",
    "check_data",
    "check_delta",
    "check_epsilon",
    "check_k",
    "second_moment",
)


def documented_names(path: Path, heading: str) -> list[str]:
    """The backquoted names in the first column of the table rows of the section ``heading``."""
    lines = path.read_text().splitlines()
    start = lines.index(heading)
    level = len(heading) - len(heading.lstrip("#"))
    names: list[str] = []
    for line in lines[start + 1 :]:
        title = re.match(r"(#+) ", line)
        if title and len(title.group(1)) <= level:
            break
        row = line.strip()
        if row.startswith("|") and not set(row) <= set("|-: "):
            names += re.findall(r"`([^`]+)`", row.split("|")[1])
    return names


def outside_the_surfaces(source: str) -> list[str]:
    """Every reach into the library other than a name of ``mechanisms.__all__`` or
    ``mechanisms.toolkit.__all__`` (or the module ``mechanisms.toolkit`` itself)."""
    bad = []

    def check(module: str, name: str, how: str) -> None:
        if module == "mechanisms" and name == "toolkit":
            return
        if name.startswith("_") or name not in SURFACES[module].__all__:
            bad.append(how)

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "mechanisms" and alias.name not in SURFACES:
                    bad.append(f"import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.split(".")[0] != "mechanisms":
                continue
            if node.module not in SURFACES:
                bad.append(f"from {node.module} import ...")
                continue
            for alias in node.names:
                check(node.module, alias.name, f"from {node.module} import {alias.name}")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "mechanisms":  # mechanisms.<name>
                check("mechanisms", node.attr, f"mechanisms.{node.attr}")
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id == "mechanisms"
            and node.value.attr == "toolkit"
        ):  # mechanisms.toolkit.<name>
            check("mechanisms.toolkit", node.attr, f"mechanisms.toolkit.{node.attr}")
    return bad


# -- the two lists ---------------------------------------------------------------------------------


@pytest.mark.parametrize("module", sorted(SURFACES))
def test_every_exported_name_resolves(module):
    surface = SURFACES[module]
    assert len(set(surface.__all__)) == len(surface.__all__)
    for name in surface.__all__:
        assert getattr(surface, name) is not None, f"{module}.{name}"


def test_the_user_surface_is_the_list_of_its_page():
    listed = documented_names(ROOT / "docs" / "mechanisms.md", "## Public surfaces")
    assert len(listed) == len(set(listed))
    assert set(listed) == set(mechanisms.__all__)


def test_the_toolkit_is_the_list_of_its_page_and_of_its_docstring():
    listed = documented_names(OWN_DOC, "### The toolkit: `mechanisms.toolkit`")
    assert len(listed) == len(set(listed))
    assert set(listed) == set(toolkit.__all__)
    mentioned = set(re.findall(r"\w+", toolkit.__doc__))
    assert not set(toolkit.__all__) - mentioned


def test_the_toolkit_holds_the_librarys_own_objects():
    from mechanisms import _base, calibration, linalg, mod_sulq

    for name in toolkit.__all__:
        home = next(m for m in (_base, calibration, linalg) if hasattr(m, name))
        assert getattr(toolkit, name) is getattr(home, name), name
    assert toolkit.check_data is mod_sulq.check_data  # the check the mechanisms call
    shared = set(toolkit.__all__) & set(mechanisms.__all__)
    assert {"MechanismOutput", "PrivacyGuarantee", "PrivacyInputError"} <= shared
    assert all(getattr(toolkit, n) is getattr(mechanisms, n) for n in shared)


def test_author_helpers_live_in_the_toolkit_only():
    """The input checks, PreparedData, second_moment and the row-norm tolerance are the toolkit's:
    the user surface neither lists nor resolves them, so no code can lean on them from there."""
    for name in FORMER_NAMES:
        assert name in toolkit.__all__ and name not in mechanisms.__all__
        assert not hasattr(mechanisms, name), name


# -- what an outside mechanism and its page import -------------------------------------------------


def test_the_rule_catches_reaches_past_the_surfaces():
    assert sorted(
        outside_the_surfaces(
            "import mechanisms.linalg\n"
            "from mechanisms.calibration import gaussian_sigma\n"
            "from mechanisms import _base, check_data, toolkit, PrivatePCA\n"
            "from mechanisms.toolkit import _SECOND_MOMENTS, check_k\n"
            "import mechanisms\n"
            "mechanisms.calibration.gaussian_sigma(1.0, 1.0, 1e-5)\n"
            "mechanisms.toolkit.check_flag(True, 'clip')\n"
            "mechanisms.toolkit.check_k(1, 2)\n"
            "mechanisms.MECHANISMS\n"
        )
    ) == sorted(
        [
            "import mechanisms.linalg",
            "from mechanisms.calibration import ...",
            "from mechanisms import _base",
            "from mechanisms import check_data",
            "from mechanisms.toolkit import _SECOND_MOMENTS",
            "mechanisms.calibration",
            "mechanisms.toolkit.check_flag",
        ]
    )


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_example_uses_the_public_surfaces_only(path):
    assert not outside_the_surfaces(path.read_text())


def test_the_example_mechanism_imports_its_helpers_from_the_toolkit():
    tree = ast.parse((ROOT / "examples" / "my_mechanism" / "my_gauss.py").read_text())
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "mechanisms.toolkit"
        for alias in node.names
    }
    assert {"check_data", "gaussian_sigma", "top_k_eigenvectors", "MechanismOutput"} <= imported


def test_the_own_mechanism_page_uses_the_public_surfaces_only():
    blocks = PYTHON_BLOCK.findall(OWN_DOC.read_text())
    assert len(blocks) >= 2
    for block in blocks:  # each block is Python that parses
        assert not outside_the_surfaces(block), block
    # and the names the page quotes as code: `mechanisms.<name>`, `mechanisms.toolkit.<name>`
    code = " ".join(re.findall(r"`([^`\n]+)`", OWN_DOC.read_text()))
    dotted = set(re.findall(r"\bmechanisms\.(\w+)", code)) - {"toolkit"}
    assert dotted <= set(mechanisms.__all__), dotted
    assert set(re.findall(r"\bmechanisms\.toolkit\.(\w+)", code)) <= set(toolkit.__all__)
