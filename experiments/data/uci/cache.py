"""The preprocessed matrices' cache: keyed by data set, split, preprocessing version and the raw
files' sha256 (memoised per file), stored as the nonzero entries' bits so a load gives the same
matrix bit for bit."""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np

from experiments.data.uci import sources
from experiments.data.uci.dataset import Dataset
from experiments.data.uci.parsers import PREPROCESSING_VERSION
from experiments.data.uci.sources import _atomic_write_bytes
from experiments.paths import CACHE_ENV_VAR, default_cache_dir

#: the preprocessed cache without ``$PRIVPCA_CACHE_DIR`` (:func:`experiments.paths.default_cache_dir`)
CACHE_DIR = default_cache_dir()


_HASH_MEMO = "raw_sha256.json"


def _sha256_of(path: Path, cache_dir: Path, raw_memo: dict[Path, bytes] | None = None) -> str:
    """sha256 of the uncompressed content, memoised by (path, size, mtime) in the cache dir.

    When the content has to be read, it is kept in ``raw_memo`` so it is not decompressed twice.
    """
    st = path.stat()
    key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    memo_path = cache_dir / _HASH_MEMO
    memo: dict[str, str] = {}
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    if key in memo:
        return memo[key]
    content = sources._read_raw(path)
    if raw_memo is not None:
        raw_memo[path] = content
    digest = hashlib.sha256(content).hexdigest()
    memo[key] = digest
    try:
        _atomic_write_bytes(memo_path, json.dumps(memo, indent=0, sort_keys=True).encode())
    except OSError:
        pass
    return digest


def _cache_path(
    cache_dir: Path,
    name: str,
    split: str,
    hashes: dict[str, str],
    version: str = PREPROCESSING_VERSION,
) -> Path:
    key = json.dumps(
        {"name": name, "split": split, "version": version, "files": hashes},
        sort_keys=True,
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:20]
    return cache_dir / f"{name}-{split.replace('+', '_')}-{version}-{digest}.npz"


def cache_dir_default() -> Path:
    """``$PRIVPCA_CACHE_DIR`` when set, else :data:`CACHE_DIR`."""
    value = os.environ.get(CACHE_ENV_VAR)
    return Path(value).expanduser() if value else CACHE_DIR


def compact(X: np.ndarray) -> dict[str, np.ndarray]:
    """The entries of the float64 matrix ``X`` whose bits are not all zero (so -0.0 is kept), row by
    row: ``shape``, ``indptr`` (row starts), ``indices`` (columns) and ``data`` (values)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    mask = X.view(np.uint64) != 0
    rows, cols = np.nonzero(mask)
    indptr = np.zeros(X.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=X.shape[0]), out=indptr[1:])
    return {
        "shape": np.array(X.shape, dtype=np.int64),
        "indptr": indptr,
        "indices": cols.astype(np.int32),
        "data": X[rows, cols],
    }


def expand(shape, indptr, indices, data) -> np.ndarray:
    """Inverse of :func:`compact`: the dense float64 matrix, bit for bit."""
    X = np.zeros(tuple(int(v) for v in shape), dtype=np.float64)
    rows = np.repeat(np.arange(X.shape[0]), np.diff(indptr))
    X[rows, indices] = data
    return X


def _save_cache(path: Path, ds: Dataset) -> None:
    buf = io.BytesIO()
    meta = {
        "name": ds.name,
        "split": ds.split,
        "feature_names": ds.feature_names,
        "files": ds.files,
        "preprocessing": ds.preprocessing,
    }
    arrays = {**compact(ds.X), "meta": np.array(json.dumps(meta))}
    if ds.y is not None:
        arrays["y"] = ds.y
    np.savez_compressed(buf, **arrays)
    _atomic_write_bytes(path, buf.getvalue())


def _load_cache(path: Path) -> Dataset | None:
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            dense = (
                "X" in z.files
            )  # a cache written as a dense array: read it, rewrite it compactly
            X = z["X"] if dense else expand(z["shape"], z["indptr"], z["indices"], z["data"])
            y = z["y"] if "y" in z.files else None
    except (OSError, ValueError, KeyError, EOFError, zlib.error, zipfile.BadZipFile):
        return None  # unreadable cache (cut short, damaged): rebuild it
    ds = Dataset(
        name=meta["name"],
        X=X,
        y=y,
        split=meta["split"],
        feature_names=list(meta["feature_names"]),
        files=dict(meta["files"]),
        preprocessing=meta["preprocessing"],
    )
    if dense:
        try:
            _save_cache(path, ds)
        except OSError:
            pass
    return ds
