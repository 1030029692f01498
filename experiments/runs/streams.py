"""Random streams: a run with ``seed=s, subset=i, restart=r`` draws its data subset from
``default_rng([s, 0, i])`` and its mechanism noise from ``default_rng([s, 1, i, r])``, so adding
subsets or restarts never changes the draws of existing ones."""

from __future__ import annotations

import numpy as np


def subset_stream(seed: int, subset: int, *extra: int) -> list[int]:
    """Seed sequence entropy for drawing data subset ``subset`` (extra ids, e.g. n, make it per grid
    point)."""
    return [int(seed), 0, int(subset), *map(int, extra)]


def mechanism_stream(seed: int, subset: int, restart: int, *extra: int) -> list[int]:
    """Seed sequence entropy for the mechanism's randomness on (subset, restart)."""
    return [int(seed), 1, int(subset), int(restart), *map(int, extra)]


def subset_rng(seed: int, subset: int, *extra: int) -> np.random.Generator:
    return np.random.default_rng(subset_stream(seed, subset, *extra))


def mechanism_rng(seed: int, subset: int, restart: int, *extra: int) -> np.random.Generator:
    return np.random.default_rng(mechanism_stream(seed, subset, restart, *extra))
