"""The benchmark's figures and leaderboard tables, drawn from the Parquet summary alone.

``python -m experiments.bench.figures --summary results/benchmark/summary.parquet --out results/benchmark``
writes ``leaderboard.md`` and ``leaderboard.csv`` (the DuckDB leaderboard,
:func:`experiments.bench.summary.leaderboard`), ``refused.csv``, and under ``figures/``:

* ``utility_vs_epsilon_<data set>.png`` -- q_F/q_F(V_k) against the target ε, every mechanism on one
  set of axes, mean and 95% interval over the trials;
* ``utility_vs_n_spiked_d<d>.png`` -- the same against n on the spiked model at ε = 1 (or the grid's
  ε nearest to it), one figure per d;
* ``utility_vs_d_spiked.png`` -- against d at that ε and the largest n of the grid;
* ``accuracy_vs_epsilon_<data set>.png`` -- Table 2's classification accuracy against ε on each
  Table 2 cell, with the majority-label accuracy as a grey line;

and ``accuracy.md`` / ``accuracy.csv``, the accuracy leaderboard
(:func:`experiments.bench.summary.accuracy_leaderboard`).  A spiked cell with its own k
(``spiked-d<d>-n<n>-k<k>``) is drawn against ε like the named data sets, not on the n and d axes.

Line style says the tier: solid proven, dashed nominal (MCMC), dotted peer, thin grey the
non-private reference.  Drawing the same summary again gives the same bytes (no date in the files).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from experiments.bench import summary as bench_summary  # noqa: E402
from experiments.figures.style import save  # noqa: E402

#: the order (and so the colour) of the registry's mechanisms; any other follows, sorted
ORDER = (
    "pca", "random", "mod_sulq", "analyze_gauss", "ppca", "ppca_iterative", "amin_cov",
    "noisy_power", "streaming_power", "online_pca", "private_sketch", "subspace_exact",
    "subspace_approx", "gauss_cov", "separate_cov", "adaptive_cov", "lap_cov", "separate_lap_cov",
    "coinpress_cov", "dp_pca", "k_dp_pca", "diffprivlib_pca", "opendp_pca",
)  # fmt: skip
MARKERS = "os^vD<>phX*P"
LINES = {"proven": "-", "nominal": "--", "peer": ":", "reference": "-", "mixed": "-."}
TIER_SUFFIX = {"nominal": " (nominal)", "peer": " (peer)", "reference": " (not private)"}
FIXED_EPSILON = 1.0


def _style(mech: str, tier: str, mechanisms: list[str]) -> dict:
    ordered = [m for m in ORDER if m in mechanisms] + sorted(
        m for m in mechanisms if m not in ORDER
    )
    i = ordered.index(mech)
    cmap = plt.get_cmap("tab20")
    if tier == "reference":
        return dict(color="0.45", ls="-", lw=1.0, marker=None, label=mech + TIER_SUFFIX[tier])
    return dict(
        color=cmap(i % 20),
        ls=LINES.get(tier, "-."),
        lw=1.4,
        marker=MARKERS[i % len(MARKERS)],
        ms=4,
        label=mech + TIER_SUFFIX.get(tier, "" if tier == "proven" else f" ({tier})"),
    )


def _plot(ax, lb: pd.DataFrame, x: str, mechanisms: list[str], y: str = "utility") -> None:
    for mech in [m for m in ORDER if m in set(lb.mechanism)] + sorted(
        set(lb.mechanism) - set(ORDER)
    ):
        g = lb[lb.mechanism == mech].sort_values(x)
        if not len(g):
            continue
        st = _style(mech, str(g.tier.iloc[0]), mechanisms)
        xs = g[x].to_numpy(dtype=float)
        ax.plot(xs, g[y], **st)
        ax.fill_between(
            xs, g.lo.clip(lower=-0.05), g.hi.clip(upper=1.05), color=st["color"], alpha=0.12, lw=0
        )
    if y == "utility":
        ax.set_ylabel("q_F / q_F(V_k)  (mean, 95% interval)")
        ax.set_ylim(-0.05, 1.05)
    else:
        ax.set_ylabel(f"{y}  (mean, 95% interval)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)


def _fixed_epsilon(eps: np.ndarray) -> float:
    eps = np.unique(eps)
    return float(eps[np.argmin(np.abs(np.log(eps) - math.log(FIXED_EPSILON)))])


def draw(summary: Path, out: Path) -> list[Path]:
    """Every table and figure of the summary at ``summary`` into ``out``; returns the paths written."""
    lb = bench_summary.leaderboard(summary)
    written = []
    out.mkdir(parents=True, exist_ok=True)
    written.append(write_tables(lb, bench_summary.refusals(summary), out))
    figs = out / "figures"
    mechanisms = sorted(set(lb.mechanism))
    scale = ",".join(sorted(set(bench_summary.read_summary(summary)["scale"].dropna())))
    spiked = lb[lb.dataset.str.fullmatch(r"spiked-d\d+-n\d+")]
    for ds in sorted(set(lb.dataset) - set(spiked.dataset)):
        g = lb[lb.dataset == ds]
        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        _plot(ax, g, "epsilon", mechanisms)
        ax.set_xscale("log")
        ax.set_xlabel("target ε (certified, replace-one-row; δ = 1e-6)")
        r = g.iloc[0]
        ax.set_title(f"{ds}: n = {int(r.n):,}, d = {int(r.d)}, k = {int(r.k)}  [scale: {scale}]")
        written += save(fig, figs, f"utility_vs_epsilon_{ds}", formats=("png",),
                        png_metadata={"Software": None})  # fmt: skip
    if len(spiked):
        eps = _fixed_epsilon(spiked.epsilon.to_numpy())
        sp = spiked[spiked.epsilon == eps]
        for d in sorted(set(sp.d)):
            g = sp[sp.d == d]
            fig, ax = plt.subplots(figsize=(7.5, 4.2))
            _plot(ax, g, "n", mechanisms)
            ax.set_xscale("log")
            ax.axvline(d, color="0.6", lw=0.8, ls=":")
            ax.set_xlabel("n (rows); dotted: n = d")
            ax.set_title(
                f"spiked model, d = {d}, k = {int(g.k.iloc[0])}, ε = {eps:g}  [scale: {scale}]"
            )
            written += save(fig, figs, f"utility_vs_n_spiked_d{d}", formats=("png",),
                            png_metadata={"Software": None})  # fmt: skip
        n_max = int(sp.n.max())
        g = sp[sp.n == n_max]
        if g.d.nunique() > 1:
            fig, ax = plt.subplots(figsize=(7.5, 4.2))
            _plot(ax, g, "d", mechanisms)
            ax.set_xscale("log")
            ax.set_xlabel("d (dimension)")
            ax.set_title(f"spiked model, n = {n_max:,}, ε = {eps:g}  [scale: {scale}]")
            written += save(fig, figs, "utility_vs_d_spiked", formats=("png",),
                            png_metadata={"Software": None})  # fmt: skip
    acc = bench_summary.accuracy_leaderboard(summary)
    if len(acc):
        written.append(write_accuracy(acc, out))
        for ds in sorted(set(acc.dataset)):
            g = acc[acc.dataset == ds]
            fig, ax = plt.subplots(figsize=(7.5, 4.2))
            _plot(ax, g, "epsilon", mechanisms, y="accuracy")
            m = g.groupby("epsilon")["majority_accuracy"].mean()
            ax.plot(m.index, m.to_numpy(), color="0.3", lw=0.8, ls=":", label="majority label")
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
            ax.set_xscale("log")
            ax.set_xlabel("target ε (certified, replace-one-row; δ = 1e-6)")
            r = g.iloc[0]
            ax.set_title(
                f"{ds}: Table 2 accuracy, n = {int(r.n):,}, k = {int(r.k)}  [scale: {scale}]"
            )
            written += save(fig, figs, f"accuracy_vs_epsilon_{ds}", formats=("png",),
                            png_metadata={"Software": None})  # fmt: skip
    return written


def write_accuracy(acc: pd.DataFrame, out: Path) -> Path:
    """``accuracy.csv`` and ``accuracy.md``: Table 2's accuracy, one ranked table per cell and ε."""
    cols = ["dataset", "n", "d", "k", "epsilon", "mechanism", "tier", "rank", "trials", "accuracy",
            "lo", "hi", "majority_accuracy", "utility", "bottom_rate", "accuracy_seconds"]  # fmt: skip
    acc[cols].to_csv(out / "accuracy.csv", index=False, float_format="%.6g")
    lines = [
        "# Benchmark: Table 2 classification accuracy",
        "",
        "Drawn from `summary.parquet` by `python -m experiments.bench.figures` (docs/benchmark.md).",
        "The release (from the hold-out half of Table 2's permutation) projects the other half's",
        "training and test rows; the linear C-SVC (libSVM's workflow, docs/table2_protocol.md) is",
        "tuned and fitted on the training rows and scored on the test rows. Only the trials that",
        "have an accuracy count (`trials`). Rank: proven releases only, overlapping 95% intervals",
        "tie. `majority`: the majority-label accuracy (a ⊥ release scores it). `utility`:",
        "q_F/q_F(V_k) of the same releases.",
        "",
    ]
    for (ds, eps), g in acc.groupby(["dataset", "epsilon"], sort=True):
        lines += [
            _heading(ds, eps, g),
            "",
            "| rank | mechanism | tier | accuracy | 95% interval | majority | utility | ⊥ | trials |",
            "|---:|---|---|---:|---|---:|---:|---:|---:|",
        ]
        for _, x in g.iterrows():
            rank = _rank(x["rank"])
            lines.append(
                f"| {rank} | {x.mechanism} | {x.tier} | {_fmt(x.accuracy, 4)} | "
                f"[{_fmt(x.lo, 4)}, {_fmt(x.hi, 4)}] | {_fmt(x.majority_accuracy, 4)} | "
                f"{_fmt(x.utility)} | {_fmt(x.bottom_rate, 2)} | {int(x.trials)} |"
            )
        lines.append("")
    path = out / "accuracy.md"
    path.write_text("\n".join(lines))
    return path


