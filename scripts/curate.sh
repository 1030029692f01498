#!/usr/bin/env bash
# The one step that writes the curated, committed outputs of a scale:
#   scripts/curate.sh quick [STORE [REPLACE]]    -> results/quick/{summary,figures,tables}
#   scripts/curate.sh paper [STORE [REPLACE]]    -> results/paper_scale/{summary,figures,tables}
# With STORE (a results store holding records/, e.g. the RESULTS_DIR of scripts/reproduce.sh), the
# records of that scale are first merged into the committed summary (rows keyed by record id); then
# every figure and table is drawn from the committed summary alone, so what is committed can be
# checked against the summary (tests/experiments/figures/test_curated_outputs.py).  REPLACE
# (EXPERIMENT/MECHANISM[:COLUMN=VALUE],..., e.g. utility_vs_n/ppca) names the rows the store's
# records replace as a whole (summarize_results.py --replace): after a change of protocol.
# Quick scale also redraws the peers figures from the committed peers tables.  Nothing else writes
# into results/quick or results/paper_scale: run.py and scripts/make_figures.py without --curate
# write elsewhere.
# Environment: PYTHON (default .venv/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE="${1:?usage: scripts/curate.sh quick|paper [STORE [REPLACE]]}"
STORE="${2:-}"
REPLACE="${3:-}"
PY="${PYTHON:-.venv/bin/python}"
case "$SCALE" in
  quick) DIR=results/quick ;;
  paper) DIR=results/paper_scale ;;
  *) echo "scripts/curate.sh: unknown scale '$SCALE' (valid: quick, paper)" >&2; exit 2 ;;
esac
if [ -n "$STORE" ]; then
  "$PY" scripts/summarize_results.py --results "$STORE" --scale "$SCALE" --out "$DIR/summary" --curate \
    --replace "$REPLACE"
fi
"$PY" scripts/make_figures.py --summary "$DIR/summary" --scale "$SCALE" --out "$DIR" --curate
if [ "$SCALE" = quick ] && [ -f "$DIR/tables/peers.csv" ]; then
  "$PY" scripts/plot_peers.py --tables "$DIR/tables" --scale "$SCALE" --out "$DIR/figures" --curate
fi
