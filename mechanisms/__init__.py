"""Differentially private PCA mechanisms (library code: NumPy/SciPy only, no Hydra, no I/O).

Every mechanism is a function ``mechanism(X, k, *, rng, **params) -> MechanismOutput``;
:func:`get_mechanism` looks one up by its config name, and :class:`PrivatePCA` wraps any of them
as a scikit-learn estimator.

The public surface, for users and for mechanisms written outside this package, is what this module
exports (``__all__``): the output and guarantee types, :class:`PreparedData`, the input checks, the
neighbouring relations and guarantee statuses, the samplers' :class:`ChainConvergenceWarning`, and
:class:`PrivatePCA`.  The underscore modules are
internal.
"""

from __future__ import annotations

from importlib import import_module
from typing import Callable

from ._base import (
    GUARANTEE_STATUSES,
    NEIGHBOURING_RELATIONS,
    ROW_NORM_TOLERANCE,
    ChainConvergenceWarning,
    MechanismOutput,
    PreparedData,
    PrivacyGuarantee,
    PrivacyInputError,
    check_data,
    check_delta,
    check_epsilon,
    check_k,
    second_moment,
)

#: config name -> "module:function"
MECHANISMS: dict[str, str] = {
    "pca": "mechanisms.pca:pca",
    "random": "mechanisms.random_projection:random_subspace",
    "mod_sulq": "mechanisms.mod_sulq:mod_sulq",
    "analyze_gauss": "mechanisms.analyze_gauss:analyze_gauss",
    "ppca": "mechanisms.ppca:ppca",
    "ppca_iterative": "mechanisms.ppca_iterative:ppca_iterative",
    "noisy_power": "mechanisms.noisy_power:noisy_power",
    "streaming_power": "mechanisms.streaming_power:streaming_power",
    "online_pca": "mechanisms.online_pca:online_pca",
    "private_sketch": "mechanisms.private_sketch:private_sketch",
    "subspace_exact": "mechanisms.subspace.exact:subspace_exact",
    "subspace_approx": "mechanisms.subspace.approx:subspace_approx",
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
    # PrivatePCA needs scikit-learn: import it only when it is asked for
    if name == "PrivatePCA":
        from .estimator import PrivatePCA

        return PrivatePCA
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "GUARANTEE_STATUSES",
    "MECHANISMS",
    "NEIGHBOURING_RELATIONS",
    "ROW_NORM_TOLERANCE",
    "ChainConvergenceWarning",
    "MechanismOutput",
    "PreparedData",
    "PrivacyGuarantee",
    "PrivacyInputError",
    "PrivatePCA",
    "check_data",
    "check_delta",
    "check_epsilon",
    "check_k",
    "get_mechanism",
    "second_moment",
]
