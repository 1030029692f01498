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

import gzip
import hashlib
import io
import json
import os
import tempfile
import urllib.error
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.errors import UserError
from experiments.paths import CACHE_ENV_VAR, default_cache_dir, raw_data_dir

DATASETS = ("kddcup", "census", "localization", "insurance")

#: Bump when the parsing or scaling changes: it is part of every cache key.
PREPROCESSING_VERSION = "csspca-v1"

ENV_VAR = "PRIVPCA_DATA_DIR"
#: where raw files are downloaded to (:func:`experiments.paths.raw_data_dir`)
RAW_DIR = raw_data_dir()
#: the preprocessed cache without ``$PRIVPCA_CACHE_DIR`` (:func:`experiments.paths.default_cache_dir`)
CACHE_DIR = default_cache_dir()

#: Table 1 of the paper: n, d, k, q_F(V_k), and the last column (which is q_F(V_k)/tr(A)).
PAPER_TABLE1: dict[str, dict[str, float]] = {
    "kddcup": {"n": 494_021, "d": 116, "k": 4, "q_F": 0.6587, "ratio": 0.96},
    "census": {"n": 199_523, "d": 513, "k": 8, "q_F": 0.7321, "ratio": 0.81},
    "localization": {"n": 164_860, "d": 44, "k": 10, "q_F": 0.5672, "ratio": 0.81},
    "insurance": {"n": 9_822, "d": 150, "k": 11, "q_F": 0.5118, "ratio": 0.81},
}
PAPER_K: dict[str, int] = {name: int(v["k"]) for name, v in PAPER_TABLE1.items()}


# --------------------------------------------------------------------------------------------
# Public types
# --------------------------------------------------------------------------------------------


@dataclass
class Dataset:
    name: str
    X: np.ndarray  # float64, n x d, every row L2 norm <= 1
    y: np.ndarray | None  # raw labels, same n
    split: str
    feature_names: list[str]
    files: dict[str, str] = field(default_factory=dict)  # raw file name -> sha256 (uncompressed)
    preprocessing: str = ""

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])


class DataUnavailableError(FileNotFoundError):
    """A raw data file is missing (and could not be downloaded)."""


class DataCorruptError(ValueError):
    """A raw data file exists but cannot be read (truncated gzip, wrong format...)."""


def data_dir_from_env() -> Path | None:
    value = os.environ.get(ENV_VAR, "").strip()
    return Path(value).expanduser() if value else None


# --------------------------------------------------------------------------------------------
# Raw file layout and download locations
# --------------------------------------------------------------------------------------------

_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"

#: dataset -> (sub-directory, {split: [raw file names]}, default split or None for "depends")
RAW_FILES: dict[str, tuple[str, dict[str, list[str]]]] = {
    "kddcup": ("kddcup99", {"10percent": ["kddcup.data_10_percent"]}),
    "census": (
        "census",
        {
            "learn": ["census-income.data"],
            "test": ["census-income.test"],
            "learn+test": ["census-income.data", "census-income.test"],
        },
    ),
    "localization": ("localization", {"all": ["ConfLongDemo_JSI.txt"]}),
    "insurance": (
        "insurance",
        {
            "train+eval": ["ticdata2000.txt", "ticeval2000.txt", "tictgts2000.txt"],
            "train": ["ticdata2000.txt"],
        },
    ),
}
DEFAULT_SPLIT = {
    "kddcup": "10percent",
    "census": "learn",
    "localization": "all",
    "insurance": "train+eval",
}

#: raw file name -> candidate URLs (the first that works is used).  The original archive files are
#: downloaded, so a download is byte-identical to a local copy (same sha256, same parser).  ucimlrepo
#: is deliberately not used (and not a dependency): its fetch_ucirepo serves one pre-parsed table per
#: data set, which cannot keep census's learn/test split or insurance's three files apart, and its
#: tables could not be checked against the original files' n, d and checksums (docs/data.md).
DOWNLOAD_URLS: dict[str, list[str]] = {
    "kddcup.data_10_percent": [
        "https://kdd.ics.uci.edu/databases/kddcup99/kddcup.data_10_percent.gz",
        f"{_UCI}/kddcup99-mld/kddcup.data_10_percent.gz",
    ],
    "census-income.data": [f"{_UCI}/census-income-mld/census-income.data.gz"],
    "census-income.test": [f"{_UCI}/census-income-mld/census-income.test.gz"],
    "ConfLongDemo_JSI.txt": [f"{_UCI}/00196/ConfLongDemo_JSI.txt"],
    "ticdata2000.txt": [f"{_UCI}/tic-mld/ticdata2000.txt"],
    "ticeval2000.txt": [f"{_UCI}/tic-mld/ticeval2000.txt"],
    "tictgts2000.txt": [f"{_UCI}/tic-mld/tictgts2000.txt"],
}
#: UCI repository ids (for reference: https://archive.ics.uci.edu/dataset/<id>).
UCI_IDS = {"kddcup": 130, "census": 117, "localization": 196, "insurance": 125}


