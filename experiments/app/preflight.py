"""Checks of a command line before Hydra composes anything: what Hydra would refuse in a message of
several lines (or a traceback), or would accept and then run wrongly, refused in one line.

The facts come from Hydra itself: the command line as ``@hydra.main`` reads it (its argument parser,
:func:`parse_command_line`), the overrides as its grammar reads them, and the config groups, their
options, a config file and the choices a job's defaults list makes from Hydra's config loader and
repository for the command line's search path (:class:`CommandLineConfigs`: the primary config
directory, ``--config-dir`` and ``hydra.searchpath``).

* :func:`check_modes` refuses two of Hydra's run modes at once (``-m --cfg job``), and
  :func:`check_launcher` the SLURM launcher where there is no SLURM.
* :func:`check_command_line` refuses a top-level key that is not a setting (``epsilonn=0.1``,
  ``+epsilonn=0.5``), listing the valid keys.
* :func:`check_override_values` refuses a value of the wrong type (``epsilon=abc``, ``seed=1.5``) or
  out of range, an option of a config group that does not exist (``mechanism=ppcaa``,
  ``hydra/launcher=joblibb``, or a ``glob(...)`` sweep matching none), a ``mechanism.fn.<option>``
  or ``experiment.<option>`` without ``+`` that the chosen config file does not hold, and a
  mechanism whose ``_target_`` cannot be imported, naming the key and what is valid.
* :func:`check_results_dir` refuses a results directory that cannot be written, and
  :func:`check_rerun` an override ``+rerun`` would ignore.

:data:`CHECKS` lists them in the order :func:`experiments.app.lifecycle.run_command_line` runs them,
each with the label of its one-line error.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.utils import create_config_search_path, get_args_parser
from hydra.core.config_search_path import SearchPathQuery
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Glob, Override
from hydra.errors import OverrideParseException
from hydra.plugins.config_source import ConfigResult
from hydra.types import RunMode
from omegaconf import OmegaConf
from omegaconf.errors import ValidationError

from experiments.app.schema import (
    EXTRA_KEYS,
    RunConfig,
    no_such_option,
    override_key,
    range_error,
    register_schema,
    target_parameters,
    typed_keys,
    valid_keys,
)
from experiments.errors import UserError
from experiments.paths import config_dir, results_root

#: the primary config of the app (``conf/config.yaml``)
CONFIG_NAME = "config"


class _Refused(Exception):
    """Hydra's argument parser refused the command line (Hydra reports it itself)."""


def _refuse(message: str) -> None:
    raise _Refused(message)


def parse_command_line(args: list[str]) -> argparse.Namespace | None:
    """``args`` as ``@hydra.main`` reads them, with Hydra's own argument parser.

    Parameters
    ----------
    args : list of str
        The command line, without the program.

    Returns
    -------
    argparse.Namespace or None
        Hydra's reading (``overrides``, ``multirun``, ``cfg``, ``config_dir``, ...); None where its
        parser refuses the command line or answers it itself (``--version``), which Hydra then
        does as usual.  Overrides are read on both sides of a flag (``a=1 -m b=2``), which
        ``@hydra.main`` itself refuses after the checks: a mistake in them is named first.
    """
    parser = get_args_parser()
    parser.error = _refuse  # raise instead of printing the usage and exiting
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return parser.parse_intermixed_args(args)
    except (_Refused, argparse.ArgumentError, SystemExit):
        return None


def command_line_overrides(args: list[str]) -> list[str]:
    """The overrides of a command line, as Hydra's argument parser separates them from its flags
    (an argument without ``=`` other than a ``~key`` deletion is left to Hydra's own error)."""
    parsed = parse_command_line(args)
    if parsed is None:
        return []
    return [a for a in parsed.overrides if "=" in a or a.startswith("~")]


#: Hydra's run modes, as its argument parser reads them; a command line takes at most one
MODES: dict[str, Callable[[argparse.Namespace], bool]] = {
    "--cfg": lambda a: a.cfg is not None,
    "--info": lambda a: a.info is not None,
    "--multirun": lambda a: a.multirun,
    "--run": lambda a: a.run,
    "--shell-completion": lambda a: a.shell_completion,
}


