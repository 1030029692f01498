#!/usr/bin/env bash
# Reproduce the JMLR 2013 experiments (and the dimension-scaling and online-regret experiments)
# end to end, then regenerate every figure and table.
#   scripts/reproduce.sh quick     # minutes on a 2-core machine (results/quick is curated from this)
#   scripts/reproduce.sh paper     # the paper's settings: hours on 2 cores (docs/performance.md, README)
# Re-running resumes: records already in the results store are skipped.
# Needs PRIVPCA_DATA_DIR (raw UCI files); datasets whose files are missing are skipped with a note.
# Environment: RESULTS_DIR (default results), PYTHON, JOBS (processes, default 2),
#   GIBBS_SAMPLERS (Figure 2 samplers, default gibbs,reference; gibbs runs at 2 and at 1 sweep per iteration),
#   EXTRAS (1 = also the beyond-the-paper experiments; default 1 for quick, 0 for paper),
#   DATASETS (comma-separated UCI data sets to run; default kddcup,census,localization,insurance),
#   PPCA_SWEEPS (Givens sweeps per iteration of the Figures 3-4 PPCA chains; default: the scale's
#   ppca_sweeps_per_iteration: 1 at paper scale; see docs/sampler.md for the mixing measurements).
# The total wall time is printed and written to $RESULTS_DIR/wall_time_<scale>.txt.
set -euo pipefail
# One BLAS thread per process: the script itself keeps the cores busy with several processes, and
# OpenBLAS's default (one thread per core, spinning between calls) oversubscribes them.  Measured
# (scripts/benchmarks/bench_blas_threads.py: 2 busy single-thread workers beside a loop of 512 x 512 eigh): with
# one thread the eigh loop ran 5.5x and the workers 1.5x faster than with OpenBLAS's default
# (docs/performance.md).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" \
       MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"
cd "$(dirname "$0")/.."
SCALE="${1:-quick}"
if [ ! -f "conf/scale/$SCALE.yaml" ]; then  # before any work is done
  echo "Error: unknown scale '$SCALE'; valid: $(cd conf/scale && ls *.yaml | sed 's/\.yaml$//' | paste -sd, -)" >&2
  exit 2
fi
RESULTS="${RESULTS_DIR:-results}"
PY="${PYTHON:-.venv/bin/python}"
JOBS="${JOBS:-2}"
GIBBS_SAMPLERS="${GIBBS_SAMPLERS:-gibbs,reference}"
if [ "$SCALE" = paper ]; then EXTRAS="${EXTRAS:-0}"; else EXTRAS="${EXTRAS:-1}"; fi
# print_record=true: each job prints its result as one JSON line (the last line of its stdout).
# jsonl keeps those lines; with pipefail a failing run.py still fails the pipeline (and the script).
jsonl() { grep '^{' || true; }
run() { echo "+ run.py $*" >&2; "$PY" run.py "results_dir=$RESULTS" quiet=true print_record=true "$@" | tail -n 1; }
sweep() { echo "+ run.py -m $*" >&2; "$PY" run.py -m hydra/launcher=local_parallel "hydra.launcher.n_jobs=$JOBS" \
          "results_dir=$RESULTS" quiet=true print_record=true "$@" | jsonl; }

have() {  # is the raw data of dataset $1 loadable?
  "$PY" - "$1" <<'PYEOF' 2>/dev/null
import sys
from experiments.data.uci import load_dataset
load_dataset(sys.argv[1], download=False)
PYEOF
}
uci=()
DATASETS="${DATASETS:-kddcup,census,localization,insurance}"
for ds in ${DATASETS//,/ }; do
  case "$ds" in
    kddcup|census|localization|insurance) ;;
    *) echo "Error: unknown data set '$ds' in DATASETS; valid: kddcup,census,localization,insurance" >&2; exit 2 ;;
  esac
done
for ds in kddcup census localization insurance; do
  [[ ",$DATASETS," == *",$ds,"* ]] || continue
  if have "$ds"; then uci+=("$ds"); else echo "skipping $ds: raw data not found (see docs/data.md)" >&2; fi
done
list() { local IFS=,; echo "$*"; }
cls=()
for ds in kddcup localization; do [[ " ${uci[*]} " == *" $ds "* ]] && cls+=("$ds"); done

start=$(date +%s)
run experiment=table1 "experiment.datasets=[$(list "${uci[@]}")]"
run experiment=sulq_bound
# One background lane, one process at a time: Figure 2 (both samplers; the Hoff reference chains are
# long single jobs), Table 2 and footnote 1 and the non-PPCA curves of Figures 3-4.  It runs beside
# the Figures 3-4 PPCA groups, which keep JOBS processes busy and split into short jobs; Figure 5 and
# the experiments beyond the paper follow the PPCA groups in the main lane, beside what is left of the
# background lane, so both cores stay busy to the end (docs/performance.md).
bg() { echo "+ run.py -m $* (background lane)" >&2; "$PY" run.py -m "results_dir=$RESULTS" quiet=true print_record=true "$@" \
       | jsonl; }
