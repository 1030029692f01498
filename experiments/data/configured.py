"""From a dataset config to a data matrix: real (UCI) or synthetic, then an optional subsample."""

from __future__ import annotations

from typing import Any

import numpy as np

from experiments.errors import UserError

SYNTHETIC = ("gaussian10", "spiked")


def load_configured(dataset_cfg: Any, data_dir: str | None = None):
    """Load the dataset a ``conf/dataset/*.yaml`` node describes; returns an ``experiments.data.uci.Dataset``.

    A UCI node may name ``source`` (the raw data set; default its ``name``) and ``preprocessing``
    (``paper``, the default, or ``public``: ``conf/dataset/insurance_public.yaml``); nodes without
    them load as before, and their keys (part of every run key) are unchanged.
    """
    name = dataset_cfg["name"]
    if dataset_cfg.get("kind") == "synthetic":
        from experiments.data.synthetic import load_synthetic

        params = dict(dataset_cfg.get("params") or {})
        return load_synthetic(
            name, n=dataset_cfg.get("size"), seed=dataset_cfg.get("data_seed", 0), **params
        )
    from experiments.data.uci import load_dataset

    source = dataset_cfg.get("source") or name
    dataset = load_dataset(
        source,
        data_dir=data_dir,
        split=dataset_cfg.get("split"),
        preprocessing=dataset_cfg.get("preprocessing") or "paper",
    )
    if dataset.name != name:
        raise UserError(
            f"dataset config {name!r} loads {source!r} as {dataset.name!r}: name it {dataset.name!r}"
        )
    return dataset


def subsample(
    X: np.ndarray, n: int | None, rng: np.random.Generator, y: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """A uniformly random subset of ``n`` rows (without replacement); ``n=None`` keeps every row.

    Returns ``(X_sub, y_sub, indices)`` (indices is None when nothing was dropped).
    """
    total = X.shape[0]
    if n is None or int(n) == total:
        return X, y, None
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise UserError(f"n must be a positive integer or null, got {n!r}")
    n = int(n)
    if n > total:
        raise UserError(f"n = {n} is larger than the dataset ({total} rows)")
    idx = np.sort(rng.choice(total, size=n, replace=False))
    return X[idx], (None if y is None else y[idx]), idx
