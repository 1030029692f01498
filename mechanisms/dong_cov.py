"""Dong, Liang & Yi (NeurIPS 2022), "Differentially private covariance revisited": GaussCov,
SeparateCov and AdaptiveCov under ρ-zCDP, LapCov and SeparateLapCov under pure ε-DP.

Each releases an estimate Σ̃ (d x d, in :attr:`MechanismOutput.covariance`) of the second moment
Σ = XᵀX/n of rows in the unit ball, and ``components`` = the top-k eigenvectors of Σ̃
(post-processing).  The paper writes the data as a d x n matrix whose columns are the individuals;
here they are the rows of an n x d matrix, and Σ = XᵀX/n is the harness's A.

**Neighbouring relation.**  replace-one-row (n public), the relation of the paper's and of its
reference code's sensitivities (√2/n for Σ; the reference code, hkustDB/PrivateCovariance,
``adaptive/algos.py``).  Sensitivities for rows x, y with ‖x‖, ‖y‖ <= r (r = 1 but for AdaptiveCov's
clipped data, where r = r̃), D = (xxᵀ − yyᵀ)/n:

* the upper triangle of Σ, L2: ‖upper(D)‖₂ <= ‖D‖_F = sqrt(‖x‖⁴ + ‖y‖⁴ − 2(x·y)²)/n <= √2 r²/n
  (:func:`mechanisms.calibration.outer_product_sensitivity`), attained by x = r e₁, y = r e₂;
* the eigenvalue vector λ(Σ) (sorted), L2: ‖λ(Σ) − λ(Σ′)‖₂ <= ‖D‖_F <= √2 r²/n (Hoffman–Wielandt);
  L1: ‖λ(Σ) − λ(Σ′)‖₁ <= ‖D‖_* <= (‖x‖² + ‖y‖²)/n <= 2r²/n (Lidskii; nuclear norm);
* the upper triangle of Σ, L1: Σ_{i<=j} |D_ij| <= ‖vec D‖₁ <= d ‖D‖_F <= √2 d r²/n (Cauchy–Schwarz
  over the d² entries): the constant of the reference code's LapCov, used here;
* the trace, |‖x‖² − ‖y‖²|/n <= r²/n; AdaptiveCov's SVT queries, 1 (see :func:`adaptive_cov`).

Under add-remove-one-row (n private) these bounds do not hold as stated (Σ = XᵀX/n changes in every
entry when n does); the mechanisms declare replace-one-row and are run only under it.

**Privacy units.**  A Gaussian release of L2 sensitivity Δ and std σ is Δ²/(2σ²)-zCDP (Bun & Steinke
2016, Prop. 1.6); zCDP composes by adding ρ (Lemma 2.3); pure ε-DP implies ε²/2-zCDP (Prop. 1.4).
A Laplace release of L1 sensitivity Δ₁ and scale Δ₁/ε is ε-DP.  The zCDP mechanisms take the
harness's (ε, δ) and run at the largest ρ that certifies it
(:func:`mechanisms.calibration.zcdp_rho_tight`), or at an explicit ``rho``; the guarantee records ρ
and the (ε, δ) it certifies (docs/calibration.md).

Where the reference code differs from the algorithms as stated here (its SVD of an indefinite noisy
matrix, its clipping bins, its tuning constants): docs/covariance.md.
"""

from __future__ import annotations

import math

import numpy as np

from ._base import (
    MechanismOutput,
    PrivacyGuarantee,
    PrivacyInputError,
    check_data,
    check_epsilon,
    check_k,
)
from .calibration import outer_product_sensitivity, zcdp_budget
from .linalg import canonical_rows, symmetric_gaussian, top_k_eigenvectors

RELATION = "replace-one-row"

PAPER = 'Dong, Liang & Yi, "Differentially private covariance revisited", NeurIPS 2022'


# ---------------------------------------------------------------------------------------------
# noise scales (module level: the audit's known-broken variants patch them here)
# ---------------------------------------------------------------------------------------------


