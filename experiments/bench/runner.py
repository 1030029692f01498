"""``run.py experiment=benchmark``: every mechanism at one certified (ε, δ), on the same data.

One record per release (mechanism, data set, target ε, trial) in the results store; a stored
record is skipped, so the same command resumes.  A mechanism that refuses a cell (k = 1 only, too
few rows, a calibration with no root) leaves one ``refused`` record naming the reason, which a
later run skips too.  The selection (``experiment.mechanisms``, ``datasets``, ``epsilons``,
``trial_range``) never enters a record's key: a job of the plan writes the very records the whole
run writes.

Per release: q_F / q_F(V_k), ‖UUᵀ − V_kV_kᵀ‖_F (V_k: the data's top-k eigenvectors), for a
mechanism that releases a covariance ‖Σ̂ − A‖_F / ‖A‖_F (A = XᵀX/n), and its seconds.  A ⊥ answer
(no subspace) scores q_F = 0 and subspace error √(2k) (the largest).  On a Table 2 cell
(``kddcup-table2[-r<rows>]``) the first ``accuracy_trials`` trials of each (mechanism, ε) also get
Table 2's classification accuracy (:mod:`experiments.bench.accuracy`); the other trials leave it
empty.
"""

from __future__ import annotations

import copy
import functools
import logging
import math
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from experiments.bench import accuracy, currency, datasets
from experiments.data.uci import DataUnavailableError
from experiments.errors import UserError
from experiments.paths import config_dir
from experiments.store.provenance import record_provenance, utc_timestamp
from experiments.store.records import components_digest, results_root
from experiments.store.store import ResultStore, record_id
from mechanisms.linalg import single_thread_blas
from mechanisms.metrics import optimal_q_F, projector_distance_frobenius, q_F
from mechanisms.toolkit import PreparedData, PrivacyInputError

log = logging.getLogger(__name__)

EXPERIMENT = "benchmark"
#: release fields copied to flat columns (native parameters where the release states them)
NATIVE = (
    "noise_scale",
    "sigma",
    "epsilon_eigenvalues",
    "eigenvalue_noise_scale",
    "lift",
    "sketch_size",
)


@dataclass(frozen=True)
class BenchmarkSettings:
    """The benchmark's grid: ``experiment.grids[scale.name]``, each key overridable by
    ``experiment.<key>`` (null: the grid's)."""

    mechanisms: tuple[str, ...]
    datasets: tuple[str, ...]
    epsilons: tuple[float, ...]
    delta: float
    trials: int
    trial_range: tuple[int, int]
    spiked_dims: tuple[int, ...]
    spiked_ns: tuple[int, ...]
    ppca_iterations: int
    limits: dict
    scale: str
    accuracy_trials: int = 0
    options: dict | None = None  # {mechanism: {option: value}}: this scale's settings for it
    #: a cell whose first this many releases each hit the peer's wall-clock cap is stopped there
    #: and listed as timed out (None: every trial runs)
    stop_after_timeouts: int | None = None

    @classmethod
    def from_config(cls, cfg: DictConfig) -> BenchmarkSettings:
        e = cfg.experiment
        grids = e.grids
        if cfg.scale.name not in grids:
            raise UserError(
                f"experiment=benchmark has no grid for scale={cfg.scale.name}; "
                f"valid: {', '.join(grids)}"
            )
        g = grids[cfg.scale.name]

        def pick(key):
            v = e.get(key)
            return g[key] if v is None else v

        trials = int(pick("trials"))
        acc = e.get("accuracy_trials")
        acc = g.get("accuracy_trials", 0) if acc is None else acc
        lo, hi = (0, trials) if e.get("trial_range") is None else map(int, e.trial_range)
        return cls(
            mechanisms=tuple(str(m) for m in pick("mechanisms")),
            datasets=tuple(str(d) for d in pick("datasets")),
            epsilons=tuple(float(x) for x in pick("epsilons")),
            delta=float(e.delta),
            trials=trials,
            trial_range=(max(0, lo), min(trials, hi)),
            spiked_dims=tuple(int(x) for x in pick("spiked_dims")),
            spiked_ns=tuple(int(x) for x in pick("spiked_ns")),
            ppca_iterations=int(pick("ppca_iterations")),
            limits={str(m): float(v) for m, v in (g.get("limits") or {}).items()},
            scale=str(cfg.scale.name),
            accuracy_trials=int(acc or 0),
            options=_options(g.get("options")),
            stop_after_timeouts=(
                None if g.get("stop_after_timeouts") is None else int(g.stop_after_timeouts)
            ),
        )

    def cells(self) -> list[datasets.Cell]:
        return datasets.expand(self.datasets, self.spiked_dims, self.spiked_ns)


