"""docs/extra_experiments.md quotes the committed quick-scale summary correctly.

Every n*, slope and regret number that the document's "Measured at scale=quick" passages take from
``results/quick/summary`` is recomputed here by the code that draws the figures
(:func:`experiments.figures.extras.scaling_curves` and
:func:`~experiments.figures.extras.regret_means`, on :func:`experiments.store.summary.load_summary`) and
compared with the text as the document rounds it.  The dimension-scaling table is checked cell by
cell (each n* column, the slope column, the relation), and every number in those cells must be one
the summary gives or one marked ¹ (a run outside the summary, named in the footnote); the prose
claims are found by patterns that tolerate line breaks and emphasis.  Mutation tests change the
quoted numbers (PPCA's slope to the 1.21 an older text gave, and each checked number by one in its
last digit) and require a failure.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "extra_experiments.md"
SUMMARY = REPO / "results" / "quick" / "summary"
SCALING_HEADING = "### Measured at scale=quick"
REGRET_HEADING = "## `online_regret`"
#: a number as the document writes it: 250, 64,000, 0.61, 1.50 (not the superscripts ¹²³)
NUMBER = re.compile(r"(?<![0-9.,])[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?")
#: footnote markers: ¹ marks a number from a run outside the committed summary
OUTSIDE = "¹"
MARKERS = "¹²³⁴"


@pytest.fixture(scope="module")
def summary():
    from experiments.store.summary import load_summary

    return load_summary(SUMMARY)


@pytest.fixture(scope="module")
def text() -> str:
    return DOC.read_text()


def _plain(s: str) -> str:
    """``s`` without emphasis and with its white space (line breaks included) as single spaces."""
    return re.sub(r"\s+", " ", s.replace("**", "")).strip()


def _numbers(s: str) -> list[str]:
    return NUMBER.findall(s)


def _value(token: str) -> float:
    return float(token.replace(",", ""))


def section(text: str, heading: str) -> str:
    """The text from ``heading`` (a line starting with it) to the next heading of its level or above."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    level = len(heading) - len(heading.lstrip("#"))
    end = next(
        (
            i
            for i in range(start + 1, len(lines))
            if lines[i].startswith("#")
            and len(lines[i]) - len(lines[i].lstrip("#")) <= level
            and lines[i].lstrip("#").startswith(" ")
        ),
        len(lines),
    )
    return "\n".join(lines[start:end])


