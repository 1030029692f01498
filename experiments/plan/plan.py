"""The reproduction as a plan: a list of independent jobs, each a resumable part of one runner.

A job is one command line of ``run.py`` (its Hydra overrides) that computes a part of an
experiment: a PPCA (n, subset) group of Figures 3-4, the MOD-SULQ or random restarts of one n, one
Table 2 permutation or round, one chain of a Figure 2 record (then the record, from its chains),
Table 1, the SULQ bound, ...  The part is chosen by ``experiment.only``
(:func:`experiments.runs.settings.plan_selector`), which never enters a run key: a job writes the
very records the whole runner writes (same run keys, ids and releases; ``tests/experiments/plan/test_plan_records.py``).

Each job has an estimated cost in CPU-seconds, ``fixed + per_unit x units``: ``units`` counts what
the job's work grows with at any scale (chain-iterations of a PPCA group, records of a sweep,
iterations of a Figure 2 chain), ``fixed`` what it does not (loading and preparing the data).  Both
come from :data:`COSTS_FILE`, measured from the jobs of a quick-scale run
(:func:`costs_from_timings`); a paper-scale job's cost is that job's fixed cost plus its per-unit
cost times its paper-scale units.  The benchmark's jobs (:func:`build_benchmark_plan`) are priced
by the benchmark's measured model instead, :mod:`experiments.bench.costs`.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path

from omegaconf import OmegaConf

from experiments.paths import config_dir

#: the measured costs (:func:`costs_from_timings`), committed with the command that measured them
COSTS_FILE = Path(__file__).resolve().parent / "costs.json"

#: every UCI data set of the reproduction, census (the longest) first
UCI = ("census", "insurance", "kddcup", "localization")
#: the order of the stages (what a dry run prints)
STAGES = (
    "Table 1, Figure 1",
    "Figure 2",
    "Figures 3-4 PPCA",
    "Figures 3-4 others",
    "Table 2, footnote 1",
    "Figure 5",
    "beyond the paper",
    "benchmark",
    "figures and tables",
)
#: the cost of a job whose kind has no measured cost (CPU-s)
UNMEASURED_COST = 5.0
#: the kind of a job that draws figures and tables (experiments.figures.cli.DRAWINGS) from the store
DRAW_KIND = "draw"
#: which drawings are made once the jobs of which stages are done: each figure or table of
#: experiments.figures.cli.DRAWINGS appears once, with the stages whose records it draws
DRAWN_AFTER = (
    (("table1", "fig1"), (STAGES[0],)),
    (("fig2", "sampler_convergence"), (STAGES[1],)),
    (("fig3", "fig4", "utility_vs_n"), (STAGES[2], STAGES[3])),
    (("table2", "footnote1", "fig_classification"), (STAGES[4],)),
    (("fig5", "utility_vs_epsilon"), (STAGES[5],)),
    (("dimension_scaling", "online_regret"), (STAGES[6],)),
)


@dataclass(frozen=True)
class Job:
    """One independent job of the plan.

    Attributes
    ----------
    name : str
        Readable and unique in its plan (``figures3-4/ppca/census/n3/s1``).
    stage : str
        One of :data:`STAGES`.
    overrides : tuple of str
        The job's ``run.py`` overrides (``scale=`` included).
    kind : str
        What its cost is measured by (``ppca_group/census``).
    units : float
        How much of its kind's work it does (chain-iterations, records, iterations).
    cost : float
        Estimated CPU-s (:func:`estimate`).
    after : tuple of str
        Jobs whose outputs it needs (a Figure 2 record after its chains).
    """

    name: str
    stage: str
    overrides: tuple[str, ...]
    kind: str
    units: float
    cost: float = 0.0
    after: tuple[str, ...] = field(default_factory=tuple)

    @property
    def token(self) -> str:
        """A file-name-safe id of the job's work (its name and overrides)."""
        digest = hashlib.sha256(json.dumps([self.name, self.overrides]).encode()).hexdigest()
        return "".join(c if c.isalnum() else "_" for c in self.name) + "-" + digest[:10]


def scale_config(scale: str):
    """``conf/scale/<scale>.yaml``; ``ValueError`` naming the valid scales when there is none."""
    path = config_dir() / "scale" / f"{scale}.yaml"
    if not path.exists():
        valid = ",".join(sorted(p.stem for p in path.parent.glob("*.yaml")))
        raise ValueError(f"unknown scale {scale!r}; valid: {valid}")
    return OmegaConf.load(path)


