"""Real data sets of Chaudhuri, Sarwate & Sinha (JMLR 2013), section 6.1 and Table 1.

Public API::

    DATASETS = ("kddcup", "census", "localization", "insurance")
    Dataset                  # name, X (n x d float64, row norms <= 1), y, split, feature_names, files, preprocessing
    DataUnavailableError     # raw file missing: says which file to put where
    data_dir_from_env()      # $PRIVPCA_DATA_DIR as a Path, or None
    load_dataset(name, *, data_dir=None, cache_dir=None, download=True, split=None,
                 preprocessing="paper") -> Dataset
    guarantee_scope(dataset) # what a recorded epsilon is about on it (stored in UCI records)

Raw files are looked up, in order, in

1. ``data_dir`` (argument) or ``$PRIVPCA_DATA_DIR``,
2. :data:`RAW_DIR` (earlier downloads: the checkout's ``data/raw/``, or ``<user cache>/data/raw/``
   for an installed copy; :mod:`experiments.paths`),
3. the UCI archive (only if ``download=True``), downloaded into :data:`RAW_DIR`.

Each location uses the same layout (``<dir>/kddcup99/kddcup.data_10_percent[.gz]`` ...; see
:data:`RAW_FILES`); every file may be gzip-compressed (``.gz``) or plain.

Preprocessing (version :data:`PREPROCESSING_VERSION`; see ``docs/data.md`` for how it was chosen
so that Table 1 reproduces):

1. categorical features -> one-hot indicator columns (levels as observed; census '?' is a level
   of its own); constant columns are dropped;
2. every column is divided by its largest absolute value (each entry then lies in [-1, 1], and the
   largest entry of every column is 1 in absolute value);
3. the whole matrix is divided by its largest row L2 norm, so max_i ||x_i|| = 1 (rows are NOT
   normalised individually: that would force tr(A) = 1, contradicting Table 1).

``preprocessing="public"`` (insurance only, named ``insurance_public``) replaces all three steps
by bounds from the data set's published dictionary (:data:`TIC_DICTIONARY`,
:func:`insurance_public_matrix`): every declared level one-hot, every other attribute divided by
its declared maximum, every row by sqrt(85); no statistic of the data enters, so one changed raw
row changes one preprocessed row and d is fixed.

The preprocessed matrix is cached under ``cache_dir`` (default ``$PRIVPCA_CACHE_DIR``, else
:data:`CACHE_DIR`: the checkout's ``data/cache``, or ``<user cache>/data/cache`` for an installed
copy), keyed by data set, split, preprocessing version and the sha256 of the raw
(uncompressed) files.  The cache stores the matrix's nonzero entries (their bits, float64) and
their positions in a compressed ``.npz``: loading gives the same matrix bit for bit, and the
one-hot columns, mostly zeros, make it small (kddcup 3.6 MB instead of 490 MB as a dense array).
"""

from __future__ import annotations

import os
from pathlib import Path

from experiments.data.uci import sources
from experiments.data.uci.cache import (
    CACHE_DIR,
    _cache_path,
    _load_cache,
    _save_cache,
    _sha256_of,
    cache_dir_default,
    compact,
    expand,
)
from experiments.data.uci.dataset import (
    DATASETS,
    PAPER_K,
    PAPER_TABLE1,
    DataCorruptError,
    Dataset,
    DataUnavailableError,
)
from experiments.data.uci.parsers import (
    _PREPROCESSING_TEXT,
    _PUBLIC_TEXT,
    PREPROCESSING_VERSION,
    PREPROCESSINGS,
    PUBLIC_PREPROCESSING_VERSION,
    PUBLIC_VARIANTS,
    TIC_COLUMNS,
    TIC_DICTIONARY,
    TIC_PUBLIC_ROW_BOUND,
    _parser,
    insurance_public_matrix,
    scale_rows_and_columns,
    tic_declared_codes,
)
from experiments.data.uci.sources import (
    ENV_VAR,
    RAW_DIR,
    RAW_FILES,
    _default_split,
    _resolve_files,
    data_dir_from_env,
)
from experiments.errors import UserError

__all__ = [
    "CACHE_DIR",
    "DATASETS",
    "ENV_VAR",
    "PAPER_K",
    "PAPER_TABLE1",
    "PREPROCESSINGS",
    "PREPROCESSING_VERSION",
    "PUBLIC_PREPROCESSING_VERSION",
    "PUBLIC_VARIANTS",
    "RAW_DIR",
    "RAW_FILES",
    "TIC_COLUMNS",
    "TIC_DICTIONARY",
    "TIC_PUBLIC_ROW_BOUND",
    "DataCorruptError",
    "DataUnavailableError",
    "Dataset",
    "cache_dir_default",
    "compact",
    "data_dir_from_env",
    "expand",
    "guarantee_scope",
    "insurance_public_matrix",
    "load_dataset",
    "scale_rows_and_columns",
    "tic_declared_codes",
]


