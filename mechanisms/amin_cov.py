"""Iterative eigenvector sampling: Amin, Dick, Kulesza, Muñoz Medina & Vassilvitskii (NeurIPS 2019).

The paper's Algorithm 1 ("Iterative Eigenvector Sampling"), pure ε-DP under replace-one-row with
rows in the unit ball, releases a private estimate of the second moment C = XᵀX in three parts:

1. the eigenvalues λ_1 >= ... of C, each with Laplace noise: λ̂_i = λ_i + Lap(2/ε_0) (step 1);
2. eigenvectors θ̂_1, θ̂_2, ... one at a time, θ̂_i drawn on the unit sphere of the complement of
   θ̂_1..θ̂_{i−1} with density ∝ exp(ε_i/4 · uᵀ C_i u), C_i = P_i C P_iᵀ the second moment seen in
   that complement (step 2, with the paper's Algorithm 2 to draw it exactly);
3. the estimate Ĉ = Σ_i λ̂_i θ̂_i θ̂_iᵀ (step 3): post-processing of 1 and 2.

Composition gives ε = ε_0 + Σ_i ε_i (the paper's Theorem 1).  Here everything is stated for the
normalised second moment A = XᵀX/n of the rest of the library (JMLR 2013 eq. (1)): the eigenvalues of
A are those of C divided by n (n is public under replace-one-row), so the Laplace scale is
2/(n ε_0), and the exponent ε_i/4 · uᵀCu is n ε_i/4 · uᵀAu.

Step 2 is :func:`mechanisms.ppca_iterative.sample_iterative_eigenvectors`, the sampler
``ppca_iterative`` runs (``ppca_iterative`` is this algorithm's eigenvector half with ε/k per vector
and the exponent ε_i/2 of calibration ``"tight"`` below).

Sensitivities under replace-one-row (rows x, y with ‖x‖, ‖y‖ <= 1; C' = C − xxᵀ + yyᵀ):

* **Eigenvalues (L1).**  Lidskii's theorem: λ(C) − λ(C') is majorised by λ(C − C'), so
  Σ_i |λ_i(C) − λ_i(C')| <= ‖xxᵀ − yyᵀ‖_* <= ‖x‖² + ‖y‖² <= 2, and the sum over any m of the
  indices is at most the sum of the m largest |eigenvalues| of xxᵀ − yyᵀ, a matrix with one eigenvalue
  in [0, 1], one in [−1, 0] and the rest 0: at most min(m, 2).  Both bounds are attained: base row
  e₂, x = e₁ vs y = e₂ gives λ = (1, 1) vs (2, 0), an L1 change of 2 (1 in the top eigenvalue alone).
  Under add/remove-one-row (C' = C + xxᵀ) every eigenvalue moves up (interlacing) and the changes sum
  to tr(xxᵀ) = ‖x‖² <= 1: the add/remove value is **1**, half the replace-one value.  For A = C/n
  divide by n (replace-one only: add/remove also changes n).
* **Exponent.**  For every unit u in range(P_i), uᵀC_iu = Σ_rows (xᵀP_iᵀu)² has each term in [0, 1],
  so replacing one row changes it by at most 1 (the same under add/remove).  The exponential
  mechanism exp(ε_i · score / (2Δ)) with Δ = 1 is ε_i-DP given θ̂_1..θ̂_{i−1} (which fix P_i): the
  exponent ε_i/2 is enough.  The paper's ε_i/4 is the exponential mechanism with Δ = 2, conservative
  by a factor 2 (its draws are ε_i/2-DP).

Calibrations (``calibration``):

``"paper"`` (default)
    Algorithm 1's constants: Laplace scale 2/(n ε_0) on the eigenvalues of A and exponent ε_i/4.
``"tight"``
    The sensitivities derived above: Laplace scale min(r, 2)/(n ε_0) for r released eigenvalues and
    exponent ε_i/2.  Same ε, less noise.

Budget splits (``split``), over the eigenvalues (ε_0) and the m vectors drawn (ε_1..ε_m):

``"half"`` (default)
    ε_0 = ε/2 and ε_i = ε/(2m): half for the eigenvalues, the other half evenly over the vectors.
``"uniform"``
    ε_0 = ε_1 = ... = ε_m = ε/(m + 1).

Both sum to ε (checked in float).  docs/amin_cov.md says where each comes from and what could and
could not be checked against the paper.

Release: ``status``; ``eigenvalues`` (λ̂_1..λ̂_r of A, in the order of the vectors they go with, not
re-sorted; clipped to [0, 1] only with ``clamp_eigenvalues=True``); ``epsilon_eigenvalues`` (ε_0),
``epsilon_per_vector`` (ε_1..ε_m), ``eigenvalue_noise_scale`` (the Laplace scale on A's eigenvalues,
a function of ε_0, n and r: public under replace-one-row), ``exponent_per_vector`` (the coefficient of
uᵀXᵀXu in each draw's exponent), ``split``, ``calibration``, ``rank`` (r) and ``sampler``.  The
output's ``covariance`` field holds Ĉ (d x d, on the scale of A), released too but kept out of
``release`` so that records stay small.  ``components`` are θ̂_1..θ̂_k.

Diagnostics (not private): ``n_clipped``, ``eigenvalues_exact`` (the top r eigenvalues of A),
``acceptance_rates`` (of the rejection samplers; they depend on A) and ``seconds``.
"""

