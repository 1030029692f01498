"""The white-box trade-off table of docs/audit.md, regenerated in one run.

For each mechanism with a white-box tap (MOD-SULQ, Analyze Gauss at its cap ε = 0.9, noisy power,
streaming power, online PCA, the private sketch) and each δ (10⁻⁵, the claim, and 0.1), the
white-box statistic is drawn ``--trials`` times per dataset and the row gives: the exact ε(δ) of the
measured noisy statistic, the single-event Clopper–Pearson bound the white-box audit records, the
μ-GDP fit of the trade-off curve (an estimate, after Nasr et al., USENIX Security 2023), the certified
μ and its ε at δ (a bound where the statistic is Gaussian, an estimate for the sketch's χ² statistic),
and the Bayesian intervals (Jeffreys and uniform priors).  ``experiments/audit/table.py`` holds the
logic.  With ``--rates`` it measures instead the audit trials per second of every registered
mechanism in each mode (``experiments.audit.table.mechanism_rates``); with ``--blackbox`` it runs the
search with the black-box testers alone (``handmade=False``) on every registered mechanism at the
default claim and tabulates the certified bounds (``experiments.audit.table.blackbox_row``).

    .venv/bin/python scripts/studies/audit_tradeoff_table.py                 # the table, about 5 min
    .venv/bin/python scripts/studies/audit_tradeoff_table.py --trials 2000   # a quick check
    .venv/bin/python scripts/studies/audit_tradeoff_table.py --rates         # trials per second
    .venv/bin/python scripts/studies/audit_tradeoff_table.py --blackbox --trials 1000   # testers alone
"""

from __future__ import annotations

import argparse
import json
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from experiments.audit import table  # noqa: E402


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--mechanisms",
        nargs="+",
        help="default: the six of the table; with --rates or --blackbox every registered mechanism",
    )
    ap.add_argument("--deltas", nargs="+", type=float, default=list(table.TABLE_DELTAS))
    ap.add_argument(
        "--trials",
        type=int,
        help="runs per dataset: per row of the table (default 20000); certifying runs with "
        "--blackbox (default 1000)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--confidence", type=float, default=0.95)
    ap.add_argument("--json", help="also write the rows to this JSON file")
    ap.add_argument(
        "--rates",
        action="store_true",
        help="measure audit trials per second per mechanism and mode instead",
    )
    ap.add_argument("--repeats", type=int, default=3, help="--rates: timed runs per median")
    ap.add_argument(
        "--blackbox",
        action="store_true",
        help="run the search with the black-box testers alone on every registered mechanism instead",
    )
    ap.add_argument("--calibration-trials", type=int, default=100, help="--blackbox: per design")
    ap.add_argument(
        "--time-budget", type=float, default=20.0, help="--blackbox: seconds of calibration"
    )
    args = ap.parse_args(argv)
    t0, c0 = time.perf_counter(), time.process_time()
    print(f"load average before: {_load()} ({os.cpu_count()} cores)", flush=True)
    from mechanisms import MECHANISMS

    names = args.mechanisms or list(MECHANISMS)
    if args.blackbox:
        rows = []
        for name in names:
            r = table.blackbox_row(
                name,
                trials=args.trials or 1000,
                calibration_trials=args.calibration_trials,
                time_budget=args.time_budget,
                seed=args.seed,
                confidence=args.confidence,
            )
            print(
                f"{name:>18}: {r['audited_epsilon_lower']:.3f} against {r['claimed_epsilon']:g} "
                f"({r['design']} / {r['statistic']}, {r['seconds']:.0f} s)",
                flush=True,
            )
            rows.append({k: v for k, v in r.items() if k != "leaderboard"})
        print()
        print(table.blackbox_table(rows))
    elif args.rates:
        rows = table.mechanism_rates(
            names,
            repeats=args.repeats,
            seed=args.seed,
            progress=lambda r: print(
                f"{r['mechanism']:>18} {r['mode']:>8}: {r['trials_per_second']:9.0f} trials per CPU s "
                f"(repeats {', '.join(f'{x:.0f}' for x in r['repeat_rates'])}; "
                f"{r['trials_per_wall_second']:.0f} per wall s)",
                flush=True,
            ),
        )
        print()
        print(table.rates_table(rows))
    else:
        rows = table.tradeoff_rows(
            args.mechanisms or table.TABLE_MECHANISMS,
            args.deltas,
            trials=args.trials or 20000,
            seed=args.seed,
            confidence=args.confidence,
            progress=lambda r: print(
                f"{r['mechanism']:>16} delta={r['delta']:g}: exact {r['exact_epsilon']:.3f}, "
                f"CP {r['audited_epsilon_lower']:.3f}, fit {r['gdp_epsilon_fit']:.3f}, "
                f"GDP {r['gdp_epsilon_lower']:.3f} ({r['gdp_epsilon_reading']}), "
                f"{r['seconds']:.0f} s",
                flush=True,
            ),
        )
        print()
        print(table.markdown_table(rows))
        print()
        print(table.bayes_table(rows))
    print(
        f"\nwall time {time.perf_counter() - t0:.0f} s, CPU time {time.process_time() - c0:.0f} s; "
        f"load average after: {_load()}"
    )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1, default=float)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