def _options(node) -> dict:
    """``grids.<scale>.options`` as ``{mechanism: {option: value}}`` (None: no options)."""
    if node is None:
        return {}
    return {str(m): dict(v) for m, v in OmegaConf.to_container(node, resolve=True).items()}


def _crc(text: str) -> int:
    return zlib.crc32(text.encode())


def trial_stream(seed: int, mechanism: str, cell: str, epsilon: float, trial: int) -> list[int]:
    """The entropy of one release's randomness (independent of the run's selection)."""
    return [int(seed), _crc(mechanism), _crc(cell), int(round(epsilon * 1e6)), int(trial)]


# ---------------------------------------------------------------------------------------------
# Mechanisms: registry names, config files on the search path, or module:function
# ---------------------------------------------------------------------------------------------


def _config_dirs() -> list[Path]:
    """``conf/`` and any directory added by ``--config-dir`` (Hydra's runtime sources)."""
    dirs = [config_dir()]
    try:
        from hydra.core.hydra_config import HydraConfig

        for src in HydraConfig.get().runtime.config_sources:
            if src.provider == "command-line" and str(src.path).startswith("file://"):
                dirs.append(Path(str(src.path)[len("file://") :]))
    except Exception:  # not under Hydra (tests, scripts): conf/ only
        pass
    return dirs


def mechanism_yaml(name: str) -> Path | None:
    for d in _config_dirs():
        p = d / "mechanism" / f"{name}.yaml"
        if p.is_file():
            return p
    return None


@dataclass
class Entry:
    """A mechanism as the benchmark calls it at one target."""

    name: str
    plan: currency.Plan
    params: dict  # the configured options (resolved), as they enter the key
    fn: Any  # callable(X, k, rng=, clip=)


def entry(
    spec: str,
    epsilon: float,
    delta: float,
    *,
    ppca_iterations: int,
    ppca_chains: int,
    options: dict | None = None,
) -> Entry:
    """The mechanism ``spec`` configured for the target (ε, δ) (:mod:`experiments.bench.currency`);
    ``options``: the scale's settings for it (``grids.<scale>.options.<mechanism>``, e.g. a peer's
    ``timeout``), set before the privacy parameters, so they can never change ε or δ; they enter
    the record's key with the other resolved options."""
    if ":" in spec:
        if options:
            raise UserError(
                f"grids.<scale>.options for {spec!r}: a mechanism of your own takes no options "
                "from the benchmark (set its defaults in its own code)"
            )
        fn = currency.own_function(spec)
        plan = currency.plan_for(spec)
        call = {
            k: v for k, v in {"epsilon": epsilon, "delta": delta}.items() if currency.takes(fn, k)
        }
        return Entry(
            currency.own_name(spec), plan, {"target": spec, **call}, functools.partial(fn, **call)
        )
    path = mechanism_yaml(spec)
    if path is None:
        raise UserError(
            f"unknown mechanism {spec!r}: no conf/mechanism/{spec}.yaml (a mechanism of your own: "
            "module:function or path/to/file.py:function)"
        )
    node = OmegaConf.load(path)
    name = str(node.get("name", spec))
    plan = currency.plan_for(name)
    call = plan.call_parameters(epsilon, delta)
    if plan.kind == "own":  # a config file of one's own: its epsilon/delta keys, if it has them
        call = {k: v for k, v in {"epsilon": epsilon, "delta": delta}.items() if k in node.fn}
    root = OmegaConf.create(
        {
            "epsilon": call.get("epsilon", epsilon),
            "delta": call.get("delta", delta),
            "ppca_iterations": ppca_iterations,
            "progress": False,
            "scale": {"ppca_chains": ppca_chains},
            "mechanism": node,
        }
    )
    fn_cfg = root.mechanism.fn
    OmegaConf.set_struct(fn_cfg, False)
    for key, value in plan.options.items():
        fn_cfg[key] = value
    for key, value in (options or {}).items():
        if key in ("epsilon", "delta", "rho") or key in plan.options:
            raise UserError(f"grids.<scale>.options.{name}.{key}: set by the benchmark's currency")
        fn_cfg[key] = value
    for key, value in call.items():
        fn_cfg[key] = value
    if name in currency.PEERS:
        fn_cfg["install"] = False
    params = OmegaConf.to_container(fn_cfg, resolve=True)
    fn = instantiate(params)
    shown = {k: v for k, v in params.items() if k not in ("_target_", "_partial_", "progress")}
    return Entry(name, plan, {"target": params["_target_"], **shown}, fn)


def peers_available() -> bool:
    """Whether the peers' own environment exists (created by ``experiment=peers`` or by hand)."""
    from experiments.peers import PEER_VENV

    return (Path(PEER_VENV) / "bin" / "python").exists()


