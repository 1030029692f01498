"""A plan's jobs write the very records of the unsplit runners: the same record ids and the same
releases (components_sha256), q_F, accuracies, diagnostics and Figure 2 traces, at smoke scale."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from experiments.plan.cli import portable_config
from experiments.plan.engine import execute_runner
from experiments.plan.plan import Job
from experiments.store.store import ResultStore
from tests.hydra_helpers import compose_cfg

pytestmark = pytest.mark.realdata

#: what must agree between the two stores (timings and provenance may not)
FIELDS = ("components_sha256", "q_F", "accuracy", "rhat", "ess", "group_restarts",
          "mechanism_stream", "subset_stream", "n", "subset", "restart", "top_concentration")  # fmt: skip


def _run(tmp_path, name, overrides):
    cfg = compose_cfg([*overrides, f"results_dir={tmp_path}", "quiet=true", "progress=false"])
    job = Job(name, "test", tuple(overrides), "test", 1.0)
    return execute_runner(job, portable_config(cfg), str(tmp_path))


def _records(root):
    return {r["record_id"]: r for r in ResultStore(root).iter_records()}


def _same(whole, parts):
    a, b = _records(whole), _records(parts)
    assert a and sorted(a) == sorted(b)
    for rid in a:
        for f in FIELDS:
            assert a[rid].get(f) == b[rid].get(f), (rid, f)
        assert a[rid].get("traces") == b[rid].get("traces"), rid
        assert a[rid]["run_key"] == b[rid]["run_key"]


GROUPED = ["++scale.ppca_restarts_as_chains=true", "scale.restarts.ppca=2"]
CASES = {
    "utility_vs_n ppca groups": (
        [
            "experiment=utility_vs_n",
            "dataset=insurance",
            "mechanism=ppca",
            "scale=smoke",
            "scale.subsets=2",
            *GROUPED,
        ],  # fmt: skip
        [f"experiment.only={{n_index:{i},subset:{s}}}" for i in range(2) for s in range(2)],
    ),
    "utility_vs_n mod_sulq by n": (
        ["experiment=utility_vs_n", "dataset=insurance", "mechanism=mod_sulq", "scale=smoke"],
        [f"experiment.only={{n_index:{i}}}" for i in range(3)],  # an index past the grid: nothing
    ),
    "classification random by round": (
        [
            "experiment=classification",
            "dataset=insurance",
            "mechanism=random",
            "scale=smoke",
            "scale.classification.permutations=2",
            "scale.classification.projections=2",
        ],  # fmt: skip
        [f"experiment.only={{permutation:{p},projection:{j}}}" for p in range(2) for j in range(2)],
    ),
    "classification ppca groups by permutation": (
        [
            "experiment=classification",
            "dataset=insurance",
            "mechanism=ppca",
            "scale=smoke",
            "scale.classification.permutations=2",
            "scale.classification.projections=2",
            *GROUPED,
        ],  # fmt: skip
        [f"experiment.only={{permutation:{p}}}" for p in range(2)],
    ),
    "utility_vs_epsilon ppca by epsilon": (
        [
            "experiment=utility_vs_epsilon",
            "mechanism=ppca",
            "scale=smoke",
            "experiment.epsilons=[0.1,1.0]",
            "scale.epsilon_samples=2",
        ],  # fmt: skip
        [
            f"experiment.only={{epsilon_index:{i}}}" for i in range(3)
        ],  # an index past the grid: nothing
    ),
    "dimension_scaling by d": (
        ["experiment=dimension_scaling", "mechanism=mod_sulq", "scale=smoke"],
        [f"experiment.only={{d_index:{i}}}" for i in range(3)],  # an index past the grid: nothing
    ),
    "online_regret by variant and restart": (
        ["experiment=online_regret", "scale=smoke", "experiment.grids.smoke.restarts=2"],
        [f"experiment.only={{variant_index:{v},restart:{r}}}" for v in range(2) for r in range(3)],
    ),  # restart 2 is past the grid: nothing
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_parts_write_the_runners_records(tmp_path, case):
    base, parts = CASES[case]
    _run(tmp_path / "whole", "whole", base)
    for i, sel in enumerate(parts):
        _run(tmp_path / "parts", f"part{i}", [*base, sel])
    _same(tmp_path / "whole", tmp_path / "parts")


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["gibbs", "reference"])
def test_figure2_chains_as_parts_make_the_record(tmp_path, sampler):
    base = ["experiment=gibbs_convergence", "dataset=insurance", "scale=smoke",
            f"experiment.sampler={sampler}", "scale.gibbs.chains=3"]  # fmt: skip
    _run(tmp_path / "whole", "whole", base)
    for c in range(3):
        timing = _run(tmp_path / "parts", f"chain{c}", [*base, f"experiment.only={{chain:{c}}}"])
        assert timing["records_written"] == 0
    assert not _records(tmp_path / "parts")
    _run(tmp_path / "parts", "record", base)
    _same(tmp_path / "whole", tmp_path / "parts")
    rec = next(iter(_records(tmp_path / "parts").values()))
    assert rec["traces"]["log_F"] and rec["rhat"] is not None


def test_a_dimension_scaling_job_searches_its_own_d_alone(tmp_path):
    base = ["experiment=dimension_scaling", "mechanism=pca", "scale=smoke"]
    dims = []
    for i in range(3):
        _run(tmp_path / f"d{i}", f"d{i}", [*base, f"experiment.only={{d_index:{i}}}"])
        dims.append({r["d"] for r in _records(tmp_path / f"d{i}").values()})
    assert dims == [{6}, {12}, set()]  # smoke's grid: d = 6, 12; an index past it: nothing


def test_an_online_regret_job_runs_its_own_variant_and_restart_alone(tmp_path):
    base = ["experiment=online_regret", "scale=smoke", "experiment.grids.smoke.restarts=2"]
    _run(tmp_path, "v1r0", [*base, "experiment.only={variant_index:1,restart:0}"])
    runs = [(r["tree"], r["restart"]) for r in _records(tmp_path).values()]
    assert runs == [(True, 0)]  # variants [false, true]: index 1 is the tree version


def test_selector_refuses_unknown_keys_and_partial_groups(tmp_path):
    from experiments.runs.settings import ClassificationSettings, UtilityVsNSettings

    cfg = compose_cfg(["experiment=utility_vs_n", "experiment.only={chain:1}"])
    with pytest.raises(ValueError, match="unknown key"):
        UtilityVsNSettings.from_config(cfg)
    cfg = compose_cfg(["experiment=classification", "experiment.only={permutation:1}"])
    assert ClassificationSettings.from_config(cfg).selected("permutation", 3) == [1]
    with pytest.raises(ValueError, match="by permutation"):
        _run(tmp_path, "x", ["experiment=classification", "dataset=insurance", "mechanism=ppca",
                             "scale=smoke", *GROUPED, "scale.classification.projections=2",
                             "experiment.only={permutation:0,projection:0}"])  # fmt: skip


def test_a_job_sets_figure5s_epsilon_as_run_py_does(tmp_path):
    """Figure 5's runner sets ``epsilon`` for each point of its grid, and the mechanism's
    ``epsilon: ${epsilon}`` must follow, in a plan's job as under ``run.py``: a config sent to a
    worker with its interpolations resolved ran every point at the default ε (0.1)."""
    from hydra.utils import instantiate

    overrides = ["experiment=utility_vs_epsilon", "mechanism=mod_sulq", "scale=smoke"]
    _run(tmp_path / "job", "figure5/mod_sulq", overrides)
    cfg = compose_cfg(
        [*overrides, f"results_dir={tmp_path / 'run'}", "quiet=true", "progress=false"]
    )
    instantiate(cfg.experiment.run)(cfg)  # what run.py's task does with the composed config
    _same(tmp_path / "run", tmp_path / "job")
    records = _records(tmp_path / "job").values()
    grid = {r["epsilon_grid"] for r in records}
    assert len(grid) > 1 and all(r["epsilon"] == r["epsilon_grid"] for r in records)
    assert len({r["noise_scale"] for r in records}) == len(grid)


def test_a_job_config_resolves_only_resolver_calls():
    """What calls a resolver is resolved where the config was composed; the rest stays live."""
    cfg = OmegaConf.create(
        {"epsilon": 0.1, "m": {"fn": {"epsilon": "${epsilon}"}}, "e": "${oc.env:HOME,null}"}
    )
    raw = portable_config(cfg)
    assert raw["m"]["fn"]["epsilon"] == "${epsilon}" and raw["e"] == cfg.e != "${oc.env:HOME,null}"
    live = OmegaConf.create(raw)
    live.epsilon = 2.0
    assert live.m.fn.epsilon == 2.0
