"""Lossless sweeps under faults: worker crashes under the joblib launcher, failing writes, SIGKILL."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from experiments.runs.jmlr import run_utility_vs_n
from experiments.store import store as results_module
from experiments.store.store import ResultStore, _host_tag
from tests.hydra_helpers import compose_cfg

REPO = Path(__file__).resolve().parents[2]
SWEEP = [
    "experiment=utility_vs_n",
    "mechanism=mod_sulq",
    "dataset=gaussian10",
    "scale=smoke",
    "scale.restarts.default=8",
    "experiment.n_grid=[1000,3000]",
    "quiet=true",
]


def _snapshot(records: Path) -> dict[str, str]:
    """Every complete record file (temporaries are named .tmp-*.part and are not records)."""
    return {p.name: p.read_text() for p in records.glob("*.json") if not p.name.startswith(".tmp-")}


def _check_complete(root: Path, expected: int, before: dict[str, str]):
    records = root / "records"
    df = ResultStore(root).load()
    assert len(df) == expected
    assert df.record_id.nunique() == expected  # no duplicates
    assert len(df.drop_duplicates(["seed", "n", "subset", "restart"])) == expected
    for name, text in before.items():  # nothing written earlier changed
        assert (records / name).read_text() == text
    for p in records.glob("*.json"):  # every file complete JSON
        json.loads(p.read_text())
    assert not list(records.glob(".tmp-*"))


@pytest.mark.slow
def test_worker_crash_under_joblib_launcher_then_resume(tmp_path):
    crash_file = tmp_path / "calls"
    env = dict(
        os.environ,
        PRIVPCA_TEST_CRASH_FILE=str(crash_file),
        PRIVPCA_TEST_CRASH_AT="11",
        PYTHONPATH=str(REPO),
    )
    base = [
        sys.executable,
        str(REPO / "run.py"),
        "-m",
        "hydra/launcher=local_parallel",
        f"results_dir={tmp_path}",
        "seed=1,2",
        *SWEEP,
    ]
    crashed = subprocess.run(
        base + ["mechanism.fn._target_=tests.faulty.crashing_mod_sulq"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert crashed.returncode != 0  # the sweep failed ...
    assert len(crash_file.read_text()) >= 11  # ... because the 11th call killed its worker
    before = _snapshot(tmp_path / "records")
    assert 0 < len(before) < 32
    # what a worker killed mid-write leaves (here deterministically): the resumed sweep removes it
    dead_pid = int(
        subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    (tmp_path / "records" / f".tmp-{_host_tag()}-{dead_pid}-planted.part").write_text('{"half":')
    resumed = subprocess.run(base, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    _check_complete(tmp_path, 2 * 2 * 8, before)  # 2 seeds x 2 sizes x 8 restarts


def test_failing_write_mid_sweep_then_resume(tmp_path, monkeypatch):
    """A full disk: the 6th record's write fails (os.link raises ENOSPC). The sweep stops with the
    error, leaves no temporary file, and the same command completes it."""
    cfg = compose_cfg(SWEEP + [f"results_dir={tmp_path}"])
    real_link = os.link
    calls = {"n": 0}

    def flaky_link(src, dst):
        calls["n"] += 1
        if calls["n"] == 6:
            raise OSError(28, "No space left on device")
        return real_link(src, dst)

    monkeypatch.setattr(results_module.os, "link", flaky_link)
    with pytest.raises(OSError, match="No space"):
        run_utility_vs_n(cfg)
    monkeypatch.undo()
    before = _snapshot(tmp_path / "records")
    assert len(before) == 5
    assert not list((tmp_path / "records").glob(".tmp-*"))
    run_utility_vs_n(cfg)
    _check_complete(tmp_path, 2 * 8, before)


@pytest.mark.slow
@pytest.mark.parametrize("kill_after", [0.8, 1.6, 2.4])
def test_sigkill_at_random_points_then_resume(tmp_path, kill_after):
    """SIGKILL at several wall-clock points (during writes, mechanism runs or start-up): the re-run
    completes the sweep with nothing lost, duplicated or corrupted."""
    args = [
        sys.executable,
        str(REPO / "run.py"),
        f"results_dir={tmp_path}",
        *SWEEP,
        "scale.restarts.default=30",
    ]
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(kill_after)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    records = tmp_path / "records"
    before = _snapshot(records) if records.exists() else {}
    subprocess.run(args, cwd=REPO, check=True, capture_output=True, timeout=600)
    ResultStore(tmp_path).clean_temporaries()  # a kill during a write may leave one .tmp file
    _check_complete(tmp_path, 2 * 30, before)


@pytest.mark.slow
def test_full_disk_stops_run_py_with_one_line_and_no_partial_record(tmp_path):
    """The disk fills while run.py stores its record (fsync raises ENOSPC): one line on stderr naming
    the record, the store and the reason, no traceback, exit status 1, neither the record nor a
    temporary file left.  The same command without the fault then stores the record."""
    base = [
        sys.executable,
        str(REPO / "run.py"),
        "mechanism=mod_sulq",
        "dataset=gaussian10",
        "scale=smoke",
        f"results_dir={tmp_path}",
        "quiet=true",
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    full = subprocess.run(
        base + ["mechanism.fn._target_=tests.faulty.disk_full_mod_sulq"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [x for x in full.stderr.splitlines() if x.strip()]
    assert full.returncode == 1, full.stderr
    assert len(lines) == 1 and "Traceback" not in full.stderr, full.stderr
    assert lines[0].startswith("Error (results store): record ")
    assert "No space left on device" in lines[0] and str(tmp_path / "records") in lines[0]
    assert list((tmp_path / "records").iterdir()) == []
    again = subprocess.run(base, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert len(ResultStore(tmp_path).load()) == 1


def test_a_full_disk_elsewhere_in_a_run_is_one_line_and_other_errors_keep_their_traceback(capsys):
    """ENOSPC or EROFS outside the store (a data cache, a figure): one line with the file and the
    reason, exit status 1; an OSError that is no storage condition stays a traceback (a bug)."""
    import errno

    from experiments.app.report import STORAGE_ERROR_EXIT, report_user_errors

    cfg = compose_cfg(["mechanism=mod_sulq", "dataset=gaussian10", "scale=smoke"])

    def failing(code, filename):
        def task(cfg):
            raise OSError(code, os.strerror(code), filename)

        return report_user_errors(task)

    for code in (errno.ENOSPC, errno.EROFS):
        with pytest.raises(SystemExit) as stop:
            failing(code, "data/cache/kddcup.npz")(cfg)
        assert stop.value.code == STORAGE_ERROR_EXIT == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("Error (disk): data/cache/kddcup.npz: ")
        assert os.strerror(code) in err
    with pytest.raises(OSError, match="Bad file descriptor"):
        failing(errno.EBADF, None)(cfg)
