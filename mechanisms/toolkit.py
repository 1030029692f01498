"""Toolkit for writing a differentially private PCA mechanism outside this package.

A mechanism is a plain function ``mechanism(X, k, *, rng, clip=False, **params) -> MechanismOutput``
(docs/own_mechanism.md).  This module gathers, under one import path, what such a function needs
from the library: the input checks that give the harness's error messages, the output and guarantee
types, the shared linear algebra and the Gaussian calibration.  A mechanism kept outside the package
imports nothing but :mod:`mechanisms` and :mod:`mechanisms.toolkit` (the worked example,
``examples/my_mechanism/my_gauss.py``, does so, and ``tests/mechanisms/test_public_surfaces.py`` holds it and
the documentation to it).  Every name here is the library's own object, the one its mechanisms use.

Routine Listings
----------------
Output and guarantee
    :class:`MechanismOutput` (the release, ``components``/``guarantee``/``release``, kept apart
    from the not-private ``diagnostics``), :class:`PrivacyGuarantee` (ε, δ, neighbouring relation,
    status), :data:`NEIGHBOURING_RELATIONS` and :data:`GUARANTEE_STATUSES` (the values a guarantee
    may name).
Input checks
    :func:`check_data` (rows as a float array, their norms within the bound, or clipped onto it;
    returns ``(X, n_clipped)``), :func:`check_epsilon`, :func:`check_delta`, :func:`check_k`; each
    refuses with a :class:`PrivacyInputError` whose message names no value computed from the data.
    :class:`PreparedData` (data checked once, its second-moment matrix cached; accepted wherever
    ``X`` is) and :data:`ROW_NORM_TOLERANCE` (the rounding slack of the row-norm check).
Linear algebra
    :func:`second_moment` (A = XᵀX/n, JMLR 2013 eq. (1)), :func:`symmetric_gaussian` (a symmetric
    matrix of i.i.d. Gaussian upper-triangular entries), :func:`top_k_eigenvectors` (orthonormal
    columns, signs fixed so that the output is deterministic).
Calibration of the Gaussian mechanism
    :func:`gaussian_sigma` (the smaller of the zCDP and, for ε < 1, the classical calibration),
    :func:`gaussian_sigma_tight` (the smallest σ for the exact privacy profile) and
    :func:`gaussian_epsilon_for_delta` (the exact ε(δ) of a Gaussian of sensitivity-to-noise ratio
    μ, to check a claim).

See Also
--------
mechanisms : the surface for users: :class:`~mechanisms.PrivatePCA`, the registry
    (:data:`~mechanisms.MECHANISMS`, :func:`~mechanisms.get_mechanism`) and the output, guarantee
    and error types.

Notes
-----
The registry, the Hydra configs and the audit are the harness's; an outside mechanism joins them
through its own config file (docs/own_mechanism.md), and the harness's contract
(``experiments.audit.contract.check_mechanism``) checks that it keeps the interface these helpers
implement.
"""

from __future__ import annotations

from ._base import (
    GUARANTEE_STATUSES,
    NEIGHBOURING_RELATIONS,
    ROW_NORM_TOLERANCE,
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
from .calibration import gaussian_epsilon_for_delta, gaussian_sigma, gaussian_sigma_tight
from .linalg import symmetric_gaussian, top_k_eigenvectors

__all__ = [
    "GUARANTEE_STATUSES",
    "NEIGHBOURING_RELATIONS",
    "ROW_NORM_TOLERANCE",
    "MechanismOutput",
    "PreparedData",
    "PrivacyGuarantee",
    "PrivacyInputError",
    "check_data",
    "check_delta",
    "check_epsilon",
    "check_k",
    "gaussian_epsilon_for_delta",
    "gaussian_sigma",
    "gaussian_sigma_tight",
    "second_moment",
    "symmetric_gaussian",
    "top_k_eigenvectors",
]
