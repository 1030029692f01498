"""The fast MCMC for k ≥ 1 (the default for k > 1): Gibbs sampling on O(d) by Givens rotations.

The Numba kernel (:func:`givens_sweeps` and the functions it calls) is all in this module.

The state is a full orthogonal matrix Q = [V, W] (V = first k columns, W an orthonormal
completion), with target π̃(dQ) ∝ exp(tr(VᵀBV)) μ(dQ), μ = Haar measure on O(d).  Because Haar
measure on O(d) pushes forward to the uniform measure on the Stiefel manifold and the density
depends on Q only through V, the V-marginal of π̃ is exactly BMF(B).

One move picks a pair of columns (i, j), i < k ≤ j (or i < j < k) and replaces Q by Q G(θ), where
G(θ) is the Givens rotation by θ in coordinates (i, j), with θ drawn from the conditional of π̃ on
the coset Q·H, H = {G(θ)} ≅ SO(2): density ∝ π̃(Q G(θ)) dθ.  Invariance: H is a compact subgroup
and μ is right-invariant, so μ disintegrates over the cosets {Q H} into the uniform measure dθ/2π
on each coset; the move therefore draws exactly from the conditional law of π̃ given the coset (a
σ-algebra), and such a draw leaves π̃ invariant (it is a Gibbs step for the "coset" coordinate).
No accept/reject step is involved, and any fixed order of such moves leaves π̃ invariant.

The conditional is explicit.  With C = QᵀBQ, rotating column i against a completion column j
changes v_i into cos θ v_i + sin θ w_j and
    v_iᵀBv_i = (c_ii + c_jj)/2 + (c_ii − c_jj)/2 · cos 2θ + c_ij · sin 2θ,
so 2θ (mod 2π) is von Mises with κ = ‖(a, c_ij)‖, μ = atan2(c_ij, a), a = (c_ii − c_jj)/2, and
θ = φ/2 or φ/2 + π with probability ½ each (the law of θ has period π).  The von Mises draw is
exact: Best–Fisher's (1979) rejection sampler for κ < 25, and above it a rejection sampler for
sin(X/2) with a Gaussian envelope (no wrapped-normal shortcut at large κ); :func:`givens_angle`
turns either into (cos θ, sin θ) by the angle-sum and half-angle formulas, without
atan2/asin/cos/sin.  A rotation between two columns of V leaves tr(VᵀBV) unchanged, so its θ is
uniform on [0, 2π): these moves only spin the frame (they help the F_k statistic, not q_F).

One *iteration* (sweep) = every pair (i, j) with i < k ≤ j once, completion column by completion
column (for j = k..d−1: i = 0..k−1), then every pair i < j < k once.  In the eigenbasis of B
(B = diag(b)) each move costs O(d): c_ij = Σ_l b_l Q_li Q_lj plus the update of two columns (fused in
one pass: the rotation of move (i, j) computes c_{i+1,j} of the next move); c_ii is cached.  A sweep
is O(k (d − k) d) instead of O(k d³) for the reference sweep.  Taking the moves column by column
keeps column j and the k columns of V in cache for its k moves, so a sweep reads the state once.

**Chains in lockstep.**  The kernel advances C chains of the same B together: the state is a
(C, d, m) array, and every move is made for all C chains before the next (first the C angles, then
the C rotations), so the CPU overlaps the chains' angle draws, which are short dependent sequences of
square roots, divisions and a rejection loop.  Chain c draws only from row c of the per-chain
xoshiro256** states (:mod:`.streams`) and touches only its own slice of the state, so each chain's
draws and arithmetic are those it makes when run alone (C = 1): every chain has its own law and its
own stream, and is bit for bit the single-chain run of its stream (tested).

The chain's released V is its last state; the completion W is a nuisance variable.  Starting Q
from Haar gives a uniform V, as in Chaudhuri, Sarwate & Sinha (2013).
"""

from __future__ import annotations

import math

import numpy as np

from ._numba import njit
from .streams import standard_normal, uniform

__all__ = [
    "GIBBS_SWEEPS_PER_ITERATION",
    "KAPPA_GAUSSIAN_ENVELOPE",
    "givens_angle",
    "givens_sweeps",
    "vonmises_draw",
]