def gauss_cov_noise_scale(n: int, rho: float, radius: float = 1.0) -> float:
    """Std of the i.i.d. upper-triangle Gaussian noise on Σ for ρ-zCDP: σ = Δ/sqrt(2ρ) with
    Δ = √2 r²/n (replace-one-row), i.e. σ = r²/(n sqrt(ρ)) (GaussCov)."""
    return outer_product_sensitivity(RELATION) * radius**2 / n / math.sqrt(2.0 * rho)


def eigenvalue_noise_scale(n: int, rho: float, radius: float = 1.0) -> float:
    """Std of the i.i.d. Gaussian noise on the d eigenvalues of Σ for ρ-zCDP: Δ/sqrt(2ρ) with
    Δ = √2 r²/n (Hoffman–Wielandt, replace-one-row) (SeparateCov's eigenvalue step)."""
    return math.sqrt(2.0) * radius**2 / n / math.sqrt(2.0 * rho)


def lap_cov_noise_scale(n: int, d: int, epsilon: float, radius: float = 1.0) -> float:
    """Scale of the i.i.d. upper-triangle Laplace noise on Σ for ε-DP: Δ₁/ε with Δ₁ = √2 d r²/n
    (LapCov; the reference code's constant, a valid L1 bound: module docstring)."""
    return math.sqrt(2.0) * d * radius**2 / n / epsilon


def lap_eigenvalue_noise_scale(n: int, epsilon: float, radius: float = 1.0) -> float:
    """Scale of the i.i.d. Laplace noise on the d eigenvalues for ε-DP: Δ₁/ε with Δ₁ = 2r²/n
    (Lidskii, replace-one-row) (SeparateLapCov's eigenvalue step)."""
    return 2.0 * radius**2 / n / epsilon


def trace_noise_scale(n: int, rho: float) -> float:
    """Std of the Gaussian noise on tr(Σ) for ρ-zCDP: Δ/sqrt(2ρ), Δ = 1/n (AdaptiveCov step 1)."""
    return 1.0 / n / math.sqrt(2.0 * rho)


def svt_threshold_scale(epsilon: float) -> float:
    """Laplace scale 2/ε of AboveThreshold's noisy threshold, for queries of sensitivity 1
    (Dwork & Roth 2014, Algorithm 1 and Theorem 3.23); each query's noise has twice this scale."""
    return 2.0 / epsilon


# ---------------------------------------------------------------------------------------------
# shared steps
# ---------------------------------------------------------------------------------------------


def _second_moment(X: np.ndarray) -> np.ndarray:
    A = X.T @ X / X.shape[0]
    return (A + A.T) / 2


def _prepare(X, k, clip):
    X, n_clipped = check_data(X, clip=clip)
    n, d = X.shape
    k = check_k(k, d)
    X = canonical_rows(X)
    return X, n, d, k, n_clipped


def _eig_desc(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending) and eigenvectors of symmetric M, signs fixed as top_k_eigenvectors
    does (largest-magnitude entry positive)."""
    w, V = np.linalg.eigh((M + M.T) / 2)
    w, V = w[::-1], V[:, ::-1]
    idx = np.argmax(np.abs(V), axis=0)
    s = np.sign(V[idx, np.arange(V.shape[1])])
    s[s == 0] = 1
    return w, V * s


def _clamp_eigenvalues(M: np.ndarray, upper: float) -> np.ndarray:
    """Σ̃ with its eigenvalues clamped to [0, upper] (post-processing: Σ is PSD with λ <= r²)."""
    w, V = _eig_desc(M)
    return (V * np.clip(w, 0.0, upper)) @ V.T


def _gauss_step(A, n, d, rho, rng, radius=1.0):
    """GaussCov's release: Σ + E, E symmetric with upper-triangle entries N(0, σ²)."""
    sigma = gauss_cov_noise_scale(n, rho, radius)
    return A + symmetric_gaussian(d, sigma, rng), sigma


