"""Non-private PCA: the top-k eigenvectors of A = XᵀX/n (JMLR eq. (2)). No privacy."""

from __future__ import annotations

import numpy as np

from ._base import MechanismOutput, PrivacyGuarantee, check_data, check_k, second_moment
from .linalg import top_k_eigenvectors

NO_PRIVACY = PrivacyGuarantee(
    epsilon=float("inf"), delta=0.0, neighbouring="none", note="non-private baseline"
)


def pca(
    X, k: int, *, rng: np.random.Generator | None = None, clip: bool = False
) -> MechanismOutput:
    """Top-k eigenvectors of the second-moment matrix A = XᵀX/n (uncentred, as in the paper).

    Parameters
    ----------
    X : array-like of shape (n, d)
        The data; every row must have L2 norm at most 1 (see ``clip``).
    k : int
        Dimension of the released subspace, 1 <= k < d.
    rng : numpy.random.Generator, optional
        Unused (the output is deterministic); accepted so that every mechanism has one signature.
    clip : bool, default False
        Scale rows above the unit norm back onto the unit ball instead of refusing them.

    Returns
    -------
    MechanismOutput
        ``components`` (d x k, orthonormal), a guarantee with ε = ∞ (no privacy), ``release``
        with ``status`` and ``diagnostics`` (not private) with ``n_clipped``.

    References
    ----------
    Chaudhuri, Sarwate and Sinha, "A near-optimal algorithm for differentially-private principal
    components", JMLR 14 (2013), eq. (2).
    """
    X, n_clipped = check_data(X, clip=clip)
    k = check_k(k, X.shape[1])
    V = top_k_eigenvectors(second_moment(X), k)
    return MechanismOutput(
        V, NO_PRIVACY, release={"status": "ok"}, diagnostics={"n_clipped": n_clipped}
    )
