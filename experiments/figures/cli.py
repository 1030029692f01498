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
from experiments.paths import config_dir
from experiments.store.provenance import REPO_ROOT as REPO
from experiments.store.store import ResultStore

#: the curated output directory of each scale (committed; written only by ``--curate``)
CURATED = {"quick": REPO / "results" / "quick", "paper": REPO / "results" / "paper_scale"}
#: every committed results folder: the scales', the benchmark's (scripts/benchmark.py curate/draw)
#: and the audit table's (scripts/plan.py audit --curate/--draw); none is a store or a scratch output
COMMITTED_RESULTS = (*CURATED.values(), REPO / "results" / "benchmark", REPO / "results" / "audit")


def make_all(
    results: Path,
    out: Path,
    only: set[str] | None = None,
    scale: str | None = None,
    summary: Path | None = None,
) -> dict[str, list[Path] | None]:
    """Draw from the JSON store ``results``, or from the compact summary directory ``summary``
    (experiments/store/summary.py) when given."""
    if summary is not None:
        from experiments.store.summary import load_summary

        df = load_summary(summary)
    else:
        df = ResultStore(results).load()
    if df.empty:
        print(f"no records under {results}/records", file=sys.stderr)
        return {}
    if scale and "scale" in df.columns:
        # records without a scale (Table 1, the Figure 1 bound) do not depend on it
        df = df[(df["scale"] == scale) | df["scale"].isna()]
    made = {}
    for name, draw in DRAWINGS.items():
        if only and name not in only:
            continue
        made[name] = draw(df, out)
        print(
            f"{name}: {'no records, skipped' if made[name] is None else ', '.join(map(str, made[name]))}"
        )
    return made


#: every figure and table, by the name ``--only`` takes: (records, output directory) -> paths or None
DRAWINGS = {
    "fig1": lambda df, out: fig1(df, out / "figures"),
    "fig2": lambda df, out: fig2(df, out / "figures"),
    "fig3": lambda df, out: utility_vs_n(
        df, ["census", "kddcup"], out / "figures", "fig3", "Figure 3: utility vs n"
    ),
    "fig4": lambda df, out: utility_vs_n(
        df, ["localization", "insurance"], out / "figures", "fig4", "Figure 4: utility vs n"
    ),
    "fig5": lambda df, out: fig5(df, out / "figures"),
    "table1": lambda df, out: table1(df, out / "tables"),
    "table2": lambda df, out: table2(df, out / "tables"),
    "footnote1": lambda df, out: footnote1(df, out / "tables"),
    "utility_vs_n": lambda df, out: utility_vs_n_table(df, out / "tables"),
    "utility_vs_epsilon": lambda df, out: utility_vs_epsilon_table(df, out / "tables"),
    "sampler_convergence": lambda df, out: sampler_convergence_table(df, out / "tables"),
    "fig_classification": lambda df, out: fig_classification(df, out / "figures"),
    "dimension_scaling": lambda df, out: fig_dimension_scaling(df, out / "figures"),
    "online_regret": lambda df, out: fig_online_regret(df, out / "figures"),
}


def scale_names() -> list[str]:
    """The scales of ``conf/scale/`` (what ``--scale`` may name)."""
    return sorted(p.stem for p in (config_dir() / "scale").glob("*.yaml"))


def check_store_arguments(
    ap: argparse.ArgumentParser, results: Path, scale: str | None, *, store: bool = True
) -> None:
    """Refuse, in argparse's one line and exit 2, a ``--scale`` that is no scale and (``store``) a
    ``--results`` that holds no ``records/``: a typo would otherwise draw or summarise nothing and
    exit 0."""
    if scale is not None and scale not in scale_names():
        ap.error(f"--scale {scale}: no such scale; valid: {', '.join(scale_names())}")
    if store and not (results / "records").is_dir():
        ap.error(
            f"--results {results}: no records/ directory there (a results store holds one; a "
            "summary is drawn with --summary DIR)"
        )


def default_out(results: Path, scale: str | None) -> Path:
    """Where figures go without ``--out``: ``<results>/drawn/<scale>`` (local, never committed)."""
    return results / "drawn" / (scale or "all")


def is_curated(path: Path) -> bool:
    """Is ``path`` one of the committed results folders (:data:`COMMITTED_RESULTS`), or inside one?"""
    path = path.resolve()
    return any(path == c or c in path.parents for c in COMMITTED_RESULTS)


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
    only = set(filter(None, args.only.split(",")))
    if only - set(DRAWINGS):
        ap.error(
            f"--only {','.join(sorted(only - set(DRAWINGS)))}: no such figure or table; valid: "
            + ", ".join(DRAWINGS)
        )
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
    check_store_arguments(ap, results, args.scale, store=args.summary is None)
    make_all(
        results,
        out,
        only or None,
        args.scale,
        Path(args.summary) if args.summary else None,
    )