def _separate_step(A, n, d, rho, rng, radius=1.0):
    """SeparateCov's release: eigenvectors P̃ of GaussCov at ρ/2, eigenvalues λ(Σ) + N(0, τ²) at ρ/2,
    Σ̃ = P̃ diag(λ̃) P̃ᵀ (the i-th largest noisy eigenvalue with the i-th eigenvector of the noisy
    matrix)."""
    noisy, sigma = _gauss_step(A, n, d, rho / 2.0, rng, radius)
    _, P = _eig_desc(noisy)
    lam = np.linalg.eigvalsh(A)[::-1]
    tau = eigenvalue_noise_scale(n, rho / 2.0, radius)
    lam_t = lam + tau * rng.standard_normal(d)
    return (P * lam_t) @ P.T, sigma, tau


def _laplace_symmetric(d: int, scale: float, rng: np.random.Generator) -> np.ndarray:
    """Symmetric d x d matrix whose entries i <= j are i.i.d. Laplace(0, scale)."""
    L = np.triu(rng.laplace(0.0, scale, (d, d)))
    return L + np.triu(L, 1).T


def _zcdp_guarantee(rho, epsilon, delta, note):
    return PrivacyGuarantee(epsilon, delta, RELATION, note=note, rho=rho)


def _output(cov, k, guarantee, release, diagnostics):
    cov = (cov + cov.T) / 2
    V = top_k_eigenvectors(cov, k)
    return MechanismOutput(
        V, guarantee, release={"status": "ok", **release}, diagnostics=diagnostics, covariance=cov
    )


# ---------------------------------------------------------------------------------------------
# the mechanisms
# ---------------------------------------------------------------------------------------------


def gauss_cov(
    X,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float | None = None,
    delta: float = 1e-5,
    rho: float | None = None,
    clip: bool = False,
) -> MechanismOutput:
    """GaussCov: the Gaussian mechanism on Σ under ρ-zCDP (the baseline of Dong, Liang & Yi 2022,
    section 1; reference code ``GaussCov``).

    Σ̃ = Σ + E, E symmetric with i.i.d. N(0, σ²) upper-triangle entries, σ = Δ/sqrt(2ρ) with
    Δ = √2/n, the L2 sensitivity of Σ's upper triangle under replace-one-row
    (:func:`gauss_cov_noise_scale`; module docstring).  ρ-zCDP (Bun & Steinke 2016, Prop. 1.6).

    Parameters
    ----------
    X : array-like of shape (n, d) or PreparedData
        Rows of L2 norm at most 1 (see ``clip``).
    k : int
        Number of released eigenvectors, 1 <= k < d.
    rng : numpy.random.Generator
        Source of the noise.
    epsilon, delta : float
        The (ε, δ) to certify: the mechanism runs at the largest ρ whose conversion certifies it
        (:func:`mechanisms.calibration.zcdp_rho_tight`).
    rho : float, optional
        Run at this ρ instead; the recorded ε is then the one ρ certifies at ``delta``.
    clip : bool, default False
        Scale rows above the unit norm onto the unit ball instead of refusing them.

    Returns
    -------
    MechanismOutput
        ``covariance`` Σ̃ and ``components`` (its top-k eigenvectors), both covered by the guarantee
        (ρ-zCDP and the (ε, δ) it certifies, replace-one-row); ``release``: ``status``, ``rho``,
        ``noise_scale`` σ (a function of n and ρ; n is public under replace-one-row); diagnostics
        (not private): ``n_clipped``.

    References
    ----------
    W. Dong, Y. Liang and K. Yi, "Differentially private covariance revisited", NeurIPS 2022.
    M. Bun and T. Steinke, "Concentrated differential privacy", TCC 2016.
    """
    rho, epsilon, delta = zcdp_budget(epsilon, delta, rho)
    X, n, d, k, n_clipped = _prepare(X, k, clip)
    cov, sigma = _gauss_step(_second_moment(X), n, d, rho, rng)
    g = _zcdp_guarantee(rho, epsilon, delta, f"{PAPER}: GaussCov, rho-zCDP")
    return _output(cov, k, g, {"rho": rho, "noise_scale": sigma}, {"n_clipped": n_clipped})


