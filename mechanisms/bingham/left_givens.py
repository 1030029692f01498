"""Gibbs moves for BMF(B) by LEFT Givens rotations (rows of V): an optional PPCA sampler (``"left"``).

PPCA (Chaudhuri, Sarwate & Sinha, JMLR 2013, Algorithm 2) releases V, a d × k frame (VᵀV = I_k),
with density ∝ exp(tr(VᵀBV)) with respect to the uniform (Haar) measure μ on the Stiefel manifold
V_{d,k}, B = (nε/2)·A.  The fast chain of :mod:`.givens` rotates COLUMNS of a full orthogonal state
[V, W] (V ↦ VG, moves of cost O(d)).  This module measures the other action: rotating two ROWS of V,
V ↦ G_ab(θ)V, with V alone as the state.  The mixing study is
``scripts/benchmarks/bench_sampler.py --mixing --samplers left ...`` (docs/sampler.md, "Left Givens
moves"); :func:`.chains.run_bingham_chains` runs it as its ``"left"`` sampler (m = k, 1 sweep per
iteration unless told otherwise), which PPCA's ``sampler="left"`` selects.  It is not the default.

**Target in B's eigenbasis.**  With B = diag(b_1, …, b_d) (the frame expressed in B's eigenvectors),
tr(VᵀBV) = Σ_l b_l ‖V_l‖², V_l the l-th row of V (a k-vector): the density depends on V only
through its rows' squared norms.

**The move.**  For a pair of rows a ≠ j let G = G_aj(θ) act on rows a and j only:
    V_a ← cos θ V_a + sin θ V_j,        V_j ← cos θ V_j − sin θ V_a.
With n_a = ‖V_a‖², n_j = ‖V_j‖², p = ⟨V_a, V_j⟩ and cos²θ = (1 + cos 2θ)/2, sin²θ = (1 − cos 2θ)/2,
2 sin θ cos θ = sin 2θ,
    ‖V_a(θ)‖² = (n_a + n_j)/2 + (n_a − n_j)/2 · cos 2θ + p · sin 2θ,
    ‖V_j(θ)‖² = (n_a + n_j)/2 − (n_a − n_j)/2 · cos 2θ − p · sin 2θ,
and no other row changes, so
    log f(G(θ)V) = const + α cos 2θ + γ sin 2θ,   α = (b_a − b_j)(n_a − n_j)/2,  γ = (b_a − b_j) p.
Hence 2θ (mod 2π) given the rest is von Mises with mean direction atan2(γ, α) and concentration
    κ = ‖(α, γ)‖ = |b_a − b_j|/2 · ((n_a − n_j)² + 4p²)^{1/2},
and θ is one of the two halves of that angle, each with probability ½ (the law of θ has period π).
That is exactly the conditional :func:`.givens.givens_angle` draws (arguments a = α, c_ij = γ),
so the angle draw is the column chain's, exact for every κ (Best–Fisher below κ = 25, a Gaussian
envelope on sin(X/2) above).  A pair with b_a = b_j has κ = 0: the rotation is uniform and cannot
change the density, so such pairs do nothing for the statistics of interest.

**Invariance.**  H = {G_aj(θ)} ≅ SO(2) is a compact group acting on V_{d,k} on the left, and μ is
invariant under every left multiplication by an orthogonal matrix (VᵀGᵀGV = VᵀV, and μ is the
unique O(d)-invariant probability on V_{d,k}).  The move draws h ∈ H with density f(hV)/Z(V)
w.r.t. the Haar probability dh of H, Z(V) = ∫_H f(h'V) dh', and sets V ← hV.  Z is constant on
orbits (Z(hV) = Z(V), since dh is invariant under right translation).  For bounded g, g',
    ∫∫ g(V) g'(hV) f(V) f(hV)/Z(V) dh μ(dV);
substitute V = h⁻¹U (μ is left-invariant, Z(h⁻¹U) = Z(U)) and then h ↦ h⁻¹ (dh is invariant
under inversion on a compact group): the integral becomes ∫∫ g(hU) g'(U) f(hU) f(U)/Z(U) dh μ(dU),
the same expression with g and g' exchanged.  So the move is reversible with respect to the target
π = f·μ and leaves it invariant; no accept/reject step is needed, and any fixed sequence of such
moves leaves π invariant.  (θ parametrises H with the uniform dθ/2π as its Haar measure, so drawing θ
with density ∝ exp(α cos 2θ + γ sin 2θ) is drawing h as above.)

**Irreducibility and the pair schedule.**  A sweep takes every pair (a, j) with a < m and a < j,
where the first m rows are those of the m largest b (rows ordered by decreasing b), in the order
j = 1, …, d − 1, a = 0, …, min(j, m) − 1: m(d − 1) − m(m − 1)/2 moves.  The pairs form a connected
graph on the d rows for every m ≥ 1, so the rotations they generate generate SO(d), which acts
transitively on V_{d,k} (k < d); with the conditionals' positive densities the chain is irreducible.
Why m of the order of k: near the mode of a concentrated BMF, V ≈ [I_k; X] with X small, and a move
(a, j), a < k ≤ j, changes X_{j,a} by −θ to first order: a Gibbs update of one entry of X, whose
entries are, in the Gaussian limit, independent with variance 1/(2(b_a − b_j)).  So m = k already
updates every coordinate that carries the law's spread in that limit; pairs of two rows below the
top m only exchange mass inside the tail (pairs inside B's null space, b_a = b_j, not even that).
m is left free (``rows``) and its effect on mixing is measured.

**Cost.**  Per move: one k-long dot product p (the row norms are cached and updated), one von Mises
draw, and the rotation of two k-long rows: O(k), against O(d) for a move of the column chain.  A
sweep with m = k is k(d − 1) − k(k − 1)/2 moves, O(k² d), about as many moves as a sweep of the
column chain (k(d − k) + k(k − 1)/2) at a cost of O(k d²); at PPCA's k ≪ d the angle draws dominate
the left sweep.

**Chains.**  :func:`left_givens_sweeps` advances C chains together (state (C, d, k)), chain c
drawing only from column c of the xoshiro256** states of :mod:`.streams`, so each chain is the one
it would be alone.

**No null-space reduction.**  The fast chain drops the rows of its state in B's bottom eigenspace
(:func:`.chains.null_space_split`) because its moves read the state only through those outside it.
A left move (a, j) with row j in that eigenspace reads V_j itself (n_j and p = ⟨V_a, V_j⟩), so the
rows outside it are not a Markov chain on their own, and dropping the moves into the eigenspace
would fix the mass Σ_{l outside} ‖V_l‖² (a reducible chain).  The left chain keeps all d rows; its
moves cost O(k), so they are the cheap part of a sweep anyway.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from ._numba import njit
from .givens import givens_angle
from .streams import chain_generators, kernel_states

__all__ = [
    "LEFT_SWEEPS_PER_ITERATION",
    "left_givens_coefficients",
    "left_givens_move",
    "left_givens_pairs",
    "left_givens_reorthonormalise",
    "left_givens_starts",
    "left_givens_sweeps",
    "run_left_givens_chains",
]


#: left sweeps per iteration of the ``"left"`` sampler when none is given: 1 sweep with m = k, the best
#: setting per CPU-second in the mixing study (docs/sampler.md, "Left Givens moves")
LEFT_SWEEPS_PER_ITERATION = 1


@njit(cache=True)
def left_givens_coefficients(b_a, b_j, n_a, n_j, p):
    """(α, γ) with log f(G_aj(θ)V) = const + α cos 2θ + γ sin 2θ: α = (b_a − b_j)(n_a − n_j)/2,
    γ = (b_a − b_j)p, for rows of squared norms n_a, n_j and inner product p (module docstring)."""
    db = b_a - b_j
    return 0.5 * db * (n_a - n_j), db * p


@njit(cache=True, inline="always")
def _move(V, nrm, b, a, j, state, c):
    """One left Givens move on rows a, j of chain c: θ drawn from its von Mises conditional, the two
    rows rotated and their cached squared norms recomputed from the rotated rows."""
    k = V.shape[2]
    p = 0.0
    for t in range(k):
        p += V[c, a, t] * V[c, j, t]
    alpha, gamma = left_givens_coefficients(b[a], b[j], nrm[c, a], nrm[c, j], p)
    ct, st = givens_angle(alpha, gamma, state, c)
    na = 0.0
    nj = 0.0
    for t in range(k):
        va = V[c, a, t]
        vj = V[c, j, t]
        x = ct * va + st * vj
        y = ct * vj - st * va
        V[c, a, t] = x
        V[c, j, t] = y
        na += x * x
        nj += y * y
    nrm[c, a] = na
    nrm[c, j] = nj


@njit(cache=True)
def left_givens_move(V, nrm, b, a, j, state):
    """One move on rows (a, j) of every chain of ``V`` (C, d, k), in place (for tests and studies).

    ``nrm`` (C, d) holds the rows' squared norms and is updated; ``state`` (4, C) the per-chain
    xoshiro256** states (:func:`.streams.kernel_states`)."""
    for c in range(V.shape[0]):
        _move(V, nrm, b, a, j, state, c)


def left_givens_pairs(d: int, m: int) -> int:
    """Moves in one sweep: every pair (a, j), a < min(m, d), a < j < d: m(d − 1) − m(m − 1)/2."""
    m = min(int(m), int(d))
    return m * (d - 1) - m * (m - 1) // 2


@njit(cache=True)
def left_givens_sweeps(V, nrm, b, m, n_iter, sweeps, energy_out, rows_out, record_rows, state):
    """Run ``n_iter`` iterations of ``sweeps`` left Givens sweeps on C chains in place.

    Parameters
    ----------
    V : ndarray of shape (C, d, k)
        The frames in B's eigenbasis, rows ordered by decreasing ``b``; updated in place.
    nrm : ndarray of shape (C, d)
        Squared norms of the rows of each V (kept up to date).
    b : ndarray of shape (d,)
        Eigenvalues of B, decreasing.
    m : int
        The sweep takes every pair (a, j) with a < m, a < j, in the order j = 1..d − 1,
        a = 0..min(j, m) − 1 (module docstring).
    n_iter, sweeps : int
        Iterations to run, and sweeps per iteration.
    energy_out : ndarray of shape (C, n_iter)
        Receives tr(VᵀBV) = Σ_l b_l ‖V_l‖² after each iteration.
    rows_out : ndarray of shape (C, n_iter, R)
        Receives the squared norms of rows ``record_rows`` after each iteration (R may be 0).
    record_rows : ndarray of int64, shape (R,)
    state : ndarray of shape (4, C), uint64
        Per-chain xoshiro256** states, advanced in place.
    """
    n_chains, d, _k = V.shape
    mm = min(m, d)
    for it in range(n_iter):
        for _s in range(sweeps):
            for j in range(1, d):
                for a in range(min(j, mm)):
                    for c in range(n_chains):
                        _move(V, nrm, b, a, j, state, c)
        for c in range(n_chains):
            e = 0.0
            for l in range(d):
                e += b[l] * nrm[c, l]
            energy_out[c, it] = e
            for r in range(record_rows.shape[0]):
                rows_out[c, it, r] = nrm[c, record_rows[r]]


def _orthonormal_rows_norms(V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """V re-orthonormalised by QR with a positive diagonal (a change of the order of rounding), and
    its rows' squared norms."""
    Q, R = np.linalg.qr(V)
    Q = np.ascontiguousarray(Q * np.sign(np.diag(R)))
    return Q, np.einsum("ij,ij->i", Q, Q)


