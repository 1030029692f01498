"""The benchmark's memory and store size at a scale that has not been run, from its plan.

* :func:`plan_releases`: one row per release of a plan's benchmark jobs (mechanism, data set, ε,
  trial, and whether Table 2's classifier scores it), read from each job's overrides; a summary of
  the whole scale has at most this many rows (a refused cell leaves one row instead of its trials).
* :func:`synthetic_summary`: a summary with exactly those rows and the committed summary's schema:
  each mechanism's rows of a template summary, tiled, with the key columns (record id, data set and
  its shape, ε, trial, scale) rewritten to the plan's, so that every grouping of the leaderboard has
  the scale's cardinality; accuracy only on the classified trials.
* :func:`load_peak_rss`: the peak resident memory (``VmHWM``) of a fresh interpreter that loads a
  summary the way ``scripts/benchmark.py draw`` does (:func:`experiments.bench.summary.read_summary`
  and the DuckDB queries, and the tables written), or that only imports the same modules (the
  baseline).
* :func:`store_sizes` and :func:`extrapolate`: the bytes of a store's benchmark records, per
  mechanism, and what the plan's releases would take at those sizes.

``scripts/benchmarks/bench_summary_footprint.py`` prints the numbers (docs/benchmark.md).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.bench import summary as bench_summary
from experiments.bench.datasets import PAPER_TABLE1, expand
from experiments.store.store import record_id

#: the columns only a classified release has
ACCURACY_COLUMNS = ("accuracy", "majority_accuracy", "svm_C", "accuracy_seconds")
#: each release's own measurements: scaled by a random factor in [0.99, 1.01] in a synthetic row,
#: so that tiled rows do not repeat values (and compress) as no real release's would
MEASURED = ("q_F_normalised", "subspace_error", "covariance_error", "seconds", "accuracy",
            "accuracy_seconds")  # fmt: skip

#: what the fresh interpreter does: ``imports`` only, or also ``query`` (read the summary, run the
#: leaderboard, accuracy and refusal queries, write the tables) or ``draw`` (every figure too)
_CHILD = r"""
import json, resource, sys, tempfile, time
from pathlib import Path
import duckdb, pyarrow.parquet, scipy.stats
from experiments.bench import figures, summary
path, mode = Path(sys.argv[1]), sys.argv[2]
threads = duckdb.connect().execute("SELECT current_setting('threads')").fetchone()[0]
out = {"mode": mode, "duckdb_threads": threads}
t0 = time.perf_counter()
if mode != "imports":
    with tempfile.TemporaryDirectory() as tmp:
        if mode == "draw":
            out["files"] = len(figures.draw(path, Path(tmp)))
        else:
            rows = summary.read_summary(path)
            lb = summary.leaderboard(path)
            acc = summary.accuracy_leaderboard(path)
            figures.write_tables(lb, summary.refusals(path), Path(tmp))
            if len(acc):
                figures.write_accuracy(acc, Path(tmp))
            out.update(rows=len(rows), leaderboard_rows=len(lb), accuracy_rows=len(acc))
out["seconds"] = time.perf_counter() - t0
try:  # this process's own high-water mark (ru_maxrss keeps the parent's across fork and exec)
    with open("/proc/self/status") as fh:
        out["peak_rss_kib"] = next(int(x.split()[1]) for x in fh if x.startswith("VmHWM:"))
