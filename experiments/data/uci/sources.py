"""Where the raw UCI files are found: ``data_dir`` or ``$PRIVPCA_DATA_DIR``, earlier downloads
(:data:`RAW_DIR`), or the UCI archive; the files of each data set and split, reading them (gzip or
plain), and the one-line message for a file that is missing."""

from __future__ import annotations

import gzip
import os
import tempfile
import urllib.error
import urllib.request
import zlib
from pathlib import Path

from experiments.data.uci.dataset import DataCorruptError, DataUnavailableError
from experiments.paths import raw_data_dir

ENV_VAR = "PRIVPCA_DATA_DIR"


#: where raw files are downloaded to (:func:`experiments.paths.raw_data_dir`)
RAW_DIR = raw_data_dir()


def data_dir_from_env() -> Path | None:
    value = os.environ.get(ENV_VAR, "").strip()
    return Path(value).expanduser() if value else None


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
