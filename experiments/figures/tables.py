"""The JMLR paper's tables, drawn from records as CSV: Table 1 (the data sets), Table 2
(classification accuracy beside the paper's) and footnote 1 (accuracy against the majority label);
and the numbers behind Figures 2–5 (the curves' means and spreads, and the sampled releases'
convergence checks), so that every number quoted from a figure can be read from a table.

Every function takes a pandas DataFrame of records and an output directory, and returns the written
paths, or None when the records it draws are missing.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.data.table1 import DRAWN_COLUMNS, DRAWN_IF_RECORDED
from experiments.figures.style import TABLE2_ORDER, guarantee_statuses
from experiments.runs.classifiers import require_converged
from experiments.store.compat import fill_legacy_protocol
from experiments.store.summary import latest_table1

#: row order of the paper's Table 1
TABLE1_ORDER = ["kddcup", "census", "localization", "insurance"]
#: JMLR Table 2: accuracy (%) mean and std per (data set, mechanism)
PAPER_TABLE2 = {
    ("kddcup", "pca"): (98.97, 0.05),
    ("kddcup", "ppca"): (98.95, 0.05),
    ("kddcup", "mod_sulq"): (98.18, 0.65),
    ("kddcup", "random"): (98.23, 0.49),
    ("localization", "pca"): (100.0, 0.0),
    ("localization", "ppca"): (100.0, 0.0),
    ("localization", "mod_sulq"): (97.06, 2.17),
    ("localization", "random"): (96.28, 2.34),
}


def write_owner_only_csv(table: pd.DataFrame, path: Path) -> None:
    """``table`` as CSV at ``path``, readable and writable by its owner only (0600, whatever the
    umask): the tables hold exact statistics of the data (q_F of PCA), like the records they come
    from (docs/running.md)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", newline="") as fh:
        os.fchmod(fh.fileno(), 0o600)
        table.to_csv(fh, index=False)


def table1(df: pd.DataFrame, out: Path):
    """Table 1, the latest record per data set and split (:func:`experiments.store.summary.latest_table1`),
    in the columns of :data:`experiments.data.table1.DRAWN_COLUMNS` and the paper's row order."""
    d = df[df.experiment == "table1"]
    if d.empty:
        return None
    cols = [c for c in DRAWN_COLUMNS if c not in DRAWN_IF_RECORDED or c in d.columns]
    t = latest_table1(d)[cols]
    # rows in the paper's order (ties in the timestamp must not decide it: store and summary differ)
    t = t.assign(
        _o=[TABLE1_ORDER.index(x) if x in TABLE1_ORDER else len(TABLE1_ORDER) for x in t.dataset]
    )
    t = t.sort_values(["_o", "dataset"], kind="mergesort").drop(columns="_o")
    out.mkdir(parents=True, exist_ok=True)
    write_owner_only_csv(t, out / "table1.csv")
    return [out / "table1.csv"]


#: the protocol columns of a classification record (experiments.runs.classification.classification_protocol) and
#: the noise calibration of the mechanism's release (:func:`noise_calibration`)
PROTOCOL_COLUMNS = [
    "classifier",
    "svm_loss",
    "feature_scaling",
    "random_entries",
    "random_projection",
    "calibration",
]


def noise_calibration(d: pd.DataFrame) -> pd.Series:
    """MOD-SULQ's noise calibration per record (``release.calibration``: ``paper`` for eq. (5), or
    ``sulq``, ``variance``, ``tight``); a MOD-SULQ record that does not say was made with eq. (5),
    the only one before the field was summarised.  "-" for the other mechanisms."""
    cal = (
        d["release.calibration"]
        if "release.calibration" in d.columns
        else pd.Series(np.nan, index=d.index, dtype=object)
    )
    mod_sulq = d.mechanism == "mod_sulq"
    return pd.Series(np.where(mod_sulq, cal.where(cal.notna(), "paper"), "-"), index=d.index)


def paper_noise_only(d: pd.DataFrame) -> pd.DataFrame:
    """``d`` without MOD-SULQ records whose noise is not eq. (5)'s: the paper's figures draw its
    Algorithm 1 as printed; the tables list every calibration apart."""
    return d[noise_calibration(d).isin(["paper", "-"])] if len(d) else d


#: footnote 1's data sets (accuracy after PCA no better than the majority label)
FOOTNOTE_DATASETS = ["census", "insurance"]


def classification_records(df: pd.DataFrame, datasets: list[str] | None = None) -> pd.DataFrame:
    """Classification records with the protocol columns filled (records that predate them get their
    old protocol, :func:`experiments.store.compat.fill_legacy_protocol`; the random-projection columns only
    apply to the random mechanism, "-" for the others)."""
    if "experiment" not in df.columns:
        return df.iloc[0:0]
    d = df[df.experiment == "classification"].copy()
    if datasets is not None:
        d = d[d.dataset.isin(datasets)]
    if d.empty:
        return d
    require_converged(d)  # a fit stopped at its iteration limit is refused, not averaged
    d = fill_legacy_protocol(d)
    d["calibration"] = noise_calibration(d)
    for col in PROTOCOL_COLUMNS:
        if col.startswith("random_"):
            d.loc[d.mechanism != "random", col] = "-"
    if "scale" not in d:
        d["scale"] = None
    d["scale"] = d["scale"].fillna("-")
    return d


