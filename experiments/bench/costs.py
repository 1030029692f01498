"""The benchmark's measured cost model: CPU seconds per release, per mechanism and data-set shape.

:func:`measure` times releases exactly as :func:`experiments.bench.runner.run_benchmark` makes them
(the same :func:`~experiments.bench.runner.entry`, one BLAS thread, the scale's PPCA iterations and
chains), at ε = 1 and the benchmark's δ: for each data set of the grid it records

* ``fixed``: the CPU seconds a job spends before its first release (loading the rows, A = XᵀX/n
  and the top-k eigenvectors that the metrics compare with), measured once;
* ``release``: per mechanism, the median CPU seconds of a few releases (process CPU time plus that
  of finished child processes: the peers run in their own interpreter), or only one release where
  that one took longer than :data:`ONE_IS_ENOUGH_S`; a peer's release that hit its wall-clock cap
  (``timeout``) counts as the cap, the time it holds a worker;
* on a Table 2 cell, ``accuracy``: the CPU seconds of one classification
  (:mod:`experiments.bench.accuracy`), the median over the releases of :data:`ACCURACY_TIMED`;
* ``job_startup`` (once): the CPU seconds of a ``run.py experiment=benchmark`` process that makes
  no release (interpreter, imports, configuration, gaussian10's rows), which every job of the plan
  pays.

The spiked model is measured at a few (n, d) points and, per mechanism, a power law
``seconds = a · n^b · d^c`` is fitted by least squares in logs (:func:`fit_power_law`) to the
points with n >= :data:`FIT_MIN_N`; a spiked cell that was not measured is priced by that law.
Releases are timed at ε = 1 only; a mechanism whose cost depends on ε carries an exponent
``b`` (``epsilon_exponents``), ``seconds(ε) = seconds(1) · ε^b``, fitted to the release seconds of
a benchmark summary (:func:`fit_epsilon_exponents`, ``scripts/benchmark.py costs --epsilon-from``).
The table is committed as ``experiments/bench/costs.json`` (written by
``scripts/benchmark.py costs``) and :func:`estimate_jobs` prices the plan's benchmark jobs with it:
a job of ``t`` trials at ε costs ``job_startup + fixed + t x release x ε^b``, plus its classified
trials x ``accuracy`` on a Table 2 cell.  CPU time, not wall time, so a loaded machine inflates it less; it
is still one machine's measurement, read as an estimate (docs/benchmark.md, "The cost model").
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import statistics
import time
from pathlib import Path

import numpy as np

from experiments.bench import datasets

#: the committed cost table (``scripts/benchmark.py costs`` writes it)
COSTS_FILE = Path(__file__).resolve().parent / "costs.json"
#: a release that took longer than this is timed once (CPU-s)
ONE_IS_ENOUGH_S = 5.0
#: on a Table 2 cell, the releases whose classification is timed (its cost depends on the projected
#: rows, not on the mechanism: every release has k columns); the median prices every mechanism's
ACCURACY_TIMED = ("pca", "random", "mod_sulq")
#: the target ε at which releases are timed
TIMING_EPSILON = 1.0


def cpu_seconds() -> float:
    """This process's CPU time (``time.process_time``) plus that of its finished (waited-for)
    children (``os.times``, clock ticks)."""
    t = os.times()
    return time.process_time() + t.children_user + t.children_system


def fit_power_law(points: list[tuple[int, int, float]]) -> dict | None:
    """Least squares of log s = log a + b log n + c log d over ``points`` (n, d, seconds).

    Returns ``{"a", "b", "c", "points"}``, or None with fewer than three points (the model has three
    parameters).  With only one distinct n (or d) the n (or d) exponent is set to 0.
    """
    pts = [(n, d, s) for n, d, s in points if s > 0]
    if len(pts) < 3:
        return None
    n, d, s = (np.log(np.array(v, dtype=float)) for v in zip(*pts))
    cols = [np.ones_like(n)]
    has_n, has_d = np.ptp(n) > 0, np.ptp(d) > 0
    if has_n:
        cols.append(n)
    if has_d:
        cols.append(d)
    coef, *_ = np.linalg.lstsq(np.column_stack(cols), s, rcond=None)
    coef = list(coef)
    a = math.exp(coef.pop(0))
    b = coef.pop(0) if has_n else 0.0
    c = coef.pop(0) if has_d else 0.0
    return {"a": a, "b": float(b), "c": float(c), "points": len(pts)}


def power_law(fit: dict, n: int, d: int) -> float:
    return float(fit["a"] * n ** fit["b"] * d ** fit["c"])


def measure(
    mechanisms,
    cells: list[datasets.Cell],
    *,
    delta: float,
    ppca_iterations: int,
    ppca_chains: int,
    limits: dict,
    options: dict | None = None,
    repeats: int = 3,
    data_dir: str | None = None,
    log=print,
) -> dict:
    """Time every mechanism on every cell (module docstring); returns ``{"cells": {...}}``.

    A mechanism the benchmark would skip on a cell (k = 1 only, or n x d above its entry in
    ``limits``) is not timed there; a refusal is recorded as ``{"refused": reason}``.
    """
    from experiments.bench import currency
    from experiments.bench.runner import Truth, entry, trial_stream
    from mechanisms.linalg import single_thread_blas
    from mechanisms.toolkit import PreparedData, PrivacyInputError

    out: dict = {}
    with single_thread_blas():
        for cell in cells:
            c0 = cpu_seconds()
            try:
                ds = datasets.load(cell, data_dir)
            except Exception as exc:  # data unavailable: not priced (listed)
                # the committed table names the failure only: its message holds this machine's paths
                out[cell.name] = {"unavailable": f"its data did not load ({type(exc).__name__})"}
                log(f"{cell.name}: unavailable: {str(exc).splitlines()[0]}")
                continue
            data = PreparedData(ds.X)
            Truth.of(data, cell.k)
            n, d = data.shape
            row = {"n": int(n), "d": int(d), "k": int(cell.k), "fixed": cpu_seconds() - c0}
            row["release"] = {}
            acc_times: list[float] = []
            log(f"{cell.name} (n={n}, d={d}, k={cell.k}): fixed {row['fixed']:.2f} CPU-s")
            for m in mechanisms:
                if m in currency.K1_ONLY and cell.k != 1:
                    continue
                if n * d > float(limits.get(m, math.inf)):
                    continue
                e = entry(
                    m, TIMING_EPSILON, delta, ppca_iterations=ppca_iterations,
                    ppca_chains=ppca_chains, options=(options or {}).get(m),
                )  # fmt: skip
                times, out_, timeouts = [], None, 0
                for trial in range(repeats):
                    rng = np.random.default_rng(trial_stream(0, m, cell.name, 1.0, trial))
                    t0 = cpu_seconds()
                    try:
                        out_ = e.fn(data, cell.k, rng=rng, clip=False)
                    except (PrivacyInputError, ValueError) as exc:
                        row["release"][m] = {"refused": str(exc).splitlines()[0][:200]}
                        break
                    times.append(cpu_seconds() - t0)
                    if out_.release.get("status") == "timeout":  # a peer at its wall-clock cap:
                        times[-1] = max(times[-1], float(e.params["timeout"]))  # it held a worker
                        timeouts += 1
                    if times[-1] > ONE_IS_ENOUGH_S:
                        break
                if times:
                    row["release"][m] = {
                        "seconds": statistics.median(times),
                        "releases": len(times),
                    }
                    if timeouts:
                        row["release"][m]["timeouts"] = timeouts
                    if m in ACCURACY_TIMED and cell.family == "table2":
                        from experiments.bench.accuracy import table2_accuracy

                        t0 = cpu_seconds()
                        table2_accuracy(out_.components, ds.table2)
                        acc_times.append(cpu_seconds() - t0)
                log(f"  {m}: {row['release'].get(m)}")
            if acc_times:
                row["accuracy"] = statistics.median(acc_times)
                row["accuracy_timed_on"] = [m for m in ACCURACY_TIMED if m in row["release"]]
                log(f"  accuracy: {row['accuracy']:.1f} CPU-s (median of {len(acc_times)})")
            out[cell.name] = row
    return {"cells": out}


#: the fits use the spiked points with at least this many rows: they are extrapolated to larger n,
#: and below it some mechanisms change regime (``subspace_approx`` answers ⊥ at once at n = 200)
FIT_MIN_N = 1000


def _spiked_k2(name: str, row: dict) -> bool:
    """A measured spiked cell of the grid's k with n >= :data:`FIT_MIN_N` (the fits' points)."""
    return (
        name.startswith("spiked-")
        and "release" in row
        and row["k"] == datasets.K["spiked"]
        and row["n"] >= FIT_MIN_N
    )


def spiked_fits(cells: dict) -> dict:
    """Per mechanism, the power law fitted to its spiked cells' release seconds."""
    pts: dict[str, list] = {}
    for name, row in cells.items():
        if not _spiked_k2(name, row):
            continue
        for m, r in row["release"].items():
            if "seconds" in r:
                pts.setdefault(m, []).append((row["n"], row["d"], r["seconds"]))
    fits = {m: fit_power_law(p) for m, p in sorted(pts.items())}
    fixed = [(r["n"], r["d"], r["fixed"]) for nm, r in cells.items() if _spiked_k2(nm, r)]
    fits["(fixed)"] = fit_power_law(fixed)
    return {m: f for m, f in fits.items() if f is not None}


