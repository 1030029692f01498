#!/usr/bin/env bash
# Regenerates the audit tables of docs/audit.md and the README (records under $RESULTS_DIR, default
# results/, as for scripts/reproduce.sh; the studies of sections 6-8 print their tables and write JSON there).
# Each line is one audit; re-running resumes (records already in the store are not recomputed).
set -uo pipefail
R=${RESULTS_DIR:-results}
PY="${PYTHON:-.venv/bin/python}"   # the project's interpreter unless PYTHON names another
run() { nice -n 19 "$PY" run.py experiment=audit results_dir="$R" quiet=true print_record=true "$@" | tail -1 || echo "FAILED: $*"; }
# 1. white-box: each Gaussian mechanism (Analyze Gauss at its cap 0.9) and its 25%-cut variant, delta = 0.1
for m in mod_sulq analyze_gauss noisy_power streaming_power online_pca private_sketch; do
  run experiment.mechanism=$m experiment.mode=whitebox delta=0.1 experiment.trials=20000
  run experiment.mechanism=$m experiment.mode=whitebox delta=0.1 experiment.trials=20000 experiment.variant=noise_cut
done
# MOD-SULQ's exact epsilon(delta) is small (0.098): more trials to come within 1.5 of it
run experiment.mechanism=mod_sulq experiment.mode=whitebox delta=0.1 experiment.trials=100000
# white-box at the claimed delta (the experiment's 1e-5): exact epsilon(delta) and bound of each
for m in mod_sulq analyze_gauss noisy_power streaming_power online_pca private_sketch; do
  run experiment.mechanism=$m experiment.mode=whitebox experiment.trials=20000
done
# 2. the search on the known-broken exact-case estimators (epsilon 1, delta 1e-6): the published
#    Algorithm 1 and the three releases whose bits carry individual rows, catalogue + random designs;
#    then the registry subspace_exact, which must stay at or below its claim; and the same with random
#    designs only.
for variant in "experiment.variant=unfixed" "experiment.variant=tolerance" "experiment.variant=first_rows_frame" \
               "experiment.variant=rounded_dedup" ""; do
  run experiment.mechanism=subspace_exact experiment.mode=search epsilon=1 delta=1e-6 experiment.trials=2000 \
      experiment.calibration_trials=100 experiment.n_random=12 $variant
done
for variant in "experiment.variant=unfixed" ""; do
  run experiment.mechanism=subspace_exact experiment.mode=search epsilon=1 delta=1e-6 experiment.trials=2000 \
      experiment.calibration_trials=100 experiment.n_random=30 experiment.use_catalogue=false $variant
done
# the hand-made design of the registry subspace_exact (gap at the test threshold), default claim
run experiment.mechanism=subspace_exact experiment.trials=20000
# 3. the search on every registry mechanism at the audit's default claim (epsilon 2, delta 1e-5)
for m in pca random mod_sulq analyze_gauss ppca ppca_iterative noisy_power streaming_power private_sketch \
         online_pca subspace_approx subspace_exact; do
  run experiment.mechanism=$m experiment.mode=search experiment.trials=2000 experiment.calibration_trials=200 \
      experiment.time_budget=90
done
# 4. the planted defects, each with the mode that must catch it, and the modes that need not
S="experiment.mode=search experiment.trials=2000 experiment.calibration_trials=200 experiment.time_budget=90"
run experiment.mechanism=mod_sulq $S experiment.variant=sign_bit
run experiment.mechanism=mod_sulq experiment.variant=sign_bit experiment.trials=20000
for dl in 1e-5 0.1; do
  run experiment.mechanism=online_pca experiment.mode=whitebox experiment.variant=tree_without_height \
      experiment.trials=20000 delta=$dl
done
run experiment.mechanism=online_pca $S experiment.variant=tree_without_height
run experiment.mechanism=ppca $S experiment.variant=doubled_exponent
for variant in "experiment.variant=doubled_exponent" ""; do
  run experiment.mechanism=ppca experiment.mode=search experiment.trials=10000 experiment.calibration_trials=300 \
      experiment.time_budget=90 $variant
done
run experiment.mechanism=ppca experiment.variant=doubled_exponent experiment.trials=20000
# 5. the Wishart mechanism of JXZ16 / IS16, published as (epsilon, 0)-DP: the search catches it through the
#    noisy matrix it releases
run experiment.mechanism=mod_sulq $S experiment.variant=wishart
# 6. the white-box trade-off table: exact epsilon(delta), single-event bound, mu-GDP fit and certified
#    bound, Bayesian intervals; six mechanisms at delta 1e-5 and 0.1, 20,000 runs per side (one draw per row)
study() { nice -n 19 "$PY" scripts/studies/audit_tradeoff_table.py "$@" || echo "FAILED: audit_tradeoff_table.py $*"; }
mkdir -p "$R"
study --json "$R/audit_tradeoff_table.json"
# 7. the search with the black-box testers alone (experiment.handmade=false) on every registered mechanism
#    at the default claim, 100 calibration and 1,000 certifying runs, 20 s of calibration each; the same
#    audit one mechanism at a time, stored: run experiment.mechanism=NAME experiment.mode=search
#    experiment.handmade=false experiment.trials=1000 experiment.calibration_trials=100 experiment.time_budget=20
study --blackbox --trials 1000 --calibration-trials 100 --time-budget 20 --json "$R/audit_blackbox_table.json"
# 8. audit trials per second of every registered mechanism in each mode it runs in (one core, medians of
#    3; not niced, so that the rates measure the code rather than the other jobs)
"$PY" scripts/studies/audit_tradeoff_table.py --rates --json "$R/audit_rates.json" || echo "FAILED: --rates"
# 9. the known-broken controls of the mechanisms since 2019 (docs/audit.md, "Targets: measured")
run experiment.mechanism=amin_cov experiment.mode=whitebox experiment.trials=20000
run experiment.mechanism=amin_cov experiment.mode=whitebox experiment.trials=20000 experiment.variant=add_remove_laplace
for v in "experiment.noise_factor=0.5" "" "experiment.variant=unclipped"; do
  run experiment.mechanism=dp_pca experiment.mode=whitebox epsilon=2 delta=0.1 experiment.trials=2000 $v
done
for mf in lap_cov:0.25 separate_lap_cov:0.1 separate_cov:0.1 adaptive_cov:0.1; do
  run experiment.mechanism=${mf%%:*} experiment.noise_factor=${mf##*:} experiment.trials=2000
done
run experiment.mechanism=analyze_gauss experiment.noise_factor=0.05 +experiment.mechanism_params.postprocess=projection \
    experiment.trials=2000
