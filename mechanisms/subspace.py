"""Singhal & Steinke, "Privately learning subspaces" (NeurIPS 2021): exact and approximate cases.

Paper text: ``/work/shared/papers/004_*``.  The paper stores points as columns of a d x n matrix;
here, as everywhere in privpca, X is n x d with one point (individual) per row.

Neighbouring relation: the paper's (Definition A.11 and the remark after it; Theorems 1.1/1.2
"with respect to changing one column") is **replacement of one point** -> ``"replace-one-row"``.
Neither estimator needs a norm bound for privacy (the exact case only uses which points lie in
which subspace; the approximate case only uses projection matrices), but for uniformity with the
rest of the harness rows above ``row_norm_bound`` (default 1) are refused unless ``clip=True``
(clipping rescales a point, which changes neither its span nor, for Algorithm 1, any score);
pass ``row_norm_bound=float("inf")`` to accept any finite data.

``⊥`` / NULL outputs are returned, not raised: ``components=None``, ``release["status"] = "bottom"``,
``release["bottom"] = True`` and ``release["reason"]`` saying which case occurred (every reason is
decided on public quantities or on the mechanism's noisy values); the guarantee is still stated
(⊥ is one of the private outcomes).  Each function's docstring lists which of its output fields
are release and which diagnostics (exact data statistics: not private).

:func:`subspace_exact` — Algorithm 1 (DPESSE): GAP-MAX (Lemma A.16, [BDRS18]) over the subspaces
spanned by k-subsets of the data, plus NULL, with truncated-Laplace noise TLap(2, ε, δ) (Lemma A.14).
:func:`subspace_approx` — Algorithm 2 (DPASE): subsample-and-aggregate with reference points and a
stable (ε, δ)-DP histogram on randomly offset cells.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ._base import (MechanismOutput, PrivacyGuarantee, PrivacyInputError, check_data, check_delta,
                    check_epsilon, check_k)
from .linalg import fix_signs, top_k_eigenvectors

NEIGHBOURING = "replace-one-row"


# ---------------------------------------------------------------------------------------------
# Truncated Laplace (Lemma A.14)
# ---------------------------------------------------------------------------------------------

def truncated_laplace_params(sensitivity: float, epsilon: float, delta: float) -> tuple[float, float]:
    """(λ, A) of TLap(Δ, ε, δ), Lemma A.14 ([GDGK20]): λ = Δ/ε, A = (Δ/ε) log(1 + (e^ε - 1)/(2δ))."""
    lam = sensitivity / epsilon
    A = lam * math.log1p(math.expm1(epsilon) / (2.0 * delta))
    return lam, A


def truncated_laplace(sensitivity: float, epsilon: float, delta: float, rng: np.random.Generator,
                      size: int | tuple[int, ...] | None = None) -> np.ndarray:
    """Draws from density ∝ exp(-|x|/λ) on [-A, A] (Lemma A.14), by inverting the CDF of |x|."""
    lam, A = truncated_laplace_params(sensitivity, epsilon, delta)
    u = rng.random(size)
    mag = -lam * np.log1p(-u * (1.0 - math.exp(-A / lam)))
    sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
    return sign * mag


def truncated_laplace_variance(sensitivity: float, epsilon: float, delta: float) -> float:
    """Exact variance of TLap(Δ, ε, δ): E x² = 2λ² - A e^{-A/λ}(A + 2λ) / (1 - e^{-A/λ})."""
    lam, A = truncated_laplace_params(sensitivity, epsilon, delta)
    e = math.exp(-A / lam)
    return (2 * lam ** 2 - e * (A ** 2 + 2 * A * lam + 2 * lam ** 2)) / (1 - e)


def exact_null_score(ell: int, epsilon: float, delta: float) -> float:
    """u(X, NULL) = ℓ + max(4 log(1/δ)/ε, 2A) + 1.

    The paper sets ℓ + 4 log(1/δ)/ε + 1, relying on the noise bound A <= 2 log(1/δ)/ε, which holds
    only for ε <= ln(3 - 2δ) ≈ 1.1 (A = (2/ε) log(1 + (e^ε - 1)/(2δ)) exactly).  Using max(·, 2A)
    keeps the argument "a candidate of score <= ℓ can never beat NULL" valid for every ε and
    equals the paper's value when ε is small.
    """
    _, A = truncated_laplace_params(2.0, epsilon, delta)
    return ell + max(4.0 * math.log(1.0 / delta) / epsilon, 2.0 * A) + 1.0


def exact_min_samples(ell: int, epsilon: float, delta: float) -> float:
    """Lemma 4.4 with our NULL score: n >= 3ℓ + 2·max(4 log(1/δ)/ε, 2A) + 2 guarantees output s_*."""
    _, A = truncated_laplace_params(2.0, epsilon, delta)
    return 3 * ell + 2.0 * max(4.0 * math.log(1.0 / delta) / epsilon, 2.0 * A) + 2.0


#: subspace_exact's output fields computed from the raw data (diagnostics, not private); the
#: others are public configuration or functions of (n, k, ℓ, ε, δ) only (n is public under
#: replace-one-row)
EXACT_DIAGNOSTICS = ("n_candidates", "top_score", "second_score", "winner_score", "n_clipped")


def _split_exact(fields: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(release, diagnostics) of subspace_exact's fields (see :data:`EXACT_DIAGNOSTICS`)."""
    release = {k: v for k, v in fields.items() if k not in EXACT_DIAGNOSTICS}
    diagnostics = {k: v for k, v in fields.items() if k in EXACT_DIAGNOSTICS}
    return release, diagnostics