(
  gibbs=()
  for ds in insurance kddcup; do [[ " ${uci[*]} " == *" $ds "* ]] && gibbs+=("$ds"); done
  if [ ${#gibbs[@]} -gt 0 ]; then
    bg experiment=gibbs_convergence "dataset=$(list "${gibbs[@]}")" "experiment.sampler=$GIBBS_SAMPLERS" "scale=$SCALE"
    # the fast chain as the grouped Figures 3-4 and Table 2 releases run it: 1 Givens sweep per iteration
    if [[ ",$GIBBS_SAMPLERS," == *",gibbs,"* ]]; then
      bg experiment=gibbs_convergence "dataset=$(list "${gibbs[@]}")" experiment.sampler=gibbs \
         experiment.sweeps_per_iteration=1 "scale=$SCALE"
    fi
  fi
  if [ ${#cls[@]} -gt 0 ]; then
    bg experiment=classification "dataset=$(list "${cls[@]}")" mechanism=ppca,pca,mod_sulq,random "scale=$SCALE"
  fi
  # footnote 1: on census and insurance the classifier after PCA does no better than the majority label
  fn=()
  for ds in census insurance; do [[ " ${uci[*]} " == *" $ds "* ]] && fn+=("$ds"); done
  if [ ${#fn[@]} -gt 0 ]; then
    bg experiment=classification "dataset=$(list "${fn[@]}")" mechanism=pca "scale=$SCALE"
  fi
  # census once more without the income label's own one-hot columns among the features
  if [[ " ${fn[*]} " == *" census "* ]]; then
    bg experiment=classification dataset=census mechanism=pca "scale=$SCALE" "experiment.drop_feature_prefixes=['income=']"
  fi
  if [ ${#uci[@]} -gt 0 ]; then
    bg experiment=utility_vs_n "dataset=$(list "${uci[@]}")" mechanism=pca,mod_sulq,random "scale=$SCALE"
  fi
) &
lane_pid=$!
# if the main lane stops (an error, Ctrl-C), the background lane stops with it
stop_lane() { if kill -0 "$lane_pid" 2>/dev/null; then pkill -TERM -P "$lane_pid" 2>/dev/null || true; kill "$lane_pid" 2>/dev/null || true; fi; }
trap stop_lane EXIT
# Figures 3-4, PPCA: the (n, subset) groups of one data set over JOBS workers, census (longest) first
for ds in census insurance kddcup localization; do
  if [[ " ${uci[*]} " == *" $ds "* ]]; then
    run experiment=utility_vs_n mechanism=ppca "dataset=$ds" "workers=$JOBS" "scale=$SCALE" \
        ${PPCA_SWEEPS:+"++scale.ppca_sweeps_per_iteration=$PPCA_SWEEPS"}
  fi
done
if [ "$EXTRAS" = 1 ]; then
  # beyond the paper (synthetic data): dimension scaling and online regret
  sweep experiment=dimension_scaling mechanism=pca,ppca,mod_sulq,analyze_gauss,noisy_power,subspace_approx "scale=$SCALE"
  run experiment=online_regret "scale=$SCALE"
fi
"$PY" run.py -m "results_dir=$RESULTS" quiet=true print_record=true experiment=utility_vs_epsilon \
  mechanism=pca,mod_sulq,ppca "scale=$SCALE" | jsonl
if ! wait "$lane_pid"; then
  echo "Error: the background lane stopped at a failed run (its error is above); the records already" \
       "written are kept, and the same command resumes" >&2
  exit 2
fi
"$PY" scripts/summarize_results.py --results "$RESULTS" --scale "$SCALE"
# drawn into $RESULTS/drawn/$SCALE; the committed results/quick or results/paper_scale change only
# through  scripts/curate.sh $SCALE $RESULTS
"$PY" scripts/make_figures.py --summary "$RESULTS/summary" --results "$RESULTS" --scale "$SCALE"
elapsed=$(( $(date +%s) - start ))
msg="reproduction ($SCALE, JOBS=$JOBS, EXTRAS=$EXTRAS) finished in $elapsed s ($(( elapsed / 3600 )) h $(( elapsed % 3600 / 60 )) min) on $(getconf _NPROCESSORS_ONLN) cores, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "$msg" >&2
echo "$msg" > "$RESULTS/wall_time_$SCALE.txt"