from __future__ import annotations

import math
import time
import weakref
from typing import Any

import numpy as np

from ._base import (
    MechanismOutput,
    PreparedData,
    PrivacyGuarantee,
    PrivacyInputError,
    check_data,
    check_epsilon,
    check_flag,
    check_k,
)
from .calibration import ppca_concentration
from .linalg import canonical_rows, null_space_basis
from .ppca_iterative import sample_iterative_eigenvectors

__all__ = [
    "CALIBRATIONS",
    "SPLITS",
    "amin_cov",
    "budget_split",
    "eigenvalue_sensitivity",
    "exponent_coefficient",
]

#: the budget splits: name -> what it gives the eigenvalues and each vector
SPLITS = {
    "half": "epsilon_0 = epsilon/2, epsilon_i = epsilon/(2m) for each of the m vectors drawn",
    "uniform": "epsilon_0 = epsilon_i = epsilon/(m + 1)",
}

#: the calibrations: name -> (Laplace sensitivity on XᵀX's eigenvalues, exponent coefficient)
CALIBRATIONS = {
    "paper": "Algorithm 1: Laplace scale 2/epsilon_0 on the eigenvalues of X'X, exponent epsilon_i/4",
    "tight": "Laplace scale min(r, 2)/epsilon_0 on the eigenvalues of X'X, exponent epsilon_i/2",
}


def eigenvalue_sensitivity(r: int, calibration: str = "paper") -> float:
    """L1 sensitivity of r eigenvalues of XᵀX under replace-one-row that the calibration assumes.

    ``"paper"``: 2 (Algorithm 1's Lap(2/ε_0)); ``"tight"``: min(r, 2), the exact value (module
    docstring).  Divide by n for the eigenvalues of A = XᵀX/n.
    """
    return 2.0 if calibration == "paper" else float(min(int(r), 2))


def exponent_coefficient(epsilon_i: float, calibration: str = "paper") -> float:
    """The coefficient c of uᵀXᵀXu in a draw's exponent for budget ε_i: ε_i/4 (``"paper"``,
    Algorithm 1 step 2a) or ε_i/2 (``"tight"``: the exponential mechanism with Δ = 1)."""
    return epsilon_i / 4.0 if calibration == "paper" else epsilon_i / 2.0


def budget_split(epsilon: float, m: int, split: str = "half") -> tuple[float, list[float]]:
    """``(ε_0, [ε_1..ε_m])`` for ``split`` (:data:`SPLITS`); they sum to ε up to one rounding."""
    if split == "half":
        return epsilon / 2.0, [epsilon / (2.0 * m)] * m
    share = epsilon / (m + 1.0)
    return share, [share] * m