def _bottom(guarantee: PrivacyGuarantee, reason: str, release: dict[str, Any],
            diagnostics: dict[str, Any]) -> MechanismOutput:
    """⊥: ``components=None``; status, bottom flag and reason go into the release."""
    release = dict(release, status="bottom", bottom=True, reason=reason)
    return MechanismOutput(components=None, guarantee=guarantee, release=release,  # type: ignore[arg-type]
                           diagnostics=dict(diagnostics))


def subspace_exact(X: Any, k: int, *, rng: np.random.Generator, epsilon: float, delta: float = 1e-6,
                   ell: int | None = None, tol: float = 1e-8, max_candidates: int = 20000,
                   too_many: str = "raise", row_norm_bound: float = 1.0,
                   clip: bool = False) -> MechanismOutput:
    """Algorithm 1 (DPESSE) of Singhal–Steinke: (ε, δ)-DP exact subspace estimation (Theorem 1.1).

    Score (section 4): ``u(X, s) = |X ∩ s| − sup{|X ∩ t| : t ⊊ s}`` for every k-dimensional s spanned
    by k data points; ``u(X, NULL)`` from :func:`exact_null_score`.  GAP-MAX: with s₁, s₂ the top two
    scores, output ``argmax_s max{0, u(s) − u(s₂) − 1} + ξ(s)``, ξ ~ TLap(2, ε, δ) i.i.d. (score
    sensitivity 1, gap sensitivity 2, Lemma 4.2 / appendix B).  If every dataset point but ≤ ℓ lies in
    s_* and every (k−1)-dim subspace holds ≤ ℓ points, the output is s_* whenever
    ``n >= exact_min_samples(ℓ, ε, δ)`` (Lemma 4.4).

    Implementation choices: "x ∈ s" means ``||x − P_s x|| <= tol`` (floating point); k-subsets whose
    span has dimension < k are not candidates (the output space is S_d^k); identical spans are merged
    (key: rounded projector); ``sup`` is computed over (k−1)-dim spans of points of s (enough: any
    proper subspace's points extend to such a span).  The search is combinatorial: when
    ``C(n, k) > max_candidates`` a :class:`PrivacyInputError` is raised (``too_many="raise"``, default)
    or ⊥ is returned with reason "too many candidates" (``too_many="bottom"``, used by the run.py
    config so that a single run on a large data set ends with a record).  The test depends only on
    (n, k) and the cap — never on the data — so refusing reveals nothing (n is public under the
    replacement relation).
    Release: ``status``/``bottom``/``reason``, ``n_subsets``, ``max_candidates``, ``ell``,
    ``null_score``, ``noise_scale``, ``noise_bound``, ``noise``, ``min_samples_lemma_4_4``, ``tol``
    (functions of n, k, ℓ, ε, δ only).  Diagnostics (not private): ``n_candidates``,
    ``top_score``, ``second_score``, ``winner_score``, ``n_clipped`` (:data:`EXACT_DIAGNOSTICS`).
    ``ell`` (ℓ) defaults to max(1, k − 1) (general position); ℓ >= 1 is required by the privacy proof
    (candidates present for only one of two neighbours have score <= 1 <= ℓ).
    """
    X, n_clipped = check_data(X, row_norm_bound=row_norm_bound, clip=clip)
    n, d = X.shape
    k = check_k(k, d)
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    ell = max(1, k - 1) if ell is None else int(ell)
    if ell < 1:
        raise PrivacyInputError(f"ell must be >= 1, got {ell}")
    if too_many not in ("raise", "bottom"):
        raise PrivacyInputError(f"too_many must be 'raise' or 'bottom', got {too_many!r}")
    n_subsets = math.comb(n, k)
    guarantee = PrivacyGuarantee(eps, dl, NEIGHBOURING, exact=True,
                                 note="Singhal-Steinke Algorithm 1 (GAP-MAX, truncated Laplace)")
    if n_subsets > max_candidates and too_many == "bottom":
        return _bottom(guarantee, f"too many candidates: C(n={n}, k={k}) = {n_subsets} > max_candidates="
                                  f"{max_candidates} (depends on n and k only)",
                       *_split_exact(dict(n_subsets=n_subsets, max_candidates=max_candidates, ell=ell,
                                          n_clipped=n_clipped)))
    if n_subsets > max_candidates:
        raise PrivacyInputError(
            f"subspace_exact: C(n={n}, k={k}) = {n_subsets} candidate subsets exceeds max_candidates="
            f"{max_candidates}; the exact-case estimator is a combinatorial search meant for small inputs")
    lam, A_trunc = truncated_laplace_params(2.0, eps, dl)
    null_score = exact_null_score(ell, eps, dl)

    norms = np.linalg.norm(X, axis=1)
    is_zero = norms <= tol
    n_zero = int(is_zero.sum())

    def basis(idx) -> np.ndarray | None:
        M = X[list(idx)].T
        U, s, _ = np.linalg.svd(M, full_matrices=False)
        r = int(np.sum(s > tol * max(1.0, s[0] if s.size else 1.0)))
        return U[:, :r] if r == len(idx) else None

    def members(Q: np.ndarray) -> np.ndarray:
        R = X - (X @ Q) @ Q.T
        return np.linalg.norm(R, axis=1) <= tol

    cands: dict[bytes, tuple[np.ndarray, int]] = {}
    for S in itertools.combinations(range(n), k):
        Q = basis(S)
        if Q is None:
            continue
        P = Q @ Q.T
        key = np.round(P, 6).tobytes()
        if key in cands:
            continue
        inside = members(Q)
        count = int(inside.sum())
        # sup over proper subspaces of s: (k-1)-dim spans of points of s (zero points lie everywhere)
        sup = n_zero
        if k > 1:
            pts = [i for i in np.flatnonzero(inside) if not is_zero[i]]
            seen: set[bytes] = set()
            for T in itertools.combinations(pts, k - 1):
                Qt = basis(T)
                if Qt is None:
                    continue
                kt = np.round(Qt @ Qt.T, 6).tobytes()
                if kt in seen:
                    continue
                seen.add(kt)
                Rt = X[inside] - (X[inside] @ Qt) @ Qt.T
                sup = max(sup, int(np.sum(np.linalg.norm(Rt, axis=1) <= tol)))
        cands[key] = (Q, count - sup)

    names = ["NULL"] + list(cands)
    scores = np.array([null_score] + [u for _, u in cands.values()], dtype=float)
    order = np.argsort(-scores, kind="stable")
    s2 = scores[order[1]] if len(scores) > 1 else -np.inf
    gaps = np.maximum(0.0, scores - s2 - 1.0)
    xi = truncated_laplace(2.0, eps, dl, rng, size=len(scores))
    winner = int(np.argmax(gaps + xi))
    info: dict[str, Any] = {
        "n_candidates": len(cands), "n_subsets": n_subsets, "ell": ell, "null_score": null_score,
        "top_score": float(scores[order[0]]), "second_score": float(s2),
        "noise_scale": lam, "noise_bound": A_trunc, "noise": "truncated-laplace(2, eps, delta)",
        "min_samples_lemma_4_4": exact_min_samples(ell, eps, dl), "n_clipped": n_clipped, "tol": tol,
    }
    if winner == 0:
        return _bottom(guarantee, "NULL (no subspace with a large enough score gap)", *_split_exact(info))
    Q = cands[names[winner]][0]
    info["status"] = "ok"
    info["bottom"] = False
    info["winner_score"] = float(scores[winner])
    release, diagnostics = _split_exact(info)
    return MechanismOutput(components=fix_signs(Q.copy()), guarantee=guarantee, release=release,
                           diagnostics=diagnostics)