def table2(df: pd.DataFrame, out: Path):
    """Table 2 (kddcup, localization) per scale and protocol, beside the paper's numbers."""
    d = classification_records(df)
    d = d[~d.dataset.isin(FOOTNOTE_DATASETS)] if len(d) else d
    if d.empty:
        return None
    # the training rows (a scale's row cap, scale.classification.max_rows) part the rounds like the protocol
    if "n_train" not in d:
        d = d.assign(n_train=np.nan)
    keys = ["dataset", "scale", *PROTOCOL_COLUMNS, "n_train", "mechanism"]
    g = d.groupby(keys, dropna=False)["accuracy"].agg(["mean", "std", "count"]).reset_index()
    g["n_train"] = g["n_train"].astype("Int64")  # a count (float in a summary with other records)
    g["accuracy_pct"] = (100 * g["mean"]).round(2)
    g["std_pct"] = (100 * g["std"].fillna(0.0)).round(2)
    g["paper_accuracy_pct"] = [
        PAPER_TABLE2.get((a, b), (np.nan, np.nan))[0] for a, b in zip(g.dataset, g.mechanism)
    ]
    g["paper_std_pct"] = [
        PAPER_TABLE2.get((a, b), (np.nan, np.nan))[1] for a, b in zip(g.dataset, g.mechanism)
    ]
    g["guarantee"] = [
        ", ".join(sorted(guarantee_statuses(d[(d.dataset == a) & (d.mechanism == b)]))) or "proven"
        for a, b in zip(g.dataset, g.mechanism)
    ]
    g.loc[g.mechanism == "pca", "guarantee"] = "none (non-private)"
    g["order"] = [
        TABLE2_ORDER.index(m) if m in TABLE2_ORDER else len(TABLE2_ORDER) for m in g.mechanism
    ]
    g = g.sort_values(["dataset", "scale", "classifier", "svm_loss", "feature_scaling", "order"])
    t = g[
        [
            "dataset",
            "mechanism",
            "guarantee",
            "accuracy_pct",
            "std_pct",
            "count",
            "paper_accuracy_pct",
            "paper_std_pct",
            "scale",
            "n_train",
            *PROTOCOL_COLUMNS,
        ]
    ].rename(columns={"count": "rounds", "n_train": "training_rows"})
    out.mkdir(parents=True, exist_ok=True)
    write_owner_only_csv(t, out / "table2.csv")
    return [out / "table2.csv"]


def footnote1(df: pd.DataFrame, out: Path):
    """Footnote 1: on census and insurance, projected-classifier accuracy beside always predicting the
    majority label (mean over rounds; ``gain_pct`` = accuracy - majority, its sd over rounds)."""
    d = classification_records(df, FOOTNOTE_DATASETS)
    if d.empty:
        return None
    if "majority_accuracy" not in d:
        return None
    d = d.dropna(subset=["majority_accuracy"]).copy()
    if "d_classified" not in d:
        d["d_classified"] = d["d"]
    d["gain"] = d.accuracy - d.majority_accuracy
    keys = [
        "dataset",
        "scale",
        "classifier",
        "svm_loss",
        "feature_scaling",
        "d_classified",
        "mechanism",
    ]
    g = (
        d.groupby(keys, dropna=False)
        .agg(
            accuracy_pct=("accuracy", "mean"),
            majority_accuracy_pct=("majority_accuracy", "mean"),
            gain_pct=("gain", "mean"),
            gain_sd_pct=("gain", "std"),
            rounds=("accuracy", "size"),
        )
        .reset_index()
    )
    for c in ("accuracy_pct", "majority_accuracy_pct", "gain_pct", "gain_sd_pct"):
        g[c] = (100 * g[c]).round(2)
    out.mkdir(parents=True, exist_ok=True)
    write_owner_only_csv(g, out / "footnote1.csv")
    return [out / "footnote1.csv"]


#: the convergence check of a sampled release (PPCA by MCMC), as the summary names its columns
_RELEASE_CONVERGED = "diagnostics_not_private.converged"
_RELEASE_RHAT = "diagnostics_not_private.rhat"


def _utility_table(d: pd.DataFrame, by: str) -> pd.DataFrame:
    """Mean and sd of q_F per (data set, ``by``, mechanism), the record count, and for sampled
    releases how many passed their convergence check and the largest split-R̂."""
    d = d.assign(calibration=noise_calibration(d))
    keys = ["dataset", by, "mechanism", "calibration"]
    t = d.groupby(keys)["q_F"].agg(q_F_mean="mean", q_F_sd="std", records="size").reset_index()
    t["q_F_sd"] = t["q_F_sd"].fillna(0.0)
    if _RELEASE_RHAT in d.columns:
        sampled = d[d[_RELEASE_RHAT].notna()]
        checks = (
            sampled.assign(_passed=sampled[_RELEASE_CONVERGED].astype(str) == "True")
            .groupby(keys)
            .agg(converged=("_passed", "sum"), rhat_max=(_RELEASE_RHAT, "max"))
            .reset_index()
        )
        t = t.merge(checks, on=keys, how="left")
        t["converged"] = t["converged"].astype("Int64")
    t["order"] = [
        TABLE2_ORDER.index(m) if m in TABLE2_ORDER else len(TABLE2_ORDER) for m in t.mechanism
    ]
    t = t.sort_values(["dataset", by, "order"]).drop(columns="order")
    return t.round({"q_F_mean": 6, "q_F_sd": 6, "rhat_max": 6})