def _heading(ds, eps, g: pd.DataFrame) -> str:
    """The heading of one (data set, ε) table: the data set's shape, the target privacy and, where
    ρ-zCDP mechanisms are in it, the ρ they run at (the largest whose conversion certifies it)."""
    row = g.iloc[0]
    head = (
        f"## {ds} (n = {int(row.n):,}, d = {int(row.d)}, k = {int(row.k)}), ε = {eps:g}, δ = 1e-6"
    )
    rho = sorted(set(g["rho"].dropna().round(6))) if "rho" in g else []
    if rho:
        head += f" (ρ-zCDP mechanisms: ρ = {', '.join(f'{r:.4g}' for r in rho)})"
    return head


def _rank(value) -> str:
    """A proven row's rank; nothing for the rows that are not ranked."""
    return "" if pd.isna(value) else str(int(value))


def _fmt(v, digits=3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return f"{v:.{digits}f}"


def write_tables(lb: pd.DataFrame, refused: pd.DataFrame, out: Path) -> Path:
    """``leaderboard.csv``, ``refused.csv`` and ``leaderboard.md`` (one table per data set and ε)."""
    cols = ["dataset", "n", "d", "k", "epsilon", "mechanism", "tier", "rank", "trials", "utility",
            "lo", "hi", "subspace_error", "covariance_error", "seconds", "bottom_rate",
            "certified_epsilon", "certified_delta", "native_relation", "rho", "accuracy_trials",
            "accuracy"]  # fmt: skip
    lb[cols].to_csv(out / "leaderboard.csv", index=False, float_format="%.6g")
    refused.to_csv(out / "refused.csv", index=False)
    lines = [
        "# Benchmark leaderboard",
        "",
        "Drawn from `summary.parquet` by `python -m experiments.bench.figures` (docs/benchmark.md).",
        "Utility: q_F/q_F(V_k), mean over the trials with its 95% Student-t interval. Rank: proven",
        "releases only; rank = 1 + the number of proven mechanisms whose interval lies wholly above",
        "(overlapping intervals tie). `subspace`: ‖UUᵀ − V_kV_kᵀ‖_F; `cov`: ‖Σ̂ − A‖_F/‖A‖_F;",
        "`s`: median seconds per release; `⊥`: share of releases that returned no subspace.",
        "",
    ]
    for (ds, eps), g in lb.groupby(["dataset", "epsilon"], sort=True):
        lines += [
            _heading(ds, eps, g),
            "",
            "| rank | mechanism | tier | utility | 95% interval | subspace | cov | s | ⊥ | trials |",
            "|---:|---|---|---:|---|---:|---:|---:|---:|---:|",
        ]
        for _, x in g.iterrows():
            rank = _rank(x["rank"])
            lines.append(
                f"| {rank} | {x.mechanism} | {x.tier} | {_fmt(x.utility)} | "
                f"[{_fmt(x.lo)}, {_fmt(x.hi)}] | {_fmt(x.subspace_error, 2)} | "
                f"{_fmt(x.covariance_error, 3)} | {x.seconds:.3g} | {_fmt(x.bottom_rate, 2)} | "
                f"{int(x.trials)} |"
            )
        rf = refused[(refused.dataset == ds) & (refused.epsilon == eps)]
        if len(rf):
            lines.append("")
            lines.append(
                "Refused: "
                + "; ".join(f"{x.mechanism} ({x.reason[:120]})" for _, x in rf.iterrows())
            )
        lines.append("")
    path = out / "leaderboard.md"
    path.write_text("\n".join(lines))
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--summary", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    for path in draw(a.summary, a.out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