def check_modes(args: list[str]) -> None:
    """Raise :class:`UserError` for two of Hydra's run modes on one command line (``-m --cfg job``),
    which Hydra refuses with a traceback."""
    parsed = parse_command_line(args)
    modes = [name for name, given in MODES.items() if parsed is not None and given(parsed)]
    if len(modes) > 1:
        raise UserError(f"{' and '.join(modes)} cannot be combined: give one of them")


def check_launcher(args: list[str]) -> None:
    """Raise :class:`UserError` for ``hydra/launcher=slurm`` on a machine without SLURM's ``sbatch``
    (submitit would end in a traceback after composing)."""
    chosen = [
        a.split("=", 1)[1]
        for a in command_line_overrides(args)
        if override_key(a) == "hydra/launcher"
    ]
    if "slurm" in chosen and shutil.which("sbatch") is None:
        raise UserError(
            "hydra/launcher=slurm needs SLURM (sbatch on PATH), which this machine does not have; "
            "on one machine use hydra/launcher=local_parallel (joblib) or hydra/launcher=submitit_test"
        )


def check_command_line(args: list[str]) -> None:
    """Raise :class:`UserError` for an override whose top-level key is not a setting (a typo such as
    ``epsilonn=0.1`` or ``+epsilonn=0.5``; Hydra would suggest ``+`` for the first and silently add
    the second)."""
    valid = set(valid_keys()) | {"hydra"}
    for override in command_line_overrides(args):
        key = override_key(override)
        top = key.split(".", 1)[0].split("/", 1)[0].split("@", 1)[0]
        if top not in valid:
            raise UserError(
                f"unknown key {top!r} in {override!r}; valid top-level keys: "
                f"{', '.join(valid_keys())} (and hydra.*)"
            )
        if top in EXTRA_KEYS and not override.startswith("+"):
            # not in the schema: Hydra would refuse it without '+' in several lines
            raise UserError(f"{top} is set with a '+': +{override}")


#: what may accompany ``+rerun=<record id>``: where to read and what to print (the replay uses the
#: record's own configuration, so any other override would be silently ignored)
RERUN_COMPANIONS = ("results_dir", "data_dir", "quiet", "print_record", "progress")


def check_rerun(args: list[str]) -> None:
    """Raise :class:`UserError` when ``+rerun=`` comes with an override the replay would ignore."""
    overrides = [(a, override_key(a)) for a in command_line_overrides(args)]
    if "rerun" not in (key for _, key in overrides):
        return
    ignored = [a for a, key in overrides if key not in ("rerun", *RERUN_COMPANIONS)]
    if ignored:
        raise UserError(
            f"+rerun replays the record's own configuration, so {', '.join(ignored)} would be "
            f"ignored: drop it (allowed beside +rerun: {', '.join(RERUN_COMPANIONS)})"
        )


def _default_results_dir() -> str | None:
    """``results_dir`` as the primary config (``conf/config.yaml``) sets it, when it is a plain value."""
    try:
        value = OmegaConf.load(config_dir() / "config.yaml").get("results_dir")
    except (OSError, ValueError):
        return None
    return value if isinstance(value, str) and "${" not in value else None


def check_results_dir(args: list[str]) -> None:
    """Raise :class:`UserError` when the store ``results_dir=`` names (the last such override, else
    the primary config's default, taken as the run takes it: :func:`experiments.paths.results_root`)
    cannot be written: a file, a
    directory without write permission, or a path the system refuses (tried by creating it and a
    temporary file in it).  Every run writes there, Hydra's log included, also one that only shows a
    stored record; refused before any work, nothing is lost."""
    values = [
        a.split("=", 1)[1] for a in command_line_overrides(args) if override_key(a) == "results_dir"
    ]
    value = values[-1] if values else _default_results_dir()
    if value is None or "," in value or "(" in value:  # no plain default, or a sweep over stores
        return
    value = value.strip("'\"")
    path = results_root(value)
    try:
        if path.exists() and not path.is_dir():
            raise UserError(f"results_dir={value} is a file, not a directory")
        path.mkdir(parents=True, exist_ok=True)  # the run would create it anyway
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:  # read-only, no permission, a name too long for the file system, ...
        raise UserError(
            f"results_dir={value[:80]} cannot be written ({exc.strerror}): records, and Hydra's "
            "log, are written there"
        ) from None