@njit(cache=True, inline="always")
def _accepts(Y, V):
    """Best–Fisher's acceptance V ≤ Y e^{1−Y}, decided by cheap bounds on e^t (t = 1 − Y) and by the
    logarithm only between them.  The cubic Taylor polynomial P₃(t) = 1 + t + t²/2 + t³/6 is below
    e^t for every real t (its remainder t⁴e^ξ/24 ≥ 0); above it, e^t ≤ 1/P₃(−t) for t ≤ 0 and
    e^t ≤ P₃(t) + e t⁴/24 for 0 < t < 1 (Y > 0).  The decision is the exact test's."""
    t = 1.0 - Y
    p3 = 1.0 + t * (1.0 + t * (0.5 + t * (1.0 / 6.0)))
    if V <= Y * p3:
        return True
    if t <= 0.0:
        upper = Y / (1.0 - t * (1.0 - t * (0.5 - t * (1.0 / 6.0))))
    else:
        upper = Y * (p3 + (math.e / 24.0) * t * t * t * t)
    if V > upper:
        return False
    if V > 0.0:
        return Y > 0.0 and math.log(Y / V) + 1.0 - Y >= 0.0
    return Y > 0.0


@njit(cache=True, inline="always")
def _vonmises_one_minus_cos(kappa, state, c):
    """1 − cos X for X ~ von Mises(0, κ), κ ≥ 1e-8 (Best & Fisher 1979; the sign of X is left to the
    caller, whose law is symmetric), drawn from chain c's stream.  Written in s − 1 and 1 − W so that
    nothing cancels at large κ."""
    if kappa < 1e-5:
        sm1 = 1.0 / kappa + kappa - 1.0
    else:
        r = 1.0 + math.sqrt(1.0 + 4.0 * kappa * kappa)
        rho = (r - math.sqrt(2.0 * r)) / (2.0 * kappa)
        one_m_rho = 1.0 - rho
        sm1 = one_m_rho * one_m_rho / (2.0 * rho)  # s - 1, no cancellation
    while True:
        U = uniform(state, c)
        onepz = 2.0 * math.cos(0.5 * math.pi * U) ** 2  # 1 + Z
        onemz = 2.0 - onepz  # 1 - Z
        one_m_w = sm1 * onemz / (sm1 + onepz)  # 1 - W, exact algebra
        Y = kappa * (sm1 + one_m_w)  # kappa (s - W)
        if _accepts(Y, uniform(state, c)):
            break
    return min(max(one_m_w, 0.0), 2.0)


@njit(cache=True)
def vonmises_draw(mu, kappa, state, c):
    """Exact von Mises(μ, κ) draw on (−π, π] (Best & Fisher 1979), stable for large κ, from chain c's
    stream (row c of the xoshiro states ``state``)."""
    if kappa < 1e-8:
        return math.pi * (2.0 * uniform(state, c) - 1.0)
    # acos(W) = 2 asin(sqrt((1 - W)/2)), accurate for W close to 1
    ang = 2.0 * math.asin(math.sqrt(0.5 * _vonmises_one_minus_cos(kappa, state, c)))
    if uniform(state, c) < 0.5:
        ang = -ang
    return mu + ang


#: κ from which :func:`givens_angle` draws by the Gaussian envelope on sin(X/2) (Best–Fisher below)
KAPPA_GAUSSIAN_ENVELOPE = 25.0
#: the Gaussian part of that envelope covers |y| ≤ y0 = 5 standard deviations of its proposal
_Y0_SD = 5.0


