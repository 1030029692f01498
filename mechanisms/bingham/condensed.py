"""The matrix Bingham law BMF(B) in the condensed regime, where the frame sits near the top k
eigenvectors of B: an exact importance-sampling oracle and the condensed high-dimensional limit,
checks of the PPCA chains at the concentrations PPCA runs at.

The MACG rejection oracle (:mod:`.exact`) and the Gaussian-equivalence limit (:mod:`.asymptotics`)
both fail once the top eigenvalues of B stand of order p/2 or more above the rest (p = d the
dimension): the oracle's acceptance falls to nothing and the limit's correction is of order one.
That is where PPCA's B = (nε/2)·A lies at the paper's n.  This module covers it.  It is derived
here from the block density of a uniform frame; it is not Yun & Dudeja's (2025) characterisation
of the exponential mechanism in high dimension, whose text was not available.

Derivation (B = diag(b₁, …, b_p) in its eigenbasis, b₁ ≥ … ≥ b_k > b_{k+1} ≥ … ≥ b_p; densities of
BMF(B) w.r.t. the uniform (Haar) measure on p × k frames are ∝ exp(tr VᵀBV)).

* Blocks.  Write V = [C; Y], C the top k × k block (the frame's coordinates on the top k
  eigenvectors), Y the bottom (p − k) × k block.  For a uniform frame the bottom r × k block,
  r + k ≤ p, has Lebesgue density ∝ det(I_k − YᵀY)^{(p − r − k − 1)/2} on ‖Y‖ < 1 (a block of a
  Haar orthogonal matrix: Khatri 1970; Diaconis, Eaton & Lauritzen 1992); at r = p − k the exponent
  is −1/2, whatever p.  Given Y, CᵀC = M := I_k − YᵀY, so C = QM^{1/2} with Q ∈ O(k); the uniform
  law is invariant under C ↦ OC (O ∈ O(k), Y fixed), so given Y (M non-singular) Q is Haar.
* Target.  tr VᵀBV = tr(B_t QMQᵀ) + tr(Yᵀ B_b Y), B_t = diag(b₁..b_k), B_b = diag(b_{k+1}..b_p).
  So under BMF(B) the pair (Y, Q) has density, w.r.t. dY ⊗ Haar(dQ),
      ∝ exp(tr(B_t QMQᵀ) + tr Yᵀ B_b Y) · det(M)^{−1/2} · 1{‖Y‖ < 1}.
* Proposal.  Y₀ with independent entries N(0, σ_{ij}), σ_{ij} = 1/(2(bⱼ − bᵢ)) (row i > k,
  column j ≤ k), i.e. density g(Y₀) ∝ exp(tr Y₀ᵀB_bY₀ − Σⱼ bⱼ‖y₀ⱼ‖²); O Haar on O(k); and
  (Y, Q) = (Y₀O, O), whose density is g(YQᵀ) ∝ exp(tr YᵀB_bY − tr(B_t QGQᵀ)), G = YᵀY = I − M.
* Weight.  Target over proposal: exp(tr(B_t Q(M + G)Qᵀ)) det(M)^{−1/2} = e^{tr B_t} det(M)^{−1/2}:
      w = det(I_k − Y₀ᵀY₀)^{−1/2} · 1{‖Y₀‖ < 1}        (M and Y₀ᵀY₀ are similar),
  the same form for every k.  The proposed frame is V = [QM^{1/2}; Y] = [M₀^{1/2}; Y₀]·O with
  M₀ = I − Y₀ᵀY₀ (M^{1/2} = OᵀM₀^{1/2}O), so its span is that of V₀ = [M₀^{1/2}; Y₀]: in B's
  eigenbasis ‖V_{j,:}‖² = 1 − ‖y₀ⱼ‖² for a top row j ≤ k and the squared norm of row i of Y₀ for
  a bulk row, and tr VᵀBV = Σⱼ bⱼ(1 − ‖y₀ⱼ‖²) + tr Y₀ᵀB_bY₀.
* The estimator is self-normalised importance sampling: exact as the number of draws grows, for any
  B with b_k > b_{k+1}.  It is efficient where the proposal lands inside ‖Y₀‖ < 1 with a nearly
  constant weight, i.e. in the condensed regime (every leakage Sⱼ below well under 1); the result
  reports the effective sample size (Σw)²/Σw² and the share of proposals inside.
* Condensed limit.  With p → ∞ and the gaps bⱼ − bᵢ (j ≤ k < i) of order p, ‖y₀ⱼ‖² is a sum of
  p − k independent terms of order 1/p: it concentrates at the leakage
      Sⱼ = Σ_{i>k} σ_{ij} = Σ_{i>k} 1/(2(bⱼ − bᵢ)),
  the off-diagonal of Y₀ᵀY₀ at 0, and the weight is a smooth function of Y₀ᵀY₀ (it moves a mean by
  O(1/p) relative).  So, when every Sⱼ < 1: E‖V_{j,:}‖² → 1 − Sⱼ for a top row, E‖V_{i,:}‖² →
  Σⱼ σ_{ij} for a bulk row, and the overlap with the top-k subspace ‖V_{1:k,:}‖²_F/k →
  1 − ΣⱼSⱼ/k.  The limit needs max Sⱼ < 1 with a margin (at Sⱼ ≥ 1 the column no longer condenses)
  and no single σ_{ij} a macroscopic share of Sⱼ (``max_share``); its finite-p error is measured
  against the oracle in docs/sampler.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "CondensedLimit",
    "OracleMoments",
    "condensed_limit",
    "condensed_moments",
    "frame_statistics",
]


def _top_and_bulk(evals: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(b_top, b_bulk, σ) for eigenvalues in decreasing order with b_k > b_{k+1}; σ (p − k, k)."""
    b = np.asarray(evals, dtype=np.float64).ravel()
    k = int(k)
    if not 1 <= k < b.size:
        raise ValueError(f"need 1 <= k < p, got k={k}, p={b.size}")
    if np.any(np.diff(b) > 0):
        raise ValueError("eigenvalues must be in decreasing order")
    top, bulk = b[:k], b[k:]
    if not top[-1] > bulk[0]:
        raise ValueError(f"need b_k > b_(k+1) (a gap below the top k), got {top[-1]} and {bulk[0]}")
    sigma = 0.5 / (top[None, :] - bulk[:, None])
    return top, bulk, sigma