# ---------------------------------------------------------------------------------------------
# Approximate case (Algorithm 2)
# ---------------------------------------------------------------------------------------------

#: Defaults chosen by the experiment described in docs/mechanisms_other.md (section "subspace_approx").
DEFAULT_C0 = 8.0
DEFAULT_C1 = 2.0
DEFAULT_C2 = 6.0


def approx_parameters(n: int, d: int, k: int, epsilon: float, delta: float, gamma: float,
                      C0: float = DEFAULT_C0, C1: float = DEFAULT_C1, C2: float = DEFAULT_C2) -> dict[str, float]:
    """Algorithm 2's parameters: t = ⌈C₀ ln(1/δ)/ε⌉, m = ⌊n/t⌋, q = ⌈C₁ k⌉,
    ℓ = C₂ γ sqrt(dk) (sqrt k + sqrt(ln(kt))) / sqrt(m), and the histogram's Laplace scale 2/ε and
    release threshold τ (see :func:`stable_histogram_threshold`)."""
    t = int(math.ceil(C0 * math.log(1.0 / delta) / epsilon))
    m = n // t
    q = int(math.ceil(C1 * k))
    width = (C2 * gamma * math.sqrt(d * k) * (math.sqrt(k) + math.sqrt(math.log(k * t))) / math.sqrt(m)
             if m > 0 else float("inf"))
    return {"t": t, "m": m, "q": q, "cell_width": width, "laplace_scale": 2.0 / epsilon,
            "threshold": stable_histogram_threshold(epsilon, delta)}


