"""PPCA by MCMC with ``scale.ppca_restarts_as_chains`` (paper scale): the missing restarts of one
data subset are drawn as the chains of one group (one burn-in, shared work), each chain a record
of its own; a record of a group is re-run by running its whole group again."""

from __future__ import annotations

import logging
import time

import numpy as np
from omegaconf import DictConfig, OmegaConf

from experiments.data.configured import load_configured, subsample
from experiments.runs.evaluate import output_fields
from experiments.runs.progress import progress_bar
from experiments.runs.streams import mechanism_stream, subset_stream
from experiments.store.records import mechanism_params, results_root, run_key, write_record
from experiments.store.store import ResultStore
from experiments.threads import pinned
from mechanisms.toolkit import PreparedData

log = logging.getLogger(__name__)


def restarts_as_chains(cfg: DictConfig) -> bool:
    """PPCA by MCMC (not the exact k = 1 sampler) with ``scale.ppca_restarts_as_chains`` set."""
    if cfg.mechanism.name != "ppca" or not bool(cfg.scale.get("ppca_restarts_as_chains", False)):
        return False
    sampler = str(cfg.mechanism.fn.get("sampler", "auto"))
    return not (sampler == "exact" or (sampler == "auto" and int(cfg.k) == 1))


def group_key(cfg: DictConfig, n: int | None, subset: int, restart: int, **extra) -> dict:
    """Run key of one restart released from a restarts-as-chains group: the mechanism ran ONE chain
    (n_chains = 1) for this release; the group's chains served the diagnostics.  ``n``: the
    group's subsample size (Figures 3-4; None for a Table 2 permutation)."""
    params = mechanism_params(cfg)
    params["n_chains"] = 1
    params.update(_group_extra_params(cfg, n))
    if n is not None:
        extra["n"] = int(n)
    return run_key(
        cfg,
        subset=int(subset),
        restart=int(restart),
        mechanism_params=params,
        restarts_as_chains=True,
        **extra,
    )


def ppca_group_releases(
    cfg: DictConfig, data: PreparedData, streams: list, n: int | None = None
) -> list:
    """The PPCA releases of one group (same data, one stream each) as the chains of one
    :func:`mechanisms.ppca.ppca_restarts` call: release r is bit for bit the single-chain release
    with ``streams[r]``; split-R̂/ESS are computed across the group's chains.  ``n``: as in
    :func:`group_key` (it chooses the sampler, :func:`group_sampler`)."""
    from mechanisms.ppca import ppca_restarts

    params = mechanism_params(cfg)
    params.pop("n_chains", None)
    params["progress"] = False
    params.update(_group_extra_params(cfg, n))
    return ppca_restarts(
        data,
        int(cfg.k),
        rngs=[np.random.default_rng(st) for st in streams],
        clip=bool(cfg.clip_rows),
        **params,
    )


def group_sampler(cfg: DictConfig, n: int | None) -> str | None:
    """``"left"`` where the scale runs a Figures 3-4 group of ``n`` rows by the left Givens chain,
    else None (the configured sampler).

    ``scale.ppca_left_from_n`` maps a data set to the smallest n at which its groups use the left
    chain (:mod:`mechanisms.bingham.left_givens`): the n where it was measured to mix per
    iteration at least as well as the paper's sampler and to win per CPU-second against the Givens
    chain (docs/sampler.md, "Left Givens moves").  Only a configured ``sampler: auto`` is replaced;
    a Table 2 permutation (``n`` None) keeps it."""
    if n is None or str(cfg.mechanism.fn.get("sampler", "auto")) != "auto":
        return None
    return "left" if left_chain_at(cfg.scale, cfg.dataset.name, n) else None


def left_chain_at(scale, dataset: str, n: int) -> bool:
    """Whether ``scale`` (its config) runs the Figures 3-4 groups of ``dataset`` at ``n`` rows by the
    left Givens chain: ``n`` at or above the data set's ``ppca_left_from_n`` (the one rule, read by
    :func:`group_sampler` and by the plan's cost kinds)."""
    from_n = (scale.get("ppca_left_from_n") or {}).get(dataset)
    return from_n is not None and int(n) >= int(from_n)


def _group_extra_params(cfg: DictConfig, n: int | None) -> dict:
    """``scale.ppca_sweeps_per_iteration`` (sweeps per iteration of the chain), when set, and the
    group's sampler where the scale chooses it (:func:`group_sampler`)."""
    spi = cfg.scale.get("ppca_sweeps_per_iteration")
    extra = {} if spi is None else {"sweeps_per_iteration": int(spi)}
    sampler = group_sampler(cfg, n)
    return extra if sampler is None else {**extra, "sampler": sampler}


def group_release_fields(cfg, data: PreparedData, out, share: float, group, stream) -> dict:
    """Record fields of one release of a restarts-as-chains group."""
    fields = output_fields(cfg, out, data, share)
    fields.update(
        restarts_as_chains=True, group_restarts=list(group), mechanism_stream=list(stream)
    )
    return fields