def _experiment_yaml(name: str):
    return OmegaConf.load(config_dir() / "experiment" / f"{name}.yaml").experiment


def _restarts(sc, mechanism: str) -> int:
    return int(sc.restarts.get(mechanism, sc.restarts.get("default")))


def _only(**sel) -> str:
    return "experiment.only={" + ",".join(f"{k}:{v}" for k, v in sel.items()) + "}"


def build_plan(
    scale: str,
    datasets: tuple[str, ...] = UCI,
    *,
    extras: bool | None = None,
    gibbs_samplers: tuple[str, ...] = ("gibbs", "reference"),
    ppca_sweeps: int | None = None,
    costs: dict | None = None,
    drawings: bool = True,
) -> list[Job]:
    """The jobs of the reproduction at ``scale`` on the UCI ``datasets`` (as ``scripts/reproduce.sh``
    ran them), with their estimated costs.

    ``extras``: also the experiments beyond the paper (default: at every scale but paper);
    ``gibbs_samplers``: Figure 2's samplers (``gibbs`` runs at 2 and at 1 sweep per iteration);
    ``ppca_sweeps``: Givens sweeps per iteration of the Figures 3-4 PPCA chains (None: the scale's);
    ``drawings``: also the jobs that draw each figure and table once its jobs are done
    (:func:`drawing_jobs`).
    """
    sc = scale_config(scale)
    extras = scale != "paper" if extras is None else extras
    on = [d for d in UCI if d in datasets]
    jobs: list[Job] = []
    S = f"scale={scale}"

    def add(name, stage, overrides, kind, units, after=()):
        jobs.append(Job(name, stage, (*overrides, S), kind, float(units), after=tuple(after)))

    # Table 1 and Figure 1 (the MOD-SULQ bound)
    if on:
        add("table1", STAGES[0], ["experiment=table1", f"experiment.datasets=[{','.join(on)}]"],
            "table1", 1)  # fmt: skip
    add("sulq_bound", STAGES[0], ["experiment=sulq_bound"], "sulq_bound", 1)
    # Figure 2: each chain a job, then the record from its chains
    g = sc.gibbs
    for ds in (d for d in ("insurance", "kddcup") if d in on):
        variants = [(s, None) for s in gibbs_samplers]
        if "gibbs" in gibbs_samplers:
            variants.append(
                ("gibbs", 1)
            )  # the chain of the grouped releases: 1 sweep per iteration
        for sampler, sweeps in variants:
            tag = sampler + ("" if sweeps is None else f"-sweeps{sweeps}")
            base = [
                "experiment=gibbs_convergence",
                f"dataset={ds}",
                f"experiment.sampler={sampler}",
            ]
            if sweeps is not None:
                base.append(f"experiment.sweeps_per_iteration={sweeps}")
            chains = [f"figure2/{ds}/{tag}/chain{c}" for c in range(int(g.chains))]
            for c, name in enumerate(chains):
                add(name, STAGES[1], [*base, _only(chain=c)], f"gibbs_chain/{ds}/{tag}",
                    g.iterations)  # fmt: skip
            add(f"figure2/{ds}/{tag}", STAGES[1], base, f"gibbs_record/{ds}", 1, after=chains)
    # Figures 3-4: a PPCA job per (n, subset) group; MOD-SULQ and random per n; PCA per data set
    ppca_units = _restarts(sc, "ppca") * int(sc.ppca_iterations)
    spi = [] if ppca_sweeps is None else [f"++scale.ppca_sweeps_per_iteration={ppca_sweeps}"]
    for ds in on:
        base = ["experiment=utility_vs_n", f"dataset={ds}"]
        for i, kind in enumerate(ppca_group_kinds(sc, ds)):
            for s in range(int(sc.subsets)):
                add(f"figures3-4/ppca/{ds}/n{i}/s{s}", STAGES[2],
                    [*base, "mechanism=ppca", *spi, _only(n_index=i, subset=s)],
                    kind, ppca_units)  # fmt: skip
        for mech in ("mod_sulq", "random"):
            for i in range(int(sc.n_points)):
                add(f"figures3-4/{mech}/{ds}/n{i}", STAGES[3],
                    [*base, f"mechanism={mech}", _only(n_index=i)],
                    f"sweep/{ds}/{mech}", int(sc.subsets) * _restarts(sc, mech))  # fmt: skip
        add(f"figures3-4/pca/{ds}", STAGES[3], [*base, "mechanism=pca"], f"sweep/{ds}/pca",
            int(sc.n_points) * int(sc.subsets) * _restarts(sc, "pca"))  # fmt: skip
    # Table 2 (kddcup, localization) and footnote 1 (census, insurance; census without its label's columns)
    c = sc.classification
    P, J = int(c.permutations), int(c.projections)
    max_rows = int(c.max_rows) if c.get("max_rows") else None
    table2 = [(ds, m, []) for ds in ("kddcup", "localization") if ds in on
              for m in ("ppca", "pca", "mod_sulq", "random")]  # fmt: skip
    table2 += [(ds, "pca", []) for ds in ("census", "insurance") if ds in on]
    if "census" in on:
        table2.append(("census", "pca", ["experiment.drop_feature_prefixes=['income=']"]))
    for ds, mech, extra in table2:
        base = ["experiment=classification", f"dataset={ds}", f"mechanism={mech}", *extra]
        tag = f"table2/{ds}/{mech}" + ("/no-income" if extra else "")
        # units: thousands of training rows per fit; a PPCA group fits each projection, PCA's
        # projections share one subspace (one fit)
        rows = table2_training_rows(ds, max_rows) / 1000
        for p in range(P):
            if mech in ("ppca", "pca"):
                fits = J if mech == "ppca" else 1
                add(f"{tag}/p{p}", STAGES[4], [*base, _only(permutation=p)],
                    f"classification/{ds}/{mech}", fits * rows)  # fmt: skip
            else:
                for j in range(J):
                    add(f"{tag}/p{p}/j{j}", STAGES[4], [*base, _only(permutation=p, projection=j)],
                        f"classification/{ds}/{mech}", rows)  # fmt: skip
    # Figure 5: PCA in one job; MOD-SULQ and PPCA a job per epsilon
    n_eps = len(_experiment_yaml("utility_vs_epsilon").epsilons)
    base = ["experiment=utility_vs_epsilon"]
    add("figure5/pca", STAGES[5], [*base, "mechanism=pca"], "epsilon/pca", n_eps)
    for mech in ("mod_sulq", "ppca"):
        per = int(sc.ppca_chains) * int(sc.ppca_iterations) if mech == "ppca" else 1
        for i in range(n_eps):
            add(f"figure5/{mech}/e{i}", STAGES[5],
                [*base, f"mechanism={mech}", _only(epsilon_index=i)],
                f"epsilon/{mech}", int(sc.epsilon_samples) * per)  # fmt: skip
    # beyond the paper (synthetic data): dimension scaling a job per mechanism and d (the n*
    # searches of different d share nothing; the largest d costs most), online regret a job per
    # variant and restart (one stream each)
    if extras:
        dims = _experiment_yaml("dimension_scaling").grids[scale].dims
        for mech in ("pca", "ppca", "mod_sulq", "analyze_gauss", "noisy_power", "subspace_approx"):
            for i, d in enumerate(dims):
                add(f"extra/dimension_scaling/{mech}/d{d}", STAGES[6],
                    ["experiment=dimension_scaling", f"mechanism={mech}", _only(d_index=i)],
                    f"extra/dimension_scaling/{mech}/{scale}", d)  # fmt: skip
        regret = _experiment_yaml("online_regret")
        for i in range(len(regret.variants)):
            for r in range(int(regret.grids[scale].restarts)):
                add(f"extra/online_regret/v{i}/r{r}", STAGES[6],
                    ["experiment=online_regret", _only(variant_index=i, restart=r)],
                    f"extra/online_regret/{scale}", 1)  # fmt: skip
    if drawings:
        jobs += drawing_jobs(jobs, scale)
    return estimate(jobs, load_costs() if costs is None else costs)


