"""What the command line's values may be: the typed top-level keys, their ranges, and the rules of a
mechanism's options.

* :class:`RunConfig` is a Hydra structured config (registered as ``run_schema`` in Hydra's
  ConfigStore by :func:`register_schema`, and listed first in ``conf/config.yaml``'s defaults): it
  gives the top-level keys their types.  Whatever composes the config registers it first (the
  command line, ``tests/hydra_helpers.py``, a script that composes with Hydra's compose API).
* :func:`check_ranges` checks the ranges a type cannot express (``seed >= 0``, ``0 < delta < 1``,
  ...) and raises :class:`~experiments.errors.UserError` naming the key.
* :func:`check_mechanism_options` checks the ``mechanism.fn.*`` options the user set against the
  mechanism function's own signature: the options it takes, the choices a parameter's type declares
  (``typing.Literal``, e.g. :data:`mechanisms.ppca.Sampler`), whether it takes ``null``, and for a
  few options every mechanism spells alike, what a value must be (:data:`OPTION_RULES`).
"""

from __future__ import annotations

import inspect
import math
import types
import typing
from dataclasses import dataclass, fields
from typing import Any, Callable, Literal, Optional

from omegaconf import MISSING, DictConfig

from experiments.errors import UserError
from mechanisms import PrivacyInputError
from mechanisms.toolkit import check_delta

#: the name under which :class:`RunConfig` is stored in Hydra's ConfigStore (``conf/config.yaml``)
SCHEMA_NAME = "run_schema"


@dataclass
class RunConfig:
    """Top-level keys of ``conf/config.yaml`` with their types (the groups stay free-form)."""

    dataset: Any = MISSING
    mechanism: Any = MISSING
    scale: Any = MISSING
    experiment: Any = MISSING
    epsilon: float = 0.1
    delta: float = 0.01
    k: int = MISSING
    n: Optional[int] = None
    seed: int = 0
    subset: int = 0
    restart: int = 0
    clip_rows: bool = False
    data_dir: Optional[str] = None
    results_dir: str = "results"
    quiet: bool = False
    print_record: bool = False
    ppca_iterations: int = MISSING
    progress: Optional[bool] = None
    workers: int = 1


#: top-level keys that are not in the schema but may be added: ``+rerun=<record id>``
EXTRA_KEYS = ("rerun",)


def register_schema() -> None:
    """Make known what ``conf/config.yaml`` names, before any config is composed: :class:`RunConfig`
    in Hydra's ConfigStore (its defaults list's ``run_schema``; storing it again replaces it), and
    the OmegaConf resolver of its run folders (:func:`experiments.paths.register_resolvers`)."""
    from hydra.core.config_store import ConfigStore

    from experiments.paths import register_resolvers

    ConfigStore.instance().store(name=SCHEMA_NAME, node=RunConfig)
    register_resolvers()


def schema_types() -> dict[str, Any]:
    """The type of each top-level key of :class:`RunConfig` (``typing.Any`` for a config group)."""
    return typing.get_type_hints(RunConfig)


def typed_keys() -> list[str]:
    """The top-level keys whose values the schema types (the config groups are free-form)."""
    return [name for name, tp in schema_types().items() if tp is not Any]


def valid_keys() -> list[str]:
    """The top-level keys a user may set (the schema's, then :data:`EXTRA_KEYS`)."""
    return [f.name for f in fields(RunConfig)] + list(EXTRA_KEYS)


def override_key(override: str) -> str:
    """``+mechanism.fn.sampler=x`` -> ``mechanism.fn.sampler`` (a group path keeps its slashes)."""
    return override.split("=", 1)[0].lstrip("+~")


# --- ranges of the top-level keys ---------------------------------------------------------------


def _accepted(check: Callable[[Any], Any], value: Any) -> bool:
    try:
        check(value)
    except PrivacyInputError:
        return False
    return True


#: key -> (test, what the key must be)
RANGES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "epsilon": (lambda v: math.isfinite(v) and v > 0, "a finite number > 0"),
    # the mechanisms' own rule (mechanisms._base.check_delta), so the schema and they agree
    "delta": (
        lambda v: _accepted(check_delta, v),
        "a number in (0, 1) (mechanisms._base.check_delta)",
    ),
    "k": (lambda v: v >= 1, "an integer >= 1"),
    "n": (lambda v: v is None or v >= 1, "a positive integer or null (the whole data set)"),
    "seed": (lambda v: v >= 0, "a non-negative integer"),
    "subset": (lambda v: v >= 0, "a non-negative integer"),
    "restart": (lambda v: v >= 0, "a non-negative integer"),
    "ppca_iterations": (lambda v: v >= 1, "an integer >= 1"),
    "workers": (lambda v: v >= 1, "an integer >= 1 (processes for the utility_vs_n groups)"),
}


def range_error(key: str, value: Any, shown: str) -> UserError | None:
    """The error for ``value`` of top-level ``key`` outside its :data:`RANGES` rule, or None.

    Parameters
    ----------
    key : str
        A top-level key.
    value : Any
        Its value, of the schema's type.
    shown : str
        The override as the user typed it (named by the error).

    Returns
    -------
    UserError or None
        The error to raise, or None when the value is in range (or the key has no range).
    """
    ok, what = RANGES.get(key, (None, ""))
    if ok is None or ok(value):
        return None
    return UserError(f"{shown} is out of range: {key} must be {what}")


