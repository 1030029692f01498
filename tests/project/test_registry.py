"""One registry of mechanism names: the library's (``mechanisms.MECHANISMS``) and the peers'
(``experiments.peers.environment.PEERS``), against which the configs and the audit are checked.

* ``conf/mechanism/*.yaml`` holds one file per registered name and none other; each file's ``name``
  is its stem; a library mechanism's ``fn._target_`` is the function ``get_mechanism`` returns, and a
  peer's is the peer's runner in ``experiments.peers``.
* The library's names and the peers' are disjoint.
* The registry names each library mechanism by its defining module, so that a module-level name the
  audit patches there (``check_data``; the noise-scale functions; the white-box taps) is the one the
  mechanism calls.
* Every mechanism name of the audit's tables is registered, and each module the audit patches for
  a library mechanism is the registry's module for it.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import yaml
from hydra.utils import get_object

from experiments.peers.environment import PEERS
from mechanisms import MECHANISMS, get_mechanism

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = {p.stem: p for p in sorted((ROOT / "conf" / "mechanism").glob("*.yaml"))}
ALL_NAMES = set(MECHANISMS) | set(PEERS)


def config(name: str) -> dict:
    return yaml.safe_load(CONFIGS[name].read_text())


def module_of(name: str) -> str:
    return MECHANISMS[name].split(":")[0]


def test_one_config_per_registered_name():
    assert set(CONFIGS) == ALL_NAMES


def test_library_and_peer_names_are_disjoint():
    assert not set(MECHANISMS) & set(PEERS)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_config_name_is_its_file_stem(name):
    assert config(name)["name"] == name


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_config_target_is_the_registered_function(name):
    """The ``_target_`` (which stored records repeat, and re-runs resolve) and the registry entry
    reach one function, whichever import path each names."""
    assert get_object(config(name)["fn"]["_target_"]) is get_mechanism(name)


@pytest.mark.parametrize("name", sorted(PEERS))
def test_peer_config_target_is_the_peer_runner(name):
    from experiments import peers

    target = config(name)["fn"]["_target_"]
    assert target.startswith("experiments.peers.")
    assert get_object(target) is getattr(peers, name)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_registry_names_the_defining_module(name):
    fn = get_mechanism(name)
    module, func = MECHANISMS[name].split(":")
    assert (fn.__module__, fn.__name__) == (module, func)
    assert "check_data" in inspect.getmodule(fn).__dict__  # what bypass_norm_check patches


def test_the_audits_tables_name_registered_mechanisms():
    from experiments.audit import designs, variants, whitebox
    from experiments.audit.common import PEER_NAMES

    assert set(PEER_NAMES) == set(PEERS)
    tables = {
        "designs.DESIGN_OF": designs.DESIGN_OF,
        "designs.AUDIT_PARAMS": designs.AUDIT_PARAMS,
        "designs.GAUSSIAN_OPTIONS": designs.GAUSSIAN_OPTIONS,
        "variants.NOISE_FUNCTIONS": variants.NOISE_FUNCTIONS,
        "whitebox.TAPS": whitebox.TAPS,
        "whitebox.WHITEBOX_N": whitebox.WHITEBOX_N,
        "whitebox.WHITEBOX_PARAMS": whitebox.WHITEBOX_PARAMS,
    }
    unknown = {
        table: sorted(set(t) - ALL_NAMES) for table, t in tables.items() if set(t) - ALL_NAMES
    }
    assert not unknown
    planted = {mechanism for mechanism, *_ in variants.PLANTED_VARIANTS.values()}
    assert planted <= set(MECHANISMS)


def test_the_audit_patches_the_registered_modules():
    from experiments.audit import variants, whitebox

    for name, (module, _) in variants.NOISE_FUNCTIONS.items():
        assert module == module_of(name), name
    for name, tap in whitebox.TAPS.items():
        assert tap.module == module_of(name), name
    for kind, (module, attr, _) in variants.SUBSPACE_EXACT_VARIANTS.items():
        assert callable(get_object(f"{module}.{attr}")), kind
