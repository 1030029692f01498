"""A uniformly random k-dimensional subspace (the JMLR paper's sanity baseline).

The output does not depend on the data, so it is 0-DP under any neighbouring relation.
"""

from __future__ import annotations

import numpy as np

from ._base import MechanismOutput, PrivacyGuarantee, check_data, check_k
from .linalg import random_orthonormal


def random_subspace(X, k: int, *, rng: np.random.Generator, clip: bool = False) -> MechanismOutput:
    """Haar-uniform d x k orthonormal matrix (QR of a Gaussian matrix with sign fix).

    Release: ``status``.  Diagnostics (not private): ``n_clipped`` (the data are still validated,
    so that every mechanism refuses the same inputs).
    """
    X, n_clipped = check_data(X, clip=clip)
    k = check_k(k, X.shape[1])
    V = random_orthonormal(X.shape[1], k, rng)
    guarantee = PrivacyGuarantee(epsilon=0.0, delta=0.0, neighbouring="none",
                                 note="data-independent output: 0-DP under every relation")
    return MechanismOutput(V, guarantee, release={"status": "ok"}, diagnostics={"n_clipped": n_clipped})
