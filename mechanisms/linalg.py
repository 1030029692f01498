"""Linear-algebra helpers shared by the mechanisms."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits


def top_k_eigenvectors(M: np.ndarray, k: int) -> np.ndarray:
    """Eigenvectors of the k largest (algebraic) eigenvalues of symmetric ``M``, as columns.

    Columns are ordered by decreasing eigenvalue; the sign of each column is
    fixed so that its largest-magnitude entry is positive (deterministic output).
    """
    M = (M + M.T) / 2
    w, V = np.linalg.eigh(M)
    V = V[:, ::-1][:, :k]
    return fix_signs(V)


def fix_signs(V: np.ndarray) -> np.ndarray:
    idx = np.argmax(np.abs(V), axis=0)
    signs = np.sign(V[idx, np.arange(V.shape[1])])
    signs[signs == 0] = 1
    return V * signs


def orthonormalize(Y: np.ndarray) -> np.ndarray:
    """Orthonormal basis of the column span of ``Y`` (thin QR with R's diagonal made positive)."""
    Q, R = np.linalg.qr(Y)
    s = np.sign(np.diag(R))
    s[s == 0] = 1
    return Q * s


def random_orthonormal(d: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """A ``d x k`` matrix drawn from the uniform (Haar) law on the Stiefel manifold."""
    return orthonormalize(rng.standard_normal((d, k)))


def symmetric_gaussian(d: int, scale: float, rng: np.random.Generator) -> np.ndarray:
    """Symmetric ``d x d`` matrix whose entries ``N_ij, i <= j`` are i.i.d. N(0, scale²)."""
    G = rng.standard_normal((d, d)) * scale
    upper = np.triu(G)
    return upper + np.triu(G, 1).T


def null_space_basis(V: np.ndarray) -> np.ndarray:
    """Orthonormal basis (d x (d - k)) of the orthogonal complement of the columns of ``V``."""
    d, k = V.shape
    Q, _ = np.linalg.qr(V, mode="complete")
    return Q[:, k:]


def single_thread_blas():
    """Context manager limiting BLAS to one thread.

    Loops of many small d x d products/eigendecompositions run much faster single-threaded when
    cores are shared (up to ~25x measured on the 2-core machines here); results are unchanged.
    """
    return threadpool_limits(limits=1, user_api="blas")


def canonical_rows(X: np.ndarray) -> np.ndarray:
    """The rows of ``X`` (float64) sorted by their bytes, a stable sort: every later sum over the
    rows runs in one order whatever the order of the input, so a result computed from them is bit
    for bit independent of row order."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    key = X.view(np.dtype((np.void, X.shape[1] * X.itemsize))).ravel()
    return X[np.argsort(key, kind="stable")]
