"""PPCA: the exponential mechanism of Chaudhuri, Sarwate & Sinha (JMLR 2013), Algorithm 2.

Release V ~ BMF(n ε/2 · A), A = XᵀX/n, density ∝ exp(tr(VᵀBV)) on d x k frames.

Privacy.  The score tr(VᵀXᵀXV) = Σ_rows ‖Vᵀx‖² changes by at most 1 when one row
(of norm ≤ 1) is replaced, since each ‖Vᵀx‖² ∈ [0, 1].  Sampling ∝ exp(ε/2 · score) is
therefore ε-DP (δ = 0) under replace-one-row — **for an exact draw only**.

Samplers (``sampler=``):
  ``"exact"``     k = 1 only: ACG rejection sampler (mechanisms.bingham); the draw is
                  exact, the guarantee is recorded with ``exact=True``.
  ``"gibbs"``     fast Givens-rotation Gibbs chain (default for k > 1).
  ``"reference"`` Hoff (2009) column-wise Gibbs with exact column conditionals.
  ``"left"``      left Givens chain: Gibbs moves rotating two rows of V (mechanisms.bingham
                  .left_givens), 1 sweep of the k top rows against all others per iteration;
                  optional, never chosen by ``"auto"``.
  ``"auto"``      exact for k = 1, gibbs otherwise.

MCMC runs ``n_chains`` chains from uniform (Haar) starts for ``iterations`` sweeps
each; the released V is the final state of chain 0.  The other chains exist only to
compute the convergence diagnostics (split-R̂ and bulk ESS of the q_F trace after
``burn_in``).  They are not released, but they do depend on the data, so ``converged``,
``rhat`` and ``ess`` are diagnostics (not private), never part of the release or of the
guarantee's note.  An MCMC draw is only approximately BMF distributed, so the guarantee
is recorded with ``exact=False`` and ``status="nominal (MCMC)"``: ε is nominal ("ε if
the chain had converged"), not a proven guarantee.

Release vs diagnostics (``MechanismOutput``):
  release      ``status``, ``sampler``, ``epsilon``, ``k``, ``d``, ``iterations``, ``burn_in``,
               ``n_chains``; MCMC: ``released_chain``, ``sweeps_per_iteration`` and
               ``chain_streams`` (how the chains draw their random numbers) — public
               configuration only.
  diagnostics  (not private) ``concentration`` n·ε/2·λ₁(A), ``n``, ``n_clipped``; exact sampler:
               ``acceptance_rate``, ``proposals`` (depend on A); MCMC: ``converged``, ``rhat``,
               ``ess``, ``rhat_threshold``, ``min_ess``, ``ess_estimator``, ``q_F_trace_mean``;
               ``seconds``.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, Literal, Sequence, get_args

import numpy as np

from ._base import (
    ChainConvergenceWarning,
    MechanismOutput,
    PrivacyGuarantee,
    check_data,
    check_epsilon,
    check_k,
    second_moment,
)
from .bingham import CHAIN_STREAMS, chain_generators, run_bingham_chains, sample_vector_bingham
from .calibration import ppca_concentration
from .diagnostics import ESS_ESTIMATOR, RHAT_THRESHOLD, summarize_chains

__all__ = [
    "ppca",
    "ppca_from_second_moment",
    "ppca_restarts",
    "ppca_restarts_from_second_moment",
    "gibbs_convergence_traces",
    "SAMPLERS",
]

#: the type of :func:`ppca`'s ``sampler``: its choices, declared once (a front end checking a
#: configuration reads them from the signature)
Sampler = Literal["auto", "exact", "gibbs", "reference", "left"]
SAMPLERS = get_args(Sampler)

_MCMC_NOTE = (
    "NOMINAL epsilon: epsilon-DP (replace-one-row) holds only for an exact draw from "
    "BMF(n*eps/2*A); this output is the final state of an MCMC chain ({sampler}, {iterations} "
    "iterations, chain 0 of {n_chains}) and is only approximately BMF-distributed: no formal "
    "guarantee (CSS 2013 section 6.2). Convergence diagnostics (R-hat, ESS) are computed from "
    "the data and are not private: see the output's diagnostics."
)
_EXACT_NOTE = (
    "exact draw from BMF(n*eps/2*A) by ACG rejection (k = 1): pure epsilon-DP, "
    "replace-one-row, up to floating-point effects (Mironov 2012)."
)


def not_converged_message(sampler: str, iterations: int, chains: str, rhat_threshold: float) -> str:
    """Text of the non-convergence warning: public configuration only (no R̂, ESS or other number
    computed from the data); ``chains`` names the chains, e.g. ``"4 chains"``."""
    return (
        f"PPCA {sampler} sampler did NOT pass convergence diagnostics (split-Rhat < {rhat_threshold} "
        f"and bulk-ESS >= min_ess) after {iterations} iterations x {chains}: the released subspace may "
        f"be far from BMF(n*eps/2*A); increase iterations. diagnostics['converged'] is False; the "
        f"split-Rhat and ESS are in the output's diagnostics (not private, like this warning: "
        f"neither belongs beside the release)."
    )


def _resolve_sampler(sampler: str, k: int) -> str:
    if sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r}; valid: {SAMPLERS}")
    if sampler == "auto":
        return "exact" if k == 1 else "gibbs"
    if sampler == "exact" and k != 1:
        raise ValueError(
            "sampler='exact' is only available for k = 1; use 'gibbs' (fast MCMC), "
            "'left' or 'reference' for k > 1, or ppca_iterative for an exact k-step mechanism"
        )
    return sampler


def _bmf_target(A: np.ndarray, n: int, k: int, epsilon: float, sampler: str, start: str):
    """Validated inputs of a PPCA release: (ε, d, k, sampler, scale n·ε/2, eigenvalues of B = scale·A,
    eigenvectors U of A, concentration n·ε/2·λ₁(A) — a diagnostic), shared by the single release and
    the restarts."""
    eps = check_epsilon(epsilon)
    A = np.asarray(A, dtype=np.float64)
    d = A.shape[0]
    k = check_k(k, d)
    sampler = _resolve_sampler(sampler, k)
    if start != "uniform":
        raise ValueError(
            "only start='uniform' is supported: a data-dependent start would leak "
            "information through a non-converged chain"
        )
    scale = ppca_concentration(n, eps)
    evals_A, U = np.linalg.eigh((A + A.T) / 2)
    return eps, d, k, sampler, scale, scale * evals_A, U, float(scale * evals_A[-1])


def _checked_burn_in(iterations: int, burn_in: int | None) -> tuple[int, int]:
    """(iterations, burn_in) as ints; burn_in defaults to half the iterations."""
    iterations = int(iterations)
    burn_in = iterations // 2 if burn_in is None else int(burn_in)
    if not (0 <= burn_in < iterations):
        raise ValueError(f"burn_in must satisfy 0 <= burn_in < iterations, got {burn_in}")
    return iterations, burn_in


def _diagnose_trace(trace: np.ndarray, rhat_threshold: float, min_ess: float | None) -> dict:
    """Split-R̂ and bulk-ESS of the chains' q_F traces after burn-in (not converged when fewer than
    4 iterations remain), as the fields a release's diagnostics record, with the name of the ESS
    estimator (:data:`mechanisms.diagnostics.ESS_ESTIMATOR`: a rerun of a record whose ESS was
    estimated otherwise names it as the cause)."""
    if trace.shape[1] >= 4:
        diag = summarize_chains(trace, rhat_threshold=rhat_threshold, min_ess=min_ess)
    else:
        diag = {
            "rhat": float("nan"),
            "ess": float("nan"),
            "converged": False,
            "rhat_threshold": rhat_threshold,
            "min_ess": float("nan"),
        }
    return {
        "converged": bool(diag["converged"]),
        "rhat": float(diag["rhat"]),
        "ess": float(diag["ess"]),
        "rhat_threshold": diag["rhat_threshold"],
        "min_ess": diag["min_ess"],
        "ess_estimator": ESS_ESTIMATOR,
    }


def _chain_components(U: np.ndarray, V_eig: np.ndarray) -> np.ndarray:
    """A chain's final state mapped back from A's eigenbasis, its orthonormality polished by QR
    (changes V by O(1e-15))."""
    Qv, R = np.linalg.qr(U @ V_eig)
    return Qv * np.sign(np.diag(R))


def _mcmc_release(
    base: dict, iterations: int, burn_in: int, n_chains: int, sweeps: int, **extra: Any
) -> dict:
    """The public configuration of an MCMC release (release fields in their recorded order)."""
    return dict(
        base,
        iterations=iterations,
        chain_streams=CHAIN_STREAMS,
        sweeps_per_iteration=sweeps,
        burn_in=burn_in,
        n_chains=n_chains,
        released_chain=0,
        **extra,
    )


def _exact_output(
    evals_B, U, rng, eps: float, base_release: dict, base_diagnostics: dict, **release_extra: Any
) -> MechanismOutput:
    """One exact ACG draw from BMF(B) for k = 1 (no chains, no convergence diagnostics)."""
    t0 = time.perf_counter()
    x, sinfo = sample_vector_bingham(eig=(evals_B, U), rng=rng, return_info=True)
    release = dict(base_release, iterations=0, burn_in=0, n_chains=1, **release_extra)
    diagnostics = dict(
        base_diagnostics,
        converged=None,
        rhat=None,
        ess=None,
        acceptance_rate=sinfo["acceptance_rate"],
        proposals=sinfo["proposals"],
        seconds=time.perf_counter() - t0,
    )
    guarantee = PrivacyGuarantee(eps, 0.0, "replace-one-row", exact=True, note=_EXACT_NOTE)
    return MechanismOutput(
        components=x.reshape(-1, 1), guarantee=guarantee, release=release, diagnostics=diagnostics
    )


def ppca_from_second_moment(
    A: np.ndarray,
    n: int,
    k: int,
    *,
    epsilon: float,
    rng: np.random.Generator,
    sampler: str = "auto",
    iterations: int = 20000,
    burn_in: int | None = None,
    n_chains: int = 4,
    start: str = "uniform",
    progress: bool | None = None,
    record_every: int = 100,
    rhat_threshold: float = RHAT_THRESHOLD,
    min_ess: float | None = None,
    warn: bool = True,
    n_clipped: int = 0,
    sweeps_per_iteration: int | None = None,
) -> MechanismOutput:
    """PPCA given A = XᵀX/n and n (no data validation: use :func:`ppca` for raw data)."""
    eps, d, k, sampler, scale, evals_B, U, concentration = _bmf_target(
        A, n, k, epsilon, sampler, start
    )
    base_release = {"status": "ok", "sampler": sampler, "epsilon": eps, "k": k, "d": d}
    base_diagnostics = {"n_clipped": int(n_clipped), "concentration": concentration, "n": int(n)}
    if sampler == "exact":
        return _exact_output(evals_B, U, rng, eps, base_release, base_diagnostics)

    t0 = time.perf_counter()
    iterations, burn_in = _checked_burn_in(iterations, burn_in)
    n_chains = int(n_chains)
    if n_chains < 1:
        raise ValueError("n_chains must be >= 1")
    res = run_bingham_chains(
        evals_B,
        k,
        rng=rng,
        sampler=sampler,
        n_chains=n_chains,
        iterations=iterations,
        record_every=record_every,
        progress=progress,
        desc=f"PPCA {sampler} d={d} k={k}",
        sweeps_per_iteration=sweeps_per_iteration,
        track_F=False,
    )
    trace = res["energy"][:, burn_in:] / scale  # q_F(V(t)) = tr(VᵀAV)
    diag = _diagnose_trace(trace, rhat_threshold, min_ess)
    V = _chain_components(U, res["V"][0])
    release = _mcmc_release(
        base_release, iterations, burn_in, n_chains, res["sweeps_per_iteration"]
    )
    diagnostics = dict(
        base_diagnostics,
        **diag,
        q_F_trace_mean=float(trace.mean()),
        seconds=time.perf_counter() - t0,
    )
    if not diag["converged"] and warn:
        # for the data curator running the sampler: that it is raised is itself a diagnostic
        warnings.warn(
            not_converged_message(sampler, iterations, f"{n_chains} chains", rhat_threshold),
            ChainConvergenceWarning,
            stacklevel=3,
        )
    note = _MCMC_NOTE.format(sampler=sampler, iterations=iterations, n_chains=n_chains)
    guarantee = PrivacyGuarantee(
        eps, 0.0, "replace-one-row", exact=False, note=note, status="nominal (MCMC)"
    )
    return MechanismOutput(
        components=V, guarantee=guarantee, release=release, diagnostics=diagnostics
    )


def ppca(
    X: Any,
    k: int,
    *,
    epsilon: float,
    rng: np.random.Generator,
    sampler: Sampler = "auto",
    iterations: int = 20000,
    burn_in: int | None = None,
    n_chains: int = 4,
    start: str = "uniform",
    clip: bool = False,
    progress: bool | None = None,
    record_every: int = 100,
    rhat_threshold: float = RHAT_THRESHOLD,
    min_ess: float | None = None,
    warn: bool = True,
    sweeps_per_iteration: int | None = None,
) -> MechanismOutput:
    """PPCA (CSS 2013 Algorithm 2): sample V ~ BMF(n ε/2 · XᵀX/n).

    Parameters
    ----------
    X : array-like of shape (n, d)
        Data, rows of L2 norm ≤ 1 (``clip=True`` scales longer rows back).
    k : int
        Target dimension, 1 ≤ k < d.
    epsilon : float
        Privacy parameter ε > 0.
    rng : numpy.random.Generator
        The only source of randomness (fixed seed ⇒ identical output).
    sampler : {"auto", "exact", "gibbs", "reference", "left"}, default "auto"
        See the module docstring; "auto" is "exact" for k = 1 and "gibbs" otherwise.
    iterations : int, default 20000
        MCMC iterations per chain (CSS 2013 used T = 20,000).  One "gibbs" iteration is
        ``sweeps_per_iteration`` Givens sweeps (default ``bingham.GIBBS_SWEEPS_PER_ITERATION`` = 2);
        one "left" iteration is ``sweeps_per_iteration`` left sweeps (default 1); one "reference"
        iteration is one pass of exact column updates (Hoff 2009).
    burn_in : int, optional
        Iterations discarded before computing R̂/ESS (default ``iterations // 2``).
    n_chains : int, default 4
        Chains run from uniform starts; chain 0 is released.
    start : {"uniform"}, default "uniform"
        Starting frames of the chains: Haar-uniform (a data-dependent start is refused).
    clip : bool, default False
        Scale rows longer than 1 back to norm 1 instead of refusing them.
    progress : bool or callable, optional
        ``True``: a tqdm bar over the chains' iterations; a callable is called with each number of
        iterations run; ``None`` or ``False``: nothing is reported.
    record_every : int, default 100
        Iterations between two records of the F_k statistic.
    rhat_threshold, min_ess : float
        Convergence rule: split-R̂ < ``rhat_threshold`` (default 1.01) and bulk-ESS ≥ ``min_ess``
        (default 100 per chain).  Otherwise ``diagnostics["converged"] = False`` and a
        :class:`~mechanisms.ChainConvergenceWarning` (a ``RuntimeWarning``) says so, with public
        configuration only; the warning's occurrence is itself a diagnostic.
    warn : bool, default True
        Emit the ChainConvergenceWarning of a chain that did not converge.
    sweeps_per_iteration : int, optional
        Givens sweeps per "gibbs" iteration (default ``GIBBS_SWEEPS_PER_ITERATION``), or left
        sweeps per "left" iteration (default ``LEFT_SWEEPS_PER_ITERATION`` = 1).

    Returns
    -------
    MechanismOutput
        ``components`` (d, k) the released frame; the release and diagnostics fields are listed in
        the module docstring (``concentration``, the sampler's proposal counts and R̂/ESS are
        diagnostics).  The guarantee is ε-DP, replace-one-row, ``exact=True`` for the exact k = 1
        draw and ``status="nominal (MCMC)"`` for a chain's state.

    References
    ----------
    K. Chaudhuri, A. D. Sarwate and K. Sinha, "A near-optimal algorithm for differentially-private
    principal components", JMLR 14 (2013), Algorithm 2 (PPCA) and section 6.2 (the Gibbs sampler).
    P. D. Hoff, "Simulation of the matrix Bingham-von Mises-Fisher distribution, with applications to
    multivariate and relational data", J. Comput. Graph. Statist. 18 (2009).
    J. T. Kent, A. M. Ganeiber and K. V. Mardia, "A new unified approach for the simulation of a wide
    class of directional distributions", J. Comput. Graph. Statist. 27 (2018) (the exact k = 1 sampler).
    """
    eps = check_epsilon(epsilon)
    X, n_clipped = check_data(X, clip=clip)
    n, d = X.shape
    k = check_k(k, d)
    A = second_moment(X)
    return ppca_from_second_moment(
        A,
        n,
        k,
        epsilon=eps,
        rng=rng,
        sampler=sampler,
        iterations=iterations,
        burn_in=burn_in,
        n_chains=n_chains,
        start=start,
        progress=progress,
        record_every=record_every,
        rhat_threshold=rhat_threshold,
        min_ess=min_ess,
        warn=warn,
        n_clipped=n_clipped,
        sweeps_per_iteration=sweeps_per_iteration,
    )


_RESTART_NOTE = (
    "NOMINAL epsilon: epsilon-DP (replace-one-row) holds only for an exact draw from "
    "BMF(n*eps/2*A); this output is the final state of ONE MCMC chain ({sampler}, {iterations} "
    "iterations, uniform start, its own random stream) and is only approximately BMF-distributed: "
    "no formal guarantee (CSS 2013 section 6.2). It is restart {index} of {m} released together; "
    "the convergence diagnostics across those {m} chains are computed from the data and are not "
    "private: see the output's diagnostics."
)


def ppca_restarts_from_second_moment(
    A: np.ndarray,
    n: int,
    k: int,
    *,
    epsilon: float,
    rngs: Sequence[np.random.Generator],
    sampler: str = "auto",
    iterations: int = 20000,
    burn_in: int | None = None,
    start: str = "uniform",
    progress: bool | None = None,
    record_every: int = 100,
    rhat_threshold: float = RHAT_THRESHOLD,
    min_ess: float | None = None,
    warn: bool = True,
    n_clipped: int = 0,
    sweeps_per_iteration: int | None = None,
) -> list[MechanismOutput]:
    """``len(rngs)`` independent PPCA releases (restarts) on the same A, diagnosed together.

    Restart r is **exactly** the single-chain release
    ``ppca_from_second_moment(A, n, k, rng=rngs[r], n_chains=1, ...)`` (bit for bit): one chain from
    a uniform start driven only by ``rngs[r]``, whose final state is released.  Restarts are
    therefore independent given the data, and each carries its own guarantee (the same as a
    single release of CSS 2013 Algorithm 2 by MCMC).  The chains of all restarts are used together
    for split-R̂ and bulk-ESS of the q_F trace after ``burn_in`` (Vehtari et al. 2021), so every
    release is diagnosed without running extra chains that are thrown away; a group that fails the
    rule warns once and every output records ``converged=False``.  For ``sampler="exact"`` (k = 1)
    each restart is an exact ACG draw with ``rngs[r]`` (no chains, no diagnostics).

    The eigendecomposition of A is computed once for the whole group.
    """
    rngs = list(rngs)
    if not rngs:
        raise ValueError("rngs must hold at least one numpy Generator (one per restart)")
    eps, d, k, sampler, scale, evals_B, U, concentration = _bmf_target(
        A, n, k, epsilon, sampler, start
    )
    m = len(rngs)
    base_release = {"status": "ok", "sampler": sampler, "epsilon": eps, "k": k, "d": d}
    base_diagnostics = {"n_clipped": int(n_clipped), "concentration": concentration, "n": int(n)}
    if sampler == "exact":
        return [
            _exact_output(
                evals_B,
                U,
                rng,
                eps,
                base_release,
                base_diagnostics,
                restart_index=r,
                restarts_in_group=m,
            )
            for r, rng in enumerate(rngs)
        ]

    iterations, burn_in = _checked_burn_in(iterations, burn_in)
    # restart r's chain is the one ppca_from_second_moment(..., n_chains=1, rng=rngs[r]) runs (its
    # generator's first child), and all m chains run together in lockstep
    res = run_bingham_chains(
        evals_B,
        k,
        rng=[chain_generators(rng, 1)[0] for rng in rngs],
        sampler=sampler,
        n_chains=m,
        iterations=iterations,
        record_every=record_every,
        progress=progress,
        desc=f"PPCA {sampler} d={d} k={k} {m} restarts",
        sweeps_per_iteration=sweeps_per_iteration,
        track_F=False,
    )
    trace = res["energy"][:, burn_in:] / scale
    diag = _diagnose_trace(trace, rhat_threshold, min_ess)
    if not diag["converged"] and warn:
        warnings.warn(
            not_converged_message(sampler, iterations, f"{m} restart chains", rhat_threshold),
            ChainConvergenceWarning,
            stacklevel=3,
        )
    outs = []
    for r in range(m):
        release = _mcmc_release(
            base_release,
            iterations,
            burn_in,
            1,
            res["sweeps_per_iteration"],
            restart_index=r,
            restarts_in_group=m,
        )
        diagnostics = dict(
            base_diagnostics,
            diagnosed_chains=m,
            **diag,
            q_F_trace_mean=float(trace[r].mean()),
            seconds=float(res["seconds"]) / m,
        )
        note = _RESTART_NOTE.format(sampler=sampler, iterations=iterations, index=r, m=m)
        guarantee = PrivacyGuarantee(
            eps, 0.0, "replace-one-row", exact=False, note=note, status="nominal (MCMC)"
        )
        outs.append(
            MechanismOutput(
                components=_chain_components(U, res["V"][r]),
                guarantee=guarantee,
                release=release,
                diagnostics=diagnostics,
            )
        )
    return outs


def ppca_restarts(
    X: Any,
    k: int,
    *,
    epsilon: float,
    rngs: Sequence[np.random.Generator],
    sampler: str = "auto",
    iterations: int = 20000,
    burn_in: int | None = None,
    start: str = "uniform",
    clip: bool = False,
    progress: bool | None = None,
    record_every: int = 100,
    rhat_threshold: float = RHAT_THRESHOLD,
    min_ess: float | None = None,
    warn: bool = True,
    n_chains: int | None = None,
    sweeps_per_iteration: int | None = None,
) -> list[MechanismOutput]:
    """Several independent PPCA releases (CSS 2013 Algorithm 2) on the same data, one per generator
    in ``rngs``, each the final state of its own chain; see :func:`ppca_restarts_from_second_moment`.

    ``n_chains`` is accepted only as 1 or None (each restart IS one chain; the group's chains
    provide the diagnostics), so a :func:`ppca` configuration can be passed through unchanged.
    """
    if n_chains not in (None, 1):
        raise ValueError(
            "ppca_restarts runs one chain per restart (n_chains must be 1 or None); "
            "the restarts' chains are diagnosed together"
        )
    eps = check_epsilon(epsilon)
    X, n_clipped = check_data(X, clip=clip)
    n, d = X.shape
    k = check_k(k, d)
    A = second_moment(X)
    return ppca_restarts_from_second_moment(
        A,
        n,
        k,
        epsilon=eps,
        rngs=rngs,
        sampler=sampler,
        iterations=iterations,
        burn_in=burn_in,
        start=start,
        progress=progress,
        record_every=record_every,
        rhat_threshold=rhat_threshold,
        min_ess=min_ess,
        warn=warn,
        n_clipped=n_clipped,
        sweeps_per_iteration=sweeps_per_iteration,
    )


def gibbs_convergence_traces(
    A: np.ndarray,
    n: int,
    epsilon: float,
    k: int,
    n_chains: int = 5,
    iterations: int = 40000,
    rng: np.random.Generator | None = None,
    record_every: int = 100,
    sampler: str = "gibbs",
    burn_in: int | None = None,
    progress: bool | None = None,
    sweeps_per_iteration: int | None = None,
) -> dict:
    """Figure 2 of CSS 2013: log F_k^i(T) for ``n_chains`` chains from uniform starts.

    ``sweeps_per_iteration``: Givens sweeps per iteration of the ``"gibbs"`` (fast) chain (None: its
    default, 2; the grouped releases of Figures 3-4 and Table 2 use 1 at paper scale), or left
    sweeps per iteration of the ``"left"`` chain (None: 1).

    Returns a dict with
      ``T``: (n_rec,) iterations at which F is recorded (multiples of ``record_every``),
      ``log_F``: (n_chains, n_rec) natural log of F_k^i(T),
      ``q_F``: (n_chains, iterations) trace of tr(V(t)ᵀ A V(t)),
      ``rhat``, ``ess``, ``converged``: diagnostics on q_F after ``burn_in`` (default half),
      ``seconds``, ``sampler``, ``concentration``.
    """
    if rng is None:
        raise ValueError("pass rng (numpy Generator)")
    eps = check_epsilon(epsilon)
    A = np.asarray(A, dtype=np.float64)
    d = A.shape[0]
    k = check_k(k, d)
    if sampler not in ("gibbs", "reference", "left"):
        raise ValueError("sampler must be 'gibbs', 'reference' or 'left'")
    scale = ppca_concentration(n, eps)
    evals = np.linalg.eigvalsh((A + A.T) / 2)
    res = run_bingham_chains(
        scale * evals,
        k,
        rng=rng,
        sampler=sampler,
        n_chains=n_chains,
        iterations=iterations,
        record_every=record_every,
        progress=progress,
        desc=f"Figure 2 {sampler} d={d} k={k}",
        sweeps_per_iteration=sweeps_per_iteration,
    )
    qF = res["energy"] / scale
    if burn_in is None:
        burn_in = iterations // 2
    diag = (
        summarize_chains(qF[:, burn_in:])
        if qF.shape[1] - burn_in >= 4
        else {"rhat": float("nan"), "ess": float("nan"), "converged": False}
    )
    return {
        "T": res["record_iterations"],
        "log_F": np.log(res["F"]),
        "q_F": qF,
        "rhat": diag["rhat"],
        "ess": diag["ess"],
        "converged": diag["converged"],
        "seconds": res["seconds"],
        "sampler": sampler,
        "concentration": float(scale * evals[-1]),
        "sweeps_per_iteration": res["sweeps_per_iteration"],
    }