def _check_choice(value: Any, name: str, options: dict) -> str:
    if not isinstance(value, str) or value not in options:
        raise PrivacyInputError(f"{name} must be one of {sorted(options)}, got {value!r}")
    return value


def _check_rank(rank: Any, k: int, d: int) -> int:
    if rank is None:
        return k
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not k <= rank <= d:
        raise PrivacyInputError(
            f"rank must be None or an integer with k <= rank <= d = {d}, got {rank!r}"
        )
    return int(rank)


#: canonical second moments of PreparedData matrices (read-only, owned): id -> A, dropped with X
_CANONICAL: dict[int, np.ndarray] = {}


def _canonical_second_moment(X: np.ndarray, *, cache: bool = False) -> np.ndarray:
    """A = XᵀX/n with the rows in an order fixed by their bytes, so that any permutation of the rows
    gives the same A bit for bit (the summation order of the product is the sorted rows').

    ``cache=True`` (the read-only matrix of a :class:`PreparedData`): computed once per matrix, so
    many releases on the same data do not sort and multiply again.
    """
    key = id(X)
    if cache and key in _CANONICAL:
        return _CANONICAL[key]
    A = _canonical_product(X)
    if cache:
        A.flags.writeable = False
        _CANONICAL[key] = A
        weakref.finalize(X, _CANONICAL.pop, key, None)
    return A


def _canonical_product(X: np.ndarray) -> np.ndarray:
    Xs = canonical_rows(X)
    A = Xs.T @ Xs / Xs.shape[0]
    return (A + A.T) / 2


