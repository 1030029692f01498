"""The paper's own sampler: a port of Hoff's ``rstiefel::rbmf.matrix.gibbs`` for BMF(B).

Hoff, "Simulation of the matrix Bingham-von Mises-Fisher distribution, with applications to
multivariate and relational data" (J. Comput. Graph. Statist., 2009), section 2.1, as used by
Chaudhuri, Sarwate & Sinha (JMLR 2013, section 6.2).  The column-wise Gibbs sampler of
:mod:`.column`, except that column r is not drawn exactly from its conditional: it gets ONE
coordinate-wise Gibbs sweep of the vector Bingham exp(yᵀ diag(λ) y) on S^{m-1} in the eigenbasis of
M = NᵀBN (N a basis of the complement of the other columns).

Derivation of the coordinate step (``rstiefel``'s ``ry_bing``).  Fix every coordinate's share of
the rest, y_j / √(1 − y_i²) for j ≠ i; the free variable is θ = y_i² ∈ (0, 1), with the other
coordinates rescaled by √((1 − θ)/(1 − y_i²)).  The uniform measure on S^{m-1} gives θ the
Beta(1/2, (m − 1)/2) density, and the exponent is λ_i θ + (1 − θ) Σ_{j≠i} λ_j y_j²/(1 − y_i²), so
θ has density ∝ θ^{-1/2}(1 − θ)^{(m−1)/2 − 1} exp(a θ) with a = λ_i − Σ_{j≠i} λ_j y_j²/(1 − y_i²),
and the sign of y_i is a fair coin.  θ is drawn by rejection from a Beta(1/2, g) envelope
(:func:`_rtheta_tilted_beta`, bound derived in its docstring).
"""

from __future__ import annotations

import math

import numpy as np

from ._numba import njit, seed_numba
from .column import complement_basis

__all__ = ["rstiefel_gibbs_sweep"]


@njit(cache=True)
def _rtheta_tilted_beta(shape_b, a):
    """θ with density ∝ θ^{-1/2} (1 − θ)^{shape_b − 1} exp(a θ) on (0, 1) (Hoff 2009, section 2.1).

    Rejection from a Beta(1/2, g) envelope, g = max(1/(1 + log(2 + a)), shape_b − a) ≤ shape_b for
    a > 0 (g = shape_b otherwise): the ratio exp(aθ)(1 − θ)^{shape_b − g} is maximised at
    1 − θ = (shape_b − g)/a, where its log is a − shape_b + g + (shape_b − g) log((shape_b − g)/a).
    """
    g = shape_b
    lrmx = 0.0
    if a > 0.0:
        g = max(1.0 / (1.0 + math.log(2.0 + a)), shape_b - a)
        if shape_b - g > 0.0:
            lrmx = a - shape_b + g + (shape_b - g) * math.log((shape_b - g) / a)
        else:
            lrmx = a
    while True:
        th = np.random.beta(0.5, g)
        lrth = a * th
        if shape_b - g > 0.0:
            lrth += (shape_b - g) * math.log1p(-th)
        if math.log(np.random.random()) <= lrth - lrmx:
            return th


@njit(cache=True)
def _coordinate_sweep_bingham(y, lam):
    """One coordinate-wise Gibbs sweep for the vector Bingham exp(Σ λ_i y_i²) on the sphere, in place.

    Hoff (2009)'s inner sampler (``rstiefel``'s ``ry_bing``): for i = 0..m−1 draw θ = y_i² from
    ∝ θ^{-1/2}(1 − θ)^{(m−1)/2 − 1} exp(a θ), a = λ_i − Σ_{j≠i} λ_j y_j²/(1 − y_i²), a random sign
    for y_i, and rescale the other coordinates by √((1 − θ)/(1 − y_i²)).
    """
    m = y.shape[0]
    shape_b = 0.5 * (m - 1.0)
    s = 0.0  # Σ λ_j y_j²
    for j in range(m):
        s += lam[j] * y[j] * y[j]
    for i in range(m):
        yi2 = y[i] * y[i]
        om = 1.0 - yi2
        if om <= 0.0:
            om = 1e-300
        a = lam[i] - (s - lam[i] * yi2) / om
        th = _rtheta_tilted_beta(shape_b, a)
        r = math.sqrt((1.0 - th) / om)
        s = 0.0
        for j in range(m):
            if j != i:
                y[j] *= r
                s += lam[j] * y[j] * y[j]
        y[i] = math.sqrt(th) if np.random.random() < 0.5 else -math.sqrt(th)
        s += lam[i] * th


def rstiefel_gibbs_sweep(V: np.ndarray, B: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One iteration of the paper's own sampler: Hoff's ``rstiefel::rbmf.matrix.gibbs`` for BMF(B).

    For each column r, in a random order: N = orthonormal basis of the complement of the other
    columns (:func:`complement_basis`), M = NᵀBN = E diag(l) Eᵀ, y = Eᵀ Nᵀ v_r, then ONE
    coordinate-wise Gibbs sweep of the vector Bingham in the eigenbasis of M
    (``_coordinate_sweep_bingham``), v_r = N E y.  The column
    is not drawn exactly from its conditional; whether that mixes better or worse per iteration than
    :func:`reference_gibbs_sweep` is measured, not assumed (docs/sampler.md).  Used to measure the
    paper's sampler (scripts/benchmarks/bench_sampler.py); Numba's generator is seeded from ``rng`` on each call.
    """
    k = V.shape[1]
    seed_numba(int(rng.integers(0, 2**31 - 1)))
    for r in rng.permutation(k):
        N = complement_basis(V, r)
        M = N.T @ B @ N
        lam, E = np.linalg.eigh((M + M.T) / 2)
        lam, E = lam[::-1].copy(), E[:, ::-1]  # R's eigen(): decreasing order, swept in that order
        y = E.T @ (N.T @ V[:, r])
        y /= np.linalg.norm(y)
        _coordinate_sweep_bingham(y, lam)
        x = N @ (E @ y)
        V[:, r] = x / np.linalg.norm(x)
    return V
