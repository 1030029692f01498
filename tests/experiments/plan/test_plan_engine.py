"""The Dask engine's faults: a worker killed mid-job loses nothing and duplicates nothing, a failed
job fails the run with one line naming it after the others finish, Ctrl-C stops every worker with
one line, the same command resumes; the SLURM path with a fake sbatch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from experiments.plan.engine import is_done, jobqueue_cluster, local_cluster, run_jobs
from experiments.plan.plan import STAGES, Job
from experiments.store.store import ResultStore

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow  # each starts a Dask cluster (seconds)


def fake_job(job: Job, payload: dict, results: str) -> dict:
    """Writes ``payload["records"]`` records; ``kill_after``: SIGKILLs its worker after that many,
    the first time; ``fail``: raises."""
    store = ResultStore(results)
    if payload.get("fail"):
        raise ValueError(f"boom in {job.name}")
    flag = Path(results) / f"killed-{job.name}"
    for i in range(payload["records"]):
        store.write({"run_key": {"job": job.name, "i": i}, "pid": os.getpid()})
        if i + 1 == payload.get("kill_after") and not flag.exists():
            flag.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(payload.get("sleep", 0.0))
    from experiments.plan.engine import _write_atomic, done_dir

    _write_atomic(done_dir(Path(results)) / f"{job.token}.json", "{}")
    return {"name": job.name, "pid": os.getpid()}


def _jobs(n, after=None):
    return [Job(f"j{i}", STAGES[0], (f"j{i}",), "k", 1.0, float(n - i)) for i in range(n)] + (
        [Job("child", STAGES[0], ("child",), "k", 1.0, 1.0, (after,))] if after else []
    )


def _two_workers():
    return local_cluster(2)


def test_killed_worker_loses_nothing_and_resumes(tmp_path):
    jobs = _jobs(4)
    payloads = {j.name: {"records": 3} for j in jobs}
    payloads["j1"]["kill_after"] = 2  # killed between its second and third record
    out = run_jobs(jobs, payloads, tmp_path, fn=fake_job, cluster_factory=_two_workers)
    assert not out.failed and len(out.done) == 4
    assert (tmp_path / "killed-j1").exists()
    records = list(ResultStore(tmp_path).iter_records())
    assert len(records) == 12 and len({r["record_id"] for r in records}) == 12
    assert not list((tmp_path / "records").glob(".tmp-*"))
    # the same command: every job is done, nothing runs
    again = run_jobs(jobs, payloads, tmp_path, fn=fake_job, cluster_factory=_two_workers)
    assert again.skipped == 4 and not again.done


def test_failed_job_is_named_after_the_others_finish(tmp_path):
    jobs = _jobs(3, after="j0")
    payloads = {j.name: {"records": 1} for j in jobs}
    payloads["j0"] = {"fail": True}
    out = run_jobs(jobs, payloads, tmp_path, fn=fake_job, cluster_factory=_two_workers)
    failed = dict(out.failed)
    assert failed["j0"] == "ValueError: boom in j0" and "child" in failed
    assert sorted(d["name"] for d in out.done) == ["j1", "j2"]
    assert is_done(tmp_path, jobs[1]) and not is_done(tmp_path, jobs[0])


def test_ctrl_c_stops_every_worker_with_one_line(tmp_path):
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        from tests.experiments.plan.test_plan_engine import fake_job, _jobs, _two_workers
        from experiments.plan.engine import run_jobs
        jobs = _jobs(4)
        out = run_jobs(jobs, {{j.name: {{"records": 500, "sleep": 0.2}} for j in jobs}}, {str(tmp_path)!r},
                       fn=fake_job, cluster_factory=_two_workers)
        if out.interrupted:
            print("Interrupted: every worker stopped; the same command resumes", file=sys.stderr)
            sys.exit(130)
        """
    )
    # as from a terminal: SIGINT at its default even where the suite itself runs with it ignored
    # (a background job of a non-interactive shell inherits SIGINT ignored, and so would the child)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, start_new_session=True,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    # jobs of 100 s each: the interrupt lands mid-run however slowly the engine starts
    deadline = time.time() + 180
    while time.time() < deadline and len(list((tmp_path / "records").glob("*.json"))) < 4:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("Interrupted:")
    time.sleep(1)
    # a worker that has exited but whose parent died first waits, as a zombie (state Z), for the
    # system's init to reap it (state Z, with N appended where it runs niced): it runs nothing, so
    # only processes in another state count
    listing = subprocess.run(
        ["ps", "-o", "pid=,stat=,cmd=", "-s", str(proc.pid)], capture_output=True, text=True
    ).stdout
    alive = [line for line in listing.splitlines() if not line.split()[1].startswith("Z")]
    assert not alive, f"processes left in the session: {alive}"
    records = list(ResultStore(tmp_path).iter_records())
    assert len({r["record_id"] for r in records}) == len(records)


