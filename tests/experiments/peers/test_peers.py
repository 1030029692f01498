"""The peers run by the harness (experiments/peers/): protocol, wall-clock cap, certified ε, d = 2 check.

Most tests drive the harness side with a stand-in worker (tests/fixtures/fake_peer_worker.py) that
speaks the same file protocol as experiments/peers/worker.py but needs no peer library. The tests
of the real peers run in whichever of this environment and .venv-peers holds the peer; when neither
does they skip, saying why -- except in CI (CI=true, where .ci/run builds .venv-peers), where a
missing peer is a failure.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats

from experiments import peers
from experiments.peers import (
    PeerError,
    PeerUnavailableError,
    adapters,
    bingham_d2_target,
    diffprivlib_pca,
    environment,
    opendp_pca,
    run_peer_pca,
)
from mechanisms._base import PreparedData, PrivacyInputError
from mechanisms.bingham import sample_vector_bingham
from mechanisms.metrics import optimal_q_F, q_F
from tests.conftest import unit_ball_data

REPO = Path(__file__).resolve().parents[3]
FAKE = REPO / "tests" / "fixtures" / "fake_peer_worker.py"


@pytest.fixture
def fake_peer(monkeypatch):
    """Configure the stand-in worker's behaviour for this test (through its environment)."""

    def configure(**behaviour):
        monkeypatch.setenv("PRIVPCA_FAKE_PEER", json.dumps(behaviour))

    configure()
    return configure


def test_protocol_round_trip_and_certified_epsilon(fake_peer, small_data):
    """The components come back intact, and the guarantee carries the ε the peer certifies (here 2x the
    requested one, as OpenDP's PCA class does), not the ε that was asked for."""
    fake_peer(certify_factor=2.0)
    out = run_peer_pca(
        "opendp_pca",
        small_data,
        3,
        rng=np.random.default_rng(0),
        epsilon=0.5,
        timeout=60,
        worker=FAKE,
    )
    A = small_data.T @ small_data / small_data.shape[0]
    assert out.status == "ok" and out.components.shape == (8, 3)
    assert q_F(out.components, A) == pytest.approx(optimal_q_F(A, 3), rel=1e-12)
    g = out.guarantee
    assert g.epsilon == pytest.approx(1.0) and g.delta == 0.0
    assert g.neighbouring == "replace-one-row" and g.exact is False
    assert "own accounting" in g.note
    assert out.diagnostics["requested_epsilon"] == 0.5
    assert out.diagnostics["subprocess_seconds"] > 0


def test_request_carries_k_epsilon_seed_and_options(fake_peer, small_data, tmp_path, monkeypatch):
    """The worker receives what the adapter was given; the seed comes from ``rng`` (same rng, same seed)."""
    seen = []
    real = adapters.call_worker

    def spy(python, request, **kw):
        seen.append(dict(request))
        return real(python, request, **kw)

    monkeypatch.setattr(adapters, "call_worker", spy)
    for _ in range(2):
        opendp_pca(
            small_data,
            2,
            rng=np.random.default_rng(7),
            epsilon=0.3,
            api="sklearn",
            match_certified=False,
            worker=FAKE,
        )
    assert seen[0] == seen[1]
    assert seen[0]["k"] == 2 and seen[0]["epsilon"] == 0.3 and seen[0]["peer"] == "opendp"
    assert seen[0]["api"] == "sklearn" and seen[0]["match_certified"] is False
    assert seen[0]["seed"] == int(np.random.default_rng(7).integers(0, 2**32 - 1))


def test_stall_becomes_a_timeout_record_and_the_worker_is_killed(fake_peer, small_data, tmp_path):
    pid_file = tmp_path / "pid"
    fake_peer(sleep_after_plan=120, certify_factor=1.0, pid_file=str(pid_file))
    t0 = time.perf_counter()
    out = diffprivlib_pca(
        small_data, 2, rng=np.random.default_rng(0), epsilon=0.1, timeout=2.0, worker=FAKE
    )
    elapsed = time.perf_counter() - t0
    assert elapsed < 30, elapsed  # the cap (2 s) plus process start-up, never the 120 s stall
    assert (
        out.components is None and out.status == "timeout" and out.release == {"status": "timeout"}
    )
    assert out.guarantee.epsilon == pytest.approx(0.1)  # from the plan written before the stall
    pid = int(pid_file.read_text())
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_timeout_before_the_peer_states_its_accounting_certifies_nothing(fake_peer, small_data):
    fake_peer(sleep_before_plan=120)
    out = diffprivlib_pca(
        small_data, 2, rng=np.random.default_rng(0), epsilon=0.1, timeout=2.0, worker=FAKE
    )
    assert out.status == "timeout" and np.isnan(out.guarantee.epsilon)
    assert "before the peer stated" in out.guarantee.note


