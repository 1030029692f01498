"""Differentially private PCA mechanisms (library code: NumPy/SciPy only, no Hydra, no I/O).

Every mechanism is a function ``mechanism(X, k, *, rng, **params) -> MechanismOutput``;
:func:`get_mechanism` looks one up by its config name, and :class:`PrivatePCA` wraps any of them
as a scikit-learn estimator.

Two public surfaces, each declared by its ``__all__`` and listed in the documentation:

``mechanisms`` (this module), for users
    :class:`PrivatePCA` (the estimator), :class:`PrivateCovariance` (the covariance estimator, for
    the mechanisms that release a covariance), the registry (:data:`MECHANISMS`, :func:`get_mechanism`),
    the output and guarantee types (:class:`MechanismOutput`, :class:`PrivacyGuarantee`, the values
    a guarantee may name: :data:`NEIGHBOURING_RELATIONS`, :data:`GUARANTEE_STATUSES`) and the error
    and warning types (:class:`PrivacyInputError`, :class:`ChainConvergenceWarning`).  Listed in
    docs/mechanisms.md.
:mod:`mechanisms.toolkit`, for authors of mechanisms
    what a mechanism written outside the package needs: the input checks, :class:`PreparedData`,
    the shared linear algebra, the Gaussian calibration, and the output, guarantee and error types
    again, so that such a mechanism imports nothing but these two modules.  Listed in
    docs/own_mechanism.md.

Every other module, the underscore ones above all, is the library's inside: the mechanisms
themselves are reached through the registry.
"""

from __future__ import annotations

from importlib import import_module
from typing import Callable

from ._base import (
    GUARANTEE_STATUSES,
    NEIGHBOURING_RELATIONS,
    ChainConvergenceWarning,
    MechanismOutput,
    PrivacyGuarantee,
    PrivacyInputError,
)

#: config name -> "module:function"
MECHANISMS: dict[str, str] = {
    "pca": "mechanisms.pca:pca",
    "random": "mechanisms.random_projection:random_subspace",
    "mod_sulq": "mechanisms.mod_sulq:mod_sulq",
    "analyze_gauss": "mechanisms.analyze_gauss:analyze_gauss",
    "ppca": "mechanisms.ppca:ppca",
    "ppca_iterative": "mechanisms.ppca_iterative:ppca_iterative",
    "amin_cov": "mechanisms.amin_cov:amin_cov",
    "noisy_power": "mechanisms.noisy_power:noisy_power",
    "streaming_power": "mechanisms.streaming_power:streaming_power",
    "online_pca": "mechanisms.online_pca:online_pca",
    "private_sketch": "mechanisms.private_sketch:private_sketch",
    "subspace_exact": "mechanisms.subspace.exact:subspace_exact",
    "subspace_approx": "mechanisms.subspace.approx:subspace_approx",
    "gauss_cov": "mechanisms.dong_cov:gauss_cov",
    "separate_cov": "mechanisms.dong_cov:separate_cov",
    "adaptive_cov": "mechanisms.dong_cov:adaptive_cov",
    "lap_cov": "mechanisms.dong_cov:lap_cov",
    "separate_lap_cov": "mechanisms.dong_cov:separate_lap_cov",
    "coinpress_cov": "mechanisms.coinpress:coinpress_cov",
    "dp_pca": "mechanisms.dp_pca:dp_pca",
    "k_dp_pca": "mechanisms.k_dp_pca:k_dp_pca",
}


def get_mechanism(name: str) -> Callable[..., MechanismOutput]:
    """The mechanism function registered under ``name``."""
    try:
        target = MECHANISMS[name]
    except KeyError:
        raise ValueError(
            f"unknown mechanism {name!r}; valid: {', '.join(sorted(MECHANISMS))}"
        ) from None
    module, func = target.split(":")
    return getattr(import_module(module), func)


def __getattr__(name: str):
    # the estimators need scikit-learn: import them only when they are asked for
    if name == "PrivatePCA":
        from .estimator import PrivatePCA

        return PrivatePCA
    if name == "PrivateCovariance":
        from .covariance_estimator import PrivateCovariance

        return PrivateCovariance
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "GUARANTEE_STATUSES",
    "MECHANISMS",
    "NEIGHBOURING_RELATIONS",
    "ChainConvergenceWarning",
    "MechanismOutput",
    "PrivacyGuarantee",
    "PrivacyInputError",
    "PrivateCovariance",
    "PrivatePCA",
    "get_mechanism",
]
