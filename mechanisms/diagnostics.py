"""MCMC convergence diagnostics for the PPCA samplers.

* ``f_k_statistic`` / ``f_k_trace``: the statistic of Chaudhuri, Sarwate & Sinha
  (JMLR 2013, section 6.2), F_k^i(T) = ‖(1/T) Σ_{t≤T} X^i(t)‖_F / √k for chain i.
  BMF(B) has mean 0 (it is invariant under V → −V), so F_k → 0 as T grows.
* ``split_rhat``: rank-normalised split-R̂ of Vehtari, Gelman, Simpson, Carpenter &
  Bürkner (2021), max of the bulk (rank-normalised) and tail (folded) versions.
* ``ess``: bulk effective sample size of Vehtari et al. (2021): rank-normalised
  split chains, multi-chain autocorrelation, Geyer's initial positive sequence
  with the monotone (initial monotone sequence) correction, computed step for step
  as ArviZ's ``arviz.ess(..., method="bulk")`` (``arviz.stats.diagnostics._ess``,
  the algorithm of Stan's ``compute_effective_sample_size`` and of the R package
  ``posterior``), including its improved truncated estimate; the summary's
  ``ess_estimator`` (:data:`ESS_ESTIMATOR`) names it in every PPCA record.

These are applied to the trace of q_F(V(t)) = tr(V(t)ᵀ A V(t)) over several chains.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

__all__ = [
    "f_k_statistic",
    "f_k_trace",
    "split_rhat",
    "ess",
    "summarize_chains",
    "RHAT_THRESHOLD",
    "MIN_ESS",
    "ESS_ESTIMATOR",
]

#: Vehtari et al. (2021) recommend R̂ < 1.01 for the rank-normalised split-R̂
#: (the traditional 1.1 / 1.05 thresholds miss real non-convergence with 4 chains).
RHAT_THRESHOLD = 1.01
#: Vehtari et al. (2021) recommend bulk-ESS > 100 per chain (400 for 4 chains) so
#: that R̂ and the ESS estimate themselves are reliable.
MIN_ESS_PER_CHAIN = 100
MIN_ESS = 400
#: how :func:`ess` estimates the bulk-ESS, as PPCA's diagnostics state it: a stored record whose ESS
#: was estimated otherwise does not re-run to the same ``ess`` (and possibly ``converged``), and a
#: rerun names this as the cause
ESS_ESTIMATOR = (
    "bulk-ESS of Vehtari et al. (2021) as arviz.ess(method='bulk'): rank-normalised split chains, "
    "Geyer's initial positive and monotone sequences, improved truncation, tau >= 1/log10(S)"
)


def f_k_statistic(sum_V: np.ndarray, T: int) -> float:
    """F_k(T) from the running sum Σ_{t≤T} V(t) (any d x k or k x d array)."""
    k = min(sum_V.shape[-2:])
    return float(np.linalg.norm(sum_V / T) / np.sqrt(k))


def f_k_trace(samples: np.ndarray) -> np.ndarray:
    """F_k(T), T = 1..len(samples), for one chain's samples of shape (T, d, k)."""
    samples = np.asarray(samples, dtype=np.float64)
    T, d, k = samples.shape
    csum = np.cumsum(samples, axis=0)
    t = np.arange(1, T + 1)[:, None, None]
    return np.sqrt(np.sum((csum / t) ** 2, axis=(1, 2))) / np.sqrt(k)


def _split(chains: np.ndarray) -> np.ndarray:
    chains = np.atleast_2d(np.asarray(chains, dtype=np.float64))
    m, n = chains.shape
    half = n // 2
    if half < 2:
        raise ValueError(f"need at least 4 draws per chain, got {n}")
    # drop the middle draw when n is odd
    return np.concatenate([chains[:, :half], chains[:, n - half :]], axis=0)


def _rank_normalise(x: np.ndarray) -> np.ndarray:
    r = stats.rankdata(x, method="average").reshape(x.shape)
    S = x.size
    return special.ndtri((r - 3.0 / 8.0) / (S + 0.25))


def _rhat_basic(x: np.ndarray) -> float:
    m, n = x.shape
    means = x.mean(axis=1)
    W = x.var(axis=1, ddof=1).mean()
    Bn = means.var(ddof=1) * n  # between-chain variance B
    if W <= 0:
        return float("nan") if Bn > 0 else 1.0
    var_plus = (n - 1) / n * W + Bn / n
    return float(np.sqrt(var_plus / W))


def split_rhat(chains: np.ndarray) -> float:
    """Rank-normalised split-R̂ (Vehtari et al. 2021) of ``chains`` (m chains x n draws)."""
    x = _split(chains)
    if np.ptp(x) == 0:
        return 1.0
    bulk = _rhat_basic(_rank_normalise(x))
    folded = np.abs(x - np.median(x))
    tail = _rhat_basic(_rank_normalise(folded)) if np.ptp(folded) > 0 else 1.0
    return float(max(bulk, tail))


def _autocov(x: np.ndarray) -> np.ndarray:
    """Autocovariance (biased, lags 0..n-1) of each row, by FFT."""
    m, n = x.shape
    xc = x - x.mean(axis=1, keepdims=True)
    nfft = 1 << int(np.ceil(np.log2(2 * n)))
    f = np.fft.rfft(xc, n=nfft, axis=1)
    ac = np.fft.irfft(f * np.conj(f), n=nfft, axis=1)[:, :n]
    return ac / n


