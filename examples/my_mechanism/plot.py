#!/usr/bin/env python
"""Draw utility versus n for every mechanism stored for one dataset (e.g. my_gauss beside PPCA).

    python examples/my_mechanism/plot.py --results RESULTS_DIR --dataset gaussian10 --out DIR

Reads the records of ``experiment=utility_vs_n`` from the results store and draws them with the
harness's own plotting function (``experiments.figures.paper.utility_vs_n``) and line styles
(``experiments.figures.style.STYLE``), so the figure looks like Figures 3-4.  Writes
``DIR/utility_vs_n_<dataset>.png`` and ``.pdf`` (default ``RESULTS_DIR/drawn/my_mechanism``, beside
what ``scripts/make_figures.py`` draws under ``RESULTS_DIR/drawn/``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from experiments.figures import paper as harness_figures
from experiments.figures import style as harness_style
from experiments.store.store import ResultStore


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--results", required=True, help="results store root (the sweep's results_dir)")
    ap.add_argument("--dataset", default="gaussian10")
    ap.add_argument(
        "--scale", default=None, help="only records of this scale (smoke, quick, paper)"
    )
    ap.add_argument(
        "--out", default=None, help="output directory (default: RESULTS/drawn/my_mechanism)"
    )
    args = ap.parse_args(argv)
    df = ResultStore(Path(args.results)).load(experiment="utility_vs_n", dataset=args.dataset)
    if args.scale and len(df):
        df = df[df["scale"] == args.scale]
    if df.empty:
        print(f"no utility_vs_n records for {args.dataset} under {args.results}", file=sys.stderr)
        return 1
    out = Path(args.out) if args.out else Path(args.results) / "drawn" / "my_mechanism"
    plotting = harness_figures
    # mechanisms the harness has no line style for get their own colour (the default cycle would
    # reuse PPCA's blue), added to the harness's STYLE table in this process only
    extra_colours = iter(
        ["tab:orange", "tab:brown", "tab:olive", "tab:cyan", "tab:pink", "tab:gray"]
    )
    for mech in sorted(set(df.mechanism) - set(harness_style.STYLE)):
        harness_style.STYLE[mech] = dict(
            color=next(extra_colours, None), ls="-.", marker="o", label=mech
        )
    paths = plotting.utility_vs_n(
        df,
        [args.dataset],
        out,
        f"utility_vs_n_{args.dataset}",
        f"Utility vs n on {args.dataset}: {', '.join(sorted(set(df.mechanism)))}",
    )
    for mech, group in df.groupby("mechanism"):
        summary = group.groupby("n")["q_F"].agg(["mean", "count"])
        print(mech, "mean q_F by n:", ", ".join(_mean_at(n, row) for n, row in summary.iterrows()))
    print("written:", ", ".join(map(str, paths)))
    return 0


def _mean_at(n, row) -> str:
    runs = int(row["count"])
    return f"n={n}: {row['mean']:.4f} ({runs} run{'' if runs == 1 else 's'})"


if __name__ == "__main__":
    sys.exit(main())