def load_dataset(
    name: str,
    *,
    data_dir: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    download: bool = True,
    split: str | None = None,
    preprocessing: str = "paper",
) -> Dataset:
    """Load and preprocess one of :data:`DATASETS` (see the module docstring).

    ``preprocessing="paper"`` (the default) is the paper's, from the data themselves;
    ``"public"`` (insurance only: :func:`insurance_public_matrix`) uses the published dictionary's
    declared codes alone, and names the data set ``insurance_public`` (:data:`PUBLIC_VARIANTS`).
    """
    if name not in DATASETS:
        raise UserError(f"unknown dataset {name!r}; valid names: {', '.join(DATASETS)}")
    if preprocessing not in PREPROCESSINGS:
        raise UserError(
            f"unknown preprocessing {preprocessing!r}; valid: {', '.join(PREPROCESSINGS)}"
        )
    public = preprocessing == "public"
    if public and name not in PUBLIC_VARIANTS:
        raise UserError(
            f"no preprocessing from public bounds for {name!r}; it exists for "
            f"{', '.join(PUBLIC_VARIANTS)}"
        )
    ddir = Path(data_dir).expanduser() if data_dir is not None else data_dir_from_env()
    cdir = Path(cache_dir) if cache_dir is not None else cache_dir_default()
    splits = RAW_FILES[name][1]
    if split is None:
        split = _default_split(name, ddir)
    elif split not in splits:
        raise UserError(f"unknown split {split!r} for {name!r}; valid: {', '.join(splits)}")

    paths = _resolve_files(name, split, ddir, download)
    raw_memo: dict[Path, bytes] = {}
    hashes = {f: _sha256_of(p, cdir, raw_memo) for f, p in paths.items()}
    version = PUBLIC_PREPROCESSING_VERSION if public else PREPROCESSING_VERSION
    shown = PUBLIC_VARIANTS[name] if public else name
    cpath = _cache_path(cdir, shown, split, hashes, version)
    if cpath.is_file():
        cached = _load_cache(cpath)
        if cached is not None:
            return cached

    raw = {f: raw_memo[p] if p in raw_memo else sources._read_raw(p) for f, p in paths.items()}
    raw_memo.clear()
    if public:
        X, names, y = _parser(shown)(raw, split)
        text = f"{PUBLIC_PREPROCESSING_VERSION}: {_PUBLIC_TEXT[name]}"
    else:
        M, names, y = _parser(name)(raw, split)
        X, names = scale_rows_and_columns(M, names)
        text = (
            f"{PREPROCESSING_VERSION}: {_PREPROCESSING_TEXT[name]}; columns "
            "/ max|col|; matrix / max row L2 norm"
        )
    ds = Dataset(
        name=shown,
        X=X,
        y=y,
        split=split,
        feature_names=names,
        files=hashes,
        preprocessing=text,
    )
    try:
        _save_cache(cpath, ds)
    except OSError:
        pass  # read-only cache dir: still return the data
    return ds


def guarantee_scope(dataset) -> str | None:
    """What a recorded ε is about on ``dataset``, as one sentence for its records; None when the
    data set is neither a UCI data set (synthetic draws) nor preprocessed here.

    Parameters
    ----------
    dataset : Dataset
        A loaded data set (its ``preprocessing`` text names the preprocessing's version).

    Returns
    -------
    str or None
        For the paper's preprocessing (:data:`PREPROCESSING_VERSION`): ε treats the preprocessed
        matrix as the database; for the preprocessing from public bounds
        (:data:`PUBLIC_PREPROCESSING_VERSION`): ε covers the raw records, one replaced.
    """
    text = getattr(dataset, "preprocessing", "") or ""
    if text.startswith(PUBLIC_PREPROCESSING_VERSION):
        return (
            "epsilon covers the raw records (neighbours: one raw row replaced, values within the "
            "declared codes): each preprocessed row is a function of its raw row and the published "
            "data dictionary alone (docs/data.md)"
        )
    if text.startswith(PREPROCESSING_VERSION):
        return (
            "epsilon treats the preprocessed matrix as the database, not the raw records: the "
            "paper's preprocessing scales by statistics of the data, so one raw row can change "
            "every row (docs/data.md)"
        )
    return None
