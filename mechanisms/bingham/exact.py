"""An exact sampler of the matrix Bingham law BMF(B) for k ≥ 1, by rejection from a matrix angular
central Gaussian (MACG) envelope: Kent, Ganeiber & Mardia, "A new unified approach for the
simulation of a wide class of directional distributions", J. Comput. Graph. Statist. 27 (2018),
extended from the sphere to the Stiefel manifold V_{d,k}.  A **test oracle** for the chains
(:mod:`.givens`, :mod:`.column`): its acceptance rate falls exponentially in the gaps between the
top k eigenvalues of B, so it is practical only at small d and moderate, nearly flat top spectra
(measured in docs/sampler.md), never at PPCA's concentrations.  PPCA does not use it.

Derivation (all densities w.r.t. the uniform (Haar) measure on V_{d,k}; λ₁ ≥ … ≥ λ_d the
eigenvalues of B):

* Target: f*(V) = exp(tr VᵀBV).
* Envelope: MACG(Σ) with Σ⁻¹ = Ω = βI − 2B, β > 2λ₁ (so Ω ≻ 0), the law of the polar frame
  V = Y(YᵀY)^{-1/2} of a d × k matrix Y with independent N(0, Ω⁻¹) columns.  Its density is
  |Ω|^{k/2}|VᵀΩV|^{-d/2}; write g*(V) = |VᵀΩV|^{-d/2} for the unnormalised one.  (Kent et al.'s
  parameterisation Σ⁻¹ = I + 2(λ₁I − B)/b is the same matrix divided by b = β − 2λ₁, and an MACG
  law does not change when Σ is scaled.)
* Ratio.  Let t₁ ≥ … ≥ t_k be the eigenvalues of the k × k matrix VᵀBV.  Since VᵀV = I_k,
  VᵀΩV = βI_k − 2VᵀBV has eigenvalues β − 2tᵢ > 0, so
      r(V) = f*(V)/g*(V) = ∏ᵢ exp(tᵢ)(β − 2tᵢ)^{d/2}.
  Each factor is the k = 1 ratio of :mod:`.vector`: h(t) = t + (d/2) log(β − 2t) is concave with
  its maximum at β − 2t = d, so every factor is ≤ exp((β − d)/2) d^{d/2} and
      M = sup_V r(V) ≤ [exp((β − d)/2) d^{d/2}]^k     (the bound used; attained if d lies in
                                                          the range of the eigenvalues of Ω).
  The bound holds for every β > 2λ₁, so the sampler is exact whatever β is; β sets only the
  acceptance rate.
* Acceptance test.  With uᵢ = (β − 2tᵢ)/d the eigenvalues of U = VᵀΩV/d,
      log(r(V)/M) = Σᵢ (d/2)(1 + log uᵢ − uᵢ) = (d/2)(k + log|U| − tr U) ≤ 0,
  and a proposal is accepted when log(uniform) < log(r/M).  For a proposal V = Y S^{-1/2},
  S = YᵀY, Y = Ω^{-1/2}Z (Z standard normal): VᵀΩV = S^{-1/2}(ZᵀZ)S^{-1/2}, so
  log|U| = log|ZᵀZ| − log|S| − k log d and tr U = tr(S⁻¹ZᵀZ)/d; no eigenvectors are needed.
* Acceptance rate.  P(accept) = ∫ f* / (M ∫ g*) = c(B)|Ω|^{k/2}/M with c(B) = E_uniform[f*(V)]
  (the hypergeometric function ₁F₁(k/2; d/2; B)).  Only the factor |Ω|^{k/2}/M depends on β:
  (k/2)Σⱼ log(β − 2λⱼ) − k(β − d)/2 + const, maximal where Σⱼ 1/(β − 2λⱼ) = 1 — the equation
  Kent et al. solve for k = 1 (:func:`.vector.acg_beta`), optimal for every k within this family
  of envelopes.  The rate falls about exponentially in the gaps λ₁ − λᵢ, i ≤ k (measured for
  d = 10, k = 2, λ₁ = 100: 0.054 with no gap, 3.2e-3, 5.1e-5 and 7.3e-9 at gaps 5, 10 and 20;
  docs/sampler.md): every factor of M is fitted to the top eigenvalue, so the envelope cannot
  follow a column whose concentration is much lower.
* Frames.  BMF is invariant under V ↦ VO (O ∈ O(k)); so is the polar frame of Y (Y ↦ YO leaves
  the law of Y unchanged and moves the polar frame to VO), and the acceptance test depends on the
  span of V only.  So the accepted frames are BMF(B) distributed, orientation included (a QR frame
  of Y would give the right span with a biased orientation).

For k = 1 this is the algorithm of :func:`.vector.sample_vector_bingham` (same β, same envelope,
same test), written for matrices.
"""

from __future__ import annotations

import numpy as np

from .vector import acg_beta, acg_envelope, draws_result, rejection_draws