#: rows of each UCI data set as loaded here by default (census: its test split, the paper's learn
#: split being absent, docs/data.md): the training rows of a Table 2 job's cost, and the grid of n
#: that chooses a PPCA group's cost kind (jobs never read it: their runners load the data)
DATASET_ROWS = {"kddcup": 494_021, "census": 99_762, "insurance": 9_822, "localization": 164_860}


def ppca_group_kinds(sc, dataset: str) -> list[str]:
    """The cost kind of each n of the Figures 3-4 PPCA groups on ``dataset``: ``ppca_group/<ds>``
    for the Givens chain, ``ppca_group/<ds>/left`` from the n at which the scale runs the left
    Givens chain (:func:`experiments.runs.ppca_groups.left_chain_at`), whose iterations cost less."""
    from experiments.runs.ppca_groups import left_chain_at
    from experiments.runs.sweep import n_grid

    grid = n_grid(DATASET_ROWS[dataset], int(sc.n_min), int(sc.n_points))
    return [
        f"ppca_group/{dataset}" + ("/left" if left_chain_at(sc, dataset, n) else "") for n in grid
    ]


def table2_training_rows(dataset: str, max_rows: int | None) -> int:
    """The training rows of one Table 2 fit on ``dataset`` with the permutations cut to ``max_rows``
    (:func:`experiments.runs.classifiers.split_sizes`: 10% of the half that does not compute the
    subspace).  The cross-validated C-SVC's time grows with them (docs/performance.md), so they
    are the units of a Table 2 job's cost and carry a cost measured at one scale to another."""
    from experiments.runs.classifiers import split_sizes

    return split_sizes(DATASET_ROWS[dataset], max_rows)[1]