def _find_raw(directory: Path | None, sub: str, fname: str) -> Path | None:
    if directory is None:
        return None
    for base in (directory / sub, directory):
        for cand in (base / fname, base / (fname + ".gz")):
            if cand.is_file():
                return cand
    return None


def _locate(name: str, fname: str, data_dir: Path | None) -> Path | None:
    sub = RAW_FILES[name][0]
    return _find_raw(data_dir, sub, fname) or _find_raw(RAW_DIR, sub, fname)


def _download_file(url: str, dest: Path, timeout: float = 60.0) -> None:
    """Download ``url`` to ``dest`` atomically (temp file + os.replace)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=dest.name + ".", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            while chunk := resp.read(1 << 20):
                out.write(chunk)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _download(name: str, fname: str) -> Path:
    sub = RAW_FILES[name][0]
    errors = []
    for url in DOWNLOAD_URLS.get(fname, []):
        dest = RAW_DIR / sub / (fname + (".gz" if url.endswith(".gz") else ""))
        try:
            _download_file(url, dest)
            return dest
        except (OSError, urllib.error.URLError, ValueError) as exc:  # no network, 404, ...
            errors.append(f"{url}: {exc}")
    raise DataUnavailableError("; ".join(errors) or "no download URL known")


def _missing_message(name: str, missing: list[str], data_dir: Path | None, why: str = "") -> str:
    sub = RAW_FILES[name][0]
    files = ", ".join(missing)
    if data_dir is not None:
        lines = [
            f"raw data for {name!r} not found: {files} (plain or .gz) is in neither "
            f"{data_dir}/{sub}/ (the data directory: {ENV_VAR} or data_dir=) nor {RAW_DIR}/{sub}/."
        ]
    else:
        lines = [
            f"raw data for {name!r} not found: {files} (plain or .gz) is not in {RAW_DIR}/{sub}/; "
            f"set {ENV_VAR} (or data_dir=) to the folder that holds '{sub}/'."
        ]
    if name == "census" and "census-income.data" in missing:
        lines.append("census-income.test on its own is used too (the test split: docs/data.md).")
    if why:
        lines.append(f"Download failed: {why}")
    return "\n".join(lines)


def _resolve_files(name: str, split: str, data_dir: Path | None, download: bool) -> dict[str, Path]:
    wanted = RAW_FILES[name][1][split]
    found = {f: _locate(name, f, data_dir) for f in wanted}
    missing = [f for f, p in found.items() if p is None]
    why = ""
    if missing and download:
        errs = []
        for f in missing:
            try:
                found[f] = _download(name, f)
            except DataUnavailableError as exc:
                errs.append(str(exc))
        missing = [f for f, p in found.items() if p is None]
        why = "; ".join(errs)
    if missing:
        raise DataUnavailableError(_missing_message(name, missing, data_dir, why))
    return found  # type: ignore[return-value]


def _default_split(name: str, data_dir: Path | None) -> str:
    if name == "census":
        # Paper: the 199,523-row learn split. Fall back to the test split when only it is local.
        if (
            _locate(name, "census-income.data", data_dir) is None
            and _locate(name, "census-income.test", data_dir) is not None
        ):
            return "test"
    return DEFAULT_SPLIT[name]


# --------------------------------------------------------------------------------------------
# Reading raw bytes (gzip or plain), hashing
# --------------------------------------------------------------------------------------------


def _read_raw(path: Path) -> bytes:
    """Uncompressed content of ``path`` (gzip detected by magic bytes, not by name)."""
    with open(path, "rb") as fh:
        head = fh.read(2)
    if head == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as fh:
                return fh.read()
        except (EOFError, OSError, zlib.error) as exc:
            raise DataCorruptError(
                f"{path} is a corrupt or truncated gzip file ({exc}); "
                "replace it with a complete copy (plain or gzip)"
            ) from exc
    return path.read_bytes()


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
    content = _read_raw(path)
    if raw_memo is not None:
        raw_memo[path] = content
    digest = hashlib.sha256(content).hexdigest()
    memo[key] = digest
    try:
        _atomic_write_bytes(memo_path, json.dumps(memo, indent=0, sort_keys=True).encode())
    except OSError:
        pass
    return digest


def _atomic_write_bytes(dest: Path, payload: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=dest.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_csv(raw: bytes, fname: str, **kw) -> pd.DataFrame:
    try:
        return pd.read_csv(io.BytesIO(raw), header=None, **kw)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError, UnicodeDecodeError) as exc:
        raise DataCorruptError(f"cannot parse {fname}: {exc}") from exc


def _check_columns(df: pd.DataFrame, expected: int, fname: str) -> None:
    if df.shape[1] != expected:
        raise DataCorruptError(
            f"{fname}: expected {expected} columns, found {df.shape[1]} (wrong or damaged file?)"
        )
    na = df.isna().to_numpy()
    if na.any():
        bad = int(np.flatnonzero(na.any(axis=1))[0])
        got = int((~na[bad]).sum())
        raise DataCorruptError(
            f"{fname}: row {bad + 1} has {got} fields, expected {expected} "
            "(truncated, damaged or wrong file?)"
        )


# --------------------------------------------------------------------------------------------
# Per-data-set parsers: raw bytes -> (feature frame, categorical columns, labels)
# --------------------------------------------------------------------------------------------

KDD_COLUMNS = [
    "duration",
    "protocol_type",
    "service",
    "flag",
    "src_bytes",
    "dst_bytes",
    "land",
    "wrong_fragment",
    "urgent",
    "hot",
    "num_failed_logins",
    "logged_in",
    "num_compromised",
    "root_shell",
    "su_attempted",
    "num_root",
    "num_file_creations",
    "num_shells",
    "num_access_files",
    "num_outbound_cmds",
    "is_host_login",
    "is_guest_login",
    "count",
    "srv_count",
    "serror_rate",
    "srv_serror_rate",
    "rerror_rate",
    "srv_rerror_rate",
    "same_srv_rate",
    "diff_srv_rate",
    "srv_diff_host_rate",
    "dst_host_count",
    "dst_host_srv_count",
    "dst_host_same_srv_rate",
    "dst_host_diff_srv_rate",
    "dst_host_same_src_port_rate",
    "dst_host_srv_diff_host_rate",
    "dst_host_serror_rate",
    "dst_host_srv_serror_rate",
    "dst_host_rerror_rate",
    "dst_host_srv_rerror_rate",
    "label",
]
KDD_CATEGORICAL = ["protocol_type", "service", "flag"]

CENSUS_COLUMNS = [
    "age",
    "class of worker",
    "detailed industry recode",
    "detailed occupation recode",
    "education",
    "wage per hour",
    "enroll in edu inst last wk",
    "marital stat",
    "major industry code",
    "major occupation code",
    "race",
    "hispanic origin",
    "sex",
    "member of a labor union",
    "reason for unemployment",
    "full or part time employment stat",
    "capital gains",
    "capital losses",
    "dividends from stocks",
    "tax filer stat",
    "region of previous residence",
    "state of previous residence",
    "detailed household and family stat",
    "detailed household summary in household",
    "instance weight",
    "migration code-change in msa",
    "migration code-change in reg",
    "migration code-move within reg",
    "live in this house 1 year ago",
    "migration prev res in sunbelt",
    "num persons worked for employer",
    "family members under 18",
    "country of birth father",
    "country of birth mother",
    "country of birth self",
    "citizenship",
    "own business or self employed",
    "fill inc questionnaire for veteran's admin",
    "veterans benefits",
    "weeks worked in year",
    "year",
    "income",
]
#: The 7 continuous attributes of census-income.names, plus the instance weight (see docs).
CENSUS_NUMERIC = [
    "age",
    "wage per hour",
    "capital gains",
    "capital losses",
    "dividends from stocks",
    "num persons worked for employer",
    "weeks worked in year",
    "instance weight",
]
#: All 33 nominal attributes plus the income label: d = 7 + 1 + 503 + 2 = 513 on the learn split
#: (level counts from census-income.names). The label is a feature ONLY because the paper's
#: d = 513 needs it; y still carries the label. Drop columns starting with "income=" if unwanted.
CENSUS_CATEGORICAL = [c for c in CENSUS_COLUMNS if c not in CENSUS_NUMERIC]

TIC_COLUMNS = (
    "MOSTYPE MAANTHUI MGEMOMV MGEMLEEF MOSHOOFD MGODRK MGODPR MGODOV MGODGE MRELGE MRELSA "
    "MRELOV MFALLEEN MFGEKIND MFWEKIND MOPLHOOG MOPLMIDD MOPLLAAG MBERHOOG MBERZELF MBERBOER "
    "MBERMIDD MBERARBG MBERARBO MSKA MSKB1 MSKB2 MSKC MSKD MHHUUR MHKOOP MAUT1 MAUT2 MAUT0 "
    "MZFONDS MZPART MINKM30 MINK3045 MINK4575 MINK7512 MINK123M MINKGEM MKOOPKLA PWAPART "
    "PWABEDR PWALAND PPERSAUT PBESAUT PMOTSCO PVRAAUT PAANHANG PTRACTOR PWERKT PBROM PLEVEN "
    "PPERSONG PGEZONG PWAOREG PBRAND PZEILPL PPLEZIER PFIETS PINBOED PBYSTAND AWAPART AWABEDR "
    "AWALAND APERSAUT ABESAUT AMOTSCO AVRAAUT AAANHANG ATRACTOR AWERKT ABROM ALEVEN APERSONG "
    "AGEZONG AWAOREG ABRAND AZEILPL APLEZIER AFIETS AINBOED ABYSTAND CARAVAN"
).split()
assert len(TIC_COLUMNS) == 86
#: The five socio-demographic code columns 1-5 are one-hot encoded with the levels observed in
#: ticdata2000 (40 + 9 + 5 + 6 + 10 = 70 indicators) -> 80 + 70 = 150 = the paper's d.
TIC_CATEGORICAL = ["MOSTYPE", "MAANTHUI", "MGEMOMV", "MGEMLEEF", "MOSHOOFD"]

LOC_COLUMNS = ["sequence", "tag", "timestamp", "date", "x", "y", "z", "activity"]
LOC_NUMERIC = ["timestamp", "x", "y", "z"]
#: 25 sequences + 4 tags + 11 activities + 4 numeric = 44 = the paper's d (activity is also y).
LOC_CATEGORICAL = ["sequence", "tag", "activity"]


def _one_hot(
    df: pd.DataFrame,
    numeric: list[str],
    categorical: list[str],
    levels: dict[str, list] | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Numeric columns as float, then one indicator column per level of each categorical."""
    blocks = [df[numeric].to_numpy(dtype=np.float64)] if numeric else []
    names = list(numeric)
    for col in categorical:
        values = df[col]
        lev = levels[col] if levels and col in levels else sorted(values.unique().tolist())
        codes = pd.Index(lev).get_indexer(values)  # -1 for levels unseen in `lev`
        block = np.zeros((len(df), len(lev)))
        ok = codes >= 0
        block[np.flatnonzero(ok), codes[ok]] = 1.0
        blocks.append(block)
        names += [f"{col}={v}" for v in lev]
    return np.hstack(blocks), names


