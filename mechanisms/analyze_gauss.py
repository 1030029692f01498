"""Analyze Gauss: Dwork, Talwar, Thakurta, Zhang (STOC 2014) Algorithm 1.

Release C = XᵀX + E with E symmetric, upper-triangular entries i.i.d.
N(0, Δ²), Δ = sqrt(2 ln(1.25/δ))/ε, then take the top-k eigenvectors of C
(post-processing).  Guarantee: (ε, δ)-DP for add/remove-one-row neighbours with
rows of L2 norm <= 1 (sensitivity ‖aaᵀ‖_F <= 1), ε < 1 (Gaussian-mechanism theorem).

``neighbouring="replace-one-row"`` scales Δ by sqrt(2) (sensitivity
‖aaᵀ − bbᵀ‖_F <= sqrt(2)) so that it can be compared with MOD-SULQ and PPCA on
the same footing.

``calibration="paper"`` (default) uses Δ_{ε,δ} above (ε < 1); ``calibration="tight"`` the smallest
std for the exact Gaussian profile at the same sensitivity (any ε > 0;
:func:`mechanisms.calibration.analyze_gauss_noise_scale_tight`, docs/calibration.md).

``postprocess="projection"`` applies the projection mechanism of Nikolov, Talwar & Zhang (STOC 2013)
to the noisy matrix before the eigenvectors are taken: C/n is projected, in Frobenius norm, onto
K = {S ⪰ 0, tr S ≤ 1}, the convex hull of {xxᵀ : ‖x‖ ≤ 1} (:func:`project_psd_trace_ball`).  It is
post-processing of the released noisy matrix, so the guarantee is unchanged; and because the projection
moves every eigenvalue by the same non-decreasing map, it never reorders the eigenvectors: the released
top-k subspace is that of ``postprocess="none"`` (derivation in :func:`project_psd_trace_ball`).
"""

from __future__ import annotations

import math
from typing import Literal, get_args

import numpy as np

from ._base import (
    MechanismOutput,
    PrivacyGuarantee,
    PrivacyInputError,
    check_data,
    check_delta,
    check_epsilon,
    check_k,
)
from .calibration import (
    analyze_gauss_noise_scale,
    analyze_gauss_noise_scale_tight,
    check_calibration,
)
from .linalg import canonical_rows, fix_signs, symmetric_gaussian, top_k_eigenvectors

SENSITIVITY = {"add-remove-one-row": 1.0, "replace-one-row": math.sqrt(2.0)}

#: what may follow the noisy matrix before its top-k eigenvectors are taken (a type, so that a front
#: end reads the choices from the signature)
Postprocess = Literal["none", "projection"]
POSTPROCESSING = get_args(Postprocess)


def project_onto_capped_simplex(values, radius: float = 1.0) -> tuple[np.ndarray, float]:
    """Euclidean projection of ``values`` onto Δ_r = {μ : μ ≥ 0, Σ μ ≤ r}, and its shift τ.

    The problem min ½‖μ − λ‖² over Δ_r is strictly convex with linear constraints; its KKT
    conditions (multipliers ν_i ≥ 0 for μ_i ≥ 0, τ ≥ 0 for Σ μ ≤ r) give μ_i − λ_i − ν_i + τ = 0,
    ν_i μ_i = 0 and τ (Σ μ − r) = 0, i.e.

        μ_i = max(λ_i − τ, 0),   τ ≥ 0,   τ · (Σ_i max(λ_i − τ, 0) − r) = 0.

    So τ = 0 when Σ max(λ_i, 0) ≤ r; otherwise τ > 0 is the unique root of the continuous, strictly
    decreasing (where positive) Σ_i max(λ_i − τ, 0) = r, found exactly as for the projection onto the
    simplex {μ ≥ 0, Σ μ = r}: with u the values sorted in decreasing order, ρ the largest j such that
    u_j − (Σ_{i≤j} u_i − r)/j > 0, τ = (Σ_{i≤ρ} u_i − r)/ρ (the sort-based rule of Held, Wolfe &
    Crowder, Math. Programming 1974; Duchi, Shalev-Shwartz, Singer & Chandra, ICML 2008, Fig. 1).

    Parameters
    ----------
    values : array-like of shape (m,)
        The point λ to project (finite).
    radius : float, default 1.0
        r > 0.

    Returns
    -------
    (numpy.ndarray, float)
        μ (in the order of ``values``) and τ ≥ 0.  μ depends on each λ_i only through the
        non-decreasing map λ_i ↦ max(λ_i − τ, 0).
    """
    lam = np.asarray(values, dtype=np.float64).reshape(-1)
    r = float(radius)
    if not (math.isfinite(r) and r > 0):
        raise ValueError(f"radius must be a finite number > 0, got {radius!r}")
    if not np.all(np.isfinite(lam)):
        raise ValueError("values must be finite")
    positive = np.maximum(lam, 0.0)
    if positive.sum() <= r:
        return positive, 0.0
    u = np.sort(lam)[::-1]
    cumulative = np.cumsum(u)
    j = np.arange(1, u.size + 1)
    rho = int(j[u - (cumulative - r) / j > 0][-1])
    tau = float((cumulative[rho - 1] - r) / rho)
    return np.maximum(lam - tau, 0.0), max(tau, 0.0)