# ---------------------------------------------------------------------------------------------
# One release
# ---------------------------------------------------------------------------------------------


@dataclass
class Truth:
    """What the metrics compare with: A = XᵀX/n, V_k, q_F(V_k), ‖A‖_F."""

    A: np.ndarray
    Vk: np.ndarray
    q_opt: float
    A_norm: float

    @classmethod
    def of(cls, data: PreparedData, k: int) -> Truth:
        A = data.A
        w, V = np.linalg.eigh(A)
        Vk = V[:, np.argsort(w)[::-1][:k]]
        return cls(A, Vk, optimal_q_F(A, k), float(np.linalg.norm(A)))


def release_fields(out, truth: Truth, k: int, epsilon: float, delta: float, name: str) -> dict:
    """A release's guarantee (native and certified), tier and metrics."""
    g = out.guarantee.as_dict()
    eps_c, delta_c, how = currency.certified(g)
    fields: dict[str, Any] = {
        "native_epsilon": float(g["epsilon"]),
        "native_delta": float(g["delta"]),
        "native_relation": g["neighbouring"],
        "guarantee_status": g["status"],
        "guarantee_note": g.get("note", ""),
        "rho": g.get("rho"),
        "certified_epsilon": eps_c,
        "certified_delta": delta_c,
        "certified_relation": currency.COMMON_RELATION if eps_c is not None else None,
        "certified_how": how,
        "tier": currency.tier(name, g["status"], eps_c, delta_c, epsilon, delta),
        "q_F_opt": truth.q_opt,
    }
    for key in NATIVE:
        v = out.release.get(key)
        if isinstance(v, (int, float, np.integer, np.floating)) and key != "rho":
            fields[f"native_{key}"] = float(v)
    if fields["rho"] is None and isinstance(out.release.get("rho"), (int, float)):
        fields["rho"] = float(out.release["rho"])
    V = out.components
    fields["components_sha256"] = components_digest(V)
    if V is None:
        fields.update(status="bottom", q_F=0.0, q_F_normalised=0.0, subspace_error=math.sqrt(2 * k))
    else:
        qf = q_F(V, truth.A)
        fields.update(
            status="ok",
            q_F=qf,
            q_F_normalised=qf / truth.q_opt,
            subspace_error=projector_distance_frobenius(V, truth.Vk),
        )
    C = getattr(out, "covariance", None)
    fields["covariance_error"] = (
        None if C is None else float(np.linalg.norm(np.asarray(C) - truth.A) / truth.A_norm)
    )
    fields["release"] = {
        k: v for k, v in out.release.items() if not (isinstance(v, np.ndarray) and v.size > 64)
    }
    return fields


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------


def _key(cell, e: Entry, k, epsilon, delta, trial, seed) -> dict:
    return {
        "experiment": EXPERIMENT,
        "dataset": cell.name,
        "mechanism": e.name,
        "mechanism_params": e.params,
        "k": int(k),
        "epsilon_target": float(epsilon),
        "delta_target": float(delta),
        "trial": trial,
        "seed": int(seed),
    }


