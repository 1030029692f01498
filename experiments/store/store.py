"""Append-only, crash-safe results store: one JSON file per record.

Layout: ``<root>/records/<record_id>.json``.  ``record_id`` is a hash of the
record's *run key* (experiment, dataset, mechanism, parameters, seed, subset,
restart, ...), so re-running a sweep finds the records it already wrote and
skips them, and no record is ever written twice.

Atomicity: a record is written to a temporary file in the same directory,
flushed and fsync'ed, then *hard-linked* to its final name.  ``os.link`` fails
if the name exists, so two parallel jobs writing the same record cannot
clobber each other, and a reader never sees a half-written file (an
interrupted write leaves only a ``.tmp-<host>-<pid>-*.part`` file, which readers ignore and which
:meth:`ResultStore.clean_stale_temporaries` removes once its writer is dead — the runners call it when
they start, so a resumed sweep leaves no debris).
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import logging
import math
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from experiments.errors import StoreWriteError


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        if math.isnan(f):
            return None
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, Path):
        return str(obj)
    return obj


def to_json(record: dict) -> str:
    """One-line JSON of a record (NaN -> null, inf -> "inf")."""
    return json.dumps(_jsonable(record), sort_keys=True, allow_nan=False)


def record_id(run_key: dict) -> str:
    """Stable id of a run: sha256 of its canonical JSON run key (first 20 hex digits)."""
    return hashlib.sha256(to_json(run_key).encode()).hexdigest()[:20]


@functools.lru_cache(maxsize=1)
def _host_tag() -> str:
    """This host's name, reduced to characters safe in a file name (looked up once per process)."""
    import socket

    return "".join(c if c.isalnum() else "_" for c in socket.gethostname())[:40] or "host"


def _temporary_prefix() -> str:
    return f".tmp-{_host_tag()}-{os.getpid()}-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


log = logging.getLogger(__name__)

#: what a record id looks like (:func:`record_id`: the first 20 hex digits of a sha256)
RECORD_ID_PATTERN = re.compile(r"[0-9a-f]{20}")


