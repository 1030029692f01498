"""Known-broken versions of the exact-case subspace estimator, kept for the privacy audit only.

None of these is differentially private.  None is registered in :data:`mechanisms.MECHANISMS` or
reachable from ``conf/``; the audit (``experiments/audit/variants.py``, ``experiment.variant=...``)
wraps them and must catch each one without being told the design.  Every guarantee they record has
status ``"known false"``.

* :func:`_subspace_exact_paper_unfixed` — Singhal–Steinke Algorithm 1 (DPESSE) as written: GAP-MAX
  (Lemma A.16) over the data-dependent candidate set plus NULL (score :func:`exact_null_score`; its
  sample bound, Lemma 4.4, is :func:`paper_exact_min_samples`).
* :func:`subspace_exact_tolerance` — propose-test-release with floating-point membership
  (``||x − P_s x|| <= tol``): (k−1)-subspaces de-duplicated by a rounded projector (a score can skip a
  row, so its sensitivity is unbounded), the frame of the first rows spanning the top subspace, and
  the noisy gap released as a float.
* :func:`subspace_exact_first_rows_frame` — exact scores, but the released frame is the SVD basis of
  the first k rows that span the top subspace (for k = 1: the first member row's float direction).
* :func:`subspace_exact_rounded_dedup` — the tolerance scores, releasing only ⊥ or a fixed public frame:
  the de-duplication defect on its own, visible only through the ⊥/not-⊥ event.

They reuse the exact case's validation, search and output (:mod:`.exact`), so they live in this
package, beside the internals they share; the underscore keeps them out of every public surface.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from .._base import MechanismOutput, PrivacyGuarantee, PrivacyInputError, check_data
from ..linalg import fix_signs
from ..rational_subspaces import canonical_frame
from .common import (
    NEIGHBOURING,
    truncated_laplace,
    truncated_laplace_params,
    truncated_laplace_survival,
)
from .exact import (
    DEFAULT_MAX_WORK,
    GAP_SENSITIVITY,
    _exact_candidates,
    _exact_inputs,
    _exact_output,
    _exact_ptr,
    _memoised_on_rows,
    _too_many_candidates,
    _too_much_work,
    _top_and_gap,
    exact_entry_bits,
    exact_min_samples,
    exact_work_bound,
)

# ---------------------------------------------------------------------------------------------
# Algorithm 1 as written (GAP-MAX with NULL over the data-dependent candidate set)
# ---------------------------------------------------------------------------------------------


def exact_null_score(ell: int, epsilon: float, delta: float) -> float:
    """u(X, NULL) = ℓ + max(4 log(1/δ)/ε, 2A) + 1, for the paper's (unfixed) Algorithm 1 only.

    The paper sets ℓ + 4 log(1/δ)/ε + 1, relying on the noise bound A <= 2 log(1/δ)/ε, which holds
    only for ε <= ln(3 - 2δ) ≈ 1.1 (A = (2/ε) log(1 + (e^ε - 1)/(2δ)) exactly); max(·, 2A) equals the
    paper's value when ε is small.  Not used by the fixed :func:`subspace_exact`.
    """
    _, A = truncated_laplace_params(2.0, epsilon, delta)
    return ell + max(4.0 * math.log(1.0 / delta) / epsilon, 2.0 * A) + 1.0


def paper_exact_min_samples(ell: int, epsilon: float, delta: float) -> float:
    """Lemma 4.4 for the paper's Algorithm 1 with our NULL score: n >= 3ℓ + 2·max(4 log(1/δ)/ε, 2A) + 2.

    Applies to :func:`_subspace_exact_paper_unfixed` (which is not private), kept for comparison.
    """
    _, A = truncated_laplace_params(2.0, epsilon, delta)
    return 3 * ell + 2.0 * max(4.0 * math.log(1.0 / delta) / epsilon, 2.0 * A) + 2.0


def _subspace_exact_paper_unfixed(
    X: Any,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float,
    delta: float = 1e-6,
    ell: int | None = None,
    max_candidates: int = 20000,
    max_work: float = DEFAULT_MAX_WORK,
    precision_bits: int | None = None,
    too_many: str = "raise",
    row_norm_bound: float = 1.0,
    clip: bool = False,
) -> MechanismOutput:
    """KNOWN BROKEN — NOT differentially private.  Singhal–Steinke Algorithm 1 (DPESSE) as written, for
    audits only (not registered in :data:`mechanisms.MECHANISMS` nor in conf/).

    GAP-MAX over the data-dependent candidate set plus NULL: with s₂ the runner-up score (NULL
    included, score :func:`exact_null_score`), output ``argmax_s max{0, u(s) − u(s₂) − 1} + ξ(s)``,
    ξ ~ TLap(2, ε, δ) i.i.d. over the candidates of X only.  When the two highest scores are within 1,
    every gap is 0 and the output is the argmax of pure noise over candidates that may exist in only
    one of two neighbouring datasets.  Counterexample (tests/mechanisms/test_subspace_exact_privacy.py): ε = 1,
    δ = 1e-6, d = 3, k = 1, 57 rows e₁ plus one row e₂ vs the same with e₃: span(e₂) is output with
    probability ≈ 1/3 under the first and 0 under the second.  The guarantee records the paper's
    claimed (ε, δ) with ``exact=False`` and a note saying it is false.  Same keyword arguments as
    :func:`subspace_exact`, except that ``ell`` defaults to max(1, k − 1) and must be >= 1.
    """
    X, n_clipped, k, eps, dl, ell = _exact_inputs(
        X,
        k,
        epsilon,
        delta,
        ell,
        too_many,
        row_norm_bound,
        clip,
        min_ell=1,
        max_candidates=max_candidates,
        precision_bits=precision_bits,
        max_work=max_work,
    )
    n, d = X.shape
    n_subsets = math.comb(n, k)
    bits = exact_entry_bits(row_norm_bound, clip, precision_bits)
    work_bound = exact_work_bound(n, d, k, bits)
    guarantee = PrivacyGuarantee(
        eps,
        dl,
        NEIGHBOURING,
        exact=False,
        note="KNOWN NOT DP: Singhal-Steinke Algorithm 1 as written (GAP-MAX with NULL over a "
        "data-dependent candidate set); the (eps, delta) recorded is the paper's false claim; "
        "audit variant only",
        status="known false",
    )
    lam, A = truncated_laplace_params(2.0, eps, dl)
    null_score = exact_null_score(ell, eps, dl)
    diagnostics: dict[str, Any] = {
        "n_subsets": n_subsets,
        "max_candidates": max_candidates,
        "work_bound": work_bound,
        "max_work": float(max_work),
        "entry_bits": bits,
        "precision_bits": precision_bits,
        "ell": ell,
        "n_clipped": n_clipped,
        "noise": "truncated-laplace(2, eps, delta)",
        "noise_scale": lam,
        "noise_bound": A,
        "null_score": null_score,
        "min_samples_lemma_4_4": paper_exact_min_samples(ell, eps, dl),
    }
    if n_subsets > max_candidates:
        return _too_many_candidates(
            "subspace_exact (paper)", k, max_candidates, too_many, guarantee, diagnostics
        )
    if work_bound > max_work:
        return _too_much_work(
            "subspace_exact (paper)", k, bits, max_work, too_many, guarantee, diagnostics
        )
    keys, cand_scores, _, n_zero = _exact_candidates(X, k, precision_bits)
    scores = np.concatenate([[null_score], cand_scores])  # index 0 = NULL
    order = np.argsort(-scores, kind="stable")
    s2 = float(scores[order[1]]) if scores.size > 1 else -np.inf
    gaps = np.maximum(0.0, scores - s2 - 1.0)
    xi = truncated_laplace(2.0, eps, dl, rng, size=scores.size)
    winner = int(np.argmax(gaps + xi))
    diagnostics.update(
        n_candidates=len(keys),
        n_zero_rows=n_zero,
        top_score=float(scores[order[0]]),
        second_score=s2,
        winner_score=float(scores[winner]),
    )
    if winner == 0:
        return _exact_output(None, guarantee, {"status": "bottom", "reason": "NULL"}, diagnostics)
    return _exact_output(
        canonical_frame(keys[winner - 1]), guarantee, {"status": "ok"}, diagnostics
    )


# ---------------------------------------------------------------------------------------------
# Floating-point versions of the fixed estimator
# ---------------------------------------------------------------------------------------------

TOLERANCE_NOTE = (
    "KNOWN NOT DP: exact-case estimator with floating-point membership (rounded-projector "
    "de-duplication, first-rows frame, noisy gap released as a float); audit variant only"
)
FIRST_ROWS_NOTE = (
    "KNOWN NOT DP: exact-case estimator releasing the frame of the first rows that span the "
    "top subspace; audit variant only"
)
ROUNDED_DEDUP_NOTE = (
    "KNOWN NOT DP: exact-case estimator with tolerance scores (rounded-projector "
    "de-duplication), releasing only bottom or a fixed frame; audit variant only"
)


@_memoised_on_rows
def _tolerance_candidates(
    X: np.ndarray, k: int, tol: float
) -> tuple[list[np.ndarray], np.ndarray, int]:
    """Every k-dim subspace s with score u(X, s) >= 1, its orthonormal basis and its score.

    Score (Singhal–Steinke section 4): ``u(X, s) = |X ∩ s| − sup{|X ∩ t| : t ⊊ s}``.  The subspaces
    with u >= 1 are exactly the spans of k linearly independent data points (the paper's candidate
    set, Algorithm 1); every other k-dim subspace has u = 0 (docs/subspace_exact_privacy.md, Claim 1).
    "x ∈ s" means ``||x − P_s x|| <= tol``; a k-subset whose rows all lie in an already found candidate
    spans that candidate and is skipped, so each subspace appears once (a rounded-projector key, used
    before, split one subspace into two keys when an entry rounded to −0.0 — a duplicated top candidate
    has gap 0, which would break the privacy argument);
    ``sup`` is the maximum over {0} (it holds the zero rows) and the (k−1)-dim spans of points of s —
    enough, since s is spanned by its points, so any proper subspace's points extend to such a span.
    Returns (bases, integer scores, number of zero rows), in the order of first appearance.
    """
    norms = np.linalg.norm(X, axis=1)
    is_zero = norms <= tol
    n_zero = int(is_zero.sum())

    def basis(rows) -> np.ndarray | None:
        if len(rows) == 1:  # a line: no SVD needed
            i = rows[0]
            return None if is_zero[i] else (X[i] / norms[i])[:, None]
        M = X[list(rows)].T
        U, s, _ = np.linalg.svd(M, full_matrices=False)
        r = int(np.sum(s > tol * max(1.0, s[0] if s.size else 1.0)))
        return U[:, :r] if r == len(rows) else None

    covered: set[tuple[int, ...]] = set()  # k-subsets already known to span a found candidate
    bases: list[np.ndarray] = []
    scores: list[int] = []
    for S in itertools.combinations(range(X.shape[0]), k):
        if S in covered:
            continue
        Q = basis(S)
        if Q is None:
            continue
        inside = np.linalg.norm(X - (X @ Q) @ Q.T, axis=1) <= tol
        covered.update(
            itertools.combinations([i for i in np.flatnonzero(inside) if not is_zero[i]], k)
        )
        count = int(inside.sum())
        sup = n_zero
        if k > 1:
            pts = [i for i in np.flatnonzero(inside) if not is_zero[i]]
            seen_t: set[bytes] = set()
            Xs = X[inside]
            for T in itertools.combinations(pts, k - 1):
                Qt = basis(T)
                if Qt is None:
                    continue
                kt = (
                    np.round(Qt @ Qt.T, 6) + 0.0
                ).tobytes()  # optimisation only (max is idempotent)
                if kt in seen_t:
                    continue
                seen_t.add(kt)
                sup = max(sup, int(np.sum(np.linalg.norm(Xs - (Xs @ Qt) @ Qt.T, axis=1) <= tol)))
        bases.append(Q)
        scores.append(count - sup)
    return bases, np.array(scores, dtype=float), n_zero


def subspace_exact_tolerance(
    X: Any,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float,
    delta: float = 1e-6,
    ell: int | None = None,
    tol: float = 1e-8,
    max_candidates: int = 20000,
    too_many: str = "raise",
    row_norm_bound: float = 1.0,
    clip: bool = False,
) -> MechanismOutput:
    """KNOWN BROKEN — the exact-case estimator with tolerance membership (``||x − P_s x|| <= tol``).

    Same propose-test-release on the score gap as :func:`mechanisms.subspace.subspace_exact`, but with
    floating-point membership, (k−1)-subspaces de-duplicated by their projector rounded to 6 decimals,
    the frame of the SVD basis of the first k rows spanning the top subspace, and the noisy gap
    released as a float.  Each of the three breaks the proof (docs/subspace_exact_privacy.md,
    section "Known-broken variants"); audit variant only.
    """
    if not (isinstance(tol, (int, float)) and math.isfinite(tol) and tol >= 0):
        raise PrivacyInputError(f"tol must be a finite number >= 0, got {tol!r}")
    X, n_clipped, k, eps, dl, ell = _exact_inputs(
        X,
        k,
        epsilon,
        delta,
        ell,
        too_many,
        row_norm_bound,
        clip,
        min_ell=0,
        max_candidates=max_candidates,
    )
    X, _ = check_data(X, row_norm_bound=row_norm_bound, clip=clip)
    n = X.shape[0]
    n_subsets = math.comb(n, k)
    guarantee = PrivacyGuarantee(
        eps, dl, NEIGHBOURING, exact=False, note=TOLERANCE_NOTE, status="known false"
    )
    lam, A = truncated_laplace_params(GAP_SENSITIVITY, eps, dl)
    tau = GAP_SENSITIVITY + A
    diagnostics: dict[str, Any] = {
        "n_subsets": n_subsets,
        "max_candidates": max_candidates,
        "ell": ell,
        "n_clipped": n_clipped,
        "tol": tol,
        "noise": "truncated-laplace(2, eps, delta)",
        "noise_scale": lam,
        "noise_bound": A,
        "min_samples": exact_min_samples(ell, eps, dl),
    }
    if n_subsets > max_candidates:
        return _too_many_candidates(
            "subspace_exact", k, max_candidates, too_many, guarantee, diagnostics
        )

    bases, scores, n_zero = _tolerance_candidates(X, k, tol)
    top, gap, runner_up = _top_and_gap(scores)
    noisy_gap = gap + float(truncated_laplace(GAP_SENSITIVITY, eps, dl, rng))
    diagnostics.update(
        n_candidates=len(bases),
        n_zero_rows=n_zero,
        gap=gap,
        runner_up_score=runner_up,
        top_score=float(scores[top]) if top is not None else 0.0,
        pass_probability=truncated_laplace_survival(tau - gap, GAP_SENSITIVITY, eps, dl),
    )
    release: dict[str, Any] = {"noisy_gap": noisy_gap, "threshold": tau}
    if top is None or not noisy_gap > tau:
        release.update(status="bottom", reason="noisy score gap below the threshold")
        return _exact_output(None, guarantee, release, diagnostics)
    release["status"] = "ok"
    return _exact_output(fix_signs(bases[top].copy()), guarantee, release, diagnostics)


def _first_rows_frame(key, witness: tuple[int, ...], X: np.ndarray) -> np.ndarray:
    """SVD basis of the first k rows that span the subspace: depends on which rows those are."""
    U, _, _ = np.linalg.svd(X[list(witness)].T, full_matrices=False)
    return fix_signs(U[:, : len(witness)].copy())


def subspace_exact_first_rows_frame(
    X: Any,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float,
    delta: float = 1e-6,
    ell: int | None = None,
    max_candidates: int = 20000,
    too_many: str = "raise",
    row_norm_bound: float = 1.0,
    clip: bool = False,
) -> MechanismOutput:
    """KNOWN BROKEN: :func:`mechanisms.subspace.subspace_exact` with the frame of the first spanning rows."""
    return _exact_ptr(
        X,
        k,
        rng=rng,
        epsilon=epsilon,
        delta=delta,
        ell=ell,
        max_candidates=max_candidates,
        too_many=too_many,
        row_norm_bound=row_norm_bound,
        clip=clip,
        frame=_first_rows_frame,
        note=FIRST_ROWS_NOTE,
        status="known false",
    )


def subspace_exact_rounded_dedup(
    X: Any,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float,
    delta: float = 1e-6,
    tol: float = 1e-8,
    **kw,
) -> MechanismOutput:
    """KNOWN BROKEN: the tolerance scores of :func:`subspace_exact_tolerance`; releases ⊥ or the fixed
    public frame (e₁, …, e_k), so only the ⊥/not-⊥ event carries the defect."""
    out = subspace_exact_tolerance(X, k, rng=rng, epsilon=epsilon, delta=delta, tol=tol, **kw)
    components = None if out.components is None else np.eye(out.components.shape[0])[:, :k]
    release = {key: v for key, v in out.release.items() if key in ("status", "reason")}
    guarantee = PrivacyGuarantee(
        out.guarantee.epsilon,
        out.guarantee.delta,
        NEIGHBOURING,
        exact=False,
        note=ROUNDED_DEDUP_NOTE,
        status="known false",
    )
    return _exact_output(components, guarantee, release, out.diagnostics)
