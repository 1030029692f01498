"""The audit's former name for the known-broken exact-case estimators: they live in
:mod:`mechanisms.subspace._known_broken`.  This module re-exports them, because the audit's variant
table (``experiments/audit/variants.py``, ``SUBSPACE_EXACT_VARIANTS``) looks them up here."""

from __future__ import annotations

from .subspace._known_broken import (
    subspace_exact_first_rows_frame,
    subspace_exact_rounded_dedup,
    subspace_exact_tolerance,
)

__all__ = [
    "subspace_exact_first_rows_frame",
    "subspace_exact_rounded_dedup",
    "subspace_exact_tolerance",
]
