"""Utility metrics of Chaudhuri, Sarwate & Sinha (JMLR 2013) and subspace distances."""

from __future__ import annotations

import numpy as np


def q_F(V: np.ndarray, A: np.ndarray) -> float:
    """Energy captured by the subspace: q_F(V) = tr(VᵀAV), JMLR eq. (3)."""
    return float(np.einsum("ij,ij->", V, A @ V))


def q_A(v: np.ndarray, A: np.ndarray) -> float:
    """|⟨v̂₁, v₁⟩| for a single direction: JMLR eq. (4) (k = 1).

    ``v`` may be a length-d vector or a d x 1 matrix; v₁ is the top eigenvector of A.
    """
    v = np.asarray(v).reshape(-1)
    w, U = np.linalg.eigh((A + A.T) / 2)
    v1 = U[:, -1]
    return float(abs(v @ v1) / np.linalg.norm(v))


def optimal_q_F(A: np.ndarray, k: int) -> float:
    """q_F(V_k) for the top-k eigenvectors V_k of A: the sum of its k largest eigenvalues."""
    w = np.linalg.eigvalsh((A + A.T) / 2)
    return float(np.sum(w[::-1][:k]))


def normalised_utility(V: np.ndarray, A: np.ndarray) -> float:
    """q_F(V) / q_F(V_k): 1 for the optimal subspace, about k/d for a random one."""
    return q_F(V, A) / optimal_q_F(A, V.shape[1])


def principal_angles(U: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Principal angles between the column spans of orthonormal U and V, accurate at every size.

    Parameters
    ----------
    U, V : ndarray of shape (d, p) and (d, q)
        Orthonormal columns.

    Returns
    -------
    ndarray of shape (min(p, q),)
        The angles in radians, ascending.

    Notes
    -----
    The cosines are the singular values of UᵀV and the sines those of (I − UUᵀ)V (U the wider of
    the two); an angle is taken from its sine below π/4 and from its cosine above (Björck & Golub
    1973; Knyazev & Argentati 2002), since arccos of a cosine within rounding of 1 resolves angles
    only down to about 1e-8.
    """
    if U.shape[1] < V.shape[1]:
        U, V = V, U
    UtV = U.T @ V
    cosines = np.clip(np.linalg.svd(UtV, compute_uv=False), 0.0, 1.0)  # descending
    sines = np.linalg.svd(V - U @ UtV, compute_uv=False)[::-1]  # ascending
    from_cos = np.arccos(cosines)
    from_sin = np.arcsin(np.clip(sines, 0.0, 1.0))
    return np.where(cosines * cosines >= 0.5, from_sin, from_cos)


def projector_distance(U: np.ndarray, V: np.ndarray) -> float:
    """‖UUᵀ − VVᵀ‖₂ (spectral norm): the sine of the largest principal angle."""
    return float(np.sin(np.max(principal_angles(U, V))))


def projector_distance_frobenius(U: np.ndarray, V: np.ndarray) -> float:
    """‖UUᵀ − VVᵀ‖_F = sqrt(2 Σ sin² θᵢ) for equal-rank subspaces."""
    theta = principal_angles(U, V)
    return float(np.sqrt(2.0 * np.sum(np.sin(theta) ** 2) + abs(U.shape[1] - V.shape[1])))