@njit(cache=True, inline="always")
def _sin_half_vonmises(kappa, y0_sd, state, c):
    """y = sin(X/2) for X ~ von Mises(0, κ), by rejection from a two-part envelope; needs
    y0² = (y0_sd/(2√κ))² ≤ ½.

    y ∈ (−1, 1] has density f(y) ∝ e^{−2κy²} (1 − y²)^{−1/2} (cos X = 1 − 2y², dX = 2 dy/√(1 − y²)).
    With h = 1/(2√κ), y0 = y0_sd·h and F = 1 + y0² (≥ (1 − y0²)^{−1/2} for y0² ≤ 0.618):
    f ≤ F e^{−2κy²} on |y| ≤ y0 (proposal y = h Z, Z standard normal, accepted with probability
    (1 − y²)^{−1/2}/F), and f ≤ E (1 − y²)^{−1/2}, E = e^{−2κy0²} = e^{−y0_sd²/2}, on |y| > y0
    (proposal y = sin(π(U − ½)), the arcsine law, accepted with probability e^{−2κ(y² − y0²)}).
    Each part is drawn with probability proportional to its envelope's mass over the whole line
    (F√(2π)h and πE), and a proposal outside its part is rejected, so an accepted y has density
    ∝ f.  At y0_sd = 5 the second part is chosen with probability about 9.3·10⁻⁶·√κ (3.7·10⁻⁵ at
    κ = 25, 5.5·10⁻⁴ at κ = 3,500), and
    a proposal is accepted with probability (1 + 1/(8κ) + O(κ⁻²))/F: 0.80 at κ = 25, 0.96 at κ = 150."""
    h = 0.5 / math.sqrt(kappa)
    y0 = y0_sd * h
    y0sq = y0 * y0
    envelope = 1.0 + y0sq
    mass_tail = math.pi * math.exp(-0.5 * y0_sd * y0_sd)
    mass_all = mass_tail + envelope * math.sqrt(2.0 * math.pi) * h
    while True:
        if uniform(state, c) * mass_all >= mass_tail:
            y = h * standard_normal(state, c)
            one_m_ysq = 1.0 - y * y
            u = uniform(state, c) * envelope
            if y * y <= y0sq and u * u * one_m_ysq <= 1.0:
                return y
        else:
            y = math.sin(math.pi * (uniform(state, c) - 0.5))
            if y * y > y0sq and uniform(state, c) <= math.exp(-2.0 * kappa * (y * y - y0sq)):
                return y


@njit(cache=True, inline="always")
def _givens_angle_best_fisher(a, cij, kappa, state, c):
    """(cos θ, sin θ) of :func:`givens_angle` with X drawn by Best–Fisher.

    With φ = μ + X, X ~ vM(0, κ): cos X = 1 − (1 − W) and |sin X| = √((1 − W)(1 + W)) from the
    Best–Fisher draw, one fair coin for the sign of X, cos μ = a/κ, sin μ = c_ij/κ, then the angle-sum
    formulas give (cos φ, sin φ) and the half-angle formulas (cos φ/2, sin φ/2) for φ taken in
    (−π, π] (cos φ/2 ≥ 0); a second fair coin adds π (negates both).  The two coins come from one
    uniform: u < ½ and (u mod ½) < ¼ are independent fair coins."""
    u = uniform(state, c)
    if kappa < 1e-8:  # uniform φ (no preferred direction)
        phi = math.pi * (2.0 * uniform(state, c) - 1.0)
        cphi = math.cos(phi)
        sphi = math.sin(phi)
    else:
        one_m_w = _vonmises_one_minus_cos(kappa, state, c)
        cx = 1.0 - one_m_w
        # first coin: u < ½ negates
        sx = math.copysign(math.sqrt(one_m_w * (2.0 - one_m_w)), u - 0.5)
        inv_kappa = 1.0 / kappa
        cmu = a * inv_kappa
        smu = cij * inv_kappa
        cphi = cmu * cx - smu * sx
        sphi = smu * cx + cmu * sx
    # half angle, the branch without cancellation: cos φ/2 = √((1 + cos φ)/2) if cos φ ≥ 0, else
    # |sin φ/2| = √((1 − cos φ)/2) with the sign of sin φ; the other from sin φ = 2 sin φ/2 cos φ/2.
    # c² + s² = 1 + O(rounding) (cx² + sx² = 1 exactly in exact arithmetic), and the chain's state is
    # re-orthonormalised periodically anyway.  Written as selects, not branches: the signs are fair
    # coins, so branches on them are mispredicted half the time.
    big = math.sqrt(0.5 * (1.0 + abs(cphi)))
    other = 0.5 * sphi / big
    nonneg = cphi >= 0.0
    cos_half = big if nonneg else abs(other)
    sin_half = other if nonneg else math.copysign(big, sphi)
    # second coin: (u mod ½) < ¼ negates both
    u_mod_half = u - 0.5 if u >= 0.5 else u
    sign = math.copysign(1.0, u_mod_half - 0.25)
    return sign * cos_half, sign * sin_half


