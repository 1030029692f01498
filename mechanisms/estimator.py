"""scikit-learn estimator wrapping any mechanism, so a private PCA drops into a Pipeline.

:class:`PrivatePCA` passes scikit-learn's own conformance suite
(``sklearn.utils.estimator_checks``; see ``tests/mechanisms/test_sklearn_checks.py``).  Input is validated
with scikit-learn's :func:`~sklearn.utils.validation.validate_data`, so shape, dtype, NaN/inf,
sparse and feature-count errors read as scikit-learn users expect.  What each parameter accepts is
declared once, in ``_parameter_constraints`` (scikit-learn's :mod:`sklearn.utils._param_validation`).
``fit`` refuses a bad ``mechanism``, ``clip``, ``mechanism_params`` or ``keep_diagnostics`` in
scikit-learn's words before anything else; a bad ``n_components``, ``row_norm_bound`` or
``random_state`` (:data:`OWN_WORDING`) is refused against the same constraints in the estimator's
own words (a ``ValueError``), where ``fit`` first uses it.  The privacy-specific checks (row norms,
ε, δ) are the mechanisms' own and keep their messages (:class:`mechanisms.PrivacyInputError`).
"""

from __future__ import annotations

import inspect
import warnings
from numbers import Integral, Real
from typing import Any, Callable

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    validate_parameter_constraints,
)
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from . import get_mechanism
from ._base import ChainConvergenceWarning, MechanismOutput, check_data

#: the parameters refused in the estimator's own words (a ``ValueError``), where ``fit`` first uses
#: them; what they accept is their declared constraint, as for every other parameter
OWN_WORDING = ("n_components", "row_norm_bound", "random_state")


def as_generator(random_state) -> np.random.Generator:
    """Map scikit-learn's ``random_state`` conventions (None, int, Generator, RandomState) to a Generator."""
    if random_state is None or isinstance(random_state, (Integral, np.integer)):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**32 - 1, size=4))
    raise bad_random_state(random_state)


def bad_random_state(random_state) -> ValueError:
    """The refusal of a ``random_state`` that is not one of scikit-learn's conventions."""
    an_int = "an int in [0, 2**32 - 1]" if isinstance(random_state, Integral) else "an int"
    return ValueError(
        f"random_state must be None, {an_int}, a Generator or a RandomState, got {random_state!r}"
    )


def refuse_quoting_input(X) -> None:
    """Refuse, in words that hold no data, the inputs whose scikit-learn or NumPy error would quote them.

    scikit-learn's messages for 1-D, scalar and complex input print the array, and NumPy's for a
    string that is not a number prints the string.  Other bad input (sparse, NaN/inf, no rows or no
    features) keeps scikit-learn's own message.
    """
    if hasattr(X, "toarray"):
        return
    try:
        A = np.asarray(X)
    except (ValueError, TypeError):
        raise ValueError("X cannot be converted to an array: rows of unequal length?") from None
    if A.ndim < 2:
        # scikit-learn's wording without its "array=..." line
        raise ValueError(
            f"Expected 2D array, got {A.ndim}D array instead. Reshape your data either using "
            f"array.reshape(-1, 1) if your data has a single feature or array.reshape(1, -1) "
            f"if it contains a single sample."
        )
    if np.iscomplexobj(A):
        raise ValueError("Complex data not supported")
    if A.dtype.kind in "OUS":
        try:
            A.astype(np.float64)
        except ValueError:
            raise ValueError("X holds a value that cannot be converted to a float") from None


