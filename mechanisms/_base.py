"""Shared types and input validation for every mechanism.

Every mechanism in :mod:`mechanisms` is a plain function

    mechanism(X, k, *, rng, **params) -> MechanismOutput

where ``X`` is an ``n x d`` data matrix (one row per individual, rows of L2
norm at most 1), ``k`` the target rank and ``rng`` a :class:`numpy.random.Generator`.
The output carries a ``d x k`` matrix with orthonormal columns and the privacy
guarantee the draw enjoys.

No Hydra and no file I/O here: this is library code.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

#: Neighbouring relations a guarantee may be stated for.
NEIGHBOURING_RELATIONS = {
    "replace-one-row": "datasets of the same size n that differ in one row (each row has L2 norm <= 1)",
    "add-remove-one-row": "datasets that differ by adding or removing one row (each row has L2 norm <= 1)",
    "zero-out-one-row": (
        "datasets (streams) of the same length that differ in one position, where one of "
        "them holds the zero vector; the other rows keep their positions (each row has L2 "
        "norm <= 1).  Event-level privacy of a stream: a person's row is present or "
        "replaced by 0 at the same time step.  Weaker than add-remove-one-row, whose "
        "deletion shifts every later position"
    ),
    "entry-level": "datasets whose matrices differ in one entry by at most 1 in absolute value",
    "none": "no privacy: the output is a deterministic or data-independent function",
}

#: How firmly a recorded (ε, δ) claim holds (``PrivacyGuarantee.status``).
GUARANTEE_STATUSES = {
    "proven": "the (epsilon, delta) claim is proved for the output as computed (up to floating point)",
    "nominal (MCMC)": (
        "the claim holds for an exact draw from the target distribution; the output is the "
        "state of an MCMC chain, only approximately so distributed: epsilon is nominal, "
        "not a proven guarantee"
    ),
    "unverified constants": (
        "the calibration follows a theorem whose constants had to be reconstructed "
        "(the paper text lost them): the claim is not verified"
    ),
    "certified by peer, unproven": (
        "the epsilon a third-party library certifies by its own accounting; its "
        "sampler is shown to draw another law than its proof assumes "
        "(docs/peers.md), so the proof does not cover its output"
    ),
    "known false": (
        "the recorded (epsilon, delta) is a published claim shown false by a counterexample; "
        "kept only as a known-broken audit variant"
    ),
    "unknown": "no claim could be recorded (e.g. a peer killed before it stated its accounting)",
}

ROW_NORM_TOLERANCE = 1e-9


class PrivacyInputError(ValueError):
    """Input that breaks a mechanism's assumptions (and so its privacy proof)."""


class ChainConvergenceWarning(RuntimeWarning):
    """An MCMC sampler did not pass its convergence rule.

    Whether it is raised depends on the data (it states ``diagnostics["converged"] is False``), so
    the warning is a diagnostic like the others: for the data curator, not private, never published
    with the release.  Its text holds public configuration only, never R̂, ESS or another number
    computed from the data.
    """