def psd_trace_ball_eig(M, radius: float = 1.0) -> tuple[np.ndarray, np.ndarray, float]:
    """The projection of :func:`project_psd_trace_ball`, in the eigenbasis of ``M``.

    Returns ``(mu, U, tau)``: the projected eigenvalues μ in the order of ``M``'s eigenvalues
    **decreasing**, the matching orthonormal eigenvectors U (columns), and the shift τ, so that the
    projection is ``(U * mu) @ U.T``.  ``M`` is symmetrised, ``(M + Mᵀ)/2``, first.
    """
    M = np.asarray(M, dtype=np.float64)
    S = (M + M.T) / 2
    lam, U = np.linalg.eigh(S)
    lam, U = lam[::-1], U[:, ::-1]  # decreasing: the order the top-k choice breaks ties by
    mu, tau = project_onto_capped_simplex(lam, radius)
    return mu, U, tau


def project_psd_trace_ball(M, radius: float = 1.0) -> np.ndarray:
    """Frobenius-norm projection of a symmetric matrix onto K_r = {S ⪰ 0, tr S ≤ r}.

    For r = 1, K is the convex hull of {xxᵀ : ‖x‖ ≤ 1} (each such xxᵀ is in K; conversely every
    S ∈ K is Σ_i μ_i u_i u_iᵀ with μ_i ≥ 0, Σ μ_i ≤ 1, a convex combination of the u_i u_iᵀ and of
    0), so the second moment A = XᵀX/n of rows in the unit ball lies in K, and projecting a noisy A
    onto K is the projection mechanism of Nikolov, Talwar & Zhang (STOC 2013) for these queries.

    **Closed form.**  Let M = U diag(λ) Uᵀ with λ₁ ≥ … ≥ λ_d.  For S ∈ K with eigenvalues
    μ₁ ≥ … ≥ μ_d,

        ‖M − S‖_F² = ‖λ‖² + ‖μ‖² − 2 tr(MS) ≥ ‖λ‖² + ‖μ‖² − 2 Σ_i λ_i μ_i = ‖λ − μ‖²

    by von Neumann's trace inequality (tr(MS) ≤ Σ_i λ_i μ_i for decreasingly ordered spectra), with
    equality for S = U diag(μ) Uᵀ.  K constrains only the spectrum, by the permutation-invariant set
    Δ_r = {μ ≥ 0, Σ μ ≤ r}, so the projection is U diag(μ*) Uᵀ with μ* the Euclidean projection of λ
    onto Δ_r (:func:`project_onto_capped_simplex`): μ*_i = max(λ_i − τ, 0) for the τ ≥ 0 given there.
    The projection onto a closed convex set is unique, so it does not depend on which eigenbasis of
    a repeated eigenvalue is used.

    **What it does to the top-k eigenvectors.**  λ ↦ max(λ − τ, 0) is non-decreasing, so the
    projection keeps M's eigenvectors and their order.  If μ*_k > 0 (λ_k > τ) and λ_k > λ_{k+1},
    the top-k eigenspace of the projection is exactly M's.  If μ*_k = 0 the projection has rank
    below k and its top-k eigenspace is not unique (the eigenvalue 0 is repeated):
    :func:`analyze_gauss` then breaks the tie by M's order, so its released subspace is M's top-k
    subspace in every case.

    Parameters
    ----------
    M : array-like of shape (d, d)
        A symmetric matrix (symmetrised as (M + Mᵀ)/2).
    radius : float, default 1.0
        The trace bound r > 0.

    Returns
    -------
    numpy.ndarray of shape (d, d)
        The projection, symmetric positive semidefinite with trace at most r.
    """
    mu, U, _ = psd_trace_ball_eig(M, radius)
    P = (U * mu) @ U.T
    return (P + P.T) / 2


