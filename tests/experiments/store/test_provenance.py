"""Every kind of record carries the same provenance fields, stamped by one function."""

import functools
from pathlib import Path

import pytest

import experiments.data.table1 as T
import experiments.data.uci as D
from experiments.audit import run_audit
from experiments.peers import runner as peers_runner
from experiments.peers.checks import ACCOUNTING_CALLS
from experiments.runs.extra import run_dimension_scaling
from experiments.runs.jmlr import run_sulq_bound
from experiments.runs.single import run_single, run_table1
from experiments.store.provenance import PROVENANCE_FIELDS, record_provenance
from experiments.store.store import ResultStore
from tests.hydra_helpers import compose_cfg

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "uci"


def _cfg(tmp_path, *overrides):
    return compose_cfg([f"results_dir={tmp_path}", "quiet=true", *overrides])


def _fake_accounting(epsilon, seed=0):
    """One stub row per accounting call (no peer is called)."""
    return [
        {"call": label, "mechanism": name, "nominal_epsilon": float(epsilon), "status": "stub"}
        for name, _, label in ACCOUNTING_CALLS
    ]


_REAL_SAMPLER_CHECK = peers_runner.bingham_d2_check


def _sampler_check_without_peers(kappa, draws, seed, timeout, peers):
    """privpca's real d = 2 check; a stub row for each peer (no peer worker is started)."""
    rows = _REAL_SAMPLER_CHECK(kappa, draws, seed, timeout=timeout, peers=())
    return rows + [{"implementation": p, "status": "stub", "kappa": kappa} for p in peers]


@pytest.fixture
def all_kinds(tmp_path, monkeypatch):
    """One record of each kind, each written by its real runner at the smallest size."""
    monkeypatch.setattr(D.sources, "RAW_DIR", tmp_path / "raw_empty")
    monkeypatch.setattr(T, "table1", functools.partial(T.table1, cache_dir=tmp_path / "cache"))
    monkeypatch.setattr(peers_runner, "accounting_check", _fake_accounting)
    monkeypatch.setattr(peers_runner, "bingham_d2_check", _sampler_check_without_peers)
    run_single(_cfg(tmp_path, "mechanism=mod_sulq"))
    run_table1(
        _cfg(tmp_path, "experiment=table1", f"data_dir={FIXTURES}", "experiment.datasets=[census]")
    )
    run_dimension_scaling(
        _cfg(tmp_path, "experiment=dimension_scaling", "mechanism=mod_sulq", "scale=smoke")
    )
    run_audit(_cfg(tmp_path, "experiment=audit", "mechanism=ppca", "experiment.trials=200"))
    run_peers_cfg = _cfg(
        tmp_path,
        "experiment=peers",
        "scale=smoke",
        "experiment.datasets=[]",
        "experiment.sampler_check.peers=[opendp_pca]",
        "experiment.sampler_check.draws=300",
    )
    peers_runner.run_peers(run_peers_cfg)
    run_sulq_bound(
        _cfg(
            tmp_path,
            "experiment=sulq_bound",
            "experiment.dims=[50]",
            "experiment.epsilons=[0.1]",
            "experiment.log10_n.num=2",
        )
    )
    return list(ResultStore(tmp_path).iter_records())


@pytest.mark.slow
def test_every_record_kind_has_the_same_provenance_fields(all_kinds):
    kinds = {(r["experiment"], r.get("kind")) for r in all_kinds}
    assert {e for e, _ in kinds} == {
        "single",
        "table1",
        "dimension_scaling",
        "audit",
        "peers_sampler_check",
        "peers_accounting",
        "sulq_bound",
    }
    assert ("dimension_scaling", "summary") in kinds
    for rec in all_kinds:
        missing = [f for f in PROVENANCE_FIELDS if rec.get(f) is None]
        assert not missing, f"{rec['experiment']} record lacks {missing}"
        assert rec["provenance"].keys() == record_provenance(compose_cfg([]))["provenance"].keys()
        assert "blas_threads" in rec["provenance"]
        assert isinstance(rec["config"], dict) and rec["config"]["experiment"]["name"]


def test_record_provenance_fields():
    stamp = record_provenance(compose_cfg([]), timestamp="t")
    assert tuple(stamp) == PROVENANCE_FIELDS and stamp["timestamp"] == "t"
