"""What run.py answers a person: one line for a mistake or an interrupt, a short rounded summary per run,
the stored record on a resume, and the full record for scripts only with print_record=true."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Literal, Optional

import pytest

REPO = Path(__file__).resolve().parents[3]


def run(args, tmp_path, **kw):
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run(
        [sys.executable, str(REPO / "run.py"), f"results_dir={tmp_path}", "scale=smoke", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        **kw,
    )


def one_line_error(proc, *needles):
    assert proc.returncode == 2, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout.strip() == ""
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    "override,needles",
    [
        (
            "mechanism.fn.sampler=bogus",
            ["mechanism.fn.sampler='bogus'", "auto, exact, gibbs, reference"],
        ),
        ("mechanism.fn.iterations=0", ["mechanism.fn.iterations=0", "integer >= 1"]),
    ],
)
def test_a_bad_mechanism_option_names_the_option_and_its_valid_values(tmp_path, override, needles):
    line = one_line_error(run([override], tmp_path), *needles)
    assert "burn_in" not in line  # a value the user never set


@pytest.mark.parametrize(
    "args,needles",
    [
        (["epsilon=abc"], ["epsilon=abc", "Float"]),
        (["seed=1.5"], ["seed=1.5", "Integer"]),
        (["-m", "seed=1,2.5"], ["seed=2.5", "Integer"]),
        (["k=null"], ["k=null", "not Optional"]),
        (["mechanism=ppcaa"], ["unknown mechanism 'ppcaa'", "mod_sulq", "ppca"]),
        (["-m", "dataset=gaussian10,spikd"], ["unknown dataset 'spikd'", "gaussian10"]),
        pytest.param(
            ["mechanism.fn.bogus=1"],
            ["mechanism.fn.bogus", "no option 'bogus'", "sampler"],
            marks=pytest.mark.slow,
        ),
        (
            ["--config-dir", "examples/my_mechanism/conf", "mechanism=my_gaus"],
            ["unknown mechanism 'my_gaus'", "my_gauss"],
        ),
        pytest.param(
            ["mechanism=ppca", "mechanism.fn.min_ess=5"],
            ["not in conf/mechanism/ppca.yaml", "+mechanism.fn.min_ess=<value>"],
            marks=pytest.mark.slow,
        ),
        (["-m", "dataset=glob(zzz*)"], ["dataset=glob(zzz*) matches no dataset", "gaussian10"]),
        (["-m", "dataset=glob(spik*)", "epsilon=abc"], ["epsilon=abc", "Float"]),
        pytest.param(
            ["-m", "mechanism=glob(ppca*)", "mechanism.fn.tree=false"],
            ["mechanism ppca has no option 'tree'"],
            marks=pytest.mark.slow,
        ),
        pytest.param(
            ["mechanism.fn._target_=nope.x"],
            ["Error locating target 'nope.x'", "PYTHONPATH"],
            marks=pytest.mark.slow,
        ),
        (["experiment=audit", "experiment.bogus=1"], ["experiment audit has no option 'bogus'"]),
        # any config group, Hydra's own included: its options as Hydra's repository lists them
        (
            ["-m", "hydra/launcher=joblibb", "mechanism=pca,random"],
            ["unknown hydra/launcher 'joblibb'", "basic, joblib, local_parallel"],
        ),
        # in a sweep, refused before the first job (which would otherwise store its records)
        (["-m", "mechanism=pca,mod_sulq", "epsilon=0.1,-1"], ["epsilon=-1 is out of range"]),
        (
            ["-m", "mechanism=ppca,my_gauss", "--config-dir", "examples/my_mechanism/conf"],
            ["mechanism my_gauss: its _target_ 'my_gauss.my_gauss' cannot be imported"],
        ),
        (  # the example mechanism without PYTHONPATH=examples/my_mechanism
            ["mechanism=my_gauss", "--config-dir", "examples/my_mechanism/conf"],
            ["'my_gauss.my_gauss'", "PYTHONPATH"],
        ),
    ],
)
def test_what_hydra_would_refuse_while_composing_gets_one_line(tmp_path, args, needles):
    one_line_error(run(args, tmp_path), "Error (bad value)", *needles)
    assert not (tmp_path / "records").exists()


def test_the_slurm_launcher_without_slurm_gets_one_line(tmp_path):
    import shutil

    if shutil.which("sbatch") is not None:
        pytest.skip("this machine has SLURM")
    one_line_error(
        run(["-m", "hydra/launcher=slurm", "mechanism=pca,random"], tmp_path),
        "Error (no cluster)",
        "hydra/launcher=local_parallel",
    )
    assert not (tmp_path / "records").exists()


@pytest.mark.parametrize("args", [["-m", "--cfg", "job"], ["--multirun", "--info"]])
def test_two_run_modes_get_one_line(tmp_path, args):
    one_line_error(run(args, tmp_path), "Error (bad flags)", "cannot be combined")


def test_a_mechanism_option_is_checked_against_the_mechanism_the_experiment_selects():
    """online_regret selects online_pca (``override /mechanism``): its options pass, PPCA's do not."""
    from experiments.app.preflight import check_override_values
    from experiments.errors import UserError

    check_override_values(["experiment=online_regret", "mechanism.fn.tree=false"])
    check_override_values(["-m", "experiment=single,online_regret", "+mechanism.fn.tree=false"])
    with pytest.raises(UserError, match="mechanism online_pca has no option 'sampler'"):
        check_override_values(["experiment=online_regret", "mechanism.fn.sampler=gibbs"])


