#!/usr/bin/env bash
# Reproduce the JMLR 2013 experiments (and the dimension-scaling and online-regret experiments)
# end to end, drawing every figure and table as soon as its records are there.
#   scripts/reproduce.sh quick     # minutes on a 2-core machine (results/quick is curated from this)
#   scripts/reproduce.sh paper     # the paper's settings (docs/performance.md, README)
# The work is a plan of independent jobs (experiments/plan, scripts/plan.py) run by Dask on every core
# of this machine; `scripts/plan.py SCALE --dry-run` prints the jobs, their estimated CPU-s and the
# makespan on 2, 16 and 64 workers; `scripts/plan.py SCALE --engine slurm ...` runs the same plan on a
# cluster (docs/performance.md).
# Re-running resumes: jobs already done and records already in the results store are skipped.
# Needs PRIVPCA_DATA_DIR (raw UCI files); datasets whose files are missing are skipped with a note.
# Environment: RESULTS_DIR (default results), PYTHON,
#   JOBS (worker processes; default: one per core of this machine),
#   GIBBS_SAMPLERS (Figure 2 samplers, default gibbs,reference; gibbs runs at 2 and at 1 sweep per iteration),
#   EXTRAS (1 = also the beyond-the-paper experiments; default 1 for quick, 0 for paper),
#   DATASETS (comma-separated UCI data sets to run; default kddcup,census,localization,insurance),
#   PPCA_SWEEPS (Givens sweeps per iteration of the Figures 3-4 PPCA chains; default: the scale's
#   ppca_sweeps_per_iteration: 1 at paper scale; see docs/sampler.md for the mixing measurements).
# Exit status 2 when a job failed (one line each, after the other jobs finished; the records written
# are kept), 130 on Ctrl-C (every worker stopped; the same command resumes).
# The total wall time is printed and written to $RESULTS_DIR/wall_time_<scale>.txt.
set -euo pipefail
# One BLAS thread per worker process (the plan keeps every core busy with its own workers, and
# OpenBLAS's default, one spinning thread per core, oversubscribes them: docs/performance.md).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" \
       MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"
cd "$(dirname "$0")/.."
SCALE="${1:-quick}"
if [ ! -f "conf/scale/$SCALE.yaml" ]; then  # before any work is done
  echo "Error: unknown scale '$SCALE'; valid: $(cd conf/scale && ls *.yaml | sed 's/\.yaml$//' | paste -sd, -)" >&2
  exit 2
fi
DATASETS="${DATASETS:-kddcup,census,localization,insurance}"
for ds in ${DATASETS//,/ }; do
  case "$ds" in
    kddcup|census|localization|insurance) ;;
    *) echo "Error: unknown data set '$ds' in DATASETS; valid: kddcup,census,localization,insurance" >&2; exit 2 ;;
  esac
done
RESULTS="${RESULTS_DIR:-results}"
PY="${PYTHON:-.venv/bin/python}"
start=$(date +%s)
# JOBS, EXTRAS, GIBBS_SAMPLERS, PPCA_SWEEPS and DATASETS are read by scripts/plan.py. Each figure and
# table is drawn by a job of the plan as soon as the jobs of its records are done, into
# $RESULTS/drawn/$SCALE; the committed results/quick or results/paper_scale change only through
# scripts/curate.sh $SCALE $RESULTS
"$PY" scripts/plan.py "$SCALE" --results "$RESULTS" --datasets "$DATASETS"
"$PY" scripts/summarize_results.py --results "$RESULTS" --scale "$SCALE"
elapsed=$(( $(date +%s) - start ))
workers="${JOBS:-$(getconf _NPROCESSORS_ONLN)}"
msg="reproduction ($SCALE, $workers workers, EXTRAS=${EXTRAS:-default}) finished in $elapsed s ($(( elapsed / 3600 )) h $(( elapsed % 3600 / 60 )) min) on $(getconf _NPROCESSORS_ONLN) cores, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "$msg" >&2
echo "$msg" > "$RESULTS/wall_time_$SCALE.txt"