__all__ = [
    "macg_log_bound",
    "macg_log_ratio",
    "macg_log_accept",
    "macg_acceptance_rate",
    "sample_matrix_bingham",
]


def macg_log_bound(d: int, k: int, beta: float) -> float:
    """log M, M = [exp((β − d)/2) d^{d/2}]^k: the bound on exp(tr VᵀBV)|VᵀΩV|^{d/2}, Ω = βI − 2B."""
    return k * (0.5 * (beta - d) + 0.5 * d * np.log(d))


def macg_log_ratio(V: np.ndarray, B: np.ndarray, beta: float) -> np.ndarray:
    """log r(V) = tr VᵀBV + (d/2) log|VᵀΩV|, Ω = βI − 2B, for frames ``V`` (..., d, k)."""
    V = np.asarray(V, dtype=np.float64)
    d = V.shape[-2]
    VBV = np.swapaxes(V, -1, -2) @ (np.asarray(B, dtype=np.float64) @ V)
    k = V.shape[-1]
    sign, logdet = np.linalg.slogdet(beta * np.eye(k) - 2.0 * VBV)
    if np.any(sign <= 0):
        raise ValueError("beta must exceed twice the largest eigenvalue of B")
    return np.trace(VBV, axis1=-2, axis2=-1) + 0.5 * d * logdet


def macg_log_accept(V: np.ndarray, B: np.ndarray, beta: float) -> np.ndarray:
    """log(r(V)/M) = (d/2)(k + log|U| − tr U), U = VᵀΩV/d; ≤ 0 for every frame."""
    V = np.asarray(V, dtype=np.float64)
    d, k = V.shape[-2:]
    return macg_log_ratio(V, B, beta) - macg_log_bound(d, k, beta)


def macg_acceptance_rate(evals: np.ndarray, k: int, log_c: float) -> float:
    """The sampler's acceptance probability c(B)|Ω|^{k/2}/M given log c(B) = log E_unif[e^{tr VᵀBV}]."""
    lam = np.asarray(evals, dtype=np.float64)
    beta = acg_beta(lam)
    d = lam.size
    return float(
        np.exp(log_c + 0.5 * k * np.sum(np.log(beta - 2.0 * lam)) - macg_log_bound(d, k, beta))
    )


def sample_matrix_bingham(
    B: np.ndarray | None = None,
    k: int = 1,
    size: int | None = None,
    *,
    rng: np.random.Generator,
    eig: tuple[np.ndarray, np.ndarray | None] | None = None,
    batch: int | None = None,
    max_proposals: int = 10**8,
    return_info: bool = False,
):
    """Exact draw(s) from BMF(B), density ∝ exp(tr VᵀBV) on d × k frames, by MACG rejection.

    Parameters
    ----------
    B : symmetric d × d matrix (ignored if ``eig`` is given).
    k : number of columns, 1 ≤ k ≤ d.
    size : number of draws; ``None`` returns one frame of shape (d, k), else (size, d, k).
    eig : optional ``(evals, evecs)`` of B; with ``evecs`` None the frames are returned in the
        eigen-coordinates of B.
    max_proposals : stop with ``RuntimeError`` after this many proposals (the acceptance rate can
        be astronomically small: see the module docstring).
    return_info : also return ``{"proposals", "accepted", "acceptance_rate", "beta"}``.
    """
    evals, evecs, beta, omega, inv_sqrt_omega = acg_envelope(B, eig)
    d = evals.size
    k = int(k)
    if not 1 <= k <= d:
        raise ValueError(f"need 1 <= k <= d, got k={k}, d={d}")

    def propose(m):
        Z = rng.standard_normal((m, d, k))
        Y = Z * inv_sqrt_omega[:, None]
        S = np.einsum("mji,mjl->mil", Y, Y)  # YᵀY
        G = np.einsum("mji,mjl->mil", Z, Z)  # ZᵀZ = YᵀΩY
        _, logdet_S = np.linalg.slogdet(S)
        _, logdet_G = np.linalg.slogdet(G)
        tr_U = np.trace(np.linalg.solve(S, G), axis1=1, axis2=2) / d
        log_det_U = logdet_G - logdet_S - k * np.log(d)

        def accepted(idx):  # Y (YᵀY)^{-1/2}: the accepted frames
            w, P = np.linalg.eigh(S[idx])
            S_inv_half = np.einsum("mij,mj,mlj->mil", P, 1.0 / np.sqrt(w), P)
            return np.einsum("mij,mjl->mil", Y[idx], S_inv_half)

        return 0.5 * d * (k + log_det_U - tr_U), accepted

    def stopped(proposals, got, n_want):
        return f"matrix Bingham sampler: {proposals} proposals, {got} of {n_want} accepted"

    out, proposals = rejection_draws(propose, (d, k), size, rng, batch, max_proposals, stopped)
    if evecs is not None:
        out = np.einsum("ij,mjl->mil", np.asarray(evecs), out)
    return draws_result(out, size, return_info, proposals, beta)
