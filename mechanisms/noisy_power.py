"""Private power method (PPM) of Hardt & Price, "The noisy power method" (NIPS 2014).

Appendix E of the paper.  The algorithm (their Figure 3,
"PPM") is

    X_0 = random orthonormal d x p
    for l = 1..L:   Y_l = A X_{l-1} + G_l,   X_l = orthonormalise(Y_l)

with ``G_l ~ N(0, ||X_{l-1}||_inf^2 sigma^2)^{d x p}`` and ``sigma = eps^-1 sqrt(4 p L log(1/delta))``
(Figure 3 / Claim E.2, for the entry-level relation of Definition E.1; Lemma E.5 proves the same
sigma, without the ||X_{l-1}||_inf factor, for unit spectral-norm changes, Definition E.4), or, for
(eps, 0)-DP, Laplace noise (Corollary E.7).

Choices made here (see also ``docs/mechanisms_other.md``)
---------------------------------------------------------
* **The matrix.**  ``A = XᵀX`` (the *unnormalised* sum of outer products; ``X`` is n x d,
  one row per individual).  The output subspace is invariant to scaling A, so this is the
  same mechanism as running on ``XᵀX / n`` with every noise scale divided by n; ``noise_scale``
  (for XᵀX, public) is in the release and ``noise_scale_normalised`` (for XᵀX/n: it reveals n,
  which is not public under add/remove) in the diagnostics.
* **Neighbouring relations.**  Default ``"replace-one-row"`` (a per-person guarantee, as in the
  Hydra config); the paper's entry-level relation is available when asked for by name.
  - ``"entry-level"`` (paper, Definition E.1): the matrices *A* (not the data rows!) differ in
    one entry by at most 1.  A is treated as a general d x d matrix whose single entry
    (i, j) changes; if a symmetric pair (i, j) and (j, i) changes together, that is two
    entries and the guarantee degrades by group privacy.  This relation is NOT the
    row-level relation used by PPCA/MOD-SULQ: one person (one row x) changes up to d² entries
    of XᵀX.
  - ``"replace-one-row"`` (row-level, derived here): X and X' differ in one row, rows have
    L2 norm <= 1, so A - A' = xxᵀ - yyᵀ.  For any X with orthonormal columns,
    ``||(xxᵀ - yyᵀ) X||_F <= ||xxᵀ - yyᵀ||_F = sqrt(|x|⁴ + |y|⁴ - 2(x·y)²) <= sqrt(2)``,
    attained for orthogonal unit x, y inside span(X).  So the L2 sensitivity of one product
    is sqrt(2) (for XᵀX; sqrt(2)/n for XᵀX/n) — tighter than the 2 (2/n) one gets from the
    triangle inequality.
  - ``"add-remove-one-row"``: A - A' = xxᵀ, sensitivity ``||xxᵀ X||_F <= |x|² <= 1``.
* **Composition over iterations (Gaussian).**  Each product is a Gaussian mechanism with
  L2 sensitivity Δ and noise σ_l; by zCDP it is ρ_l = Δ²/(2σ_l²)-zCDP, adaptive composition
  adds the ρ's, and ρ-zCDP implies (ρ + 2 sqrt(ρ log(1/δ)), δ)-DP (Bun & Steinke 2016).
  With the paper's ``σ = Δ₁ sqrt(4 L' log(1/δ)) / ε`` (Δ₁ = sqrt(p)·||X_{l-1}||_∞ entry-level,
  sqrt(2) / 1 row-level, multiplier ||X||_∞ only for entry-level) one gets
  ρ = ε²/(8 log(1/δ)) and ε_total = ε/sqrt(2) + ε²/(8 log(1/δ)) <= ε exactly when
  ``ε <= 8 (1 - 1/sqrt(2)) log(1/δ)`` (≈ 2.34 log(1/δ)); outside that range
  ``calibration="paper"`` is refused and ``calibration="zcdp"`` (the exact inversion,
  ``sqrt(ρ) = sqrt(log(1/δ) + ε) - sqrt(log(1/δ))``, always valid and never larger) must be used.
* **Laplace variant** (pure ε-DP, Corollary E.7): basic composition over L' products, each
  with budget ε/L'.  L1 sensitivities: entry-level ``||e_i e_jᵀ X||_1 = ||X_{j,:}||_1 <= p ||X||_∞``;
  replace-one-row ``||x (xᵀX)||_1 + ||y (yᵀX)||_1 <= 2 sqrt(d) sqrt(p)``; add-remove ``sqrt(dp)``.
  (The paper's ``λ = 10 p L sqrt(d) / ε`` is for the unit-spectral-norm relation of
  Definition E.4 and carries a slack constant 10; we use the sensitivities above.)
* **Output.**  ``output="projected"`` (default) follows the proof of Corollary E.3: one extra
  noisy product ``Y_{L+1} = A X_L + G_{L+1}`` (counted in the privacy budget, so L' = L + 1),
  ``B = X_L Y_{L+1}ᵀ`` and the output is the top-k left singular subspace of B, i.e.
  ``X_L W`` with W the top-k right singular vectors of ``Y_{L+1}``.  Everything after the last
  noisy product is post-processing: A is never touched without noise.  ``output="first-k"``
  returns the first k columns of X_L (L' = L; also post-processing).
* **Default iteration count** (Corollary E.3: ``L = O(γ⁻¹ log d)``, γ = 1 - σ_{k+1}/σ_k):
  ``L = ceil(log(d) / gap)`` with the O(·) constant taken as 1 and ``gap`` a *public*
  (user-supplied) guess of γ, default 0.5; γ is not estimated from the data (that would
  cost privacy).

Release vs diagnostics (``MechanismOutput``):
  release      ``status``, ``noise``, ``noise_scale`` (σ or b of the formula, before the
               ||X_{l-1}||_∞ factor for entry-level: a function of ε, δ, p, L', d only — never of
               n), ``noise_std_per_iteration`` (the standard deviation of each product's noise: σ, or
               √2·b for Laplace; entry-level: times ||X_{l-1}||_∞, a function of the earlier
               noisy products), ``noise_multiplier``, ``p``, ``iterations``,
               ``n_noisy_products``, ``calibration``, ``output``, ``matrix``; with
               ``return_trace=True`` also ``trace`` (the noisy products Y_l: exactly what the
               composition argument releases).
  diagnostics  (not private) ``noise_scale_normalised`` (σ/n: reveals n), ``n``, ``n_clipped``.
"""