def left_givens_starts(
    gens: Sequence[np.random.Generator], d: int, k: int, init: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kernel states (4, C), frames V (C, d, k), row norms (C, d)) of C left chains.

    Chain c takes, from ``gens[c]`` only and in this order, its kernel stream's state
    (:func:`.streams.kernel_states`) and its Haar start (QR of a d × k Gaussian), or starts from
    ``init[c]`` (rows in the order of the decreasing b the chain will use); every start is
    orthonormalised by :func:`_orthonormal_rows_norms`."""
    state = kernel_states(gens)
    V = np.empty((len(gens), d, k))
    nrm = np.empty((len(gens), d))
    for c, g in enumerate(gens):
        V0 = np.linalg.qr(g.standard_normal((d, k)))[0] if init is None else init[c]
        V[c], nrm[c] = _orthonormal_rows_norms(np.asarray(V0, dtype=np.float64))
    return state, V, nrm


def left_givens_reorthonormalise(V: np.ndarray, nrm: np.ndarray) -> None:
    """Re-orthonormalise every chain's frame in place (QR, positive diagonal) and recompute its
    cached row norms: a change of the order of rounding that keeps drift from accumulating."""
    for c in range(V.shape[0]):
        V[c], nrm[c] = _orthonormal_rows_norms(V[c])


def run_left_givens_chains(
    evals: np.ndarray,
    k: int,
    *,
    rng: np.random.Generator | Sequence[np.random.Generator],
    n_chains: int = 4,
    iterations: int = 1000,
    sweeps: int = 1,
    rows: int | None = None,
    init: np.ndarray | None = None,
    record_rows: Sequence[int] = (),
    reorth_every: int = 1000,
) -> dict:
    """``n_chains`` left-Givens chains for BMF(diag(evals)), for the mixing study (PPCA's ``"left"``
    sampler runs the same chains through :func:`.chains.run_bingham_chains`).

    Parameters
    ----------
    evals : eigenvalues of B in decreasing order (the frames are in B's eigen-coordinates).
    k : columns of V.
    rng : a Generator (split into ``n_chains`` children) or one Generator per chain; chain c takes
        its kernel stream and then its Haar start from its own generator.
    iterations, sweeps : iterations, and sweeps per iteration.
    rows : m, the number of top rows paired with every other row (default k).
    init : optional (n_chains, d, k) starting frames; default independent Haar frames.
    record_rows : rows whose squared norms are recorded after each iteration.
    reorth_every : iterations between re-orthonormalisations of the frames (QR, positive diagonal).

    Returns
    -------
    dict with ``V`` (n_chains, d, k) final frames, ``energy`` (n_chains, iterations) tr(VᵀBV),
    ``row_norms`` (n_chains, iterations, len(record_rows)), ``cpu_seconds`` (process time of the
    kernel calls and re-orthonormalisations) and ``moves_per_sweep``.
    """
    b = np.ascontiguousarray(np.asarray(evals, dtype=np.float64))
    if np.any(np.diff(b) > 0):
        raise ValueError("evals must be in decreasing order")
    d = b.size
    k = int(k)
    if not 1 <= k < d:
        raise ValueError(f"need 1 <= k < d, got k={k}, d={d}")
    m = k if rows is None else int(rows)
    if m < 1 or int(sweeps) < 1 or int(iterations) < 1:
        raise ValueError("rows, sweeps and iterations must be >= 1")
    gens = chain_generators(rng, n_chains)
    state, V, nrm = left_givens_starts(gens, d, k, init)
    rec = np.asarray(record_rows, dtype=np.int64)
    energy = np.empty((n_chains, int(iterations)))
    row_norms = np.empty((n_chains, int(iterations), rec.size))
    cpu = 0.0
    done = 0
    while done < iterations:
        step = min(int(reorth_every), int(iterations) - done)
        t0 = time.process_time()
        left_givens_sweeps(
            V,
            nrm,
            b,
            m,
            step,
            int(sweeps),
            energy[:, done : done + step],
            row_norms[:, done : done + step],
            rec,
            state,
        )
        left_givens_reorthonormalise(V, nrm)
        cpu += time.process_time() - t0
        done += step
    return {
        "V": V,
        "energy": energy,
        "row_norms": row_norms,
        "cpu_seconds": cpu,
        "moves_per_sweep": left_givens_pairs(d, m),
    }
