"""The white-box trade-off table of docs/audit.md, regenerated in one run.

For each mechanism with a white-box tap (MOD-SULQ, Analyze Gauss at its cap ε = 0.9, noisy power,
streaming power, online PCA, the private sketch) and each δ (10⁻⁵, the claim, and 0.1), the
white-box statistic is drawn ``--trials`` times per dataset and the row gives: the exact ε(δ) of the
measured noisy statistic, the single-event Clopper–Pearson bound the white-box audit records, the
μ-GDP fit of the trade-off curve (an estimate, after Nasr et al., USENIX Security 2023), the certified
μ and its ε at δ (a bound where the statistic is Gaussian, an estimate for the sketch's χ² statistic),
and the Bayesian intervals (Jeffreys and uniform priors).  ``experiments/audit/table.py`` holds the
logic.  With ``--rates`` it measures instead the audit trials per second of every registered
mechanism in each mode (``experiments.audit.table.mechanism_rates``).

    .venv/bin/python scripts/studies/audit_tradeoff_table.py                 # the table, about 5 min
    .venv/bin/python scripts/studies/audit_tradeoff_table.py --trials 2000   # a quick check
    .venv/bin/python scripts/studies/audit_tradeoff_table.py --rates         # trials per second
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
    ap.add_argument("--mechanisms", nargs="+", default=list(table.TABLE_MECHANISMS))
    ap.add_argument("--deltas", nargs="+", type=float, default=list(table.TABLE_DELTAS))
    ap.add_argument("--trials", type=int, default=20000, help="runs per dataset and row")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--confidence", type=float, default=0.95)
    ap.add_argument("--json", help="also write the rows to this JSON file")
    ap.add_argument(
        "--rates",
        action="store_true",
        help="measure audit trials per second per mechanism and mode instead",
    )
    ap.add_argument("--repeats", type=int, default=3, help="--rates: timed runs per median")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    print(f"load average before: {_load()} ({os.cpu_count()} cores)", flush=True)
    if args.rates:
        from mechanisms import MECHANISMS

        names = args.mechanisms if "--mechanisms" in (argv or []) else list(MECHANISMS)
        rows = table.mechanism_rates(
            names,
            repeats=args.repeats,
            seed=args.seed,
            progress=lambda r: print(
                f"{r['mechanism']:>18} {r['mode']:>8}: {r['trials_per_second']:9.0f} trials/s "
                f"(repeats {', '.join(f'{x:.0f}' for x in r['repeat_rates'])})",
                flush=True,
            ),
        )
        print()
        print(table.rates_table(rows))
    else:
        rows = table.tradeoff_rows(
            args.mechanisms,
            args.deltas,
            trials=args.trials,
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
    print(f"\nwall time {time.perf_counter() - t0:.0f} s; load average after: {_load()}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1, default=float)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