from __future__ import annotations

import math
from typing import Any

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
from .calibration import gaussian_sigma_tight, zcdp_rho_for
from .linalg import orthonormalize, random_orthonormal

#: ε <= PAPER_EPS_FACTOR * log(1/δ) is where the paper's σ is proven (ε, δ)-DP by zCDP.
PAPER_EPS_FACTOR = 8.0 * (1.0 - 1.0 / math.sqrt(2.0))

NEIGHBOURINGS = ("entry-level", "replace-one-row", "add-remove-one-row")


# ---------------------------------------------------------------------------------------------
# Noise scales of the private power method
# ---------------------------------------------------------------------------------------------


def noisy_power_noise_scale(epsilon: float, delta: float, p: int, L: int) -> float:
    """σ = ε⁻¹ sqrt(4 p L log(1/δ)) — Hardt & Price, Figure 3 / Claim E.2 (entry-level, Def. E.1);
    Lemma E.5 states the same σ for unit spectral-norm changes (Def. E.4).

    The noise in iteration l is N(0, σ² ||X_{l-1}||_∞²) per entry.  Valid (by zCDP, see the
    module docstring) for ε <= 8 (1 - 1/sqrt 2) log(1/δ); ``L`` is the number of noisy products.
    """
    return math.sqrt(4.0 * p * L * math.log(1.0 / delta)) / epsilon