@njit(cache=True, inline="always")
def _givens_angle_gaussian_envelope(a, cij, kappa, state, c):
    """(cos θ, sin θ) of :func:`givens_angle` with y = sin(X/2) drawn by
    :func:`_sin_half_vonmises` (κ ≥ :data:`KAPPA_GAUSSIAN_ENVELOPE`).

    θ = μ/2 + X/2 (+ π by a fair coin), μ = atan2(c_ij, a) taken in (−π, π] so that cos μ/2 ≥ 0:
    (cos μ/2, sin μ/2) is the direction of (a + κ, c_ij) when a ≥ 0 and of (|c_ij|, sign(c_ij)(κ − a))
    when a < 0 (tan μ/2 = c_ij/(κ + a) = (κ − a)/c_ij; each form free of cancellation on its side),
    and (cos X/2, sin X/2) = (√(1 − y²), y); the law of y is symmetric, so X needs no sign coin."""
    if a >= 0.0:
        p = a + kappa
        q = cij
    else:
        p = abs(cij)
        q = math.copysign(kappa - a, cij)
    inv_norm = 1.0 / math.sqrt(p * p + q * q)
    cos_mu2 = p * inv_norm
    sin_mu2 = q * inv_norm
    y = _sin_half_vonmises(kappa, _Y0_SD, state, c)
    cos_x2 = math.sqrt(1.0 - y * y)
    sign = math.copysign(1.0, uniform(state, c) - 0.5)
    return sign * (cos_mu2 * cos_x2 - sin_mu2 * y), sign * (sin_mu2 * cos_x2 + cos_mu2 * y)


@njit(cache=True, inline="always")
def givens_angle(a, cij, state, c):
    """(cos θ, sin θ) for the Givens move's angle: 2θ ~ von Mises(atan2(c_ij, a), κ = ‖(a, c_ij)‖) and
    θ ∈ {φ/2, φ/2 + π} with probability ½ each (the law of θ has period π), without inverse
    trigonometry, drawn from chain c's stream (row c of the xoshiro states ``state``).

    Below κ = :data:`KAPPA_GAUSSIAN_ENVELOPE` the von Mises deviate X = 2θ − μ is drawn by Best and
    Fisher (1979) (:func:`_givens_angle_best_fisher`); from it on, sin(X/2) is drawn by rejection
    from a Gaussian envelope (:func:`_sin_half_vonmises`), whose proposals are accepted with
    probability 0.80 or more and cost one normal draw, no cosine and two divisions fewer.  Both
    are exact; the law is tested on each side of the switch against the von Mises CDF and
    ⟨cos X⟩ = I₁(κ)/I₀(κ).
    """
    kappa = math.sqrt(a * a + cij * cij)
    if kappa < KAPPA_GAUSSIAN_ENVELOPE:
        return _givens_angle_best_fisher(a, cij, kappa, state, c)
    return _givens_angle_gaussian_envelope(a, cij, kappa, state, c)


@njit(cache=True, fastmath=True)
def _weighted_dot(Qt, b, c, i, j):
    """c_ij = Σ_l b_l Qt[c, i, l] Qt[c, j, l], an entry of QᵀBQ of chain c in B's eigenbasis."""
    s = 0.0
    for l in range(b.shape[0]):
        s += b[l] * Qt[c, i, l] * Qt[c, j, l]
    return s


@njit(cache=True, fastmath=True)
def _rotate_rows(Qt, c, i, j, cos_t, sin_t):
    """Rows i, j of chain c <- cos Qt[i] + sin Qt[j], cos Qt[j] − sin Qt[i]: Q·G(θ) on columns i, j."""
    for l in range(Qt.shape[2]):
        qi = Qt[c, i, l]
        qj = Qt[c, j, l]
        Qt[c, i, l] = cos_t * qi + sin_t * qj
        Qt[c, j, l] = cos_t * qj - sin_t * qi


