"""What ``run.py`` runs once Hydra has composed the config: ``+rerun=<record id>`` or the
experiment the config names (``experiment.run._target_``), with one BLAS thread."""

from __future__ import annotations

import logging

from hydra.utils import instantiate
from omegaconf import DictConfig

from experiments.runs.rerun import rerun
from experiments.store.records import results_root
from experiments.store.store import ResultStore
from experiments.threads import pinned_blas

log = logging.getLogger(__name__)


def run_experiment(cfg: DictConfig):
    """Run the configured experiment (or ``+rerun``) with one BLAS thread
    (:func:`experiments.threads.pinned_blas`), whatever the shell or launcher set: records re-run
    bit for bit from any of them."""
    with pinned_blas():
        if "rerun" in cfg:
            return rerun(cfg)
        store = ResultStore(results_root(cfg))
        # a records/ that cannot be written stops the run in one line before anything is computed
        store.check_writable()
        # a worker killed mid-write (an earlier crashed sweep) leaves a temporary: remove it if its writer is dead
        store.clean_stale_temporaries()
        fn = instantiate(cfg.experiment.run)
        return fn(cfg)
