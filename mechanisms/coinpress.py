"""CoinPress covariance estimation: Biswas, Dong, Kamath & Ullman (NeurIPS 2020), "CoinPress:
practical private mean and covariance estimation", the iterative covariance algorithm (one private
step MCovStep repeated, then the final estimate), under ρ-zCDP.

**The paper's model.**  n i.i.d. samples of N(0, Σ) with a public bound I ⪯ Σ ⪯ κI (after a known
rescaling); each step whitens the samples by the current estimate A (W_i = A x_i), clips W_i to the
ball of radius γ that n Gaussian samples stay in with probability 1 − β, adds symmetric Gaussian
noise to their second moment, projects it onto the PSD cone, and shrinks the ellipsoid:
A ← (Z + ηI)^{−1/2} A.  Privacy holds for **every** input (the clipping bounds each row's
contribution whatever the data); accuracy only for Gaussian data.

**Neighbouring relation and sensitivity.**  replace-one-row (n public), the relation of the
paper's Gaussian noise γ²/(n sqrt(ρ)) (as in its reference code, twistedcubic/coin-press,
``cov_est_step``).  In a step with clipped rows ŵ, ŵ′ (‖ŵ‖, ‖ŵ′‖ <= γ), the second moment
(1/n) Σ ŵŵᵀ changes by D = (ŵŵᵀ − ŵ′ŵ′ᵀ)/n, ‖upper(D)‖₂ <= ‖D‖_F <= √2 γ²/n
(:func:`mechanisms.calibration.outer_product_sensitivity` scaled by γ²), whatever A is; noise std
σ = Δ/sqrt(2ρ_s) = γ²/(n sqrt(ρ_s)) makes step s ρ_s-zCDP (Bun & Steinke 2016, Prop. 1.6).  A is a
function of earlier releases only, so the steps compose adaptively: Σ_s ρ_s = ρ (Lemma 2.3).

**On the harness's unit-ball data.**  Rows with ‖x‖ <= 1 have second moment Σ = XᵀX/n with
λ_max(Σ) <= tr(Σ) = (1/n) Σ ‖x_i‖² <= 1, so Σ ⪯ u·I with u = 1 is a public bound from the
unit-ball assumption alone: the initial ellipsoid is A₀ = I/sqrt(u) = I.  No lower bound on Σ is
available (the data may be rank-deficient); ηI keeps every U invertible.  The estimated matrix is
the uncentred second moment, the harness's A (the paper's zero-mean model).

Where this follows the paper's text and where its reference code differs: docs/covariance.md.
"""

from __future__ import annotations

import math

import numpy as np

from ._base import MechanismOutput, PrivacyGuarantee, PrivacyInputError, check_data, check_k
from .calibration import outer_product_sensitivity, zcdp_budget
from .dong_cov import _wigner_spectral_bound
from .linalg import canonical_rows, symmetric_gaussian, top_k_eigenvectors

RELATION = "replace-one-row"
PAPER = 'Biswas, Dong, Kamath & Ullman, "CoinPress", NeurIPS 2020'

#: Σ ⪯ COVARIANCE_BOUND · I for rows in the unit ball (module docstring): the initial ellipsoid
COVARIANCE_BOUND = 1.0


def coinpress_budget_split(rho: float, iterations: int) -> list[float]:
    """ρ_s per step: the last step 3ρ/4, the t − 1 earlier ones (ρ/4)/(t − 1) each; ρ for t = 1
    (the split of the CoinPress experiments, their reference code's ``cov_estimation.py``)."""
    if iterations == 1:
        return [rho]
    return [rho / 4.0 / (iterations - 1)] * (iterations - 1) + [0.75 * rho]


def coinpress_clip_radius(n: int, d: int, beta: float) -> float:
    """γ = sqrt(d + 2 sqrt(d ln(n/β)) + 2 ln(n/β)): each of n samples of N(0, I_d) has norm below γ
    with probability 1 − β/n (Laurent & Massart 2000, Lemma 1), so all n do w.p. 1 − β (union
    bound)."""
    L = math.log(n / beta)
    return math.sqrt(d + 2.0 * math.sqrt(d * L) + 2.0 * L)


def coinpress_noise_scale(n: int, gamma: float, rho_step: float) -> float:
    """Std of a step's upper-triangle Gaussian noise: Δ/sqrt(2ρ_s), Δ = √2 γ²/n (replace-one-row),
    i.e. γ²/(n sqrt(ρ_s))."""
    return outer_product_sensitivity(RELATION) * gamma**2 / n / math.sqrt(2.0 * rho_step)


def coinpress_eta(n: int, d: int, beta: float, sigma: float) -> float:
    """η of a step: the sampling error 2(√(d/n) + √(2 ln(2/β)/n)) + (√(d/n) + √(2 ln(2/β)/n))²
    (Wainwright 2019, Thm 6.1, the paper's Lemma C.3 with ln(2/β): the paper prints ln(β/2), which
    is negative for β < 1; coin-press issue #5) plus a bound on the spectral norm of the step's noise
    matrix, σ times the Wigner bound of :func:`mechanisms.dong_cov._wigner_spectral_bound` (β).
    Utility only: η shrinks the ellipsoid and never enters the accounting."""
    a = math.sqrt(d / n) + math.sqrt(2.0 * math.log(2.0 / beta) / n)
    return 2.0 * a + a * a + sigma * _wigner_spectral_bound(d, beta)


def _psd(M: np.ndarray) -> np.ndarray:
    w, V = np.linalg.eigh((M + M.T) / 2)
    return (V * np.maximum(w, 0.0)) @ V.T