#: a (data set, mechanism) enters the ε fit only where the median seconds of its releases are at
#: least this at every ε: shorter releases are dominated by fixed work and timer noise
EPSILON_FIT_MIN_S = 0.5


def fit_epsilon_exponents(rows) -> dict:
    """Per mechanism, the exponent ``b`` of ``seconds ∝ ε^b``, least squares in logs with one
    intercept per data set (so that only the change with ε within a data set counts).

    ``rows``: a data frame with one row per release, columns ``dataset``, ``mechanism``,
    ``epsilon_target`` and ``seconds`` (a benchmark summary).  Per (data set, mechanism), the
    median seconds at each ε; a data set enters a mechanism's fit when it has at least three ε and
    every median is at least :data:`EPSILON_FIT_MIN_S`.  Returns ``{mechanism: {"exponent": b,
    "datasets": m}}`` for the mechanisms with at least one such data set.
    """
    med = (
        rows.dropna(subset=["seconds"])
        .groupby(["mechanism", "dataset", "epsilon_target"])["seconds"]
        .median()
        .reset_index()
    )
    out = {}
    for mech, g in med.groupby("mechanism"):
        xs, ys = [], []
        for _, h in g.groupby("dataset"):
            if len(h) < 3 or h["seconds"].min() < EPSILON_FIT_MIN_S:
                continue
            x, y = np.log(h["epsilon_target"].to_numpy()), np.log(h["seconds"].to_numpy())
            xs.append(x - x.mean())
            ys.append(y - y.mean())
        if xs:
            x, y = np.concatenate(xs), np.concatenate(ys)
            out[str(mech)] = {"exponent": float(x @ y / (x @ x)), "datasets": len(xs)}
    return out


