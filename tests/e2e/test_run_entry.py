"""run.py end to end, in a subprocess, on tiny configs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_real_data

REPO = Path(__file__).resolve().parents[2]


def run(args, tmp_path, check=True):
    env = dict(os.environ, MPLBACKEND="Agg")
    # print_record=true: the full record as the last stdout line (how scripts read it)
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "run.py"),
            f"results_dir={tmp_path}",
            "print_record=true",
            *args,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"run.py failed:\nSTDOUT:\n{proc.stdout}\nSTDERR:\n{proc.stderr}")
    return proc


def last_json(proc):
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_single_run_prints_record_and_stores_it(tmp_path):
    proc = run(
        ["mechanism=mod_sulq", "dataset=gaussian10", "n=1000", "epsilon=0.5", "seed=3"], tmp_path
    )
    rec = last_json(proc)
    for key in (
        "dataset",
        "n",
        "d",
        "k",
        "mechanism",
        "epsilon",
        "delta",
        "neighbouring",
        "seed",
        "q_F",
        "q_F_opt",
        "wall_seconds",
    ):
        assert key in rec
    assert rec["mechanism"] == "mod_sulq" and rec["n"] == 1000 and rec["d"] == 10 and rec["k"] == 2
    assert (
        rec["epsilon"] == 0.5 and rec["delta"] == 0.01 and rec["neighbouring"] == "replace-one-row"
    )
    assert 0 < rec["q_F"] <= rec["q_F_opt"] + 1e-12
    files = list((tmp_path / "records").glob("*.json"))
    assert len(files) == 1
    # same command again: resumes (no duplicate), same answer
    rec2 = last_json(
        run(
            ["mechanism=mod_sulq", "dataset=gaussian10", "n=1000", "epsilon=0.5", "seed=3"],
            tmp_path,
        )
    )
    assert rec2["q_F"] == rec["q_F"] and rec2["written"] is False
    assert len(list((tmp_path / "records").glob("*.json"))) == 1


@pytest.mark.slow
def test_default_job_runs(tmp_path):
    rec = last_json(run(["scale=smoke"], tmp_path))
    assert rec["mechanism"] == "ppca" and rec["dataset"] == "gaussian10"
    assert rec["sampler"]


def test_unknown_group_option_lists_valid_ones(tmp_path):
    proc = run(["mechanism=nope"], tmp_path, check=False)
    assert proc.returncode != 0
    assert "mod_sulq" in proc.stderr and "ppca" in proc.stderr


@pytest.mark.parametrize(
    "override,message",
    [
        ("epsilon=0", "epsilon"),
        ("epsilon=-1", "epsilon"),
        ("delta=1.5", "delta"),
        ("k=0", "k must"),
        pytest.param("k=10", "k must", marks=pytest.mark.slow),
        pytest.param("n=999999", "larger than the dataset", marks=pytest.mark.slow),
    ],
)
def test_bad_input_fails_clearly_and_writes_nothing(tmp_path, override, message):
    proc = run(["mechanism=mod_sulq", "dataset=gaussian10", override], tmp_path, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert not (tmp_path / "records").exists() or not list((tmp_path / "records").glob("*.json"))


@pytest.mark.slow
def test_rerun_reproduces_a_record_bit_for_bit(tmp_path):
    rec = last_json(run(["mechanism=mod_sulq", "dataset=gaussian10", "n=700", "seed=5"], tmp_path))
    again = last_json(run([f"+rerun={rec['record_id']}"], tmp_path))
    assert again["reproduced"] is True and again["q_F"] == rec["q_F"]
    # a sweep record (utility vs n) can be re-run too
    run(["experiment=utility_vs_n", "mechanism=random", "scale=smoke", "quiet=true"], tmp_path)
    from experiments.store.store import ResultStore

    df = ResultStore(tmp_path).load(experiment="utility_vs_n")
    rid = df.sort_values("n").record_id.iloc[0]
    assert last_json(run([f"+rerun={rid}"], tmp_path))["reproduced"] is True


@pytest.mark.slow
def test_rerun_unknown_record_fails_clearly(tmp_path):
    proc = run(["+rerun=0123456789abcdef0123"], tmp_path, check=False)
    assert proc.returncode == 2 and "no record" in proc.stderr
    for bad in ("doesnotexist", "../../elsewhere/records/0123456789abcdef0123"):
        proc = run([f"+rerun={bad}"], tmp_path, check=False)
        assert proc.returncode == 2 and "is not a record id" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr


def test_rerun_refuses_an_override_it_would_ignore(tmp_path):
    proc = run(["+rerun=0123456789abcdef0123", "epsilon=0.5"], tmp_path, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "epsilon=0.5 would be ignored" in proc.stderr, proc.stderr


# --- the command line answers like Hydra and a person expect -------------------------------------


@pytest.mark.parametrize(
    "override,key",
    [
        ("epsilon=abc", "epsilon"),
        ("seed=1.5", "seed"),
        ("clip_rows=maybe", "clip_rows"),
        ("n=many", "n"),
    ],
)
def test_wrong_type_is_refused_in_one_line_naming_the_key(tmp_path, override, key):
    proc = run([override], tmp_path, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith(f"Error (bad value): {override}: ")
    assert not (tmp_path / "records").exists()


def test_wrong_type_still_fails_when_hydra_composes(tmp_path):
    """The schema itself refuses it too (a composition that skips run.py's own check)."""
    from hydra.errors import ConfigCompositionException

    from experiments.app.schema import register_schema
    from tests.hydra_helpers import compose_cfg

    register_schema()
    with pytest.raises(ConfigCompositionException, match="epsilon=abc"):
        compose_cfg(["epsilon=abc", f"results_dir={tmp_path}"])


@pytest.mark.parametrize(
    "override,key",
    [
        ("seed=-1", "seed"),
        ("epsilon=-2", "epsilon"),
        ("delta=1.5", "delta"),
        ("restart=-3", "restart"),
        ("n=0", "n"),
    ],
)
def test_out_of_range_value_is_one_line_naming_the_key(tmp_path, override, key):
    proc = run(["scale=smoke", override], tmp_path, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error") and f"{key}=" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_missing_data_file_is_one_line(tmp_path):
    proc = run(["dataset=insurance", f"data_dir={tmp_path / 'nowhere'}"], tmp_path, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "ticdata2000" in proc.stderr and "PRIVPCA_DATA_DIR" in proc.stderr


@pytest.mark.slow
def test_refused_input_is_one_line(tmp_path):
    proc = run(["mechanism=mod_sulq", "dataset=gaussian10", "k=10"], tmp_path, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "k must" in proc.stderr


@pytest.mark.slow
def test_a_real_bug_still_shows_its_traceback(tmp_path):
    # a mechanism whose code fails is a programming error, not a user error
    bug = "mechanism.fn._target_=tests.faulty.buggy_mechanism"
    proc = run(["scale=smoke", bug], tmp_path, check=False)
    assert proc.returncode != 0 and proc.returncode != 2
    assert "TypeError" in proc.stderr
    full = subprocess.run(
        [sys.executable, str(REPO / "run.py"), f"results_dir={tmp_path}", "scale=smoke", bug],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=dict(os.environ, HYDRA_FULL_ERROR="1"),
        timeout=300,
    )
    assert "Traceback" in full.stderr and "TypeError" in full.stderr


@pytest.mark.slow
def test_an_option_the_mechanism_does_not_have_is_named_with_its_options(tmp_path):
    proc = run(["scale=smoke", "+mechanism.fn.no_such_parameter=1"], tmp_path, check=False)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "mechanism.fn.no_such_parameter" in proc.stderr and "sampler" in proc.stderr


@pytest.mark.parametrize(
    "env,args,needle",
    [
        ({}, ["quik"], "unknown scale 'quik'"),
        ({"DATASETS": "insurace"}, ["smoke"], "unknown data set 'insurace'"),
    ],
)
def test_reproduce_refuses_a_typo_before_any_work(tmp_path, env, args, needle):
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "reproduce.sh"), *args],
        env=dict(os.environ, RESULTS_DIR=str(tmp_path / "store"), **env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and needle in proc.stderr
    assert not (tmp_path / "store").exists()


@pytest.mark.slow
@pytest.mark.realdata
def test_reproduce_fails_when_a_job_fails(tmp_path):
    """A failed job (a misspelt sampler) fails the reproduction with one line naming the job, after
    the other jobs finish (their records kept), not in 'finished', exit 0."""
    require_real_data()  # the lane runs only on data sets whose raw files are there
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "reproduce.sh"), "smoke"],
        env=dict(
            os.environ,
            RESULTS_DIR=str(tmp_path / "store"),
            GIBBS_SAMPLERS="gibbs,refrence",
            DATASETS="insurance",
            EXTRAS="0",
            MPLBACKEND="Agg",
        ),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Error: job figure2/insurance/refrence" in proc.stderr, proc.stderr[-2000:]
    assert "unknown MCMC sampler 'refrence'" in proc.stderr and "finished in" not in proc.stderr
    assert "the same command resumes" in proc.stderr