def stable_histogram_threshold(epsilon: float, delta: float) -> float:
    """τ = 1 + (2/ε) ln(1/(2δ)): a cell absent from one neighbour has count <= 1 in the other and is
    released (noisy count > τ, Laplace scale 2/ε) with probability ½ e^{−(τ−1)ε/2} = δ."""
    return 1.0 + (2.0 / epsilon) * math.log(1.0 / (2.0 * delta))


def subspace_approx(X: Any, k: int, *, rng: np.random.Generator, epsilon: float, delta: float = 1e-6,
                    gamma: float = 0.01, C0: float = DEFAULT_C0, C1: float = DEFAULT_C1, C2: float = DEFAULT_C2,
                    row_norm_bound: float = 1.0, clip: bool = False) -> MechanismOutput:
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
    ``offset`` (the grid offset λ, data-independent randomness); ``best_noisy_count`` (the largest
    noisy count among the cells the stable histogram releases: part of the histogram's output).
    Diagnostics (not private): ``max_true_count`` (the true maximum cell count),
    ``n_nonempty_cells`` (the exact number of non-empty cells), ``n_clipped``.
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
    guarantee = PrivacyGuarantee(eps, dl, NEIGHBOURING, exact=True,
                                 note="Singhal-Steinke Algorithm 2 (subsample-and-aggregate, stable histogram)")
    release: dict[str, Any] = dict(prm, C0=C0, C1=C1, C2=C2, gamma=gamma)
    diagnostics: dict[str, Any] = {"n_clipped": n_clipped}
    if m < k:
        return _bottom(guarantee, f"too few samples: n={n} gives m=floor(n/t)={m} < k={k} rows per block",
                       release, diagnostics)

    P = rng.standard_normal((q, d))                      # public reference points p_1..p_q
    pts = np.empty((t, q * d))
    for j in range(t):
        B = X[j * m:(j + 1) * m]
        Vj = top_k_eigenvectors(B.T @ B, k)
        pts[j] = ((P @ Vj) @ Vj.T).reshape(-1)           # (Π_j p_1, ..., Π_j p_q)
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
    release["best_noisy_count"] = float(noisy[best])
    if noisy[best] < t / 2:
        return _bottom(guarantee, "no cell with t/2 points", release, diagnostics)
    corner = lam * width + uniq[best] * width
    phat = (corner + rng.random(q * d) * width).reshape(q, d)
    V = top_k_eigenvectors(phat.T @ phat, k)
    release.update(status="ok", bottom=False)
    return MechanismOutput(components=V, guarantee=guarantee, release=release, diagnostics=diagnostics)