def load(path: Path = COSTS_FILE) -> dict:
    """The committed cost table (empty when there is none)."""
    return json.loads(path.read_text()) if path.exists() else {}


def release_seconds(
    table: dict,
    mechanism: str,
    cell: datasets.Cell,
    n: int,
    d: int,
    epsilon: float = TIMING_EPSILON,
):
    """(fixed CPU-s of the cell, CPU-s of one release of ``mechanism`` on it at ``epsilon``), or
    None where the table neither measured it nor fits it (a spiked cell is priced by its
    mechanism's power law; a measured refusal costs no release; the ε = 1 timing is carried to
    ``epsilon`` by the mechanism's exponent, where the table has one)."""
    cells, fits = table.get("cells", {}), table.get("spiked_fits", {})
    exponent = table.get("epsilon_exponents", {}).get(mechanism, {}).get("exponent", 0.0)
    scale = (epsilon / TIMING_EPSILON) ** exponent
    row = cells.get(cell.name)
    got = (row or {}).get("release", {}).get(mechanism)
    if got and "seconds" in got:
        return row["fixed"], got["seconds"] * scale
    if got and "refused" in got:  # the job records one refusal and makes no release
        return row["fixed"], 0.0
    if cell.family == "spiked" and cell.k == datasets.K["spiked"] and mechanism in fits:
        return power_law(fits["(fixed)"], n, d), power_law(fits[mechanism], n, d) * scale
    return None


