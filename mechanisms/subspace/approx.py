"""The approximate case of Singhal & Steinke (section 5, Algorithm 2, DPASE): :func:`subspace_approx`.

Subsample and aggregate: the top-k eigenspaces of t blocks of rows, each mapped to a point by projecting
public reference points onto it, aggregated by a stable (ε, δ)-DP histogram on randomly offset cells.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._base import (
    MechanismOutput,
    PrivacyGuarantee,
    PrivacyInputError,
    check_data,
    check_delta,
    check_epsilon,
    check_k,
)
from ..linalg import top_k_eigenvectors
from .common import NEIGHBOURING


def _bottom(
    guarantee: PrivacyGuarantee, reason: str, release: dict[str, Any], diagnostics: dict[str, Any]
) -> MechanismOutput:
    """⊥: ``components=None``; status, bottom flag and reason go into the release."""
    release = dict(release, status="bottom", bottom=True, reason=reason)
    return MechanismOutput(
        components=None,
        guarantee=guarantee,
        release=release,  # type: ignore[arg-type]
        diagnostics=dict(diagnostics),
    )


#: Defaults chosen by the experiment described in docs/mechanisms_other.md (section "subspace_approx").
DEFAULT_C0 = 8.0
DEFAULT_C1 = 2.0
DEFAULT_C2 = 6.0


def approx_parameters(
    n: int,
    d: int,
    k: int,
    epsilon: float,
    delta: float,
    gamma: float,
    C0: float = DEFAULT_C0,
    C1: float = DEFAULT_C1,
    C2: float = DEFAULT_C2,
) -> dict[str, float]:
    """Algorithm 2's parameters: t = ⌈C₀ ln(1/δ)/ε⌉, m = ⌊n/t⌋, q = ⌈C₁ k⌉,
    ℓ = C₂ γ sqrt(dk) (sqrt k + sqrt(ln(kt))) / sqrt(m), and the histogram's Laplace scale 2/ε and
    release threshold τ (see :func:`stable_histogram_threshold`)."""
    t = int(math.ceil(C0 * math.log(1.0 / delta) / epsilon))
    m = n // t
    q = int(math.ceil(C1 * k))
    width = (
        C2 * gamma * math.sqrt(d * k) * (math.sqrt(k) + math.sqrt(math.log(k * t))) / math.sqrt(m)
        if m > 0
        else float("inf")
    )
    return {
        "t": t,
        "m": m,
        "q": q,
        "cell_width": width,
        "laplace_scale": 2.0 / epsilon,
        "threshold": stable_histogram_threshold(epsilon, delta),
    }


def stable_histogram_threshold(epsilon: float, delta: float) -> float:
    """τ = 1 + (2/ε) ln(1/(2δ)): a cell absent from one neighbour has count <= 1 in the other and is
    released (noisy count > τ, Laplace scale 2/ε) with probability ½ e^{−(τ−1)ε/2} = δ."""
    return 1.0 + (2.0 / epsilon) * math.log(1.0 / (2.0 * delta))


def subspace_approx(
    X: Any,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float,
    delta: float = 1e-6,
    gamma: float = 0.01,
    C0: float = DEFAULT_C0,
    C1: float = DEFAULT_C1,
    C2: float = DEFAULT_C2,
    row_norm_bound: float = 1.0,
    clip: bool = False,
) -> MechanismOutput:
    """Algorithm 2 (DPASE) of Singhal–Steinke (Theorem 1.2): (ε, δ)-DP, replace-one-row.

    ``gamma``: public upper bound on sqrt(λ_{k+1}/λ_k) (Problem 5.1, Remark 5.2: "we assume
    knowledge of k and (an upper bound on) γ"); it only sets the cell width.
    Steps: split the rows into t blocks of m (rows beyond t·m are unused); Π_j = top-k eigenspace of
    block j's XᵀX; project q public reference points p_i ~ N(0, I_d) (Algorithm 2 samples N(0, I);
    the prose's N(0, Σ) is not implementable without data) onto each Π_j; concatenate to t points in
    R^{qd}; offset grid of side ℓ, random offset λℓ, λ ~ U[0,1) shared by all coordinates (as written).
    Private aggregation (the "(ε, δ)-DP histogram" of Lemma A.15, instantiated as the stability-based
    histogram [BNS16; Vad17]): Laplace(2/ε) noise on the count of every non-empty cell (L1 sensitivity
    2: one changed point moves one block's point from one cell to another), release cells whose noisy
    count exceeds τ (:func:`stable_histogram_threshold`), pick the released cell with the largest noisy
    count and require that noisy count >= t/2 (the paper's "contains at least t/2 points", decided on
    the noisy count so that the decision is private); otherwise ⊥.  Then a uniform point of the cell,
    and Π̂ = top-k eigenspace of Σ_i p̂_i p̂_iᵀ.  If m < k (too few rows per block), ⊥ with reason
    "too few samples" (n is public under replacement, so this reveals nothing).

    Release: ``status``/``bottom``/``reason``; the parameters ``t``, ``m``, ``q``, ``cell_width``,
    ``laplace_scale``, ``threshold``, ``C0``, ``C1``, ``C2``, ``gamma`` (functions of n, d, k, ε, δ, γ);
    ``offset`` (the grid offset λ, data-independent randomness).
    Diagnostics (not private): ``max_true_count`` (the true maximum cell count),
    ``n_nonempty_cells`` (the exact number of non-empty cells), ``n_clipped``, and
    ``best_noisy_count`` (the largest noisy count among the released cells: a Laplace-noised float
    whose low-order bits the proof does not cover, so it is not released).

    Parameters
    ----------
    X : array-like of shape (n, d) or PreparedData
        Data, one point per row; rows above ``row_norm_bound`` are refused unless ``clip``.
    k : int
        Dimension of the subspace, 1 <= k < d.
    rng : numpy.random.Generator
        Source of the reference points, the grid offset, the histogram noise and the final point.
    epsilon : float
        Privacy parameter ε > 0.
    delta : float, default 1e-6
        Privacy parameter δ in (0, 1).
    gamma : float, default 0.01
        Public upper bound on sqrt(λ_{k+1}/λ_k); sets the cell width only.
    C0, C1, C2 : float
        The constants of the block count, number of reference points and cell width (defaults
        ``DEFAULT_C0``, ``DEFAULT_C1``, ``DEFAULT_C2``).
    row_norm_bound : float, default 1.0
        Largest accepted row norm (``float("inf")`` accepts any finite data).
    clip : bool, default False
        Scale rows above ``row_norm_bound`` back instead of refusing them.

    Returns
    -------
    MechanismOutput
        ``components`` (d x k, orthonormal) or None for ⊥; the guarantee ((ε, δ)-DP,
        replace-one-row); the release and diagnostics fields listed above.

    References
    ----------
    V. Singhal and T. Steinke, "Privately learning subspaces", NeurIPS 2021, section 5
    (Problem 5.1, Algorithm 2, Theorem 1.2) and Lemma A.15 (stable histogram).
    """
    X, n_clipped = check_data(X, row_norm_bound=row_norm_bound, clip=clip)
    n, d = X.shape
    k = check_k(k, d)
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    if not (gamma > 0 and math.isfinite(gamma)):
        raise PrivacyInputError(f"gamma must be a finite number > 0, got {gamma!r}")
    for name, c in (("C0", C0), ("C1", C1), ("C2", C2)):
        if not (c > 0 and math.isfinite(c)):
            raise PrivacyInputError(f"{name} must be a finite number > 0, got {c!r}")
    prm = approx_parameters(n, d, k, eps, dl, gamma, C0, C1, C2)
    t, m, q, width = int(prm["t"]), int(prm["m"]), int(prm["q"]), prm["cell_width"]
    guarantee = PrivacyGuarantee(
        eps,
        dl,
        NEIGHBOURING,
        exact=True,
        note="Singhal-Steinke Algorithm 2 (subsample-and-aggregate, stable histogram)",
    )
    release: dict[str, Any] = dict(prm, C0=C0, C1=C1, C2=C2, gamma=gamma)
    diagnostics: dict[str, Any] = {"n_clipped": n_clipped}
    if m < k:
        return _bottom(
            guarantee,
            f"too few samples: n={n} gives m=floor(n/t)={m} < k={k} rows per block",
            release,
            diagnostics,
        )

    P = rng.standard_normal((q, d))  # public reference points p_1..p_q
    pts = np.empty((t, q * d))
    for j in range(t):
        B = X[j * m : (j + 1) * m]
        Vj = top_k_eigenvectors(B.T @ B, k)
        pts[j] = ((P @ Vj) @ Vj.T).reshape(-1)  # (Π_j p_1, ..., Π_j p_q)
    lam = rng.random()
    cells = np.floor((pts - lam * width) / width).astype(np.int64)
    uniq, counts = np.unique(cells, axis=0, return_counts=True)
    noisy = counts + rng.laplace(0.0, 2.0 / eps, size=counts.shape)
    tau = prm["threshold"]
    released = noisy > tau
    release["offset"] = lam
    diagnostics.update(n_nonempty_cells=int(len(counts)), max_true_count=int(counts.max()))
    if not np.any(released):
        return _bottom(guarantee, "no cell released by the stable histogram", release, diagnostics)
    best = int(np.argmax(np.where(released, noisy, -np.inf)))
    diagnostics["best_noisy_count"] = float(noisy[best])
    if noisy[best] < t / 2:
        return _bottom(guarantee, "no cell with t/2 points", release, diagnostics)
    corner = lam * width + uniq[best] * width
    phat = (corner + rng.random(q * d) * width).reshape(q, d)
    V = top_k_eigenvectors(phat.T @ phat, k)
    release.update(status="ok", bottom=False)
    return MechanismOutput(
        components=V, guarantee=guarantee, release=release, diagnostics=diagnostics
    )