@dataclass(frozen=True)
class PrivacyGuarantee:
    """The differential-privacy guarantee of one mechanism run.

    ``epsilon = inf`` means no privacy (non-private PCA); ``epsilon = 0`` with
    ``neighbouring = "none"`` is used for data-independent output (random
    subspace), which is trivially 0-DP.

    ``status`` (one of :data:`GUARANTEE_STATUSES`) says whether the (ε, δ) claim is proven for
    the output as computed, or only nominal (e.g. PPCA's MCMC draw: ε holds for an exact draw
    from the target, not for the chain's state).  ``exact`` is an older flag whose meaning is
    per mechanism: False marks an approximate draw (PPCA's chain), a recorded ε that is a
    composition bound by construction (online PCA's Algorithm 2), or reconstructed constants
    (``private_sketch``'s ``paper``), and the ``note`` says which.  True does **not** mean that ε
    is tight: most ``paper`` calibrations are conservative (their exact ε(δ) is smaller:
    docs/calibration.md).  Wherever a result is shown, use ``status``.

    ``rho`` is set only by a mechanism whose native guarantee is ρ-zCDP (Bun & Steinke 2016): it
    records that ρ, and ``epsilon``/``delta`` are then the (ε, δ)-DP guarantee the ρ certifies
    (:func:`mechanisms.calibration.zcdp_epsilon_tight`, docs/calibration.md).  ``None`` (the
    default) for every other mechanism, whose :meth:`as_dict` then has no ``rho`` key at all.
    """

    epsilon: float
    delta: float
    neighbouring: str
    exact: bool = True
    note: str = ""
    status: str = "proven"
    rho: float | None = None

    def __post_init__(self) -> None:
        if self.neighbouring not in NEIGHBOURING_RELATIONS:
            raise ValueError(
                f"unknown neighbouring relation {self.neighbouring!r}; "
                f"valid: {sorted(NEIGHBOURING_RELATIONS)}"
            )
        if self.status not in GUARANTEE_STATUSES:
            raise ValueError(
                f"unknown guarantee status {self.status!r}; valid: {sorted(GUARANTEE_STATUSES)}"
            )
        if self.rho is not None and not (
            isinstance(self.rho, (int, float)) and math.isfinite(self.rho) and self.rho > 0
        ):
            raise ValueError(f"rho must be a finite number > 0 or None, got {self.rho!r}")

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["rho"] is None:  # only zCDP mechanisms record rho: other records keep their keys
            del d["rho"]
        else:
            d["rho"] = float(d["rho"])
        # JSON has no infinity: write it as a string that pandas/json round-trip.
        if math.isinf(d["epsilon"]):
            d["epsilon"] = "inf"
        return d


@dataclass
class MechanismOutput:
    """What one mechanism run returns, in two clearly separated parts.

    **The release** — ``components`` (a ``d x k`` orthonormal basis, or ``None`` for ⊥),
    ``guarantee`` and ``release``: everything the guarantee covers.  ``release`` holds the status
    ("ok"/"bottom" and, for ⊥, the reason), public configuration (ε, k, iterations, a noise scale
    that depends on public parameters only) and any noisy quantity the mechanism publishes under
    its budget (e.g. a noisy count, the noisy products of a power method).

    **The diagnostics** — ``diagnostics``: for the experimenter only.  Exact statistics of the raw
    data (n_clipped, eigenvalues, true counts, regret), sampler internals (proposal counts, R̂,
    ESS), timings, and n itself where n is not public (add/remove relations).  They are **not
    private**: never publish them beside the release, never put them into error messages.

    Each mechanism's docstring lists which of its fields are in which part.

    **A released covariance** — ``covariance``: a ``d x d`` estimate of the second moment that the
    guarantee covers, set only by a mechanism that releases one (``None`` for every other); kept out
    of ``release`` so that records, which store ``release`` as JSON, stay small.  A mechanism declares
    that it releases a covariance by setting it (``PrivateCovariance`` refuses one that does not).
    """

    components: np.ndarray | None
    guarantee: PrivacyGuarantee
    release: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    covariance: np.ndarray | None = None

    @property
    def status(self) -> str:
        """``"ok"`` or ``"bottom"`` (⊥, no subspace): part of the release."""
        return str(self.release.get("status", "ok" if self.components is not None else "bottom"))


def check_epsilon(epsilon: float, *, upper: float | None = None) -> float:
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        raise PrivacyInputError(f"epsilon must be a number, got {epsilon!r}") from None
    if not math.isfinite(eps) or eps <= 0:
        raise PrivacyInputError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    if upper is not None and eps >= upper:
        raise PrivacyInputError(f"epsilon must be < {upper} for this mechanism, got {epsilon!r}")
    return eps


def check_delta(delta: float) -> float:
    try:
        dl = float(delta)
    except (TypeError, ValueError):
        raise PrivacyInputError(f"delta must be a number, got {delta!r}") from None
    if not (0.0 < dl < 1.0):
        raise PrivacyInputError(f"delta must lie in (0, 1), got {delta!r}")
    return dl


