"""``scale.ppca_left_from_n``: the Figures 3-4 PPCA groups at and above a data set's n run the left
Givens chain; below it, for other data sets, for a Table 2 permutation and for a sampler named on the
command line, the configured sampler stays."""

import warnings

import pytest

from experiments.runs.jmlr import run_utility_vs_n
from experiments.runs.ppca_groups import group_key, group_sampler
from experiments.runs.rerun import rerun
from experiments.runs.sweep import n_grid
from experiments.store.store import ResultStore
from tests.hydra_helpers import compose_cfg


def _cfg(tmp_path, *extra):
    return compose_cfg(
        [
            "experiment=utility_vs_n",
            "mechanism=ppca",
            "scale=smoke",
            "dataset=gaussian10",
            f"results_dir={tmp_path}",
            "quiet=true",
            "k=2",
            "+scale.ppca_restarts_as_chains=true",
            "scale.restarts.ppca=2",
            "ppca_iterations=60",
            *extra,
        ]
    )


def test_the_sampler_follows_the_threshold(tmp_path):
    cfg = _cfg(tmp_path, "+scale.ppca_left_from_n={gaussian10: 5000}")
    assert group_sampler(cfg, 5000) == "left" and group_sampler(cfg, 80_000) == "left"
    assert group_sampler(cfg, 4999) is None
    assert group_sampler(cfg, None) is None  # a Table 2 permutation
    other = _cfg(tmp_path, "+scale.ppca_left_from_n={census: 10}")
    assert group_sampler(other, 5000) is None
    assert group_sampler(_cfg(tmp_path), 5000) is None  # no threshold set
    named = _cfg(tmp_path, "+scale.ppca_left_from_n={gaussian10: 10}", "mechanism.fn.sampler=gibbs")
    assert group_sampler(named, 5000) is None
    # the sampler is in the run key: a left group's records are not the Givens group's
    above, below = group_key(cfg, 5000, 0, 0), group_key(cfg, 4999, 0, 0)
    assert above["mechanism_params"]["sampler"] == "left"
    assert below["mechanism_params"]["sampler"] == "auto"
    assert group_key(_cfg(tmp_path), 5000, 0, 0)["mechanism_params"]["sampler"] == "auto"


@pytest.mark.slow
def test_groups_above_the_threshold_release_by_the_left_chain_and_rerun(tmp_path):
    """The smoke grid has two sizes; the threshold sits between them."""
    base = _cfg(tmp_path)
    small, full = n_grid(int(base.dataset.size), int(base.scale.n_min), int(base.scale.n_points))
    cfg = _cfg(tmp_path, f"+scale.ppca_left_from_n={{gaussian10: {small + 1}}}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # 60 iterations: diagnostics may fail
        assert run_utility_vs_n(cfg)["records_written"] == 4
    recs = ResultStore(tmp_path).load()
    by_n = dict(zip(recs.n, recs["release.sampler"]))
    assert sorted(by_n) == [small, full]
    assert by_n[small] == "gibbs" and by_n[full] == "left"
    left = recs[recs.n == full]
    assert set(left["run_key.mechanism_params.sampler"]) == {"left"}
    assert set(left["diagnostics_not_private.diagnosed_chains"]) == {2}
    # a left record re-runs bit for bit from its stored configuration (its whole group again)
    rid = left.record_id.iloc[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = rerun(compose_cfg([f"results_dir={tmp_path}", f"+rerun={rid}"]))
    assert result["reproduced"] is True
