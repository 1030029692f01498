"""The reading rules for records written by earlier versions of the harness (experiments.store.compat)."""

from __future__ import annotations

import pandas as pd

from experiments.store.compat import (
    LEGACY_PROTOCOL,
    fill_legacy_protocol,
    fill_unkeyed_defaults,
    keyed_mechanism_params,
    legacy_guarantee_statuses,
)


def test_default_calibration_is_not_keyed_and_reads_back():
    params = {
        "_target_": "mechanisms.mod_sulq.mod_sulq",
        "_partial_": True,
        "epsilon": 0.5,
        "calibration": "paper",
    }
    assert keyed_mechanism_params(params) == {"epsilon": 0.5}
    assert keyed_mechanism_params({**params, "calibration": "tight"}) == {
        "epsilon": 0.5,
        "calibration": "tight",
    }
    col = pd.Series([None, "tight", float("nan")], dtype=object)
    assert fill_unkeyed_defaults(col, "calibration").tolist() == ["paper", "tight", "paper"]


def test_classification_records_without_protocol_get_the_old_one():
    d = pd.DataFrame(
        {
            "mechanism": ["pca", "random"],
            "svm_loss": [None, "hinge"],
            "feature_scaling": [None, "standard"],
        }
    )
    out = fill_legacy_protocol(d.copy())
    assert out.loc[0, list(LEGACY_PROTOCOL)].tolist() == list(LEGACY_PROTOCOL.values())
    assert out.loc[1, "svm_loss"] == "hinge" and out.loc[1, "feature_scaling"] == "standard"
    assert out.loc[1, "random_entries"] is None  # a new record keeps what it holds


def test_protocol_column_read_as_float_takes_the_old_protocol():
    """A protocol column that no record of a store holds is read back all missing, as float64; the
    legacy value (a string) must still go in, whether or not any record is legacy."""
    for loss in ("hinge", None):
        d = pd.DataFrame(
            {"svm_loss": [loss], "classifier": ["rbf"], "random_entries": [float("nan")]}
        )
        value = fill_legacy_protocol(d.copy()).loc[0, "random_entries"]
        assert pd.isna(value) if loss else value == "gaussian"


def test_ppca_records_without_status_are_mcmc_draws():
    g = pd.DataFrame(
        {"mechanism": ["ppca", "ppca", "mod_sulq"], "guarantee_exact": [False, True, False]}
    )
    none = pd.Series([None] * 3, dtype=object)
    assert legacy_guarantee_statuses(g, none) == {"nominal (MCMC)"}
    assert (
        legacy_guarantee_statuses(g, pd.Series(["nominal (MCMC)", None, "proven"], dtype=object))
        == set()
    )
    assert legacy_guarantee_statuses(g.drop(columns="guarantee_exact"), none) == set()