def separate_cov(
    X,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float | None = None,
    delta: float = 1e-5,
    rho: float | None = None,
    clip: bool = False,
) -> MechanismOutput:
    """SeparateCov (Dong, Liang & Yi 2022, section 1.1: eigenvectors and eigenvalues estimated
    separately; reference code ``SeparateCov``) under ρ-zCDP.

    1. ρ/2: the eigenvectors P̃ of GaussCov's Σ + E (σ = :func:`gauss_cov_noise_scale` (n, ρ/2));
    2. ρ/2: the eigenvalues λ̃ = λ(Σ) + N(0, τ² I), τ = :func:`eigenvalue_noise_scale` (n, ρ/2)
       (L2 sensitivity √2/n, Hoffman–Wielandt);
    3. Σ̃ = P̃ diag(λ̃) P̃ᵀ, both sorted in decreasing order (post-processing).

    ρ/2 + ρ/2 = ρ (composition, Bun & Steinke 2016, Lemma 2.3).

    Parameters
    ----------
    X : array-like of shape (n, d) or PreparedData
        Rows of L2 norm at most 1 (see ``clip``).
    k : int
        Number of released eigenvectors, 1 <= k < d.
    rng : numpy.random.Generator
        Source of the noise (the matrix noise first, then the eigenvalue noise).
    epsilon, delta : float
        The (ε, δ) to certify: the mechanism runs at the largest ρ whose conversion certifies it
        (:func:`mechanisms.calibration.zcdp_rho_tight`), split ρ/2 + ρ/2.
    rho : float, optional
        Run at this ρ instead; the recorded ε is then the one ρ certifies at ``delta``.
    clip : bool, default False
        Scale rows above the unit norm onto the unit ball instead of refusing them.

    Returns
    -------
    MechanismOutput
        ``covariance`` Σ̃ = P̃ diag(λ̃) P̃ᵀ and ``components`` (its top-k eigenvectors), both covered
        by the guarantee (ρ-zCDP and the (ε, δ) it certifies, replace-one-row); ``release``:
        ``status``, ``rho``, ``noise_scale`` σ (the matrix step's std) and
        ``eigenvalue_noise_scale`` τ (functions of n and ρ: public under replace-one-row);
        diagnostics (not private): ``n_clipped``.

    References
    ----------
    W. Dong, Y. Liang and K. Yi, "Differentially private covariance revisited", NeurIPS 2022.
    M. Bun and T. Steinke, "Concentrated differential privacy", TCC 2016.
    """
    rho, epsilon, delta = zcdp_budget(epsilon, delta, rho)
    X, n, d, k, n_clipped = _prepare(X, k, clip)
    cov, sigma, tau = _separate_step(_second_moment(X), n, d, rho, rng)
    g = _zcdp_guarantee(rho, epsilon, delta, f"{PAPER}: SeparateCov, rho-zCDP")
    release = {"rho": rho, "noise_scale": sigma, "eigenvalue_noise_scale": tau}
    return _output(cov, k, g, release, {"n_clipped": n_clipped})


