#!/usr/bin/env python
"""Write (or extend) the compact summary of a results store: <results>/summary/records.csv and
gibbs_traces.csv (see experiments/store/summary.py).  Rows are merged by record id, so running it again
after more records were written adds them without duplicates.

    python scripts/summarize_results.py --results STORE --scale paper
    python scripts/make_figures.py --summary STORE/summary --scale paper   # no JSON needed

The committed summaries (results/quick/summary, results/paper_scale/summary) are written only by
``scripts/curate.sh SCALE STORE``, which passes ``--curate``; without it such an ``--out`` is refused.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from experiments.figures.cli import check_store_arguments, is_curated
from experiments.store.summary import SummaryError, parse_selector, update_summary


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--results", default="results", help="results store root (contains records/)")
    ap.add_argument("--out", default=None, help="summary directory (default <results>/summary)")
    ap.add_argument(
        "--scale", default=None, help="only records of this scale (and scale-free ones)"
    )
    ap.add_argument(
        "--curate",
        action="store_true",
        help="allow --out to be a curated, committed directory; scripts/curate.sh passes it",
    )
    ap.add_argument(
        "--replace",
        default="",
        metavar="EXPERIMENT/MECHANISM[:COLUMN=VALUE],...",
        help="selectors whose summary rows the store's records replace as a whole: a row a "
        "selector names (of --scale) that the store does not hold again is dropped (records of a "
        "changed protocol have new record ids), e.g. utility_vs_n/ppca or "
        "classification/ppca:classifier=linear_csvc",
    )
    args = ap.parse_args(argv)
    replace = tuple(t for t in args.replace.split(",") if t)
    for text in replace:
        try:
            parse_selector(text)
        except ValueError as exc:
            ap.error(f"--replace {exc}")
    check_store_arguments(ap, Path(args.results), args.scale)
    out = Path(args.out) if args.out else Path(args.results) / "summary"
    if is_curated(out) and not args.curate:
        ap.error(
            f"--out {out} is a curated (committed) directory: it is written only by "
            "scripts/curate.sh (or add --curate); choose another --out"
        )
    try:
        counts = update_summary(args.results, out, args.scale, replace)
    except SummaryError as exc:
        ap.exit(2, f"{ap.prog}: error: {exc}\n")
    except OSError as exc:  # a read-only store, a full disk, no permission: one line, no traceback
        where = exc.filename or out
        ap.exit(
            2,
            f"{ap.prog}: error: {where}: {exc.strerror or exc}; the summary is written to --out "
            f"({out}): give a writable one, or make room\n",
        )
    print(json.dumps({"summary": str(out), **counts}))


if __name__ == "__main__":
    main()
