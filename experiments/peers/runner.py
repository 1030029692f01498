"""The ``peers`` experiment: the peers and privpca's mechanisms at equal certified ε, with the checks, into the
results store, and the tables drawn from it."""

from __future__ import annotations

import functools
import time
from typing import Any, NamedTuple

import numpy as np

from experiments.paths import config_dir
from experiments.peers.checks import (
    ACCOUNTING_CALLS,
    accounting_check,
    bingham_d2_check,
)
from experiments.peers.environment import (
    PeerUnavailableError,
    log,
)
from experiments.peers.settings import PeersSettings


def _config_node(group: str, name: str):
    from omegaconf import OmegaConf

    path = config_dir() / group / f"{name}.yaml"
    if not path.exists():
        raise ValueError(f"no config conf/{group}/{name}.yaml")
    return OmegaConf.load(path)


def _with(cfg, **nodes):
    """A copy of ``cfg`` with top-level keys replaced (not merged)."""
    from omegaconf import OmegaConf

    out = cfg.copy()
    for key, value in nodes.items():
        OmegaConf.update(out, key, value, merge=False, force_add=True)
    return out


def _mechanism_config(dcfg, s: PeersSettings, mech_name: str, epsilon: float):
    """``dcfg`` with the mechanism ``mech_name`` (its conf/mechanism file, the peers' run cap and
    ``experiment.mechanism_params``) at the requested ``epsilon``."""
    mnode = _config_node("mechanism", mech_name)
    if "timeout" in mnode.fn:
        mnode.fn.timeout = s.timeout
    for param, value in s.mechanism_params.get(mech_name, {}).items():
        mnode.fn[param] = value
    return _with(dcfg, mechanism=mnode, epsilon=epsilon)


class _Cell(NamedTuple):
    """One (data set, n, ε, mechanism) cell of the grid: ``stream`` draws its subset, ``i_eps`` is
    the ε's place in the grid (in the mechanism streams)."""

    dataset: str
    n: int
    stream: Any
    i_eps: int
    eps: float
    mechanism: str


def _run_cell(cfg, s: PeersSettings, store, mcfg, dataset, data, cell: _Cell, unavailable) -> int:
    """The restarts of ``cell`` that are not stored yet; the number of records written.  ``data()``
    gives the cell's subset.  A peer that cannot run is added to ``unavailable``; with
    ``skip_after_timeout``, a run that timed out ends the cell."""
    from experiments.runs.evaluate import configured_mechanism, output_fields
    from experiments.runs.streams import mechanism_stream
    from experiments.store.records import run_key, write_record
    from experiments.store.store import record_id

    n, mech, written = cell.n, None, 0
    for r in range(s.restarts):
        key = run_key(mcfg, n=int(n), subset=0, restart=r)
        if store.has(key):
            if store.get(record_id(key)).get("status") == "timeout" and s.skip_after_timeout:
                break
            continue
        mech = mech or configured_mechanism(mcfg)
        t0 = time.perf_counter()
        m_stream = mechanism_stream(cfg.seed, 0, r, n, cell.i_eps)
        try:
            out = mech(
                data(), int(mcfg.k), rng=np.random.default_rng(m_stream), clip=bool(cfg.clip_rows)
            )
        except PeerUnavailableError as exc:
            unavailable[cell.mechanism] = exc.message
            log.warning("skipping %s: %s", cell.mechanism, exc.message)
            break
        fields = output_fields(mcfg, out, data(), time.perf_counter() - t0)
        fields.update(
            n=int(n),
            subset=0,
            restart=r,
            subset_stream=cell.stream,
            mechanism_stream=m_stream,
            epsilon_requested=cell.eps,
            release=out.release,
            diagnostics=out.diagnostics,
        )
        rec, _, new = write_record(
            store, mcfg, dataset, data().X, fields, time.perf_counter() - t0, key
        )
        written += new
        if not cfg.quiet:
            log.info(
                "%s %s n=%d eps=%g r=%d: %s q_F/opt=%s certified eps=%s (%.1f s)",
                cell.dataset,
                cell.mechanism,
                n,
                cell.eps,
                r,
                rec["status"],
                rec.get("q_F_normalised"),
                rec["epsilon"],
                rec["mechanism_seconds"],
            )
        if rec["status"] == "timeout" and s.skip_after_timeout:
            break
    return written


