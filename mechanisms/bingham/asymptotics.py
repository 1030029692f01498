"""The Gaussian-equivalence (saddle-point) limit of the matrix Bingham law BMF(B) in high dimension:
an analytic reference for the moments of the PPCA release, used as a check of the samplers at
d ≈ 500 (tests/mechanisms/test_bingham_asymptotics.py).

This is the classical spherical-integral / Gaussian-equivalence limit, derived below from first
principles.  It stands in for the sharp characterisation of Yun & Dudeja, "High-dimensional
asymptotics of differentially private PCA" (2025), whose text was not available: it is **not**
that paper's formula, only the limit its abstract names as the technique (spherical integrals,
Gaussian approximations).

Derivation (p = d the dimension, b₁ ≥ … ≥ b_p the eigenvalues of B, all in B's eigenbasis).

* Gaussian representation.  For a scalar γ > b₁ let X be a p × k matrix with i.i.d. columns
  N(0, Σ_γ), Σ_γ = (2(γI − B))⁻¹ = diag(σ₁, …, σ_p), σᵢ = 1/(2(γ − bᵢ)).  Its density is
  ∝ exp(−tr Xᵀ(γI − B)X) = exp(−γ tr XᵀX) exp(tr XᵀBX), which on {XᵀX = I_k} is
  e^{−γk} exp(tr XᵀBX).  The uniform (Haar) measure on the Stiefel manifold is the disintegration
  of Lebesgue measure on the fibre XᵀX = I (polar decomposition X = V S^{1/2}), so X conditioned on
  XᵀX = I_k is exactly BMF(B), for every γ > b₁.
* Saddle point.  γ is free; choose it so that the conditioning event is typical,
  E‖x_j‖² = tr Σ_γ = Σᵢ 1/(2(γ − bᵢ)) = 1 (one root in (b₁, b₁ + p/2]: the left side falls from +∞
  to ≤ 1 there).  This is the equation that fixes the MACG envelope of :mod:`.exact`
  (β = 2γ, :func:`.vector.acg_beta`), whose proposal is the polar frame of the same Gaussian.
* Limit.  The Gram matrix G = XᵀX has mean I and independent entries (up to symmetry) with
  Var G_jj = 2s₂, Var G_jl = s₂ (j ≠ l), s₂ = Σᵢ σᵢ².  When these fluctuations are spread over
  many coordinates (no σᵢ² a macroscopic share of s₂), conditioning on G = I barely moves any single
  row, and BMF(B) ≈ N(0, Σ_γ)^{⊗k}.  Predictions: E‖V_{i,:}‖² ≈ kσᵢ (row i of V in B's
  eigenbasis), E tr(VᵀBV) ≈ k Σᵢ bᵢσᵢ, and every frame-invariant (subspace) statistic built from
  them, e.g. E‖V_{1,:}‖² (the squared projection of the top eigenvector on span V) or
  E‖V_{1:k,:}‖²_F.  Σᵢ kσᵢ = k = ‖V‖²_F exactly.
* First correction.  Write row i as r ∈ ℝᵏ, r ~ N(0, σᵢI_k), and G = rrᵀ + G₋ᵢ.  Conditioning on
  G = I tilts r by the density of G₋ᵢ at I − rrᵀ = E G₋ᵢ − D, D = rrᵀ − σᵢI.  To first order in the
  Edgeworth expansion of that density (Gaussian part plus its third cumulants, κ(G₁₁,G₁₁,G₁₁) = 8s₃,
  κ(G₁₁,G₁ₗ,G₁ₗ) = 2s₃, s₃ = Σᵢ σᵢ³) the tilt is
  exp(−‖D‖²_F/(4s₂) + (k + 1)s₃/(2s₂²)·tr D), and with ‖r‖² = σᵢχ²_k,
      E‖V_{i,:}‖² ≈ kσᵢ(1 + δᵢ),   δᵢ = (k + 1)(σᵢ s₃/s₂² − σᵢ²/s₂).
  δ vanishes for B ∝ I (σᵢ = 1/p: the uniform law, E‖V_{i,:}‖² = k/p exactly) and
  Σᵢ σᵢδᵢ = 0, so the corrected rows still sum to k.  The terms left out are of order δ² and δ/p.
* Regime.  The limit is meant for large p with every |δᵢ| ≪ 1, i.e. (k + 1)σᵢ²/s₂ ≪ 1 (no single
  direction carries a macroscopic share of the Gram matrix's fluctuations) and (k + 1)σᵢs₃/s₂² ≪ 1.
  For a bulk of p eigenvalues spread over an O(1) range, σ ≈ 1/p there, s₂ ≈ 1/p, s₃/s₂² ≈ 1, and a
  spike bᵢ with σᵢ = c/p has δᵢ ≈ (k + 1)c(1 − c)/p: the relative error is O(k c²/p).  It fails
  once a direction condenses (bᵢ − b_bulk of order p/2 or more, σᵢ no longer O(1/p)): then
  |δᵢ| is of order one and the first-order formula is not an estimate of the error either; there
  the frame sits near the top eigenvectors (Gaussian leakage 1/(2(bᵢ − b_l)) of column i into row l),
  a different limit, with an exact oracle, in :mod:`.condensed`.  Measured at d = 512, k = 2
  (docs/sampler.md, "The Gaussian-equivalence limit at d = 512"): with spikes 150, …, 70 over 507
  eigenvalues in [0, 2] (max |δ| = 0.018) the corrected rows match exact draws to within their
  sampling error (0.7%) and the leading limit is 2% high on the top row; at b = (250, 200) over a
  bulk in [0, 2] (δ₁ = −0.63) the limit overestimates E‖V_{1,:}‖² by half.
* Reach.  Where the limit holds, the MACG envelope of :mod:`.exact` (the polar frame of this same
  Gaussian) is close to the target and accepts most proposals (0.99 at k = 2, 0.83 at k = 10 in the
  spiked example), so exact draws are cheap there too: the limit is an analytic check of the exact
  sampler and of the chains at large d, not a substitute for the oracle where it fails (the
  condensed regime, where this limit fails as well; :mod:`.condensed` covers it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize

__all__ = ["GaussianEquivalence", "bingham_gaussian_equivalence", "saddle_point_gamma"]


def saddle_point_gamma(evals: np.ndarray) -> float:
    """γ > max(evals) solving Σᵢ 1/(2(γ − bᵢ)) = 1 (brentq for t = γ − b₁ in [1/2, p/2]).

    The left side decreases strictly in γ.  At t = 1/2 the top term alone is 1, so the left side is
    ≥ 1; at t = p/2 every term is ≤ 1/p, so it is ≤ 1 (= 1 only for B ∝ I, the root itself).  So
    the root is unique and in that interval.
    """
    b = np.asarray(evals, dtype=np.float64).ravel()
    p = b.size
    if p == 0:
        raise ValueError("need at least one eigenvalue")
    top = float(b.max())
    gaps = top - b  # ≥ 0

    def excess(t: float) -> float:  # t = γ − b₁ > 0
        return float(np.sum(0.5 / (t + gaps)) - 1.0)

    hi = 0.5 * p
    if excess(hi) >= 0.0:  # B ∝ I (to rounding): the root is p/2
        return top + hi
    t = optimize.brentq(excess, 0.5, hi, xtol=1e-14 * hi, rtol=1e-15, maxiter=500)
    return top + t


@dataclass(frozen=True)
class GaussianEquivalence:
    """The saddle-point Gaussian equivalent of BMF(diag(evals)) on p × k frames.

    Attributes
    ----------
    evals : (p,) eigenvalues of B, in the order given (row i of V is eigenvector i).
    k : number of columns.
    gamma : the saddle point γ (Σᵢ σᵢ = 1).
    occupation : (p,) σᵢ = 1/(2(γ − bᵢ)), the expected share of one column on eigenvector i.
    correction : (p,) δᵢ, the first-order relative correction of row i (module docstring).
    s2, s3 : Σσᵢ², Σσᵢ³ (Var ‖x_j‖² = 2·s2 under the Gaussian).
    """

    evals: np.ndarray
    k: int
    gamma: float
    occupation: np.ndarray
    correction: np.ndarray
    s2: float
    s3: float

    @property
    def row_sq(self) -> np.ndarray:
        """(p,) the limit E‖V_{i,:}‖² ≈ kσᵢ."""
        return self.k * self.occupation

    @property
    def row_sq_corrected(self) -> np.ndarray:
        """(p,) E‖V_{i,:}‖² ≈ kσᵢ(1 + δᵢ), the limit with its first-order correction."""
        return self.k * self.occupation * (1.0 + self.correction)

    def energy(self, corrected: bool = True) -> float:
        """E tr(VᵀBV) ≈ Σᵢ bᵢ E‖V_{i,:}‖² (k Σᵢ bᵢσᵢ uncorrected)."""
        rows = self.row_sq_corrected if corrected else self.row_sq
        return float(self.evals @ rows)

    @property
    def max_share(self) -> float:
        """max σᵢ²/s₂: the largest share of one direction in the Gram matrix's fluctuations."""
        return float(self.occupation.max() ** 2 / self.s2)

    @property
    def max_abs_correction(self) -> float:
        """max |δᵢ|: the regime indicator (the limit is meant for values ≪ 1)."""
        return float(np.abs(self.correction).max())


