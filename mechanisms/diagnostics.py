"""MCMC convergence diagnostics for the PPCA samplers.

* ``f_k_statistic`` / ``f_k_trace``: the statistic of Chaudhuri, Sarwate & Sinha
  (JMLR 2013, section 6.2), F_k^i(T) = ‖(1/T) Σ_{t≤T} X^i(t)‖_F / √k for chain i.
  BMF(B) has mean 0 (it is invariant under V → −V), so F_k → 0 as T grows.
* ``split_rhat``: rank-normalised split-R̂ of Vehtari, Gelman, Simpson, Carpenter &
  Bürkner (2021), max of the bulk (rank-normalised) and tail (folded) versions.
* ``ess``: bulk effective sample size of Vehtari et al. (2021): rank-normalised
  split chains, multi-chain autocorrelation, Geyer's initial positive sequence
  with the monotone (initial monotone sequence) correction.

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
]

#: Vehtari et al. (2021) recommend R̂ < 1.01 for the rank-normalised split-R̂
#: (the traditional 1.1 / 1.05 thresholds miss real non-convergence with 4 chains).
RHAT_THRESHOLD = 1.01
#: Vehtari et al. (2021) recommend bulk-ESS > 100 per chain (400 for 4 chains) so
#: that R̂ and the ESS estimate themselves are reliable.
MIN_ESS_PER_CHAIN = 100
MIN_ESS = 400


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


def _ess_basic(x: np.ndarray) -> float:
    m, n = x.shape
    acov = _autocov(x)
    chain_var = acov[:, 0] * n / (n - 1.0)
    W = chain_var.mean()
    var_plus = W * (n - 1.0) / n
    if m > 1:
        var_plus += x.mean(axis=1).var(ddof=1)
    if var_plus <= 0:
        return float(m * n)
    rho = 1.0 - (W - acov.mean(axis=0)) / var_plus
    rho[0] = 1.0
    # Geyer initial positive sequence on pair sums P_t = ρ_{2t} + ρ_{2t+1}
    n_pairs = n // 2
    P = rho[0 : 2 * n_pairs : 2] + rho[1 : 2 * n_pairs : 2]
    pos = P > 0
    stop = int(np.argmin(pos)) if not pos.all() else n_pairs
    P = P[:stop]
    # initial monotone sequence
    if P.size:
        P = np.minimum.accumulate(P)
    tau = -1.0 + 2.0 * P.sum()
    tau = max(tau, 1.0 / np.log10(m * n + 10))  # Stan's guard against antithetic blow-up
    return float(m * n / tau)


def ess(chains: np.ndarray) -> float:
    """Bulk effective sample size (Vehtari et al. 2021) of ``chains`` (m x n)."""
    x = _split(chains)
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