def test_slurm_engine_submits_a_batch_script(tmp_path, monkeypatch):
    """The cluster option's path without a cluster: a fake sbatch on PATH receives the job script
    dask-jobqueue writes (one BLAS thread, single-threaded workers, and the prologue of
    dask-jobqueue's own configuration kept)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "sbatch.log"
    (bin_dir / "sbatch").write_text(
        f'#!/bin/sh\ncat "$1" >> {log}\necho "Submitted batch job 4242"\n'
    )
    (bin_dir / "scancel").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "squeue").write_text("#!/bin/sh\nexit 0\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    import dask
    import dask_jobqueue  # noqa: F401  (its configuration's defaults, before setting one)

    with dask.config.set({"jobqueue.slurm.job-script-prologue": ["module load python/3.11"]}):
        cluster = jobqueue_cluster("slurm", jobs=1, cores=4, memory="8GB", walltime="00:10:00",
                                   queue="short", account="acct")  # fmt: skip
    try:
        script = cluster.job_script()
        deadline = time.time() + 30
        while time.time() < deadline and not log.exists():
            time.sleep(0.2)
    finally:
        cluster.close()
    for line in ("#SBATCH -p short", "#SBATCH -A acct", "#SBATCH -t 00:10:00",
                 "export OPENBLAS_NUM_THREADS=1", "module load python/3.11", "--nthreads 1",
                 "--nworkers 4"):  # fmt: skip
        assert line in script, line
    assert log.exists() and "--nthreads 1" in log.read_text()
    assert json.dumps  # the script is what sbatch got


def test_a_figure_is_drawn_as_soon_as_its_jobs_are_done(tmp_path):
    """The SULQ-bound job, then the drawing job of Table 1 and Figure 1 on the real runner: Figure 1
    is drawn from the store once its job is done (Table 1 has no records: skipped); the drawing job
    leaves no marker, so the same command skips the finished job and draws again."""
    from experiments.app.schema import register_schema
    from experiments.plan.cli import compose_payloads
    from experiments.plan.plan import drawing_jobs

    bound = Job(
        "sulq_bound", STAGES[0], ("experiment=sulq_bound", "scale=smoke"), "sulq_bound", 1.0
    )
    jobs = [bound, *drawing_jobs([bound], "smoke")]
    assert [j.name for j in jobs[1:]] == ["draw/table1+fig1"] and jobs[1].after == ("sulq_bound",)
    payloads = compose_payloads(jobs, tmp_path, register_schema)
    out = run_jobs(jobs, payloads, tmp_path, cluster_factory=_two_workers)
    assert not out.failed and [d["name"] for d in out.done] == ["sulq_bound", "draw/table1+fig1"]
    drawn = out.done[1]["drawn"]
    assert drawn["table1"] is None
    assert {Path(p).name for p in drawn["fig1"]} >= {"fig1.png"}
    assert (tmp_path / "drawn" / "smoke" / "figures" / "fig1.png").stat().st_size > 0
    again = run_jobs(jobs, payloads, tmp_path, cluster_factory=_two_workers)
    assert again.skipped == 1 and [d["name"] for d in again.done] == ["draw/table1+fig1"]


def test_slurm_engine_runs_the_plan_end_to_end_with_a_fake_batch_system(tmp_path, monkeypatch):
    """The whole cluster path without a cluster: a fake ``sbatch`` runs the batch script that
    dask-jobqueue writes as a local process (as SLURM would on a node), its workers connect to the
    plan's scheduler and run every job; ``scancel`` stops them when the plan closes the cluster."""
    bin_dir, pids = tmp_path / "bin", tmp_path / "pids"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(
        "#!/bin/sh\n"
        f'cp "$1" {tmp_path}/job.sh\n'
        f"setsid sh {tmp_path}/job.sh > {tmp_path}/job.log 2>&1 &\n"
        f"echo $! >> {pids}\n"
        'echo "Submitted batch job 4242"\n'
    )
    (bin_dir / "scancel").write_text(
        f"#!/bin/sh\nfor p in $(cat {pids}); do kill -TERM -$p 2>/dev/null; done\nexit 0\n"
    )
    (bin_dir / "squeue").write_text("#!/bin/sh\nexit 0\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    # the batch job's workers import this module (fake_job) as pytest did: from its folder
    here = Path(sys.modules[fake_job.__module__].__file__).parent
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(here), str(REPO)]))
    jobs = _jobs(4, after="j0")
    payloads = {j.name: {"records": 2} for j in jobs}

    def slurm():
        return jobqueue_cluster("slurm", jobs=1, cores=2, memory="4GB", walltime="00:10:00")

    out = run_jobs(jobs, payloads, tmp_path / "store", fn=fake_job, cluster_factory=slurm)
    assert not out.failed and len(out.done) == 5, out.failed
    assert {d["name"] for d in out.done} == {"j0", "j1", "j2", "j3", "child"}
    records = list(ResultStore(tmp_path / "store").iter_records())
    assert len(records) == 10 and len({r["record_id"] for r in records}) == 10
    worker_pids = {r["pid"] for r in records}
    assert os.getpid() not in worker_pids  # run by the batch job's workers, not here
    deadline = time.time() + 30  # scancel stopped the batch job's processes
    while time.time() < deadline and any(_alive(p) for p in worker_pids):
        time.sleep(0.5)
    assert not any(_alive(p) for p in worker_pids)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z")


