"""The exact case of Singhal & Steinke (section 4, Problem 4.1): :func:`subspace_exact`.

The paper's scores and candidates (spans of k data points) with a propose-test-release test on the top
candidate's score gap (truncated Laplace, Lemma A.14) instead of the paper's GAP-MAX with NULL, decided
in exact rational arithmetic (:mod:`mechanisms.rational_subspaces`) and releasing the subspace's
canonical frame.  Proof and departures from the paper: docs/subspace_exact_privacy.md.  The work of
the exact search is bounded by public quantities (:func:`exact_work_bound`) and refused above a cap
before any computation.

The paper's Algorithm 1 as written is not differentially private: it is kept, with the other
known-broken versions of this estimator, in :mod:`mechanisms.subspace._known_broken`, for audits only.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any, Callable

import numpy as np

from .._base import (
    ROW_NORM_TOLERANCE,
    MechanismOutput,
    PreparedData,
    PrivacyGuarantee,
    PrivacyInputError,
    check_data,
    check_delta,
    check_epsilon,
    check_k,
)
from ..rational_subspaces import (
    FlatSearch,
    Key,
    candidate_flats,
    canonical_frame,
    primitive_rows,
    subspace_key,
)
from .common import NEIGHBOURING

#: Sensitivity of the gap top score − runner-up score under replace-one-row (each score moves by <= 1).
GAP_SENSITIVITY = 2.0

#: Default cap on :func:`exact_work_bound`, in work units (about a minute at most on a 2-core machine).
DEFAULT_MAX_WORK = 1e8


def exact_ptr_threshold(epsilon: float, delta: float) -> float:
    """τ = 2 + A, A the bound of TLap(2, ε, δ): the test threshold of :func:`subspace_exact`.

    A top candidate that differs between two neighbours has gap <= 2 on both, so its noisy gap
    (gap + TLap(2, ε, δ), noise < A) never exceeds τ (docs/subspace_exact_privacy.md, Claim 3).
    """
    _, A = _noise_params(epsilon, delta)
    return GAP_SENSITIVITY + A


def exact_min_samples(ell: int, epsilon: float, delta: float) -> float:
    """Accuracy of :func:`subspace_exact` (our analogue of Lemma 4.4): under Problem 4.1,
    n >= 3ℓ + 2A + 2 (A of TLap(2, ε, δ)) guarantees output s_* with probability 1.

    Lemma 4.3 gives u(s_*) >= n − 2ℓ and u(s) <= ℓ for every other k-dim s, so the gap is >= n − 3ℓ;
    the release happens surely when gap − A >= τ = 2 + A.
    """
    _, A = _noise_params(epsilon, delta)
    return 3 * ell + 2.0 * A + 2.0


def _exact_inputs(
    X: Any,
    k: int,
    epsilon: float,
    delta: float,
    ell: int | None,
    too_many: str,
    row_norm_bound: float,
    clip: bool,
    *,
    min_ell: int,
    max_candidates: int = 1,
    precision_bits: int | None = None,
    max_work: float = math.inf,
):
    """Validation shared by the exact-case estimators; returns an array's rows as given (not
    clipped), or the rows a :class:`PreparedData` holds.

    Exact membership is invariant under rescaling a row, so the scores are computed on the rows as
    given; the row-norm check (and ``clip``) still applies, for uniformity with the other mechanisms.
    """
    if (
        isinstance(max_candidates, bool)
        or not isinstance(max_candidates, (int, np.integer))
        or max_candidates < 1
    ):
        raise PrivacyInputError(f"max_candidates must be an integer >= 1, got {max_candidates!r}")
    if precision_bits is not None and (
        isinstance(precision_bits, bool)
        or not isinstance(precision_bits, (int, np.integer))
        or precision_bits < 2
    ):
        raise PrivacyInputError(
            f"precision_bits must be null or an integer >= 2, got {precision_bits!r}"
        )
    if (
        isinstance(max_work, bool)
        or not isinstance(max_work, (int, float, np.integer, np.floating))
        or not max_work > 0
    ):
        raise PrivacyInputError(f"max_work must be a number > 0, got {max_work!r}")
    _, n_clipped = check_data(X, row_norm_bound=row_norm_bound, clip=clip)
    X = np.asarray(X.X if isinstance(X, PreparedData) else X, dtype=np.float64)
    n, d = X.shape
    k = check_k(k, d)
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    if ell is None:
        ell = max(min_ell, k - 1)
    if isinstance(ell, bool) or int(ell) != ell or int(ell) < min_ell:
        raise PrivacyInputError(f"ell must be an integer >= {min_ell}, got {ell!r}")
    if too_many not in ("raise", "bottom"):
        raise PrivacyInputError(f"too_many must be 'raise' or 'bottom', got {too_many!r}")
    return X, n_clipped, k, eps, dl, int(ell)


def _too_many_message(k: int, max_candidates: int) -> str:
    """The same text for every data set: neither n nor C(n, k) (public under replacement, but a
    message names no number computed from the data)."""
    return (
        f"the C(n, k={k}) candidate subsets exceed max_candidates={max_candidates} (a function of n "
        f"and k only); the exact-case estimator is a combinatorial search meant for small inputs"
    )


def _too_many_candidates(
    label: str,
    k: int,
    max_candidates: int,
    too_many: str,
    guarantee: PrivacyGuarantee,
    diagnostics: dict[str, Any],
) -> MechanismOutput:
    """C(n, k) > ``max_candidates``: raise (``too_many="raise"``) or return ⊥ with a fixed reason; the
    decision depends on (n, k) only, public under replacement."""
    msg = _too_many_message(k, max_candidates)
    if too_many == "raise":
        raise PrivacyInputError(f"{label}: {msg}")
    return _exact_output(
        None, guarantee, {"status": "bottom", "reason": "too many candidates: " + msg}, diagnostics
    )


#: Bit length of the largest integer a row of finite float64 entries gives in :func:`primitive_rows`:
#: entries are multiples of 2⁻¹⁰⁷⁴ below 2¹⁰²⁴ in magnitude.
FLOAT_ENTRY_BITS = 1074 + 1024


def exact_entry_bits(row_norm_bound: float, clip: bool, precision_bits: int | None) -> int:
    """A bound b, from public parameters only, on the bit length of every entry of every row's line.

    A row's line is its entries times 2¹⁰⁷⁴ (an integer vector: entries are multiples of 2⁻¹⁰⁷⁴),
    then divided by a gcd.  Rows of norm at most ``row_norm_bound`` (refused above it, beyond the
    shared 10⁻⁹ tolerance) have entries below 2^e, e the bound's binary exponent, so b = 1074 + e;
    with ``clip=True`` the rows are scored as given, of any finite size, and b = 2098.  With
    ``precision_bits`` = P, every row is rounded to P significant bits first: b = P.

    Parameters
    ----------
    row_norm_bound : float
    clip : bool
    precision_bits : int or None

    Returns
    -------
    int
    """
    bits = FLOAT_ENTRY_BITS
    if not clip and math.isfinite(row_norm_bound):
        top = math.frexp(row_norm_bound * (1.0 + ROW_NORM_TOLERANCE))[1]  # bound·(1 + tol) < 2^top
        bits = max(1, min(bits, 1074 + top))
    if precision_bits is not None:
        bits = min(bits, int(precision_bits))
    return bits


def _op_cost(bits: float) -> float:
    """Work units of one arithmetic step (products, difference, share of a gcd) on ``bits``-bit
    integers: 1 for word-size integers, growing as the square of the length (schoolbook products and
    Lehmer gcd; CPython's Karatsuba makes this an overestimate beyond ~2000 bits)."""
    return 1.0 + (bits / 300.0) ** 2


def exact_work_bound(n: int, d: int, k: int, bits: int) -> float:
    """Bound, in work units, on the work of :func:`subspace_exact`'s exact search and release.

    A function of public quantities only (n is public under replace-one-row): n rows of d entries,
    candidates of dimension k, line entries of at most ``bits`` bits (:func:`exact_entry_bits`).
    The search (:func:`mechanisms.rational_subspaces.candidate_flats`) expands each j-dimensional
    subspace spanned by data lines once, j < k; there are at most C(n, j) of them, each handles at
    most n lines, and for each line it computes and hashes one vector of d entries that are (j + 1)-
    minors of the lines, of at most (j + 1)(bits + ½ log₂(j + 1)) bits (Hadamard's bound; the
    elimination step multiplies two such entries).  The terms:

    * n·d·(4 + c(bits)): the rows' lines;
    * Σ_{j<k} C(n, j)·n·(d·c((j + 1)(bits + ½ log₂(j + 1))) + 4): the search, 4 units per (subspace,
      line) for grouping and bookkeeping;
    * 20·k²·d·c(2k(bits + log₂ d)): the released candidate's key and frame (eliminations over the
      rationals on k rows, entries of at most 2k(bits + log₂ d) bits, charged 10 units per step),

    with c the cost of one step (1 + (bits/300)²).  One unit took 0.1 to 0.6 µs on a 2-core machine
    (docs/subspace_exact_privacy.md, "Work").  Returns ``inf`` when the bound exceeds float range.

    Parameters
    ----------
    n, d, k, bits : int

    Returns
    -------
    float
    """
    try:
        total = n * d * (4.0 + _op_cost(bits))
        for j in range(k):
            beta = (j + 1) * (bits + 0.5 * math.log2(j + 1))
            total += math.comb(n, j) * n * (d * _op_cost(beta) + 4.0)
        total += 20.0 * k * k * d * _op_cost(2 * k * (bits + math.log2(d)))
    except OverflowError:
        return math.inf
    return float(total)


def _too_much_work_message(k: int, bits: int, max_work: float) -> str:
    """The same text for every data set of a given (n, d): names neither n, d nor the bound."""
    return (
        f"the exact search's work bound for k={k} and line entries of up to {bits} bits exceeds "
        f"max_work={max_work:g} (a function of n, d, k, row_norm_bound, clip and precision_bits "
        f"only, decided before any computation); pass precision_bits (each row rounded to that "
        f"many significant bits) or a larger max_work"
    )


def _too_much_work(
    label: str,
    k: int,
    bits: int,
    max_work: float,
    too_many: str,
    guarantee: PrivacyGuarantee,
    diagnostics: dict[str, Any],
) -> MechanismOutput:
    """:func:`exact_work_bound` > ``max_work``: raise (``too_many="raise"``) or return ⊥ with a fixed
    reason; the decision depends on public quantities only."""
    msg = _too_much_work_message(k, bits, max_work)
    if too_many == "raise":
        raise PrivacyInputError(f"{label}: {msg}")
    return _exact_output(
        None, guarantee, {"status": "bottom", "reason": "too much work: " + msg}, diagnostics
    )


def _memoised_on_rows(fn: Callable) -> Callable:
    """``fn(X, *args)`` remembered for the last 8 distinct (X, args), X keyed by its float64 bytes.

    For deterministic functions of the data only: audits run one dataset thousands of times, and the
    exact-case candidates cost far more than a mechanism's one random draw.
    """

    @functools.lru_cache(maxsize=8)
    def cached(data: bytes, shape: tuple[int, ...], *args):
        return fn(np.frombuffer(data, dtype=np.float64).reshape(shape), *args)

    @functools.wraps(fn)
    def wrapper(X: np.ndarray, *args):
        X = np.ascontiguousarray(X, dtype=np.float64)
        return cached(X.tobytes(), X.shape, *args)

    return wrapper


class _CandidateKeys(Sequence):
    """The candidates' canonical keys (:func:`mechanisms.rational_subspaces.subspace_key`), each
    computed when first read, from its witness rows: the search itself needs none of them, and the
    mechanism reads one (the released candidate's)."""

    def __init__(self, lines: list[tuple[int, ...]], witnesses: list[tuple[int, ...]]):
        self._lines = lines
        self._witnesses = witnesses
        self._keys: dict[int, Key] = {}

    def __len__(self) -> int:
        return len(self._witnesses)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = range(len(self))[i]  # IndexError, negative indices
        if i not in self._keys:
            self._keys[i] = subspace_key([self._lines[r] for r in self._witnesses[i]])
        return self._keys[i]

    def __eq__(self, other) -> bool:
        return isinstance(other, (Sequence)) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


@_memoised_on_rows
def _exact_search(
    X: np.ndarray, k: int, precision_bits: int | None = None
) -> tuple[list[tuple[int, ...]], FlatSearch]:
    """The rows' primitive lines and :func:`mechanisms.rational_subspaces.candidate_flats` on them."""
    lines = primitive_rows(X, precision_bits)
    return lines, candidate_flats(lines, k)


def _exact_candidates(
    X: np.ndarray, k: int, precision_bits: int | None = None
) -> tuple[Sequence[Key], np.ndarray, list[tuple[int, ...]], int]:
    """Every k-dim subspace s with score u(X, s) >= 1, decided in exact rational arithmetic.

    Score (Singhal–Steinke section 4): ``u(X, s) = |X ∩ s| − max{|X ∩ t| : t ⊊ s}``.  The subspaces
    with u >= 1 are exactly the spans of k linearly independent data points (the paper's candidate
    set, Algorithm 1); every other k-dim subspace has u = 0 (docs/subspace_exact_privacy.md, Claim 1).
    "x ∈ s" is exact membership of the float row x, a rational vector (rounded first to
    ``precision_bits`` significant bits when given); the search is
    :func:`mechanisms.rational_subspaces.candidate_flats`, whose work
    :func:`exact_work_bound` bounds.
    Returns (keys, integer scores, witnesses, number of zero rows) in the order of the witnesses: the
    witness of a candidate is the first k-subset of rows (in row order) spanning it, and its key, the
    canonical RREF, is computed when read.
    """
    lines, found = _exact_search(X, k, precision_bits)
    keys = _CandidateKeys(lines, found.witnesses)
    return keys, np.array(found.scores, dtype=float), found.witnesses, found.n_zero


def _top_and_gap(scores: np.ndarray) -> tuple[int | None, float, float]:
    """(index of the top candidate, its score's gap over every other k-dim subspace, runner-up score).

    Every k-dim subspace that is not a candidate has score 0 (and there are infinitely many, as
    k < d), so the runner-up score is max(0, second-largest candidate score).  No candidate: (None, 0, 0).
    Ties are broken by the order of first appearance; a tie means gap 0, and then the top candidate is
    never released, so the tie-break does not matter for privacy.
    """
    if scores.size == 0:
        return None, 0.0, 0.0
    order = np.argsort(-scores, kind="stable")
    runner_up = max(0.0, float(scores[order[1]])) if scores.size > 1 else 0.0
    return int(order[0]), float(scores[order[0]]) - runner_up, runner_up


#: Bound on the error of the release decision's floating-point arithmetic (docs, Claim 5).
_FLOAT_ERROR = 2.0**-40


def _float_slack(epsilon: float) -> float:
    """η = (1 + e^ε)·2⁻⁴⁰: the share of δ reserved for the floating-point error of the release decision.

    The release happens when a uniform draw on the 2⁻⁵³ grid falls below the computed pass
    probability p; that event's probability differs from the exact pass probability of the noise with
    the computed (λ, A) by less than 2⁻⁵³ + p·2⁻⁴¹ < 2⁻⁴⁰ (closed form in exp and expm1 of arguments
    below 2⁷, each accurate to a few ulps).  An additive error e on both neighbours' probabilities turns
    P <= e^ε P′ + δ′ into P <= e^ε P′ + δ′ + (1 + e^ε) e (docs/subspace_exact_privacy.md, Claim 5).
    """
    return (1.0 + math.exp(epsilon)) * _FLOAT_ERROR


def _noise_delta(epsilon: float, delta: float) -> float:
    """δ₀ = (δ − η)/(1 + 2⁻⁴⁰): the δ the truncated Laplace test is calibrated for.

    η is :func:`_float_slack`; the factor 1/(1 + 2⁻⁴⁰) absorbs the rounding of A, whose tail mass at
    A − 2 is δ₀ to within that relative error.  δ₀ + 2⁻⁴⁰δ₀ + η = δ.
    """
    d0 = (delta - _float_slack(epsilon)) / (1.0 + _FLOAT_ERROR)
    if not d0 > 0:
        raise PrivacyInputError(
            f"delta must exceed {_float_slack(epsilon):.3g} (the share reserved for "
            f"floating-point error at epsilon={epsilon:g}), got {delta!r}"
        )
    return d0


def _noise_params(epsilon: float, delta: float) -> tuple[float, float]:
    """(λ, A) of the test's noise TLap(2, ε, δ₀) (Lemma A.14), with λ rounded up so that 2/λ <= ε exactly."""
    lam = math.nextafter(GAP_SENSITIVITY / epsilon, math.inf)
    return lam, lam * math.log1p(math.expm1(epsilon) / (2.0 * _noise_delta(epsilon, delta)))


def exact_ptr_pass_probability(gap: float, epsilon: float, delta: float) -> float:
    """P[release] of :func:`subspace_exact` for an integer score gap: P[gap + Z > τ], Z ~ TLap(2, ε, δ₀).

    With m = gap − 2: 0 for m <= 0 (exactly, Claim 3); otherwise
    P[Z > A − m] = e^{−(A−m)/λ}(1 − e^{−m/λ}) / (2(1 − e^{−A/λ})) for m <= A, computed with expm1 so
    that no cancellation occurs, and 1 − P[Z > m − A] beyond.
    """
    m = float(gap) - GAP_SENSITIVITY
    if m <= 0:
        return 0.0
    lam, A = _noise_params(epsilon, delta)
    if m >= 2.0 * A:
        return 1.0
    if m <= A:
        return math.exp(-(A - m) / lam) * -math.expm1(-m / lam) / (2.0 * -math.expm1(-A / lam))
    t = m - A  # P[Z > −t] = 1 − P[Z > t], 0 < t < A
    return 1.0 - math.exp(-t / lam) * -math.expm1(-(A - t) / lam) / (2.0 * -math.expm1(-A / lam))


def subspace_exact(
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
    """Exact-case subspace estimation (Singhal–Steinke section 4, Problem 4.1) with a propose-test-release
    test on the score gap: (ε, δ)-DP under replace-one-row on every input it accepts (finite rows of
    norm <= ``row_norm_bound``, or any finite rows with ``clip=True`` or ``row_norm_bound=inf``).

    The paper's Algorithm 1 (GAP-MAX over the data-dependent candidate set) is not differentially
    private (kept as :func:`_subspace_exact_paper_unfixed` for audits only).  This estimator keeps the
    paper's score ``u(X, s) = |X ∩ s| − sup{|X ∩ t| : t ⊊ s}`` and candidates (spans of k data points)
    and replaces GAP-MAX + NULL by propose-test-release:

    1. s₁ = the top-scoring candidate; gap = u(s₁) − max(0, second-largest candidate score)
       (every non-candidate k-dim subspace scores 0).  The gap has sensitivity 2.
    2. Release s₁ with probability P[gap + Z > τ], Z ~ TLap(2, ε, δ₀) (Lemma A.14), τ = 2 + A
       (:func:`exact_ptr_pass_probability`); otherwise ⊥.  Only the decision is drawn, by one uniform
       draw compared with that probability: no noisy real number is released.
    3. The released s₁ is given by :func:`mechanisms.rational_subspaces.canonical_frame`, a frame that
       is a function of the subspace alone (not of the rows that span it).

    Every membership, score and subspace identity is decided in exact rational arithmetic on the
    float rows, so the proof's claims hold for the computed quantities; δ₀ = δ − η reserves
    η = (1 + e^ε)·2⁻⁴⁰ for the floating-point error of the release decision.  Proof:
    docs/subspace_exact_privacy.md.  Rows that lie on a common subspace only up to rounding are in
    general position for this estimator (the answer is then ⊥); approximately low-rank data is the
    approximate case, :func:`subspace_approx`.

    Parameters
    ----------
    X : array-like of shape (n, d)
        One individual per row; rows of norm above ``row_norm_bound`` are refused unless ``clip``.
        An array is scored on its rows as given (membership is scale invariant, so ``clip`` changes
        no score); a :class:`PreparedData` is scored on the rows it holds, clipped if it was built
        with ``clip=True`` (rounding can then move a row off its subspace).
    k : int
        Dimension of the subspace, 1 <= k < d.
    rng : numpy.random.Generator
        Source of the one uniform draw of the test.
    epsilon, delta : float
        The privacy parameters, ε > 0 and (1 + e^ε)·2⁻⁴⁰ < δ < 1.
    ell : int, optional
        ℓ of Problem 4.1 (default k − 1, general position); sets only the diagnostic sample bound
        :func:`exact_min_samples`.
    max_candidates : int, default 20000
        Cap on C(n, k), the most candidates the search can hold: above it the estimator raises
        (``too_many="raise"``) or returns ⊥ (``too_many="bottom"``); the decision depends on (n, k)
        only, public under replacement.
    max_work : float, default 1e8
        Cap on :func:`exact_work_bound` (n, d, k and :func:`exact_entry_bits`, all public): above
        it the estimator raises or returns ⊥ as for ``max_candidates``, before any computation.
        One unit took 0.1 to 0.6 µs on a 2-core machine, so the default allows about a minute at
        most there.
    precision_bits : int, optional
        None (default): the rows are scored exactly as the floats they are, and the work bound
        assumes line entries of up to 1074 + e bits (e the binary exponent of
        ``row_norm_bound``; 2098 with ``clip``).  An integer P >= 2: each row is first rounded to
        P significant bits relative to its largest entry (a function of the row alone, so the
        guarantee is unchanged; rows that fit in P bits, such as rows whose entries lie within
        2^(P − 53) of their largest, are unchanged), and the bound assumes P-bit entries.
    too_many : {"raise", "bottom"}
    row_norm_bound : float, default 1.0
    clip : bool, default False

    Returns
    -------
    MechanismOutput
        ``components``: the d x k canonical frame of s₁, or ``None`` for ⊥.  ``release``: ``status``
        ("ok" or "bottom"), ``bottom``, ``threshold`` (τ, data independent) and, for ⊥, ``reason``
        (a fixed string).  ``diagnostics`` (NOT private): exact scores, gap, candidate counts, the
        number of subspaces the search expanded, the release probability, clipping count; and the
        public work bound, its cap and the entries' bit bound.

    References
    ----------
    V. Singhal and T. Steinke, "Privately learning subspaces", NeurIPS 2021, section 4 (Algorithm 1,
    Lemmas 4.3–4.4) and Lemma A.14 (truncated Laplace).
    """
    return _exact_ptr(
        X,
        k,
        rng=rng,
        epsilon=epsilon,
        delta=delta,
        ell=ell,
        max_candidates=max_candidates,
        max_work=max_work,
        precision_bits=precision_bits,
        too_many=too_many,
        row_norm_bound=row_norm_bound,
        clip=clip,
        frame=_canonical_frame,
    )


def _canonical_frame(key: Key, witness: tuple[int, ...], X: np.ndarray) -> np.ndarray:
    """The released frame of :func:`subspace_exact`: a function of the subspace (its key) alone."""
    return canonical_frame(key)


EXACT_NOTE = (
    "Singhal-Steinke exact case with propose-test-release on the score gap (the paper's "
    "GAP-MAX over a data-dependent candidate set is not DP): exact rational membership, "
    "release decided by one uniform draw against P[gap + TLap(2, eps, delta0) > 2 + A], "
    "canonical frame of the subspace; proof in docs/subspace_exact_privacy.md"
)


def _exact_ptr(
    X: Any,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float,
    delta: float,
    ell: int | None,
    max_candidates: int,
    too_many: str,
    row_norm_bound: float,
    clip: bool,
    frame: Callable[[Key, tuple[int, ...], np.ndarray], np.ndarray],
    max_work: float = DEFAULT_MAX_WORK,
    precision_bits: int | None = None,
    note: str = EXACT_NOTE,
    status: str = "proven",
) -> MechanismOutput:
    """The body of :func:`subspace_exact`; ``frame`` builds the released components (audit variants
    substitute frames that are not functions of the subspace)."""
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
        precision_bits=precision_bits,
        max_work=max_work,
    )
    n, d = X.shape
    n_subsets = math.comb(n, k)
    bits = exact_entry_bits(row_norm_bound, clip, precision_bits)
    work_bound = exact_work_bound(n, d, k, bits)
    d0 = _noise_delta(eps, dl)
    guarantee = PrivacyGuarantee(
        eps, dl, NEIGHBOURING, exact=status == "proven", note=note, status=status
    )
    lam, A = _noise_params(eps, dl)
    diagnostics: dict[str, Any] = {
        "n_subsets": n_subsets,
        "max_candidates": max_candidates,
        "work_bound": work_bound,
        "max_work": float(max_work),
        "entry_bits": bits,
        "precision_bits": precision_bits,
        "ell": ell,
        "n_clipped": n_clipped,
        "noise": "truncated-laplace(2, eps, delta0)",
        "noise_scale": lam,
        "noise_bound": A,
        "delta0": d0,
        "min_samples": exact_min_samples(ell, eps, dl),
    }
    if n_subsets > max_candidates:
        return _too_many_candidates(
            "subspace_exact", k, max_candidates, too_many, guarantee, diagnostics
        )
    if work_bound > max_work:
        return _too_much_work("subspace_exact", k, bits, max_work, too_many, guarantee, diagnostics)

    lines, found = _exact_search(X, k, precision_bits)
    keys, scores = _CandidateKeys(lines, found.witnesses), np.array(found.scores, dtype=float)
    top, gap, runner_up = _top_and_gap(scores)
    p = exact_ptr_pass_probability(gap, eps, dl) if top is not None else 0.0
    u = float(rng.random())
    diagnostics.update(
        n_candidates=len(keys),
        n_expanded=sum(found.expanded),
        n_zero_rows=found.n_zero,
        gap=gap,
        runner_up_score=runner_up,
        top_score=float(scores[top]) if top is not None else 0.0,
        pass_probability=p,
    )
    release: dict[str, Any] = {"threshold": exact_ptr_threshold(eps, dl)}
    if not u < p:
        release.update(status="bottom", reason="score gap test not passed")
        return _exact_output(None, guarantee, release, diagnostics)
    release["status"] = "ok"
    return _exact_output(frame(keys[top], found.witnesses[top], X), guarantee, release, diagnostics)


def _exact_output(
    components: np.ndarray | None,
    guarantee: PrivacyGuarantee,
    release: dict[str, Any],
    diagnostics: dict[str, Any],
) -> MechanismOutput:
    """MechanismOutput with the release (plus the ``bottom`` flag) and the (not private) diagnostics
    kept apart."""
    return MechanismOutput(
        components=components,
        guarantee=guarantee,
        release=dict(release, bottom=components is None),
        diagnostics=dict(diagnostics),
    )