def drawing_jobs(jobs: list[Job], scale: str) -> list[Job]:
    """One job per group of :data:`DRAWN_AFTER` whose stages have jobs in ``jobs``: it draws that
    group's figures and tables from the store once those jobs are done, so a figure appears as soon
    as its records are there, not after the whole plan.  A drawing job leaves no marker: it runs
    again whenever the plan runs, so the figures always show every record of the store."""
    out = []
    for names, stages in DRAWN_AFTER:
        after = tuple(j.name for j in jobs if j.stage in stages)
        if after:
            out.append(
                Job(
                    f"draw/{'+'.join(names)}",
                    STAGES[-1],
                    (f"scale={scale}",),
                    DRAW_KIND,
                    1.0,
                    after=after,
                )
            )
    return out


def drawing_names(job: Job) -> list[str]:
    """The figures and tables (keys of experiments.figures.cli.DRAWINGS) a drawing job draws."""
    return job.name.removeprefix("draw/").split("+")


def load_costs(path: Path = COSTS_FILE) -> dict:
    """The measured cost table (empty when there is none yet)."""
    return json.loads(path.read_text()) if path.exists() else {}


def estimate(jobs: list[Job], costs: dict) -> list[Job]:
    """The jobs with their estimated CPU-s: ``fixed + per_unit x units`` of their kind
    (:data:`UNMEASURED_COST` for a kind without a measured cost)."""
    table = costs.get("kinds", {})
    out = []
    for job in jobs:
        k = table.get(job.kind)
        cost = UNMEASURED_COST if k is None else k["fixed"] + k["per_unit"] * job.units
        out.append(Job(job.name, job.stage, job.overrides, job.kind, job.units, cost, job.after))
    return out


def costs_from_timings(lines: list[dict]) -> dict:
    """Per-kind costs from the engine's timings of finished jobs (one dict per job: ``kind``,
    ``units``, ``cpu_s``, ``variable_s``).

    ``variable_s`` is the part of a job's time that grows with its units (the seconds its records
    say their computation took, or a Figure 2 chain's seconds: wall time, scaled by the job's
    ``cpu_s / wall_s``); the rest of ``cpu_s`` is fixed.  Per
    kind: ``per_unit`` is the median of variable_s / units and ``fixed`` the median of
    cpu_s - variable_s over its jobs.  A job that skipped stored records is left out.
    """
    by_kind: dict[str, list[dict]] = {}
    for t in lines:
        if t.get("ok"):
            by_kind.setdefault(t["kind"], []).append(t)
    kinds = {}
    for kind, ts in sorted(by_kind.items()):
        # the records' seconds are wall time: on a busy machine, scaled by the job's CPU / wall
        var = [
            max(
                0.0,
                min(
                    t["variable_s"] * min(1.0, t["cpu_s"] / t.get("wall_s", t["cpu_s"])), t["cpu_s"]
                ),
            )
            for t in ts
        ]
        kinds[kind] = {
            "fixed": round(statistics.median(t["cpu_s"] - v for t, v in zip(ts, var)), 4),
            "per_unit": statistics.median(v / max(t["units"], 1e-12) for t, v in zip(ts, var)),
            "jobs": len(ts),
        }
    return kinds