def test_local_workers_import_the_jobs_modules_as_they_start():
    from distributed import Client

    with local_cluster(1) as cluster, Client(cluster) as client:
        loaded = client.run(lambda: "experiments.runs.jmlr" in sys.modules)
    assert list(loaded.values()) == [True]


def test_an_early_cluster_runs_the_plan_and_is_closed_after_it(tmp_path):
    from experiments.plan.engine import EarlyCluster

    early = EarlyCluster(_two_workers)  # its workers start while the caller goes on
    jobs = _jobs(3)
    out = run_jobs(jobs, {j.name: {"records": 1} for j in jobs}, tmp_path, fn=fake_job,
                   cluster_factory=early)  # fmt: skip
    assert not out.failed and len(out.done) == 3
    assert early().status.name == "closed"
    early.close()  # again: harmless


@pytest.mark.parametrize("where", ["checking the data", "composing a job"])
def test_the_plan_closes_its_early_cluster_when_interrupted_before_a_job_ran(
    tmp_path, monkeypatch, capsys, where
):
    """Ctrl-C while the data sets are checked, or while a job is composed as it is submitted:
    exit 130, one line, the early cluster closed, nothing written."""
    import contextlib

    from experiments.app.schema import register_schema
    from experiments.plan import cli

    started = []

    class Recorded(cli.EarlyCluster):
        def __init__(self, factory=None):
            super().__init__(factory)
            started.append(self)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    @contextlib.contextmanager
    def composer(*args):
        yield interrupted

    monkeypatch.setattr(cli, "EarlyCluster", Recorded)
    if where == "checking the data":
        monkeypatch.setattr(cli, "available", interrupted)
    else:
        monkeypatch.setattr(cli, "job_composer", composer)
    rc = cli.main(["smoke", "--results", str(tmp_path), "--workers", "1", "--datasets", "insurance",
                   "--extras", "0"], register_schema)  # fmt: skip
    assert rc == 130
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("Interrupted")
    assert len(started) == 1 and started[0]().status.name == "closed"
    assert not (tmp_path / "records").exists()


def test_an_early_cluster_keeps_dasks_configuration_in_a_fresh_process(tmp_path):
    # started before anything imported distributed: its defaults must survive the engine's settings
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        from tests.experiments.plan.test_plan_engine import fake_job, _jobs, _two_workers
        from experiments.plan.engine import EarlyCluster, run_jobs
        early = EarlyCluster(_two_workers)
        import dask
        jobs = _jobs(2)
        out = run_jobs(jobs, {{j.name: {{"records": 1}} for j in jobs}}, {str(tmp_path)!r},
                       fn=fake_job, cluster_factory=early)
        assert not out.failed and len(out.done) == 2, out
        print(dask.config.get("distributed.comm.timeouts.tcp"))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "KeyError" not in proc.stderr