def check_ranges(cfg: DictConfig) -> None:
    """Raise :class:`UserError` naming the first top-level key whose value is out of range."""
    for key in RANGES:
        if key in cfg:
            error = range_error(key, cfg[key], f"{key}={cfg[key]!r}")
            if error is not None:
                raise error


# --- the options of a mechanism -------------------------------------------------------------------


def _positive_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def _positive_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0


#: option -> (test, what it must be) for ``mechanism.fn.<option>`` of any mechanism whose function
#: takes it (options that every mechanism spells and means alike); ``null`` passes only where the
#: parameter's type admits None
OPTION_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "iterations": (_positive_int, "an integer >= 1"),
    "n_chains": (_positive_int, "an integer >= 1"),
    "timeout": (_positive_number, "a number of seconds > 0"),
}
#: what :func:`option_rule` adds to a rule where the parameter takes ``null``
NULL_ALLOWED = " or null (the mechanism's default)"
#: parameters the harness gives a mechanism function itself: not options a user sets
HARNESS_PARAMETERS = ("rng", "clip")


def mechanism_function(target: str) -> Callable[..., Any] | None:
    """The function a mechanism config's ``_target_`` names, or None where it cannot be imported."""
    from hydra.utils import get_method

    try:
        return get_method(target)
    except Exception:  # noqa: BLE001 - an unresolvable target is reported when it is instantiated
        return None


def target_parameters(target: str) -> list[str] | None:
    """The keyword options of mechanism function ``target``.

    Returns
    -------
    list of str or None
        The parameters a user may set (keyword-only or with a default, less
        :data:`HARNESS_PARAMETERS`); None where the function takes any (``**kwargs``) or cannot be
        imported.
    """
    fn = mechanism_function(target)
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # None, or no signature
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return [
        p.name
        for p in params
        if (p.kind is p.KEYWORD_ONLY or p.default is not p.empty)
        and p.name not in HARNESS_PARAMETERS
    ]


def _parameter_type(fn: Callable[..., Any], name: str) -> tuple[Any, bool]:
    """(the declared type of parameter ``name`` of ``fn``, whether it takes None); the type is None
    where it is not declared or cannot be resolved, and then None is taken where the default is."""
    try:
        declared = typing.get_type_hints(fn).get(name)
    except Exception:  # noqa: BLE001 - a name the annotations cannot resolve: undeclared
        declared = None
    if declared is None:
        param = inspect.signature(fn).parameters.get(name)
        return None, param is not None and param.default is None
    members = (
        typing.get_args(declared)
        if typing.get_origin(declared) in (typing.Union, types.UnionType)
        else (declared,)
    )
    return declared, type(None) in members or declared is Any


def _declared_choices(declared: Any) -> tuple | None:
    """The values a ``typing.Literal`` type (alone or in an Optional) allows, or None."""
    if typing.get_origin(declared) is Literal:
        return typing.get_args(declared)
    if typing.get_origin(declared) in (typing.Union, types.UnionType):
        choices = [c for m in typing.get_args(declared) for c in (_declared_choices(m) or ())]
        return tuple(choices) or None
    return None


def option_rule(fn: Callable[..., Any], option: str) -> tuple[Callable[[Any], bool], str] | None:
    """The rule a value of option ``option`` of mechanism function ``fn`` must follow.

    Parameters
    ----------
    fn : callable
        The mechanism function (a config's ``_target_``).
    option : str
        One of its parameters.

    Returns
    -------
    tuple or None
        (test, what the value must be): the choices its type declares (``typing.Literal``), else
        the rule of :data:`OPTION_RULES`, with ``null`` passing where the type admits None; None
        when neither applies (the mechanism checks the value itself when it runs).
    """
    declared, nullable = _parameter_type(fn, option)
    choices = _declared_choices(declared)
    if choices is not None:
        test, what = (lambda v: v in choices), "one of " + ", ".join(map(str, choices))
    elif option in OPTION_RULES:
        test, what = OPTION_RULES[option]
    else:
        return None
    if nullable:
        return (lambda v: v is None or test(v)), what + NULL_ALLOWED
    return test, what


def no_such_option(key: str, mechanism: str, option: str, accepted: list[str]) -> UserError:
    """The error for ``mechanism.fn.<option>`` that mechanism's function does not take."""
    return UserError(
        f"{key}: mechanism {mechanism} has no option {option!r}; "
        + (f"its options: {', '.join(accepted)}" if accepted else "it takes none")
    )


def check_mechanism_options(cfg: DictConfig, overrides: list[str]) -> None:
    """Raise :class:`UserError` naming a ``mechanism.fn.<option>`` among ``overrides`` that the
    configured mechanism function does not take, or whose value (as composed) breaks its
    :func:`option_rule`."""
    mech = str(cfg.mechanism.get("name", ""))
    target = str(cfg.mechanism.fn._target_)
    for override in overrides:
        key = override_key(override)
        if not key.startswith("mechanism.fn.") or key.startswith("mechanism.fn._"):
            continue
        option = key[len("mechanism.fn.") :]
        accepted = target_parameters(target)
        if accepted is not None and option.split(".", 1)[0] not in accepted:
            raise no_such_option(key, mech, option, accepted)
        fn = mechanism_function(target)
        rule = option_rule(fn, option) if fn is not None and option in cfg.mechanism.fn else None
        if rule is not None:
            ok, what = rule
            value = cfg.mechanism.fn[option]
            if not ok(value):
                raise UserError(
                    f"{key}={value!r} is not valid for mechanism {mech}: {option} must be {what}"
                )