def noisy_power_row_sensitivity(neighbouring: str) -> float:
    """L2 sensitivity of one product ``(XᵀX) X_l`` (orthonormal X_l) under a row-level relation.

    replace-one-row: ||(xxᵀ - yyᵀ) X_l||_F <= ||xxᵀ - yyᵀ||_F <= sqrt(2);
    add-remove-one-row: ||xxᵀ X_l||_F <= 1.  Divide by n for A = XᵀX/n.
    """
    if neighbouring == "replace-one-row":
        return math.sqrt(2.0)
    if neighbouring == "add-remove-one-row":
        return 1.0
    raise ValueError(f"no row-level sensitivity for {neighbouring!r}")


def noisy_power_row_noise_scale(
    epsilon: float,
    delta: float,
    L: int,
    neighbouring: str = "replace-one-row",
    calibration: str = "paper",
) -> float:
    """Noise std per entry of G_l for the row-level PPM on A = XᵀX (divide by n for XᵀX/n).

    ``calibration="paper"``: Δ ε⁻¹ sqrt(4 L log(1/δ)) (the form of HP14's σ with Δ the L2
    sensitivity of a whole product, so no factor p);
    ``calibration="zcdp"``: Δ sqrt(L / (2ρ)) with ρ = zcdp_rho_for(ε, δ);
    ``calibration="tight"``: gaussian_sigma_tight(Δ, ε, δ, L) (exact profile, dp-accounting).
    No ||X||_∞ factor.
    """
    delta_ = noisy_power_row_sensitivity(neighbouring)
    if calibration == "tight":
        return gaussian_sigma_tight(delta_, epsilon, delta, L)
    if calibration == "paper":
        return delta_ * math.sqrt(4.0 * L * math.log(1.0 / delta)) / epsilon
    if calibration == "zcdp":
        return delta_ * math.sqrt(L / (2.0 * zcdp_rho_for(epsilon, delta)))
    raise ValueError(f"unknown calibration {calibration!r}")


def noisy_power_zcdp_noise_scale(epsilon: float, delta: float, p: int, L: int) -> float:
    """Entry-level σ (multiplied by ||X_{l-1}||_∞ in use) from the exact zCDP inversion: sqrt(pL/(2ρ))."""
    return math.sqrt(p * L / (2.0 * zcdp_rho_for(epsilon, delta)))


def noisy_power_tight_noise_scale(epsilon: float, delta: float, p: int, L: int) -> float:
    """Entry-level σ (multiplied by ||X_{l-1}||_∞ in use) for the exact profile of L Gaussian products
    of sensitivity sqrt(p)·||X_{l-1}||_∞: gaussian_sigma_tight(sqrt(p), ε, δ, L)."""
    return gaussian_sigma_tight(math.sqrt(p), epsilon, delta, L)


def noisy_power_laplace_scale(
    epsilon: float, p: int, L: int, *, d: int | None = None, neighbouring: str = "entry-level"
) -> float:
    """Laplace scale b of each entry of G_l for (ε, 0)-DP (Corollary E.7 analogue, basic composition).

    entry-level: b = p L / ε, multiplied by ||X_{l-1}||_∞ in use (L1 sensitivity p ||X||_∞);
    replace-one-row: b = 2 L sqrt(d p) / ε;  add-remove-one-row: b = L sqrt(d p) / ε.
    """
    if neighbouring == "entry-level":
        return p * L / epsilon
    if d is None:
        raise ValueError("d is required for the row-level Laplace scale")
    factor = 2.0 if neighbouring == "replace-one-row" else 1.0
    return factor * L * math.sqrt(d * p) / epsilon


def default_iterations(d: int, gap: float = 0.5) -> int:
    """L = ceil(log(d) / γ) (Corollary E.3, constant 1), at least 1."""
    if not (gap > 0):
        raise PrivacyInputError(f"gap must be > 0, got {gap!r}")
    return max(1, int(math.ceil(math.log(max(d, 2)) / gap)))


# ---------------------------------------------------------------------------------------------
# Mechanism
# ---------------------------------------------------------------------------------------------


