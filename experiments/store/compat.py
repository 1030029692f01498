"""How records written by earlier versions of the harness are read: every compatibility rule in one place.

The stores are append-only and content-addressed (a record's id is the hash of its run key), so old
records are never rewritten; the readers apply these rules instead.

* Run keys leave out a mechanism parameter at its default when records were written before the
  parameter existed (:data:`UNKEYED_DEFAULTS`: ``calibration: paper``, ``postprocess: none``), so
  those records keep their ids.  :func:`keyed_mechanism_params` builds a key;
  :func:`fill_unkeyed_defaults` reads one back.
* Classification records written before the protocol columns existed used a linear SVM (LinearSVC's
  default loss), unscaled features and the Haar-uniform random subspace (:data:`LEGACY_PROTOCOL`,
  :func:`fill_legacy_protocol`).
* Records written before the ``guarantee_status`` field: a PPCA record with ``guarantee_exact = False``
  is an MCMC draw, status ``"nominal (MCMC)"`` (:func:`legacy_guarantee_statuses`).
"""

from __future__ import annotations

import pandas as pd

__all__ = [
    "LEGACY_PROTOCOL",
    "UNKEYED_DEFAULTS",
    "fill_legacy_protocol",
    "fill_unkeyed_defaults",
    "keyed_mechanism_params",
    "legacy_guarantee_statuses",
]

#: mechanism parameters left out of the run key at these values (records written before the
#: parameter existed keep their keys); any other value is part of the key
UNKEYED_DEFAULTS = {"calibration": "paper", "postprocess": "none"}

#: the protocol of a classification record written before its protocol columns existed
LEGACY_PROTOCOL = {
    "classifier": "linear",
    "svm_loss": "squared_hinge",
    "feature_scaling": "none",
    "random_entries": "gaussian",
    "random_projection": "orthonormal",
}


def keyed_mechanism_params(params: dict) -> dict:
    """The mechanism parameters that enter a run key: no ``_``-prefixed Hydra fields, and no parameter
    at its :data:`UNKEYED_DEFAULTS` value."""
    return {
        k: v
        for k, v in params.items()
        if not k.startswith("_") and not (k in UNKEYED_DEFAULTS and v == UNKEYED_DEFAULTS[k])
    }


def fill_unkeyed_defaults(values: pd.Series, param: str) -> pd.Series:
    """A run-key column of mechanism parameter ``param`` with its unkeyed default where absent."""
    return values.where(values.notna(), UNKEYED_DEFAULTS[param])


def fill_legacy_protocol(d: pd.DataFrame) -> pd.DataFrame:
    """Classification records ``d`` (a copy, changed in place) with the protocol columns of
    :data:`LEGACY_PROTOCOL` filled on the records that predate them (no ``svm_loss``)."""
    legacy = d["svm_loss"].isna() if "svm_loss" in d else pd.Series(True, index=d.index)
    if "classifier" in d:  # records with a loss but no classifier column ran the linear SVM
        legacy_classifier = d["classifier"].isna()
    else:
        legacy_classifier = pd.Series(True, index=d.index)
    for col, val in LEGACY_PROTOCOL.items():
        if col not in d:
            d[col] = None
        elif d[col].dtype != object:  # e.g. all missing, read as float: would refuse a string
            d[col] = d[col].astype(object)
        d.loc[legacy_classifier if col == "classifier" else legacy, col] = val
    return d


def legacy_guarantee_statuses(g: pd.DataFrame, status: pd.Series) -> set[str]:
    """The statuses of the records of ``g`` without a ``guarantee_status`` (``status`` NaN): PPCA
    records with ``guarantee_exact = False`` are MCMC draws, ``"nominal (MCMC)"``."""
    if {"mechanism", "guarantee_exact"} <= set(g.columns):
        legacy = status.isna() & (g["mechanism"] == "ppca") & (g["guarantee_exact"] == False)  # noqa: E712
        if legacy.any():
            return {"nominal (MCMC)"}
    return set()
