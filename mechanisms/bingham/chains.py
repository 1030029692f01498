"""The chain driver: ``n_chains`` MCMC chains for BMF(diag(b)) from Haar starts (ppca and Figure 2).

:func:`run_bingham_chains` runs the Givens chain (:mod:`.givens`), the left Givens chain
(:mod:`.left_givens`), Hoff's column sampler (:mod:`.column`) or the rstiefel port
(:mod:`.rstiefel`) in chunks, stopping on every record point to store the F_k statistic
‖(1/T) Σ_t V_t‖_F / √k, and returns the final states and the energy traces tr(VᵀBV).

Null-space reduction (Givens chain, ``track_F=False``).  BMF(B) = BMF(B − b0 I) since tr VᵀV = k,
so after shifting by the bottom eigenvalue b0, B acts only on the r coordinates outside its bottom
eigenspace.  Every Givens move, and every conditional it draws from, depends on the state Q only
through Q_PᵀB_P Q_P (Q_P = the r rows of Q on those coordinates), so Q_P alone is a Markov chain
with the same law as in the full chain.  The null block Q_Z is drawn once at the end: a Haar start
makes Q_Z given Q_P uniform on the completions of Q_P, and right multiplications by rotations chosen
from Q_P keep it so (:func:`_complete_null_rows`).  The tolerance that decides the bottom eigenspace
is derived in :func:`null_space_split`.  The left chain cannot use this reduction: its moves read
the rows inside the null space (:mod:`.left_givens`, "No null-space reduction"), so it runs on all
d rows.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Callable

import numpy as np

from .column import COLUMN_POWER_ITERATIONS, _proxy_rest, column_gibbs_sweeps
from .givens import GIBBS_SWEEPS_PER_ITERATION, givens_sweeps
from .left_givens import (
    LEFT_SWEEPS_PER_ITERATION,
    left_givens_reorthonormalise,
    left_givens_starts,
    left_givens_sweeps,
)
from .rstiefel import rstiefel_gibbs_sweep
from .streams import chain_generators, kernel_states

__all__ = [
    "LOCKSTEP_BYTES",
    "MCMC_SAMPLERS",
    "NULL_SPACE_TOLERANCE_ULPS",
    "lockstep_group_size",
    "null_space_split",
    "run_bingham_chains",
]


#: the samplers :func:`run_bingham_chains` runs
MCMC_SAMPLERS = ("gibbs", "reference", "rstiefel", "left")

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
    if (
        null.size < 2 or active.size == 0
    ):  # no null space to drop (one coordinate: no gain), or B ∝ I
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


def _progress_sink(progress, total: int, desc: str):
    """(update, close) for ``progress``: a callable is called with each number of iterations run; ``True``
    shows a tqdm bar of ``total`` iterations; ``None`` or ``False`` reports nothing."""
    if callable(progress):
        return progress, lambda: None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc=desc, unit="it", mininterval=0.5, smoothing=0.05)
        return bar.update, bar.close
    return (lambda n: None), (lambda: None)


def _drive_chains(
    advance, iterations: int, chunk: int, rec_T: np.ndarray, F: np.ndarray, k: int, update
) -> None:
    """Run chains in chunks of at most ``chunk`` iterations, stopping exactly on every record point of
    ``rec_T`` to store F_k there in ``F`` (one row per chain).  ``advance(done, step)`` runs
    iterations [done, done + step) of the chains (its kernel writes the energy traces) and returns
    their running sums of V since iteration 0, one per chain along the first axis, in any layout."""
    done = 0
    next_rec = 0
    while done < iterations:
        step = min(max(chunk, 1), iterations - done)
        if next_rec < rec_T.size:
            step = min(step, int(rec_T[next_rec]) - done)
        sum_V = advance(done, step)
        done += step
        if next_rec < rec_T.size and done == rec_T[next_rec]:
            flat = sum_V.reshape(sum_V.shape[0], -1) / done
            F[:, next_rec] = np.linalg.norm(flat, axis=1) / np.sqrt(k)
            next_rec += 1
        update(step * F.shape[0])


def _orthonormal_state(Qt: np.ndarray) -> np.ndarray:
    """Re-orthonormalise the Givens state Qt = Q_Pᵀ (d × r, orthonormal columns: Q_P has orthonormal
    rows; r = d for the full Q) by QR with a positive diagonal (a change of order rounding)."""
    if Qt.shape[0] == Qt.shape[1]:
        Qn, R = np.linalg.qr(
            Qt.T
        )  # the full Q: its columns (Qt's rows) orthonormal, as always done
        return np.ascontiguousarray((Qn * np.sign(np.diag(R))).T)
    Qn, R = np.linalg.qr(Qt)
    return np.ascontiguousarray(Qn * np.sign(np.diag(R)))


#: the Givens chains advanced together in one kernel call hold at most this many bytes of state (and
#: at least one chain): lockstep pays where a chain's state is small (kddcup, 105 kB: 9 chains a call)
#: and costs where it is not (census, 1.7 MB a chain: ten states no longer share the cache), measured
#: by scripts/benchmarks/bench_givens.py and in the paper-scale run (docs/performance.md)
LOCKSTEP_BYTES = 1 << 20


def lockstep_group_size(n_chains: int, d: int, m: int) -> int:
    """How many of ``n_chains`` chains of state (d, m) one kernel call advances together: as many
    as fit in :data:`LOCKSTEP_BYTES`, at least one."""
    return max(1, min(int(n_chains), LOCKSTEP_BYTES // (8 * int(d) * int(m))))


def _givens_chains(
    evals, k, gens, iterations, sweeps, init, track_F, rec_T, chunk, reorth_every, energy, F, update
) -> np.ndarray:
    """The Givens chains of :func:`run_bingham_chains`, in lockstep groups of up to ``LOCKSTEP_BYTES``
    of state per kernel call.

    Chain c takes, from ``gens[c]`` only and in this order, its kernel stream's state, its Haar start
    and (reduced chain) its null-space completion, so it is the same chain alone or beside others.
    """
    d = evals.size
    n_chains = len(gens)
    if track_F:
        active, null, b0 = np.arange(d), np.empty(0, dtype=np.int64), 0.0
    else:
        active, null, b0 = null_space_split(evals, k)
    b_active = np.ascontiguousarray(evals[active] - b0)
    Qt = np.empty((n_chains, d, active.size))
    states = kernel_states(gens)  # each generator's first draws, before its start
    for c, gen in enumerate(gens):
        Q = np.linalg.qr(gen.standard_normal((d, d)))[0]
        if init is not None:  # complete the given frame to a full orthogonal matrix
            Q = np.linalg.qr(np.hstack([init[c], Q[:, : d - k]]))[0]
            Q[:, :k] = init[c]
        Qt[c] = Q[active].T  # (d, r): Q_Pᵀ (r = d without a null space)
    sum_V = np.zeros((n_chains, k, active.size))
    since_reorth = [0]

    per_call = lockstep_group_size(n_chains, Qt.shape[1], Qt.shape[2])

    def advance(done, step):
        for lo in range(0, n_chains, per_call):
            g = slice(lo, lo + per_call)
            givens_sweeps(
                Qt[g],
                b_active,
                k,
                step,
                energy[g, done : done + step],
                sum_V[g],
                sweeps,
                states[:, g],
            )
        since_reorth[0] += step
        if since_reorth[0] >= reorth_every:
            # re-orthonormalise (changes Q by O(rounding)); keeps drift ≤ 1e-13
            for c in range(n_chains):
                Qt[c] = _orthonormal_state(Qt[c])
            since_reorth[0] = 0
        return sum_V

    _drive_chains(advance, iterations, chunk, rec_T, F, k, update)
    Vout = np.empty((n_chains, d, k))
    for c, gen in enumerate(gens):
        Qc = _orthonormal_state(Qt[c])
        if null.size:
            energy[c] += k * b0  # tr(VᵀBV) = tr(Vᵀ(B − b0 I)V) + k b0
            Vout[c][active] = Qc[:k].T
            Vout[c][null] = _complete_null_rows(Qc, k, gen)
        else:
            Vout[c] = Qc[:k].T
    return Vout


def _left_chains(
    evals, k, gens, iterations, sweeps, init, track_F, rec_T, chunk, reorth_every, energy, F, update
) -> np.ndarray:
    """The left Givens chains of :func:`run_bingham_chains` (``sampler="left"``): all chains in one
    kernel call, m = k top rows, ``sweeps`` sweeps per iteration.

    The chains run in the order of decreasing ``evals`` (a stable sort; the kernel needs it) and
    their frames are mapped back to the given order at the end.  Chain c takes its kernel stream
    and Haar start from ``gens[c]`` alone (:func:`.left_givens.left_givens_starts`), and the frames
    are re-orthonormalised after every ``reorth_every`` iterations and at the end, so with
    ``evals`` in decreasing order the chains are bit for bit those of
    :func:`.left_givens.run_left_givens_chains` with the same generators, sweeps and
    ``reorth_every``.  With ``track_F`` the kernel runs one iteration per call to sum the frames.
    """
    d = evals.size
    n_chains = len(gens)
    order = np.argsort(-evals, kind="stable")
    b = np.ascontiguousarray(evals[order])
    init_sorted = None if init is None else np.asarray(init, dtype=np.float64)[:, order]
    state, V, nrm = left_givens_starts(gens, d, k, init_sorted)
    no_rows = np.empty(0, dtype=np.int64)
    sum_V = np.zeros((n_chains, d, k))
    since_reorth = [0]

    def advance(done, step):
        t = done
        while t < done + step:
            s = 1 if track_F else min(done + step - t, reorth_every - since_reorth[0])
            left_givens_sweeps(
                V,
                nrm,
                b,
                k,
                s,
                sweeps,
                energy[:, t : t + s],
                np.empty((n_chains, s, 0)),
                no_rows,
                state,
            )
            if track_F:
                sum_V[...] += V
            t += s
            since_reorth[0] += s
            if since_reorth[0] >= reorth_every:
                left_givens_reorthonormalise(V, nrm)
                since_reorth[0] = 0
        return sum_V

    _drive_chains(advance, iterations, chunk, rec_T, F, k, update)
    if since_reorth[0]:
        left_givens_reorthonormalise(V, nrm)
    Vout = np.empty((n_chains, d, k))
    Vout[:, order] = V
    return Vout


def _column_chain(evals, k, gen, sampler, iterations, V0, rec_T, chunk, energy_row, F_row, update):
    """One chain of Hoff's column sampler (``"reference"``, Numba kernel) or of the rstiefel port,
    driven by ``gen`` alone; returns its final frame."""
    d = evals.size
    V = np.linalg.qr(gen.standard_normal((d, k)))[0] if V0 is None else np.array(V0)
    V = np.ascontiguousarray(V)
    sum_V = np.zeros((d, k))
    if sampler == "reference":  # Hoff's column Gibbs, exact conditionals (Numba kernel)
        rest = _proxy_rest(evals, k)
        stats = np.zeros(2, dtype=np.int64)

        def advance(done, step):
            column_gibbs_sweeps(
                V,
                evals,
                rest,
                gen,
                step,
                energy_row[done : done + step],
                sum_V,
                COLUMN_POWER_ITERATIONS,
                stats,
            )
            return sum_V[None]
    else:  # rstiefel: Hoff's sampler with one inner coordinate sweep per column (Python)
        Bdiag = np.diag(evals)

        def advance(done, step):
            for t in range(done, done + step):
                rstiefel_gibbs_sweep(V, Bdiag, gen)
                sum_V[...] += V
                energy_row[t] = float(np.einsum("ij,i,ij->", V, evals, V))
            return sum_V[None]

    _drive_chains(advance, iterations, chunk, rec_T, F_row, k, update)
    Qv, Rv = np.linalg.qr(V)
    return Qv * np.sign(np.diag(Rv))


def run_bingham_chains(
    evals: np.ndarray,
    k: int,
    *,
    rng: np.random.Generator | Sequence[np.random.Generator],
    sampler: str = "gibbs",
    n_chains: int = 4,
    iterations: int = 20000,
    record_every: int = 100,
    progress: bool | Callable[[int], Any] | None = None,
    chunk: int | None = None,
    reorth_every: int = 1000,
    desc: str = "BMF sampler",
    sweeps_per_iteration: int | None = None,
    init: np.ndarray | None = None,
    track_F: bool = True,
) -> dict:
    """Run ``n_chains`` MCMC chains for BMF(diag(evals)) from uniform (Haar) starts.

    ``rng``: one numpy Generator per chain, or a single Generator from which ``n_chains`` child
    generators are seeded (``streams.chain_generators``); chain c is driven by its generator alone.
    The ``"gibbs"`` chains run in lockstep (:mod:`.givens`), as many per kernel call as fit in
    ``LOCKSTEP_BYTES`` of state, each bit for bit the run of its generator alone (``n_chains=1``).
    Works in the eigenbasis of B (B = U diag(evals) Uᵀ; map results back with U).
    ``sampler`` is ``"gibbs"`` (fast Givens chain), ``"left"`` (left Givens chain,
    :mod:`.left_givens`, m = k), ``"reference"`` (Hoff column Gibbs) or ``"rstiefel"``.
    One ``"gibbs"`` iteration is ``sweeps_per_iteration`` Givens sweeps (default 2: with it an
    iteration mixes about as well as one reference iteration, see docs/sampler.md); one ``"left"``
    iteration is ``sweeps_per_iteration`` left sweeps (default 1, ``LEFT_SWEEPS_PER_ITERATION``);
    one ``"reference"`` iteration is one pass of exact column updates.
    ``init`` (n_chains, d, k) optional starting frames (eigen-coordinates), e.g. final states of an
    earlier run, to measure mixing at stationarity; default: independent Haar-uniform starts.
    ``track_F=False`` (PPCA releases, which diagnose the q_F trace only) returns no F statistic and
    lets the ``"gibbs"`` chain run on the r rows of its state outside B's null space
    (``null_space_split``; same law, cost ∝ r instead of d per move); ``F`` is then (n_chains, 0).
    The ``"left"`` chain always runs on all d rows (it cannot be reduced, :mod:`.left_givens`).
    ``progress``: ``True`` shows a tqdm bar, a callable is called with the number of iterations
    each time a chain advances, ``None`` or ``False`` (default) reports nothing; the library never
    decides from the environment (the experiments layer does).

    Returns a dict with
      ``V``: (n_chains, d, k) final states (eigen-coordinates),
      ``energy``: (n_chains, iterations) tr(VᵀBV) after each iteration,
      ``F``: (n_chains, n_rec) F_k^i(T) at ``T`` = ``record_iterations``,
      ``record_iterations``: (n_rec,), ``seconds``: wall time.
    """
    evals = np.ascontiguousarray(np.asarray(evals, dtype=np.float64))
    d = evals.size
    k = int(k)
    iterations = int(iterations)
    if iterations < 1:
        raise ValueError("iterations must be >= 1")
    if sampler not in MCMC_SAMPLERS:
        raise ValueError(f"unknown MCMC sampler {sampler!r}")
    if sampler == "left" and not 1 <= k < d:
        raise ValueError(f"the left chain needs 1 <= k < d, got k={k}, d={d}")
    record_every = max(1, int(record_every))
    if sweeps_per_iteration is not None:
        sweeps = int(sweeps_per_iteration)
    elif sampler == "left":
        sweeps = LEFT_SWEEPS_PER_ITERATION
    else:
        sweeps = GIBBS_SWEEPS_PER_ITERATION
    if sweeps < 1:
        raise ValueError("sweeps_per_iteration must be >= 1")
    if sampler == "left" and int(reorth_every) < 1:
        raise ValueError("reorth_every must be >= 1")
    if chunk is None:
        chunk = record_every if sampler in ("gibbs", "reference", "left") else 1
        # keep kernel calls reasonably long (progress updates ~ every few 1e6 flops)
        while sampler == "gibbs" and chunk * sweeps * k * d * d < 2e7 and chunk < 5000:
            chunk *= 2
    energy = np.empty((n_chains, iterations))
    rec_T = (
        np.arange(record_every, iterations + 1, record_every)
        if track_F
        else np.empty(0, dtype=np.int64)
    )
    F = np.empty((n_chains, rec_T.size))
    gens = chain_generators(rng, n_chains)
    t0 = time.perf_counter()
    update, close = _progress_sink(progress, n_chains * iterations, desc)
    try:
        if sampler == "gibbs":
            Vout = _givens_chains(
                evals,
                k,
                gens,
                iterations,
                sweeps,
                init,
                track_F,
                rec_T,
                chunk,
                reorth_every,
                energy,
                F,
                update,
            )
        elif sampler == "left":
            Vout = _left_chains(
                evals,
                k,
                gens,
                iterations,
                sweeps,
                init,
                track_F,
                rec_T,
                chunk,
                int(reorth_every),
                energy,
                F,
                update,
            )
        else:
            Vout = np.empty((n_chains, d, k))
            for c, gen in enumerate(gens):
                V0 = None if init is None else init[c]
                Vout[c] = _column_chain(
                    evals,
                    k,
                    gen,
                    sampler,
                    iterations,
                    V0,
                    rec_T,
                    chunk,
                    energy[c],
                    F[c : c + 1],
                    update,
                )
    finally:
        close()
    return {
        "V": Vout,
        "energy": energy,
        "F": F,
        "record_iterations": rec_T,
        "seconds": time.perf_counter() - t0,
        "sampler": sampler,
        "sweeps_per_iteration": sweeps if sampler in ("gibbs", "left") else None,
    }
