#!/usr/bin/env python
"""Write (or extend) the compact summary of a results store: <results>/summary/records.csv and
gibbs_traces.csv (see experiments/summary.py).  Rows are merged by record id, so running it again
after more records were written adds them without duplicates.

    python scripts/summarize_results.py --results STORE --scale paper
    python scripts/make_figures.py --summary STORE/summary --scale paper   # no JSON needed

The committed summaries (results/quick/summary, results/paper_scale/summary) are written by
``scripts/curate.sh SCALE STORE``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from experiments.summary import update_summary


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--results", default="results", help="results store root (contains records/)")
    ap.add_argument("--out", default=None, help="summary directory (default <results>/summary)")
    ap.add_argument(
        "--scale", default=None, help="only records of this scale (and scale-free ones)"
    )
    args = ap.parse_args(argv)
    out = Path(args.out) if args.out else Path(args.results) / "summary"
    print(json.dumps({"summary": str(out), **update_summary(args.results, out, args.scale)}))


if __name__ == "__main__":
    main()