@njit(cache=True, fastmath=True)
def _rotate4(Qt, b, c, i0, j, jn, cos_t, sin_t, acc):
    """Moves (i0, j), ..., (i0 + 3, j) of chain c on the rows, in one pass with column j held in a
    register; ``acc[i0 + a]`` receives Σ_l b_l v'_{i0+a, l} Qt[c, jn, l] (the next column's c_ij)."""
    c0, s0 = cos_t[c, i0], sin_t[c, i0]
    c1, s1 = cos_t[c, i0 + 1], sin_t[c, i0 + 1]
    c2, s2 = cos_t[c, i0 + 2], sin_t[c, i0 + 2]
    c3, s3 = cos_t[c, i0 + 3], sin_t[c, i0 + 3]
    a0 = a1 = a2 = a3 = 0.0
    for l in range(Qt.shape[2]):
        w = Qt[c, j, l]
        x = b[l] * Qt[c, jn, l]
        v = Qt[c, i0, l]
        nv = c0 * v + s0 * w
        w = c0 * w - s0 * v
        Qt[c, i0, l] = nv
        a0 += nv * x
        v = Qt[c, i0 + 1, l]
        nv = c1 * v + s1 * w
        w = c1 * w - s1 * v
        Qt[c, i0 + 1, l] = nv
        a1 += nv * x
        v = Qt[c, i0 + 2, l]
        nv = c2 * v + s2 * w
        w = c2 * w - s2 * v
        Qt[c, i0 + 2, l] = nv
        a2 += nv * x
        v = Qt[c, i0 + 3, l]
        nv = c3 * v + s3 * w
        w = c3 * w - s3 * v
        Qt[c, i0 + 3, l] = nv
        a3 += nv * x
        Qt[c, j, l] = w
    acc[c, i0] = a0
    acc[c, i0 + 1] = a1
    acc[c, i0 + 2] = a2
    acc[c, i0 + 3] = a3


@njit(cache=True, fastmath=True)
def _rotate1(Qt, b, c, i, j, jn, cos_t, sin_t, acc):
    """Move (i, j) of chain c on the rows; ``acc[c, i]`` receives Σ_l b_l v'_{i, l} Qt[c, jn, l]."""
    ct, st = cos_t[c, i], sin_t[c, i]
    a = 0.0
    for l in range(Qt.shape[2]):
        w = Qt[c, j, l]
        v = Qt[c, i, l]
        nv = ct * v + st * w
        Qt[c, i, l] = nv
        Qt[c, j, l] = ct * w - st * v
        a += nv * b[l] * Qt[c, jn, l]
    acc[c, i] = a


#: Givens sweeps in one iteration of the fast chain (measured: about the mixing of one reference iteration)
GIBBS_SWEEPS_PER_ITERATION = 2


@njit(cache=True)
def _draw_column_angles(k, G, g, s, cos_t, sin_t, state):
    """The angles of moves (0, j), ..., (k − 1, j) of every chain, from the entries of QᵀBQ on the
    columns of V and column j alone: G = VᵀBV (C, k, k), g = VᵀBw_j (C, k), s = w_jᵀBw_j (C,),
    updated move by move (a rotation of v_i and w_j mixes row/column i of G with g and s, exactly
    as QᵀBQ changes under Q·G(θ)).  Chain by chain within each move, so the chains' draws overlap."""
    n_chains = G.shape[0]
    for i in range(k):
        for c in range(n_chains):
            gii = G[c, i, i]
            sj = s[c]
            x = g[c, i]
            ct, st = givens_angle(0.5 * (gii - sj), x, state, c)
            cos_t[c, i] = ct
            sin_t[c, i] = st
            for p in range(k):
                if p != i:
                    gpi = G[c, p, i]
                    gp = g[c, p]
                    G[c, p, i] = ct * gpi + st * gp
                    G[c, i, p] = G[c, p, i]
                    g[c, p] = ct * gp - st * gpi
            G[c, i, i] = ct * ct * gii + 2.0 * ct * st * x + st * st * sj
            s[c] = st * st * gii - 2.0 * ct * st * x + ct * ct * sj
            g[c, i] = (ct * ct - st * st) * x + ct * st * (sj - gii)