def _parse_kddcup(raw: dict[str, bytes], split: str):
    fname = "kddcup.data_10_percent"
    df = _read_csv(
        raw[fname], fname, names=KDD_COLUMNS, dtype={c: str for c in KDD_CATEGORICAL + ["label"]}
    )
    _check_columns(df, 42, fname)
    numeric = [c for c in KDD_COLUMNS if c not in KDD_CATEGORICAL + ["label"]]
    M, names = _one_hot(df, numeric, KDD_CATEGORICAL)
    return M, names, df["label"].to_numpy(dtype=str)


def _parse_census_file(raw: bytes, fname: str) -> pd.DataFrame:
    df = _read_csv(
        raw,
        fname,
        names=CENSUS_COLUMNS,
        dtype=str,
        skipinitialspace=True,
        keep_default_na=False,
        na_values=[""],
    )
    _check_columns(df, 42, fname)
    for c in CENSUS_COLUMNS:
        df[c] = df[c].str.strip()
    df["income"] = df["income"].str.rstrip(".")
    try:
        df[CENSUS_NUMERIC] = df[CENSUS_NUMERIC].astype(np.float64)
    except ValueError as exc:
        raise DataCorruptError(
            f"{fname}: non-numeric value in a continuous column ({exc})"
        ) from exc
    return df