def lap_cov(
    X,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float,
    clip: bool = False,
) -> MechanismOutput:
    """LapCov: the Laplace mechanism on Σ under pure ε-DP (Dong, Liang & Yi 2022, the pure-DP
    extension, their Appendix I; reference code ``LapCov``).

    Σ̃ = Σ + L, L symmetric with i.i.d. Laplace(0, b) upper-triangle entries, b = Δ₁/ε with
    Δ₁ = √2 d/n, an L1 bound on the change of Σ's upper triangle under replace-one-row
    (:func:`lap_cov_noise_scale`; module docstring).  (ε, 0)-DP.

    Parameters
    ----------
    X : array-like of shape (n, d) or PreparedData
        Rows of L2 norm at most 1 (see ``clip``).
    k : int
        Number of released eigenvectors, 1 <= k < d.
    rng : numpy.random.Generator
        Source of the noise.
    epsilon : float
        The pure-DP budget ε > 0 (δ = 0).
    clip : bool, default False
        Scale rows above the unit norm onto the unit ball instead of refusing them.

    Returns
    -------
    MechanismOutput
        ``covariance`` Σ̃ and ``components`` (its top-k eigenvectors), both covered by the guarantee
        ((ε, 0)-DP, replace-one-row); ``release``: ``status``, ``noise_scale`` b (a function of n,
        d and ε: public under replace-one-row); diagnostics (not private): ``n_clipped``.

    References
    ----------
    W. Dong, Y. Liang and K. Yi, "Differentially private covariance revisited", NeurIPS 2022.
    C. Dwork, F. McSherry, K. Nissim and A. Smith, "Calibrating noise to sensitivity in private
    data analysis", TCC 2006.
    """
    epsilon = check_epsilon(epsilon)
    X, n, d, k, n_clipped = _prepare(X, k, clip)
    b = lap_cov_noise_scale(n, d, epsilon)
    cov = _second_moment(X) + _laplace_symmetric(d, b, rng)
    g = PrivacyGuarantee(epsilon, 0.0, RELATION, note=f"{PAPER}: LapCov, pure epsilon-DP")
    return _output(cov, k, g, {"noise_scale": b}, {"n_clipped": n_clipped})


def separate_lap_cov(
    X,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float,
    clip: bool = False,
) -> MechanismOutput:
    """SeparateLapCov: SeparateCov under pure ε-DP (Dong, Liang & Yi 2022, Appendix I; reference code
    ``SeparateLapCov``).

    1. ε/2: the eigenvectors of LapCov's Σ + L (b = :func:`lap_cov_noise_scale` (n, d, ε/2));
    2. ε/2: λ̃ = λ(Σ) + Laplace(0, c)^d, c = :func:`lap_eigenvalue_noise_scale` (n, ε/2)
       (L1 sensitivity 2/n, Lidskii);
    3. Σ̃ = P̃ diag(λ̃) P̃ᵀ, both sorted in decreasing order.

    (ε, 0)-DP by basic composition (ε/2 + ε/2).

    Parameters
    ----------
    X : array-like of shape (n, d) or PreparedData
        Rows of L2 norm at most 1 (see ``clip``).
    k : int
        Number of released eigenvectors, 1 <= k < d.
    rng : numpy.random.Generator
        Source of the noise (the matrix noise first, then the eigenvalue noise).
    epsilon : float
        The pure-DP budget ε > 0 (δ = 0), split ε/2 + ε/2.
    clip : bool, default False
        Scale rows above the unit norm onto the unit ball instead of refusing them.

    Returns
    -------
    MechanismOutput
        ``covariance`` Σ̃ = P̃ diag(λ̃) P̃ᵀ and ``components`` (its top-k eigenvectors), both covered
        by the guarantee ((ε, 0)-DP, replace-one-row); ``release``: ``status``, ``noise_scale`` b
        (the matrix step's Laplace scale) and ``eigenvalue_noise_scale`` c (functions of n, d and
        ε: public under replace-one-row); diagnostics (not private): ``n_clipped``.

    References
    ----------
    W. Dong, Y. Liang and K. Yi, "Differentially private covariance revisited", NeurIPS 2022.
    C. Dwork, F. McSherry, K. Nissim and A. Smith, "Calibrating noise to sensitivity in private
    data analysis", TCC 2006.
    """
    epsilon = check_epsilon(epsilon)
    X, n, d, k, n_clipped = _prepare(X, k, clip)
    A = _second_moment(X)
    b = lap_cov_noise_scale(n, d, epsilon / 2.0)
    _, P = _eig_desc(A + _laplace_symmetric(d, b, rng))
    c = lap_eigenvalue_noise_scale(n, epsilon / 2.0)
    lam_t = np.linalg.eigvalsh(A)[::-1] + rng.laplace(0.0, c, d)
    cov = (P * lam_t) @ P.T
    g = PrivacyGuarantee(epsilon, 0.0, RELATION, note=f"{PAPER}: SeparateLapCov, pure epsilon-DP")
    release = {"noise_scale": b, "eigenvalue_noise_scale": c}
    return _output(cov, k, g, release, {"n_clipped": n_clipped})