def bingham_gaussian_equivalence(evals: np.ndarray, k: int) -> GaussianEquivalence:
    """The Gaussian-equivalence (saddle-point) limit of BMF(diag(evals)) on p × k frames.

    Parameters
    ----------
    evals : (p,) eigenvalues of B (the frame is read in B's eigenbasis, row i ↔ evals[i]); for
        PPCA, B = (nε/2)·A.
    k : number of columns, 1 ≤ k ≤ p.

    Returns
    -------
    GaussianEquivalence
        γ, the occupations σᵢ, the first-order corrections δᵢ and the predicted moments
        (``row_sq``, ``row_sq_corrected``, ``energy()``).

    Notes
    -----
    The classical spherical-integral / Gaussian-equivalence limit (derivation, corrections and
    regime in the module docstring), not Yun & Dudeja's (2025) characterisation, whose text was not
    available.  Check ``max_abs_correction`` before trusting it: the limit is meant for large p with
    every |δᵢ| ≪ 1; at |δᵢ| of order one (a condensing direction) it is wrong for that row.
    """
    b = np.asarray(evals, dtype=np.float64).ravel()
    k = int(k)
    if not 1 <= k <= b.size:
        raise ValueError(f"need 1 <= k <= p, got k={k}, p={b.size}")
    gamma = saddle_point_gamma(b)
    sigma = 0.5 / (gamma - b)
    s2 = float(np.sum(sigma**2))
    s3 = float(np.sum(sigma**3))
    delta = (k + 1) * (sigma * s3 / s2**2 - sigma**2 / s2)
    return GaussianEquivalence(
        evals=b, k=k, gamma=float(gamma), occupation=sigma, correction=delta, s2=s2, s3=s3
    )
