"""scikit-learn estimator wrapping any mechanism, so a private PCA drops into a Pipeline."""

from __future__ import annotations

import inspect
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from . import get_mechanism


def as_generator(random_state) -> np.random.Generator:
    """Map scikit-learn's ``random_state`` conventions (None, int, Generator, RandomState) to a Generator."""
    if random_state is None or isinstance(random_state, (Integral, np.integer)):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**32 - 1, size=4))
    raise ValueError(f"random_state must be None, an int, a Generator or a RandomState, got {random_state!r}")


class PrivatePCA(TransformerMixin, BaseEstimator):
    """Differentially private PCA as a scikit-learn transformer.

    Parameters
    ----------
    mechanism : config name of the mechanism (``"ppca"``, ``"mod_sulq"``, ...; see
        :data:`mechanisms.MECHANISMS`).
    n_components : the rank k.
    epsilon, delta : privacy parameters, passed to mechanisms that take them.
    clip : scale rows with norm above 1 back onto the unit ball instead of refusing them
        (the exact number clipped is a diagnostic, not exposed here).
    mechanism_params : extra keyword arguments for the mechanism (e.g. ``{"iterations": 2000}``).
    random_state : None, int, ``numpy.random.Generator`` or ``RandomState``.

    Like the JMLR paper, the data are *not* centred: the subspace is that of the
    second-moment matrix XᵀX/n, and ``transform`` is ``X @ components_.T``.
    Centring would use the data's mean, which is not private.

    Attributes
    ----------
    components_ : (n_components, n_features) orthonormal rows.
    guarantee_ : :class:`mechanisms.PrivacyGuarantee` of the fit.
    release_ : the mechanism's release fields (status, noise scale, sampler, ...: covered by the
        guarantee).  Diagnostics (exact data statistics, not private) are not exposed.
    """

    def __init__(self, mechanism: str = "ppca", n_components: int = 2, *, epsilon: float = 1.0,
                 delta: float | None = None, clip: bool = False, mechanism_params: dict | None = None,
                 random_state=None):
        self.mechanism = mechanism
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.clip = clip
        self.mechanism_params = mechanism_params
        self.random_state = random_state

    def fit(self, X, y=None):
        func = get_mechanism(self.mechanism)
        accepted = inspect.signature(func).parameters
        kwargs = dict(self.mechanism_params or {})
        if "epsilon" in accepted:
            kwargs["epsilon"] = self.epsilon
        if "delta" in accepted:
            if self.delta is None:
                raise ValueError(f"mechanism {self.mechanism!r} needs delta")
            kwargs["delta"] = self.delta
        out = func(X, self.n_components, rng=as_generator(self.random_state), clip=self.clip, **kwargs)
        if out.components is None:
            raise RuntimeError(f"mechanism {self.mechanism!r} returned no subspace (status {out.status!r}: "
                               f"{out.release.get('reason', 'no reason given')})")
        self.components_ = np.ascontiguousarray(out.components.T)
        self.guarantee_ = out.guarantee
        self.release_ = out.release
        self.n_features_in_ = self.components_.shape[1]
        return self

    def transform(self, X):
        check_is_fitted(self, "components_")
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have shape (n, {self.n_features_in_}), got {X.shape}")
        return X @ self.components_.T

    def inverse_transform(self, Z):
        check_is_fitted(self, "components_")
        return np.asarray(Z, dtype=np.float64) @ self.components_