def utility_vs_n_table(df: pd.DataFrame, out: Path):
    """The points of Figures 3–4: q_F mean ± sd over subsets × restarts per (data set, n, mechanism)."""
    d = df[df.experiment == "utility_vs_n"] if "experiment" in df else df.iloc[0:0]
    if d.empty:
        return None
    out.mkdir(parents=True, exist_ok=True)
    write_owner_only_csv(_utility_table(d, "n"), out / "utility_vs_n.csv")
    return [out / "utility_vs_n.csv"]


def utility_vs_epsilon_table(df: pd.DataFrame, out: Path):
    """The points of Figure 5: q_F mean ± sd over the samples per (ε, mechanism)."""
    d = df[df.experiment == "utility_vs_epsilon"] if "experiment" in df else df.iloc[0:0]
    if d.empty:
        return None
    out.mkdir(parents=True, exist_ok=True)
    t = _utility_table(d, "epsilon_grid").rename(columns={"epsilon_grid": "epsilon"})
    write_owner_only_csv(t, out / "utility_vs_epsilon.csv")
    return [out / "utility_vs_epsilon.csv"]


#: Givens sweeps per iteration of a Figure 2 fast-chain record that does not say (the chain's
#: default, ``mechanisms.bingham.GIBBS_SWEEPS_PER_ITERATION``, when those records were made)
DEFAULT_SWEEPS = 2


def chain_sweeps(row) -> int | None:
    """Givens sweeps per iteration of a Figure 2 record's chain (None for the reference sampler,
    whose iteration is exact column draws)."""
    if row.get("sampler") == "reference":
        return None
    sweeps = row.get("sweeps_per_iteration")
    missing = sweeps is None or (isinstance(sweeps, float) and np.isnan(sweeps))
    return DEFAULT_SWEEPS if missing else int(sweeps)


def latest_chains(d: pd.DataFrame) -> pd.DataFrame:
    """Figure 2's records ``d`` (``gibbs_convergence``), the latest of each (data set, sampler,
    sweeps per iteration), with the sweeps in ``_sweeps`` (-1 for the reference sampler)."""
    if "sampler" not in d.columns:
        d = d.assign(sampler="gibbs")
    sweeps = [chain_sweeps(r) for _, r in d.iterrows()]
    d = d.assign(_sweeps=[-1 if v is None else v for v in sweeps])
    d = d.sort_values("timestamp", kind="mergesort")
    return d.groupby(["dataset", "sampler", "_sweeps"]).tail(1)


def sampler_convergence_table(df: pd.DataFrame, out: Path):
    """Figure 2's chains: F_k^i(T) over the chains (smallest, largest) at half and at all of the
    iterations, split-R̂ of q_F, and the Bingham's scale n·ε/2 and top concentration n·ε/2·λ₁, per
    (data set, sampler, Givens sweeps per iteration of the fast chain); the latest record of each."""
    d = df[df.experiment == "gibbs_convergence"] if "experiment" in df else df.iloc[0:0]
    if d.empty or "traces.log_F" not in d.columns:
        return None
    d = latest_chains(d)
    rows = []
    for _, r in d.sort_values(["dataset", "sampler", "_sweeps"]).iterrows():
        T = np.asarray(r["traces.iterations"])
        F = np.exp(np.asarray(r["traces.log_F"], dtype=float))
        half = int(np.searchsorted(T, T[-1] // 2))
        rows.append(
            {
                "dataset": r["dataset"],
                "sampler": r["sampler"],
                "sweeps_per_iteration": None if r["_sweeps"] < 0 else int(r["_sweeps"]),
                "chains": F.shape[0],
                "T_half": int(T[half]),
                "F_min_half": F[:, half].min(),
                "F_max_half": F[:, half].max(),
                "T_final": int(T[-1]),
                "F_min_final": F[:, -1].min(),
                "F_max_final": F[:, -1].max(),
                "rhat": r.get("rhat"),
                # n·ε/2 (the record's `concentration`) and n·ε/2·λ₁ (its `top_concentration`)
                "n_eps_over_2": r.get("concentration"),
                "n_eps_over_2_lambda1": r.get("top_concentration"),
            }
        )
    out.mkdir(parents=True, exist_ok=True)
    t = pd.DataFrame(rows).round(6)
    t["sweeps_per_iteration"] = t["sweeps_per_iteration"].astype("Int64")
    write_owner_only_csv(t, out / "sampler_convergence.csv")
    return [out / "sampler_convergence.csv"]