def test_a_timeout_is_said_on_the_terminal(fake_peer, small_data, capsys):
    fake_peer(sleep_before_plan=120)
    diffprivlib_pca(
        small_data, 2, rng=np.random.default_rng(0), epsilon=0.1, timeout=2.0, worker=FAKE
    )
    err = capsys.readouterr().err
    assert "diffprivlib_pca: timed out after 2 s" in err


def test_peer_failure_is_an_error_not_a_record(fake_peer, small_data):
    fake_peer(fail=True)
    with pytest.raises(PeerError, match="fake failure"):
        diffprivlib_pca(small_data, 2, rng=np.random.default_rng(0), epsilon=0.1, worker=FAKE)


def test_bad_input_is_refused_before_any_subprocess(fake_peer, small_data):
    with pytest.raises(PrivacyInputError):
        diffprivlib_pca(small_data * 2, 2, rng=np.random.default_rng(0), epsilon=0.1, worker=FAKE)
    with pytest.raises(PrivacyInputError):
        diffprivlib_pca(small_data, 2, rng=np.random.default_rng(0), epsilon=-1, worker=FAKE)
    with pytest.raises(PrivacyInputError):
        diffprivlib_pca(small_data, 8, rng=np.random.default_rng(0), epsilon=1, worker=FAKE)
    with pytest.raises(ValueError, match="timeout"):
        diffprivlib_pca(
            small_data, 2, rng=np.random.default_rng(0), epsilon=1, timeout=0, worker=FAKE
        )


def test_prepared_data_is_written_once_and_removed_with_it(fake_peer, small_data):
    data = PreparedData(small_data)
    path = environment._data_file(data.X)
    assert path is not None and path.exists() and environment._data_file(data.X) == path
    out = diffprivlib_pca(data, 2, rng=np.random.default_rng(0), epsilon=1, worker=FAKE)
    assert out.status == "ok"
    del data, out
    import gc

    gc.collect()
    assert not path.exists()


@pytest.mark.slow
def test_audit_runs_a_peer_batched_and_catches_an_overclaiming_one(fake_peer, tmp_path):
    """The design audit runs a peer's many releases in one worker process per data set (not one
    per release).  The stand-in peer draws exactly from exp(c·uᵀXᵀXu), which is (2c)-DP under
    replace-one-row, while its accounting certifies ε = 1: with c = 1/2 the audit finds nothing
    (bound below 1), with c = 2 (true ε = 4, the design tuned for 4) it finds the violation.
    2,000 runs per data set; the bounds are at 95% confidence, with fixed seeds."""
    from experiments.audit import audit_mechanism

    bounds = {}
    for scale in (0.5, 2.0):
        log = tmp_path / f"pids{scale}"
        fake_peer(certify_factor=1.0, bingham_scale=scale, pid_log=str(log))
        res = audit_mechanism(
            "diffprivlib_pca",
            epsilon=1.0,
            trials=2000,
            design_epsilon=2 * scale,
            worker=str(FAKE),
        )
        assert res["design"] == "bingham" and res["claimed_epsilon"] == 1.0
        bounds[scale] = res["audited_epsilon_lower"]
        # the probe, the first release, then one batch per data set
        assert len(log.read_text().split()) == 4
    assert bounds[0.5] < 1.0 < bounds[2.0], bounds


@pytest.mark.slow
def test_cli_audit_of_a_peer_refuses_the_modes_it_cannot_run(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "run.py"),
            "experiment=audit",
            "mechanism=diffprivlib_pca",
            "experiment.mode=search",
            f"results_dir={tmp_path}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "diffprivlib_pca is a peer" in lines[0] and "experiment.mode=design" in lines[0]


def test_unavailable_peer_is_one_clear_error(monkeypatch):
    environment._probe_cached.cache_clear()
    with pytest.raises(PeerUnavailableError) as err:
        peers.peer_python("diffprivlib_pca", python="/bin/false", install=False)
    assert isinstance(err.value, SystemExit)
    msg = str(err.value.code)
    assert (
        msg.startswith("privpca: mechanism diffprivlib_pca needs diffprivlib") and "\n" not in msg
    )