# ---------------------------------------------------------------------------------------------
# AdaptiveCov
# ---------------------------------------------------------------------------------------------


def _gaussian_norm_bound(d: int, beta: float) -> float:
    """sqrt(d + 2 sqrt(d ln(1/β)) + 2 ln(1/β)): ‖N(0, I_d)‖ stays below it w.p. 1 − β (Laurent &
    Massart 2000, Lemma 1)."""
    L = math.log(1.0 / beta)
    return math.sqrt(d + 2.0 * math.sqrt(d * L) + 2.0 * L)


def _wigner_spectral_bound(d: int, beta: float) -> float:
    """A bound on ‖W‖₂ of a d x d symmetric Gaussian (Wigner) matrix holding w.p. 1 − β: the
    reference code's ``wigner_gauss_tailbound`` (Bandeira & van Handel 2016, Cor. 3.9 with
    θ = min((ln d/d)^0.3, 1/2), plus the Gaussian concentration term sqrt(2 ln(2/β))).  Used only to
    choose AdaptiveCov's clipping radius and method, never in the privacy accounting."""
    theta = min((math.log(d) / d) ** 0.3, 0.5) if d > 1 else 0.5
    b = (1 + theta) * (
        2 * math.sqrt(d) + 6 * math.sqrt(math.log(max(d, 2))) / math.sqrt(math.log1p(theta))
    )
    return b + math.sqrt(2.0 * math.log(2.0 / beta))


def _wigner_frobenius_bound(d: int, beta: float) -> float:
    """A bound on ‖W‖_F of a d x d Wigner matrix w.p. 1 − β: the reference code's
    ``wigner_gauss_fnormbound`` (chi-square concentration of its d² entries).  Utility only."""
    L = math.log(2.0 / beta)
    return math.sqrt(d * d + 2.0 * math.sqrt(d * L) * (1 + math.sqrt(2 * (d - 1))) + 6 * L)


#: AdaptiveCov's clipping radii are 2^{1−j} for j = 0 .. ADAPTIVE_LEVELS − 1 at most (the reference
#: code's bins down to 2⁻⁷⁹, about 10⁻²⁴)
ADAPTIVE_LEVELS = 80


def _norm_bins(norms: np.ndarray, t: int) -> np.ndarray:
    """counts[l] = number of rows with norm in (2^{−l}, 2^{1−l}], l = 1 .. t − 1 (counts[0] = 0; rows
    of norm 0 or below 2^{1−t} are in no bin).  A row's bin is a function of its own norm only."""
    counts = np.zeros(t)
    pos = norms > 0
    l = np.ceil(-np.log2(norms[pos])).astype(np.int64)
    # an exact power of two 2^{−m} has ceil(m) = m but lies in (2^{−m−1}, 2^{−m}]: bin m + 1
    l = np.where(norms[pos] > 2.0 ** (-l.astype(float)), l, l + 1)
    l = np.maximum(l, 1)
    l = l[l < t]
    np.add.at(counts, l, 1.0)
    return counts


def _svt_queries(counts, n, t, noise_of_level):
    """AboveThreshold's queries q_j, j = 0 .. t − 1: an upper estimate of the clipping bias of radius
    2^{−j}, in units of 1/n, minus the predicted noise of the covariance step at that radius.

    q_j = Σ_{l <= j} counts[l]·(4^{1−l} − 4^{−j}) − n·noise(j): a row in bin l contributes
    4^{1−l} − 4^{−j} ∈ [0, 1) when l <= j (its squared norm's bin top minus the clipped squared
    norm), 0 otherwise; so replacing one row changes q_j by less than 1 (sensitivity 1)."""
    parts = 4.0 ** (1 - np.arange(t))
    q = np.empty(t)
    for j in range(t):
        bias = float(np.sum(counts[: j + 1] * (parts[: j + 1] - 4.0 ** (-j))))
        q[j] = bias - n * noise_of_level(j)
    return q