# --- Hydra's configs, as the command line sees them --------------------------------------------


#: the config groups whose choice decides a job's mechanism: ``mechanism=`` itself, and an
#: experiment's defaults list (``override /mechanism: online_pca``)
SELECTING_GROUPS = ("experiment", "mechanism")


class CommandLineConfigs:
    """Hydra's config loader and repository for a command line's search path.

    Parameters
    ----------
    loader : ConfigLoaderImpl
        Hydra's loader for the app's search path (the primary config directory, then
        ``--config-dir``), as ``@hydra.main`` builds it.
    searchpath : list of str
        The command line's ``hydra.searchpath=[...]`` overrides, which extend the search path.
    config_name : str
        The primary config (``--config-name``, else ``config``).
    """

    def __init__(self, loader: ConfigLoaderImpl, searchpath: list[str], config_name: str) -> None:
        self.loader = loader
        self.searchpath = searchpath
        self.config_name = config_name
        # the repository as Hydra builds it for this command line (its hydra.searchpath included)
        _, self.repo = loader._parse_overrides_and_create_caching_repo(config_name, searchpath)
        self._choices: list[dict[str, Any]] | None = None

    @classmethod
    def of(cls, args: list[str], parsed: list[Override]) -> CommandLineConfigs | None:
        """The configs of command line ``args`` (its overrides ``parsed``); None where Hydra cannot
        build them or the primary config directory is not the app's (``--config-path``), in which
        case the checks that need them are left to Hydra."""
        ns = parse_command_line(args)
        if ns is None or ns.config_path is not None:
            return None
        if ns.config_dir is not None and not os.path.isdir(ns.config_dir):
            return None  # Hydra names the missing directory
        register_schema()  # the primary config's defaults list names it
        search_path = create_config_search_path(str(config_dir()))
        if ns.config_dir is not None:  # as @hydra.main adds it
            search_path.prepend(
                provider="command-line",
                path=f"file://{os.path.abspath(ns.config_dir)}",
                anchor=SearchPathQuery(provider="schema"),
            )
        searchpath = [o.input_line for o in parsed if o.get_key_element() == "hydra.searchpath"]
        try:
            with warnings.catch_warnings():  # an unavailable source: Hydra warns when it runs
                warnings.simplefilter("ignore")
                return cls(ConfigLoaderImpl(search_path), searchpath, ns.config_name or CONFIG_NAME)
        except Exception:  # noqa: BLE001 - Hydra reports its own errors of meaning
            return None

    def is_group(self, key: str) -> bool:
        """Whether ``key`` (``mechanism``, ``hydra/launcher``) is a config group."""
        return self.repo.group_exists(key)

    def options(self, group: str) -> list[str]:
        """The options of config group ``group``, over every source of the search path."""
        return self.repo.get_group_options(group)

    def config(self, group: str, name: str) -> ConfigResult | None:
        """Option ``name`` of ``group`` as Hydra loads it (the first source holding it)."""
        try:
            return self.repo.load_config(f"{group}/{name}")
        except Exception:  # noqa: BLE001 - a file Hydra cannot read: Hydra reports it
            return None

    def job_choices(self, parsed: list[Override], values: list[list]) -> list[dict[str, Any]]:
        """The group choices of each job of the command line, from Hydra's defaults list (one per
        combination of the command line's choices of :data:`SELECTING_GROUPS`; found once)."""
        if self._choices is None:
            per_group = []
            for o, vals in zip(parsed, values):
                if o.key_or_group in SELECTING_GROUPS and not o.is_delete():
                    names = group_choices(vals, self.options(o.key_or_group))
                    head = o.input_line.split("=", 1)[0]
                    per_group.append([f"{head}={name}" for name in names])
            self._choices = []
            for combination in itertools.product(*per_group):
                try:
                    defaults = self.loader.compute_defaults_list(
                        self.config_name, [*self.searchpath, *combination], RunMode.RUN
                    )
                except Exception:  # noqa: BLE001 - an unknown option is refused by its own check
                    continue
                self._choices.append(dict(defaults.overrides.known_choices))
        return self._choices

    def chosen(self, group: str, parsed: list[Override], values: list[list]) -> list[str]:
        """The options of ``group`` the command line's jobs use, each once, in order."""
        chosen = [c.get(group) for c in self.job_choices(parsed, values)]
        return list(dict.fromkeys(str(c) for c in chosen if c is not None))