def _parse_census(raw: dict[str, bytes], split: str):
    frames = [_parse_census_file(raw[f], f) for f in RAW_FILES["census"][1][split]]
    df = pd.concat(frames, ignore_index=True)
    M, names = _one_hot(df, CENSUS_NUMERIC, CENSUS_CATEGORICAL)
    return M, names, df["income"].to_numpy(dtype=str)


def _parse_localization(raw: dict[str, bytes], split: str):
    fname = "ConfLongDemo_JSI.txt"
    df = _read_csv(
        raw[fname],
        fname,
        names=LOC_COLUMNS,
        dtype={"sequence": str, "tag": str, "date": str, "activity": str},
    )
    _check_columns(df, 8, fname)
    try:
        df[LOC_NUMERIC] = df[LOC_NUMERIC].astype(np.float64)
    except ValueError as exc:
        raise DataCorruptError(f"{fname}: non-numeric timestamp/x/y/z ({exc})") from exc
    M, names = _one_hot(df, LOC_NUMERIC, LOC_CATEGORICAL)
    return M, names, df["activity"].to_numpy(dtype=str)


def _read_insurance(
    raw: dict[str, bytes], split: str
) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """The 85 attributes of every row of ``split`` (and of ticdata2000 alone), and the labels."""
    train = _read_csv(raw["ticdata2000.txt"], "ticdata2000.txt", sep="\t", names=TIC_COLUMNS)
    _check_columns(train, 86, "ticdata2000.txt")
    frames, labels = [train[TIC_COLUMNS[:85]]], [train["CARAVAN"].to_numpy()]
    if split == "train+eval":
        ev = _read_csv(raw["ticeval2000.txt"], "ticeval2000.txt", sep="\t", names=TIC_COLUMNS[:85])
        _check_columns(ev, 85, "ticeval2000.txt")
        tg = _read_csv(raw["tictgts2000.txt"], "tictgts2000.txt", sep="\t", names=["CARAVAN"])
        _check_columns(tg, 1, "tictgts2000.txt")
        if len(tg) != len(ev):
            raise DataCorruptError(
                f"tictgts2000.txt has {len(tg)} rows but ticeval2000.txt has {len(ev)}"
            )
        frames.append(ev)
        labels.append(tg["CARAVAN"].to_numpy())
    df = pd.concat(frames, ignore_index=True)
    return df, train, np.concatenate(labels).astype(np.int64)