@dataclass(frozen=True)
class CondensedLimit:
    """The condensed high-dimensional limit of BMF(diag(evals)) on p × k frames (module docstring).

    Attributes
    ----------
    evals : (p,) eigenvalues of B in decreasing order (row i of V ↔ eigenvector i).
    k : number of columns.
    leakage : (k,) Sⱼ = Σ_{i>k} 1/(2(bⱼ − bᵢ)), the expected squared mass of column j outside the
        top k eigenvectors.
    occupation : (p − k, k) σ_{ij} = 1/(2(bⱼ − bᵢ)), column j's expected share on bulk row i.
    row_sq : (p,) the limit of E‖V_{i,:}‖²: 1 − Sⱼ for a top row, Σⱼ σ_{ij} for a bulk row.
    """

    evals: np.ndarray
    k: int
    leakage: np.ndarray
    occupation: np.ndarray
    row_sq: np.ndarray

    @property
    def subspace(self) -> float:
        """The limit of E‖V_{1:k,:}‖²_F / k = 1 − ΣⱼSⱼ/k (the overlap with the top-k subspace)."""
        return float(1.0 - self.leakage.sum() / self.k)

    def energy(self) -> float:
        """The limit of E tr(VᵀBV) = Σᵢ bᵢ E‖V_{i,:}‖²."""
        return float(self.evals @ self.row_sq)

    @property
    def max_leakage(self) -> float:
        """max Sⱼ: the regime indicator (the limit needs it below 1 with a margin)."""
        return float(self.leakage.max())

    @property
    def max_share(self) -> float:
        """max over j of maxᵢ σ_{ij}/Sⱼ: the largest share of one bulk direction in a leakage."""
        return float((self.occupation / self.leakage[None, :]).max())


def condensed_limit(evals: np.ndarray, k: int) -> CondensedLimit:
    """The condensed limit of BMF(diag(evals)) (derivation and regime in the module docstring).

    Parameters
    ----------
    evals : (p,) eigenvalues of B in decreasing order with b_k > b_{k+1}; for PPCA B = (nε/2)·A.
    k : number of columns, 1 ≤ k < p.
    """
    top, bulk, sigma = _top_and_bulk(evals, k)
    leakage = sigma.sum(axis=0)
    row_sq = np.concatenate([1.0 - leakage, sigma.sum(axis=1)])
    return CondensedLimit(
        evals=np.concatenate([top, bulk]),
        k=int(k),
        leakage=leakage,
        occupation=sigma,
        row_sq=row_sq,
    )


@dataclass(frozen=True)
class OracleMoments:
    """Self-normalised importance-sampling estimates of BMF(B) moments (module docstring).

    Attributes
    ----------
    mean, se : statistic → estimate and its delta-method standard error.  Statistics:
        ``row1`` … ``row{k}`` the squared norms of the top rows of V, ``subspace`` =
        ‖V_{1:k,:}‖²_F/k, ``q`` = tr(VᵀBV)/b₁.
    bulk_rows : (p − k,) estimates of E‖V_{i,:}‖² for the bulk rows (no standard error).
    draws : proposals drawn.
    inside : share of proposals with ‖Y‖ < 1 (the others have weight 0).
    ess : effective sample size (Σw)²/Σw².
    """

    mean: dict[str, float]
    se: dict[str, float]
    bulk_rows: np.ndarray
    draws: int
    inside: float
    ess: float

    def z_scores(self, sample: dict[str, np.ndarray]) -> dict[str, float]:
        """For each statistic of ``sample`` (independent draws, e.g. :func:`frame_statistics` of
        chains' final states): (sample mean − estimate) / the standard error of that difference."""
        out = {}
        for key, x in sample.items():
            x = np.asarray(x, dtype=np.float64)
            se = x.std(ddof=1) / np.sqrt(x.size)
            out[key] = float((x.mean() - self.mean[key]) / np.hypot(se, self.se[key]))
        return out