def shown_path(result: ConfigResult, group: str, name: str) -> str:
    """Where Hydra found option ``name`` of ``group``: a file relative to the working directory
    when it lies below it, else the source and the config's path."""
    if not result.path.startswith("file://"):
        return f"{result.path}/{group}/{name}"
    path = Path(result.path[len("file://") :]) / group / f"{name}.yaml"
    rel = os.path.relpath(path)
    return path.as_posix() if rel.startswith("..") else Path(rel).as_posix()


def _values(override: Override) -> list:
    """The values of a parsed override: its choices for a sweep (``a,b``, ``range(1,4)``); a
    ``glob(...)`` of a config group stays one value, expanded by :func:`group_choices`."""
    if isinstance(override.value(), Glob):
        return [override.value()]
    return list(override.sweep_iterator()) if override.is_sweep_override() else [override.value()]


def group_choices(values: list, options: list[str]) -> list[str]:
    """``values`` of a group override as option names, each ``glob(...)`` expanded over ``options``
    (Hydra's own filter)."""
    out: list[str] = []
    for v in values:
        out.extend(v.filter(options) if isinstance(v, Glob) else [str(v)])
    return out


def _check_group_choice(o: Override, vals: list, configs: CommandLineConfigs) -> None:
    """Each choice of group override ``o`` must be an option of its group."""
    key = o.key_or_group
    options = configs.options(key)
    for v in vals:
        names = group_choices([v], options)
        if not names:  # a glob(...) that matches no option: Hydra would launch 0 jobs
            raise UserError(f"{o.input_line} matches no {key}; valid: {', '.join(options)}")
        for name in names:
            if name not in options:
                raise UserError(f"unknown {key} {name!r}; valid: {', '.join(options)}")


def _check_experiment_key(key: str, experiment: str, configs: CommandLineConfigs) -> None:
    """``experiment.<option>=v`` without ``+`` needs the option in the experiment's config file."""
    result = configs.config("experiment", experiment)
    if result is None:  # an unknown experiment is refused with the group's options
        return
    options = result.config.get("experiment") or {}
    option = key[len("experiment.") :].split(".", 1)[0]
    if option not in options:
        raise UserError(
            f"{key}: experiment {experiment} has no option {option!r}; its options: "
            + ", ".join(str(o) for o in options)
        )


def _check_mechanism_key(key: str, mechanism: str, configs: CommandLineConfigs) -> None:
    """``mechanism.fn.<option>=v`` without ``+`` needs the option in the mechanism's config file."""
    result = configs.config("mechanism", mechanism)
    if result is None:
        return
    fn = result.config.get("fn") or {}
    option = key[len("mechanism.fn.") :].split(".", 1)[0]
    if option in fn:
        return
    accepted = target_parameters(str(fn.get("_target_", "")))
    if accepted is None or option in accepted:
        where = shown_path(result, "mechanism", mechanism)
        raise UserError(f"{key}: not in {where}; set it with +{key}=<value>")
    raise no_such_option(key, mechanism, option, accepted)


