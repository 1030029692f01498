#!/usr/bin/env python
"""Benchmark: Table 2's classification record at paper scale, the SVM fitted on every training row
against the same SVM fitted on the distinct (row, label) pairs with their counts as sample weights.

    .venv/bin/python scripts/benchmarks/bench_classification.py --data-dir $PRIVPCA_DATA_DIR \\
        [--permutations 1] [--projections 1] [--mechanisms pca mod_sulq random ppca] [--big-cache 4000]

For each record (permutation p, projection j, mechanism; the releases exactly as
``experiments.runs.classification.run_classification`` draws them at ``scale=paper``, PPCA's as the first chain of
its permutation's group) a Table-2 classifier (``experiment.classifier``: here ``rbf_default`` unless
an override names ``rbf``; Table 2's default, ``linear_csvc``, always fits the distinct pairs) is
fitted and scored on the record's projected training and test rows by
``experiments.runs.classifiers.fit_classifier`` in two ways, one after the other in this process:

  * ``all``: ``distinct=False``, libSVM on every training row and every test row;
  * ``distinct``: ``distinct=True`` (the default), libSVM on the distinct scaled (row, label) pairs
    weighted by their counts, predictions computed once per distinct scaled test row and expanded;

and, as a separate lever, the ``all`` fit again with a libSVM kernel cache of ``--big-cache`` MB
instead of ``experiments.runs.classifiers.SVM_CACHE_MB`` (the cache changes only the speed of a fit).
Times are CPU seconds of this process (one BLAS thread), split into fit and predict (``score`` on the
test rows).  Printed per record: the times, the training rows each solver saw, the test rows whose
predicted labels differ between the two fits, and the accuracy difference; then the totals and the
ratios ``all / distinct`` (fit, predict, record) and ``cache 500 / big cache`` (fit), all measured in
this run.  The last stdout line is one JSON object with every number.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import _one_thread  # noqa: F401  (before NumPy: one BLAS thread)
import numpy as np
from hydra import compose, initialize_config_dir

import experiments.runs.classification as classification
import experiments.runs.classifiers as classifiers
import experiments.runs.ppca_groups as ppca_groups
from experiments.app.schema import register_schema
from experiments.data.configured import load_configured
from experiments.runs.evaluate import configured_mechanism
from experiments.runs.streams import mechanism_rng, mechanism_stream
from mechanisms.toolkit import PreparedData

CONF = str(Path(__file__).resolve().parents[2] / "conf")


def paper_cfg(dataset: str, mechanism: str, data_dir: str, overrides: list[str]):
    register_schema()  # conf/config.yaml's defaults list names the typed schema
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose(
            config_name="config",
            overrides=[
                "experiment=classification",
                f"dataset={dataset}",
                f"mechanism={mechanism}",
                "scale=paper",
                f"data_dir={data_dir}",
                "experiment.classifier=rbf_default",  # the comparison is of libSVM's RBF fits
                *overrides,
            ],
        )


def release(cfg, holdout: PreparedData, p: int, j: int) -> np.ndarray:
    """The projection of record (p, j) as run_classification computes it."""
    if ppca_groups.restarts_as_chains(cfg):
        out = ppca_groups.ppca_group_releases(cfg, holdout, [mechanism_stream(cfg.seed, p, j)])[0]
    else:
        out = configured_mechanism(cfg)(
            holdout, int(cfg.k), rng=mechanism_rng(cfg.seed, p, j), clip=bool(cfg.clip_rows)
        )
    return out.components


def timed_fit_score(proto, Ztr, ytr, Zte, yte, p, distinct):
    t0 = time.process_time()
    model, info = classifiers.fit_classifier(proto, Ztr, ytr, random_state=p, distinct=distinct)
    t1 = time.process_time()
    pred = model.predict(Zte)
    t2 = time.process_time()
    return t1 - t0, t2 - t1, pred, info


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data-dir", default=os.environ.get("PRIVPCA_DATA_DIR"))
    ap.add_argument("--dataset", default="kddcup")
    ap.add_argument("--permutations", type=int, default=1)
    ap.add_argument("--projections", type=int, default=1)
    ap.add_argument("--mechanisms", nargs="+", default=["pca", "mod_sulq", "random", "ppca"])
    ap.add_argument("--big-cache", type=int, default=4000, help="MB; 0 skips the cache lever")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. experiment.classifier=rbf")
    args = ap.parse_args()
    if not args.data_dir:
        ap.error("--data-dir or PRIVPCA_DATA_DIR is required")

    cfg0 = paper_cfg(args.dataset, args.mechanisms[0], args.data_dir, args.overrides)
    dataset = load_configured(cfg0.dataset, cfg0.data_dir)
    positive = cfg0.experiment.positive_label or classification.POSITIVE_LABEL[dataset.name]
    y_all = (np.asarray(dataset.y).astype(str) == str(positive)).astype(int)
    X_all = dataset.X
    rows, small_cache = [], classifiers.SVM_CACHE_MB
    print(
        f"{dataset.name}: {X_all.shape[0]} rows, d = {X_all.shape[1]}, k = {cfg0.k}, "
        f"classifier {cfg0.experiment.classifier}, libSVM cache {small_cache} MB (big: {args.big_cache} MB)"
    )
    header = (
        f"{'p':>2} {'j':>2} {'mechanism':<9} {'fit all':>8} {'fit dist':>8} {'fit bigC':>8} "
        f"{'pred all':>8} {'pred dist':>9} {'rows all':>8} {'rows dist':>9} {'differ':>6} {'d acc':>10}"
    )
    print(header)
    for p in range(args.permutations):
        hold, train, test = classifiers.classification_split(X_all.shape[0], cfg0.seed, p, None)
        holdout = PreparedData(X_all[hold], clip=bool(cfg0.clip_rows))
        ytr, yte = y_all[train], y_all[test]
        for mech in args.mechanisms:
            cfg = paper_cfg(args.dataset, mech, args.data_dir, args.overrides)
            proto = classification.classification_protocol(cfg)
            for j in range(args.projections):
                P = release(cfg, holdout, p, j)
                Ztr, Zte = X_all[train] @ P, X_all[test] @ P
                fit_a, pred_a, yhat_a, info_a = timed_fit_score(proto, Ztr, ytr, Zte, yte, p, False)
                fit_d, pred_d, yhat_d, info_d = timed_fit_score(proto, Ztr, ytr, Zte, yte, p, True)
                fit_c = None
                if args.big_cache:
                    classifiers.SVM_CACHE_MB = args.big_cache
                    try:
                        t0 = time.process_time()
                        classifiers.fit_classifier(proto, Ztr, ytr, random_state=p, distinct=False)
                        fit_c = time.process_time() - t0
                    finally:
                        classifiers.SVM_CACHE_MB = small_cache
                acc_a, acc_d = float(np.mean(yhat_a == yte)), float(np.mean(yhat_d == yte))
                row = dict(
                    permutation=p,
                    projection=j,
                    mechanism=mech,
                    fit_all_s=fit_a,
                    fit_distinct_s=fit_d,
                    fit_all_big_cache_s=fit_c,
                    predict_all_s=pred_a,
                    predict_distinct_s=pred_d,
                    fit_rows_all=info_a["svm_fit_rows"],
                    fit_rows_distinct=info_d["svm_fit_rows"],
                    test_rows=int(len(test)),
                    test_rows_differ=int(np.sum(yhat_a != yhat_d)),
                    accuracy_all=acc_a,
                    accuracy_distinct=acc_d,
                    converged=bool(info_a["svm_converged"] and info_d["svm_converged"]),
                )
                rows.append(row)
                print(
                    f"{p:>2} {j:>2} {mech:<9} {fit_a:8.2f} {fit_d:8.2f} "
                    f"{'-' if fit_c is None else f'{fit_c:.2f}':>8} {pred_a:8.2f} {pred_d:9.2f} "
                    f"{row['fit_rows_all']:>8} {row['fit_rows_distinct']:>9} "
                    f"{row['test_rows_differ']:>6} {acc_d - acc_a:>+10.2e}",
                    flush=True,
                )

    def total(key):
        return float(sum(r[key] for r in rows))

    all_s = total("fit_all_s") + total("predict_all_s")
    dist_s = total("fit_distinct_s") + total("predict_distinct_s")
    summary = dict(
        dataset=dataset.name,
        classifier=str(cfg0.experiment.classifier),
        records=len(rows),
        cache_mb=small_cache,
        big_cache_mb=args.big_cache or None,
        record_all_s=all_s,
        record_distinct_s=dist_s,
        ratio_record=all_s / dist_s,
        ratio_fit=total("fit_all_s") / total("fit_distinct_s"),
        ratio_predict=total("predict_all_s") / total("predict_distinct_s"),
        ratio_fit_cache=(
            total("fit_all_s") / total("fit_all_big_cache_s") if args.big_cache else None
        ),
        max_test_rows_differ=max(r["test_rows_differ"] for r in rows),
        max_abs_accuracy_diff=max(abs(r["accuracy_distinct"] - r["accuracy_all"]) for r in rows),
        rows=rows,
    )
    print(
        f"per record (CPU s, mean over {len(rows)}): all rows {all_s / len(rows):.2f}, "
        f"distinct rows {dist_s / len(rows):.2f}; ratio all/distinct: record "
        f"{summary['ratio_record']:.2f}, fit {summary['ratio_fit']:.2f}, predict "
        f"{summary['ratio_predict']:.2f}"
    )
    if args.big_cache:
        print(
            f"libSVM cache {small_cache} MB / {args.big_cache} MB, fit on all rows: "
            f"{summary['ratio_fit_cache']:.2f}"
        )
    print(
        f"test rows whose prediction differs: at most {summary['max_test_rows_differ']} of "
        f"{rows[0]['test_rows']}; largest |accuracy difference| {summary['max_abs_accuracy_diff']:.2e}"
    )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
