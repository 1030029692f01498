"""The ``peers`` experiment: the peers and privpca's mechanisms at equal certified ε, with the checks, into the
results store, and the tables drawn from it."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from experiments.peers.checks import (
    ACCOUNTING_CALLS,
    accounting_check,
    bingham_d2_check,
)
from experiments.peers.environment import (
    PEERS,
    PeerUnavailableError,
    log,
)
from experiments.store.provenance import REPO_ROOT


def _config_node(group: str, name: str):
    from omegaconf import OmegaConf

    path = REPO_ROOT / "conf" / group / f"{name}.yaml"
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


def run_peers(cfg) -> dict:
    """privpca's ``ppca``/``ppca_iterative`` against the peers at equal certified ε (docs/peers.md).

    For each dataset of ``experiment.datasets``, n on a log grid from ``experiment.n_min`` to the full
    set (one random subset per n, shared by every mechanism), each ε of ``experiment.epsilons`` and
    each mechanism, ``experiment.restarts`` runs; peers are capped at ``experiment.timeout`` seconds
    and, with ``skip_after_timeout``, a cell whose run timed out gets no further restarts (each
    stall costs the full cap).  Then the d = 2 sampler check.  Records go to the results store
    (resumable); ``results/tables/peers.csv`` and ``peers_sampler_check.csv`` summarise them.
    """
    import pandas as pd

    from experiments.data.configured import load_configured, subsample
    from experiments.runs.evaluate import configured_mechanism, output_fields
    from experiments.runs.show import emit
    from experiments.runs.streams import mechanism_stream, subset_stream
    from experiments.runs.sweep import n_grid
    from experiments.store.provenance import record_provenance
    from experiments.store.records import results_root, run_key, write_record
    from experiments.store.store import ResultStore, record_id
    from mechanisms import PreparedData

    e = cfg.experiment
    store = ResultStore(results_root(cfg))
    written, unavailable = 0, {}
    for ds_name in e.datasets:
        dcfg = _with(cfg, dataset=_config_node("dataset", ds_name))
        dataset = load_configured(dcfg.dataset, dcfg.data_dir)
        total = dataset.X.shape[0]
        grid = list(e.n_grid) if e.get("n_grid") else n_grid(total, int(e.n_min), int(e.n_points))
        for n in grid:
            stream = subset_stream(cfg.seed, 0, n)
            data = None
            for i_eps, eps in enumerate(e.epsilons):
                for mech_name in e.mechanisms:
                    if mech_name in unavailable:
                        continue
                    mnode = _config_node("mechanism", mech_name)
                    if "timeout" in mnode.fn:
                        mnode.fn.timeout = float(e.timeout)
                    for param, value in (
                        (e.get("mechanism_params") or {}).get(mech_name, {}).items()
                    ):
                        mnode.fn[param] = value
                    mcfg = _with(dcfg, mechanism=mnode, epsilon=float(eps))
                    mech = None
                    for r in range(int(e.restarts)):
                        key = run_key(mcfg, n=int(n), subset=0, restart=r)
                        if store.has(key):
                            if (
                                store.get(record_id(key)).get("status") == "timeout"
                                and e.skip_after_timeout
                            ):
                                break
                            continue
                        if data is None:
                            X, _, _ = subsample(dataset.X, int(n), np.random.default_rng(stream))
                            data = PreparedData(X, clip=bool(cfg.clip_rows))
                        mech = mech or configured_mechanism(mcfg)
                        t0 = time.perf_counter()
                        m_stream = mechanism_stream(cfg.seed, 0, r, n, i_eps)
                        try:
                            out = mech(
                                data,
                                int(mcfg.k),
                                rng=np.random.default_rng(m_stream),
                                clip=bool(cfg.clip_rows),
                            )
                        except PeerUnavailableError as exc:
                            unavailable[mech_name] = exc.message
                            log.warning("skipping %s: %s", mech_name, exc.message)
                            break
                        out_fields = output_fields(mcfg, out, data, time.perf_counter() - t0)
                        out_fields.update(
                            n=int(n),
                            subset=0,
                            restart=r,
                            subset_stream=stream,
                            mechanism_stream=m_stream,
                            epsilon_requested=float(eps),
                            release=out.release,
                            diagnostics=out.diagnostics,
                        )
                        rec, _, new = write_record(
                            store, mcfg, dataset, data.X, out_fields, time.perf_counter() - t0, key
                        )
                        written += new
                        if not cfg.quiet:
                            log.info(
                                "%s %s n=%d eps=%g r=%d: %s q_F/opt=%s certified eps=%s (%.1f s)",
                                ds_name,
                                mech_name,
                                n,
                                eps,
                                r,
                                rec["status"],
                                rec.get("q_F_normalised"),
                                rec["epsilon"],
                                rec["mechanism_seconds"],
                            )
                        if rec["status"] == "timeout" and e.skip_after_timeout:
                            break
            del data
    # d = 2 sampler check (one record per implementation)
    sc = e.sampler_check
    check_peers = (
        tuple(m for m in e.mechanisms if m in PEERS) if sc.get("peers") is None else tuple(sc.peers)
    )
    check_key = {
        "experiment": "peers_sampler_check",
        "kappa": float(sc.kappa),
        "draws": int(sc.draws),
        "seed": int(sc.seed),
    }
    rows = None
    if not all(
        store.has({**check_key, "implementation": impl}) for impl in ("privpca", *check_peers)
    ):
        rows = bingham_d2_check(
            float(sc.kappa),
            int(sc.draws),
            int(sc.seed),
            timeout=float(sc.timeout),
            peers=check_peers,
        )
        for row in rows:
            k = {**check_key, "implementation": row["implementation"]}
            written += store.write(
                {
                    "run_key": k,
                    **row,
                    "experiment": "peers_sampler_check",
                    "mechanism": row["implementation"],
                    **record_provenance(cfg),
                }
            )[1]
    ac = e.get("accounting_check")
    if ac and check_peers:
        acc_key = {
            "experiment": "peers_accounting",
            "epsilon": float(ac.epsilon),
            "seed": int(cfg.seed),
        }
        if not store.has({**acc_key, "call": ACCOUNTING_CALLS[0][2]}):
            for row in accounting_check(float(ac.epsilon), seed=int(cfg.seed)):
                written += store.write(
                    {
                        "run_key": {**acc_key, "call": row["call"]},
                        **row,
                        "experiment": "peers_accounting",
                        **record_provenance(cfg),
                    }
                )[1]
    table, check = peers_tables(store)
    out_dir = results_root(cfg) / "tables"
    out_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(out_dir / "peers.csv", index=False)
    check.to_csv(out_dir / "peers_sampler_check.csv", index=False)
    accounting = store.load(experiment="peers_accounting")
    if len(accounting):
        accounting = accounting[
            [
                c
                for c in (
                    "call",
                    "status",
                    "nominal_epsilon",
                    "certified_epsilon",
                    "ratio",
                    "neighbouring",
                    "accounting",
                )
                if c in accounting
            ]
        ]
        accounting.to_csv(out_dir / "peers_accounting.csv", index=False)
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
