"""The insurance preprocessing from public bounds (``insurance_public``) reads no statistic of the data.

Neighbouring raw data sets (one row replaced) give matrices that differ in that row alone and have
the same d, whereas the paper's preprocessing (from the data) can change every row; values outside
the CoIL 2000 dictionary's declared codes are refused in one line.  The raw rows are drawn with
fixed seeds within the declared codes (:data:`experiments.data.uci.TIC_DICTIONARY`).
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra_helpers import compose_cfg
from omegaconf import OmegaConf

from experiments.app.dispatch import run_experiment
from experiments.data.configured import load_configured
from experiments.data.uci import (
    TIC_COLUMNS,
    TIC_PUBLIC_ROW_BOUND,
    DataCorruptError,
    guarantee_scope,
    insurance_public_matrix,
    load_dataset,
    scale_rows_and_columns,
    tic_declared_codes,
)
from experiments.data.uci.parsers import _parse_insurance, _parse_insurance_public
from experiments.errors import UserError
from experiments.runs.rerun import rerun
from experiments.runs.rerun_check import differences
from experiments.store.records import run_key

REPO = Path(__file__).resolve().parents[3]
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "uci"
DECLARED = tic_declared_codes()
PUBLIC_D = 80 + 41 + 10 + 6 + 6 + 10


def _raw_rows(n: int, seed: int) -> pd.DataFrame:
    """``n`` customers with codes drawn uniformly within each attribute's declared codes, kept
    small (at most 4) for the numeric ones so that no column reaches its declared maximum."""
    rng = np.random.default_rng(seed)
    cols = {}
    for c in TIC_COLUMNS[:85]:
        low, high = DECLARED[c]
        top = high if c in ("MOSTYPE", "MAANTHUI", "MGEMOMV", "MGEMLEEF", "MOSHOOFD") else 4
        cols[c] = rng.integers(low, top + 1, size=n)
    df = pd.DataFrame(cols)
    df["CARAVAN"] = rng.integers(0, 2, size=n)
    return df


def _raw(df: pd.DataFrame) -> dict[str, bytes]:
    text = df.to_csv(sep="\t", header=False, index=False)
    return {"ticdata2000.txt": text.encode()}


def _paper(df):
    M, names, _ = _parse_insurance(_raw(df), "train")
    return scale_rows_and_columns(M, names)


def _public(df):
    X, names, _ = _parse_insurance_public(_raw(df), "train")
    return X, names


def _neighbours(seed: int = 3):
    """A raw data set and its neighbour: row 7 replaced by a customer with every numeric attribute
    at its declared maximum (a valid record that moves the paper's column maxima and row norm)."""
    df = _raw_rows(40, seed)
    other = df.copy()
    for c in TIC_COLUMNS[5:85]:
        other.loc[7, c] = DECLARED[c][1]
    return df, other


def _changed_rows(X, Y) -> np.ndarray:
    return np.flatnonzero((X.view(np.uint64) != Y.view(np.uint64)).any(axis=1))


def test_neighbour_changes_one_row_under_public_bounds():
    df, other = _neighbours()
    X, names = _public(df)
    Y, names_y = _public(other)
    assert X.shape == Y.shape == (40, PUBLIC_D) and names == names_y
    assert _changed_rows(X, Y).tolist() == [7]


def test_neighbour_changes_every_row_under_the_papers_preprocessing():
    df, other = _neighbours()
    X, _ = _paper(df)
    Y, _ = _paper(other)
    assert X.shape == Y.shape  # the raw rows keep every column non-constant here
    assert len(_changed_rows(X, Y)) == 40


def test_each_public_row_is_a_function_of_its_raw_row_alone():
    df = _raw_rows(30, 11).drop(columns="CARAVAN")
    X, _ = insurance_public_matrix(df)
    for i in range(len(df)):
        alone, _ = insurance_public_matrix(df.iloc[[i]].reset_index(drop=True))
        assert alone[0].tobytes() == X[i].tobytes()
    # the values are the declared scaling: numeric / declared maximum / sqrt(85)
    numeric = [c for c in TIC_COLUMNS[5:85]]
    expect = df[numeric].to_numpy(float) / np.array([DECLARED[c][1] for c in numeric])
    np.testing.assert_allclose(X[:, :80], expect / TIC_PUBLIC_ROW_BOUND, rtol=1e-15)


def test_d_and_names_do_not_depend_on_the_data():
    one_level = _raw_rows(25, 5)
    for c in ("MOSTYPE", "MAANTHUI", "MGEMOMV", "MGEMLEEF", "MOSHOOFD"):
        one_level[c] = DECLARED[c][0]  # a single observed level per one-hot attribute
    one_level[list(TIC_COLUMNS[5:85])] = 0  # every numeric column constant
    X, names = _public(one_level)
    _, names_full = _public(_raw_rows(25, 6))
    assert X.shape[1] == PUBLIC_D and names == names_full
    assert (X[:, 80:].sum(axis=0) == 0).sum() == PUBLIC_D - 80 - 5  # unobserved levels kept
    # the paper's drops the constant columns and the unobserved levels: its d follows the data
    assert _paper(one_level)[0].shape[1] != _paper(_raw_rows(25, 6))[0].shape[1]


def test_extreme_rows_have_norm_at_most_one():
    df = _raw_rows(3, 0).drop(columns="CARAVAN")
    for c in TIC_COLUMNS[5:85]:
        df[c] = DECLARED[c][1]
    X, _ = insurance_public_matrix(df)
    norms = np.linalg.norm(X, axis=1)
    assert np.all(norms <= 1.0) and np.allclose(norms, 1.0)


@pytest.mark.parametrize(
    "column, value",
    [("MOSTYPE", 42), ("MOSTYPE", 0), ("MGEMLEEF", 7), ("PWAPART", 10), ("AWAPART", 13),
     ("MGODRK", -1), ("MKOOPKLA", 2.5)],
)  # fmt: skip
def test_values_outside_the_declared_codes_are_refused(column, value):
    df = _raw_rows(10, 1).drop(columns="CARAVAN").astype(float)
    df.loc[4, column] = value
    with pytest.raises(DataCorruptError) as err:
        insurance_public_matrix(df)
    low, high = DECLARED[column]
    assert str(err.value) == (  # one line: the attribute and its declared codes, not the value
        f"insurance attribute {column} holds a value outside its declared codes {low}-{high} "
        "(the CoIL 2000 dictionary); the public preprocessing refuses it"
    )


def test_load_dataset_public_on_the_fixture(tmp_path):
    ds = load_dataset(
        "insurance", data_dir=FIXTURES, cache_dir=tmp_path, download=False, preprocessing="public"
    )
    paper = load_dataset("insurance", data_dir=FIXTURES, cache_dir=tmp_path, download=False)
    assert ds.name == "insurance_public" and ds.d == PUBLIC_D and ds.n == paper.n
    assert np.linalg.norm(ds.X, axis=1).max() <= 1.0
    assert ds.preprocessing.startswith("public-bounds-v1")
    assert "raw records" in guarantee_scope(ds) and "preprocessed matrix" in guarantee_scope(paper)
    assert len(list(tmp_path.glob("insurance_public-*.npz"))) == 1
    again = load_dataset(
        "insurance", data_dir=FIXTURES, cache_dir=tmp_path, download=False, preprocessing="public"
    )
    assert again.X.tobytes() == ds.X.tobytes()
    with pytest.raises(UserError, match="no preprocessing from public bounds"):
        load_dataset("kddcup", data_dir=FIXTURES, download=False, preprocessing="public")
    with pytest.raises(UserError, match="unknown preprocessing"):
        load_dataset("insurance", data_dir=FIXTURES, download=False, preprocessing="raw")


def test_existing_insurance_run_keys_are_unchanged():
    """The paper's insurance config keeps its keys, so the run key (and id) of every record made
    with it is the one it had; the public variant is another data set with its own keys."""
    key = run_key(compose_cfg(["dataset=insurance"]))
    assert key["dataset_params"] == {"name": "insurance", "kind": "uci", "k": 11, "split": None}
    public = run_key(compose_cfg(["dataset=insurance_public"]))
    assert public["dataset"] == "insurance_public"
    assert public["dataset_params"]["preprocessing"] == "public"


def test_config_loads_the_public_variant(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVPCA_CACHE_DIR", str(tmp_path))
    node = OmegaConf.load(REPO / "conf" / "dataset" / "insurance_public.yaml")
    assert load_configured(node, str(FIXTURES)).name == "insurance_public"
    node.name = "insurance"  # a name that is not the loaded variant's
    with pytest.raises(UserError, match="name it 'insurance_public'"):
        load_configured(node, str(FIXTURES))


def test_records_state_the_scope_and_rerun(tmp_path, monkeypatch, capsys):
    """A run on insurance_public stores guarantee_scope and reruns bit for bit; the field is not
    among those a rerun compares, so a record made before it (without it) reruns too."""
    monkeypatch.setenv("PRIVPCA_CACHE_DIR", str(tmp_path / "cache"))
    common = [f"results_dir={tmp_path / 'store'}", f"data_dir={FIXTURES}"]
    record = run_experiment(
        compose_cfg(["dataset=insurance_public", "mechanism=mod_sulq", "k=2", *common])
    )
    assert "raw records" in record["guarantee_scope"]
    result = rerun(compose_cfg([*common, f"+rerun={record['record_id']}"]))
    assert result["reproduced"]
    capsys.readouterr()
    old = {k: v for k, v in record.items() if k != "guarantee_scope"}
    fields = {k: record[k] for k in ("q_F", "epsilon", "guarantee_note", "components_sha256")}
    assert differences(old, fields) == []