def _inv_sqrt(M: np.ndarray) -> np.ndarray:
    w, V = np.linalg.eigh((M + M.T) / 2)
    return (V / np.sqrt(w)) @ V.T


def coinpress_cov(
    X,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float | None = None,
    delta: float = 1e-5,
    rho: float | None = None,
    iterations: int = 2,
    beta: float = 0.1,
    clip: bool = False,
) -> MechanismOutput:
    """CoinPress's iterative covariance estimate under ρ-zCDP, then its top-k eigenvectors.

    For s = 1 .. t (ρ_s of :func:`coinpress_budget_split`; A₁ = I, module docstring):

    1. W_i = A_s x_i, clipped to norm γ (:func:`coinpress_clip_radius`);
    2. Z_s = (1/n) Σ ŵ_i ŵ_iᵀ + E_s, E_s symmetric with N(0, σ_s²) upper-triangle entries,
       σ_s = :func:`coinpress_noise_scale` (n, γ, ρ_s); Z_s ← its projection onto the PSD cone;
    3. if s < t: A_{s+1} = (Z_s + ηI)^{−1/2} A_s (η = :func:`coinpress_eta`).

    The estimate is Σ̃ = A_t⁻¹ Z_t A_t⁻ᵀ (post-processing).  When ‖A_s‖₂ <= γ no unit-ball row can be
    clipped (‖A_s x‖ <= ‖A_s‖₂), and Σ ŵŵᵀ = A_s (XᵀX) A_sᵀ is computed from XᵀX directly.

    Parameters
    ----------
    X : array-like of shape (n, d) or PreparedData
        Rows of L2 norm at most 1 (see ``clip``).
    k : int
        Number of released eigenvectors, 1 <= k < d.
    rng : numpy.random.Generator
        Source of the noise.
    epsilon, delta : float
        The (ε, δ) to certify (the largest ρ that does, :func:`mechanisms.calibration.zcdp_rho_tight`).
    rho : float, optional
        Run at this ρ instead; the recorded ε is the one it certifies at ``delta``.
    iterations : int, default 2
        t, the number of steps (the CoinPress experiments' t = 2 default).
    beta : float, default 0.1
        Failure probability of the clipping radius and of η (utility only), in (0, 1).
    clip : bool, default False
        Scale rows above the unit norm onto the unit ball instead of refusing them.

    Returns
    -------
    MechanismOutput
        ``covariance`` Σ̃ and ``components``, covered by the guarantee (ρ-zCDP and the (ε, δ) it
        certifies, replace-one-row); ``release``: ``status``, ``rho``, ``rho_steps``, ``gamma``,
        ``noise_scales`` (functions of n, d, β and ρ: public); diagnostics (not private):
        ``n_clipped`` (unit ball), ``n_clipped_gamma`` (rows clipped at γ, summed over the steps).

    References
    ----------
    S. Biswas, Y. Dong, G. Kamath and J. Ullman, "CoinPress: practical private mean and covariance
    estimation", NeurIPS 2020.
    """
    rho, epsilon, delta = zcdp_budget(epsilon, delta, rho)
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)):
        raise PrivacyInputError(f"iterations must be an integer >= 1, got {iterations!r}")
    if iterations < 1:
        raise PrivacyInputError(f"iterations must be an integer >= 1, got {iterations!r}")
    try:
        beta = float(beta)
    except (TypeError, ValueError):
        raise PrivacyInputError(f"beta must be a number in (0, 1), got {beta!r}") from None
    if not 0.0 < beta < 1.0:
        raise PrivacyInputError(f"beta must be a number in (0, 1), got {beta!r}")
    X, n_clipped = check_data(X, clip=clip)
    n, d = X.shape
    k = check_k(k, d)
    X = canonical_rows(X)
    G = X.T @ X
    G = (G + G.T) / 2
    gamma = coinpress_clip_radius(n, d, beta)
    rhos = coinpress_budget_split(rho, int(iterations))
    T = np.eye(d) / math.sqrt(COVARIANCE_BOUND)
    sigmas, n_gamma = [], 0
    for s, rho_s in enumerate(rhos):
        if np.linalg.norm(T, 2) <= gamma:
            M = G
        else:
            W = X @ T.T
            norms = np.sqrt(np.einsum("ij,ij->i", W, W))
            over = norms > gamma
            n_gamma += int(over.sum())
            Xo = X[over]
            M = G - (Xo.T * (1.0 - (gamma / norms[over]) ** 2)) @ Xo
        second = T @ M @ T.T / n
        sigma = coinpress_noise_scale(n, gamma, rho_s)
        sigmas.append(sigma)
        Z = _psd((second + second.T) / 2 + symmetric_gaussian(d, sigma, rng))
        if s < len(rhos) - 1:
            T = _inv_sqrt(Z + coinpress_eta(n, d, beta, sigma) * np.eye(d)) @ T
    Tinv = np.linalg.inv(T)
    cov = Tinv @ Z @ Tinv.T
    cov = (cov + cov.T) / 2
    g = PrivacyGuarantee(
        epsilon, delta, RELATION, note=f"{PAPER}: iterative covariance, rho-zCDP", rho=rho
    )
    release = {
        "status": "ok",
        "rho": rho,
        "rho_steps": rhos,
        "gamma": gamma,
        "noise_scales": sigmas,
    }
    return MechanismOutput(
        top_k_eigenvectors(cov, k),
        g,
        release=release,
        diagnostics={"n_clipped": n_clipped, "n_clipped_gamma": n_gamma},
        covariance=cov,
    )
