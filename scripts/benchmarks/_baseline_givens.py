"""The single-chain Givens kernel that the lockstep kernel of ``mechanisms.bingham.givens`` is
measured against: one chain per call, moves taken row of V by row of V (for i < k: for j = k..d−1),
each move's c_ij fused into the previous rotation, drawing from Numba's global generator.  The law
is the same; only the order of the moves and the random streams differ.  Kept only as the
benchmark's baseline (``bench_givens.py``); nothing in the harness runs it.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


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
def givens_angle(a, cij):
    """(cos θ, sin θ) for the Givens move's angle: 2θ ~ von Mises(atan2(c_ij, a), κ = ‖(a, c_ij)‖) and
    θ ∈ {φ/2, φ/2 + π} with probability ½ each (the law of θ has period π), without trigonometry.

    With φ = μ + X, X ~ vM(0, κ): cos X = 1 − (1 − W) and |sin X| = √((1 − W)(1 + W)) from the
    Best–Fisher draw, one fair coin for the sign of X, cos μ = a/κ, sin μ = c_ij/κ, then the angle-sum
    formulas give (cos φ, sin φ) and the half-angle formulas (cos φ/2, sin φ/2) for φ taken in
    (−π, π] (cos φ/2 ≥ 0); a second fair coin adds π (negates both).  The two coins come from one
    uniform: u < ½ and (u mod ½) < ¼ are independent fair coins.
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
        sx = math.copysign(
            math.sqrt(one_m_w * (2.0 - one_m_w)), u - 0.5
        )  # first coin: u < ½ negates
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