def _check_target_importable(mechanism: str, configs: CommandLineConfigs) -> None:
    """The module of the mechanism config's ``_target_`` must be importable."""
    import importlib.util

    result = configs.config("mechanism", mechanism)
    if result is None:
        return
    target = str((result.config.get("fn") or {}).get("_target_", ""))
    module = target.rsplit(".", 1)[0]
    try:
        found = bool(module) and importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing
        found = False
    if target and not found:
        raise UserError(
            f"mechanism {mechanism}: its _target_ {target!r} cannot be imported "
            "(is its module on PYTHONPATH?)"
        )


def check_override_values(args: list[str]) -> None:
    """Raise :class:`UserError` for what Hydra would refuse while composing, in one line.

    A group option that does not exist (``mechanism=ppcaa``, ``hydra/launcher=joblibb``), a value of
    the wrong type for a typed key (``epsilon=abc``, ``seed=1.5``; :class:`RunConfig`) or out of its
    range, a ``mechanism.fn.<option>`` or ``experiment.<option>`` without ``+`` that the chosen
    config file does not hold, and a chosen mechanism whose ``_target_`` cannot be imported.  Sweeps
    are checked choice by choice, and the mechanism of every job (as its experiment may choose it);
    what the parser cannot read is left to Hydra.
    """
    parser = OverridesParser.create()
    parsed: list[Override] = []
    for line in command_line_overrides(args):  # one at a time, to name the one it cannot read
        try:
            parsed += parser.parse_overrides([line])
        except OverrideParseException as exc:
            first = str(exc).strip().splitlines()[0]
            raise UserError(
                f"Hydra's override grammar cannot read {line!r} ({first}): quote a value that holds "
                "non-ASCII letters, spaces or special characters, e.g. \"key='value'\""
            ) from None
        except Exception:  # noqa: BLE001 - Hydra reports its own errors of meaning
            return
    try:
        values = [_values(o) for o in parsed]
    except Exception:  # noqa: BLE001 - Hydra reports its own errors of meaning
        return
    schema = OmegaConf.structured(RunConfig)
    typed = set(typed_keys())
    configs = CommandLineConfigs.of(args, parsed)
    for o, vals in zip(parsed, values):
        key = o.key_or_group
        if o.is_delete():
            continue
        if configs is not None and configs.is_group(key):
            _check_group_choice(o, vals, configs)
        elif key in typed:
            for v in vals:
                if isinstance(v, str) and "${" in v:
                    continue  # an interpolation: resolved by Hydra
                shown = f"{key}={v!r}" if o.is_sweep_override() else o.input_line
                try:
                    schema[key] = v
                except ValidationError as exc:
                    raise UserError(f"{shown}: {str(exc).splitlines()[0]}") from None
                # here, not only when the job starts: a sweep's earlier jobs would run first
                error = range_error(key, schema[key], shown)
                if error is not None:
                    raise error
        elif key.startswith("experiment.") and not o.is_add() and configs is not None:
            for experiment in configs.chosen("experiment", parsed, values):
                _check_experiment_key(key, experiment, configs)
        elif key.startswith("mechanism.fn.") and not key.startswith("mechanism.fn._"):
            if not o.is_add() and configs is not None:
                for mechanism in configs.chosen("mechanism", parsed, values):
                    _check_mechanism_key(key, mechanism, configs)
    if configs is not None and not any(o.key_or_group == "mechanism.fn._target_" for o in parsed):
        # before a sweep's first job: the example mechanism without PYTHONPATH would fail only at
        # its own job, after the others had run
        for mechanism in configs.chosen("mechanism", parsed, values):
            _check_target_importable(mechanism, configs)


#: the checks, in order, each with the label of its one-line error (``Error (<label>): ...``)
CHECKS: tuple[tuple[Callable[[list[str]], None], str], ...] = (
    (check_modes, "bad flags"),
    (check_launcher, "no cluster"),
    (check_command_line, "unknown key"),
    (check_override_values, "bad value"),
    (check_results_dir, "results_dir"),
    (check_rerun, "+rerun"),
)