def _run_dataset(cfg, s: PeersSettings, store, ds_name: str, unavailable: dict) -> int:
    """Every cell of the data set ``ds_name``: for each n of its grid (one random subset, drawn when
    a run needs it and shared by every ε and mechanism), each ε and each available mechanism."""
    from experiments.data.configured import load_configured, subsample
    from experiments.runs.streams import subset_stream
    from mechanisms.toolkit import PreparedData

    dcfg = _with(cfg, dataset=_config_node("dataset", ds_name))
    dataset = load_configured(dcfg.dataset, dcfg.data_dir)
    written = 0
    for n in s.grid(dataset.X.shape[0]):
        stream = subset_stream(cfg.seed, 0, n)

        @functools.cache
        def data(n=n, stream=stream):
            X, _, _ = subsample(dataset.X, int(n), np.random.default_rng(stream))
            return PreparedData(X, clip=bool(cfg.clip_rows))

        for i_eps, eps in enumerate(s.epsilons):
            for mech_name in s.mechanisms:
                if mech_name in unavailable:
                    continue
                mcfg = _mechanism_config(dcfg, s, mech_name, eps)
                cell = _Cell(ds_name, n, stream, i_eps, eps, mech_name)
                written += _run_cell(cfg, s, store, mcfg, dataset, data, cell, unavailable)
    return written


def _sampler_check(cfg, s: PeersSettings, store) -> int:
    """The d = 2 sampler check, one record per implementation (privpca and ``s.check_peers``),
    unless every one is stored; the number of records written."""
    from experiments.store.provenance import record_provenance

    check_key = {
        "experiment": "peers_sampler_check",
        "kappa": s.check_kappa,
        "draws": s.check_draws,
        "seed": s.check_seed,
    }
    implementations = ("privpca", *s.check_peers)
    if all(store.has({**check_key, "implementation": impl}) for impl in implementations):
        return 0
    rows = bingham_d2_check(
        s.check_kappa, s.check_draws, s.check_seed, timeout=s.check_timeout, peers=s.check_peers
    )
    return sum(
        store.write(
            {
                "run_key": {**check_key, "implementation": row["implementation"]},
                **row,
                "experiment": "peers_sampler_check",
                "mechanism": row["implementation"],
                **record_provenance(cfg),
            }
        )[1]
        for row in rows
    )


def _accounting_check(cfg, s: PeersSettings, store) -> int:
    """What each peer's user-facing call certifies at ``s.accounting_epsilon`` (skipped when that is
    None or no peer is checked, or when stored); the number of records written."""
    from experiments.store.provenance import record_provenance

    if s.accounting_epsilon is None or not s.check_peers:
        return 0
    acc_key = {
        "experiment": "peers_accounting",
        "epsilon": s.accounting_epsilon,
        "seed": int(cfg.seed),
    }
    if store.has({**acc_key, "call": ACCOUNTING_CALLS[0][2]}):
        return 0
    return sum(
        store.write(
            {
                "run_key": {**acc_key, "call": row["call"]},
                **row,
                "experiment": "peers_accounting",
                **record_provenance(cfg),
            }
        )[1]
        for row in accounting_check(s.accounting_epsilon, seed=int(cfg.seed))
    )


#: the columns of ``peers_accounting.csv``
ACCOUNTING_COLUMNS = (
    "call",
    "status",
    "nominal_epsilon",
    "certified_epsilon",
    "ratio",
    "neighbouring",
    "accounting",
)


def _write_tables(store, out_dir) -> tuple[Any, Any, Any]:
    """``peers.csv``, ``peers_sampler_check.csv`` and (when there are accounting records)
    ``peers_accounting.csv`` under ``out_dir``; the three tables."""
    table, check = peers_tables(store)
    out_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(out_dir / "peers.csv", index=False)
    check.to_csv(out_dir / "peers_sampler_check.csv", index=False)
    accounting = store.load(experiment="peers_accounting")
    if len(accounting):
        accounting = accounting[[c for c in ACCOUNTING_COLUMNS if c in accounting]]
        accounting.to_csv(out_dir / "peers_accounting.csv", index=False)
    return table, check, accounting


