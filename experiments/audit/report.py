"""The audit table drawn from the store's records: a compact summary (CSV, one row per run of
:data:`.table_runs.TABLE_RUNS`) and a markdown table drawn from that summary alone.

A run's record is found by its run key (what ``run.py`` stores it under: the key of the run's
composed config, :func:`.runner.audit_run_key`), not by matching a record's fields, so a record
is the table's row exactly when the run would skip it.  The keys come with the runs
(:func:`summary_rows` takes ``(run, run_key)`` pairs); composing the configs is the caller's
(:func:`experiments.plan.audit_plan.table_run_keys`).

Each row's outcome is computed from its numbers (:func:`outcome`): the audited lower bound above
the claim, or the exact ε(δ) of a white-box statistic above it (relative tolerance
:data:`.whitebox.EXACT_TOLERANCE`), is a caught violation.  The markdown lists every row whose
outcome differs from its expectation (a control not caught, an honest mechanism flagged) and
every run without a record.

:func:`curate` merges a store's rows into a summary folder and redraws it; :func:`draw` redraws
the markdown from the summary alone, byte for byte the same for the same summary.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Sequence

from experiments.audit.bounds import empirical_epsilon
from experiments.audit.table_runs import EXPECTATIONS, TableRun, expects_caught
from experiments.audit.whitebox import EXACT_TOLERANCE

#: the summary's file name in a summary folder
SUMMARY_FILE = "summary.csv"
#: the drawn table's file name in a summary folder
TABLE_FILE = "audit_table.md"
#: the summary's columns, in order
COLUMNS = (
    "name",
    "section",
    "expect",
    "record_id",
    "mode",
    "mechanism",
    "audited_as",
    "variant",
    "noise_factor",
    "claimed_epsilon",
    "delta",
    "relation",
    "design_statistic",
    "exact_epsilon",
    "audited_epsilon_lower",
    "point_estimate",
    "gdp_epsilon_fit",
    "gdp_epsilon_lower",
    "gdp_epsilon_reading",
    "jeffreys_low",
    "jeffreys_high",
    "at_ceiling",
    "confidence",
    "trials",
    "calibration_trials",
    "designs_tried",
    "seconds",
    "outcome",
    "caught_by",
)


def _number(value) -> float | None:
    """A record's or the summary's number (the store writes ∞ as "inf" and NaN as null)."""
    if value is None or value == "":
        return None
    x = float(value)
    return None if math.isnan(x) else x


def outcome(claimed: float, lower: float, exact: float | None) -> tuple[str, str]:
    """``("caught", by)`` when the audited lower bound or the exact ε(δ) exceeds the claim (``by``:
    ``certified``, ``exact`` or ``certified and exact``), else ``("not caught", "")``."""
    certified = lower > claimed
    over = exact is not None and exact > claimed * (1.0 + EXACT_TOLERANCE)
    if certified or over:
        return "caught", " and ".join(
            w for w, b in (("certified", certified), ("exact", over)) if b
        )
    return "not caught", ""


def _design_statistic(record: dict) -> str:
    """The design and the event of a record in one line (the white-box statistic's model instead of
    the event; the search's designs tried)."""
    design = str(record.get("design") or "")
    if record.get("design_description"):
        design += f": {record['design_description']}"
    stat = str(record.get("statistic") or "")
    if record.get("mode") == "whitebox":
        if _number(record.get("mu")) is not None:
            stat += f" (μ = {float(record['mu']):.3f})"
        elif _number(record.get("lift")) is not None:
            stat += f" (w = {float(record['lift']):.1f})"
    elif _number(record.get("threshold")) is not None:
        stat += f" {'≥' if record.get('tail') == 'upper' else '≤'} {float(record['threshold']):.4g}"
    text = f"{design} / {stat}"
    if record.get("designs_tried") is not None:
        skipped = int(record.get("designs_skipped") or 0)
        text += f"; {int(record['designs_tried'])} designs tried"
        text += f" ({skipped} skipped)" if skipped else ""
    return " ".join(text.split())


def table_row(run: TableRun, run_key: dict, record: dict | None) -> dict:
    """The summary's row of one run.

    Parameters
    ----------
    run : TableRun
        The run.
    run_key : dict
        The run key of its record (the row's ``record_id`` is that key's id).
    record : dict or None
        Its record; None when the store has none (the row's outcome is then ``no record``).

    Returns
    -------
    dict
        The values of :data:`COLUMNS`, the outcome computed from the numbers (:func:`outcome`).
    """
    from experiments.store.store import record_id

    row = dict.fromkeys(COLUMNS, "")
    row.update(name=run.name, section=run.section, expect=run.expect, record_id=record_id(run_key))
    row.update(mechanism=run_key.get("mechanism", ""), variant=run_key.get("variant") or "")
    row["noise_factor"] = "" if run_key.get("noise_factor") is None else run_key["noise_factor"]
    row["mode"] = run_key.get("mode", "design")
    if record is None:
        row["outcome"] = "no record"
        return row
    claimed = _number(record["claimed_epsilon"])
    lower = _number(record["audited_epsilon_lower"])
    exact = _number(record.get("exact_epsilon"))
    delta = _number(record["delta"])
    point = _number(record.get("empirical_epsilon"))
    if point is None and record.get("p_D") is not None:
        point = empirical_epsilon(float(record["p_D"]), float(record["p_Dprime"]), delta)
    row.update(
        mode=record.get("mode", "design"),
        audited_as=record["mechanism"],
        claimed_epsilon=claimed,
        delta=delta,
        relation=record.get("neighbouring", ""),
        design_statistic=_design_statistic(record),
        exact_epsilon="" if exact is None else exact,
        audited_epsilon_lower=lower,
        point_estimate="" if point is None else point,
        at_ceiling=bool(record.get("at_ceiling", False)),
        confidence=_number(record["confidence"]),
        trials=int(record["trials"]),
        calibration_trials=record.get("calibration_trials", "") if row["mode"] == "search" else "",
        designs_tried=record.get("designs_tried", ""),
        seconds=_number(record.get("seconds")),
    )
    row.update(_tradeoff_fields(record))
    row["outcome"], row["caught_by"] = outcome(claimed, lower, exact)
    return row


def _tradeoff_fields(record: dict) -> dict:
    """The trade-off curve's readings of a record (:mod:`.tradeoff`, :mod:`.bayes`): the μ-GDP fitted
    ε, the GDP-certified ε with its reading (``bound``, ``estimate`` or none at δ = 0), and the 95 %
    Jeffreys credible interval for ε of the record's event."""
    interval = (record.get("bayes_jeffreys") or {}).get("credible_interval") or [None, None]
    numbers = {
        "gdp_epsilon_fit": _number(record.get("gdp_epsilon_fit")),
        "gdp_epsilon_lower": _number(record.get("gdp_epsilon_lower")),
        "jeffreys_low": _number(interval[0]),
        "jeffreys_high": _number(interval[1]),
    }
    fields = {key: "" if x is None else x for key, x in numbers.items()}
    fields["gdp_epsilon_reading"] = record.get("gdp_epsilon_reading") or ""
    return fields


def _gdp_cell(r: dict) -> str:
    """The GDP-certified ε of a summary row: bold where it is a bound, marked where an estimate, a
    dash where the fit gives none (δ = 0)."""
    if r["gdp_epsilon_reading"] not in ("bound", "estimate"):
        return "–"
    value = _fmt(r["gdp_epsilon_lower"])
    return f"**{value}**" if r["gdp_epsilon_reading"] == "bound" else f"{value} (estimate)"


def summary_rows(store_root: Path, keyed: Sequence[tuple[TableRun, dict]]) -> list[dict]:
    """The summary's rows of the table's runs from a store.

    Parameters
    ----------
    store_root : pathlib.Path
        The results store (its ``records/``).
    keyed : sequence of (TableRun, dict)
        Each run with the run key of its record, in the table's order.

    Returns
    -------
    list of dict
        One :func:`table_row` per run; a run without a record gets a row whose outcome is
        ``no record``.

    Raises
    ------
    ValueError
        One line when the store holds the record of none of the runs.
    """
    from experiments.store.store import ResultStore, record_id

    store = ResultStore(store_root)
    rows = [
        table_row(run, key, store.get(record_id(key)) if store.has(key) else None)
        for run, key in keyed
    ]
    if keyed and all(r["outcome"] == "no record" for r in rows):
        raise ValueError(
            f"{store.records_dir} holds no audit record of the table's {len(rows)} runs: run "
            "scripts/plan.py audit --results STORE first"
        )
    return rows


def merge(kept: Sequence[dict], new: Sequence[dict]) -> list[dict]:
    """The rows of ``new`` (every run of the table, in its order), a run without a record in ``new``
    keeping its row of ``kept`` (an earlier summary) when that row holds the record of the same
    run key (its section and expectation are the run's now); a row of ``kept`` whose run is not
    in ``new`` is dropped."""
    old = {r["record_id"]: r for r in kept if r["outcome"] != "no record"}
    out = []
    for r in new:
        if r["outcome"] == "no record" and r["record_id"] in old:
            r = {**old[r["record_id"]], **{k: r[k] for k in ("name", "section", "expect")}}
        out.append(r)
    return out


def _cell(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def write_summary(rows: Sequence[dict], path: Path) -> Path:
    """Write ``rows`` as the summary CSV (:data:`COLUMNS`; floats as their shortest exact text)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({c: _cell(r.get(c, "")) for c in COLUMNS})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def read_summary(path: Path) -> list[dict]:
    """The rows of a summary CSV, as text (ValueError in one line when there is none)."""
    if not path.is_file():
        raise ValueError(f"no audit summary at {path}: curate a store into it first")
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _fmt(value, spec: str = ".3f") -> str:
    x = _number(value)
    if x is None:
        return ""
    return "∞" if math.isinf(x) else format(x, spec)


def _outcome_of(r: dict) -> tuple[str, str]:
    """A summary row's outcome, recomputed from its numbers (``no record`` when it has none)."""
    if r["outcome"] == "no record":
        return "no record", ""
    return outcome(
        float(r["claimed_epsilon"]), float(r["audited_epsilon_lower"]), _number(r["exact_epsilon"])
    )


def _verdict(r: dict, result: str, by: str) -> str:
    if result == "no record":
        return "no record"
    if result == "caught":
        return "**VIOLATION caught**" + (f" ({by})" if by else "")
    if _number(r["claimed_epsilon"]) == math.inf:
        return "not private, as declared"
    return {"caught": "**not caught**", "not_its_mode": "not caught (not its mode)",
            "too_few_trials": "not caught (too few trials)"}.get(r["expect"], "ok")  # fmt: skip


def _differs(r: dict, result: str) -> bool:
    return result != "no record" and (result == "caught") != expects_caught(r["expect"])


def _difference(r: dict, result: str) -> str:
    """The line of a row whose outcome differs from its expectation."""
    claimed, lower = _fmt(r["claimed_epsilon"], "g"), _fmt(r["audited_epsilon_lower"])
    exact = f", exact ε(δ) {_fmt(r['exact_epsilon'])}" if r["exact_epsilon"] else ""
    if result == "caught":
        what = f"expected {r['expect']} ({EXPECTATIONS[r['expect']][1]}), **caught**"
        numbers = f"audited ε lower {lower} against the claimed ε {claimed}{exact}"
    else:
        what = "a known-broken control, **not caught**"
        numbers = f"audited ε lower {lower} ≤ claimed ε {claimed}{exact}"
    return f"- `{r['name']}` ({r['section']}): {what}: {numbers}"


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(rows: Sequence[dict]) -> str:
    """The audit table in markdown from the summary's rows (as :func:`read_summary` gives them):
    one table per section (in the order of the rows), then a line for every row whose outcome
    (recomputed from its numbers) differs from its expectation, and for every run without a
    record."""
    confidences = {r["confidence"] for r in rows if r["confidence"]}
    level = f"{100 * float(confidences.pop()):g}%" if len(confidences) == 1 else "confidence"
    head = (
        f"| run | mode | mechanism | claimed ε | δ | relation | design / statistic | exact ε(δ) "
        f"| audited ε lower ({level}) | point estimate | μ-GDP fitted ε | GDP-certified ε "
        f"| Jeffreys interval ({level}) | bound / exact | trials/side | seconds "
        "| verdict | expected |\n" + "|---" * 18 + "|"
    )
    lines = [
        "# The audit table",
        "",
        "Drawn from `summary.csv` (one row per run of `experiments/audit/table_runs.py`) by "
        "`experiments/audit/report.py`; the verdicts are computed from the numbers: the audited "
        "lower bound above the claimed ε (certified), or a white-box statistic's exact ε(δ) above "
        "it (exact), is a caught violation. Beside the Clopper–Pearson bound of the event: the ε "
        "of the μ-GDP curve fitted to the statistic's trade-off curve, the GDP-certified ε (a "
        "bound in bold where the statistic is Gaussian, else an estimate; none at δ = 0) and the "
        'Jeffreys credible interval for ε of the event (docs/audit.md, "Tight bounds from the '
        "trade-off curve\"). Seconds are the audit's own wall time.",
    ]
    differ, missing = [], []
    for section in dict.fromkeys(r["section"] for r in rows):
        lines += ["", f"## {section}", "", head]
        for r in (r for r in rows if r["section"] == section):
            result, by = _outcome_of(r)
            if result == "no record":
                missing.append(r)
            elif _differs(r, result):
                differ.append((r, result))
            lower = _fmt(r["audited_epsilon_lower"])
            lower = f"**{lower}**" + (" (ceiling)" if r["at_ceiling"] == "true" else "")
            exact, low = _number(r["exact_epsilon"]), _number(r["audited_epsilon_lower"])
            ratio = f"{low / exact:.2f}" if exact and low is not None and exact > 0 else ""
            mech = r["audited_as"] or r["mechanism"]
            mech += f" (`{r['variant']}`)" if r["variant"] else ""
            mech += (
                f" (noise x{r['noise_factor']})"
                if r["noise_factor"] and not r["audited_as"]
                else ""
            )
            expected = r["expect"] + (" — **differs**" if _differs(r, result) else "")
            cells = [
                f"`{r['name']}`",
                r["mode"],
                _escape(mech),
                _fmt(r["claimed_epsilon"], "g"),
                _fmt(r["delta"], "g"),
                r["relation"],
                _escape(r["design_statistic"]),
                _fmt(r["exact_epsilon"]),
                "" if result == "no record" else lower,
                _fmt(r["point_estimate"]),
                "" if result == "no record" else _fmt(r["gdp_epsilon_fit"]),
                "" if result == "no record" else _gdp_cell(r),
                (
                    f"{_fmt(r['jeffreys_low'])}–{_fmt(r['jeffreys_high'])}"
                    if r["jeffreys_low"] != ""
                    else ""
                ),
                ratio,
                r["trials"],
                _fmt(r["seconds"], ".1f"),
                _verdict(r, result, by),
                expected,
            ]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Outcomes against expectations", ""]
    if differ:
        lines.append(f"{len(differ)} row(s) differ from their expectation:")
        lines += [_difference(r, result) for r, result in differ]
    else:
        lines.append("Every row with a record shows the outcome it is expected to show.")
    if missing:
        lines += ["", f"{len(missing)} run(s) have no record:"]
        lines += [f"- `{r['name']}` ({r['section']})" for r in missing]
    return "\n".join(lines) + "\n"


def draw(out: Path) -> list[Path]:
    """Redraw ``out/audit_table.md`` from ``out/summary.csv`` alone; return the files written."""
    rows = read_summary(Path(out) / SUMMARY_FILE)
    path = Path(out) / TABLE_FILE
    path.write_text(markdown(rows), encoding="utf-8")
    return [path]


def curate(store_root: Path, keyed: Sequence[tuple[TableRun, dict]], out: Path) -> list[Path]:
    """Merge a store's rows into a summary folder and redraw its table from the summary alone.

    Parameters
    ----------
    store_root : pathlib.Path
        The results store.
    keyed : sequence of (TableRun, dict)
        Each run of the table with the run key of its record (:func:`summary_rows`).
    out : pathlib.Path
        The summary folder: ``summary.csv`` is written (merged with the one there, :func:`merge`:
        a run the store has no record of keeps its row) and ``audit_table.md`` drawn from it.

    Returns
    -------
    list of pathlib.Path
        The summary and the table.
    """
    out = Path(out)
    rows = summary_rows(store_root, keyed)
    if (out / SUMMARY_FILE).is_file():
        rows = merge(read_summary(out / SUMMARY_FILE), rows)
    return [write_summary(rows, out / SUMMARY_FILE), *draw(out)]