def replay_group_release(
    cfg: DictConfig, data: PreparedData, record: dict, stream_of, n: int | None = None
) -> tuple:
    """(output, record fields) of a PPCA release made in a restarts-as-chains group, recomputed by
    running its whole group again (``record["group_restarts"]``, restart r with stream
    ``stream_of(r)``): the record's release is bit for bit that of its restart's single chain, and its split-R̂ and ESS
    were computed across the group's chains, so replaying the group reproduces both.

    ``cfg`` is the record's resolved configuration, ``data`` the data its group ran on and ``n``
    as in :func:`group_key`."""
    group = [int(r) for r in record["group_restarts"]]
    streams = [stream_of(r) for r in group]
    i = group.index(int(record["restart"]))
    out = ppca_group_releases(cfg, data, streams, n)[i]
    return out, group_release_fields(cfg, data, out, out.diagnostics["seconds"], group, streams[i])


_WORKER_DATASET: dict = {}


def regroup_release(cfg: DictConfig, data: PreparedData, record: dict) -> dict:
    """A utility_vs_n PPCA release of a restarts-as-chains group, recomputed
    (:func:`replay_group_release`; ``data`` is the record's data subset)."""
    n, subset = int(record["n"]), int(record["subset"])
    return replay_group_release(
        cfg, data, record, lambda r: mechanism_stream(cfg.seed, subset, r, n), n
    )[1]


def _ppca_group(cfg: DictConfig, dataset, n: int, subset: int, missing: list[int]) -> int:
    """Run the missing restarts of one (n, subset) as one ppca_restarts call; write one record each."""
    if dataset is None:  # in a worker process: load once per process
        name = OmegaConf.to_yaml(cfg.dataset)
        if name not in _WORKER_DATASET:
            _WORKER_DATASET.clear()
            _WORKER_DATASET[name] = load_configured(cfg.dataset, cfg.data_dir)
        dataset = _WORKER_DATASET[name]
    t0 = time.perf_counter()
    stream = subset_stream(cfg.seed, subset, n)
    X, _, _ = subsample(dataset.X, n, np.random.default_rng(stream))
    data = PreparedData(X, clip=bool(cfg.clip_rows))
    t_data = time.perf_counter() - t0
    streams = [mechanism_stream(cfg.seed, subset, r, n) for r in missing]
    outs = ppca_group_releases(cfg, data, streams, n)
    store = ResultStore(results_root(cfg))
    written = 0
    for r, st, out in zip(missing, streams, outs):
        fields = group_release_fields(
            cfg, data, out, out.diagnostics["seconds"], list(map(int, missing)), st
        )
        fields.update(
            n=int(n),
            subset=int(subset),
            restart=int(r),
            subset_stream=stream,
            group_data_seconds=t_data,
        )
        key = group_key(cfg, n, subset, r)
        written += write_record(
            store, cfg, dataset, X, fields, t_data / len(missing) + out.diagnostics["seconds"], key
        ).written
    return written


def ppca_groups(
    cfg: DictConfig,
    dataset,
    grid: list[int],
    subsets: int,
    restarts: int,
    selected_subsets: list[int] | None = None,
) -> int:
    """All (n, subset) groups with missing restarts, largest first, over ``cfg.workers`` processes
    (the subsets ``selected_subsets`` only, when given: a job of the plan)."""
    store = ResultStore(results_root(cfg))
    groups = []
    for n in grid:
        for s in range(subsets) if selected_subsets is None else selected_subsets:
            missing = [r for r in range(restarts) if not store.has(group_key(cfg, n, s, r))]
            if missing:
                groups.append((int(n), s, missing))
    # cost of a group ∝ chains (a chain's cost per iteration hardly depends on n): biggest groups
    # first, then larger n first (its second moment takes longest to form)
    groups.sort(key=lambda g: (-len(g[2]), -g[0], g[1]))
    workers = int(cfg.get("workers", 1) or 1)
    log.info(
        "utility_vs_n %s/%s: %d groups to run (%d releases), %d worker(s)",
        cfg.mechanism.name,
        cfg.dataset.name,
        len(groups),
        sum(len(g[2]) for g in groups),
        workers,
    )
    if workers <= 1 or len(groups) <= 1:
        written = 0
        with progress_bar(
            total=len(groups), desc=f"ppca groups/{cfg.dataset.name}", enable=cfg.progress
        ) as bar:
            for n, s, missing in groups:
                written += _ppca_group(cfg, dataset, n, s, missing)
                bar.update(1)
        return written
    from joblib import Parallel, delayed

    cfg = OmegaConf.create(
        OmegaConf.to_container(cfg, resolve=True)
    )  # plain values for the workers
    results = Parallel(n_jobs=workers, backend="loky", batch_size=1, pre_dispatch="n_jobs")(
        delayed(pinned(_ppca_group))(cfg, None, n, s, missing) for n, s, missing in groups
    )
    return int(sum(results))