def check_k(k: int, d: int, *, stream: bool = False) -> int:
    """``k`` as an int when it is one with 1 <= k < d; else a :class:`PrivacyInputError`.

    For a stream (``stream=True``) d is the length of its first row, which a malformed first row
    sets: the message then does not name d.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        if isinstance(k, float) and k.is_integer():
            k = int(k)
        else:
            raise PrivacyInputError(f"k must be an integer, got {k!r}")
    k = int(k)
    if not (1 <= k < d):
        if stream:
            raise PrivacyInputError(
                f"k must satisfy 1 <= k < d, the length of the stream's rows, got k = {k}"
            )
        raise PrivacyInputError(f"k must satisfy 1 <= k < d = {d}, got k = {k}")
    return k


def check_flag(value: Any, name: str) -> bool:
    """Return ``value`` as a bool if it is one (``True``/``False`` or NumPy's bools); else a clear
    :class:`PrivacyInputError`.  A switch such as ``tree`` or ``clip`` given as a string
    (``"false"``, ``"maybe"``) would otherwise be truthy and silently run the other variant, whose
    guarantee differs."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise PrivacyInputError(f"{name} must be true or false, got {value!r}")


def stream_rows(item: Any) -> np.ndarray:
    """A stream's row or chunk as a float array, before :func:`check_data` sees it.

    NumPy's own error for a value that is not a number quotes the value: refused here with a
    message that quotes none.
    """
    try:
        return np.asarray(item, dtype=np.float64)
    except (TypeError, ValueError):
        raise PrivacyInputError(
            "data must be numeric: a row of the stream cannot be converted to floats"
        ) from None


#: The refusal of a stream's row of another length or shape than its first row's: one text wherever
#: the row is and whatever its length (a position or a length would tell neighbouring streams apart).
STREAM_ROW_MESSAGE = (
    "data must be a 2-D array or a stream of rows of one length: a row of the stream has another "
    "length or shape than its first row, or none"
)


def stream_chunk(item: Any, width: int | None) -> np.ndarray:
    """A stream's row (1-D) or chunk of rows (2-D) as a 2-D float array of ``width`` columns.

    ``width`` is the stream's row length, from its first item (None while reading that one).  An
    item that is not numeric, not 1-D or 2-D, has no columns, or has another width is refused with
    :data:`STREAM_ROW_MESSAGE` (or :func:`stream_rows`'s), naming neither its position nor its size.
    """
    a = stream_rows(item)
    if a.ndim == 1:
        a = a.reshape(1, -1)
    if a.ndim != 2 or a.shape[1] == 0 or (width is not None and a.shape[1] != width):
        raise PrivacyInputError(STREAM_ROW_MESSAGE)
    return a


def row_norm_message(row_norm_bound: float) -> str:
    """The refusal of rows above the bound: the same text for every dataset.

    Neither the number of offending rows nor their positions or norms appear: those are exact
    statistics of the data that no mechanism releases (``n_clipped`` is a diagnostic), and the
    message must not tell neighbouring datasets apart.  Only the public bound is named.
    """
    return (
        f"some row has L2 norm above the bound {row_norm_bound}: divide the data by a public bound "
        f"on the row norms, not one computed from the data (PrivatePCA: row_norm_bound), or enable "
        f"clipping (clip=True / clip_rows=true)"
    )


def check_data(
    X: Any, *, row_norm_bound: float = 1.0, clip: bool = False
) -> tuple[np.ndarray, int]:
    """Validate a data matrix; return ``(X, n_clipped)``.

    **The one row-norm check of the library**: every mechanism passes every container its data
    arrive in through this function (a whole array, a :class:`PreparedData`, each block or row of a
    stream), always by the module-level name ``check_data`` (the audit's
    ``bypass_norm_check`` patches that name).  A :class:`PreparedData` validated for a bound at
    least as tight is accepted as is; one validated for a looser bound is checked (or clipped)
    again.  The returned ``n_clipped`` is an exact data statistic: mechanisms put it in their
    ``diagnostics``, never in the release.

    Refuses sparse or non-numeric input, non-2-D arrays, empty data, NaN/inf.
    Rows whose L2 norm exceeds ``row_norm_bound`` (beyond a 1e-9 rounding
    tolerance) are either refused (``clip=False``) or scaled back onto the ball
    (``clip=True``); the number of clipped rows is returned so that callers
    record it.  Clipping is itself 1-Lipschitz row-wise, so the mechanism's
    guarantee still holds for the clipped data.

    No error message names a value computed from the data (a count, a position, a norm): only
    public quantities (the bound, the container's type or number of dimensions) appear.
    """
    clip = check_flag(clip, "clip")
    if isinstance(X, PreparedData):
        if row_norm_bound >= X.row_norm_bound:
            return X.X, X.n_clipped
        X = X.X  # validated for a looser bound: check (or clip) again for this one
    if hasattr(X, "toarray") and not isinstance(X, np.ndarray):
        raise PrivacyInputError("sparse input is not supported: pass a dense array (X.toarray())")
    try:
        X = np.asarray(X)
    except Exception:  # pragma: no cover - exotic objects
        # the exception's text may quote the data: name the container's type only
        raise PrivacyInputError(
            f"data of type {type(X).__name__} cannot be converted to an array"
        ) from None
    if X.dtype == object or not (
        np.issubdtype(X.dtype, np.floating) or np.issubdtype(X.dtype, np.integer) or X.dtype == bool
    ):
        # not the dtype itself: a string dtype such as <U7 states the longest entry's length
        raise PrivacyInputError("data must be a numeric array (integer, float or bool dtype)")
    if X.ndim != 2:
        # the number of dimensions, not the shape: n is not public under add/remove-one-row
        raise PrivacyInputError(
            f"data must be a 2-D array (n rows x d columns), got {X.ndim} dimension(s)"
        )
    n, d = X.shape
    if n == 0 or d == 0:
        raise PrivacyInputError("data is empty (no rows or no columns)")
    X = X.astype(np.float64, copy=False)
    if not np.all(np.isfinite(X)):
        # no count, no position: both are statistics of the data
        raise PrivacyInputError("data contain NaN or infinite values: remove or replace them first")
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    over = norms > row_norm_bound * (1 + ROW_NORM_TOLERANCE)
    n_over = int(over.sum())
    if n_over:
        if not clip:
            raise PrivacyInputError(row_norm_message(row_norm_bound))
        X = X.copy()
        X[over] *= (row_norm_bound / norms[over])[:, None]
    return X, n_over


_SECOND_MOMENTS: dict[int, np.ndarray] = {}


def second_moment(X: np.ndarray) -> np.ndarray:
    """A = XᵀX / n, the empirical second-moment matrix of JMLR eq. (1).

    For the read-only matrix of a :class:`PreparedData` the result is computed
    once and shared (read-only), so many restarts on the same data do not
    recompute an n·d² product each time.
    """
    cached = _SECOND_MOMENTS.get(id(X))
    if cached is not None:
        return cached
    n = X.shape[0]
    A = X.T @ X / n
    return (A + A.T) / 2


class PreparedData:
    """Validated (and, if asked, clipped) data with its second-moment matrix computed once.

    Pass it wherever a mechanism takes ``X``: validation is not repeated, and
    :func:`second_moment` returns the cached ``A``.  The matrix is stored
    read-only so the cache can never go stale.
    """

    def __init__(self, X: Any, *, clip: bool = False, row_norm_bound: float = 1.0):
        X, self.n_clipped = check_data(X, row_norm_bound=row_norm_bound, clip=clip)
        self.row_norm_bound = float(row_norm_bound)
        X = np.array(X, dtype=np.float64, copy=True)
        X.flags.writeable = False
        A = second_moment(X)
        A.flags.writeable = False
        self.X, self.A = X, A
        key = id(X)
        _SECOND_MOMENTS[key] = A
        weakref.finalize(X, _SECOND_MOMENTS.pop, key, None)

    @property
    def shape(self) -> tuple[int, int]:
        return self.X.shape