def noisy_power(
    X: Any,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float,
    delta: float = 1e-6,
    p: int | None = None,
    iterations: int | None = None,
    gap: float = 0.5,
    noise: str = "gaussian",
    neighbouring: str = "replace-one-row",
    calibration: str = "paper",
    output: str = "projected",
    clip: bool = False,
    return_trace: bool = False,
) -> MechanismOutput:
    """Hardt–Price private power method on A = XᵀX (module docstring: release and diagnostics).

    Parameters
    ----------
    X : array-like of shape (n, d)
        The data; every row must have L2 norm at most 1 (refused above unless ``clip=True``).
    k : int
        Target rank, 1 <= k < d.
    rng : numpy.random.Generator
        Source of the starting matrix and of the noise.
    epsilon : float
        Privacy parameter ε > 0.
    delta : float, default 1e-6
        Privacy parameter δ in (0, 1); ignored for ``noise="laplace"``, which is (ε, 0)-DP.
    p : int, optional
        Iteration width, k <= p <= d; default min(2k, d) (Corollary E.3 uses p = 2k).
    iterations : int, optional
        Number L of power iterations; default ``ceil(log d / gap)`` (Corollary E.3).
    gap : float, default 0.5
        Public guess of γ = 1 − σ_{k+1}/σ_k, used only for the default L.
    noise : {"gaussian", "laplace"}, default "gaussian"
        Gaussian noise gives (ε, δ); Laplace noise gives (ε, 0) (Corollary E.7).
    neighbouring : {"replace-one-row", "add-remove-one-row", "entry-level"}, default "replace-one-row"
        The relation the guarantee refers to. ``"entry-level"`` is the paper's Definition E.1 and
        is not a per-person guarantee; it is used only when asked for by name.
    calibration : {"paper", "zcdp", "tight"}, default "paper"
        ``"paper"``: σ = Δ ε⁻¹ √(4 L′ log 1/δ); ``"zcdp"``: exact zCDP inversion; ``"tight"``:
        the smallest σ for the exact Gaussian profile of the L′ products.  ``"zcdp"`` and
        ``"tight"`` apply to Gaussian noise only: ``noise="laplace"`` needs ``"paper"``.
    output : {"projected", "first-k"}, default "projected"
        ``"projected"`` adds one more noisy product (Corollary E.3's B = X_L Y_{L+1}ᵀ);
        ``"first-k"`` returns the first k columns of X_L.
    clip : bool, default False
        Scale rows above the unit norm back onto the unit ball instead of refusing them.
    return_trace : bool, default False
        Put every noisy product Y_l into ``release["trace"]`` (for tests and audits).

    Returns
    -------
    MechanismOutput
        ``components`` (d x k, orthonormal), the guarantee for the chosen relation, and the
        ``release`` and ``diagnostics`` (not private) fields listed in the module docstring.

    References
    ----------
    Hardt and Price, "The noisy power method: a meta algorithm with applications", NeurIPS 2014:
    Figure 3 (PPM), Claim E.2 (entry-level privacy), Lemma E.5 (unit spectral-norm changes),
    Corollary E.7 (Laplace).
    """
    X, n_clipped = check_data(X, clip=clip)
    n, d = X.shape
    k = check_k(k, d)
    eps = check_epsilon(epsilon)
    if noise not in ("gaussian", "laplace"):
        raise PrivacyInputError(f"noise must be 'gaussian' or 'laplace', got {noise!r}")
    dl = check_delta(delta) if noise == "gaussian" else 0.0
    if neighbouring not in NEIGHBOURINGS:
        raise PrivacyInputError(
            f"neighbouring must be one of {NEIGHBOURINGS}, got {neighbouring!r}"
        )
    if output not in ("projected", "first-k"):
        raise PrivacyInputError(f"output must be 'projected' or 'first-k', got {output!r}")
    if calibration not in ("paper", "zcdp", "tight"):
        raise PrivacyInputError(
            f"calibration must be 'paper', 'zcdp' or 'tight', got {calibration!r}"
        )
    if noise == "laplace" and calibration != "paper":
        # zcdp and tight calibrate Gaussian noise; accepting them here would record a calibration
        # that was not used
        raise PrivacyInputError(
            "calibration must be 'paper' for noise='laplace' (pure eps-DP by basic composition "
            f"over the noisy products); 'zcdp' and 'tight' calibrate Gaussian noise, got {calibration!r}"
        )
    p = min(2 * k, d) if p is None else int(p)
    if not (k <= p <= d):
        raise PrivacyInputError(f"p must satisfy k <= p <= d ({k} <= p <= {d}), got {p}")
    L = default_iterations(d, gap) if iterations is None else int(iterations)
    if L < 1:
        raise PrivacyInputError(f"iterations must be >= 1, got {iterations!r}")
    n_products = L + 1 if output == "projected" else L

    entry = neighbouring == "entry-level"
    if noise == "gaussian":
        if calibration == "paper" and eps > PAPER_EPS_FACTOR * math.log(1.0 / dl):
            raise PrivacyInputError(
                f"the paper's sigma is proven (eps, delta)-DP only for eps <= {PAPER_EPS_FACTOR:.3f}*log(1/delta)"
                f" = {PAPER_EPS_FACTOR * math.log(1 / dl):.3g}; use calibration='zcdp'"
            )
        if entry:
            scale = {
                "paper": noisy_power_noise_scale,
                "zcdp": noisy_power_zcdp_noise_scale,
                "tight": noisy_power_tight_noise_scale,
            }[calibration](eps, dl, p, n_products)
        else:
            scale = noisy_power_row_noise_scale(eps, dl, n_products, neighbouring, calibration)
    else:
        scale = noisy_power_laplace_scale(eps, p, n_products, d=d, neighbouring=neighbouring)

    A = X.T @ X
    A = (A + A.T) / 2

    def draw(Xl: np.ndarray) -> tuple[np.ndarray, float]:
        """The noise of one product and its standard deviation (Laplace(b): √2·b)."""
        std_factor = float(np.max(np.abs(Xl))) if entry else 1.0
        s = scale * std_factor
        if noise == "gaussian":
            return rng.normal(0.0, s, size=(d, p)), s
        return rng.laplace(0.0, s, size=(d, p)), math.sqrt(2.0) * s

    Xl = random_orthonormal(d, p, rng)
    per_iter: list[float] = []
    trace: list[np.ndarray] = []
    for _ in range(L):
        G, s = draw(Xl)
        Y = A @ Xl + G
        per_iter.append(s)
        if return_trace:
            trace.append(Y.copy())
        Xl = orthonormalize(Y)
    if output == "projected":
        G, s = draw(Xl)
        Y = A @ Xl + G
        per_iter.append(s)
        if return_trace:
            trace.append(Y.copy())
        _, _, Wt = np.linalg.svd(Y, full_matrices=False)
        V = orthonormalize(Xl @ Wt[:k].T)
    else:
        V = Xl[:, :k].copy()

    note = "A = XᵀX; " + (
        "entry-level: neighbouring matrices A differ in one entry by <= 1 "
        "(Hardt-Price Def. E.1), NOT a row-level guarantee"
        if entry
        else f"row-level ({neighbouring}) calibration derived in mechanisms/noisy_power.py"
    )
    guarantee = PrivacyGuarantee(
        epsilon=eps, delta=dl, neighbouring=neighbouring, exact=True, note=note
    )
    release: dict[str, Any] = {
        "status": "ok",
        "noise": noise,
        "noise_scale": scale,
        "noise_std_per_iteration": per_iter,
        "p": p,
        "iterations": L,
        "n_noisy_products": n_products,
        "calibration": calibration,
        "output": output,
        "matrix": "XtX",
        "noise_multiplier": "||X_{l-1}||_inf" if entry else "1",
    }
    if return_trace:
        release["trace"] = trace
    diagnostics = {"noise_scale_normalised": scale / n, "n": n, "n_clipped": n_clipped}
    return MechanismOutput(
        components=V, guarantee=guarantee, release=release, diagnostics=diagnostics
    )