except OSError:
    out["peak_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(out))
"""


def plan_releases(jobs, accuracy_trials: int) -> pd.DataFrame:
    """One row per release of the benchmark ``jobs`` (``mechanism``, ``dataset``, ``epsilon``,
    ``trial``, ``classified``), from each job's ``experiment.*`` overrides; on a Table 2 cell the
    trials below ``accuracy_trials`` are ``classified``."""
    rows = []
    for job in jobs:
        o = dict(x.split("=", 1) for x in job.overrides if "=" in x)
        if o.get("experiment") != "benchmark":
            continue
        lo, hi = (int(x) for x in o["experiment.trial_range"].strip("[]").split(","))
        mechanism = o["experiment.mechanisms"].strip("[]")
        dataset = o["experiment.datasets"].strip("[]")
        epsilon = float(o["experiment.epsilons"].strip("[]"))
        table2 = expand([dataset], (), ())[0].family == "table2"
        for trial in range(lo, hi):
            rows.append((mechanism, dataset, epsilon, trial, table2 and trial < accuracy_trials))
    return pd.DataFrame(rows, columns=["mechanism", "dataset", "epsilon", "trial", "classified"])


def repeat_trials(releases: pd.DataFrame, times: int) -> pd.DataFrame:
    """``releases`` with each cell's trials ``times`` over (trial numbers continued, classified as
    their originals): a summary ``times`` as long with the same cells."""
    span = int(releases.trial.max()) + 1 if len(releases) else 0
    return pd.concat(
        [releases.assign(trial=releases.trial + i * span) for i in range(times)], ignore_index=True
    )


def _cell_columns(dataset: str, template: pd.DataFrame) -> dict:
    """A data set's ``family``, ``n``, ``d``, ``k``: the template's where it has the data set, else
    its cell's (the paper's Table 1 for a UCI data set)."""
    same = template[template.dataset == dataset]
    if len(same):
        r = same.iloc[0]
        return {"family": r.family, "n": int(r.n), "d": int(r.d), "k": int(r.k)}
    cell = expand([dataset], (), ())[0]
    n, d = cell.n, cell.d
    if n is None and dataset in PAPER_TABLE1:
        n, d = PAPER_TABLE1[dataset]["n"], PAPER_TABLE1[dataset]["d"]
    return {"family": cell.family, "n": int(n or 0), "d": int(d or 0), "k": int(cell.k)}


def synthetic_summary(template: pd.DataFrame, releases: pd.DataFrame, scale: str) -> pd.DataFrame:
    """A summary with one row per row of ``releases`` (:func:`plan_releases`) and ``template``'s
    columns (untyped: :func:`experiments.bench.summary.write_summary` types and sorts them).

    Each mechanism's rows are its template releases (not refusals) tiled; the key columns (record
    id, data set, family, n, d, k, ε, trial, scale) are rewritten to the plan's; the accuracy
    columns are kept on the classified rows alone (the template's classified releases of the
    mechanism, or of any mechanism where it has none); the :data:`MEASURED` values are made
    distinct."""
    released = template[template.status != "refused"].reset_index(drop=True)
    scored = released[released.accuracy.notna()]
    parts = []
    for mech, keys in releases.groupby("mechanism", sort=True):
        own = released[released.mechanism == mech]
        own = own if len(own) else released
        rows = own.iloc[np.resize(np.arange(len(own)), len(keys))]
        rows = rows.reset_index(drop=True).copy()
        rows["mechanism"] = mech
        keys = keys.reset_index(drop=True)
        acc = scored[scored.mechanism == mech]
        acc = (acc if len(acc) else scored).reset_index(drop=True)
        rows.loc[:, list(ACCURACY_COLUMNS)] = np.nan
        hit = keys.classified.to_numpy()
        if hit.any() and len(acc):
            picked = acc.iloc[np.resize(np.arange(len(acc)), int(hit.sum()))]
            rows.loc[hit, list(ACCURACY_COLUMNS)] = picked[list(ACCURACY_COLUMNS)].to_numpy()
        rows["dataset"] = keys.dataset
        rows["epsilon_target"] = keys.epsilon
        rows["trial"] = keys.trial
        rows["scale"] = scale
        parts.append(rows)
    out = pd.concat(parts, ignore_index=True)
    cells = {ds: _cell_columns(ds, template) for ds in out.dataset.unique()}
    for c in ("family", "n", "d", "k"):
        out[c] = out.dataset.map({ds: v[c] for ds, v in cells.items()})
    rng = np.random.default_rng(0)
    for c in MEASURED:
        out[c] = out[c].astype("float64") * rng.uniform(0.99, 1.01, len(out))
    out["record_id"] = [
        record_id({"synthetic": scale, "dataset": ds, "mechanism": m, "epsilon": e, "trial": t})
        for ds, m, e, t in zip(out.dataset, out.mechanism, out.epsilon_target, out.trial)
    ]
    return out[list(bench_summary.COLUMNS)]


def load_peak_rss(summary: Path, mode: str = "query") -> dict:
    """Run :data:`_CHILD` in a fresh interpreter (``mode``: ``imports``, ``query`` or ``draw``) on
    the summary at ``summary``; returns what it prints: ``peak_rss_kib``, ``seconds`` and the rows
    it read and drew.

    The peak is the child's ``VmHWM`` (``/proc/self/status``, KiB): the high-water mark of its own
    address space.  Its ``ru_maxrss`` would not do: on Linux a process's maximum RSS is carried
    across ``fork`` and ``exec``, so a child of a large parent reports at least the parent's size
    (``ru_maxrss`` only where there is no ``/proc``)."""
    repo = Path(__file__).resolve().parents[2]
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")])),
    )
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(summary), mode],
        capture_output=True, text=True, check=True, cwd=repo, env=env,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def store_sizes(store_dir: Path) -> pd.DataFrame:
    """Per benchmark record of the store at ``store_dir``: ``mechanism``, ``status``, ``bytes`` (the
    file's size) and ``allocated`` (the disk blocks it holds, in bytes)."""
    rows = []
    for path in sorted((Path(store_dir) / "records").glob("*.json")):
        rec = json.loads(path.read_text())
        if rec.get("experiment") != "benchmark":
            continue
        st = path.stat()
        rows.append((rec["mechanism"], rec.get("status"), st.st_size, st.st_blocks * 512))
    return pd.DataFrame(rows, columns=["mechanism", "status", "bytes", "allocated"])


def extrapolate(sizes: pd.DataFrame, releases: pd.DataFrame) -> dict:
    """The store of ``releases`` from the record sizes ``sizes`` (:func:`store_sizes`): each
    mechanism's releases at its median record (a mechanism not measured at the largest median), and
    an upper estimate, every release at the largest mechanism's median; and the largest record."""
    med = sizes.groupby("mechanism")[["bytes", "allocated"]].median()
    per = releases.groupby("mechanism").size()
    largest = med.bytes.idxmax()
    unmeasured = sorted(set(per.index) - set(med.index))
    out = {"releases": int(per.sum()), "largest_mechanism": largest, "unmeasured": unmeasured}
    for col in ("bytes", "allocated"):
        by_mech = sum(int(k) * float(med[col].get(m, med[col].max())) for m, k in per.items())
        out[f"{col}_by_mechanism"] = by_mech
        out[f"{col}_upper"] = int(per.sum()) * float(med.loc[largest, col])
    out["median_bytes"] = float(statistics.median(sizes.bytes))
    out["max_bytes"] = int(sizes.bytes.max())
    return out