def test_a_mechanism_declares_its_option_rules_in_its_signature():
    """The command line reads a mechanism's choices (a ``Literal`` type) and whether it takes
    ``null`` from the function itself: ppca's samplers are its ``Sampler`` type."""
    from experiments.app.schema import option_rule
    from mechanisms.ppca import SAMPLERS, ppca

    test, what = option_rule(ppca, "sampler")
    assert what == "one of " + ", ".join(SAMPLERS) and test("gibbs") and not test("gibs")
    test, what = option_rule(ppca, "iterations")  # an int: null refused
    assert what == "an integer >= 1" and test(5) and not test(None) and not test(0)

    def mechanism(
        X, k, *, rng, mode: Optional[Literal["a", "b"]] = None, iterations: int | None = None
    ):
        return X

    test, what = option_rule(mechanism, "mode")
    assert what == "one of a, b or null (the mechanism's default)" and test(None) and not test("c")
    test, what = option_rule(mechanism, "iterations")
    assert what.endswith("or null (the mechanism's default)") and test(None) and not test(True)
    assert option_rule(mechanism, "k") is None  # no declared rule: the mechanism checks it


@pytest.mark.slow
def test_a_mechanism_option_refused_by_the_mechanism_names_what_the_user_set(tmp_path):
    line = one_line_error(
        run(["mechanism=mod_sulq", "mechanism.fn.calibration=foo"], tmp_path),
        "calibration",
        "(you set mechanism.fn.calibration=foo)",
    )
    assert "paper" in line and "tight" in line


@pytest.mark.slow
def test_a_switch_given_as_a_word_is_refused_not_read_as_true(tmp_path):
    """A string is truthy: ``tree=maybe`` used to run the tree variant (another guarantee)."""
    one_line_error(
        run(["mechanism=online_pca", "dataset=gaussian10", "mechanism.fn.tree=maybe"], tmp_path),
        "tree must be true or false, got 'maybe'",
        "(you set mechanism.fn.tree=maybe)",
    )
    assert not (tmp_path / "records").exists()


@pytest.mark.slow
def test_online_regret_refuses_a_tree_value_it_would_ignore(tmp_path):
    """The experiment runs experiment.variants; mechanism.fn.tree would only change the records' keys."""
    one_line_error(
        run(["experiment=online_regret", "mechanism.fn.tree=false"], tmp_path),
        "experiment.variants",
        "drop that override",
    )
    assert not (tmp_path / "records").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "args,needles",
    [
        (["experiment=audit", "experiment.mode=whitebx"], ["experiment.mode must be", "whitebx"]),
        (["experiment=audit", "experiment.trials=abc"], ["(you set experiment.trials=abc)"]),
        (
            ["experiment=audit", "experiment.trials=0"],
            ["experiment.trials must be an integer >= 2"],
        ),
    ],
)
def test_an_experiment_option_refused_at_run_time_names_what_the_user_set(tmp_path, args, needles):
    one_line_error(run(args, tmp_path), "Error (experiment option refused)", *needles)
    assert not (tmp_path / "records").exists()


@pytest.mark.slow
def test_a_refusal_names_only_the_overrides_it_is_about(tmp_path):
    """experiment.trials=200 is fine: the line blames the unknown mechanism's override alone."""
    line = one_line_error(
        run(
            ["experiment=audit", "experiment.mechanism=nonexistent", "experiment.trials=200"],
            tmp_path,
        ),
        "Error (experiment option refused): unknown mechanism 'nonexistent'",
        "(you set experiment.mechanism=nonexistent)",
    )
    assert "trials" not in line


@pytest.mark.parametrize("override", ["results_dir=/tmp/résultats", "mechanism=ppcä"])
def test_an_override_hydra_cannot_parse_gets_one_line_with_the_fix(tmp_path, override):
    one_line_error(run([override], tmp_path), "cannot read", override, "quote a value")


def test_rerun_without_a_plus_gets_one_line(tmp_path):
    one_line_error(run(["rerun=0123456789abcdef0123"], tmp_path), "+rerun=0123456789abcdef0123")


@pytest.mark.parametrize("override", ["epsilonn=0.1", "+epsilonn=0.5", "++epsilonn=0.5"])
def test_an_unknown_top_level_key_is_refused_with_the_valid_keys(tmp_path, override):
    one_line_error(run([override], tmp_path), "unknown key 'epsilonn'", "epsilon, delta", "seed")
    assert not (tmp_path / "records").exists()  # nothing ran with the default epsilon


