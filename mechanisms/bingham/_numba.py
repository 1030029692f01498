"""Numba for the samplers' kernels, and the seed of Numba's generator.

Numba's ``np.random`` functions draw from a generator of their own (one per thread), separate from
NumPy's: the rstiefel port draws from it, so it seeds it from its ``numpy.random.Generator`` with
:func:`seed_numba` and a run stays reproducible from its seed.  The Givens kernel draws from per-chain
streams instead (:mod:`.streams`).
"""

from __future__ import annotations

import numpy as np

try:  # Numba is a hard dependency of the project, but keep a clear error path.
    import numba
    from numba import njit
except ImportError:  # pragma: no cover
    numba = None

    def njit(*args, **kwargs):  # type: ignore[no-redef]
        if args and callable(args[0]):
            return args[0]
        return lambda f: f


__all__ = ["njit", "numba", "seed_numba"]


@njit(cache=True)
def seed_numba(seed):
    """Seed Numba's internal generator (used by the rstiefel port)."""
    np.random.seed(seed)
