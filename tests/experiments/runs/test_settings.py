"""The experiments' typed settings: each experiment's keys read and checked once, into a frozen
dataclass, with the yaml as the one source of their defaults and the one-line refusals the command
line shows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from omegaconf import open_dict

from experiments.audit.settings import AUDIT_REVISION, AuditSettings
from experiments.audit.variants import PLANTED_VARIANTS, SUBSPACE_EXACT_VARIANTS
from experiments.errors import UserError
from experiments.peers.settings import PeersSettings
from experiments.runs.classification import classification_protocol
from experiments.runs.settings import (
    ClassificationSettings,
    DimensionScalingSettings,
    GibbsConvergenceSettings,
    OnlineRegretSettings,
    SulqBoundSettings,
    UtilityVsEpsilonSettings,
    UtilityVsNSettings,
)
from tests.hydra_helpers import compose_cfg

#: each settings class and the overrides that compose its experiment
SETTINGS = {
    AuditSettings: ["experiment=audit"],
    PeersSettings: ["experiment=peers"],
    UtilityVsNSettings: ["experiment=utility_vs_n", "scale=smoke"],
    UtilityVsEpsilonSettings: ["experiment=utility_vs_epsilon", "scale=smoke"],
    SulqBoundSettings: ["experiment=sulq_bound"],
    GibbsConvergenceSettings: ["experiment=gibbs_convergence", "scale=smoke"],
    ClassificationSettings: ["experiment=classification", "scale=smoke"],
    DimensionScalingSettings: ["experiment=dimension_scaling", "scale=smoke"],
    OnlineRegretSettings: ["experiment=online_regret", "scale=smoke"],
}


def _settings(cls, *extra):
    return cls.from_config(compose_cfg(SETTINGS[cls] + list(extra)))


@pytest.mark.parametrize("cls", list(SETTINGS), ids=lambda c: c.__name__)
def test_settings_are_frozen_and_have_no_default_of_their_own(cls):
    s = _settings(cls)
    field = dataclasses.fields(cls)[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(s, field.name, getattr(s, field.name))
    for f in dataclasses.fields(cls):
        assert f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING, f.name


def _yaml_keys(cls) -> list[str]:
    cfg = compose_cfg(SETTINGS[cls])
    return [k for k in cfg.experiment if k not in ("name", "run")]


#: keys read only when they act, with the overrides that make them act
ACTING = {
    "svm_C_grid": ["experiment.classifier=linear"],
    "svm_log2_gamma": ["experiment.classifier=rbf"],
    "svm_cv_rows": ["experiment.classifier=rbf"],
    "random_entries": ["mechanism=random"],
    "random_projection": ["mechanism=random"],
}
#: the explicit overrides of the scale's grid (null: the grid's value): the grid holds every value
GRID_OVERRIDES = {
    DimensionScalingSettings: {"dims", "n_min", "n_max", "restarts", "max_cells"},
    OnlineRegretSettings: {"m", "d", "restarts"},
}
YAML_KEYS = [
    (cls, key)
    for cls in SETTINGS
    for key in _yaml_keys(cls)
    if key not in GRID_OVERRIDES.get(cls, set())
]


@pytest.mark.parametrize("cls,key", YAML_KEYS, ids=[f"{c.__name__}-{k}" for c, k in YAML_KEYS])
def test_every_yaml_key_is_read_with_no_second_default(cls, key):
    """The yaml is the one source of each default: a key taken out of the config is an error, not
    replaced by a default written in the code."""
    cfg = compose_cfg(SETTINGS[cls] + ACTING.get(key, []))
    cls.from_config(cfg)
    with open_dict(cfg):
        del cfg.experiment[key]
    with pytest.raises((AttributeError, KeyError)):
        cls.from_config(cfg)


# -- the refusals: the words the command line prints ---------------------------------------------------

REFUSALS = [
    (
        AuditSettings,
        ["experiment.mode=whitebx"],
        "experiment.mode must be design, search or whitebox, got 'whitebx'",
    ),
    (AuditSettings, ["experiment.trials=0"], "experiment.trials must be an integer >= 2, got 0"),
    (
        AuditSettings,
        ["mechanism=diffprivlib_pca", "experiment.mode=search"],
        "diffprivlib_pca is a peer (run in its own process): it is audited with "
        "experiment.mode=design and no variant, noise_factor or row_norm",
    ),
    (
        AuditSettings,
        ["experiment.mechanism=mod_sulq", "experiment.variant=unfixed"],
        "experiment.variant=unfixed is a known-broken subspace_exact (mechanism subspace_exact)",
    ),
    (
        AuditSettings,
        ["experiment.variant=foo"],
        "experiment.variant must be null, noise_cut or one of "
        f"{sorted(SUBSPACE_EXACT_VARIANTS) + sorted(PLANTED_VARIANTS)}, got 'foo'",
    ),
    (
        GibbsConvergenceSettings,
        ["experiment.sweeps_per_iteration=0"],
        "experiment.sweeps_per_iteration must be a positive integer, for experiment.sampler=gibbs",
    ),
    (
        GibbsConvergenceSettings,
        ["experiment.sweeps_per_iteration=1", "experiment.sampler=reference"],
        "experiment.sweeps_per_iteration must be a positive integer, for experiment.sampler=gibbs",
    ),
    (
        ClassificationSettings,
        ["experiment.classifier=knn"],
        "experiment.classifier must be one of ('linear_csvc', 'rbf_default', 'rbf', 'linear'), "
        "got 'knn'",
    ),
    (
        ClassificationSettings,
        ["experiment.svm_loss=log"],
        "experiment.svm_loss must be one of ('hinge', 'squared_hinge'), got 'log'",
    ),
    (
        ClassificationSettings,
        ["experiment.feature_scaling=l2"],
        "experiment.feature_scaling must be one of ('none', 'standard', 'minmax'), got 'l2'",
    ),
    (
        ClassificationSettings,
        ["experiment.svm_log2_C=[3,1,1]"],
        "log2 grid needs start <= stop and step > 0, got [3, 1, 1]",
    ),
    (
        ClassificationSettings,
        ["mechanism=random", "experiment.random_entries=beta"],
        "experiment.random_entries must be one of ('gaussian', 'uniform'), got 'beta'",
    ),
    (
        ClassificationSettings,
        ["mechanism=random", "experiment.random_projection=skew"],
        "experiment.random_projection must be 'orthonormal' or 'raw', got 'skew'",
    ),
    (
        DimensionScalingSettings,
        ["dataset=gaussian10"],
        "experiment dimension_scaling runs on the spiked model: use dataset=spiked (got gaussian10)",
    ),
    (
        DimensionScalingSettings,
        ["scale.name=nosuch"],
        "experiment dimension_scaling: no grid for scale 'nosuch' (have ['paper', 'quick', 'smoke'])",
    ),
    (
        OnlineRegretSettings,
        ["mechanism=pca"],
        "experiment=online_regret needs mechanism=online_pca",
    ),
]


@pytest.mark.parametrize("cls,overrides,message", REFUSALS, ids=[m[:40] for _, _, m in REFUSALS])
def test_a_bad_setting_is_refused_in_one_line_naming_it(cls, overrides, message):
    """A ``ValueError`` (not a :class:`UserError`: run.py then names the override the user set,
    "Error (experiment option refused): ... (you set ...)")."""
    with pytest.raises(ValueError) as err:
        _settings(cls, *overrides)
    assert str(err.value) == message and not isinstance(err.value, UserError)


def test_a_tree_override_of_online_regret_is_a_user_error():
    with pytest.raises(UserError, match="takes its tree values from experiment.variants"):
        _settings(OnlineRegretSettings, "mechanism.fn.tree=false")


# -- the values ----------------------------------------------------------------------------------------


def test_audit_settings_and_their_run_key():
    s = _settings(AuditSettings)
    assert (s.mechanism, s.mode, s.variant, s.trials, s.k, s.n) == (
        "mod_sulq",
        "design",
        None,
        20000,
        1,
        None,
    )
    assert s.mechanism_params["epsilon"] == 2.0 and not s.epsilon_capped
    key = s.run_key(s.mechanism_params)
    assert "mode" not in key and "audit_revision" not in key  # the design audit keeps its old key
    capped = _settings(AuditSettings, "mechanism=analyze_gauss")
    assert capped.epsilon_capped and capped.mechanism_params["epsilon"] == 0.9
    search = _settings(AuditSettings, "experiment.mechanism=ppca", "experiment.mode=search")
    key = search.run_key({})
    assert key["mode"] == "search" and key["audit_revision"] == AUDIT_REVISION
    assert key["calibration_trials"] == 300 and key["time_budget"] is None
    extra = _settings(AuditSettings, "+experiment.mechanism_params.calibration=tight")
    assert extra.mechanism_params["calibration"] == "tight"


def test_peers_settings():
    s = _settings(PeersSettings)
    assert s.check_peers == ("diffprivlib_pca", "opendp_pca") and s.accounting_epsilon == 1.0
    assert s.grid(10_000) == [1000, 3162, 10_000] and s.n_grid is None
    s = _settings(
        PeersSettings,
        "experiment.accounting_check=null",
        "experiment.n_grid=[300]",
        "experiment.sampler_check.peers=[]",
    )
    assert s.accounting_epsilon is None and s.grid(10_000) == [300] and s.check_peers == ()


def test_jmlr_settings():
    s = _settings(UtilityVsNSettings)
    assert s.grid(5000) == [500, 5000] and s.subsets == 1
    assert _settings(UtilityVsNSettings, "experiment.n_grid=[300,600]").grid(5000) == [300, 600]
    assert _settings(UtilityVsEpsilonSettings, "mechanism=pca").samples == 1
    sulq = _settings(SulqBoundSettings)
    assert len(sulq.log10_n) == 57 and np.isclose(sulq.log10_n[-1], 9.0) and sulq.delta == 0.01
    gibbs = _settings(GibbsConvergenceSettings)
    assert gibbs.sweeps_per_iteration is None and (gibbs.chains, gibbs.iterations) == (2, 200)


def test_classification_settings_are_the_protocol():
    s = _settings(ClassificationSettings)
    assert s.protocol() == classification_protocol(compose_cfg(SETTINGS[ClassificationSettings]))
    assert s.svm_cv_folds == 5 and s.svm_log2_C == (-5, 15, 2)  # null: the classifier's own
    assert s.positive("kddcup") == "normal." and s.positive("nosuch") is None
    assert s.max_rows == 4000 and (s.permutations, s.projections) == (1, 1)
    random = _settings(
        ClassificationSettings, "mechanism=random", "scale.classification.max_rows=null"
    )
    assert random.random_entries == "gaussian" and random.max_rows is None
    assert isinstance(s.protocol()["svm_log2_C"], list)  # as records hold them


def test_extra_settings_take_the_scales_grid_unless_overridden():
    s = _settings(DimensionScalingSettings)
    assert s.dims == (6, 12) and s.n_grid == (250, 500, 1000, 2000, 4000) and s.max_cells == 1e6
    assert _settings(DimensionScalingSettings, "experiment.dims=[5]").dims == (5,)
    o = _settings(OnlineRegretSettings)
    assert (o.m, o.d, o.restarts, o.variants) == (128, 8, 1, (False, True))