def priced_by(jobs: list[Job], lines: list[dict]) -> tuple[list[Job], int]:
    """``jobs`` with each one's cost replaced by the CPU-s its own run took (``lines``: the engine's
    timing lines of finished jobs, matched by name); a job without a line keeps its estimate.
    Returns the jobs and how many were priced by a measurement."""
    measured = {t["name"]: float(t["cpu_s"]) for t in lines if t.get("ok")}
    priced = [replace(j, cost=measured[j.name]) if j.name in measured else j for j in jobs]
    return priced, sum(j.name in measured for j in jobs)


def simulate(jobs: list[Job], workers: int) -> float:
    """The makespan (s) of ``jobs`` on ``workers`` identical workers, each job taking its
    estimated cost: longest-processing-time first among the jobs whose ``after`` are done (list
    scheduling; work stealing and overheads not modelled)."""
    if not jobs:
        return 0.0
    by_name = {j.name: j for j in jobs}
    waiting = {j.name: {a for a in j.after if a in by_name} for j in jobs}
    children: dict[str, list[str]] = {}
    for name, deps in waiting.items():
        for d in deps:
            children.setdefault(d, []).append(name)
    ready = [(-by_name[n].cost, n) for n, deps in waiting.items() if not deps]
    heapq.heapify(ready)
    running: list[tuple[float, str]] = []  # (finish time, job)
    free, now = workers, 0.0
    while ready or running:
        while ready and free:
            cost, name = heapq.heappop(ready)
            heapq.heappush(running, (now - cost, name))
            free -= 1
        now, name = heapq.heappop(running)
        free += 1
        for child in children.get(name, ()):
            waiting[child].discard(name)
            if not waiting[child]:
                heapq.heappush(ready, (-by_name[child].cost, child))
    return now


def describe(jobs: list[Job], workers=(2, 16, 64)) -> str:
    """The dry run's text: the jobs by stage (those of :data:`STAGES` in its order, then any other
    in the order of ``jobs``) with their estimated CPU-s, the longest job, and the simulated
    makespan on each number of ``workers``."""
    total = sum(j.cost for j in jobs)
    lines = []
    for stage in dict.fromkeys([*STAGES, *(j.stage for j in jobs)]):
        js = [j for j in jobs if j.stage == stage]
        if not js:
            continue
        cpu = sum(j.cost for j in js)
        lines.append(f"{stage}: {len(js)} jobs, {cpu:,.0f} CPU-s")
        kinds: dict[str, list[Job]] = {}
        for j in js:
            kinds.setdefault(j.kind, []).append(j)
        for kind, kj in kinds.items():
            costs = [j.cost for j in kj]
            lines.append(
                f"  {kind}: {len(kj)} x {statistics.median(costs):,.1f} CPU-s (median; max "
                f"{max(costs):,.1f})  e.g. {kj[0].name}"
            )
    longest = max(jobs, key=lambda j: j.cost)
    lines.append(
        f"total: {len(jobs)} jobs, {total:,.0f} CPU-s; longest job {longest.name} "
        f"{longest.cost:,.0f} CPU-s (1/{total / max(longest.cost, 1e-9):,.0f} of the total)"
    )
    for w in workers:
        m = simulate(jobs, w)
        lines.append(
            f"makespan on {w:>3} workers (longest first): {m:,.0f} s ({_hms(m)}); "
            f"{total / max(m, 1e-9) / w:.0%} busy"
        )
    return "\n".join(lines)


def _hms(seconds: float) -> str:
    s = int(math.ceil(seconds))
    return (
        f"{s // 3600} h {s % 3600 // 60:02d} min" if s >= 3600 else f"{s // 60} min {s % 60:02d} s"
    )


# ---------------------------------------------------------------------------------------------
# The benchmark (experiments/bench): one job per (mechanism, data set, epsilon, block of trials)
# ---------------------------------------------------------------------------------------------