def analyze_gauss(
    X,
    k: int,
    *,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    neighbouring: str = "add-remove-one-row",
    clip: bool = False,
    calibration: str = "paper",
    postprocess: Postprocess = "none",
) -> MechanismOutput:
    """Algorithm 1 of DTTZ 2014 followed by the top-k eigenvectors of the noisy covariance.

    Parameters
    ----------
    X : array-like of shape (n, d)
        The data; every row must have L2 norm at most 1 (see ``clip``).
    k : int
        Dimension of the released subspace, 1 <= k < d.
    epsilon : float
        Privacy parameter ε > 0 (``calibration="paper"`` needs ε < 1).
    delta : float
        Privacy parameter δ in (0, 1).
    rng : numpy.random.Generator
        Source of the noise matrix E.
    neighbouring : {"add-remove-one-row", "replace-one-row"}, default "add-remove-one-row"
        The relation the guarantee refers to; replace-one-row multiplies the sensitivity by √2.
    clip : bool, default False
        Scale rows above the unit norm back onto the unit ball instead of refusing them.
    calibration : {"paper", "tight"}, default "paper"
        ``"paper"``: noise std Δ_{ε,δ} = √(2 ln(1.25/δ))/ε times the sensitivity; ``"tight"``: the
        smallest std for the exact Gaussian privacy profile.
    postprocess : {"none", "projection"}, default "none"
        ``"projection"``: the noisy matrix divided by n is projected onto K = {S ⪰ 0, tr S ≤ 1}
        (NTZ 2013's projection mechanism; :func:`project_psd_trace_ball`) and the components are the
        top-k eigenvectors of the projection, ties among its zero eigenvalues broken by the noisy
        matrix's order.  Post-processing: the guarantee is the same object as for ``"none"``, and so
        is the released subspace (the projection never reorders eigenvectors; derivation in
        :func:`project_psd_trace_ball`).  The second moment is summed over the rows sorted by their
        bytes, so that the output does not depend on the order of the rows; on rows given in that
        order the components equal ``"none"``'s bit for bit, otherwise up to the rounding of the sum.

    Returns
    -------
    MechanismOutput
        ``components`` (top-k eigenvectors of XᵀX + E), the (ε, δ) guarantee, ``release`` with
        ``status``, ``noise_scale`` (a function of ε, δ and the relation only, never of n, so it is
        public under add/remove too) and ``calibration`` (and, for ``postprocess="projection"``,
        ``postprocess``); ``diagnostics`` (not private) with ``n_clipped`` and, for the projection,
        ``projected_rank`` (the number of positive eigenvalues of the projection) and
        ``projection_threshold`` (τ, on the scale of A = XᵀX/n): both depend on n, which is not public
        under add/remove, so they are diagnostics under either relation.

    References
    ----------
    Dwork, Talwar, Thakurta and Zhang, "Analyze Gauss: optimal bounds for privacy-preserving
    principal component analysis", STOC 2014, Algorithm 1.
    Nikolov, Talwar and Zhang, "The geometry of differential privacy: the sparse and approximate
    cases", STOC 2013: the projection mechanism (noisy answers projected in ℓ₂ onto n·K).
    """
    if neighbouring not in SENSITIVITY:
        raise PrivacyInputError(
            f"neighbouring must be one of {sorted(SENSITIVITY)}, got {neighbouring!r}"
        )
    calibration = check_calibration(calibration)
    if not isinstance(postprocess, str) or postprocess not in POSTPROCESSING:
        raise PrivacyInputError(
            f"postprocess must be one of {list(POSTPROCESSING)}, got {postprocess!r}"
        )
    epsilon = check_epsilon(epsilon, upper=1.0 if calibration == "paper" else None)
    delta = check_delta(delta)
    X, n_clipped = check_data(X, clip=clip)
    d = X.shape[1]
    k = check_k(k, d)
    if calibration == "paper":
        scale = analyze_gauss_noise_scale(epsilon, delta, SENSITIVITY[neighbouring])
        note = "DTTZ 2014 Algorithm 1 (Gaussian mechanism on the covariance)"
    else:
        scale = analyze_gauss_noise_scale_tight(epsilon, delta, SENSITIVITY[neighbouring])
        note = (
            "DTTZ 2014 Algorithm 1 with the smallest noise for the exact Gaussian profile "
            "(dp-accounting)"
        )
    release = {"status": "ok", "noise_scale": scale, "calibration": calibration}
    diagnostics = {"n_clipped": n_clipped}
    if postprocess == "none":
        C = X.T @ X
        noisy = (C + C.T) / 2 + symmetric_gaussian(d, scale, rng)
        V = top_k_eigenvectors(noisy, k)
    else:
        C = _second_moment_sum_in_byte_order(X)
        noisy = (C + C.T) / 2 + symmetric_gaussian(d, scale, rng)
        # noisy/n projected onto K is (noisy projected onto n·K)/n: the same eigenvectors, taken here
        # from noisy itself; eigenvalues in noisy's decreasing order
        n = X.shape[0]
        mu, U, tau = psd_trace_ball_eig(noisy, float(n))
        # the top k of the projected eigenvalues; a stable sort keeps noisy's order among ties
        order = np.argsort(-mu, kind="stable")
        V = fix_signs(U[:, order[:k]])
        release["postprocess"] = postprocess
        diagnostics.update(
            projected_rank=int(np.count_nonzero(mu > 0)), projection_threshold=tau / n
        )
    guarantee = PrivacyGuarantee(epsilon, delta, neighbouring, note=note)
    return MechanismOutput(V, guarantee, release=release, diagnostics=diagnostics)


def _second_moment_sum_in_byte_order(X: np.ndarray) -> np.ndarray:
    """XᵀX summed over the rows sorted by their bytes: the same bits for any order of the rows."""
    Xs = canonical_rows(X)
    return Xs.T @ Xs
