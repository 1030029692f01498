"""scikit-learn covariance estimator wrapping any mechanism that releases a covariance.

:class:`PrivateCovariance` follows scikit-learn's covariance convention (``sklearn.covariance``):
``fit(X)`` sets ``covariance_``, ``location_`` and ``precision_``, and the inherited ``score``,
``mahalanobis``, ``error_norm`` and ``get_precision`` work on them as they do for
:class:`~sklearn.covariance.EmpiricalCovariance`.  The estimate is the mechanism's released
``covariance`` (a post-processing of its release), rescaled to the units of ``X``.

How a mechanism declares that it releases a covariance: its output's ``covariance`` field
(:class:`mechanisms.MechanismOutput`) is a ``d x d`` array, not ``None``.  A mechanism whose output
leaves it ``None`` (every subspace-only mechanism) is refused in one line.
"""

from __future__ import annotations

import inspect
from numbers import Integral, Real
from typing import Callable

import numpy as np
from sklearn.base import _fit_context
from sklearn.covariance import EmpiricalCovariance
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import validate_data

from . import get_mechanism
from ._base import MechanismOutput, check_data
from .estimator import as_generator, refuse_quoting_input, split_output

__all__ = ["PrivateCovariance"]


class PrivateCovariance(EmpiricalCovariance):
    """Differentially private estimate of the second moment XᵀX/n, as a scikit-learn covariance.

    Parameters
    ----------
    mechanism : str or callable, default "amin_cov"
        Config name of a mechanism that releases a covariance (see :data:`mechanisms.MECHANISMS`;
        ``"amin_cov"``, Amin et al. 2019), or any callable ``f(X, k, *, rng, clip, **params) ->
        MechanismOutput`` whose output sets ``covariance``.
    epsilon : float, default 1.0
        Privacy parameter ε, passed to the mechanism (which checks it).
    delta : float, optional
        Privacy parameter δ for the (ε, δ) mechanisms; ``None`` means "not given".
    n_components : int, default 1
        The rank k the mechanism is called with: the number of vectors in ``components_``.  Where the
        mechanism takes a ``rank`` (the number of eigenpairs in its covariance, as ``amin_cov`` does)
        and ``mechanism_params`` does not set one, the estimator asks for ``rank = n_features``, a
        full-rank estimate (the paper's Algorithm 1 for ``amin_cov``).
    row_norm_bound : float, default 1.0
        PUBLIC bound B on the L2 norm of one row.  The mechanism runs on ``X / B`` and its covariance
        is multiplied by B² back into the units of ``X``.  A B computed from the data is not private.
    clip : bool, default False
        Rows with norm above B: refuse them (``False``) or scale them back onto the ball (``True``).
    store_precision : bool, default True
        Store ``precision_``, the pseudo-inverse of ``covariance_`` (post-processing).
    mechanism_params : dict, optional
        Extra keyword arguments for the mechanism (e.g. ``{"split": "uniform"}``).
    keep_diagnostics : bool, default False
        Keep the mechanism's diagnostics as ``diagnostics_`` (NOT private).
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        Source of the mechanism's randomness (an int gives the same release on every fit).

    The second moment is **not centred** (Amin et al. 2019 and JMLR 2013 eq. (1) estimate XᵀX/n):
    ``location_`` is the zero vector, as scikit-learn's estimators set it with
    ``assume_centered=True`` (a class attribute here, not a parameter).  Centring would use the data's
    mean, which is not private; centre with a public or privately released mean before ``fit``.

    Attributes
    ----------
    covariance_ : ndarray of shape (n_features, n_features)
        The released estimate, B² times the mechanism's ``covariance``.  Symmetric; not always
        positive semi-definite (e.g. ``amin_cov``'s noisy eigenvalues may be negative unless
        ``clamp_eigenvalues`` is set).
    location_ : ndarray of shape (n_features,)
        Zeros (the second moment is not centred).
    precision_ : ndarray of shape (n_features, n_features) or None
        Pseudo-inverse of ``covariance_`` (``store_precision=True``).
    components_ : ndarray of shape (n_components, n_features) or None
        The mechanism's released vectors, when it releases some.
    guarantee_ : :class:`mechanisms.PrivacyGuarantee`
        The fit's guarantee (ε, δ, neighbouring relation, status).
    release_ : dict
        What the guarantee covers besides the covariance (at least ``status``).
    diagnostics_ : dict
        Only with ``keep_diagnostics=True``; NOT private.
    n_features_in_, feature_names_in_
        As in every scikit-learn estimator.

    References
    ----------
    K. Amin, T. Dick, A. Kulesza, A. Muñoz Medina and S. Vassilvitskii, "Differentially private
    covariance estimation", NeurIPS 2019, Algorithm 1; scikit-learn's ``EmpiricalCovariance``.
    """

    #: scikit-learn's convention for a second moment that is not centred (read by the inherited
    #: ``score`` and ``mahalanobis``); a class attribute, so it cannot be switched off
    assume_centered = True

    _parameter_constraints: dict = {
        "mechanism": [str, callable],
        "epsilon": "no_validation",
        "delta": "no_validation",
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "row_norm_bound": [Interval(Real, 0, np.inf, closed="neither")],
        "clip": ["boolean"],
        "store_precision": ["boolean"],
        "mechanism_params": [dict, None],
        "keep_diagnostics": ["boolean"],
        "random_state": ["random_state", np.random.Generator],
    }

    def __init__(
        self,
        *,
        mechanism: str | Callable[..., MechanismOutput] = "amin_cov",
        epsilon: float = 1.0,
        delta: float | None = None,
        n_components: int = 1,
        row_norm_bound: float = 1.0,
        clip: bool = False,
        store_precision: bool = True,
        mechanism_params: dict | None = None,
        keep_diagnostics: bool = False,
        random_state=None,
    ):
        self.mechanism = mechanism
        self.epsilon = epsilon
        self.delta = delta
        self.n_components = n_components
        self.row_norm_bound = row_norm_bound
        self.clip = clip
        self.store_precision = store_precision
        self.mechanism_params = mechanism_params
        self.keep_diagnostics = keep_diagnostics
        self.random_state = random_state

    def _mechanism_function(self) -> tuple[str, Callable[..., MechanismOutput]]:
        if callable(self.mechanism):
            name = getattr(self.mechanism, "__name__", None) or type(self.mechanism).__name__
            return name, self.mechanism
        return str(self.mechanism), get_mechanism(self.mechanism)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Release a private estimate of the second moment of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The data, rows of L2 norm at most ``row_norm_bound`` (see ``clip``).
        y : None
            Ignored.

        Returns
        -------
        self : PrivateCovariance
            The fitted estimator (``covariance_``, ``location_``, ``precision_``, ``guarantee_``,
            ``release_``).
        """
        name, func = self._mechanism_function()
        refuse_quoting_input(X)
        X = validate_data(self, X, accept_sparse=False, dtype=np.float64, ensure_min_features=0)
        d = X.shape[1]
        if d < 2:
            raise ValueError(
                f"Found array with {d} feature(s) (shape=(, {d})) while a minimum of 2 is required "
                f"(n_components < n_features; the number of rows is left out of the shape)"
            )
        k = int(self.n_components)
        if not k < d:
            raise ValueError(
                f"n_components must satisfy 1 <= n_components < n_features = {d}, got {k}"
            )
        bound = float(self.row_norm_bound)
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
        if "rank" in accepted and kwargs.get("rank") is None:
            kwargs["rank"] = d
        out = func(X, k, rng=as_generator(self.random_state), clip=bool(self.clip), **kwargs)
        release, diagnostics = split_output(out)
        cov = getattr(out, "covariance", None)
        if cov is None:
            reason = f": {release['reason']}" if release.get("reason") else ""
            raise ValueError(
                f"mechanism {name!r} releases no covariance (its output's covariance is None, "
                f"status {release['status']!r}{reason}); PrivateCovariance needs one that does, "
                f"e.g. 'amin_cov'"
            )
        cov = np.asarray(cov, dtype=np.float64) * bound**2
        self._set_covariance((cov + cov.T) / 2)
        self.location_ = np.zeros(d)
        comps = out.components
        self.components_ = None if comps is None else np.ascontiguousarray(np.asarray(comps).T)
        self.guarantee_ = out.guarantee
        self.release_ = release
        if self.keep_diagnostics:
            diagnostics["n_clipped"] = int(n_clipped)
            self.diagnostics_ = diagnostics
        elif hasattr(self, "diagnostics_"):
            del self.diagnostics_
        return self