def run_benchmark(cfg: DictConfig) -> dict:
    """Run every selected (mechanism, data set, ε, trial) whose record is not stored yet.

    Returns the counts (written, stored before, refused) and the skipped mechanisms and data sets
    with their reasons; prints a short table of this run's cells unless ``quiet``."""
    s = BenchmarkSettings.from_config(cfg)
    store = ResultStore(results_root(cfg))
    base = copy.deepcopy(cfg)
    provenance = record_provenance(base)
    mechs, skipped = [], {}
    for m in s.mechanisms:
        if m in currency.PEERS and not peers_available():
            skipped[m] = "the peers' environment .venv-peers does not exist (docs/peers.md)"
        else:
            mechs.append(m)
    written = stored = refused = 0
    ids: list[str] = []
    chains = int(cfg.scale.get("ppca_chains", 2))
    with single_thread_blas():
        for cell in s.cells():
            try:
                ds = datasets.load(cell, cfg.get("data_dir"))
            except (DataUnavailableError, UserError) as exc:
                skipped[cell.name] = f"data unavailable: {str(exc).splitlines()[0]}"
                continue
            data = PreparedData(ds.X)
            truth = Truth.of(data, cell.k)
            n, d = data.shape
            for m in mechs:
                if m in currency.K1_ONLY and cell.k != 1:
                    skipped[f"{m}@{cell.name}"] = f"estimates k = 1 only (k = {cell.k})"
                    continue
                limit = s.limits.get(currency.own_name(m))
                if limit is not None and n * d > limit:
                    skipped[f"{m}@{cell.name}"] = (
                        f"n x d = {n * d:,} above this scale's limit {limit:,.0f} for it (cost)"
                    )
                    continue
                for epsilon in s.epsilons:
                    e = entry(
                        m,
                        epsilon,
                        s.delta,
                        ppca_iterations=s.ppca_iterations,
                        ppca_chains=chains,
                        options=s.options.get(currency.own_name(m)),
                    )
                    rkey = _key(cell, e, cell.k, epsilon, s.delta, "refused", cfg.seed)
                    if store.has(rkey):
                        refused += 1
                        ids.append(record_id(rkey))
                        continue
                    reason = None  # set when the cell is refused: one record, no more releases
                    for trial in range(*s.trial_range):
                        if _timed_out(store, s, cell, e, epsilon, trial, cfg.seed):
                            reason = (
                                f"timed out: its first {s.stop_after_timeouts} releases each hit "
                                f"the {e.params.get('timeout', 0):g} s wall-clock cap; the other "
                                f"{s.trials - s.stop_after_timeouts} were not run"
                            )
                            break
                        key = _key(cell, e, cell.k, epsilon, s.delta, trial, cfg.seed)
                        rid = record_id(key)
                        if store.has(key):
                            stored += 1
                            ids.append(rid)
                            continue
                        stream = trial_stream(cfg.seed, e.name, cell.name, epsilon, trial)
                        t0 = time.perf_counter()
                        try:
                            out = e.fn(data, cell.k, rng=np.random.default_rng(stream), clip=False)
                        except (PrivacyInputError, ValueError) as exc:
                            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
                            break
                        seconds = time.perf_counter() - t0
                        fields = release_fields(out, truth, cell.k, epsilon, s.delta, e.name)
                        rec = _record(cell, e, s, key, n, d, epsilon, provenance) | fields
                        rec.update(trial=trial, mechanism_stream=stream, seconds=seconds)
                        if cell.family == "table2" and trial < s.accuracy_trials:
                            rec.update(accuracy.table2_accuracy(out.components, ds.table2))
                        written += store.write(rec)[1]
                        ids.append(rid)
                    if reason is not None:
                        store.write(
                            _record(cell, e, s, rkey, n, d, epsilon, provenance)
                            | {"status": "refused", "reason": reason, "tier": "refused"}
                        )
                        refused += 1
                        ids.append(record_id(rkey))
                        log.info("%s refused %s at eps=%g: %s", e.name, cell.name, epsilon, reason)
    result = {
        "experiment": EXPERIMENT,
        "records_written": written,
        "records_stored_before": stored,
        "refused_cells": refused,
        "skipped": skipped,
        "results_dir": str(results_root(cfg)),
    }
    if not cfg.get("quiet", False):
        _print_run(store, ids, skipped)
    return result


def _timed_out(
    store: ResultStore, s: BenchmarkSettings, cell, e: Entry, epsilon, trial: int, seed
) -> bool:
    """Whether ``trial`` is past the cell's first ``s.stop_after_timeouts`` releases and each of
    those is stored and hit the peer's wall-clock cap (release status ``timeout``).  Decided from
    the stored records alone, so a job of later trials decides as the whole run does."""
    first = s.stop_after_timeouts
    if first is None or trial < first or "timeout" not in e.params:
        return False
    for t in range(first):
        key = _key(cell, e, cell.k, epsilon, s.delta, t, seed)
        if not store.has(key):
            return False
        if (store.get(record_id(key)).get("release") or {}).get("status") != "timeout":
            return False
    return True


def _record(cell, e: Entry, s: BenchmarkSettings, key, n, d, epsilon, provenance) -> dict:
    return {
        "run_key": key,
        "experiment": EXPERIMENT,
        "dataset": cell.name,
        "family": cell.family,
        "n": int(n),
        "d": int(d),
        "k": int(cell.k),
        "mechanism": e.name,
        "plan": e.plan.kind,
        "plan_note": e.plan.note,
        "mechanism_params": e.params,
        "epsilon_target": float(epsilon),
        "delta_target": float(s.delta),
        "scale": s.scale,
        **provenance,
        "timestamp": utc_timestamp(),
    }


def _print_run(store: ResultStore, ids: list[str], skipped: dict) -> None:
    df = store.load_ids(ids)
    if len(df) and "q_F_normalised" in df:
        ok = df[df["status"] != "refused"]
        if len(ok):
            t = (
                ok.groupby(["dataset", "epsilon_target", "mechanism", "tier"])["q_F_normalised"]
                .agg(["mean", "count"])
                .reset_index()
            )
            print(t.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    for what, why in skipped.items():
        print(f"skipped {what}: {why}")