def adaptive_cov(
    X,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float | None = None,
    delta: float = 1e-5,
    rho: float | None = None,
    beta: float = 0.1,
    clip: bool = False,
) -> MechanismOutput:
    """AdaptiveCov (Dong, Liang & Yi 2022, section 1.2, the tail-sensitive algorithm; reference code
    ``AdaptiveCov``) under ρ-zCDP: clip the rows at a privately chosen radius r̃, then run GaussCov or
    SeparateCov, whichever is predicted to err less, on the clipped rows.

    1. ρ/8: the trace, t̃ = tr(Σ) + N(0, s²), s = :func:`trace_noise_scale` (n, ρ/8) (sensitivity
       1/n), raised by its (1 − β/8)-confidence margin sqrt(8 ln(8/β)/ρ)/n and kept in [10⁻¹⁶, 1]
       (post-processing);
    2. ρ/8: AboveThreshold (Dwork & Roth 2014, Algorithm 1) at ε_s = sqrt(2·ρ/8) = sqrt(ρ)/2 (ε_s-DP,
       so ε_s²/2 = ρ/8-zCDP, Bun & Steinke Prop. 1.4) over the queries of :func:`_svt_queries`
       (sensitivity 1), threshold 0: the first level j whose clipping bias exceeds the predicted
       noise; r̃ = min(2^{1−j}, 1);
    3. 3ρ/4: each row clipped to norm r̃, then GaussCov (if its predicted error is at most
       SeparateCov's) or SeparateCov, at sensitivities scaled by r̃², the result's eigenvalues
       clamped to [0, r̃²] (post-processing).

    ρ/8 + ρ/8 + 3ρ/4 = ρ.  The error predictions that choose the radius and the method use the
    reference code's bounds and its constants (:func:`_wigner_spectral_bound`, ...); they are
    functions of public values and of the private t̃ and j only, so they never enter the accounting.

    Parameters
    ----------
    X : array-like of shape (n, d) or PreparedData
        Rows of L2 norm at most 1 (see ``clip``).
    k : int
        Number of released eigenvectors, 1 <= k < d.
    rng : numpy.random.Generator
        Source of the noise (the trace's, AboveThreshold's, then the covariance step's).
    epsilon, delta : float
        The (ε, δ) to certify: the mechanism runs at the largest ρ whose conversion certifies it
        (:func:`mechanisms.calibration.zcdp_rho_tight`), split ρ/8 + ρ/8 + 3ρ/4.
    rho : float, optional
        Run at this ρ instead; the recorded ε is then the one ρ certifies at ``delta``.
    beta : float, default 0.1
        Failure probability of the error predictions that choose the radius and the method
        (utility only: it never enters the accounting), in (0, 1).
    clip : bool, default False
        Scale rows above the unit norm onto the unit ball instead of refusing them.

    Returns
    -------
    MechanismOutput
        ``covariance`` Σ̃ (eigenvalues in [0, r̃²]) and ``components`` (its top-k eigenvectors), both
        covered by the guarantee (ρ-zCDP and the (ε, δ) it certifies, replace-one-row);
        ``release``: ``status``, ``rho``, ``trace`` t̃ (the noisy, raised trace of step 1),
        ``level`` j and ``radius`` r̃ (AboveThreshold's choice), ``method`` ("gauss" or
        "separate", a function of t̃ and j), ``noise_scale`` σ (and ``eigenvalue_noise_scale`` τ
        for "separate", functions of n, ρ and r̃), all covered by the guarantee; diagnostics (not
        private): ``n_clipped`` (rows scaled onto the unit ball), ``n_clipped_radius`` (rows
        above r̃).

    References
    ----------
    W. Dong, Y. Liang and K. Yi, "Differentially private covariance revisited", NeurIPS 2022.
    C. Dwork and A. Roth, "The algorithmic foundations of differential privacy", Foundations and
    Trends in Theoretical Computer Science 9(3–4), 2014 (AboveThreshold, Algorithm 1).
    M. Bun and T. Steinke, "Concentrated differential privacy", TCC 2016.
    """
    rho, epsilon, delta = zcdp_budget(epsilon, delta, rho)
    try:
        beta = float(beta)
    except (TypeError, ValueError):
        raise PrivacyInputError(f"beta must be a number in (0, 1), got {beta!r}") from None
    if not 0.0 < beta < 1.0:
        raise PrivacyInputError(f"beta must be a number in (0, 1), got {beta!r}")
    X, n, d, k, n_clipped = _prepare(X, k, clip)
    sq = np.einsum("ij,ij->i", X, X)
    norms = np.sqrt(sq)

    # 1. the trace (ρ/8): tr(Σ) = (1/n) Σ ‖x_i‖²
    tr = float(np.sum(sq)) / n + trace_noise_scale(n, rho / 8.0) * float(rng.standard_normal())
    tr = min(max(tr + math.sqrt(8.0 / rho * math.log(8.0 / beta)) / n, 1e-16), 1.0)

    # 2. the clipping level by AboveThreshold (ρ/8)
    rho1, beta1 = 0.75 * rho, 0.75 * beta
    eta = _gaussian_norm_bound(d, beta1 / 2.0)
    nu = _wigner_spectral_bound(d, beta1 / 2.0)
    omega = _wigner_frobenius_bound(d, beta1)
    # predicted Frobenius errors at radius 1 (the reference code's, its /6 included: docs)
    sep1 = 2**1.25 * math.sqrt(tr) / math.sqrt(n) / rho1**0.25 * math.sqrt(nu) / 6.0
    sep2 = math.sqrt(2.0) * eta / math.sqrt(rho1) / n
    gauss1 = omega / math.sqrt(rho1) / n
    t = 1 + min(d * n, ADAPTIVE_LEVELS - 1)

    def noise_of_level(j):  # radius 2^{−j}
        return min(4.0**-j * gauss1, 2.0**-j * sep1 + 4.0**-j * sep2)

    q = _svt_queries(_norm_bins(norms, t), n, t, noise_of_level)
    eps_s = math.sqrt(2.0 * rho / 8.0)
    b = svt_threshold_scale(eps_s)
    threshold = float(rng.laplace(0.0, b))
    nu_q = rng.laplace(0.0, 2.0 * b, t)  # drawn whole: the stream's use does not depend on j
    above = np.nonzero(q + nu_q >= threshold)[0]
    j = int(above[0]) if above.size else t
    radius = min(2.0 ** (1 - j), 1.0)

    # 3. the covariance of the clipped rows (3ρ/4)
    over = norms > radius
    Xc = X
    if over.any():
        Xc = X.copy()
        Xc[over] *= (radius / norms[over])[:, None]
    Ac = _second_moment(Xc)
    sep = 2.0**-j * sep1 + 4.0**-j * sep2
    gauss = 4.0**-j * gauss1
    release = {"rho": rho, "radius": radius, "level": j, "trace": tr}
    if sep >= gauss:
        cov, sigma = _gauss_step(Ac, n, d, rho1, rng, radius)
        release.update(method="gauss", noise_scale=sigma)
    else:
        cov, sigma, tau = _separate_step(Ac, n, d, rho1, rng, radius)
        release.update(method="separate", noise_scale=sigma, eigenvalue_noise_scale=tau)
    cov = _clamp_eigenvalues(cov, radius**2)
    g = _zcdp_guarantee(rho, epsilon, delta, f"{PAPER}: AdaptiveCov, rho-zCDP")
    diagnostics = {"n_clipped": n_clipped, "n_clipped_radius": int(over.sum())}
    return _output(cov, k, g, release, diagnostics)
