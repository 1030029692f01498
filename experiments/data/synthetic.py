"""Synthetic data sets.

* ``gaussian10``: JMLR 2013 section 6.5 -- n = 5,000 points from N(0, Σ) in d = 10, Σ with the
  eigenvalues of eq. (27), used with k = 2 for Figure 5.
* ``spiked``: the spiked covariance model D(U, Λ) of Hardt & Price (2014), appendix D (Lemma D.2):
  z = U Λ g + g',  g ~ N(0, 1/D)^k,  g' ~ N(0, σ²/D)^d,  D = tr(Λ²) + d σ²
  (so E‖z‖² = 1 and Cov z = (U Λ² Uᵀ + σ² I) / D).

Row scaling (both generators, ``row_scaling=``):

* ``"max"`` (default): divide the whole matrix by its largest row norm. This keeps the sample
  exactly Gaussian up to one global factor, so eigenvectors AND eigenvalue ratios are unchanged;
  only the overall scale of A = XᵀX/n shrinks by ``1/scale²`` (recorded as ``scale``). This is
  the same rule as for the real data sets (see :mod:`experiments.data.uci`).
* ``"clip"``: x -> x / max(1, ‖x‖). Rows already inside the unit ball are untouched, but for
  these models about half the rows are clipped, which changes the distribution (the eigenbasis is
  preserved by symmetry, the eigenvalues shrink non-uniformly). Offered for comparison only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from experiments.data.uci import Dataset
from experiments.errors import UserError

#: JMLR 2013 eq. (27).
EQ27_EIGENVALUES = (0.5, 0.30, 0.04, 0.03, 0.02, 0.01, 0.004, 0.003, 0.001, 0.001)
SYNTHETIC = ("gaussian10", "spiked")


@dataclass
class SyntheticDataset(Dataset):
    """A :class:`Dataset` that also knows its population structure."""

    true_subspace: np.ndarray | None = None  # d x k orthonormal: top-k population eigenvectors
    population_eigenvalues: np.ndarray | None = None  # of the covariance BEFORE row scaling
    basis: np.ndarray | None = None  # d x d orthonormal eigenbasis (columns, descending)
    scale: float = 1.0  # X = raw sample / scale (row_scaling="max"); 1.0 if nothing was divided


def _rng(rng) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def _haar_orthogonal(d: int, rng: np.random.Generator) -> np.ndarray:
    Q, R = np.linalg.qr(rng.standard_normal((d, d)))
    return Q * np.sign(np.diag(R))  # Haar-distributed


def _scale_rows(Z: np.ndarray, how: str) -> tuple[np.ndarray, float]:
    norms = np.linalg.norm(Z, axis=1)
    if how == "max":
        scale = float(max(norms.max(), 1e-300))
        X = Z / scale
        # round-off guard
        over = np.linalg.norm(X, axis=1) > 1.0
        X[over] /= np.linalg.norm(X[over], axis=1, keepdims=True)
        return X, scale
    if how == "clip":
        return Z / np.maximum(1.0, norms)[:, None], 1.0
    raise ValueError(f"row_scaling must be 'max' or 'clip', got {how!r}")


def gaussian10(
    n: int = 5000,
    rng=None,
    *,
    basis: str = "identity",
    row_scaling: str = "max",
    eigenvalues=EQ27_EIGENVALUES,
) -> SyntheticDataset:
    """n draws from N(0, Σ), eig(Σ) = eq. (27), rows scaled to norm <= 1.

    ``basis="identity"`` (default): Σ = diag(eq. 27), so the top-2 subspace is span(e1, e2) --
    the paper does not specify a basis; every mechanism of the paper is rotation-equivariant, so
    the choice does not affect their q_F. ``basis="random"``: a Haar-random eigenbasis from rng.
    """
    rng = _rng(rng)
    lam = np.asarray(eigenvalues, dtype=np.float64)
    d = lam.size
    if basis == "identity":
        Q = np.eye(d)
    elif basis == "random":
        Q = _haar_orthogonal(d, rng)
    else:
        raise ValueError(f"basis must be 'identity' or 'random', got {basis!r}")
    Z = (rng.standard_normal((int(n), d)) * np.sqrt(lam)) @ Q.T
    X, scale = _scale_rows(Z, row_scaling)
    return SyntheticDataset(
        name="gaussian10",
        X=X,
        y=None,
        split="synthetic",
        feature_names=[f"x{i}" for i in range(d)],
        files={},
        preprocessing=f"N(0, Q diag(eq.27) Q^T), basis={basis}, rows: {row_scaling}",
        true_subspace=Q[:, :2].copy(),
        population_eigenvalues=lam.copy(),
        basis=Q,
        scale=scale,
    )


def spiked(
    n: int,
    d: int,
    k: int,
    *,
    spike: float = 1.0,
    sigma: float = 0.1,
    lambdas=None,
    rng=None,
    basis: str = "random",
    row_scaling: str = "max",
) -> SyntheticDataset:
    """Hardt-Price spiked covariance model D(U, Λ) with rows scaled to norm <= 1.

    ``lambdas`` (length k, descending) default to ``spike`` repeated k times; ``sigma`` is the
    noise level. The population covariance (before row scaling) has eigenvalues
    (λ_i² + σ²)/D for i <= k and σ²/D otherwise, D = Σλ_i² + dσ²: the gap σ_k − σ_{k+1} = λ_k²/D.
    ``true_subspace`` = U (``basis="random"``: Haar-random; ``"identity"``: first k coordinates).
    """
    rng = _rng(rng)
    n, d, k = int(n), int(d), int(k)
    if not 1 <= k <= d:
        raise ValueError(f"need 1 <= k <= d, got k={k}, d={d}")
    lam = np.full(k, float(spike)) if lambdas is None else np.asarray(lambdas, dtype=np.float64)
    if lam.shape != (k,):
        raise ValueError(f"lambdas must have length k={k}")
    if sigma < 0:
        raise ValueError("sigma must be >= 0")
    lam = np.sort(np.abs(lam))[::-1]
    D = float(np.sum(lam**2) + d * sigma**2)
    if basis == "random":
        U = _haar_orthogonal(d, rng)[:, :k]
    elif basis == "identity":
        U = np.eye(d)[:, :k]
    else:
        raise ValueError(f"basis must be 'identity' or 'random', got {basis!r}")
    g = rng.standard_normal((n, k)) / np.sqrt(D)
    g_noise = rng.standard_normal((n, d)) * (sigma / np.sqrt(D))
    Z = (g * lam) @ U.T + g_noise
    X, scale = _scale_rows(Z, row_scaling)
    pop = np.concatenate([(lam**2 + sigma**2) / D, np.full(d - k, sigma**2 / D)])
    return SyntheticDataset(
        name="spiked",
        X=X,
        y=None,
        split="synthetic",
        feature_names=[f"x{i}" for i in range(d)],
        files={},
        preprocessing=(
            f"Hardt-Price spiked model, k={k}, lambdas={lam.tolist()}, sigma={sigma}, "
            f"basis={basis}, rows: {row_scaling}"
        ),
        true_subspace=U.copy(),
        population_eigenvalues=pop,
        basis=None,
        scale=scale,
    )


def load_synthetic(name: str, n: int | None = None, seed: int = 0, **params) -> SyntheticDataset:
    """``gaussian10`` (default n = 5000) or ``spiked`` (default n = 5000, d = 100, k = 5)."""
    rng = np.random.default_rng(seed)
    if name == "gaussian10":
        return gaussian10(5000 if n is None else n, rng, **params)
    if name == "spiked":
        params.setdefault("d", 100)
        params.setdefault("k", 5)
        return spiked(5000 if n is None else n, rng=rng, **params)
    raise UserError(f"unknown synthetic data set {name!r}; valid names: {', '.join(SYNTHETIC)}")