@pytest.mark.slow
def test_delta_zero_is_refused_by_the_rule_the_mechanisms_use(tmp_path):
    from mechanisms._base import PrivacyInputError, check_delta

    with pytest.raises(PrivacyInputError):
        check_delta(0.0)
    one_line_error(run(["mechanism=mod_sulq", "delta=0"], tmp_path), "delta", "(0, 1)")
    # a pure epsilon-DP mechanism is held to the same rule: one rule for the key, in one place
    one_line_error(run(["mechanism=ppca", "delta=0"], tmp_path), "delta", "(0, 1)")


@pytest.mark.slow
def test_a_run_prints_a_short_rounded_summary_and_a_resume_shows_the_stored_record(tmp_path):
    proc = run(["mechanism=mod_sulq", "n=1000"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert 1 <= len(lines) <= 4 and len(proc.stdout) < 600
    assert "q_F = 0." in proc.stdout and not any(line.startswith("{") for line in lines)
    assert "ε = 0.1, δ = 0.01 (replace-one-row):" in proc.stdout  # the relation the ε refers to
    q_printed = proc.stdout.split("q_F = ")[1].split()[0]
    assert len(q_printed) == len("0.1234")  # rounded
    (path,) = (tmp_path / "records").glob("*.json")
    assert str(path) in proc.stdout  # where the full record is
    stored = json.loads(path.read_text())
    stored["timestamp"] = "written by the first run"
    path.write_text(json.dumps(stored))
    again = run(["mechanism=mod_sulq", "n=1000", "print_record=true"], tmp_path)
    rec = json.loads(again.stdout.strip().splitlines()[-1])
    assert (
        rec["written"] is False and rec["timestamp"] == "written by the first run"
    )  # not recomputed
    assert "already stored" in run(["mechanism=mod_sulq", "n=1000"], tmp_path).stdout


@pytest.mark.slow
def test_print_record_gives_scripts_the_full_record_as_the_last_line(tmp_path):
    proc = run(["mechanism=mod_sulq", "n=1000", "print_record=true", "quiet=true"], tmp_path)
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1
    rec = json.loads(lines[0])
    assert rec["mechanism"] == "mod_sulq" and "config" in rec and isinstance(rec["q_F"], float)


@pytest.mark.slow
def test_a_warning_names_the_run_not_a_library_file(tmp_path):
    """PPCA with 20 iterations cannot pass its convergence check (10 draws per chain after burn-in,
    fewer than the 100 effective draws per chain it asks for): the warning is one line naming the
    user's overrides, not a Hydra or library source file."""
    proc = run(["mechanism=ppca", "mechanism.fn.iterations=20", "n=2000", "seed=4"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    warning_lines = [x for x in proc.stderr.splitlines() if "warning" in x.lower()]
    assert warning_lines, proc.stderr
    for line in warning_lines:
        assert "in run [" in line and "n=2000 seed=4" in line
    assert "site-packages" not in proc.stderr and "target_policy" not in proc.stderr


@pytest.mark.slow
def test_ctrl_c_in_a_sweep_prints_one_line_and_exits_130(tmp_path):
    args = [
        sys.executable,
        str(REPO / "run.py"),
        "-m",
        "hydra/launcher=local_parallel",
        "hydra.launcher.n_jobs=2",
        f"results_dir={tmp_path}",
        "scale=smoke",
        "mechanism=ppca",
        "seed=1,2,3,4,5,6",
        "ppca_iterations=4000000",
    ]
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.Popen(
        args,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
        # as from a terminal: a suite started in the background of a non-interactive shell inherits
        # SIGINT ignored, and Python then never raises KeyboardInterrupt
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    # interrupt once the workers are computing (a job has started), as a person would, with ^C to the group;
    # 4,000,000 iterations per job (tens of seconds each) keep the sweep running well past the interrupt,
    # also on a loaded machine
    deadline = time.monotonic() + 120
    sweep_dir = tmp_path / "hydra" / "multirun"
    while time.monotonic() < deadline and not list(sweep_dir.glob("*/*/.hydra")):
        time.sleep(0.5)
    time.sleep(3)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip() == "interrupted; re-run the same command to resume", err


def test_the_default_results_dir_is_checked_before_hydra(tmp_path, monkeypatch):
    """Without ``results_dir=``, the primary config's default is checked as an override would be:
    a store that cannot be written is refused in one line before Hydra creates its run folder."""
    from experiments.app import preflight
    from experiments.errors import UserError

    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setattr(preflight, "_default_results_dir", lambda: str(blocker))
    with pytest.raises(UserError, match="is a file, not a directory"):
        preflight.check_results_dir(["mechanism=pca"])
    monkeypatch.setattr(preflight, "_default_results_dir", lambda: str(tmp_path / "store"))
    preflight.check_results_dir(["mechanism=pca"])  # a writable default passes


def test_the_default_results_dir_is_read_from_the_primary_config():
    from experiments.app import preflight

    assert preflight._default_results_dir() == "results"