def _parse_insurance(raw: dict[str, bytes], split: str):
    df, train, y = _read_insurance(raw, split)
    levels = {c: sorted(train[c].unique().tolist()) for c in TIC_CATEGORICAL}
    numeric = [c for c in TIC_COLUMNS[:85] if c not in TIC_CATEGORICAL]
    M, names = _one_hot(df, numeric, TIC_CATEGORICAL, levels)
    return M, names, y


# --------------------------------------------------------------------------------------------
# Preprocessing from public bounds (insurance)
# --------------------------------------------------------------------------------------------

#: Version of the preprocessing from public bounds: part of its cache key and of its records'
#: ``preprocessing`` text.
PUBLIC_PREPROCESSING_VERSION = "public-bounds-v1"

#: The declared codes of the 85 insurance attributes, as ``(first, last, low, high, domain)``: the
#: attributes ``first`` to ``last`` (in :data:`TIC_COLUMNS` order) take the integer codes
#: ``low..high``.  Source: the data set's published dictionary, "CoIL Challenge 2000: The Insurance
#: Company Case" (P. van der Putten and M. van Someren, eds., Sentient Machine Research, 2000; the
#: ``TicDataDescr.txt`` / ``dictionary.txt`` of the UCI Insurance Company Benchmark (COIL 2000),
#: https://archive.ics.uci.edu/dataset/125), whose table gives each attribute's domain as a range or
#: as one of the code lists L0-L4.  ``domain`` quotes it.  In that table "..." repeats the domain
#: above it, down to the next attribute that states one.  Two bounds are read, not quoted:
#:
#: * MINKGEM and MKOOPKLA (42-43) state no domain of their own; they follow "see L3 / ..." of
#:   attributes 6-41 and precede 44's "see L4", so the "..." reading gives 0-9 (L3's codes).  They are
#:   classes, not percentages, but a single-digit code is all the dictionary's table allows there.
#: * The numbers of policies (65-85) are declared "1 - 12" (then "..."); a customer without such a
#:   policy has 0, which the dictionary does not list but which its contribution code L4 "0: f 0"
#:   (no contribution) implies, so the codes are 0-12.
#:
#: The five code lists L0 (customer subtype, 41 codes), L1 (age class, 6), L2 (main type, 10) and the
#: ranges of MAANTHUI (1-10) and MGEMOMV (1-6) are the one-hot attributes of the paper
#: (:data:`TIC_CATEGORICAL`), here with every declared level.
TIC_DICTIONARY: tuple[tuple[str, str, int, int, str], ...] = (
    ("MOSTYPE", "MOSTYPE", 1, 41, "Customer Subtype, see L0 (codes 1-41)"),
    ("MAANTHUI", "MAANTHUI", 1, 10, "Number of houses 1 - 10"),
    ("MGEMOMV", "MGEMOMV", 1, 6, "Avg size household 1 - 6"),
    ("MGEMLEEF", "MGEMLEEF", 1, 6, "Avg age, see L1 (codes 1-6: 20-30 ... 70-80 years)"),
    ("MOSHOOFD", "MOSHOOFD", 1, 10, "Customer main type, see L2 (codes 1-10)"),
    ("MGODRK", "MINK123M", 0, 9, "see L3 (0: 0%, 1: 1-10%, ..., 8: 89-99%, 9: 100%), then '...'"),
    ("MINKGEM", "MKOOPKLA", 0, 9, "no domain stated: read as the '...' of L3 above (0-9)"),
    ("PWAPART", "PBYSTAND", 0, 9, "Contribution, see L4 (0: f 0, ..., 9: f 20.000 - ?)"),
    ("AWAPART", "ABYSTAND", 0, 12, "Number of policies 1 - 12, then '...'; 0 = none"),
)