@pytest.mark.slow
def test_cli_unavailable_peer_prints_one_line_without_traceback(tmp_path):
    env = {**os.environ, "PRIVPCA_PEERS_INSTALL": "0"}
    proc = subprocess.run(
        [
            sys.executable,
            "run.py",
            "mechanism=diffprivlib_pca",
            "mechanism.fn.python=/bin/false",
            "mechanism.fn.install=false",
            "dataset.size=200",
            f"results_dir={tmp_path}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("privpca: mechanism diffprivlib_pca needs diffprivlib"), proc.stderr


@pytest.mark.slow
def test_runner_records_timeouts_and_skips_further_restarts(fake_peer, tmp_path):
    from experiments.store.store import ResultStore
    from tests.hydra_helpers import compose_cfg

    fake_peer(sleep_after_plan=120, certify_factor=2.0)
    cfg = compose_cfg(
        [
            "experiment=peers",
            "scale=smoke",
            f"results_dir={tmp_path}",
            "quiet=true",
            "experiment.datasets=[gaussian10]",
            "experiment.mechanisms=[ppca_iterative,opendp_pca]",
            "experiment.epsilons=[1.0]",
            "experiment.n_grid=[300]",
            "experiment.restarts=2",
            "experiment.timeout=2",
            f"+experiment.mechanism_params.opendp_pca.worker={FAKE}",
            "experiment.sampler_check.peers=[]",
            "experiment.sampler_check.draws=300",
        ]
    )
    result = peers.run_peers(cfg)
    df = ResultStore(tmp_path).load(experiment="peers")
    ours = df[df.mechanism == "ppca_iterative"]
    theirs = df[df.mechanism == "opendp_pca"]
    assert len(ours) == 2 and set(ours.status) == {"ok"} and ours.epsilon.eq(1.0).all()
    assert (
        len(theirs) == 1 and theirs.status.iloc[0] == "timeout"
    )  # second restart skipped after the stall
    assert theirs.epsilon.iloc[0] == pytest.approx(2.0)  # the certified ε, not the requested 1.0
    assert theirs.epsilon_requested.iloc[0] == 1.0
    table = (tmp_path / "tables" / "peers.csv").read_text()
    assert (
        "opendp_pca" in table and result["records_written"] == 4
    )  # 3 runs + the privpca sampler check
    again = peers.run_peers(cfg)  # resumes: nothing new, the stalled cell is not retried
    assert again["records_written"] == 0

    from experiments.figures import peers as plot

    assert plot.main(["--results", str(tmp_path), "--out", str(tmp_path / "fig")]) == 0
    assert {p.name for p in (tmp_path / "fig").glob("*.png")} == {
        "peers.png",
        "peers_time.png",
        "peers_sampler.png",
    }


# --------------------------------------------------------------------------- d = 2 sampler check


@pytest.mark.parametrize("kappa", [0.5, 10.0, 40.0])
def test_d2_target_law_matches_quadrature(kappa):
    """Closed form E[sin²θ] = (1 − I₁(κ/2)/I₀(κ/2))/2 against direct quadrature of exp(κ cos²θ) on [0, 2π)."""
    t = bingham_d2_target(kappa)
    w = lambda th: np.exp(kappa * np.cos(th) ** 2)  # noqa: E731
    z = integrate.quad(w, 0, 2 * np.pi, limit=200)[0]
    mean = integrate.quad(lambda th: np.sin(th) ** 2 * w(th), 0, 2 * np.pi, limit=200)[0] / z
    assert t["mean_sin2"] == pytest.approx(mean, rel=1e-8)
    assert t["cdf"](0.0) == pytest.approx(0.0, abs=1e-12) and t["cdf"](1.0) == pytest.approx(
        1.0, rel=1e-10
    )
    half = integrate.quad(w, -np.pi / 4, np.pi / 4)[0] * 2 / z  # P(sin²θ <= 1/2)
    assert t["cdf"](0.5) == pytest.approx(half, rel=1e-8)


def _acg_proposals(kappa, size, rng):
    """ACG envelope of Kent et al. (2018) for B = diag(κ, 0): (unit vectors, Ω, b, log M)."""
    A = np.diag([0.0, kappa])  # exp(−uᵀAu) ∝ exp(κ u₁²)
    lam = np.diag(A)
    from scipy.optimize import brentq

    b = brentq(lambda b: np.sum(1 / (b + 2 * lam)) - 1, 1e-9, 2.0)
    omega = 1 + 2 * lam / b
    y = rng.standard_normal((size, 2)) / np.sqrt(omega)
    u = y / np.linalg.norm(y, axis=1)[:, None]
    log_m = -(2 - b) / 2 + np.log(2 / b)
    return u, u**2 @ lam, u**2 @ omega, log_m


def test_d2_check_accepts_the_exact_sampler_and_rejects_an_inverted_acceptance_ratio():
    """The check's power: privpca's sampler passes (|z| < 4, KS p > 1e-3, fixed seed), while the same
    ACG envelope with the acceptance ratio's (uᵀΩu)^{d/2} factor inverted -- the defect described in
    docs/peers.md -- is rejected with z < −10 at the same number of draws."""
    kappa, n = 10.0, 4000
    t = bingham_d2_target(kappa)
    ours = sample_vector_bingham(np.diag([kappa, 0.0]), size=n, rng=np.random.default_rng(3))
    s2 = ours[:, 1] ** 2
    z = (s2.mean() - t["mean_sin2"]) / (s2.std(ddof=1) / np.sqrt(n))
    assert abs(z) < 4 and stats.kstest(s2, t["cdf"]).pvalue > 1e-3

    rng = np.random.default_rng(4)
    kept = []
    while len(kept) < n:
        u, quad_a, quad_omega, log_m = _acg_proposals(kappa, 4 * n, rng)
        log_ratio = -quad_a - log_m - 1.0 * np.log(quad_omega)  # (uᵀΩu)^{-d/2}, d = 2: inverted
        kept.extend(u[np.log(rng.random(len(u))) < log_ratio])
    bad = np.asarray(kept[:n])[:, 1] ** 2
    z_bad = (bad.mean() - t["mean_sin2"]) / (bad.std(ddof=1) / np.sqrt(n))
    assert z_bad < -10 and stats.kstest(bad, t["cdf"]).pvalue < 1e-10


# --------------------------------------------------------------------------- the real peers


def _peer_or_skip(name):
    """The interpreter that runs peer ``name``; skip without one -- fail in CI (CI=true)."""
    try:
        return peers.peer_python(name, install=False)
    except PeerUnavailableError as exc:
        how = "create it once with make peers-venv"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but the real-peer tests cannot run: {exc.message} ({how})")
        pytest.skip(f"{exc.message} ({how})")


@pytest.mark.slow
def test_real_diffprivlib_certifies_the_requested_epsilon():
    _peer_or_skip("diffprivlib_pca")
    X = unit_ball_data(500, 6, np.random.default_rng(1), spectrum=[5, 1, 0.5, 0.2, 0.1, 0.1])
    out = diffprivlib_pca(X, 2, rng=np.random.default_rng(0), epsilon=0.5, timeout=120)
    assert out.status == "ok" and np.allclose(
        out.components.T @ out.components, np.eye(2), atol=1e-10
    )
    assert (
        out.guarantee.epsilon == pytest.approx(0.5)
        and out.diagnostics["peer_versions"]["diffprivlib"] == "0.6.6"
    )
    again = diffprivlib_pca(X, 2, rng=np.random.default_rng(0), epsilon=0.5, timeout=120)
    assert np.array_equal(again.components, out.components)  # seeded from rng


@pytest.mark.slow
def test_real_opendp_certified_epsilon_and_its_2x_sklearn_class():
    _peer_or_skip("opendp_pca")
    X = unit_ball_data(500, 6, np.random.default_rng(1), spectrum=[5, 1, 0.5, 0.2, 0.1, 0.1])
    matched = opendp_pca(X, 2, rng=np.random.default_rng(0), epsilon=0.5, timeout=120)
    assert matched.status == "ok" and np.allclose(
        matched.components.T @ matched.components, np.eye(2), atol=1e-10
    )
    assert matched.guarantee.epsilon == pytest.approx(0.5, rel=1e-9)
    nominal = opendp_pca(
        X,
        2,
        rng=np.random.default_rng(0),
        epsilon=0.5,
        timeout=120,
        api="sklearn",
        match_certified=False,
    )
    assert nominal.guarantee.epsilon == pytest.approx(
        1.0, rel=1e-9
    )  # PCA(epsilon=0.5) certifies 1.0
    assert nominal.diagnostics["nominal_epsilon"] == 0.5


@pytest.mark.slow
def test_real_peers_samplers_miss_the_target_law():
    _peer_or_skip("diffprivlib_pca")
    rows = peers.bingham_d2_check(kappa=10.0, draws=400, seed=0, timeout=600)
    by = {r["implementation"]: r for r in rows}
    assert abs(by["privpca"]["z"]) < 4
    for name in ("diffprivlib_pca", "opendp_pca"):
        assert by[name]["status"] == "ok" and by[name]["z"] < -6, by[name]


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, exited but not reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in state


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_a_worker_whose_harness_is_gone_exits():
    """A worker runs in a session of its own, out of reach of a signal to the harness's process
    group: when the process that started it dies, it must exit by itself, not run on."""
    child = (
        "import sys, time; sys.path.insert(0, %r);"
        "from experiments.peers.worker import _exit_with_parent;"
        "_exit_with_parent(0.05); time.sleep(60)"
    ) % str(REPO)
    harness = (
        "import os, subprocess, sys;"
        "p = subprocess.Popen([sys.executable, '-c', %r], start_new_session=True,"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,"
        " env=dict(os.environ, PRIVPCA_PEER_PARENT=str(os.getpid())));"
        "print(p.pid, flush=True); os._exit(0)"
    ) % child
    out = subprocess.run(
        [sys.executable, "-c", harness], capture_output=True, text=True, timeout=60
    )
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 30  # the child's imports, then one poll interval
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(pid), "the worker outlived its harness"
