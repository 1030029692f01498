"""Imported by every worker of the local engine as it starts (Dask's ``preload``,
:func:`experiments.plan.engine.local_cluster`): the modules that the plan's jobs need, so that a
worker's first job does not pay for them, and the workers import them while the main process is
still composing the plan (:class:`experiments.plan.engine.EarlyCluster`)."""

import hydra.utils  # noqa: F401  (instantiates each job's runner)

import experiments.figures.cli  # noqa: F401  (the drawing jobs)
import experiments.runs.classification  # noqa: F401
import experiments.runs.extra  # noqa: F401
import experiments.runs.jmlr  # noqa: F401
import experiments.store.store  # noqa: F401