def tic_declared_codes() -> dict[str, tuple[int, int]]:
    """Each of the 85 insurance attributes -> its declared ``(low, high)`` codes (:data:`TIC_DICTIONARY`)."""
    out: dict[str, tuple[int, int]] = {}
    for first, last, low, high, _ in TIC_DICTIONARY:
        i, j = TIC_COLUMNS.index(first), TIC_COLUMNS.index(last)
        out.update({c: (low, high) for c in TIC_COLUMNS[i : j + 1]})
    return out


_TIC_DECLARED = tic_declared_codes()
assert list(_TIC_DECLARED) == TIC_COLUMNS[:85]

#: The public bound on a row's L2 norm before the final division: every numeric attribute divided
#: by its declared maximum lies in [0, 1], and each one-hot attribute has exactly one indicator
#: equal to 1, so each of the 85 attributes adds at most 1 to the squared norm.
TIC_PUBLIC_ROW_BOUND = float(np.sqrt(85.0))


def insurance_public_matrix(df: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """The insurance rows preprocessed from public bounds alone: each row a function of itself.

    1. Every value must be one of its attribute's declared codes (:data:`TIC_DICTIONARY`); any other
       value is refused with one line naming the attribute and its declared codes (not the value,
       nor how many rows: messages name no number computed from the data).
    2. The attributes of :data:`TIC_CATEGORICAL` become one indicator per declared level (levels no
       row takes give zero columns, which are kept: d = 80 + 41 + 10 + 6 + 6 + 10 = 153 for any
       data); every other attribute is divided by its declared maximum.
    3. Every row is divided by :data:`TIC_PUBLIC_ROW_BOUND`, so its norm is at most 1 (a row whose
       norm rounds above 1 is divided by its own norm: still a function of the row alone).

    Parameters
    ----------
    df : pandas.DataFrame
        The 85 attributes (:data:`TIC_COLUMNS` without CARAVAN), one row per customer.

    Returns
    -------
    X : numpy.ndarray
        n x 153 float64, every row of L2 norm at most 1.
    names : list of str
        The column names (numeric attributes, then ``"<attribute>=<level>"``).

    Raises
    ------
    DataCorruptError
        A value outside its attribute's declared codes (or not an integer).

    Notes
    -----
    No statistic of the data enters: two data sets that differ in one raw row give matrices that
    differ in that row alone, and have the same d.  A differential-privacy guarantee for the
    matrix then holds for the raw records under replace-one-row neighbours.  Refusing (rather than
    clipping) an undeclared value: such a value means the file is not coded as documented, and no
    clipping of a categorical code is meaningful; the guarantee's domain is the declared codes.
    """
    for col in TIC_COLUMNS[:85]:
        low, high = _TIC_DECLARED[col]
        values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=np.float64)
        ok = np.isfinite(values) & (values == np.round(values)) & (values >= low) & (values <= high)
        if not ok.all():
            raise DataCorruptError(
                f"insurance attribute {col} holds a value outside its declared codes {low}-{high} "
                "(the CoIL 2000 dictionary); the public preprocessing refuses it"
            )
    numeric = [c for c in TIC_COLUMNS[:85] if c not in TIC_CATEGORICAL]
    levels = {c: list(range(_TIC_DECLARED[c][0], _TIC_DECLARED[c][1] + 1)) for c in TIC_CATEGORICAL}
    M, names = _one_hot(df.astype(np.int64), numeric, TIC_CATEGORICAL, levels)
    M[:, : len(numeric)] /= np.array([float(_TIC_DECLARED[c][1]) for c in numeric])
    M /= TIC_PUBLIC_ROW_BOUND
    norms = np.sqrt(np.einsum("ij,ij->i", M, M))
    over = norms > 1.0
    if over.any():
        M[over] /= norms[over, None]
    return np.ascontiguousarray(M), names