def _benchmark_cell_size(cell) -> tuple[int, int]:
    """(n, d) of a benchmark cell, without loading it (the paper's Table 1 for UCI data sets): what
    the grid's ``limits`` compare with."""
    from experiments.data.uci import PAPER_TABLE1

    if cell.n is not None:
        return cell.n, cell.d
    if cell.name in PAPER_TABLE1:
        return int(PAPER_TABLE1[cell.name]["n"]), int(PAPER_TABLE1[cell.name]["d"])
    return {"gaussian10": (5000, 10), "digits": (1797, 64)}[cell.name]


def build_benchmark_plan(
    scale: str,
    *,
    mechanisms: tuple[str, ...] | None = None,
    datasets: tuple[str, ...] | None = None,
    epsilons: tuple[float, ...] | None = None,
    block: int | None = None,
    costs: dict | None = None,
) -> list[Job]:
    """The benchmark at ``scale`` as independent jobs, priced by the measured cost model.

    One job per (mechanism, data set, ε, block of trials), each a ``run.py experiment=benchmark``
    command line restricted to its part (the selection never enters a record's key).  A mechanism
    the grid skips on a cell (k = 1 only, or n x d above its entry in ``limits``) has no job there.

    Parameters
    ----------
    scale : str
        A grid of ``conf/experiment/benchmark.yaml`` (``experiment.grids[scale]``).
    mechanisms, datasets, epsilons : tuple or None
        Restrict the grid's (None: all of them).
    block : int or None
        Trials per job (None: every trial in one job).
    costs : dict or None
        The cost table of :mod:`experiments.bench.costs` (None: the committed one,
        ``experiments/bench/costs.json``).

    Returns
    -------
    list of Job
        Kind ``benchmark/<mechanism>``, units its trials, and the cost
        :func:`experiments.bench.costs.estimate_jobs` gives it with the grid's ``accuracy_trials``:
        start-up + the cell's fixed CPU-s + trials x release (+ the classified trials x one
        classification on a Table 2 cell; a peer's release priced at most its wall-clock cap, and
        its cell, where the grid stops one after ``stop_after_timeouts`` releases at the cap,
        priced at those releases).
    """
    from experiments.bench.costs import estimate_jobs
    from experiments.bench.currency import PEERS
    from experiments.bench.datasets import expand
    from experiments.peers.adapters import RELEASE_TIMEOUT_S

    grid = _experiment_yaml("benchmark").grids
    if scale not in grid:
        raise ValueError(f"the benchmark has no grid for scale {scale!r}; valid: {', '.join(grid)}")
    g = grid[scale]
    mechs = tuple(mechanisms or g.mechanisms)
    eps = tuple(float(e) for e in (epsilons or g.epsilons))
    cells = expand(datasets or g.datasets, g.spiked_dims, g.spiked_ns)
    trials = int(g.trials)
    block = trials if block is None else max(1, int(block))
    limits = dict(g.get("limits") or {})
    jobs: list[Job] = []
    for cell in cells:
        n, d = _benchmark_cell_size(cell)
        for m in mechs:
            if (m == "dp_pca" and cell.k != 1) or n * d > float(limits.get(m, math.inf)):
                continue
            for e in eps:
                for lo in range(0, trials, block):
                    hi = min(trials, lo + block)
                    name = f"benchmark/{cell.name}/{m}/eps{e:g}/t{lo}-{hi}"
                    overrides = (
                        "experiment=benchmark",
                        f"experiment.mechanisms=[{m}]",
                        f"experiment.datasets=[{cell.name}]",
                        f"experiment.epsilons=[{e!r}]",
                        f"experiment.trial_range=[{lo},{hi}]",
                        f"scale={scale}",
                    )
                    jobs.append(Job(name, "benchmark", overrides, f"benchmark/{m}", float(hi - lo)))
    accuracy_trials = int(g.get("accuracy_trials", 0) or 0)
    stop = g.get("stop_after_timeouts")
    options = g.get("options") or {}
    caps = {m: float((options.get(m) or {}).get("timeout", RELEASE_TIMEOUT_S)) for m in PEERS}
    return estimate_jobs(
        jobs,
        costs,
        accuracy_trials=accuracy_trials,
        stop_after_timeouts=None if stop is None else int(stop),
        caps=caps,
    )
