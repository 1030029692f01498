import json
import multiprocessing as mp
import os

import numpy as np
import pytest

from experiments.store.store import ResultStore, record_id, to_json


def _rec(i, **extra):
    return {"run_key": {"i": i}, "value": float(i), **extra}


def test_write_read_roundtrip(tmp_path):
    store = ResultStore(tmp_path)
    rid, written = store.write(_rec(1, arr=np.arange(3), inf=float("inf"), nan=float("nan")))
    assert written and rid == record_id({"i": 1})
    df = store.load()
    assert len(df) == 1 and df.loc[0, "value"] == 1.0
    assert df.loc[0, "inf"] == "inf" and df.loc[0, "nan"] is None


def test_same_run_key_is_never_duplicated_nor_overwritten(tmp_path):
    store = ResultStore(tmp_path)
    store.write(_rec(1, value=1.0))
    rid, written = store.write(_rec(1, value=2.0))
    assert not written
    assert store.load()["value"].tolist() == [1.0]


def test_interrupted_write_leaves_no_record(tmp_path, monkeypatch):
    store = ResultStore(tmp_path)

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        store.write(_rec(1))
    monkeypatch.undo()
    assert store.load().empty
    assert not list(store.records_dir.glob("*"))  # temp file removed too
    store.write(_rec(1))
    assert len(store.load()) == 1


def test_readers_ignore_temporaries(tmp_path):
    store = ResultStore(tmp_path)
    store.write(_rec(1))
    (store.records_dir / ".tmp-abc.json").write_text('{"half":')
    assert len(store.load()) == 1
    assert store.clean_temporaries() == 1


def test_stale_temporaries_of_dead_writers_are_removed_and_live_ones_kept(tmp_path):
    """A writer killed mid-write leaves .tmp-<host>-<pid>-*.part: removed once that pid is dead; the
    temporaries of a live process (this one) and of another host are kept (parallel jobs, shared disks)."""
    import subprocess
    import sys

    from experiments.store.store import _host_tag

    store = ResultStore(tmp_path)
    store.write(_rec(1))
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_pid = int(dead.stdout)  # that process has exited
    host = _host_tag()
    stale = store.records_dir / f".tmp-{host}-{dead_pid}-x1.part"
    live = store.records_dir / f".tmp-{host}-{os.getpid()}-x2.part"
    other_host = store.records_dir / f".tmp-otherhost-{dead_pid}-x3.part"
    for p in (stale, live, other_host):
        p.write_text('{"half":')
    assert store.clean_stale_temporaries() == 1
    assert not stale.exists() and live.exists() and other_host.exists()
    assert len(store.load()) == 1
    # the store's own temporaries carry this host and pid
    name = store.records_dir.glob(".tmp-*")
    assert all(p.name.startswith((f".tmp-{host}-", ".tmp-otherhost-")) for p in name)


def _writer(args):
    root, i = args
    return ResultStore(root).write({"run_key": {"i": i % 10}, "writer": i})[1]


def test_parallel_writers_do_not_clobber(tmp_path):
    with mp.get_context("spawn").Pool(2) as pool:
        written = pool.map(_writer, [(str(tmp_path), i) for i in range(40)])
    assert sum(written) == 10
    df = ResultStore(tmp_path).load()
    assert len(df) == 10 and df["run_key.i"].nunique() == 10
    for p in ResultStore(tmp_path).records_dir.glob("*.json"):
        json.loads(p.read_text())  # every file is complete JSON


def test_to_json_is_one_line():
    assert "\n" not in to_json({"a": {"b": [1, 2]}, "c": "x\ny"})


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # cut short
        lambda text: "",  # emptied
        lambda text: "{}",  # not a record
        lambda text: text.replace('"record_id": "', '"record_id": "0'),  # another id than its name
    ],
)
def test_a_damaged_record_is_skipped_by_readers_and_recomputed_by_its_run(tmp_path, damage, caplog):
    """Readers skip a damaged file and name it in one log line; ``has`` sets it aside (so a resumed
    run computes the record again, and writing it then succeeds); ``get`` says it is damaged."""
    store = ResultStore(tmp_path)
    keys = [{"experiment": "x", "restart": r} for r in range(3)]
    for key in keys:
        store.write({"run_key": key, "q_F": 0.5})
    rid = record_id(keys[1])
    path = store.path(rid)
    path.write_text(damage(path.read_text()))
    zz = store.records_dir / "zz.json"
    zz.write_text("not json")
    with caplog.at_level("WARNING"):
        assert len(store.load()) == 2
    assert "skipped 2 damaged record file(s)" in caplog.text and rid in caplog.text
    with pytest.raises(KeyError, match="damaged"):
        store.get(rid)
    with pytest.raises(KeyError, match="not a record id"):
        store.get("../../elsewhere/records/x")
    assert not store.has(keys[1]) and not path.exists()
    assert len(list((store.records_dir / ".damaged").iterdir())) == 1
    assert store.write({"run_key": keys[1], "q_F": 0.5}) == (rid, True)
    assert store.has(keys[1]) and store.get(rid)["q_F"] == 0.5


def test_a_record_file_is_readable_by_its_owner_only(tmp_path):
    """A record holds exact statistics of the data (diagnostics_not_private): 0600 whatever the umask,
    not the world-readable 0644 that open() gives under the usual umask 022."""
    old = os.umask(0o022)
    try:
        for umask in (0o022, 0o000, 0o277):
            os.umask(umask)
            store = ResultStore(tmp_path / oct(umask))
            rid, _ = store.write({"run_key": {"x": 1}})
            assert store.path(rid).stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)


@pytest.mark.parametrize("where", ["mkstemp", "write", "fsync", "link"])
def test_a_full_disk_raises_one_line_and_leaves_no_file(tmp_path, monkeypatch, where):
    """ENOSPC at each step of a write (the temporary file, its data, its flush, its link): one
    StoreWriteError of one line naming the record, the store and the system's reason (an OSError,
    errno kept), and no file left, neither the record nor its temporary.  The store then takes it."""
    import errno
    import tempfile

    from experiments.errors import StoreWriteError
    from experiments.store import store as results_module

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    store = ResultStore(tmp_path)
    store.write(_rec(0))
    if where == "mkstemp":
        monkeypatch.setattr(tempfile, "mkstemp", full)
    elif where == "write":
        real_fdopen = os.fdopen

        def fdopen(fd, mode):
            fh = real_fdopen(fd, mode)
            fh.write = full
            return fh

        monkeypatch.setattr(results_module.os, "fdopen", fdopen)
    else:
        monkeypatch.setattr(results_module.os, where, full)
    with pytest.raises(StoreWriteError) as err:
        store.write(_rec(1))
    monkeypatch.undo()
    rid = record_id({"i": 1})
    text = str(err.value)
    assert err.value.errno == errno.ENOSPC and isinstance(err.value, OSError)
    assert "\n" not in text and rid in text and str(store.records_dir) in text
    assert "No space left on device" in text and "run the same command again" in text
    assert sorted(p.name for p in store.records_dir.iterdir()) == [f"{record_id({'i': 0})}.json"]
    assert store.write(_rec(1)) == (rid, True)