def amin_cov(
    X: Any,
    k: int,
    *,
    epsilon: float,
    rng: np.random.Generator,
    clip: bool = False,
    split: str = "half",
    calibration: str = "paper",
    rank: int | None = None,
    clamp_eigenvalues: bool = False,
) -> MechanismOutput:
    """Amin et al. (2019) Algorithm 1: noisy eigenvalues, iteratively sampled eigenvectors and the
    covariance estimate Ĉ = Σ λ̂_i θ̂_i θ̂_iᵀ; pure ε-DP under replace-one-row.

    Parameters
    ----------
    X : array-like of shape (n, d)
        The data; every row must have L2 norm at most 1 (see ``clip``).
    k : int
        Number of eigenvectors returned in ``components``, 1 <= k < d.
    epsilon : float
        Total privacy parameter ε > 0, split by ``split`` between the eigenvalues and the vectors.
    rng : numpy.random.Generator
        Source of the Laplace noise (drawn first, r values) and then of the m rejection samplers.
    clip : bool, default False
        Scale rows above the unit norm back onto the unit ball instead of refusing them.
    split : {"half", "uniform"}, default "half"
        The budget split (:data:`SPLITS`).
    calibration : {"paper", "tight"}, default "paper"
        ``"paper"``: Algorithm 1's Lap(2/ε_0) and exponent ε_i/4; ``"tight"``: Lap(min(r, 2)/ε_0)
        and ε_i/2, the sensitivities derived in the module docstring.
    rank : int, optional
        r, the number of eigenpairs in Ĉ, k <= r <= d (default k).  r = d is the paper's full
        Algorithm 1: d − 1 vectors are drawn with budget and the d-th, the one unit vector left (up to
        sign, which Ĉ does not see), costs nothing (a draw on S⁰ is a uniform sign whatever the data).
    clamp_eigenvalues : bool, default False
        Clip λ̂_i to [0, 1], the range of A's eigenvalues for rows in the unit ball (post-processing;
        the reference implementations clamp, the paper's Algorithm 1 does not).

    Returns
    -------
    MechanismOutput
        ``components`` (θ̂_1..θ̂_k, orthonormal), ``covariance`` (Ĉ, d x d), a pure ε-DP guarantee
        under replace-one-row (δ = 0), ``release`` and ``diagnostics`` as in the module docstring.

    Raises
    ------
    PrivacyInputError
        For ε, k, rank, split, calibration or clamp_eigenvalues outside their ranges, rows above the
        unit norm (without ``clip``) or an exponent beyond the samplers' floating-point range.

    References
    ----------
    K. Amin, T. Dick, A. Kulesza, A. Muñoz Medina and S. Vassilvitskii, "Differentially private
    covariance estimation", NeurIPS 2019: Algorithm 1 (iterative eigenvector sampling), Theorem 1
    (its privacy) and Algorithm 2 (the exact draw of one eigenvector, here
    :func:`mechanisms.bingham.sample_vector_bingham`).  V. B. Lidskii (1950) for the eigenvalue
    sensitivity; F. McSherry and K. Talwar (FOCS 2007) for the exponential mechanism.
    """
    eps = check_epsilon(epsilon)
    split = _check_choice(split, "split", SPLITS)
    calibration = _check_choice(calibration, "calibration", CALIBRATIONS)
    clamp = check_flag(clamp_eigenvalues, "clamp_eigenvalues")
    prepared = isinstance(X, PreparedData)
    X, n_clipped = check_data(X, clip=clip)
    # a PreparedData's matrix is read-only and owned: its canonical A may be cached (not a clipped copy)
    cache = prepared and not X.flags.writeable and X.base is None
    n, d = X.shape
    k = check_k(k, d)
    r = _check_rank(rank, k, d)
    m = min(r, d - 1)  # vectors drawn with budget; the d-th (r = d) is free
    eps0, eps_vec = budget_split(eps, m, split)
    coefs = [exponent_coefficient(e, calibration) for e in eps_vec]
    # n·c is the concentration on A; ppca_concentration(n, 2c) = n·c refuses one beyond float range
    scales = [ppca_concentration(n, 2.0 * c) for c in coefs]
    lap_scale = eigenvalue_sensitivity(r, calibration) / (n * eps0)
    t0 = time.perf_counter()
    A = _canonical_second_moment(X, cache=cache)
    lam = np.linalg.eigvalsh(A)[::-1][:r]  # the r largest, decreasing
    noisy = lam + rng.laplace(0.0, lap_scale, size=r)
    if clamp:
        noisy = np.clip(noisy, 0.0, 1.0)
    V, rates = sample_iterative_eigenvectors(A, scales, rng=rng)
    if r == d:
        V = np.hstack([V, null_space_basis(V)])
    C_hat = (V * noisy) @ V.T
    C_hat = (C_hat + C_hat.T) / 2
    release = {
        "status": "ok",
        "sampler": "iterative-exact",
        "eigenvalues": [float(v) for v in noisy],
        "epsilon_eigenvalues": eps0,
        "epsilon_per_vector": list(eps_vec),
        "eigenvalue_noise_scale": lap_scale,
        "exponent_per_vector": coefs,
        "split": split,
        "calibration": calibration,
        "rank": r,
    }
    diagnostics = {
        "n_clipped": n_clipped,
        "eigenvalues_exact": [float(v) for v in lam],
        "acceptance_rates": rates,
        "seconds": time.perf_counter() - t0,
    }
    total = math.fsum([eps0, *eps_vec])
    note = (
        f"Amin et al. 2019 Algorithm 1 ({calibration} calibration, {split} split): {r} eigenvalues "
        f"with Laplace noise ({eps0:.6g}-DP) and {m} exact exponential-mechanism eigenvectors "
        f"({', '.join(f'{e:.6g}' for e in eps_vec[:3])}{', ...' if m > 3 else ''}); basic "
        f"composition gives epsilon = {total:.6g}, delta = 0; the covariance is post-processing."
    )
    guarantee = PrivacyGuarantee(eps, 0.0, "replace-one-row", exact=True, note=note)
    return MechanismOutput(
        components=np.ascontiguousarray(V[:, :k]),
        guarantee=guarantee,
        release=release,
        diagnostics=diagnostics,
        covariance=C_hat,
    )
