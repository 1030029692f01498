"""The exact sampler for k = 1: the vector Bingham law f(x) ∝ exp(xᵀBx) on the sphere S^{d-1}.

Rejection sampling with an angular central Gaussian (ACG) envelope (Kent, Ganeiber & Mardia,
"A new unified approach for the simulation of a wide class of directional distributions", 2018).
Derivation (d = dimension, all densities w.r.t. the uniform measure on the sphere):

* ACG(Ω) has density g(x) ∝ (xᵀΩx)^{-d/2}; draw it as x = y/‖y‖, y ~ N(0, Ω⁻¹).
* Take Ω = βI − 2B with β > 2λ_max(B) (so Ω ≻ 0).  On the sphere
  xᵀΩx = β − 2s with s = xᵀBx, hence the unnormalised ratio is
  r(x) = exp(s) (β − 2s)^{d/2}.
* h(s) = s + (d/2) log(β − 2s) is concave with h'(s) = 1 − d/(β − 2s) = 0 at
  β − 2s = d, so M = sup r = exp((β − d)/2) d^{d/2}.  This bound holds for *every*
  β > 2λ_max, so the sampler is exact whatever β we pick; β only sets efficiency.
* Accept with probability r(x)/M.  Writing u = xᵀΩx / d:
  log(r/M) = (d/2)(1 + log u − u) ≤ 0 (equality iff u = 1).
* β is chosen as in Kent et al.: Σᵢ 1/(β − 2λᵢ) = 1, i.e. tr Ω⁻¹ = 1.  With
  Λ = λ_max I − B and b = β − 2λ_max this is their Σ 1/(b + 2Λᵢ) = 1,
  Ω ∝ I + 2Λ/b, and the acceptance probability reads
  exp(−xᵀΛx) (xᵀΩ_b x)^{d/2} exp((d − b)/2) (b/d)^{d/2}  with Ω_b = I + 2Λ/b.
  Note the factor (b/d)^{d/2}: writing (d/b)^{d/2} instead (the inverted ratio
  shipped by some libraries) gives "probabilities" ≥ 1 and samples the wrong law.

:func:`sample_vector_bingham` works in the eigenbasis of B (one ``eigh``), so a proposal costs O(d).
:func:`sample_vector_bingham_cholesky` draws the same proposal through a Cholesky factor of Ω
instead (no eigenvectors), cheaper for the large blocks of the column sampler.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize
from scipy.linalg import solve_triangular

__all__ = ["acg_beta", "acg_log_accept", "sample_vector_bingham", "sample_vector_bingham_cholesky"]


def acg_beta(evals: np.ndarray) -> float:
    """β > 2 λ_max(B) solving Σᵢ 1/(β − 2λᵢ) = 1 (Kent, Ganeiber & Mardia 2018).

    Writing β = 2λ_max + t, the root t lies in [1, d]: at t = 1 the λ_max term alone
    is 1, at t = d every term is ≤ 1/d.
    """
    lam = np.asarray(evals, dtype=np.float64).ravel()
    d = lam.size
    gaps = 2.0 * (lam.max() - lam)  # ≥ 0, one of them 0

    def g(t: float) -> float:
        return float(np.sum(1.0 / (t + gaps)) - 1.0)

    if d == 1:
        return 2.0 * lam.max() + 1.0
    if g(float(d)) >= 0.0:  # all eigenvalues equal
        t = float(d)
    else:
        t = optimize.brentq(g, 1.0, float(d), xtol=1e-12, rtol=1e-14)
    return float(2.0 * lam.max() + t)


def acg_log_accept(x: np.ndarray, evals: np.ndarray, beta: float) -> np.ndarray:
    """log of the acceptance probability r(x)/M for proposals ``x`` (rows, eigen-coordinates).

    r(x) = exp(xᵀBx)(xᵀΩx)^{d/2}, Ω = βI − 2B, M = exp((β − d)/2) d^{d/2};
    log(r/M) = (d/2)(1 + log u − u) with u = xᵀΩx/d.  Always ≤ 0.
    """
    x = np.atleast_2d(x)
    d = x.shape[-1]
    omega = beta - 2.0 * np.asarray(evals, dtype=np.float64)
    u = (x * x) @ omega / d
    return 0.5 * d * (1.0 + np.log(u) - u)


def sample_vector_bingham(
    B: np.ndarray | None = None,
    size: int | None = None,
    *,
    rng: np.random.Generator,
    eig: tuple[np.ndarray, np.ndarray] | None = None,
    batch: int | None = None,
    max_proposals: int = 10**9,
    return_info: bool = False,
):
    """Exact draw(s) from the vector Bingham law f(x) ∝ exp(xᵀBx) on S^{d-1}.

    Parameters
    ----------
    B : symmetric d x d matrix (ignored if ``eig`` is given).
    size : number of draws; ``None`` returns a single vector of shape (d,).
    eig : optional ``(evals, evecs)`` of B (as from ``numpy.linalg.eigh``); if ``evecs``
        is None the draws are returned in the eigen-coordinates.
    return_info : also return ``{"proposals": ..., "accepted": ..., "acceptance_rate": ..., "beta": ...}``.
    """
    evals, evecs, beta, omega, inv_sqrt_omega = acg_envelope(B, eig)
    d = evals.size

    def propose(m):
        y = rng.standard_normal((m, d)) * inv_sqrt_omega
        r2 = np.einsum("ij,ij->i", y, y)
        # u = xᵀΩx / d = (Σ z²) / (d Σ z²/ω): computed as (yᵀΩy)/(d ‖y‖²)
        u = np.einsum("ij,ij,j->i", y, y, omega) / (d * r2)
        log_acc = 0.5 * d * (1.0 + np.log(u) - u)
        return log_acc, lambda idx: y[idx] / np.sqrt(r2[idx])[:, None]

    def stopped(proposals, got, n_want):
        return f"vector Bingham sampler: {proposals} proposals without finishing"

    out, proposals = rejection_draws(propose, (d,), size, rng, batch, max_proposals, stopped)
    if evecs is not None:
        out = out @ np.asarray(evecs).T
    return draws_result(out, size, return_info, proposals, beta)


def acg_envelope(B: np.ndarray | None, eig):
    """The angular central Gaussian envelope of exp(tr VᵀBV) (Kent, Ganeiber & Mardia 2018):
    ``(evals, evecs, beta, omega, 1/sqrt(omega))`` with Ω = βI − 2Λ in B's eigenbasis, from ``B``
    or its ``eig = (evals, evecs)`` (``evecs`` may be None: draws stay in the eigen-coordinates)."""
    if eig is None:
        if B is None:
            raise ValueError("give B or eig")
        B = np.asarray(B, dtype=np.float64)
        evals, evecs = np.linalg.eigh((B + B.T) / 2)
    else:
        evals, evecs = eig
        evals = np.asarray(evals, dtype=np.float64)
    beta = acg_beta(evals)
    omega = beta - 2.0 * evals  # > 0: the root of Σ 1/(β − 2λ) = 1 has β − 2λ₁ ≥ 1
    return evals, evecs, beta, omega, 1.0 / np.sqrt(omega)


def rejection_draws(propose, shape, size, rng, batch, max_proposals, stopped):
    """Draw ``size`` (None: one) accepted proposals of ``shape`` by rejection.

    ``propose(m)`` draws m proposals and returns their log acceptance probabilities and a function
    of the indices of the accepted ones giving those draws; one uniform per proposal decides.  The
    batch adapts to the observed acceptance rate.  Returns the draws (``(n, *shape)``) and the
    number of proposals up to the last one used; ``RuntimeError(stopped(proposals, got, n))``
    after ``max_proposals``."""
    n_want = 1 if size is None else int(size)
    out = np.empty((n_want, *shape))
    got = 0
    proposals = 0
    if batch is None:
        batch = max(16, min(8192, 4 * n_want + 8))
    while got < n_want:
        if proposals >= max_proposals:
            raise RuntimeError(stopped(proposals, got, n_want))
        m = int(batch)
        log_acc, accepted = propose(m)
        acc = np.log(rng.random(m)) < log_acc
        idx = np.flatnonzero(acc)
        # count proposals up to (and including) the last one used
        take = min(idx.size, n_want - got)
        if take > 0:
            out[got : got + take] = accepted(idx[:take])
            got += take
            proposals += (int(idx[take - 1]) + 1) if got == n_want else m
        else:
            proposals += m
        if got < n_want:
            # adapt the batch to the observed acceptance rate
            rate = max(got, 1) / max(proposals, 1)
            batch = int(min(65536, max(16, 1.2 * (n_want - got) / max(rate, 1e-6))))
    return out, proposals


def draws_result(out, size, return_info, proposals, beta):
    """The draws as the samplers return them: one (``size`` None) or all, with their counts."""
    res = out[0] if size is None else out
    if return_info:
        n = out.shape[0]
        return res, {
            "proposals": proposals,
            "accepted": n,
            "acceptance_rate": n / proposals,
            "beta": beta,
        }
    return res


def sample_vector_bingham_cholesky(
    M: np.ndarray, rng: np.random.Generator, max_proposals: int = 10**9
) -> np.ndarray:
    """One exact draw from exp(xᵀMx) on S^{m-1}: the ACG rejection sampler of
    :func:`sample_vector_bingham` without eigenvectors.

    Same envelope ACG(Ω), Ω = βI − 2M, same β (Σ 1/(β − 2λᵢ) = 1, from the eigenvalues only), same
    acceptance probability exp((m/2)(1 + log u − u)), u = xᵀΩx/m.  Only the proposal is drawn
    differently: y = L⁻ᵀz with Ω = LLᵀ (Cholesky), z ~ N(0, I), so y ~ N(0, Ω⁻¹) and
    yᵀΩy = zᵀz.  ``eigvalsh`` + ``cholesky`` cost about a third of a full ``eigh`` (measured in
    scripts/benchmarks/bench_sampler.py); used by :func:`reference_gibbs_sweep`.
    """
    M = (M + M.T) / 2
    m = M.shape[0]
    lam = np.linalg.eigvalsh(M)
    beta = acg_beta(lam)
    omega = beta * np.eye(m) - 2.0 * M
    L = np.linalg.cholesky(omega)
    proposals = 0
    batch = 16
    while proposals < max_proposals:
        z = rng.standard_normal((m, batch))
        y = solve_triangular(L, z, lower=True, trans="T")  # Lᵀ y = z
        r2 = np.einsum("ij,ij->j", y, y)
        u = np.einsum("ij,ij->j", z, z) / (m * r2)
        acc = np.log(rng.random(batch)) < 0.5 * m * (1.0 + np.log(u) - u)
        idx = np.flatnonzero(acc)
        if idx.size:
            j = idx[0]
            return y[:, j] / np.sqrt(r2[j])
        proposals += batch
        batch = min(4096, 2 * batch)
    raise RuntimeError(f"vector Bingham sampler: {proposals} proposals without an acceptance")