def scaling_table(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """The dimension-scaling table: its header cells and its rows by mechanism (the first word of
    the first cell)."""
    body = section(text, SCALING_HEADING)
    lines = [line for line in body.splitlines() if line.startswith("|")]
    split = [[c.strip() for c in line.strip()[1:-1].split("|")] for line in lines]
    header, rows = split[0], split[2:]
    assert all(len(r) == len(header) for r in rows), "a row with another number of cells"
    return header, {r[0].split()[0]: r for r in rows}


def _n_text(n_star: float, top: float) -> str:
    return f"{int(n_star):,}" if np.isfinite(n_star) else f"> {int(top):,}"


def scaling_problems(text: str, curves: dict) -> list[str]:
    """What the dimension-scaling table and its reading get wrong, against ``curves``
    (:func:`experiments.figures.extras.scaling_curves` of the committed summary)."""
    problems = []
    header, rows = scaling_table(text)
    dims = [int(m.group(1)) for c in header if (m := re.fullmatch(r"n\*\(([0-9]+)\)", c))]
    n_cols = [i for i, c in enumerate(header) if re.fullmatch(r"n\*\([0-9]+\)", c)]
    slope_col = next(i for i, c in enumerate(header) if "slope" in c)
    if set(rows) != set(curves):
        problems.append(f"table rows {sorted(rows)} != summary mechanisms {sorted(curves)}")
    for mech, row in rows.items():
        c = curves.get(mech)
        if c is None:
            continue
        if c["relation"] and f"({c['relation']}" not in row[0]:
            problems.append(f"{mech}: relation {c['relation']} not in {row[0]!r}")
        for col, dim in zip(n_cols, dims):
            at = np.flatnonzero(c["d"] == dim)
            cell = row[col]
            main, *others = [p.strip() for p in cell.split(";")]
            expected = (
                "—" if not at.size else _n_text(c["n_star"][at[0]], c["n_largest_searched"][at[0]])
            )
            if main.rstrip(MARKERS).strip() != expected:
                problems.append(f"{mech} n*({dim}): {main!r}, the summary gives {expected!r}")
            for part in others:
                if not part.endswith(OUTSIDE):
                    problems.append(f"{mech} n*({dim}): {part!r} is neither the summary's nor ¹")
        cell = _plain(row[slope_col])
        if c["slope"] is not None:
            expected = [f"{c['slope']:.2f}"]
            if "points" in cell:
                expected.append(str(c["points"]))
            if not cell.startswith(expected[0]):
                problems.append(f"{mech} slope: {cell!r}, the summary gives {expected[0]}")
        else:
            expected = [str(c["points"])] if "points" in cell else []
            if c["at_floor"]:
                expected.append(f"{int(min(c['at_floor'])):,}")
            if not cell.startswith("none"):
                problems.append(f"{mech} slope: {cell!r}, but the summary fits none")
        stray = [t for t in _numbers(cell) if t not in expected]
        if stray or (
            c["slope"] is not None and "points" in cell and f"({c['points']} " not in cell
        ):
            problems.append(f"{mech} slope cell {cell!r}: {stray or 'points'} not the summary's")

    reading = _plain(section(text, SCALING_HEADING).split("Reading:", 1)[1].split("Caveats:")[0])
    ppca, gauss, sulq = curves["ppca"], curves["analyze_gauss"], curves["mod_sulq"]
    # the 4-point slope takes PPCA's n*(300) from the run outside the summary (footnote 1)
    parts = rows.get("ppca", [""] * len(header))[n_cols[dims.index(300)]].split(";")
    outside = [p.strip().rstrip(MARKERS) for p in parts if p.strip().endswith(OUTSIDE)]
    four_point = np.nan
    if len(outside) == 1 and _numbers(outside[0]):
        with_outside = np.where(
            np.isfinite(ppca["n_star"]), ppca["n_star"], _value(_numbers(outside[0])[0])
        )
        four_point = np.polyfit(np.log(ppca["d"]), np.log(with_outside), 1)[0]
    else:
        problems.append("PPCA's n*(300) from the run outside the summary (¹) is not quoted")
    sulq_ratio = sulq["n_star"][1] / sulq["n_star"][0]
    ss = curves["subspace_approx"]
    ss_d, ss_n = ss["d"][np.isfinite(ss["n_star"])], ss["n_star"][np.isfinite(ss["n_star"])]
    claims = [
        (
            r"PPCA's n\* grows [^(]*\(slope ([0-9.]+) on ([0-9]+) points",
            [f"{ppca['slope']:.2f}", str(ppca["points"])],
        ),
        (r"the 4-point slope is ([0-9.]+)", [f"{four_point:.2f}"]),
        (r"Analyze Gauss's like √d \(([0-9.]+)", [f"{gauss['slope']:.2f}"]),
        (
            r"between d = ([0-9]+) and ([0-9]+) n\* grows ([0-9]+)-fold",
            [f"{sulq['d'][0]:.0f}", f"{sulq['d'][1]:.0f}", f"{sulq_ratio:g}"],
        ),
        (
            r"n\*\(100\) > ([0-9,]+)",
            [f"{int(sulq['n_largest_searched'][list(sulq['d']).index(100)]):,}"],
        ),
        (
            r"Singhal–Steinke's n\* is the same \(([0-9,]+)\) at d = ([0-9]+) and ([0-9]+)",
            [f"{int(v):,}" for v in sorted(set(ss_n))] + [f"{v:.0f}" for v in ss_d],
        ),
        (r"scales like ≈ d\^\{([0-9.]+)\}", [f"{curves['noisy_power']['slope']:.2f}"]),
    ]
    for pattern, expected in claims:
        m = re.search(pattern, reading)
        if m is None:
            problems.append(f"the reading no longer states {pattern!r}")
        elif list(m.groups()) != expected:
            problems.append(f"reading {m.group(0)!r}: the summary gives {expected}")
    return problems


def regret_problems(text: str, summary) -> list[str]:
    """What the online-regret measurement gets wrong, against the committed summary's records, as
    :func:`experiments.figures.extras.regret_means` averages them."""
    from experiments.figures.extras import regret_means

    curves = regret_means(summary)
    o = summary[summary.experiment == "online_regret"]
    final = {tree: float(np.mean(g.q_F / g.q_F_opt)) for tree, g in o.groupby(o.tree.astype(bool))}
    alg, tree = curves[False], curves[True]
    body = _plain(section(text, REGRET_HEADING))
    measured = body.split("Measured at scale=quick", 1)[1]
    r = o.iloc[0]
    claims = [
        (r"quick: m = ([0-9,]+), d = ([0-9]+)", [f"{int(alg['t'][-1]):,}", f"{int(r['d'])}"]),
        (
            r"ε = ([0-9.]+), δ = ([0-9.]+), the mean of ([0-9]+)",
            [f"{r['config.epsilon']:g}", f"{r['config.delta']:g}", str(alg["runs"])],
        ),
        (
            r"at m = ([0-9,]+), OPT = ([0-9,]+);",
            [f"{int(alg['t'][-1]):,}", f"{alg['opt'][-1]:,.0f}"],
        ),
        (
            r"Algorithm 2 regret ([0-9,]+) \(regret/OPT ([0-9.]+), final q_F/q_F\(V_k\) = ([0-9.]+)\)",
            [
                f"{alg['regret'][-1]:,.0f}",
                f"{alg['regret'][-1] / alg['opt'][-1]:.2f}",
                f"{final[False]:.3f}",
            ],
        ),
        (
            r"tree version regret ([0-9,]+) \(regret/OPT ([0-9.]+), final q_F ratio ([0-9.]+)\)",
            [
                f"{tree['regret'][-1]:,.0f}",
                f"{tree['regret'][-1] / tree['opt'][-1]:.2f}",
                f"{final[True]:.3f}",
            ],
        ),
        (
            r"is NOT \(([0-9.]+), ([0-9.]+)\)-DP",
            [f"{r['config.epsilon']:g}", f"{r['config.delta']:g}"],
        ),
    ]
    problems = []
    for pattern, expected in claims:
        m = re.search(pattern, measured if "quick: m" not in pattern else body)
        if m is None:
            problems.append(f"the online-regret text no longer states {pattern!r}")
        elif list(m.groups()) != expected:
            problems.append(f"{m.group(0)!r}: the summary gives {expected}")
    return problems


@pytest.fixture(scope="module")
def curves(summary):
    from experiments.figures.extras import scaling_curves

    return scaling_curves(summary)


def test_dimension_scaling_numbers_are_the_committed_summarys(text, curves):
    assert {"pca", "ppca", "mod_sulq", "analyze_gauss"} <= set(curves)
    assert scaling_problems(text, curves) == []


def test_online_regret_numbers_are_the_committed_summarys(text, summary):
    assert regret_problems(text, summary) == []


def test_the_older_ppca_numbers_fail(text, curves):
    """An older text (PPCA's n*(10) = 4,000 and slope 1.21) is refused."""
    header, rows = scaling_table(text)
    row = "| " + " | ".join(rows["ppca"]) + " |"
    slope = row.replace("**1.50**", "**1.21**")
    assert slope != row
    problems = scaling_problems(text.replace(row, slope), curves)
    assert any("ppca slope" in p for p in problems), problems
    n10 = row.replace("| 2,000 |", "| 4,000 |", 1)
    assert n10 != row
    problems = scaling_problems(text.replace(row, n10), curves)
    assert any("ppca n*(10)" in p for p in problems), problems
    reading = text.replace("slope 1.50 on 3 points", "slope 1.21 on 3 points")
    assert reading != text and scaling_problems(reading, curves)


def _bump(token: str) -> str:
    """``token`` with its last digit changed by one (9 -> 8)."""
    d = int(token[-1])
    return token[:-1] + str(d + 1 if d < 9 else d - 1)


def test_every_checked_number_changed_by_one_digit_fails(text, curves, summary):
    """Each number of the table's n* and slope cells, and each number the prose claims state,
    changed in its last digit, makes the check fail."""
    header, rows = scaling_table(text)
    checked = [i for i, c in enumerate(header) if c.startswith("n*(") or "slope" in c]
    mutants = 0
    for row in rows.values():
        line = "| " + " | ".join(row) + " |"
        assert line in text
        for col in checked:
            for m in NUMBER.finditer(row[col].split(";")[0]):
                cell = row[col][: m.start()] + _bump(m.group(0)) + row[col][m.end() :]
                mutated = "| " + " | ".join([*row[:col], cell, *row[col + 1 :]]) + " |"
                assert scaling_problems(text.replace(line, mutated), curves), (row[0], cell)
                mutants += 1
    assert mutants >= 25
    for claim in (
        "slope 1.50 on 3 points",
        "4-point slope is 1.40",
        "like √d (0.61",
        "grows 8-fold",
        "n*(100) > 256,000",
        "the same (16,000)",
        "d^{0.67}",
    ):
        assert claim in text, claim
        token = NUMBER.findall(claim)[-1]
        wrong = claim[::-1].replace(token[::-1], _bump(token)[::-1], 1)[::-1]
        assert scaling_problems(text.replace(claim, wrong), curves), claim
    for claim in (
        "OPT = 772",
        "Algorithm 2 regret 46 ",
        "(regret/OPT 0.06,",
        "= 0.999)",
        "tree version regret 348",
        "(regret/OPT 0.45,",
        "ratio 0.987)",
        "quick: m = 8,192",
    ):
        assert claim in text, claim
        token = NUMBER.findall(claim)[-1]
        wrong = claim.replace(token, _bump(token), 1)
        assert regret_problems(text.replace(claim, wrong), summary), claim