def _top_row_statistics(rows: np.ndarray, bulk_energy: np.ndarray, top: np.ndarray) -> dict:
    """The statistics of :class:`OracleMoments` from the top rows' squared norms (m, k) and the
    bulk's share of tr(VᵀBV) (m,)."""
    k = rows.shape[1]
    stats = {f"row{j + 1}": rows[:, j] for j in range(k)}
    stats["subspace"] = rows.sum(axis=1) / k
    stats["q"] = (rows @ top + bulk_energy) / top[0]
    return stats


def frame_statistics(V: np.ndarray, evals: np.ndarray, k: int) -> dict[str, np.ndarray]:
    """The statistics of :class:`OracleMoments` of frames ``V`` (m, p, k) given in B's eigenbasis
    (rows in the order of ``evals``), one value per frame."""
    rows = np.einsum("mij,mij->mi", V, V)
    b = np.asarray(evals, dtype=np.float64)
    return _top_row_statistics(rows[:, :k], rows[:, k:] @ b[k:], b[:k])


def _batch_statistics(top, bulk, Y0):
    """Log-weights (−∞ outside ‖Y₀‖ < 1), per-draw statistics and bulk rows' squared norms of a
    batch of proposals Y₀ (m, p − k, k)."""
    k = top.size
    G = np.einsum("mik,mil->mkl", Y0, Y0)  # Y₀ᵀY₀
    inside = np.linalg.eigvalsh(G)[:, -1] < 1.0  # ‖Y₀‖ < 1, i.e. I − G ≻ 0
    _, logdet = np.linalg.slogdet(np.where(inside[:, None, None], np.eye(k) - G, np.eye(k)))
    log_w = np.where(inside, -0.5 * logdet, -np.inf)
    rows = 1.0 - np.einsum("mjj->mj", G)  # (m, k): ‖V_{j,:}‖² of the top rows
    bulk_rows = np.einsum("mik->mi", Y0 * Y0)
    return log_w, _top_row_statistics(rows, bulk_rows @ bulk, top), bulk_rows


def condensed_moments(
    evals: np.ndarray, k: int, draws: int, *, rng: np.random.Generator, batch: int = 2000
) -> OracleMoments:
    """Exact (importance-sampling) moments of BMF(diag(evals)) (module docstring).

    Parameters
    ----------
    evals : (p,) eigenvalues of B in decreasing order with b_k > b_{k+1}.
    k : number of columns, 1 ≤ k < p.
    draws : number of Gaussian proposals for the bottom block.
    rng : the random generator.
    batch : proposals per batch (memory: batch·(p − k)·k doubles).

    Returns
    -------
    OracleMoments
        Weighted means, standard errors, the bulk rows' means, the share inside and the ESS.
    """
    top, bulk, sigma = _top_and_bulk(evals, k)
    if int(draws) < 1 or int(batch) < 1:
        raise ValueError(f"need draws >= 1 and batch >= 1, got {draws} and {batch}")
    scale = np.sqrt(sigma)
    log_ws, stats, bulk_sum, n_inside = [], {}, [], 0
    for start in range(0, int(draws), int(batch)):
        m = min(int(batch), int(draws) - start)
        Y = rng.standard_normal((m, bulk.size, top.size)) * scale[None, :, :]
        log_w, s, bulk_rows = _batch_statistics(top, bulk, Y)
        log_ws.append(log_w)
        for key, x in s.items():
            stats.setdefault(key, []).append(x)
        finite = np.isfinite(log_w)
        if finite.any():  # the batch's weighted bulk rows, relative to its largest weight
            top_lw = float(log_w[finite].max())
            bulk_sum.append((top_lw, np.exp(log_w - top_lw) @ bulk_rows))
        n_inside += int(finite.sum())
    log_w = np.concatenate(log_ws)
    if not np.isfinite(log_w).any():
        raise RuntimeError(f"no proposal of {draws} fell inside ‖Y‖ < 1: B is not condensed")
    shift = log_w.max()
    w = np.exp(log_w - shift)
    total = w.sum()
    mean, se = {}, {}
    for key, parts in stats.items():
        x = np.concatenate(parts)
        mu = float(w @ x / total)
        mean[key] = mu
        se[key] = float(np.sqrt(np.sum(w**2 * (x - mu) ** 2)) / total)
    bulk_rows = sum(np.exp(top_lw - shift) * part for top_lw, part in bulk_sum) / total
    return OracleMoments(
        mean=mean,
        se=se,
        bulk_rows=np.asarray(bulk_rows),
        draws=int(draws),
        inside=n_inside / int(draws),
        ess=float(total**2 / np.sum(w**2)),
    )