def _ess_basic(z: np.ndarray) -> float:
    """Effective sample size of ``z`` (m chains x n draws, already split and rank-normalised).

    Step for step the estimator of ArviZ's ``arviz.stats.diagnostics._ess`` (the same algorithm as
    Stan's ``compute_effective_sample_size`` and ``posterior``'s ``ess_rfun``), so that
    :func:`ess` equals ``arviz.ess(chains, method="bulk")`` up to floating-point rounding.

    Parameters
    ----------
    z : numpy.ndarray
        Shape (m, n), n >= 4.

    Returns
    -------
    float
        S/τ̂ with S = m·n and τ̂ = max(−1 + 2 Σ_{t ≤ 2K+1} ρ̂_t + ρ̂_{2K+2}⁺, 1/log10 S); NaN if an
        autocorrelation is NaN.

    Notes
    -----
    ρ̂_t = 1 − (W − mean_c γ̂_c(t))/var̂⁺ (Vehtari et al. 2021, section 3.2), with γ̂_c the biased
    autocovariance of chain c, W the mean within-chain variance and var̂⁺ = (n − 1)/n·W + B/n.  The
    pairs P̂_j = ρ̂_{2j} + ρ̂_{2j+1} are summed while positive (Geyer's initial positive sequence,
    looking at lags up to n − 2), each pair lowered to the one before it where larger (initial
    monotone sequence).  Where the paper writes τ̂ = −1 + 2 Σ_{j ≤ K} P̂_j, the implementations add
    ρ̂_{2K+2}, the even lag of the first non-positive pair, once when it is positive: the average of
    the truncations after lags 2K + 1 and 2K + 2, which reduces the variance for antithetic chains.
    The floor 1/log10 S caps the ESS at S·log10 S.

    References
    ----------
    Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021), "Rank-normalization, folding, and
    localization: an improved R-hat for assessing convergence of MCMC", Bayesian Analysis 16(2),
    667-718, section 3.2.  Geyer (1992), "Practical Markov chain Monte Carlo", Statistical Science
    7(4), 473-483.  ArviZ, ``arviz.stats.diagnostics._ess`` (version 0.23.4).
    """
    m, n = z.shape
    acov = _autocov(z)
    mean_var = acov[:, 0].mean() * n / (n - 1.0)  # W
    var_plus = mean_var * (n - 1.0) / n
    if m > 1:
        var_plus += z.mean(axis=1).var(ddof=1)
    rho = 1.0 - (mean_var - acov.mean(axis=0)) / var_plus  # ρ̂_t, t = 0 .. n-1
    rho_hat = np.zeros(n)  # the ρ̂_t that enter τ̂
    rho_even, rho_odd = 1.0, rho[1]
    rho_hat[0], rho_hat[1] = rho_even, rho_odd
    # Geyer's initial positive sequence: pair (t + 1, t + 2) is kept while the pair before it is
    # positive; a negative pair is not stored, and the loop ends after it
    t = 1
    while t < n - 3 and rho_even + rho_odd > 0.0:
        rho_even, rho_odd = rho[t + 1], rho[t + 2]
        if rho_even + rho_odd >= 0:
            rho_hat[t + 1], rho_hat[t + 2] = rho_even, rho_odd
        t += 2
    max_t = t - 2
    if rho_even > 0:  # the improved truncation: the last even lag read, once
        rho_hat[max_t + 1] = rho_even
    # Geyer's initial monotone sequence: each pair no larger than the (lowered) pair before it
    t = 1
    while t <= max_t - 2:
        if rho_hat[t + 1] + rho_hat[t + 2] > rho_hat[t - 1] + rho_hat[t]:
            rho_hat[t + 1] = (rho_hat[t - 1] + rho_hat[t]) / 2.0
            rho_hat[t + 2] = rho_hat[t + 1]
        t += 2
    size = m * n
    tau = -1.0 + 2.0 * np.sum(rho_hat[: max_t + 1]) + np.sum(rho_hat[max_t + 1 : max_t + 2])
    tau = max(tau, 1.0 / np.log10(size))  # caps the ESS of antithetic chains at S·log10 S
    if np.isnan(rho_hat).any():
        return float("nan")
    return float(size / tau)


def ess(chains: np.ndarray) -> float:
    """Bulk effective sample size (Vehtari et al. 2021) of ``chains``.

    Equal to ``arviz.ess(chains, method="bulk")`` up to floating-point rounding (tested against
    ArviZ's values on fixed-seed chains in ``tests/mechanisms/test_diagnostics.py``).

    Parameters
    ----------
    chains : numpy.ndarray
        Shape (m, n): m chains of n >= 4 draws (a 1-d array is one chain).

    Returns
    -------
    float
        The ESS of the m·2·⌊n/2⌋ draws of the split chains (the middle draw of an odd n is dropped);
        that size for constant chains; NaN if a draw is NaN.

    References
    ----------
    Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021), Bayesian Analysis 16(2), 667-718:
    split chains, rank normalisation z = Φ⁻¹((r − 3/8)/(S + 1/4)) (Blom's offset), the ESS of
    section 3.2.  ArviZ, ``arviz.stats.diagnostics._ess_bulk`` (version 0.23.4).
    """
    x = _split(chains)
    if np.isnan(x).any():
        return float("nan")
    if np.ptp(x) == 0:
        return float(x.size)
    return _ess_basic(_rank_normalise(x))


def summarize_chains(
    trace: np.ndarray, *, rhat_threshold: float = RHAT_THRESHOLD, min_ess: float | None = None
) -> dict:
    """R̂, ESS and a converged flag for a (chains x draws) trace (after burn-in)."""
    trace = np.atleast_2d(trace)
    m = trace.shape[0]
    if min_ess is None:
        min_ess = MIN_ESS_PER_CHAIN * max(m, 1)
    r = split_rhat(trace)
    e = ess(trace)
    return {
        "rhat": r,
        "ess": e,
        "converged": bool(np.isfinite(r) and r < rhat_threshold and e >= min_ess),
        "rhat_threshold": rhat_threshold,
        "min_ess": float(min_ess),
    }