def _read_record(path: Path) -> dict | None:
    """The record stored in ``path``, or None when the file is not a complete record (cut short,
    emptied or edited: not JSON, not an object, or without the run key and the id its name says)."""
    try:
        with open(path) as fh:
            record = json.load(fh)
    except (OSError, ValueError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return None
    if not isinstance(record, dict) or not isinstance(record.get("run_key"), dict):
        return None
    return record if record.get("record_id") == path.stem else None


def _store_write_error(rid: str, records_dir: Path, exc: OSError) -> StoreWriteError:
    """The one-line error for a record the system would not let us write."""
    err = StoreWriteError(
        f"record {rid} could not be written to {records_dir} ({exc.strerror or exc}); no partial "
        "record was left: make room (or make the store writable) and run the same command again, "
        "which resumes"
    )
    err.errno = exc.errno
    return err


class ResultStore:
    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.records_dir = self.root / "records"

    def path(self, rid: str) -> Path:
        return self.records_dir / f"{rid}.json"

    def check_writable(self) -> None:
        """Raise :class:`~experiments.errors.StoreWriteError` unless records can be written.

        Writes a temporary file, removed at once, into ``records/`` or, while ``records/`` does
        not exist yet, into its nearest existing parent (the run creates what is missing when it
        stores its first record; nothing is created here, so a run refused later for its settings
        leaves no folder behind).  A run calls this before its work starts, so a store that would
        refuse its records (``records/`` read-only, or a file) stops it before anything is computed.

        Raises
        ------
        StoreWriteError
            One line naming ``records/`` and the system's reason; ``errno`` is the system's.
        """
        try:
            probe = self.records_dir
            while not probe.exists() and probe != probe.parent:
                probe = probe.parent
            if not probe.is_dir():  # records/ or a parent of it is a file
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
            fd, tmp = tempfile.mkstemp(prefix=_temporary_prefix(), suffix=".part", dir=probe)
            os.close(fd)
            os.unlink(tmp)
        except OSError as exc:
            err = StoreWriteError(
                f"records cannot be written to {self.records_dir} ({exc.strerror or exc}); nothing "
                "was computed: make it writable, or choose another results_dir"
            )
            err.errno = exc.errno
            raise err from None

    def has(self, run_key: dict) -> bool:
        """Whether the record of ``run_key`` is stored.  A damaged file under its name is moved to
        ``records/.damaged/`` (said in one log line) and counts as absent, so the run computes it again."""
        path = self.path(record_id(run_key))
        if not path.exists():
            return False
        if _read_record(path) is not None:
            return True
        self._set_aside(path)
        return False

    def _set_aside(self, path: Path) -> None:
        aside = self.records_dir / ".damaged"
        aside.mkdir(exist_ok=True)
        target = aside / f"{path.stem}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.json"
        try:
            os.replace(path, target)
        except FileNotFoundError:  # another process set it aside first
            return
        log.warning(
            "record file %s was damaged (not a complete record): moved to %s, computed again",
            path.name,
            target,
        )

    def write(self, record: dict) -> tuple[str, bool]:
        """Write ``record`` (which must contain ``run_key``); return ``(record_id, written)``.

        ``written`` is False when a record with the same run key already exists
        (it is left untouched).  The file is readable and writable by its owner only (0600): a
        record holds exact statistics of the data (``diagnostics_not_private``, the evaluation
        against the raw data).  A write the system refuses (a full disk, a read-only file system)
        raises :class:`~experiments.errors.StoreWriteError`, with no partial file left.
        """
        if "run_key" not in record:
            raise ValueError("a record needs a 'run_key' dict")
        rid = record_id(record["run_key"])
        record = dict(record, record_id=rid)
        text = to_json(record) + "\n"
        final = self.path(rid)
        try:
            self.records_dir.mkdir(parents=True, exist_ok=True)
            if final.exists():
                return rid, False
            fd, tmp = tempfile.mkstemp(
                prefix=_temporary_prefix(), suffix=".part", dir=self.records_dir
            )
        except OSError as exc:
            raise _store_write_error(rid, self.records_dir, exc) from None
        try:
            with os.fdopen(fd, "w") as fh:
                os.fchmod(fh.fileno(), 0o600)  # owner only, whatever the umask
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(tmp, final)
                written = True
            except FileExistsError:
                written = False
        except OSError as exc:
            raise _store_write_error(rid, self.records_dir, exc) from None
        finally:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        return rid, written

    def get(self, rid: str) -> dict:
        """The record with id ``rid`` (KeyError naming the store when it is absent, damaged, or
        ``rid`` is not a record id)."""
        if not RECORD_ID_PATTERN.fullmatch(str(rid)):
            raise KeyError(f"{rid!r} is not a record id (20 hexadecimal digits)")
        path = self.path(rid)
        if not path.exists():
            raise KeyError(f"no record {rid!r} in {self.records_dir}")
        record = _read_record(path)
        if record is None:
            raise KeyError(
                f"record file {path} is damaged (not a complete record): run its command again to "
                "compute it anew"
            )
        return record

    def iter_records(self) -> Iterable[dict]:
        """Every complete record of the store; damaged files are skipped and named in one log line."""
        if not self.records_dir.exists():
            return
        damaged = []
        for p in sorted(self.records_dir.glob("*.json")):
            if p.name.startswith(".tmp-"):
                continue
            record = _read_record(p)
            if record is None:
                damaged.append(p.name)
            else:
                yield record
        if damaged:
            log.warning(
                "skipped %d damaged record file(s) in %s (%s): running their commands again computes them",
                len(damaged),
                self.records_dir,
                ", ".join(damaged[:5]) + (", ..." if len(damaged) > 5 else ""),
            )

    def load(self, **filters: Any) -> pd.DataFrame:
        """All records as one DataFrame (nested dicts flattened with '.'), optionally filtered by equality."""
        rows = list(self.iter_records())
        if not rows:
            return pd.DataFrame()
        df = pd.json_normalize(rows)
        for col, val in filters.items():
            if col not in df.columns:
                return df.iloc[0:0]
            df = df[df[col] == val]
        return df.reset_index(drop=True)

    def load_ids(self, ids: Iterable[str]) -> pd.DataFrame:
        """The stored records among ``ids`` (in that order, each once; absent or damaged ones left
        out) as one DataFrame, flattened like :meth:`load`: what one run's summary is made of,
        whatever else the store holds."""
        rows = [r for r in map(_read_record, map(self.path, dict.fromkeys(ids))) if r is not None]
        return pd.json_normalize(rows) if rows else pd.DataFrame()

    def clean_stale_temporaries(self) -> int:
        """Remove the temporaries left by writers that died on this host (a worker killed mid-write).

        A temporary is named ``.tmp-<host>-<pid>-*.part``; it is stale when its host is this one and no
        process ``pid`` exists.  Temporaries of live processes and of other hosts (a shared file system)
        are left alone, so this is safe while other jobs write to the same store.
        """
        n = 0
        if not self.records_dir.exists():
            return 0
        host = _host_tag()
        for p in self.records_dir.glob(f".tmp-{host}-*.part"):
            try:
                pid = int(p.name[len(f".tmp-{host}-") :].split("-", 1)[0])
            except ValueError:
                continue
            if not _pid_alive(pid):
                p.unlink(missing_ok=True)
                n += 1
        return n

    def clean_temporaries(self) -> int:
        n = 0
        if self.records_dir.exists():
            for p in self.records_dir.glob(".tmp-*"):
                p.unlink(missing_ok=True)
                n += 1
        return n
