"""Non-private PCA: the top-k eigenvectors of A = XᵀX/n (JMLR eq. (2)). No privacy."""

from __future__ import annotations

import numpy as np

from ._base import MechanismOutput, PrivacyGuarantee, check_data, check_k, second_moment
from .linalg import top_k_eigenvectors

NO_PRIVACY = PrivacyGuarantee(epsilon=float("inf"), delta=0.0, neighbouring="none",
                              note="non-private baseline")


def pca(X, k: int, *, rng: np.random.Generator | None = None, clip: bool = False) -> MechanismOutput:
    """Top-k eigenvectors of the second-moment matrix A = XᵀX/n (uncentred, as in the paper).

    No privacy.  Release: ``status``.  Diagnostics (not private): ``n_clipped``.
    """
    X, n_clipped = check_data(X, clip=clip)
    k = check_k(k, X.shape[1])
    V = top_k_eigenvectors(second_moment(X), k)
    return MechanismOutput(V, NO_PRIVACY, release={"status": "ok"}, diagnostics={"n_clipped": n_clipped})
