#!/usr/bin/env bash
# Reproduce the JMLR 2013 experiments (and the dimension-scaling and online-regret experiments)
# end to end, then regenerate every figure and table.
#   scripts/reproduce.sh quick     # minutes on a 2-core machine (the curated figures come from this)
#   scripts/reproduce.sh paper     # the paper's settings: hours
# Re-running resumes: records already in the results store are skipped.
# Needs PRIVPCA_DATA_DIR (raw UCI files); datasets whose files are missing are skipped with a note.
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE="${1:-quick}"
RESULTS="${RESULTS_DIR:-results}"
PY="${PYTHON:-.venv/bin/python}"
JOBS="${JOBS:-2}"
run() { echo "+ run.py $*" >&2; "$PY" run.py "results_dir=$RESULTS" quiet=true "$@" | tail -n 1; }
sweep() { echo "+ run.py -m $*" >&2; "$PY" run.py -m hydra/launcher=local_parallel "hydra.launcher.n_jobs=$JOBS" \
          "results_dir=$RESULTS" quiet=true "$@" | grep '^{' || true; }

have() {  # is the raw data of dataset $1 loadable?
  "$PY" - "$1" <<'PYEOF' 2>/dev/null
import sys
from experiments.datasets import load_dataset
load_dataset(sys.argv[1], download=False)
PYEOF
}
uci=()
for ds in kddcup census localization insurance; do
  if have "$ds"; then uci+=("$ds"); else echo "skipping $ds: raw data not found (see README, Data)" >&2; fi
done
list() { local IFS=,; echo "$*"; }
cls=()
for ds in kddcup localization; do [[ " ${uci[*]} " == *" $ds "* ]] && cls+=("$ds"); done

start=$(date +%s)
run experiment=table1
run experiment=sulq_bound
gibbs=()
for ds in kddcup insurance; do [[ " ${uci[*]} " == *" $ds "* ]] && gibbs+=("$ds"); done
[ ${#gibbs[@]} -gt 0 ] && sweep experiment=gibbs_convergence "dataset=$(list "${gibbs[@]}")" "scale=$SCALE"
sweep experiment=utility_vs_epsilon mechanism=pca,mod_sulq,ppca "scale=$SCALE"
[ ${#cls[@]} -gt 0 ] && sweep experiment=classification "dataset=$(list "${cls[@]}")" \
      mechanism=pca,ppca,mod_sulq,random "scale=$SCALE"
# footnote 1: on census and insurance the classifier after PCA does no better than the majority label
fn=()
for ds in census insurance; do [[ " ${uci[*]} " == *" $ds "* ]] && fn+=("$ds"); done
[ ${#fn[@]} -gt 0 ] && sweep experiment=classification "dataset=$(list "${fn[@]}")" mechanism=pca "scale=$SCALE"
[ ${#uci[@]} -gt 0 ] && sweep experiment=utility_vs_n "dataset=$(list "${uci[@]}")" \
      mechanism=pca,ppca,mod_sulq,random "scale=$SCALE"
# beyond the paper (synthetic data): dimension scaling and online regret
sweep experiment=dimension_scaling mechanism=pca,ppca,mod_sulq,analyze_gauss,noisy_power,subspace_approx "scale=$SCALE"
run experiment=online_regret "scale=$SCALE"
"$PY" scripts/make_figures.py --results "$RESULTS" --scale "$SCALE"
echo "reproduction ($SCALE) finished in $(( $(date +%s) - start )) s" >&2
