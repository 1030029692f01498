#!/usr/bin/env bash
# Regenerates the audit tables of docs/audit.md and the README (records under $RESULTS_DIR, default
# results/, as for scripts/reproduce.sh; the studies of sections 6-8 print their tables and write JSON there).
# Re-running resumes (records already in the store are not recomputed).
set -uo pipefail
R=${RESULTS_DIR:-results}
PY="${PYTHON:-.venv/bin/python}"   # the project's interpreter unless PYTHON names another
# 1-5 and 9. the audits of the table (docs/audit.md, "Targets: measured"): one job per run of
#    experiments/audit/table_runs.py, each a run.py experiment=audit line, on every core (JOBS: how many
#    worker processes), resumably (scripts/plan.py audit --dry-run lists them)
nice -n 19 "$PY" scripts/plan.py audit --results "$R" || echo "FAILED: scripts/plan.py audit --results $R"
# 6. the white-box trade-off table: exact epsilon(delta), single-event bound, mu-GDP fit and certified
#    bound, Bayesian intervals; six mechanisms at delta 1e-5 and 0.1, 20,000 runs per side (one draw per row)
study() { nice -n 19 "$PY" scripts/studies/audit_tradeoff_table.py "$@" || echo "FAILED: audit_tradeoff_table.py $*"; }
mkdir -p "$R"
study --json "$R/audit_tradeoff_table.json"
# 7. the search with the black-box testers alone (experiment.handmade=false) on every registered mechanism
#    at the default claim, 100 calibration and 1,000 certifying runs, 20 s of calibration each; the same
#    audit one mechanism at a time, stored: run.py experiment=audit experiment.mechanism=NAME experiment.mode=search
#    experiment.handmade=false experiment.trials=1000 experiment.calibration_trials=100 experiment.time_budget=20
study --blackbox --trials 1000 --calibration-trials 100 --time-budget 20 --json "$R/audit_blackbox_table.json"
# 8. audit trials per second of every registered mechanism in each mode it runs in (one core, medians of
#    3; not niced, so that the rates measure the code rather than the other jobs)
"$PY" scripts/studies/audit_tradeoff_table.py --rates --json "$R/audit_rates.json" || echo "FAILED: --rates"
# the table drawn from the store's records: $R/audit/summary.csv and $R/audit/audit_table.md
# (scripts/plan.py audit --curate "$R" merges them into the committed results/audit/ instead)
"$PY" scripts/plan.py audit --curate "$R" --out "$R/audit" || echo "FAILED: scripts/plan.py audit --curate $R"
