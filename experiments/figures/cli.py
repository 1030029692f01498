"""Regenerate every JMLR figure and table from the results store (never from memory).

    python scripts/make_figures.py [--results results] [--scale smoke] [--out DIR] [--only fig3,table2]
    python scripts/make_figures.py --summary results/quick/summary --scale quick --out results/quick --curate

Writes ``<out>/figures/fig1.png`` ... ``fig5.png``, ``fig_classification.png`` (+ PDF) and
``<out>/tables/table1.csv``, ``table2.csv``, ``footnote1.csv``, and the numbers behind the figures
(``utility_vs_n.csv``, ``utility_vs_epsilon.csv``, ``sampler_convergence.csv``).  ``--out`` defaults to
``<results>/drawn/<scale>`` (``<results>/drawn/all`` without ``--scale``), a local directory that is
never committed.  The curated outputs (``results/quick`` and ``results/paper_scale``, see
:data:`CURATED`) are written only with ``--curate``, by ``scripts/curate.sh``, from the committed
summary of that scale.  Every figure names the scale of the records it draws; figures are drawn
deterministically (no date or version in the files), so drawing again from the same records gives
the same bytes.  Every drawing function takes a pandas DataFrame of records (the store's, or any
table with the same columns).  A figure whose records are missing is skipped with a message.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from experiments.figures.extras import fig_dimension_scaling, fig_online_regret
from experiments.figures.paper import fig1, fig2, fig5, fig_classification, utility_vs_n
from experiments.figures.tables import (
    footnote1,
    sampler_convergence_table,
    table1,
    table2,
    utility_vs_epsilon_table,
    utility_vs_n_table,
)
from experiments.provenance import REPO_ROOT as REPO
from experiments.results import ResultStore

#: the curated output directory of each scale (committed; written only by ``--curate``)
CURATED = {"quick": REPO / "results" / "quick", "paper": REPO / "results" / "paper_scale"}


def make_all(
    results: Path,
    out: Path,
    only: set[str] | None = None,
    scale: str | None = None,
    summary: Path | None = None,
) -> dict[str, list[Path] | None]:
    """Draw from the JSON store ``results``, or from the compact summary directory ``summary``
    (experiments/summary.py) when given."""
    if summary is not None:
        from experiments.summary import load_summary

        df = load_summary(summary)
    else:
        df = ResultStore(results).load()
    if df.empty:
        print(f"no records under {results}/records", file=sys.stderr)
        return {}
    if scale and "scale" in df.columns:
        # records without a scale (Table 1, the Figure 1 bound) do not depend on it
        df = df[(df["scale"] == scale) | df["scale"].isna()]
    jobs = {
        "fig1": lambda: fig1(df, out / "figures"),
        "fig2": lambda: fig2(df, out / "figures"),
        "fig3": lambda: utility_vs_n(
            df, ["census", "kddcup"], out / "figures", "fig3", "Figure 3: utility vs n"
        ),
        "fig4": lambda: utility_vs_n(
            df, ["localization", "insurance"], out / "figures", "fig4", "Figure 4: utility vs n"
        ),
        "fig5": lambda: fig5(df, out / "figures"),
        "table1": lambda: table1(df, out / "tables"),
        "table2": lambda: table2(df, out / "tables"),
        "footnote1": lambda: footnote1(df, out / "tables"),
        "utility_vs_n": lambda: utility_vs_n_table(df, out / "tables"),
        "utility_vs_epsilon": lambda: utility_vs_epsilon_table(df, out / "tables"),
        "sampler_convergence": lambda: sampler_convergence_table(df, out / "tables"),
        "fig_classification": lambda: fig_classification(df, out / "figures"),
        "dimension_scaling": lambda: fig_dimension_scaling(df, out / "figures"),
        "online_regret": lambda: fig_online_regret(df, out / "figures"),
    }
    made = {}
    for name, job in jobs.items():
        if only and name not in only:
            continue
        made[name] = job()
        print(
            f"{name}: {'no records, skipped' if made[name] is None else ', '.join(map(str, made[name]))}"
        )
    return made


def default_out(results: Path, scale: str | None) -> Path:
    """Where figures go without ``--out``: ``<results>/drawn/<scale>`` (local, never committed)."""
    return results / "drawn" / (scale or "all")


def is_curated(path: Path) -> bool:
    """Is ``path`` one of the committed curated directories (or inside one)?"""
    path = path.resolve()
    return any(path == c or c in path.parents for c in CURATED.values())


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--results", default="results", help="results store root (contains records/)")
    ap.add_argument(
        "--out",
        default=None,
        help="where figures/ and tables/ go (default: <results>/drawn/<scale>, not committed)",
    )
    ap.add_argument("--only", default="", help="comma-separated subset, e.g. fig3,table2")
    ap.add_argument(
        "--scale", default=None, help="use only records of this scale (smoke, quick, paper)"
    )
    ap.add_argument(
        "--summary",
        default=None,
        help="draw from this compact summary directory (scripts/summarize_results.py) "
        "instead of the JSON records",
    )
    ap.add_argument(
        "--curate",
        action="store_true",
        help="allow --out to be a curated, committed directory (results/quick, "
        "results/paper_scale); scripts/curate.sh passes it",
    )
    args = ap.parse_args(argv)
    results = Path(args.results)
    out = Path(args.out) if args.out else default_out(results, args.scale)
    if is_curated(out) and not args.curate:
        if args.out is None:  # the default <results>/drawn lies inside a curated directory
            ap.error(
                f"--results {results} is a curated (committed) directory, which is not written "
                f"without --curate; draw its summary elsewhere: --summary {results / 'summary'} "
                "--out DIR"
            )
        ap.error(
            f"--out {out} is a curated (committed) directory: it is written only by "
            "scripts/curate.sh (or add --curate); choose another --out"
        )
    make_all(
        results,
        out,
        set(filter(None, args.only.split(","))) or None,
        args.scale,
        Path(args.summary) if args.summary else None,
    )
