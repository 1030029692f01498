"""A random k-dimensional subspace (the JMLR paper's sanity baseline, section 6.3).

The paper says only "a uniformly generated random projection" (Chaudhuri, Sarwate and Sinha,
JMLR 2013, section 6.3).  Two readings are implemented, selected by ``entries``:

``"gaussian"``
    the span of a d x k matrix of i.i.d. N(0, 1) entries: the Haar-uniform (rotation-invariant)
    law on k-dimensional subspaces.
``"uniform"``
    the span of a d x k matrix of i.i.d. Uniform(0, 1) entries.  This subspace is NOT rotation
    invariant: each column has mean (1/2)·1, so the span lies close to the all-ones direction,
    which for non-negative data (every JMLR data set after preprocessing) points near the data
    mean.

Either way the output is drawn without looking at the data, so it is 0-DP under any neighbouring
relation, and ``components`` is an orthonormal basis of the span (thin QR).  The raw,
non-orthonormal matrix is :func:`random_projection_matrix`; it is not a subspace basis and is
used only when a classification protocol explicitly asks for the raw projection.
"""

from __future__ import annotations

import numpy as np

from ._base import MechanismOutput, PrivacyGuarantee, check_data, check_k
from .linalg import orthonormalize

#: readings of "uniformly generated random projection" (see the module docstring)
RANDOM_ENTRIES = ("gaussian", "uniform")


def random_projection_matrix(
    d: int, k: int, rng: np.random.Generator, entries: str = "gaussian"
) -> np.ndarray:
    """The raw ``d x k`` random matrix: i.i.d. N(0, 1) (``"gaussian"``) or Uniform(0, 1) (``"uniform"``).

    Columns are neither orthogonal nor unit length; :func:`random_subspace` releases their span.
    """
    if entries == "gaussian":
        return rng.standard_normal((int(d), int(k)))
    if entries == "uniform":
        return rng.uniform(0.0, 1.0, size=(int(d), int(k)))
    raise ValueError(f"entries must be one of {RANDOM_ENTRIES}, got {entries!r}")


def random_subspace(
    X,
    k: int,
    *,
    rng: np.random.Generator,
    clip: bool = False,
    entries: str = "gaussian",
    return_matrix: bool = False,
) -> MechanismOutput:
    """Orthonormal basis of the span of :func:`random_projection_matrix` (0-DP: ignores ``X``).

    Parameters
    ----------
    X : array-like of shape (n, d)
        The data. Only validated (so that every mechanism refuses the same inputs); the output
        does not depend on it.
    k : int
        Dimension of the released subspace, 1 <= k < d.
    rng : numpy.random.Generator
        Source of the random matrix.
    clip : bool, default False
        Scale rows above the unit norm back onto the unit ball instead of refusing them.
    entries : {"gaussian", "uniform"}, default "gaussian"
        ``"gaussian"``: the Haar-uniform subspace (QR of a Gaussian matrix with sign fix);
        ``"uniform"``: the span of i.i.d. Uniform(0, 1) columns (module docstring).
    return_matrix : bool, default False
        Also release the raw matrix as ``release["projection_matrix"]`` (data-independent, so it
        costs no privacy; off by default so that records stay small).

    Returns
    -------
    MechanismOutput
        ``components`` (d x k, orthonormal), a 0-DP guarantee (data-independent output),
        ``release`` with ``status`` and ``entries``, ``diagnostics`` (not private) with
        ``n_clipped``.

    References
    ----------
    Chaudhuri, Sarwate and Sinha, "A near-optimal algorithm for differentially-private principal
    components", JMLR 14 (2013), section 6.3.
    """
    if entries not in RANDOM_ENTRIES:
        raise ValueError(f"entries must be one of {RANDOM_ENTRIES}, got {entries!r}")
    X, n_clipped = check_data(X, clip=clip)
    k = check_k(k, X.shape[1])
    R = random_projection_matrix(X.shape[1], k, rng, entries)
    V = orthonormalize(R)
    guarantee = PrivacyGuarantee(
        epsilon=0.0,
        delta=0.0,
        neighbouring="none",
        note="data-independent output: 0-DP under every relation",
    )
    release: dict = {"status": "ok", "entries": entries}
    if return_matrix:
        release["projection_matrix"] = R
    return MechanismOutput(V, guarantee, release=release, diagnostics={"n_clipped": n_clipped})