def run_peers(cfg) -> dict:
    """privpca's ``ppca``/``ppca_iterative`` against the peers at equal certified ε (docs/peers.md).

    For each dataset of ``experiment.datasets``, n on a log grid from ``experiment.n_min`` to the full
    set (one random subset per n, shared by every mechanism), each ε of ``experiment.epsilons`` and
    each mechanism, ``experiment.restarts`` runs; peers are capped at ``experiment.timeout`` seconds
    and, with ``skip_after_timeout``, a cell whose run timed out gets no further restarts (each
    stall costs the full cap).  Then the d = 2 sampler check and the accounting check.  Records go
    to the results store (resumable); ``results/tables/peers.csv``, ``peers_sampler_check.csv`` and
    ``peers_accounting.csv`` summarise them.

    Parameters
    ----------
    cfg : DictConfig
        The config composed with ``experiment=peers`` (:class:`~experiments.peers.settings.PeersSettings`).

    Returns
    -------
    dict
        The number of records written, the peers that could not run and why, the tables' paths.
    """
    import pandas as pd

    from experiments.runs.show import emit
    from experiments.store.records import results_root
    from experiments.store.store import ResultStore

    s = PeersSettings.from_config(cfg)
    store = ResultStore(results_root(cfg))
    unavailable: dict[str, str] = {}
    written = sum(_run_dataset(cfg, s, store, ds, unavailable) for ds in s.datasets)
    written += _sampler_check(cfg, s, store)
    written += _accounting_check(cfg, s, store)
    out_dir = results_root(cfg) / "tables"
    table, check, accounting = _write_tables(store, out_dir)
    if not cfg.quiet:
        with pd.option_context("display.width", 200, "display.max_rows", 500):
            print(table.to_string(index=False))
            print(check.to_string(index=False))
            if len(accounting):
                print(accounting.to_string(index=False))
        for name, why in unavailable.items():
            print(f"skipped {name}: {why}")
    result = {
        "experiment": "peers",
        "records_written": int(written),
        "unavailable": unavailable,
        "tables": [
            str(out_dir / name)
            for name in ("peers.csv", "peers_sampler_check.csv", "peers_accounting.csv")
        ],
    }
    emit(result, cfg)
    return result


def peers_tables(store) -> tuple[Any, Any]:
    """(per-cell table of the ``peers`` records, sampler-check table) from the results store."""
    import pandas as pd

    df = store.load(experiment="peers")
    if len(df):
        df["seconds"] = df["mechanism_seconds"]
        df["peer_fit_seconds"] = df.get("diagnostics.peer_fit_seconds", np.nan)
        g = df.groupby(["dataset", "n", "epsilon_requested", "mechanism"], sort=True)
        table = g.agg(
            runs=("status", "size"),
            ok=("status", lambda s: int((s == "ok").sum())),
            timeouts=("status", lambda s: int((s == "timeout").sum())),
            certified_epsilon=("epsilon", "max"),
            exact=("guarantee_exact", "all"),
            q_F_normalised=("q_F_normalised", "mean"),
            q_F_normalised_sd=("q_F_normalised", "std"),
            median_seconds=("seconds", "median"),
            median_peer_fit_seconds=("peer_fit_seconds", "median"),
        ).reset_index()
    else:
        table = pd.DataFrame()
    check = store.load(experiment="peers_sampler_check")
    if len(check):
        cols = [
            c
            for c in (
                "implementation",
                "status",
                "kappa",
                "draws",
                "target_mean_sin2",
                "mean_sin2",
                "mc_standard_error",
                "z",
                "ks_statistic",
                "ks_pvalue",
                "seconds",
            )
            if c in check
        ]
        check = check[cols].sort_values("implementation").reset_index(drop=True)
    return table, check