def _parse_insurance_public(raw: dict[str, bytes], split: str):
    df, _, y = _read_insurance(raw, split)
    M, names = insurance_public_matrix(df)
    return M, names, y


#: data set -> the name of its variant preprocessed from public bounds
PUBLIC_VARIANTS = {"insurance": "insurance_public"}
#: the preprocessings :func:`load_dataset` offers
PREPROCESSINGS = ("paper", "public")


_PREPROCESSING_TEXT = {
    "kddcup": "one-hot protocol_type/service/flag; label excluded",
    "census": "one-hot all 33 nominal attributes ('?' = own level) and the income label; "
    "7 continuous + instance weight numeric",
    "localization": "one-hot sequence/tag/activity; timestamp,x,y,z numeric; date dropped",
    "insurance": "ticdata2000[:85]+ticeval2000; one-hot MOSTYPE,MAANTHUI,MGEMOMV,MGEMLEEF,"
    "MOSHOOFD (levels of ticdata2000); CARAVAN excluded",
}
_PUBLIC_TEXT = {
    "insurance": "ticdata2000[:85]+ticeval2000; values checked against the CoIL 2000 dictionary's "
    "declared codes; one-hot MOSTYPE,MAANTHUI,MGEMOMV,MGEMLEEF,MOSHOOFD with every declared level; "
    "other attributes / declared maximum; rows / sqrt(85); CARAVAN excluded",
}


def scale_rows_and_columns(M: np.ndarray, names: list[str]) -> tuple[np.ndarray, list[str]]:
    """Drop constant columns, divide columns by max |entry|, then divide by the max row norm."""
    M = np.asarray(M, dtype=np.float64)
    if M.shape[0] == 0:
        raise DataCorruptError("no rows")
    keep = (M.max(axis=0) != M.min(axis=0)) if M.shape[0] > 1 else np.abs(M).max(axis=0) > 0
    M = M[:, keep]
    names = [nm for nm, k in zip(names, keep) if k]
    colmax = np.abs(M).max(axis=0)
    colmax[colmax == 0] = 1.0
    M = M / colmax
    norms = np.sqrt(np.einsum("ij,ij->i", M, M))
    top = norms.max()
    if top > 0:
        M = M / top
    # Guard against round-off: no row may exceed norm 1.
    norms = np.sqrt(np.einsum("ij,ij->i", M, M))
    over = norms > 1.0
    if over.any():
        M[over] /= norms[over, None]
    return np.ascontiguousarray(M), names


def _parser(name: str):
    return globals()[f"_parse_{name}"]  # looked up at call time so tests can monkeypatch


# --------------------------------------------------------------------------------------------
# Cache
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


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

    raw = {f: raw_memo[p] if p in raw_memo else _read_raw(p) for f, p in paths.items()}
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
