"""Relative Frobenius error of the released covariance: ‖Σ̂ − Σ‖_F / ‖Σ‖_F against ε.

Σ = XᵀX/n is the second moment of the configured data set's rows (``conf/dataset/<name>.yaml``,
rows in the unit ball, as the harness loads them); Σ̂ is ``PrivateCovariance(mechanism=...)``'s
``covariance_`` (row_norm_bound 1, so the mechanism's own release), fitted ``--trials`` times per
(mechanism, ε) with independent seeds.  A mechanism may carry parameters, ``name:key=value,...``
(e.g. ``coinpress_cov:iterations=1``; values read as YAML).  The zCDP mechanisms run at the largest
ρ that certifies (ε, ``--delta``); the pure-DP ones at (ε, 0).  Prints a markdown table of the mean
(and standard deviation) per mechanism and ε.

Usage::

    PRIVPCA_DATA_DIR=... .venv/bin/python scripts/studies/covariance_error.py --dataset spiked \\
        --epsilon 0.1 0.5 1 2 --trials 10 --out covariance_error.csv
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np
import yaml
from omegaconf import OmegaConf

from experiments.data.configured import load_configured
from mechanisms import PrivateCovariance

ROOT = Path(__file__).resolve().parents[2]

MECHANISMS = (
    "gauss_cov",
    "separate_cov",
    "adaptive_cov",
    "lap_cov",
    "separate_lap_cov",
    "coinpress_cov",
)


def load(name: str):
    """The data set ``conf/dataset/<name>.yaml`` describes (its ``${dataset.k}`` resolved) and its k."""
    cfg = OmegaConf.create({"dataset": OmegaConf.load(ROOT / "conf" / "dataset" / f"{name}.yaml")})
    node = OmegaConf.to_container(cfg, resolve=True)["dataset"]
    return load_configured(node, os.environ.get("PRIVPCA_DATA_DIR")), int(node["k"])


def parse_mechanism(spec: str) -> tuple[str, dict]:
    """``name`` or ``name:key=value,...`` -> (name, parameters)."""
    name, _, rest = spec.partition(":")
    params = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        params[key] = yaml.safe_load(value)
    return name, params


def relative_error(est: np.ndarray, sigma: np.ndarray) -> float:
    return float(np.linalg.norm(est - sigma, "fro") / np.linalg.norm(sigma, "fro"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="spiked")
    ap.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS))
    ap.add_argument("--epsilon", type=float, nargs="+", default=[0.1, 0.5, 1.0, 2.0])
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="CSV of every (mechanism, epsilon) row")
    a = ap.parse_args()

    data, k = load(a.dataset)
    X = data.X
    sigma = X.T @ X / X.shape[0]
    sigma = (sigma + sigma.T) / 2
    print(f"{a.dataset}: n = {X.shape[0]}, d = {X.shape[1]}, k = {k}, delta = {a.delta:g}")
    rows = []
    for spec in a.mechanisms:
        name, params = parse_mechanism(spec)
        for i, eps in enumerate(a.epsilon):
            errs, start = [], time.perf_counter()
            for t in range(a.trials):
                est = PrivateCovariance(
                    mechanism=name,
                    mechanism_params=params,
                    epsilon=eps,
                    delta=a.delta,
                    n_components=k,
                    random_state=np.random.default_rng([a.seed, i, t]),
                ).fit(X)
                errs.append(relative_error(est.covariance_, sigma))
            rows.append(
                {
                    "dataset": a.dataset,
                    "mechanism": spec,
                    "epsilon": eps,
                    "delta": a.delta,
                    "trials": a.trials,
                    "mean_rel_error": statistics.fmean(errs),
                    "sd_rel_error": statistics.stdev(errs) if len(errs) > 1 else 0.0,
                    "seconds": time.perf_counter() - start,
                }
            )
    print("| mechanism | " + " | ".join(f"ε = {e:g}" for e in a.epsilon) + " |")
    print("|---|" + "---|" * len(a.epsilon))
    for spec in a.mechanisms:
        cells = [
            f"{r['mean_rel_error']:.3g} ± {r['sd_rel_error']:.2g}"
            for r in rows
            if r["mechanism"] == spec
        ]
        print(f"| `{spec}` | " + " | ".join(cells) + " |")
    if a.out:
        with open(a.out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