def estimate_jobs(
    jobs,
    table: dict | None = None,
    *,
    accuracy_trials: int = 0,
    stop_after_timeouts: int | None = None,
    caps: dict[str, float] | None = None,
    unmeasured: float = 60.0,
) -> list:
    """The plan's benchmark jobs (``experiments.plan.plan.build_benchmark_plan``) priced by the
    measured table: a job ``benchmark/<cell>/<mechanism>/eps<e>/t<lo>-<hi>`` costs the job's
    start-up, the cell's fixed CPU-s, (hi - lo) releases at its ε and, on a Table 2 cell, one
    classification for each of its trials below ``accuracy_trials``.

    Where every timed release of a peer hit its wall-clock cap and the grid stops a cell after
    ``stop_after_timeouts`` of them, only the job's trials below that count are priced; ``caps``:
    a mechanism's wall-clock cap per release (the peers'), which bounds its price per release
    whatever the ε law gives.  A data set the table lists as unavailable costs the start-up alone
    (the run skips it); ``unmeasured`` CPU-s where the table has no price.  Other jobs are returned
    unchanged."""
    table = load() if table is None else table
    startup = float(table.get("job_startup", 0.0))
    out = []
    for job in jobs:
        parts = job.name.split("/")
        if len(parts) != 5 or parts[0] != "benchmark":
            out.append(job)
            continue
        _, cell_name, mech, eps, block = parts
        lo, hi = (int(x) for x in block[1:].split("-"))
        cell = datasets.expand([cell_name], (), ())[0]
        row = table.get("cells", {}).get(cell_name, {})
        n, d = (cell.n, cell.d) if cell.family == "spiked" else (row.get("n"), row.get("d"))
        if "unavailable" in row:  # its rows are absent here: the job starts, skips it, ends
            out.append(dataclasses.replace(job, cost=startup))
            continue
        price = None if n is None else release_seconds(table, mech, cell, n, d, float(eps[3:]))
        if price is not None and mech in (caps or {}):
            price = (price[0], min(price[1], float(caps[mech])))
        releases = hi - lo
        timed = row.get("release", {}).get(mech, {})
        if stop_after_timeouts is not None and timed.get("timeouts", 0) >= timed.get("releases", 1):
            releases = max(0, min(hi, stop_after_timeouts) - lo)
        cost = unmeasured if price is None else startup + price[0] + releases * price[1]
        if price is not None and cell.family == "table2":
            acc = row.get("accuracy", 0.0)
            cost += max(0, min(hi, accuracy_trials) - lo) * acc
        out.append(dataclasses.replace(job, cost=float(cost)))
    return out


def write(table: dict, path: Path = COSTS_FILE) -> None:
    path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")


def breakdown(jobs) -> str:
    """The priced benchmark jobs' CPU-s by data set and by mechanism, largest first."""
    by_cell: dict[str, float] = {}
    by_mech: dict[str, float] = {}
    for j in jobs:
        parts = j.name.split("/")
        if len(parts) == 5 and parts[0] == "benchmark":
            by_cell[parts[1]] = by_cell.get(parts[1], 0.0) + j.cost
            by_mech[parts[2]] = by_mech.get(parts[2], 0.0) + j.cost
    total = sum(by_cell.values()) or 1.0
    lines = []
    for title, d in (("by data set", by_cell), ("by mechanism", by_mech)):
        top = sorted(d.items(), key=lambda kv: -kv[1])
        lines.append(
            f"CPU-s {title}: " + ", ".join(f"{k} {v:,.0f} ({v / total:.0%})" for k, v in top)
        )
    return "\n".join(lines)