@njit(cache=True)
def _rotate_column(Qt, b, k, j, cos_t, sin_t, acc):
    """Apply the drawn moves (0, j), ..., (k − 1, j) of every chain to its rows, four rows of V per
    pass; ``acc`` receives VᵀBw_{j+1} with the rotated V (the next column's g)."""
    n_chains, d, _m = Qt.shape
    jn = j + 1 if j + 1 < d else j
    for c in range(n_chains):
        i0 = 0
        while i0 + 4 <= k:
            _rotate4(Qt, b, c, i0, j, jn, cos_t, sin_t, acc)
            i0 += 4
        while i0 < k:
            _rotate1(Qt, b, c, i0, j, jn, cos_t, sin_t, acc)
            i0 += 1


@njit(cache=True)
def _gram_of_v(Qt, b, k, G):
    """G[c] = VᵀBV of every chain, from its rows."""
    for c in range(Qt.shape[0]):
        for p in range(k):
            for q in range(p, k):
                G[c, p, q] = _weighted_dot(Qt, b, c, p, q)
                G[c, q, p] = G[c, p, q]


@njit(cache=True)
def givens_sweeps(Qt, b, k, n_iter, energy_out, sum_V, sweeps, state):
    """Run ``n_iter`` iterations of the Givens-Gibbs chain in place on C chains in lockstep.

    One iteration = ``sweeps`` passes over the k(d − k) pairs (i < k <= j), column j by column j,
    each an exact draw of the rotation angle from its von Mises conditional, then one uniform spin of
    every pair inside V (which leaves tr(VᵀBV) unchanged). Every move is an exact conditional draw,
    so any such sequence leaves the target invariant.

    Parameters
    ----------
    Qt : ndarray of shape (C, d, m)
        ``Qt[c, j]`` = column j of chain c's Q (in the eigenbasis of B) restricted to the m
        coordinates that B acts on (m = d, or the m = r rows of Q outside B's null space: see
        ``null_space_split``); updated in place.
    b : ndarray of shape (m,)
        Eigenvalues of B on those coordinates.
    k : int
        Number of columns of V.
    n_iter, sweeps : int
        Iterations to run, and Givens sweeps per iteration.
    energy_out : ndarray of shape (C, n_iter)
        Receives tr(VᵀBV) of each chain after each iteration.
    sum_V : ndarray of shape (C, k, m)
        Running sum of Vᵀ of each chain (for the F_k statistic), updated in place.
    state : ndarray of shape (C, 4), uint64
        Per-chain xoshiro256** states (:func:`.streams.kernel_states`), advanced in place.
    """
    n_chains, d, m = Qt.shape
    cdiag = np.empty((n_chains, d))  # w_jᵀBw_j, kept up to date move by move
    for c in range(n_chains):
        for j in range(d):
            cdiag[c, j] = _weighted_dot(Qt, b, c, j, j)
    G = np.empty((n_chains, k, k))
    g = np.empty((n_chains, k))
    s = np.empty(n_chains)
    cos_t = np.empty((n_chains, k))
    sin_t = np.empty((n_chains, k))
    _gram_of_v(Qt, b, k, G)
    for it in range(n_iter):
        for _sweep in range(sweeps):
            if k < d:
                for c in range(n_chains):
                    for p in range(k):
                        g[c, p] = _weighted_dot(Qt, b, c, p, k)
            for j in range(k, d):
                for c in range(n_chains):
                    s[c] = cdiag[c, j]
                _draw_column_angles(k, G, g, s, cos_t, sin_t, state)
                _rotate_column(Qt, b, k, j, cos_t, sin_t, g)
                for c in range(n_chains):
                    cdiag[c, j] = s[c]
        for c in range(n_chains):
            # frame spins inside V: conditional of θ is uniform (tr(VᵀBV) unchanged)
            for i in range(k):
                for j in range(i + 1, k):
                    theta = 2.0 * math.pi * uniform(state, c)
                    _rotate_rows(Qt, c, i, j, math.cos(theta), math.sin(theta))
        _gram_of_v(Qt, b, k, G)
        for c in range(n_chains):
            e = 0.0
            for i in range(k):
                e += G[c, i, i]
                for l in range(m):
                    sum_V[c, i, l] += Qt[c, i, l]
            energy_out[c, it] = e
