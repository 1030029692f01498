"""Samplers for the (matrix) Bingham distribution BMF(B): density ∝ exp(tr(VᵀBV)).

Three samplers live here.

``sample_vector_bingham`` (k = 1, **exact**)
    Rejection sampling from f(x) ∝ exp(xᵀBx) on the unit sphere S^{d-1} with an
    angular central Gaussian (ACG) envelope (Kent, Ganeiber & Mardia 2018).
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

    Everything is done in the eigenbasis of B (one ``eigh``), so a proposal costs O(d).

``reference_gibbs_sweep`` / ``column_gibbs_sweeps`` (k ≥ 1, **reference MCMC**)
    Hoff (2009)'s column-wise Gibbs sampler: for each column j, the full conditional
    of v_j given the other columns M is the vector Bingham exp(xᵀBx) on the unit sphere
    of N = span(M)^⊥.  Each column is drawn exactly from it (Hoff and CSS 2013 used an inner
    coordinate-wise Gibbs sweep instead, ``rstiefel_gibbs_sweep``).  ``sample_bingham_column``
    does so without a basis of N: the ACG envelope above restricted to N, its Gaussian
    proposal drawn through a low-rank factor of the conditioned covariance and β certified by
    an inertia count (derivation in its docstring; O(d k²) per column plus O(d k) per proposal,
    against O(d³) for the QR + eigendecomposition of N that an explicit basis costs, which is
    still used for a non-diagonal B).

``givens_sweeps`` (k ≥ 1, **fast MCMC**, the default for k > 1)
    A Gibbs sampler on the orthogonal group.  The state is a full orthogonal matrix
    Q = [V, W] (V = first k columns, W an orthonormal completion), with target
    π̃(dQ) ∝ exp(tr(VᵀBV)) μ(dQ), μ = Haar measure on O(d).  Because Haar measure on
    O(d) pushes forward to the uniform measure on the Stiefel manifold and the
    density depends on Q only through V, the V-marginal of π̃ is exactly BMF(B).

    One move picks a pair of columns (i, j), i < k ≤ j (or i < j < k) and replaces
    Q by Q G(θ), where G(θ) is the Givens rotation by θ in coordinates (i, j), with θ
    drawn from the conditional of π̃ on the coset Q·H, H = {G(θ)} ≅ SO(2):
    density ∝ π̃(Q G(θ)) dθ.  Invariance: H is a compact subgroup and μ is
    right-invariant, so μ disintegrates over the cosets {Q H} into the uniform
    measure dθ/2π on each coset; the move therefore draws exactly from the
    conditional law of π̃ given the coset (a σ-algebra), and such a draw leaves π̃
    invariant (it is a Gibbs step for the "coset" coordinate).  No accept/reject
    step is involved.

    The conditional is explicit.  With C = QᵀBQ, rotating column i against a
    completion column j changes v_i into cos θ v_i + sin θ w_j and
        v_iᵀBv_i = (c_ii + c_jj)/2 + (c_ii − c_jj)/2 · cos 2θ + c_ij · sin 2θ,
    so 2θ (mod 2π) is von Mises with κ = ‖(a, c_ij)‖, μ = atan2(c_ij, a),
    a = (c_ii − c_jj)/2, and θ = φ/2 or φ/2 + π with probability ½ each (the law of θ
    has period π).  The von Mises draw is the exact Best–Fisher (1979) rejection
    sampler (no wrapped-normal shortcut at large κ); ``givens_angle`` turns it into (cos θ, sin θ)
    by the angle-sum and half-angle formulas, without atan2/asin/cos/sin.  A rotation between two columns
    of V leaves tr(VᵀBV) unchanged, so its θ is uniform on [0, 2π): these moves only
    spin the frame (they help the F_k statistic, not q_F).

    One *iteration* (sweep) = every pair (i, j) with i < k ≤ j once, then every
    pair i < j < k once.  In the eigenbasis of B (B = diag(b)) each move costs O(d):
    c_ij = Σ_l b_l Q_li Q_lj plus the update of two columns (fused in one pass: the rotation of
    move (i, j) computes c_i,j+1 of the next move); c_ii is cached.
    A sweep is O(k (d − k) d) instead of O(k d³) for the reference sweep.

    The chain's released V is its last state; the completion W is a nuisance
    variable.  Starting Q from Haar gives a uniform V, as in CSS 2013.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize

try:  # Numba is a hard dependency of the project, but keep a clear error path.
    import numba
    from numba import njit
except ImportError:  # pragma: no cover
    numba = None

    def njit(*args, **kwargs):  # type: ignore[no-redef]
        if args and callable(args[0]):
            return args[0]
        return lambda f: f


__all__ = [
    "acg_beta",
    "acg_log_accept",
    "sample_vector_bingham",
    "reference_gibbs_sweep",
    "sample_vector_bingham_cholesky",
    "sample_bingham_column",
    "givens_sweeps",
    "rstiefel_gibbs_sweep",
    "seed_numba",
    "vonmises_numba",
    "givens_angle",
    "null_space_split",
    "run_bingham_chains",
    "progress_enabled",
]


# ---------------------------------------------------------------------------
# k = 1: exact ACG rejection sampler
# ---------------------------------------------------------------------------

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


def sample_vector_bingham(B: np.ndarray | None = None, size: int | None = None, *,
                          rng: np.random.Generator, eig: tuple[np.ndarray, np.ndarray] | None = None,
                          batch: int | None = None, max_proposals: int = 10**9,
                          return_info: bool = False):
    """Exact draw(s) from the vector Bingham law f(x) ∝ exp(xᵀBx) on S^{d-1}.

    Parameters
    ----------
    B : symmetric d x d matrix (ignored if ``eig`` is given).
    size : number of draws; ``None`` returns a single vector of shape (d,).
    eig : optional ``(evals, evecs)`` of B (as from ``numpy.linalg.eigh``); if ``evecs``
        is None the draws are returned in the eigen-coordinates.
    return_info : also return ``{"proposals": ..., "accepted": ..., "acceptance_rate": ..., "beta": ...}``.
    """
    if eig is None:
        if B is None:
            raise ValueError("give B or eig")
        B = np.asarray(B, dtype=np.float64)
        evals, evecs = np.linalg.eigh((B + B.T) / 2)
    else:
        evals, evecs = eig
        evals = np.asarray(evals, dtype=np.float64)
    d = evals.size
    n_want = 1 if size is None else int(size)
    beta = acg_beta(evals)
    omega = beta - 2.0 * evals
    inv_sqrt_omega = 1.0 / np.sqrt(omega)
    out = np.empty((n_want, d))
    got = 0
    proposals = 0
    if batch is None:
        batch = max(16, min(8192, 4 * n_want + 8))
    while got < n_want:
        if proposals >= max_proposals:
            raise RuntimeError(f"vector Bingham sampler: {proposals} proposals without finishing")
        m = batch
        y = rng.standard_normal((m, d)) * inv_sqrt_omega
        r2 = np.einsum("ij,ij->i", y, y)
        x = y / np.sqrt(r2)[:, None]
        # u = xᵀΩx / d = (Σ z²) / (d Σ z²/ω): computed as (yᵀΩy)/(d ‖y‖²)
        u = np.einsum("ij,ij,j->i", y, y, omega) / (d * r2)
        log_acc = 0.5 * d * (1.0 + np.log(u) - u)
        acc = np.log(rng.random(m)) < log_acc
        idx = np.flatnonzero(acc)
        # count proposals up to (and including) the last one we use
        take = min(idx.size, n_want - got)
        if take > 0:
            out[got:got + take] = x[idx[:take]]
            got += take
            proposals += (int(idx[take - 1]) + 1) if got == n_want else m
        else:
            proposals += m
        if got < n_want:
            # adapt the batch to the observed acceptance rate
            rate = max(got, 1) / max(proposals, 1)
            batch = int(min(65536, max(16, 1.2 * (n_want - got) / max(rate, 1e-6))))
    if evecs is not None:
        out = out @ np.asarray(evecs).T
    res = out[0] if size is None else out
    if return_info:
        return res, {"proposals": proposals, "accepted": n_want,
                     "acceptance_rate": n_want / proposals, "beta": beta}
    return res


# ---------------------------------------------------------------------------
# k > 1: reference sampler (Hoff 2009 column-wise Gibbs, exact conditionals)
# ---------------------------------------------------------------------------

def sample_vector_bingham_cholesky(M: np.ndarray, rng: np.random.Generator, max_proposals: int = 10**9) -> np.ndarray:
    """One exact draw from exp(xᵀMx) on S^{m-1}: the ACG rejection sampler of
    :func:`sample_vector_bingham` without eigenvectors.

    Same envelope ACG(Ω), Ω = βI − 2M, same β (Σ 1/(β − 2λᵢ) = 1, from the eigenvalues only), same
    acceptance probability exp((m/2)(1 + log u − u)), u = xᵀΩx/m.  Only the proposal is drawn
    differently: y = L⁻ᵀz with Ω = LLᵀ (Cholesky), z ~ N(0, I), so y ~ N(0, Ω⁻¹) and
    yᵀΩy = zᵀz.  ``eigvalsh`` + ``cholesky`` cost about a third of a full ``eigh`` (measured in
    scripts/bench_sampler.py); used by :func:`reference_gibbs_sweep`.
    """
    from scipy.linalg import solve_triangular

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


# ---------------------------------------------------------------------------
# Exact column conditional without a basis of the null space (Numba; the reference sampler)
# ---------------------------------------------------------------------------

@njit(cache=True)
def _acg_shift(lam, rest):
    """Kent et al.'s shift t for the proxy spectrum {lam} ∪ rest: 1/t + Σ 1/(t + 2(lam − rest)₊) = 1.

    Only the envelope's efficiency depends on t (every valid β gives an exact draw): a few Newton steps
    from t = 1 (convex decreasing function: Newton from the left increases monotonically to the root),
    clipped to [1, len(rest) + 1].
    """
    t = 1.0
    for _ in range(8):
        f = 1.0 / t - 1.0
        fp = -1.0 / (t * t)
        for l in range(rest.shape[0]):
            g = 2.0 * (lam - rest[l])
            if g < 0.0:
                g = 0.0
            inv = 1.0 / (t + g)
            f += inv
            fp -= inv * inv
        if f <= 0.0:
            break
        t -= f / fp
    return min(max(t, 1.0), rest.shape[0] + 1.0)


@njit(cache=True)
def _divide_rows(M, D):
    """D⁻¹M for a diagonal D given as the vector D."""
    d, km1 = M.shape
    out = np.empty((d, km1))
    for l in range(d):
        for a in range(km1):
            out[l, a] = M[l, a] / D[l]
    return out


@njit(cache=True)
def _remove_span(M, y, coef):
    """y ← y − M(Mᵀy) in place (M orthonormal, C-ordered; ``coef`` is scratch of length k − 1);
    returns ‖y‖² after the projection."""
    d, km1 = M.shape
    for a in range(km1):
        coef[a] = 0.0
    for l in range(d):  # Mᵀy, row-wise
        yl = y[l]
        for a in range(km1):
            coef[a] += M[l, a] * yl
    nrm2 = 0.0
    for l in range(d):
        t = y[l]
        for a in range(km1):
            t -= M[l, a] * coef[a]
        y[l] = t
        nrm2 += t * t
    return nrm2


@njit(cache=True)
def _n_above(lam, b, M):
    """#eigenvalues of B|_N above lam, N = span(M)^⊥ (Sturm count via Haynsworth inertia):
    neg(D|_N) = neg(D) + pos(MᵀD⁻¹M) − (k − 1) with D = 2(lam I − B)."""
    d, km1 = M.shape
    D = 2.0 * (lam - b)
    nneg = 0
    for l in range(d):
        if D[l] == 0.0:
            D[l] = 1e-300
        if D[l] < 0.0:
            nneg += 1
    if km1 == 0:
        return nneg
    T = np.ascontiguousarray(M.T) @ _divide_rows(M, D)
    ev = np.linalg.eigvalsh(0.5 * (T + T.T))
    npos = 0
    for a in range(km1):
        if ev[a] > 0.0:
            npos += 1
    return nneg + npos - km1


@njit(cache=True)
def _column_envelope(lam, b, rest, M):
    """ACG envelope on N for β = 2 lam + t: (ok, β, D, Q, C − I) with the proposal
    y = |D|^{-1/2}(g + Q (C − I) Qᵀ g) ~ N(0, (D|_N)⁻¹); ok = False if D is not ≻ 0 on N."""
    d, km1 = M.shape
    t = _acg_shift(lam, rest)
    beta = 2.0 * lam + t
    D = beta - 2.0 * b
    absD = np.abs(D)
    nneg = 0
    for l in range(d):
        if D[l] < 0.0:
            nneg += 1
    p = nneg + km1
    Q = np.zeros((d, p))
    Cm = np.zeros((p, p))
    if nneg > km1 or absD.min() <= 1e-9 * absD.max():
        return False, beta, D, Q, Cm
    if p == 0:
        return True, beta, D, Q, Cm
    DiM = _divide_rows(M, D)
    Tinv = np.zeros((km1, km1))
    if km1 > 0:
        T = np.ascontiguousarray(M.T) @ DiM
        T = 0.5 * (T + T.T)
        ev = np.linalg.eigvalsh(T)
        nneg_T = 0
        amin = np.inf
        amax = 0.0
        for a in range(km1):
            if ev[a] < 0.0:
                nneg_T += 1
            amin = min(amin, abs(ev[a]))
            amax = max(amax, abs(ev[a]))
        # D|_N ≻ 0  ⇔  T has exactly neg(D) negative eigenvalues (and none zero)
        if nneg_T != nneg or amin <= 1e-11 * amax:
            return False, beta, D, Q, Cm
        Tinv = np.linalg.inv(T)
    F = np.zeros((d, p))
    j = 0
    for l in range(d):
        if D[l] < 0.0:
            F[l, j] = 1.0
            j += 1
    for l in range(d):
        for a in range(km1):
            F[l, nneg + a] = DiM[l, a]
        s = math.sqrt(absD[l])
        for a in range(p):
            F[l, a] *= s
    Q, R = np.linalg.qr(F)
    K = np.zeros((p, p))
    j = 0
    for l in range(d):
        if D[l] < 0.0:
            K[j, j] = 2.0 / absD[l]
            j += 1
    K[nneg:, nneg:] = Tinv
    q = Q.shape[1]  # min(d, p): with p > d (tiny d) Q is square and the same identity holds
    G = np.eye(q) - R @ K @ np.ascontiguousarray(R.T)
    w, E = np.linalg.eigh(0.5 * (G + G.T))
    # G has exactly k − 1 zero eigenvalues (the null space |D|^{1/2} M) and the rest positive
    if w.min() < -1e-8 * max(1.0, w.max()):
        return False, beta, D, Q, Cm
    for a in range(q):
        w[a] = math.sqrt(max(w[a], 0.0))
    Cm = (E * w) @ np.ascontiguousarray(E.T) - np.eye(q)
    return True, beta, D, np.ascontiguousarray(Q), Cm


@njit(cache=True)
def _column_draw(V, i, b, rest, gen, power_iterations, stats, max_proposals=10_000_000):
    """Exact draw of column i of V (in place) from its full conditional; see :func:`sample_bingham_column`.
    stats[0] += proposals, stats[1] += Sturm bisection steps."""
    d, k = V.shape
    m = d - k + 1
    km1 = k - 1
    M = np.empty((d, km1))
    for l in range(d):
        c = 0
        for a in range(k):
            if a != i:
                M[l, c] = V[l, a]
                c += 1
    x = np.empty(d)
    for l in range(d):
        x[l] = V[l, i]
    y = np.empty(d)
    coef = np.empty(km1)
    for _ in range(power_iterations):
        for l in range(d):
            y[l] = b[l] * x[l]
        nrm = _remove_span(M, y, coef)
        if nrm == 0.0:
            break
        nrm = math.sqrt(nrm)
        for l in range(d):
            x[l] = y[l] / nrm
    lam_lo = 0.0
    for l in range(d):
        lam_lo += b[l] * x[l] * x[l]
    # The envelope must be valid (β > 2λ_max(B|_N), checked inside) and efficient: a Rayleigh quotient far
    # below λ_max gives a proxy spectrum whose Kent shift t is huge, hence a valid β ≫ 2λ_max and a
    # near-uniform proposal (acceptance ~ exp(−λ_max)).  So λ_max ≤ λ_lo + 1/2 is verified by the Sturm
    # count; if not, λ_max is bracketed to 1/4 by bisection and the upper end used.
    ok = False
    if _n_above(lam_lo + 0.5, b, M) == 0:
        ok, beta, D, Q, Cm = _column_envelope(lam_lo, b, rest, M)
    if not ok:
        lam_hi = b.max() * (1.0 + 1e-12) + 1e-12
        steps = 0
        while lam_hi - lam_lo > 0.25 and steps < 200:
            mid = 0.5 * (lam_lo + lam_hi)
            if _n_above(mid, b, M) > 0:
                lam_lo = mid
            else:
                lam_hi = mid
            steps += 1
        lam = lam_hi
        while not ok and steps < 400:
            ok, beta, D, Q, Cm = _column_envelope(lam, b, rest, M)
            lam += 0.25 + 1e-6 * abs(lam)
            steps += 1
        stats[1] += steps
        if not ok:
            raise RuntimeError("no valid ACG envelope for the column conditional")
    p = Q.shape[1]
    inv_sqrt = np.empty(d)
    for l in range(d):
        inv_sqrt[l] = 1.0 / math.sqrt(abs(D[l]))
    QCm = np.ascontiguousarray(Q) @ Cm if p > 0 else np.zeros((d, 0))
    g = np.empty(d)
    sv = np.empty(p)
    half_m = 0.5 * m
    n_prop = 0
    while True:
        n_prop += 1
        if n_prop > max_proposals:
            raise RuntimeError("column conditional: no acceptance within max_proposals proposals")
        stats[0] += 1
        for l in range(d):
            g[l] = gen.standard_normal()
        for a in range(p):
            sv[a] = 0.0
        for l in range(d):
            gl = g[l]
            for a in range(p):
                sv[a] += Q[l, a] * gl
        r2 = 0.0
        yDy = 0.0
        for l in range(d):
            s = g[l]
            for a in range(p):
                s += QCm[l, a] * sv[a]
            s *= inv_sqrt[l]
            y[l] = s
            r2 += s * s
            yDy += D[l] * s * s
        u = yDy / (m * r2)
        if math.log(gen.random()) < half_m * (1.0 + math.log(u) - u):
            break
    # y ∈ N in exact arithmetic; project out rounding, normalise
    nrm = math.sqrt(_remove_span(M, y, coef))
    for l in range(d):
        V[l, i] = y[l] / nrm


@njit(cache=True)
def column_gibbs_sweeps(V, b, rest, gen, n_iter, energy_out, sum_V, power_iterations, stats):
    """``n_iter`` iterations of Hoff's column Gibbs sampler with exact conditionals, in place on V (d × k,
    eigen-coordinates of B = diag(b)); columns in order 0..k−1.  ``rest`` = b without its k largest
    values (the envelope's proxy spectrum).  energy_out[t] = tr(VᵀBV), sum_V += V after each iteration."""
    d, k = V.shape
    for it in range(n_iter):
        for i in range(k):
            _column_draw(V, i, b, rest, gen, power_iterations, stats)
        e = 0.0
        for l in range(d):
            for a in range(k):
                e += b[l] * V[l, a] * V[l, a]
                sum_V[l, a] += V[l, a]
        energy_out[it] = e


#: power steps for the Rayleigh estimate of λ_max(B|_N) (measured on census at stationarity: 3 steps need the
#: bisection fallback for ~10% of the columns, 8 for a few per cent; efficiency only, never the law)
COLUMN_POWER_ITERATIONS = 8


def _proxy_rest(b: np.ndarray, k: int) -> np.ndarray:
    d = b.size
    return np.ascontiguousarray(np.partition(b, d - k)[: d - k]) if k < d else np.empty(0)


def sample_bingham_column(V: np.ndarray, i: int, b: np.ndarray, rng: np.random.Generator, *,
                          power_iterations: int = COLUMN_POWER_ITERATIONS, return_info: bool = False):
    """Exact draw of column ``i`` of ``V`` (d × k, orthonormal) from its full conditional under
    BMF(diag(b)), in place: Hoff (2009)'s column Gibbs step, without a basis of the null space.

    Given the other columns M (d × (k−1)), v_i has density ∝ exp(xᵀBx) on the unit sphere of
    N = span(M)^⊥ (dimension m = d − k + 1), B = diag(b) (the eigen-coordinates used by
    :func:`run_bingham_chains`).  It is drawn by the ACG rejection sampler of
    :func:`sample_vector_bingham`, *on N*:

    * Envelope: ACG on S(N) with precision D = βI − 2B restricted to N, valid for every β with D ≻ 0
      on N (β > 2λ_max(B|_N)); on S(N), xᵀDx = β − 2xᵀBx, so the acceptance probability is
      exp((m/2)(1 + log u − u)), u = xᵀDx/m, as for k = 1.  β only sets the efficiency.
    * Validity of β, checked exactly by inertia (Haynsworth, bordered matrix [[D, M], [Mᵀ, 0]]):
      D|_N ≻ 0  ⇔  T = MᵀD⁻¹M has exactly as many negative eigenvalues as D.  β = 2λ + t with λ a
      Rayleigh quotient of B on N after ``power_iterations`` power steps from v_i and t Kent et al.'s
      shift for the proxy spectrum {λ} ∪ (b without its k largest values); if the check fails, λ_max(B|_N)
      is bracketed to 1/4 by bisection of the same inertia count (number of eigenvalues above λ).
    * Proposal y ~ N(0, (D|_N)⁻¹) on N: the covariance of the Gaussian with precision D conditioned on
      Mᵀy = 0 is Σ = D⁻¹ − D⁻¹M T⁻¹ MᵀD⁻¹ = |D|^{-1/2}(I − F K Fᵀ)|D|^{-1/2} with
      F = |D|^{1/2}[e_H, D⁻¹M], K = diag(2/|D_H|, T⁻¹), H = {l : D_l < 0} (|H| ≤ k − 1); with F = QR
      (thin) and C = (I − RKRᵀ)^{1/2}: y = |D|^{-1/2}(g + Q(C − I)Qᵀg), g ~ N(0, I_d).
      O(d k²) set-up per column and O(d k) per proposal, against O(d³) for a basis of N.

    Tested in tests/test_bingham_column.py (covariance factor, inertia counts, draws against the
    eigendecomposition sampler).
    """
    V = np.asarray(V)
    d, k = V.shape
    b = np.ascontiguousarray(b, dtype=np.float64)
    W = np.ascontiguousarray(V, dtype=np.float64)
    stats = np.zeros(2, dtype=np.int64)
    _column_draw(W, int(i), b, _proxy_rest(b, k), rng, int(power_iterations), stats)
    V[:, i] = W[:, i]
    if return_info:
        return V, {"proposals": int(stats[0]), "bisection_steps": int(stats[1])}
    return V


#: block size from which reference_gibbs_sweep draws columns with Cholesky proposals (measured: at d = 5
#: the eigenvector sampler is ~2.4x faster per draw and a reference chain ~16x faster; at d >= 100 the
#: Cholesky one ~1.8x faster per sweep)
CHOLESKY_MIN_DIM = 64


def reference_gibbs_sweep(V: np.ndarray, B: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One sweep of Hoff's column-wise Gibbs sampler for BMF(B), in place on ``V`` (d x k).

    For diagonal ``B`` (the eigen-coordinates, as in :func:`run_bingham_chains`) each column is drawn
    exactly from its full conditional by :func:`sample_bingham_column` (O(d k²) + O(d k) per proposal).
    Otherwise, for each column j: N = orthonormal basis of the complement of the other columns
    (complete QR), z ~ vector Bingham(NᵀBN) drawn exactly (:func:`sample_vector_bingham_cholesky` for
    blocks of size >= ``CHOLESKY_MIN_DIM``, :func:`sample_vector_bingham` below),
    v_j = N z.  ``B`` diagonal (the eigenbasis, as in :func:`run_bingham_chains`) is used as such.
    """
    d, k = V.shape
    b = np.diag(B) if np.count_nonzero(B - np.diag(np.diag(B))) == 0 else None
    if b is not None:  # the eigen-coordinates: O(d k²) per column, no basis of the null space
        W = np.ascontiguousarray(V, dtype=np.float64)
        b = np.ascontiguousarray(b, dtype=np.float64)
        column_gibbs_sweeps(W, b, _proxy_rest(b, k), rng, 1, np.empty(1), np.zeros((d, k)), COLUMN_POWER_ITERATIONS,
                            np.zeros(2, dtype=np.int64))
        V[...] = W
        return V
    for j in range(k):
        others = np.delete(V, j, axis=1)
        if k > 1:
            Qc, _ = np.linalg.qr(others, mode="complete")
            N = Qc[:, k - 1:]
        else:
            N = np.eye(d)
        M = (N.T * b) @ N if b is not None else N.T @ B @ N
        # two exact samplers of the same law: Cholesky proposals pay off for large blocks (Figure 2's
        # d = 116, 150), the eigenvector version for small ones (per-call overhead of solve_triangular)
        z = (sample_vector_bingham_cholesky(M, rng) if M.shape[0] >= CHOLESKY_MIN_DIM
             else sample_vector_bingham((M + M.T) / 2, rng=rng))
        V[:, j] = N @ z
    return V


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
    columns, M = NᵀBN = E diag(l) Eᵀ, y = Eᵀ Nᵀ v_r, then ONE coordinate-wise Gibbs sweep of the
    vector Bingham in the eigenbasis of M (``_coordinate_sweep_bingham``), v_r = N E y.  The column
    is not drawn exactly from its conditional; whether that mixes better or worse per iteration than
    :func:`reference_gibbs_sweep` is measured, not assumed (docs/sampler.md).  Used to measure the
    paper's sampler (scripts/bench_sampler.py); Numba's generator is seeded from ``rng`` on each call.
    """
    d, k = V.shape
    seed_numba(int(rng.integers(0, 2**31 - 1)))
    for r in rng.permutation(k):
        others = np.delete(V, r, axis=1)
        if k > 1:
            Qc, _ = np.linalg.qr(others, mode="complete")
            N = Qc[:, k - 1:]
        else:
            N = np.eye(d)
        M = N.T @ B @ N
        lam, E = np.linalg.eigh((M + M.T) / 2)
        lam, E = lam[::-1].copy(), E[:, ::-1]  # R's eigen(): decreasing order, swept in that order
        y = E.T @ (N.T @ V[:, r])
        y /= np.linalg.norm(y)
        _coordinate_sweep_bingham(y, lam)
        x = N @ (E @ y)
        V[:, r] = x / np.linalg.norm(x)
    return V


# ---------------------------------------------------------------------------
# k > 1: fast sampler (Givens-rotation Gibbs on O(d)), Numba kernels
# ---------------------------------------------------------------------------

@njit(cache=True)
def seed_numba(seed):
    """Seed Numba's internal generator (used by the Givens kernel)."""
    np.random.seed(seed)


@njit(cache=True)
def _vonmises_one_minus_cos(kappa):
    """1 − cos X for X ~ von Mises(0, κ), κ ≥ 1e-8 (Best & Fisher 1979; the sign of X is left to the
    caller, whose law is symmetric).  Written in s − 1 and 1 − W so that nothing cancels at large κ."""
    if kappa < 1e-5:
        sm1 = 1.0 / kappa + kappa - 1.0
    else:
        r = 1.0 + math.sqrt(1.0 + 4.0 * kappa * kappa)
        rho = (r - math.sqrt(2.0 * r)) / (2.0 * kappa)
        one_m_rho = 1.0 - rho
        sm1 = one_m_rho * one_m_rho / (2.0 * rho)  # s - 1, no cancellation
    while True:
        U = np.random.random()
        onepz = 2.0 * math.cos(0.5 * math.pi * U) ** 2  # 1 + Z
        onemz = 2.0 - onepz  # 1 - Z
        one_m_w = sm1 * onemz / (sm1 + onepz)  # 1 - W, exact algebra
        Y = kappa * (sm1 + one_m_w)  # kappa (s - W)
        V = np.random.random()
        if Y * (2.0 - Y) - V >= 0.0:
            break
        if V > 0.0 and Y > 0.0 and math.log(Y / V) + 1.0 - Y >= 0.0:
            break
    return min(max(one_m_w, 0.0), 2.0)


@njit(cache=True)
def vonmises_numba(mu, kappa):
    """Exact von Mises(μ, κ) draw on (−π, π] (Best & Fisher 1979), stable for large κ."""
    if kappa < 1e-8:
        return math.pi * (2.0 * np.random.random() - 1.0)
    # acos(W) = 2 asin(sqrt((1 - W)/2)), accurate for W close to 1
    ang = 2.0 * math.asin(math.sqrt(0.5 * _vonmises_one_minus_cos(kappa)))
    if np.random.random() < 0.5:
        ang = -ang
    return mu + ang


@njit(cache=True)
def givens_angle(a, cij):
    """(cos θ, sin θ) for the Givens move's angle: 2θ ~ von Mises(atan2(c_ij, a), κ = ‖(a, c_ij)‖) and
    θ ∈ {φ/2, φ/2 + π} with probability ½ each (the law of θ has period π), without trigonometry.

    With φ = μ + X, X ~ vM(0, κ): cos X = 1 − (1 − W) and |sin X| = √((1 − W)(1 + W)) from the
    Best–Fisher draw, one fair coin for the sign of X, cos μ = a/κ, sin μ = c_ij/κ, then the angle-sum
    formulas give (cos φ, sin φ) and the half-angle formulas (cos φ/2, sin φ/2) for φ taken in
    (−π, π] (cos φ/2 ≥ 0); a second fair coin adds π (negates both).  The two coins come from one
    uniform: u < ½ and (u mod ½) < ¼ are independent fair coins.  Same law as drawing φ with
    ``vonmises_numba`` and taking cos/sin of θ (tested), at about half the cost.
    """
    kappa = math.sqrt(a * a + cij * cij)
    u = np.random.random()
    if kappa < 1e-8:  # uniform φ (no preferred direction)
        phi = math.pi * (2.0 * np.random.random() - 1.0)
        cphi = math.cos(phi)
        sphi = math.sin(phi)
    else:
        one_m_w = _vonmises_one_minus_cos(kappa)
        cx = 1.0 - one_m_w
        sx = math.copysign(math.sqrt(one_m_w * (2.0 - one_m_w)), u - 0.5)  # first coin: u < ½ negates
        inv_kappa = 1.0 / kappa
        cmu = a * inv_kappa
        smu = cij * inv_kappa
        cphi = cmu * cx - smu * sx
        sphi = smu * cx + cmu * sx
    # half angle, the branch without cancellation: cos φ/2 = √((1 + cos φ)/2) if cos φ ≥ 0, else
    # |sin φ/2| = √((1 − cos φ)/2) with the sign of sin φ; the other from sin φ = 2 sin φ/2 cos φ/2.
    # c² + s² = 1 + O(rounding) (cx² + sx² = 1 exactly in exact arithmetic), and the chain's state is
    # re-orthonormalised periodically anyway.  Written as selects, not branches: the signs are fair
    # coins, so branches on them are mispredicted half the time (about 40 ns a move, measured).
    big = math.sqrt(0.5 * (1.0 + abs(cphi)))
    other = 0.5 * sphi / big
    nonneg = cphi >= 0.0
    c = big if nonneg else abs(other)
    s = other if nonneg else math.copysign(big, sphi)
    # second coin: (u mod ½) < ¼ negates both
    u_mod_half = u - 0.5 if u >= 0.5 else u
    sign = math.copysign(1.0, u_mod_half - 0.25)
    return sign * c, sign * s


@njit(cache=True, fastmath=True)
def _column_energy(Qt, b, j):
    d = b.shape[0]
    s = 0.0
    for l in range(d):
        s += b[l] * Qt[j, l] * Qt[j, l]
    return s


@njit(cache=True, fastmath=True)
def _weighted_dot(Qt, b, i, j):
    """c_ij = Σ_l b_l Qt[i, l] Qt[j, l], an entry of QᵀBQ in B's eigenbasis."""
    s = 0.0
    for l in range(b.shape[0]):
        s += b[l] * Qt[i, l] * Qt[j, l]
    return s


@njit(cache=True, fastmath=True)
def _rotate_rows(Qt, i, j, c, s):
    """Qt[i], Qt[j] <- c Qt[i] + s Qt[j], c Qt[j] − s Qt[i]: the Givens rotation Q·G(θ) on columns i, j."""
    for l in range(Qt.shape[1]):
        qi = Qt[i, l]
        qj = Qt[j, l]
        Qt[i, l] = c * qi + s * qj
        Qt[j, l] = c * qj - s * qi


@njit(cache=True, fastmath=True)
def _rotate_rows_then_dot(Qt, b, i, j, j_next, c, s):
    """``_rotate_rows(Qt, i, j, c, s)`` and, in the same pass, return Σ_l b_l Qt[i, l] Qt[j_next, l] with
    the rotated row i: the next move's c_ij (one pass over row i instead of two)."""
    acc = 0.0
    for l in range(Qt.shape[1]):
        qi = Qt[i, l]
        qj = Qt[j, l]
        new_i = c * qi + s * qj
        Qt[i, l] = new_i
        Qt[j, l] = c * qj - s * qi
        acc += b[l] * new_i * Qt[j_next, l]
    return acc


#: Givens sweeps in one iteration of the fast chain (measured: about the mixing of one reference iteration)
GIBBS_SWEEPS_PER_ITERATION = 2


@njit(cache=True)
def givens_sweeps(Qt, b, k, n_iter, energy_out, sum_V, sweeps=1):
    """Run ``n_iter`` iterations of the Givens-Gibbs chain in place on one chain.

    One iteration = ``sweeps`` passes over the k(d − k) pairs (i < k <= j), each an exact draw of
    the rotation angle from its von Mises conditional, then one uniform spin of every pair inside V
    (which leaves tr(VᵀBV) unchanged). Every move is an exact conditional draw, so any such
    sequence leaves the target invariant.

    Qt : (d, m) array, row j = column j of Q (in the eigenbasis of B) restricted to the m coordinates
        that B acts on (m = d, or the m = r rows of Q outside B's null space: see ``null_space_split``).
    b : (m,) eigenvalues of B on those coordinates.
    energy_out : (n_iter,) receives tr(VᵀBV) after each iteration.
    sum_V : (k, m) running sum of Vᵀ (for the F_k statistic), updated in place.
    """
    d = Qt.shape[0]
    cdiag = np.empty(d)
    for j in range(d):
        cdiag[j] = _column_energy(Qt, b, j)
    for it in range(n_iter):
        for _sweep in range(sweeps):
            for i in range(k if k < d else 0):
                cij = _weighted_dot(Qt, b, i, k)
                for j in range(k, d):
                    cii = cdiag[i]
                    cjj = cdiag[j]
                    c, s = givens_angle(0.5 * (cii - cjj), cij)
                    # rotate, and compute the next pair's c_ij in the same pass (the last pass's is unused)
                    cij_next = _rotate_rows_then_dot(Qt, b, i, j, min(j + 1, d - 1), c, s)
                    cdiag[i] = c * c * cii + 2.0 * c * s * cij + s * s * cjj
                    cdiag[j] = s * s * cii - 2.0 * c * s * cij + c * c * cjj
                    cij = cij_next
        # frame spins inside V: conditional of θ is uniform (tr(VᵀBV) unchanged)
        for i in range(k):
            for j in range(i + 1, k):
                theta = 2.0 * math.pi * np.random.random()
                _rotate_rows(Qt, i, j, math.cos(theta), math.sin(theta))
        e = 0.0
        for i in range(k):
            cdiag[i] = _column_energy(Qt, b, i)
            e += cdiag[i]
            for l in range(Qt.shape[1]):
                sum_V[i, l] += Qt[i, l]
        energy_out[it] = e


# ---------------------------------------------------------------------------
# Multi-chain driver (shared by ppca and the Figure-2 experiment)
# ---------------------------------------------------------------------------

#: eigenvalues within this many units of rounding (× d × max|b|) of the smallest are B's null space
NULL_SPACE_TOLERANCE_ULPS = 16.0


def null_space_split(evals: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(active, null, b0): the coordinates (eigen-coordinates of B) outside and inside B's bottom
    eigenspace, and its eigenvalue b0; ``null`` is empty when there is nothing to gain.

    BMF(B) = BMF(B − b0 I) (tr VᵀV = k), so after the shift B acts only on the r = |active|
    coordinates.  The Givens chain then needs only the r × d block Q_P of its state Q (its moves, and
    every conditional they draw from, depend on Q through Q_PᵀB_P Q_P), and the null block Q_Z is
    drawn at the end (``_complete_null_rows``).  The bottom eigenspace is found with a tolerance,
    ``NULL_SPACE_TOLERANCE_ULPS`` × d × u × max|b| (u = 2⁻⁵³): an eigensolver returns the exact zero
    eigenvalues of a rank-deficient A = XᵀX/n (e.g. census, rank 304–414 of 512) only up to
    rounding of that order, so setting them equal changes log-density ratios by at most 2k times the
    tolerance (≤ 1e-8 at census full n), below the eigensolver's own error in B.
    """
    b = np.asarray(evals, dtype=np.float64)
    d = b.size
    b0 = float(b.min())
    tol = NULL_SPACE_TOLERANCE_ULPS * d * np.finfo(np.float64).eps * float(np.abs(b).max())
    null = np.flatnonzero(b - b0 <= tol)
    active = np.flatnonzero(b - b0 > tol)
    if null.size < 2 or active.size == 0:  # no null space to drop (one coordinate: no gain), or B ∝ I
        return np.arange(d), np.empty(0, dtype=np.int64), 0.0
    return active, null, float(b[null].mean())


def _complete_null_rows(QPt: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """The first k columns of Q_Z: a Haar-random orthonormal basis (rows) of the complement of Q_P's
    rows, given Qᵀ_P as the d × r matrix ``QPt`` with orthonormal columns.

    Exact: a Haar start makes Q_Z given Q_P uniform on the completions of Q_P (Q_Z = H N, N any
    basis of the complement, H Haar on O(z) and independent of Q_P), and every move multiplies Q
    on the right by a rotation chosen from Q_P alone, so Q_Z(t) = H N(t) stays uniform on the
    completions of Q_P(t) at every t; the chain never looks at H, which is drawn here, once.
    """
    d, r = QPt.shape
    G = rng.standard_normal((d, d - r))
    for _ in range(2):  # project onto the complement (twice: orthogonal to rounding)
        G -= QPt @ (QPt.T @ G)
    Qz, R = np.linalg.qr(G)
    Qz = Qz * np.sign(np.diag(R))  # Haar on the complement (QR of a Gaussian with positive diag R)
    return Qz[:k].T.copy()  # (z, k): rows of Q_Z, first k columns of Q


def progress_enabled(progress: bool | None) -> bool:
    """``progress=None`` (auto): show a bar only on a TTY and when ``CI`` is unset."""
    import os
    import sys

    if progress is not None:
        return bool(progress)
    if os.environ.get("CI"):
        return False
    try:
        return sys.stderr.isatty()
    except Exception:  # pragma: no cover
        return False


def _drive_chain(advance, iterations: int, chunk: int, rec_T: np.ndarray, F_row: np.ndarray, k: int, bar) -> None:
    """Run one chain in chunks of at most ``chunk`` iterations, stopping exactly on every record point
    of ``rec_T`` to store F_k there in ``F_row``.  ``advance(done, step)`` runs iterations
    [done, done + step) of the chain (its kernel writes the energy trace) and returns the running sum
    of V since iteration 0, in any layout."""
    done = 0
    next_rec = 0
    while done < iterations:
        step = min(max(chunk, 1), iterations - done)
        if next_rec < rec_T.size:
            step = min(step, int(rec_T[next_rec]) - done)
        sum_V = advance(done, step)
        done += step
        if next_rec < rec_T.size and done == rec_T[next_rec]:
            F_row[next_rec] = np.linalg.norm(sum_V / done) / np.sqrt(k)
            next_rec += 1
        bar.update(step)


def _orthonormal_state(Qt: np.ndarray) -> np.ndarray:
    """Re-orthonormalise the Givens state Qt = Q_Pᵀ (d × r, orthonormal columns: Q_P has orthonormal
    rows; r = d for the full Q) by QR with a positive diagonal (a change of order rounding)."""
    if Qt.shape[0] == Qt.shape[1]:
        Qn, R = np.linalg.qr(Qt.T)  # the full Q: its columns (Qt's rows) orthonormal, as always done
        return np.ascontiguousarray((Qn * np.sign(np.diag(R))).T)
    Qn, R = np.linalg.qr(Qt)
    return np.ascontiguousarray(Qn * np.sign(np.diag(R)))


def run_bingham_chains(evals: np.ndarray, k: int, *, rng: np.random.Generator, sampler: str = "gibbs",
                       n_chains: int = 4, iterations: int = 20000, record_every: int = 100,
                       progress: bool | None = None, chunk: int | None = None,
                       reorth_every: int = 1000, desc: str = "BMF sampler",
                       sweeps_per_iteration: int | None = None, init: np.ndarray | None = None,
                       track_F: bool = True) -> dict:
    """Run ``n_chains`` MCMC chains for BMF(diag(evals)) from uniform (Haar) starts.

    Works in the eigenbasis of B (B = U diag(evals) Uᵀ; map results back with U).
    ``sampler`` is ``"gibbs"`` (fast Givens chain) or ``"reference"`` (Hoff column Gibbs).
    One ``"gibbs"`` iteration is ``sweeps_per_iteration`` Givens sweeps (default 2: with it an
    iteration mixes about as well as one reference iteration, see docs/sampler.md); one
    ``"reference"`` iteration is one pass of exact column updates.
    ``init`` (n_chains, d, k) optional starting frames (eigen-coordinates), e.g. final states of an
    earlier run, to measure mixing at stationarity; default: independent Haar-uniform starts.
    ``track_F=False`` (PPCA releases, which diagnose the q_F trace only) returns no F statistic and
    lets the ``"gibbs"`` chain run on the r rows of its state outside B's null space
    (``null_space_split``; same law, cost ∝ r instead of d per move); ``F`` is then (n_chains, 0).

    Returns a dict with
      ``V``: (n_chains, d, k) final states (eigen-coordinates),
      ``energy``: (n_chains, iterations) tr(VᵀBV) after each iteration,
      ``F``: (n_chains, n_rec) F_k^i(T) at ``T`` = ``record_iterations``,
      ``record_iterations``: (n_rec,), ``seconds``: wall time.
    """
    import time

    from tqdm.auto import tqdm

    evals = np.ascontiguousarray(np.asarray(evals, dtype=np.float64))
    d = evals.size
    k = int(k)
    iterations = int(iterations)
    if iterations < 1:
        raise ValueError("iterations must be >= 1")
    if sampler not in ("gibbs", "reference", "rstiefel"):
        raise ValueError(f"unknown MCMC sampler {sampler!r}")
    record_every = max(1, int(record_every))
    sweeps = GIBBS_SWEEPS_PER_ITERATION if sweeps_per_iteration is None else int(sweeps_per_iteration)
    if sweeps < 1:
        raise ValueError("sweeps_per_iteration must be >= 1")
    if chunk is None:
        chunk = record_every if sampler in ("gibbs", "reference") else 1
        # keep kernel calls reasonably long (progress updates ~ every few 1e6 flops)
        while sampler == "gibbs" and chunk * sweeps * k * d * d < 2e7 and chunk < 5000:
            chunk *= 2
    energy = np.empty((n_chains, iterations))
    rec_T = np.arange(record_every, iterations + 1, record_every) if track_F else np.empty(0, dtype=np.int64)
    active, null, b0 = (null_space_split(evals, k) if sampler == "gibbs" and not track_F
                        else (np.arange(d), np.empty(0, dtype=np.int64), 0.0))
    b_active = np.ascontiguousarray(evals[active] - b0)
    F = np.empty((n_chains, rec_T.size))
    Vout = np.empty((n_chains, d, k))
    t0 = time.perf_counter()
    bar = tqdm(total=n_chains * iterations, desc=desc, unit="it", disable=not progress_enabled(progress),
               mininterval=0.5, smoothing=0.05)
    Bdiag = np.diag(evals)
    try:
        for c in range(n_chains):
            if sampler == "gibbs":
                seed_numba(int(rng.integers(0, 2**31 - 1)))
                Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
                if init is not None:  # complete the given frame to a full orthogonal matrix
                    Q = np.linalg.qr(np.hstack([init[c], Q[:, : d - k]]))[0]
                    Q[:, :k] = init[c]
                Qt = np.ascontiguousarray(Q[active].T)  # (d, r): Q_Pᵀ (r = d without a null space)
                sum_V = np.zeros((k, active.size))
                since_reorth = [0]

                def advance(done, step, Qt=Qt, sum_V=sum_V, since_reorth=since_reorth, c=c):
                    givens_sweeps(Qt, b_active, k, step, energy[c, done:done + step], sum_V, sweeps)
                    since_reorth[0] += step
                    if since_reorth[0] >= reorth_every:
                        # re-orthonormalise (changes Q by O(rounding)); keeps drift ≤ 1e-13
                        Qt[...] = _orthonormal_state(Qt)
                        since_reorth[0] = 0
                    return sum_V

                _drive_chain(advance, iterations, chunk, rec_T, F[c], k, bar)
                Qt = _orthonormal_state(Qt)
                if null.size:
                    energy[c] += k * b0  # tr(VᵀBV) = tr(Vᵀ(B − b0 I)V) + k b0
                    Vout[c][active] = Qt[:k].T
                    Vout[c][null] = _complete_null_rows(Qt, k, rng)
                else:
                    Vout[c] = Qt[:k].T
                continue
            V = np.linalg.qr(rng.standard_normal((d, k)))[0] if init is None else np.array(init[c])
            V = np.ascontiguousarray(V)
            sum_V = np.zeros((d, k))
            if sampler == "reference":  # Hoff's column Gibbs, exact conditionals (Numba kernel)
                rest = _proxy_rest(evals, k)
                stats = np.zeros(2, dtype=np.int64)

                def advance(done, step, V=V, sum_V=sum_V, rest=rest, stats=stats, c=c):
                    column_gibbs_sweeps(V, evals, rest, rng, step, energy[c, done:done + step], sum_V,
                                        COLUMN_POWER_ITERATIONS, stats)
                    return sum_V
            else:  # rstiefel: Hoff's sampler with one inner coordinate sweep per column (Python)
                def advance(done, step, V=V, sum_V=sum_V, c=c):
                    for t in range(done, done + step):
                        rstiefel_gibbs_sweep(V, Bdiag, rng)
                        sum_V += V
                        energy[c, t] = float(np.einsum("ij,i,ij->", V, evals, V))
                    return sum_V

            _drive_chain(advance, iterations, chunk, rec_T, F[c], k, bar)
            Qv, Rv = np.linalg.qr(V)
            Vout[c] = Qv * np.sign(np.diag(Rv))
    finally:
        bar.close()
    return {"V": Vout, "energy": energy, "F": F, "record_iterations": rec_T,
            "seconds": time.perf_counter() - t0, "sampler": sampler,
            "sweeps_per_iteration": sweeps if sampler == "gibbs" else None}
