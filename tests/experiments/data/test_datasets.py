"""Loader tests on the small raw-format fixtures in tests/fixtures/uci (no real data needed)."""

from __future__ import annotations

import csv
import gzip
import hashlib
import shutil
import urllib.error
from pathlib import Path

import numpy as np
import pytest

from experiments.data import uci as D
from experiments.data.uci import (
    DATASETS,
    DataCorruptError,
    Dataset,
    DataUnavailableError,
    data_dir_from_env,
    load_dataset,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "uci"


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """No real data: empty data/raw, no $PRIVPCA_DATA_DIR, no network."""
    monkeypatch.setattr(D.sources, "RAW_DIR", tmp_path / "raw_empty")
    monkeypatch.delenv("PRIVPCA_DATA_DIR", raising=False)

    def no_network(url, dest, timeout=60.0):
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(D.sources, "_download_file", no_network)


def _copy_tree(dest: Path, mode: str, only: str | None = None) -> Path:
    """Copy the fixtures with every file gzip-compressed ("gz"), plain ("plain") or as-is."""
    for src in FIXTURES.rglob("*"):
        if not src.is_file() or (only and src.parent.name != only):
            continue
        rel = src.relative_to(FIXTURES)
        content = src.read_bytes()
        if src.suffix == ".gz":
            content = gzip.decompress(content)
            rel = rel.with_suffix("")
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == "gz":
            (target.parent / (target.name + ".gz")).write_bytes(gzip.compress(content))
        elif mode == "plain":
            target.write_bytes(content)
        else:
            shutil.copy(src, dest / src.relative_to(FIXTURES))
    return dest


def _fixture_bytes(sub: str, name: str) -> bytes:
    p = FIXTURES / sub / name
    if not p.exists():
        return gzip.decompress(p.with_name(name + ".gz").read_bytes())
    return p.read_bytes()


def _fixture_text(sub: str, name: str) -> str:
    return _fixture_bytes(sub, name).decode().replace("\r\n", "\n")


def _rows(sub, name, delim=","):
    return [r for r in csv.reader(_fixture_text(sub, name).splitlines(), delimiter=delim) if r]


def _n_nonconstant(cols) -> int:
    return sum(len(set(c)) > 1 for c in cols)


def _expected_shape(name: str, split: str | None = None) -> tuple[int, int]:
    """Independent (csv-module) computation of n and d on the fixture."""
    if name == "kddcup":
        rows = _rows("kddcup99", "kddcup.data_10_percent")
        cols = list(zip(*rows))
        numeric = [cols[j] for j in range(41) if j not in (1, 2, 3)]
        cat = sum(len(set(cols[j])) for j in (1, 2, 3))
        return len(rows), _n_nonconstant(numeric) + cat
    if name == "census":
        files = {"learn": ["census-income.data"], "test": ["census-income.test"]}[split]
        rows = [[v.strip() for v in r] for f in files for r in _rows("census", f)]
        cols = list(zip(*rows))
        numeric_idx = (0, 5, 16, 17, 18, 24, 30, 39)
        d = _n_nonconstant([cols[j] for j in numeric_idx])
        d += sum(
            len(set(cols[j])) for j in range(42) if j not in numeric_idx if len(set(cols[j])) > 1
        )
        return len(rows), d
    if name == "localization":
        rows = _rows("localization", "ConfLongDemo_JSI.txt")
        cols = list(zip(*rows))
        return len(rows), 4 + sum(len(set(cols[j])) for j in (0, 1, 7))
    if name == "insurance":
        tr = _rows("insurance", "ticdata2000.txt", "\t")
        ev = _rows("insurance", "ticeval2000.txt", "\t")
        allrows = [r[:85] for r in tr] + ev
        cols = list(zip(*allrows))
        tcols = list(zip(*tr))
        d = _n_nonconstant([cols[j] for j in range(5, 85)])
        d += sum(len(set(tcols[j])) for j in range(5))
        return len(allrows), d
    raise AssertionError(name)


def _check_dataset(ds: Dataset):
    assert ds.X.dtype == np.float64 and ds.X.ndim == 2
    norms = np.linalg.norm(ds.X, axis=1)
    assert norms.max() <= 1.0 + 1e-12
    assert norms.max() == pytest.approx(1.0)  # matrix divided by its largest row norm
    assert np.abs(ds.X).max() <= 1.0
    assert len(ds.feature_names) == ds.X.shape[1]
    assert ds.y is not None and len(ds.y) == ds.X.shape[0]
    assert np.all(ds.X.max(axis=0) != ds.X.min(axis=0)), "constant columns must be dropped"
    assert D.PREPROCESSING_VERSION in ds.preprocessing


@pytest.mark.parametrize("mode", ["as-is", "gz", "plain"])
@pytest.mark.parametrize("name", DATASETS)
def test_load_fixture_formats(name, mode, tmp_path):
    ddir = _copy_tree(tmp_path / "data", mode)
    ds = load_dataset(name, data_dir=ddir, cache_dir=tmp_path / "cache", download=False)
    _check_dataset(ds)
    assert ds.name == name
    assert ds.X.shape == _expected_shape(name, ds.split)
    # sha256 is of the *uncompressed* content, so it does not depend on gzip vs plain
    for fname, digest in ds.files.items():
        sub = D.RAW_FILES[name][0]
        assert digest == hashlib.sha256(_fixture_bytes(sub, fname)).hexdigest()


def test_gzip_and_plain_give_identical_matrices(tmp_path):
    for name in DATASETS:
        a = load_dataset(
            name,
            data_dir=_copy_tree(tmp_path / "gz", "gz"),
            cache_dir=tmp_path / "c1",
            download=False,
        )
        b = load_dataset(
            name,
            data_dir=_copy_tree(tmp_path / "pl", "plain"),
            cache_dir=tmp_path / "c2",
            download=False,
        )
        np.testing.assert_array_equal(a.X, b.X)
        assert a.feature_names == b.feature_names and a.files == b.files


def test_kddcup_one_hot_and_labels(tmp_path):
    ds = load_dataset("kddcup", data_dir=FIXTURES, cache_dir=tmp_path, download=False)
    rows = _rows("kddcup99", "kddcup.data_10_percent")
    assert list(ds.y) == [r[41] for r in rows]
    assert "normal." in ds.y and "neptune." in ds.y
    for proto in {r[1] for r in rows}:
        j = ds.feature_names.index(f"protocol_type={proto}")
        col = ds.X[:, j]
        on = np.array([r[1] == proto for r in rows])
        assert np.all(col[~on] == 0) and np.all(col[on] > 0)
    assert not any(f.startswith("label") for f in ds.feature_names)


def test_census_split_selection_missing_values_and_labels(tmp_path):
    ds = load_dataset("census", data_dir=FIXTURES, cache_dir=tmp_path, download=False)
    assert ds.split == "learn"  # learn split preferred when present (the paper's)
    test = load_dataset(
        "census", data_dir=FIXTURES, cache_dir=tmp_path, download=False, split="test"
    )
    assert test.split == "test" and test.X.shape[0] == 30
    both = load_dataset(
        "census", data_dir=FIXTURES, cache_dir=tmp_path, download=False, split="learn+test"
    )
    assert both.X.shape[0] == ds.X.shape[0] + 30
    assert set(test.y) <= {"- 50000", "50000+"}
    assert "migration code-change in msa=?" in test.feature_names  # '?' is its own level
    assert "instance weight" in test.feature_names
    # only the test split present -> falls back to it
    only_test = _copy_tree(tmp_path / "t", "plain", only="census")
    (only_test / "census" / "census-income.data").unlink()
    fallback = load_dataset("census", data_dir=only_test, cache_dir=tmp_path, download=False)
    assert fallback.split == "test"
    np.testing.assert_array_equal(fallback.X, test.X)
    with pytest.raises(ValueError, match="valid: learn, test, learn\\+test"):
        load_dataset("census", data_dir=FIXTURES, cache_dir=tmp_path, split="bogus")


def test_localization_features_and_labels(tmp_path):
    ds = load_dataset("localization", data_dir=FIXTURES, cache_dir=tmp_path, download=False)
    rows = _rows("localization", "ConfLongDemo_JSI.txt")
    assert list(ds.y) == [r[7] for r in rows]
    assert ds.feature_names[:4] == ["timestamp", "x", "y", "z"]
    assert "tag=010-000-024-033" in ds.feature_names and "sequence=A01" in ds.feature_names
    assert "activity=falling" in ds.feature_names
    assert not any(f.startswith("date") for f in ds.feature_names)


def test_insurance_rows_labels_and_levels(tmp_path):
    ds = load_dataset("insurance", data_dir=FIXTURES, cache_dir=tmp_path, download=False)
    tr = _rows("insurance", "ticdata2000.txt", "\t")
    tg = _rows("insurance", "tictgts2000.txt", "\t")
    assert ds.split == "train+eval"
    assert list(ds.y) == [int(r[85]) for r in tr] + [int(r[0]) for r in tg]
    assert "CARAVAN" not in ds.feature_names
    assert any(f.startswith("MOSTYPE=") for f in ds.feature_names)
    train = load_dataset(
        "insurance", data_dir=FIXTURES, cache_dir=tmp_path, download=False, split="train"
    )
    assert train.X.shape[0] == len(tr)


def test_env_var_is_used(tmp_path, monkeypatch):
    assert data_dir_from_env() is None
    monkeypatch.setenv("PRIVPCA_DATA_DIR", str(FIXTURES))
    assert data_dir_from_env() == FIXTURES
    ds = load_dataset("insurance", cache_dir=tmp_path, download=False)
    assert ds.X.shape[0] == 50


def test_project_raw_dir_is_second_lookup(tmp_path, monkeypatch):
    raw = _copy_tree(tmp_path / "projraw", "gz", only="kddcup99")
    monkeypatch.setattr(D.sources, "RAW_DIR", raw)
    ds = load_dataset("kddcup", data_dir=tmp_path / "empty", cache_dir=tmp_path, download=False)
    assert ds.X.shape[0] == 30


@pytest.mark.parametrize("download", [False, True])
def test_missing_file_message(tmp_path, download):
    empty = tmp_path / "nothing"
    empty.mkdir()
    with pytest.raises(DataUnavailableError) as info:
        load_dataset("localization", data_dir=empty, cache_dir=tmp_path, download=download)
    msg = str(info.value)
    assert "ConfLongDemo_JSI.txt" in msg
    assert str(empty / "localization") in msg
    assert "PRIVPCA_DATA_DIR" in msg
    if download:
        assert "Download failed" in msg and "network disabled" in msg
    assert isinstance(info.value, FileNotFoundError)


def test_missing_one_of_several_files(tmp_path):
    ddir = _copy_tree(tmp_path / "d", "plain", only="insurance")
    (ddir / "insurance" / "tictgts2000.txt").unlink()
    with pytest.raises(DataUnavailableError, match="tictgts2000.txt") as info:
        load_dataset("insurance", data_dir=ddir, cache_dir=tmp_path, download=False)
    assert "ticdata2000" not in str(info.value).splitlines()[0]


def test_unknown_name():
    with pytest.raises(ValueError, match="kddcup, census, localization, insurance"):
        load_dataset("mnist")


def test_cache_hit_skips_parsing(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    first = load_dataset("kddcup", data_dir=FIXTURES, cache_dir=cache, download=False)
    npz = list(cache.glob("kddcup-*.npz"))
    assert len(npz) == 1
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]  # atomic writes

    def boom(*a, **k):
        raise AssertionError("parsed again despite a cache hit")

    monkeypatch.setattr(D.parsers, "_parse_kddcup", boom)
    monkeypatch.setattr(D.sources, "_read_raw", boom)  # not even decompressed (hash is memoised)
    second = load_dataset("kddcup", data_dir=FIXTURES, cache_dir=cache, download=False)
    np.testing.assert_array_equal(first.X, second.X)
    assert list(first.y) == list(second.y)
    assert first.feature_names == second.feature_names and first.files == second.files
    assert first.preprocessing == second.preprocessing and second.split == "10percent"


def test_cache_key_changes_with_content_and_version(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    ddir = _copy_tree(tmp_path / "d", "plain", only="insurance")
    load_dataset("insurance", data_dir=ddir, cache_dir=cache, download=False)
    monkeypatch.setattr(D, "PREPROCESSING_VERSION", "test-v999")
    load_dataset("insurance", data_dir=ddir, cache_dir=cache, download=False)
    assert len(list(cache.glob("insurance-*.npz"))) == 2
    f = ddir / "insurance" / "ticeval2000.txt"
    f.write_text("\n".join(f.read_text().splitlines()[:-1]) + "\n")
    g = ddir / "insurance" / "tictgts2000.txt"
    g.write_text("\n".join(g.read_text().splitlines()[:-1]) + "\n")
    ds = load_dataset("insurance", data_dir=ddir, cache_dir=cache, download=False)
    assert ds.X.shape[0] == 49
    assert len(list(cache.glob("insurance-*.npz"))) == 3


@pytest.mark.parametrize("damage", ["garbage", "cut short"])
def test_corrupt_cache_is_rebuilt(tmp_path, damage):
    cache = tmp_path / "cache"
    a = load_dataset("kddcup", data_dir=FIXTURES, cache_dir=cache, download=False)
    (npz,) = cache.glob("kddcup-*.npz")
    data = npz.read_bytes()
    npz.write_bytes(b"garbage" if damage == "garbage" else data[:1000])  # cut: a BadZipFile
    b = load_dataset("kddcup", data_dir=FIXTURES, cache_dir=cache, download=False)
    np.testing.assert_array_equal(a.X, b.X)


def test_truncated_gzip_gives_clear_error(tmp_path):
    ddir = tmp_path / "d" / "kddcup99"
    ddir.mkdir(parents=True)
    data = (FIXTURES / "kddcup99" / "kddcup.data_10_percent.gz").read_bytes()
    (ddir / "kddcup.data_10_percent.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(DataCorruptError, match="corrupt or truncated gzip") as info:
        load_dataset("kddcup", data_dir=tmp_path / "d", cache_dir=tmp_path, download=False)
    assert "kddcup.data_10_percent.gz" in str(info.value)


def test_garbage_gzip_and_wrong_format(tmp_path):
    ddir = tmp_path / "d" / "kddcup99"
    ddir.mkdir(parents=True)
    (ddir / "kddcup.data_10_percent.gz").write_bytes(b"\x1f\x8b" + b"\x00" * 50)
    with pytest.raises(DataCorruptError):
        load_dataset("kddcup", data_dir=tmp_path / "d", cache_dir=tmp_path, download=False)
    (ddir / "kddcup.data_10_percent.gz").unlink()
    (ddir / "kddcup.data_10_percent").write_text("1,2,3\n4,5,6\n")
    with pytest.raises(DataCorruptError, match="has 3 fields, expected 42"):
        load_dataset("kddcup", data_dir=tmp_path / "d", cache_dir=tmp_path, download=False)


def test_truncated_plain_file_gives_clear_error(tmp_path):
    ddir = _copy_tree(tmp_path / "d", "plain", only="census")
    f = ddir / "census" / "census-income.test"
    text = f.read_text()
    f.write_text(text[: len(text) // 2 - 7])  # cut in the middle of a row
    with pytest.raises(DataCorruptError, match="census-income.test"):
        load_dataset("census", data_dir=ddir, cache_dir=tmp_path, download=False, split="test")


def test_scaling_rule():
    M = np.array([[2.0, 0.0, 5.0], [1.0, 4.0, 5.0], [0.0, -2.0, 5.0]])
    X, names = D.scale_rows_and_columns(M, ["a", "b", "c"])
    assert names == ["a", "b"]  # constant column dropped
    Y = np.array([[1.0, 0.0], [0.5, 1.0], [0.0, -0.5]])
    np.testing.assert_allclose(X, Y / np.linalg.norm(Y, axis=1).max())


def test_paper_constants():
    assert D.PAPER_K == {"kddcup": 4, "census": 8, "localization": 10, "insurance": 11}
    assert set(D.PAPER_TABLE1) == set(DATASETS)


def test_library_has_no_hardcoded_shared_path():
    for module in Path(D.__file__).parent.glob("*.py"):
        src = module.read_text()
        assert "/work/shared" not in src and "../shared" not in src, module.name


def test_cache_is_compact_and_gives_the_matrix_bit_for_bit(tmp_path):
    """The cache keeps only the nonzero entries (compressed): on the kddcup fixture (a few rows) its
    file is under half the dense layout's (on the full data set, 3.6 MB against 490 MB), and a cache
    hit returns exactly the same bits."""
    cache = tmp_path / "cache"
    first = load_dataset("kddcup", data_dir=FIXTURES, cache_dir=cache, download=False)
    (npz,) = cache.glob("kddcup-*.npz")
    with np.load(npz) as z:
        others = {k: z[k] for k in z.files if k not in ("shape", "indptr", "indices", "data")}
    np.savez(tmp_path / "dense.npz", X=first.X, **others)
    assert npz.stat().st_size < (tmp_path / "dense.npz").stat().st_size / 2
    second = load_dataset("kddcup", data_dir=FIXTURES, cache_dir=cache, download=False)
    assert second.X.dtype == np.float64 and second.X.tobytes() == first.X.tobytes()


def test_compact_keeps_negative_zero_and_every_bit():
    X = np.array([[0.0, -0.0, 1.0], [0.0, 0.0, 0.0], [5e-324, -2.5, 0.0]])
    Y = D.expand(**D.compact(X))
    assert Y.dtype == np.float64 and Y.tobytes() == X.tobytes()


def test_a_dense_cache_is_read_and_rewritten_compactly(tmp_path):
    cache = tmp_path / "cache"
    first = load_dataset("kddcup", data_dir=FIXTURES, cache_dir=cache, download=False)
    (npz,) = cache.glob("kddcup-*.npz")
    with np.load(npz) as z:
        arrays = {k: z[k] for k in z.files if k not in ("shape", "indptr", "indices", "data")}
    np.savez(npz, X=first.X, **arrays)  # the dense layout
    dense_size = npz.stat().st_size
    again = load_dataset("kddcup", data_dir=FIXTURES, cache_dir=cache, download=False)
    assert again.X.tobytes() == first.X.tobytes()
    assert npz.stat().st_size < dense_size / 2


def test_the_tests_keep_out_of_the_project_cache(tmp_path):
    """conftest points PRIVPCA_CACHE_DIR elsewhere: a load without cache_dir writes there, never into
    <repo>/data/cache."""
    assert D.cache_dir_default() != D.CACHE_DIR
    data = tmp_path / "uci"
    shutil.copytree(FIXTURES / "insurance", data / "insurance")
    before = sorted(D.CACHE_DIR.glob("*")) if D.CACHE_DIR.exists() else []
    load_dataset("insurance", data_dir=data, download=False)
    assert list(D.cache_dir_default().glob("insurance-*.npz"))
    assert (sorted(D.CACHE_DIR.glob("*")) if D.CACHE_DIR.exists() else []) == before