def split_output(out: MechanismOutput) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(release, diagnostics)`` of a mechanism output, whichever fields the mechanism fills.

    The release is ``out.release`` plus the status (⊥ or not), which the guarantee covers;
    ``out.diagnostics`` is NOT private.
    """
    return {"status": out.status, **dict(out.release)}, dict(out.diagnostics)


class PrivatePCA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Differentially private PCA as a scikit-learn transformer.

    Parameters
    ----------
    n_components : int, default 2
        The rank k, ``1 <= k < n_features``.  The only positional parameter, as in scikit-learn's
        ``PCA``: ``PrivatePCA(2)``; every other parameter is keyword-only.
    mechanism : str or callable, default "ppca_iterative"
        Config name of the mechanism (``"ppca_iterative"``, ``"mod_sulq"``, ...; see
        :data:`mechanisms.MECHANISMS`), or any callable ``f(X, k, *, rng, clip, **params) ->
        MechanismOutput`` (e.g. your own mechanism, docs/own_mechanism.md).  The default,
        ``"ppca_iterative"`` (k successive exact draws of the exponential mechanism, ε/k each), is
        pure ε-DP under replace-one-row with a proven guarantee (status ``"proven"``) for every k, and
        needs no δ: without a choice of mechanism, the release carries the strongest kind of claim
        the package makes.  ``"ppca"`` (the exponential mechanism on the whole k-subspace) releases
        the state of an MCMC chain for k > 1, whose ε is nominal, not proven (status
        ``"nominal (MCMC)"``); the (ε, δ) mechanisms (``"mod_sulq"``, ``"analyze_gauss"``, ...)
        need ``delta``.  Whichever runs, ``guarantee_`` states its claim.
    epsilon : float, default 1.0
        Privacy parameter ε, passed to mechanisms that take it (checked by the mechanism).
    delta : float, optional
        Privacy parameter δ, required by the (ε, δ) mechanisms and refused by none; ``None`` means
        "not given".
    row_norm_bound : float, default 1.0
        PUBLIC bound B on the L2 norm of one row (the papers' setting is 1).  The mechanism runs on
        ``X / B``; its guarantee holds for neighbouring datasets whose rows have norm at most B.
        Choose B without looking at the data (e.g. from the data's known range); a B computed from
        the data (such as its largest row norm) is not private.
    clip : bool, default False
        Rows with norm above ``row_norm_bound``: refuse them (``False``: the error says that some
        row exceeds the bound, never which, how many or by how much) or scale them back onto the
        ball (``True``).  Clipping is row-wise
        1-Lipschitz, so the guarantee still holds; that it was on is recorded in the (public)
        parameters, how many rows it changed only in ``diagnostics_`` (that count is an exact
        statistic of the data).
    mechanism_params : dict, optional
        Extra keyword arguments for the mechanism (e.g. ``{"iterations": 2000}``).
    keep_diagnostics : bool, default False
        Keep the mechanism's diagnostics as ``diagnostics_`` (NOT private).  An MCMC mechanism that
        did not pass its convergence rule warns (``ChainConvergenceWarning``, public configuration
        only) in either case; the warning itself is a diagnostic, not private.
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        Source of the mechanism's randomness (an int gives the same release on every fit).

    Like the JMLR paper (Chaudhuri, Sarwate & Sinha 2013, eq. (1)), the data are *not* centred:
    the subspace is that of the second-moment matrix XᵀX/n, and ``transform`` is
    ``X @ components_.T``.  Centring would use the data's mean, which is not private.

    Privacy of model selection: every ``fit`` spends the privacy budget once on the data it sees.
    A ``GridSearchCV`` over m parameter settings with c folds fits m·c times (plus a refit) on
    overlapping data, so by basic composition the whole search is about (m·c + 1)·ε-DP, not ε-DP.
    Tune on public or held-out data, or account for the composition.

    Attributes
    ----------
    components_ : (n_components, n_features) orthonormal rows: the released subspace.
    n_components_ : the rank of the fitted subspace.
    guarantee_ : :class:`mechanisms.PrivacyGuarantee` of the fit (ε, δ, neighbouring relation).
    release_ : dict, what the guarantee covers besides ``components_`` (at least ``status``).
    diagnostics_ : dict, only with ``keep_diagnostics=True``.  NOT private: exact statistics of
        the data (e.g. ``n_clipped``), sampler internals, noise scales, timings.  For the
        experimenter only; never publish it beside the release.
    n_features_in_, feature_names_in_ : as in every scikit-learn estimator.

    References
    ----------
    K. Chaudhuri, A. D. Sarwate and K. Sinha, "A near-optimal algorithm for differentially-private
    principal components", JMLR 14 (2013), eq. (1) (the uncentred second-moment matrix) and
    Algorithms 1-2; each mechanism's own references are in its docstring.
    """

    #: scikit-learn's declaration of what each parameter accepts (``fit`` checks them all, those in
    #: :data:`OWN_WORDING` with the estimator's messages); ε and δ are the mechanisms' to check,
    #: with the project's messages, and n_components < n_features is checked once the data are seen
    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "mechanism": [str, callable],
        "epsilon": "no_validation",
        "delta": "no_validation",
        "row_norm_bound": [Interval(Real, 0, np.inf, closed="neither")],
        "clip": ["boolean"],
        "mechanism_params": [dict, None],
        "keep_diagnostics": ["boolean"],
        "random_state": ["random_state", np.random.Generator],
    }

    def __init__(
        self,
        n_components: int = 2,
        *,
        mechanism: str | Callable[..., MechanismOutput] = "ppca_iterative",
        epsilon: float = 1.0,
        delta: float | None = None,
        row_norm_bound: float = 1.0,
        clip: bool = False,
        mechanism_params: dict | None = None,
        keep_diagnostics: bool = False,
        random_state=None,
    ):
        self.n_components = n_components
        self.mechanism = mechanism
        self.epsilon = epsilon
        self.delta = delta
        self.row_norm_bound = row_norm_bound
        self.clip = clip
        self.mechanism_params = mechanism_params
        self.keep_diagnostics = keep_diagnostics
        self.random_state = random_state

    # -- scikit-learn metadata -------------------------------------------------------------------

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Stated explicitly (they are the defaults): NaN/inf and sparse input are refused.
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = False
        # k < d, so at least two features: fit says so after validate_data (whose own message prints n).
        tags.transformer_tags.preserves_dtype = ["float64"]
        # Deterministic given an int random_state (same seed, same release): the checks that
        # refit and compare (check_fit_idempotent, ...) apply and are run, not skipped.
        tags.non_deterministic = False
        return tags

    @property
    def _n_features_out(self) -> int:
        """Output width for ``get_feature_names_out`` (ClassNamePrefixFeaturesOutMixin)."""
        return self.components_.shape[0]

    # -- helpers ---------------------------------------------------------------------------------

    def _mechanism_function(self) -> tuple[str, Callable[..., MechanismOutput]]:
        if callable(self.mechanism):
            name = getattr(self.mechanism, "__name__", None) or type(self.mechanism).__name__
            return name, self.mechanism
        return str(self.mechanism), get_mechanism(self.mechanism)

    def _validate_params(self) -> None:
        """scikit-learn's check of the declared constraints (run by ``fit`` before anything else),
        for the parameters not in :data:`OWN_WORDING`."""
        validate_parameter_constraints(
            {p: c for p, c in self._parameter_constraints.items() if p not in OWN_WORDING},
            self.get_params(deep=False),
            caller_name=type(self).__name__,
        )

    def _satisfies_constraint(self, name: str) -> bool:
        """Does parameter ``name`` satisfy its declared constraint?"""
        try:
            validate_parameter_constraints(
                {name: self._parameter_constraints[name]},
                {name: getattr(self, name)},
                caller_name=type(self).__name__,
            )
        except InvalidParameterError:
            return False
        return True

    def _check_n_components(self, n_features: int) -> int:
        """n_components: an int (not a bool) allowed by its constraint, and k < n_features."""
        k = self.n_components
        if isinstance(k, str) or callable(k):  # a mechanism where the rank goes
            raise ValueError(
                f"n_components must be an integer, got {k!r}; the mechanism is keyword-only: "
                f"PrivatePCA(n_components, mechanism={k!r})"
            )
        if isinstance(k, bool) or not isinstance(k, Integral):  # a bool is no rank
            raise ValueError(f"n_components must be an integer, got {k!r}")
        if not (self._satisfies_constraint("n_components") and k < n_features):
            raise ValueError(
                f"n_components must satisfy 1 <= n_components < n_features = {n_features}, got {k}"
            )
        return int(k)

    def _check_row_norm_bound(self) -> float:
        """row_norm_bound as a float, when its constraint allows it."""
        bound = self.row_norm_bound
        if not self._satisfies_constraint("row_norm_bound"):
            what = "a finite number > 0" if isinstance(bound, Real) else "a number"
            raise ValueError(f"row_norm_bound must be {what}, got {bound!r}")
        return float(bound)

    def _generator(self) -> np.random.Generator:
        """The mechanism's source of randomness, when the constraint of random_state allows it."""
        if not self._satisfies_constraint("random_state"):
            raise bad_random_state(self.random_state)
        return as_generator(self.random_state)

    def _not_converged_message(self, name: str) -> str:
        """Public configuration only; points to diagnostics the user can see (or says how to)."""
        where = (
            "diagnostics_['converged'] is False; the split-Rhat and ESS are in diagnostics_"
            if self.keep_diagnostics
            else "The diagnostics (split-Rhat, ESS) are not kept: refit with keep_diagnostics=True to see "
            "them in diagnostics_"
        )
        return (
            f"mechanism {name!r}: the MCMC chain did NOT pass its convergence diagnostics, so the "
            f"released subspace may be far from the target law; increase mechanism_params['iterations']. "
            f"{where} (not private, like this warning: neither belongs beside the release)."
        )

    # -- fit / transform -------------------------------------------------------------------------

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Release a private k-dimensional subspace of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The data, rows of L2 norm at most ``row_norm_bound`` (see ``clip``).
        y : None
            Ignored.

        Returns
        -------
        self : PrivatePCA
            The fitted estimator (``components_``, ``guarantee_``, ``release_``).
        """
        name, func = self._mechanism_function()
        refuse_quoting_input(X)
        # ensure_min_features=0: scikit-learn's own message for too few features prints the shape,
        # so n (not public under add/remove-one-row); the check below words it without n
        X = validate_data(self, X, accept_sparse=False, dtype=np.float64, ensure_min_features=0)
        if X.shape[1] < 2:
            d = X.shape[1]
            raise ValueError(
                f"Found array with {d} feature(s) (shape=(, {d})) while a minimum of 2 is required "
                f"(n_components < n_features; the number of rows is left out of the shape)"
            )
        k = self._check_n_components(X.shape[1])
        bound = self._check_row_norm_bound()
        # Privacy check (rows of norm <= B), with the project's message; then scale onto the unit ball.
        X, n_clipped = check_data(X, row_norm_bound=bound, clip=bool(self.clip))
        X = X / bound
        accepted = inspect.signature(func).parameters
        kwargs = dict(self.mechanism_params or {})
        if "epsilon" in accepted:
            kwargs["epsilon"] = self.epsilon
        if "delta" in accepted:
            if self.delta is None:
                raise ValueError(f"mechanism {name!r} needs delta")
            kwargs["delta"] = self.delta
        warn = bool(kwargs.get("warn", True))
        if "warn" in accepted:
            kwargs["warn"] = False  # the mechanism's own warning points to its output: worded below
        out = func(X, k, rng=self._generator(), clip=bool(self.clip), **kwargs)
        release, diagnostics = split_output(out)
        if warn and diagnostics.get("converged") is False:
            warnings.warn(self._not_converged_message(name), ChainConvergenceWarning, stacklevel=2)
        if out.components is None:
            # Only the released status and reason go into the message: diagnostics are not private.
            reason = f": {release['reason']}" if release.get("reason") else ""
            raise RuntimeError(
                f"mechanism {name!r} returned no subspace (status {release['status']!r}{reason}); "
                f"the answer ⊥ cannot be used to transform data"
            )
        self.components_ = np.ascontiguousarray(np.asarray(out.components, dtype=np.float64).T)
        self.n_components_ = self.components_.shape[0]
        self.guarantee_ = out.guarantee
        self.release_ = release
        if self.keep_diagnostics:
            diagnostics["n_clipped"] = int(n_clipped)
            self.diagnostics_ = diagnostics
        elif hasattr(self, "diagnostics_"):
            del self.diagnostics_  # from an earlier fit with keep_diagnostics=True
        return self

    def transform(self, X):
        """Project onto the released subspace: ``X @ components_.T`` (no centring)."""
        check_is_fitted(self, "components_")
        refuse_quoting_input(X)
        X = validate_data(
            self, X, accept_sparse=False, dtype=np.float64, reset=False, ensure_min_features=0
        )  # zero features: the feature-count message, not one printing the shape
        return X @ self.components_.T

    def inverse_transform(self, X):
        """Map scores back to feature space: ``X @ components_``."""
        check_is_fitted(self, "components_")
        refuse_quoting_input(X)
        Z = check_array(X, accept_sparse=False, dtype=np.float64)
        if Z.shape[1] != self.n_components_:
            raise ValueError(
                f"X has {Z.shape[1]} features, but {type(self).__name__}.inverse_transform "
                f"expects {self.n_components_} (n_components_)"
            )
        return Z @ self.components_
