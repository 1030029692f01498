"""``python run.py +rerun=<id>`` reproduces a record bit for bit, or exits non-zero with one line naming why.

The records are PPCA releases on the spiked model with d = 100: at that size OpenBLAS splits the
products and eigendecompositions over its threads, and the same seed gives other bits with 2 threads
than with 1 (checked below), so a rerun that did not use the record's thread count fails here.  The
reruns run from a subprocess with the BLAS thread variables unset (a plain shell: OpenBLAS then
starts one thread per core).
"""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hydra_helpers import compose_cfg

from experiments import threads
from experiments.app.dispatch import run_experiment
from experiments.app.report import report_user_errors
from experiments.errors import NotReproduced
from experiments.runs.rerun import rerun
from experiments.runs.rerun_check import differences, known_causes, not_reproduced_line

REPO = Path(__file__).resolve().parents[2]
THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
RUN = [
    "scale=smoke",
    "dataset=spiked",
    "dataset.params.d=100",
    "dataset.size=2000",
    "mechanism=ppca",
    "seed=0",
    "quiet=true",
]
ONE_THREAD = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def shell_env(**extra) -> dict:
    """The environment of a plain shell: no BLAS thread variable set (plus ``extra``)."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    env.update(MPLBACKEND="Agg", PYTHONPATH=str(REPO), **extra)
    return env


def run_py(args, env=None, check=True):
    if any(a.startswith("+rerun=") for a in args):
        args = [*args, "print_record=true"]  # the rerun's result as a JSON line on stdout
    proc = subprocess.run(
        [sys.executable, str(REPO / "run.py"), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env or shell_env(),
        timeout=600,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"run.py {args} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return proc


def json_lines(proc) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def in_process_record(store: Path, capsys) -> dict:
    """A single run in this process (``python run.py ...`` without the subprocess)."""
    record = run_experiment(compose_cfg([*RUN, f"results_dir={store}"]))
    capsys.readouterr()
    return record


def only_record(store: Path, rid: str) -> dict:
    return json.loads((store / "records" / f"{rid}.json").read_text())


def copy_record(record: dict, store: Path, **changes) -> None:
    """``record`` (as stored) written into another store, with ``changes`` applied."""
    (store / "records").mkdir(parents=True)
    record = {**record, **changes}
    (store / "records" / f"{record['record_id']}.json").write_text(json.dumps(record))


def error_lines(proc) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("Error")]


@pytest.fixture(scope="module")
def two_thread_record(tmp_path_factory):
    """A record made with 2 BLAS threads (stated in its provenance), in-process."""
    store = tmp_path_factory.mktemp("two_threads")
    old = threads.PINNED_BLAS_THREADS
    threads.PINNED_BLAS_THREADS = 2
    try:
        record = run_experiment(compose_cfg([*RUN, f"results_dir={store}"]))
    finally:
        threads.PINNED_BLAS_THREADS = old
    return store, only_record(store, record["record_id"])


@pytest.mark.slow
def test_records_of_every_path_are_the_same_bits_and_rerun_from_a_plain_shell(
    tmp_path, capsys, two_thread_record
):
    single, joblib_sweep, reproduce = (
        tmp_path / "single",
        tmp_path / "joblib",
        tmp_path / "reproduce",
    )
    rid = in_process_record(single, capsys)["record_id"]
    # a joblib sweep (2 jobs, loky workers: one BLAS thread each) from a plain shell
    run_py(
        [
            "-m",
            "hydra/launcher=local_parallel",
            "hydra.launcher.n_jobs=2",
            f"results_dir={joblib_sweep}",
            *RUN[:-2],
            "seed=0,1",
            "quiet=true",
        ]
    )
    # scripts/reproduce.sh's environment: one BLAS thread set by the shell
    run_py([f"results_dir={reproduce}", *RUN], env=shell_env(**ONE_THREAD))
    records = [only_record(store, rid) for store in (single, joblib_sweep, reproduce)]
    assert len({r["components_sha256"] for r in records}) == 1
    assert len({r["q_F"] for r in records}) == 1
    assert all(r["provenance"]["blas_threads"] == 1 for r in records)
    # the teeth: the same run with 2 threads gives other bits
    assert two_thread_record[1]["components_sha256"] != records[0]["components_sha256"]
    # a record without provenance (written before records stated the thread count) made with one
    # thread reruns too
    legacy = tmp_path / "legacy"
    copy_record({k: v for k, v in records[1].items() if k != "provenance"}, legacy)
    proc = run_py(
        ["-m", f"results_dir={single},{joblib_sweep},{reproduce},{legacy}", f"+rerun={rid}"]
    )
    results = json_lines(proc)
    assert len(results) == 4
    assert all(r["reproduced"] is True and r["differences"] == [] for r in results), results
    assert all(r["blas_threads"] == 1 for r in results)


def test_tampered_record_exits_non_zero_with_one_line_naming_the_field(tmp_path, capsys):
    record = in_process_record(tmp_path / "made", capsys)
    stored = only_record(tmp_path / "made", record["record_id"])
    tampered = tmp_path / "tampered"
    copy_record(stored, tampered, q_F=stored["q_F"] + 1e-3)
    task = report_user_errors(
        run_experiment
    )  # what run.py runs (the subprocess test below runs run.py)
    with pytest.raises(SystemExit) as exit_status:
        task(
            compose_cfg(
                [f"results_dir={tampered}", f"+rerun={record['record_id']}", "print_record=true"]
            )
        )
    assert exit_status.value.code != 0
    out, err = capsys.readouterr()
    (line,) = err.strip().splitlines()
    assert line.startswith("Error (not reproduced)")
    assert "q_F (by 0.001)" in line and "components_sha256" not in line
    assert json.loads(out.splitlines()[-1])["reproduced"] is False


@pytest.mark.parametrize(
    "edit, named",
    [
        (lambda r: r.update(k=r["k"] + 1), "in k"),
        (lambda r: r.update(seed=7), "in seed"),
        (lambda r: r["config"].update(seed=7), "config.seed"),
        (lambda r: r["run_key"].update(seed=7), "run_key (does not hash to the id)"),
    ],
)
def test_a_record_edited_where_the_replay_does_not_look_is_refused(tmp_path, capsys, edit, named):
    """Fields the replay does not recompute (the top-level k and seed the figures read, the config)
    must agree with the run key, and the run key must hash to the id: else one line, exit 2."""
    record = in_process_record(tmp_path / "made", capsys)
    stored = json.loads(json.dumps(only_record(tmp_path / "made", record["record_id"])))
    edit(stored)
    copy_record(stored, tmp_path / "edited")
    with pytest.raises(SystemExit) as exit_status:
        report_user_errors(run_experiment)(
            compose_cfg([f"results_dir={tmp_path / 'edited'}", f"+rerun={record['record_id']}"])
        )
    assert exit_status.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "disagrees with its own run key" in line and named in line, line


@pytest.mark.slow
def test_record_made_with_another_thread_count_exits_non_zero_naming_it(two_thread_record):
    store, record = two_thread_record
    assert record["provenance"]["blas_threads"] == 2
    proc = run_py(
        [f"results_dir={store}", f"+rerun={record['record_id']}", "quiet=true"], check=False
    )
    assert proc.returncode != 0
    (line,) = error_lines(proc)
    assert "components_sha256" in line
    assert "the record was made with 2 BLAS threads, this rerun with 1 BLAS thread" in line


def test_record_without_thread_count_that_does_not_reproduce_says_so(
    two_thread_record, tmp_path, capsys
):
    _, record = two_thread_record
    legacy = tmp_path / "legacy"
    copy_record({k: v for k, v in record.items() if k != "provenance"}, legacy)
    cfg = compose_cfg(
        [f"results_dir={legacy}", f"+rerun={record['record_id']}", "print_record=true"]
    )
    with pytest.raises(NotReproduced, match="does not state its BLAS thread count"):
        rerun(cfg)
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["reproduced"] is False


def test_record_with_other_data_files_cannot_be_rerun(two_thread_record, tmp_path):
    _, record = two_thread_record
    store = tmp_path / "other_data"
    copy_record(record, store, data_files={"spiked.csv": "0" * 64})
    with pytest.raises(Exception, match="raw data files differ from the ones recorded"):
        rerun(compose_cfg([f"results_dir={store}", f"+rerun={record['record_id']}"]))


def test_thread_count_is_not_part_of_the_run_key(two_thread_record, capsys):
    """A store keeps resuming: the same run made with another thread count has the same record id and
    is not written again."""
    store, record = two_thread_record
    again = in_process_record(store, capsys)
    assert again["record_id"] == record["record_id"] and again["written"] is False
    assert again["provenance"]["blas_threads"] == 2  # the stored record is shown, not recomputed


# --- the one line, on records built by hand (no run) ----------------------------------------------

NOW = {"blas_threads": 1, "blas": "openblas 0.3.30 Haswell", "machine": "x86_64 cpu A"}
VERSIONS = {"numpy": "2.4.6", "scipy": "1.17.1"}


def hand_record(**changes) -> dict:
    record = {
        "provenance": dict(NOW),
        "versions": dict(VERSIONS),
        "git_commit": "abc",
        "q_F": 0.5,
        "components_sha256": "x",
        "mechanism_seconds": 1.0,
        "diagnostics_not_private": {"rhat": 1.01, "seconds": 3.0},
    }
    record.update(changes)
    return record


def test_differences_name_fields_and_amounts_but_no_diagnostic_amounts_or_timings():
    rerun_fields = {
        "q_F": 0.25,
        "components_sha256": "y",
        "mechanism_seconds": 2.0,
        "diagnostics_not_private": {"rhat": 1.2, "seconds": 9.0},
    }
    assert differences(hand_record(), rerun_fields) == [
        "components_sha256",
        "diagnostics_not_private.rhat",
        "q_F (by 0.25)",
    ]
    same = {
        "q_F": 0.5,
        "components_sha256": "x",
        "mechanism_seconds": 7.0,
        "diagnostics_not_private": {"rhat": 1.01, "seconds": 0.1},
    }
    assert differences(hand_record(), same) == []


@pytest.mark.parametrize(
    "changes,cause",
    [
        ({}, "no known cause"),
        (
            {"provenance": {**NOW, "blas_threads": 4}},
            "the record was made with 4 BLAS threads, this rerun with 1 BLAS thread",
        ),
        (
            {"provenance": None},
            "the record does not state its BLAS thread count (this rerun used 1 BLAS thread)",
        ),
        (
            {"provenance": {**NOW, "blas": "mkl 2024.1 Haswell"}},
            "BLAS library differs (record: mkl 2024.1 Haswell;",
        ),
        (
            {"provenance": {**NOW, "machine": "aarch64 cpu B"}},
            "machine differs (record: aarch64 cpu B; now: x86_64 cpu A)",
        ),
        (
            {"versions": {**VERSIONS, "numpy": "2.3.0"}},
            "package versions differ (numpy 2.3.0 -> 2.4.6)",
        ),
        ({"git_commit": "def"}, "the code may differ (record made at commit def, rerun at abc)"),
    ],
)
def test_the_line_names_each_known_cause(changes, cause):
    record = hand_record(**changes)
    line = not_reproduced_line("r1", ["q_F (by 0.25)"], known_causes(record, NOW, VERSIONS, "abc"))
    assert line.startswith("record r1: the rerun differs in q_F (by 0.25); cause: ")
    assert cause in line and "\n" not in line


def test_the_line_names_a_change_of_the_chains_random_streams():
    """A PPCA record whose chains drew from another stream scheme cannot re-run bit for bit; the
    line says so, and says nothing of it when the schemes agree."""
    from mechanisms.bingham import CHAIN_STREAMS

    rerun = {"release": {"sampler": "gibbs", "chain_streams": CHAIN_STREAMS}}
    old = hand_record(release={"sampler": "gibbs"})
    line = not_reproduced_line("r1", ["components"], known_causes(old, NOW, VERSIONS, "abc", rerun))
    assert "the MCMC chains' random streams differ" in line and CHAIN_STREAMS in line
    same = hand_record(release={"sampler": "gibbs", "chain_streams": CHAIN_STREAMS})
    assert not any("stream" in c for c in known_causes(same, NOW, VERSIONS, "abc", rerun))


def test_the_line_names_a_change_of_the_ess_estimator():
    """A PPCA record whose bulk-ESS was estimated otherwise (a record that names no estimator was
    made before the estimator was ArviZ's) cannot re-run to its ``ess``: the line says so, and says
    nothing of it when the estimators agree."""
    from mechanisms.diagnostics import ESS_ESTIMATOR

    rerun = {"diagnostics_not_private": {"ess": 812.5, "ess_estimator": ESS_ESTIMATOR}}
    old = hand_record()  # diagnostics without ess_estimator
    line = not_reproduced_line(
        "r1", ["diagnostics_not_private.ess"], known_causes(old, NOW, VERSIONS, "abc", rerun)
    )
    assert "the bulk-ESS estimators differ (record: not stated, an earlier scheme" in line
    assert ESS_ESTIMATOR in line
    same = hand_record(diagnostics_not_private={"ess": 800.0, "ess_estimator": ESS_ESTIMATOR})
    assert not any("ESS" in c for c in known_causes(same, NOW, VERSIONS, "abc", rerun))


def test_the_line_names_a_change_of_the_svm_fit_of_repeated_rows():
    old = hand_record()  # fitted every row: no svm_duplicates field
    causes = known_causes(old, NOW, VERSIONS, "abc", {"svm_duplicates": "weighted"})
    assert any("repeated rows differ" in c and "weighted" in c for c in causes)


#: PPCA restarts released as the chains of one group (as paper scale runs them), on a small data set
GROUPED = [
    "experiment=utility_vs_n",
    "scale=smoke",
    "dataset=spiked",
    "dataset.params.d=12",
    "dataset.size=1200",
    "mechanism=ppca",
    "k=2",
    "seed=0",
    "quiet=true",
    "++scale.ppca_restarts_as_chains=true",
    "++scale.restarts.ppca=3",
    "++scale.n_points=1",
]


@pytest.fixture(scope="module")
def grouped_store(tmp_path_factory):
    store = tmp_path_factory.mktemp("grouped")
    run_experiment(compose_cfg([*GROUPED, f"results_dir={store}"]))
    records = [json.loads(p.read_text()) for p in (store / "records").glob("*.json")]
    grouped = [r for r in records if r.get("restarts_as_chains")]
    assert len(grouped) == 3 and all(r["group_restarts"] == [0, 1, 2] for r in grouped)
    return store, grouped


def test_a_restart_released_from_a_group_of_chains_reruns_bit_for_bit(grouped_store, capsys):
    """The release is one chain of the group and its split-R̂ was computed across the group: the rerun
    replays the whole group, so both the release and its diagnostics are reproduced."""
    store, grouped = grouped_store
    middle = next(r for r in grouped if r["restart"] == 1)
    result = rerun(
        compose_cfg([f"results_dir={store}", f"+rerun={middle['record_id']}", "quiet=true"])
    )
    capsys.readouterr()
    assert result["reproduced"] is True and result["differences"] == []


def test_a_grouped_restart_whose_release_differs_fails(grouped_store, tmp_path, capsys):
    """The teeth: the same record with another restart's released matrix does not reproduce."""
    _store, grouped = grouped_store
    first, second = sorted(grouped, key=lambda r: r["restart"])[:2]
    assert first["components_sha256"] != second["components_sha256"]
    copy_record(first, tmp_path / "swapped", components_sha256=second["components_sha256"])
    with pytest.raises(NotReproduced, match="components_sha256"):
        rerun(
            compose_cfg(
                [
                    f"results_dir={tmp_path / 'swapped'}",
                    f"+rerun={first['record_id']}",
                    "quiet=true",
                ]
            )
        )
    capsys.readouterr()


def test_a_grouped_restart_diagnosed_by_an_earlier_ess_estimator_names_it(
    grouped_store, tmp_path, capsys
):
    """A record made before the bulk-ESS was ArviZ's (no ``ess_estimator``, another ``ess``): the
    release replays bit for bit (components and q_F are not named), the diagnostics do not, and the
    line names the estimator as the cause."""
    _store, grouped = grouped_store
    first = min(grouped, key=lambda r: r["restart"])
    diagnostics = dict(first["diagnostics_not_private"])
    del diagnostics["ess_estimator"]
    diagnostics["ess"] *= 1.004  # the earlier estimator's truncation: 0.4% above ArviZ's here
    copy_record(first, tmp_path / "earlier", diagnostics_not_private=diagnostics)
    with pytest.raises(NotReproduced) as raised:
        rerun(
            compose_cfg(
                [
                    f"results_dir={tmp_path / 'earlier'}",
                    f"+rerun={first['record_id']}",
                    "quiet=true",
                ]
            )
        )
    capsys.readouterr()
    line = str(raised.value)
    assert "the rerun differs in diagnostics_not_private.ess, " in line
    assert "diagnostics_not_private.ess_estimator" in line
    assert "components_sha256" not in line and "q_F" not in line
    assert "the bulk-ESS estimators differ" in line


@pytest.fixture(scope="module")
def classification_store(tmp_path_factory):
    """Table 2 records on a kddcup-shaped fixture: PPCA releases grouped as chains (3 projections of
    one permutation), and random projections made one at a time."""
    from tests.experiments.runs.test_jmlr_runners import _kddcup_like_dir

    root = tmp_path_factory.mktemp("classification")
    data, store = _kddcup_like_dir(root), root / "store"
    base = [
        "experiment=classification",
        "scale=smoke",
        f"data_dir={data}",
        f"results_dir={store}",
        "quiet=true",
        "scale.classification.max_rows=null",
        "k=2",
        "scale.classification.projections=3",
    ]
    grouped = ["mechanism=ppca", "+scale.ppca_restarts_as_chains=true", "ppca_iterations=60"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 60 iterations: the diagnostics may fail, recorded
        run_experiment(compose_cfg([*base, *grouped]))
        run_experiment(compose_cfg([*base, "mechanism=random"]))
    records = [json.loads(p.read_text()) for p in (store / "records").glob("*.json")]
    return store, records, data


@pytest.mark.parametrize("mechanism", ["ppca", "random"])
def test_a_classification_record_reruns_bit_for_bit(classification_store, mechanism, capsys):
    """The permutation's split, the release on its hold-out half (a grouped PPCA release by running
    its group again) and the classifier are replayed: accuracy, fits and release all agree."""
    store, records, data = classification_store
    record = next(r for r in records if r["mechanism"] == mechanism and r["restart"] == 1)
    assert bool(record.get("restarts_as_chains")) == (mechanism == "ppca")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = rerun(
            compose_cfg(
                [
                    f"results_dir={store}",
                    f"data_dir={data}",  # the fixture's files, whatever PRIVPCA_DATA_DIR says
                    f"+rerun={record['record_id']}",
                    "quiet=true",
                ]
            )
        )
    capsys.readouterr()
    assert result["reproduced"] is True and result["differences"] == []


def test_a_classification_record_with_another_accuracy_fails(
    classification_store, tmp_path, capsys
):
    _store, records, data = classification_store
    record = next(r for r in records if r["mechanism"] == "random")
    copy_record(record, tmp_path / "tampered", accuracy=record["accuracy"] - 1e-4)
    with pytest.raises(NotReproduced, match=r"accuracy \(by 0\.0001\)"):
        rerun(
            compose_cfg(
                [
                    f"results_dir={tmp_path / 'tampered'}",
                    f"data_dir={data}",
                    f"+rerun={record['record_id']}",
                ]
            )
        )
    capsys.readouterr()
