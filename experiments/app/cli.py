"""The command line's contract: a typed schema for the top-level config, and one-line user errors.

* :class:`RunConfig` is a Hydra structured config (registered as ``run_schema`` in Hydra's
  ConfigStore and listed first in ``conf/config.yaml``'s defaults): it gives the top-level keys
  their types.
* :func:`check_override_values` refuses, before Hydra composes anything, what Hydra would refuse
  in a message of several lines: a value of the wrong type (``epsilon=abc``, ``seed=1.5``), a group
  option that does not exist (``mechanism=ppcaa``, or a ``glob(...)`` sweep matching none) and a
  ``mechanism.fn.<option>`` without ``+`` that the mechanism's config file does not hold, naming the
  key and what is valid.
* :func:`check_modes` refuses two of Hydra's run modes at once (``-m --cfg job``), and
  :func:`check_launcher` the SLURM launcher where there is no SLURM.
* :func:`check_ranges` checks the ranges a type cannot express (``seed >= 0``, ``0 < delta < 1``, ...)
  and raises :class:`UserError` naming the key.
* :func:`check_command_line` refuses, before Hydra composes anything, a top-level key that is not
  a setting (``epsilonn=0.1``, ``+epsilonn=0.5``), listing the valid keys.
* :func:`check_mechanism_options` checks the ``mechanism.fn.*`` options the user set (a sampler
  name, an iteration count) and names the option and its valid values.
* :func:`report_user_errors` wraps the task function: an error caused by the user (a bad value,
  a missing or corrupt data file, input a mechanism refuses, a mechanism option it refuses, a
  ``_target_`` that cannot be imported) prints
  one line to stderr — what is wrong, which key or file, what to do — and exits with status 2,
  without a traceback.  Any other exception (a real bug) propagates with its traceback as usual;
  ``HYDRA_FULL_ERROR=1`` still gives the full trace.  A disk that is full or read-only (a record
  the store would not take, or ENOSPC, EDQUOT, EROFS or EFBIG anywhere in the run) also prints one
  line, naming the file and the reason, and exits with status 1.  Warnings raised during the run
  print as one line naming the run (its command-line overrides), not the library file that raised
  them.
* :func:`run_command_line` is ``run.py``'s main: the checks above, then the Hydra app; Ctrl-C
  prints one line (records already stored are kept: re-running the command resumes) and exits 130.
"""

from __future__ import annotations

import _thread
import errno
import functools
import math
import os
import re
import sys
import tempfile
import warnings
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Optional

from hydra.core.config_store import ConfigStore
from hydra.errors import InstantiationException
from omegaconf import MISSING, DictConfig

from experiments.data.uci import DataCorruptError, DataUnavailableError
from experiments.errors import NotReproduced, StoreWriteError, UserError
from mechanisms import PrivacyInputError, check_delta

#: exit status of a run refused because of the user's input (Hydra's own composition errors exit 1)
USER_ERROR_EXIT = 2
#: exit status of a run stopped because the disk is full or not writable (no traceback)
STORAGE_ERROR_EXIT = 1
#: system errors that mean "the file system cannot take the write", not a bug: one line, no traceback
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})
#: exit status after Ctrl-C (128 + SIGINT, the shell's convention)
INTERRUPTED_EXIT = 130
INTERRUPTED_MESSAGE = "interrupted; re-run the same command to resume"


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


def valid_keys() -> list[str]:
    """The top-level keys a user may set (the schema's, then :data:`EXTRA_KEYS`)."""
    return [f.name for f in fields(RunConfig)] + list(EXTRA_KEYS)


def _overrides(args: list[str]) -> list[str]:
    """The ``key=value`` overrides among run.py's arguments (Hydra's flags and their values skipped)."""
    return [a for a in args if "=" in a and not a.startswith("-")]


def _override_key(override: str) -> str:
    """``+mechanism.fn.sampler=x`` -> ``mechanism.fn.sampler`` (a group path keeps its slashes)."""
    return override.split("=", 1)[0].lstrip("+~")


def check_command_line(args: list[str]) -> None:
    """Raise :class:`UserError` for an override whose top-level key is not a setting (a typo such as
    ``epsilonn=0.1`` or ``+epsilonn=0.5``; Hydra would suggest ``+`` for the first and silently add
    the second)."""
    valid = set(valid_keys()) | {"hydra"}
    for override in _overrides(args):
        key = _override_key(override)
        top = key.split(".", 1)[0].split("/", 1)[0].split("@", 1)[0]
        if top not in valid:
            raise UserError(
                f"unknown key {top!r} in {override!r}; valid top-level keys: "
                f"{', '.join(valid_keys())} (and hydra.*)"
            )
        if top in EXTRA_KEYS and not override.startswith("+"):
            # not in the schema: Hydra would refuse it without '+' in several lines
            raise UserError(f"{top} is set with a '+': +{override}")


#: Hydra's run modes (flag -> its long name), of which one command line takes at most one
MODE_FLAGS = {
    "-m": "--multirun",
    "--multirun": "--multirun",
    "-r": "--run",
    "--run": "--run",
    "-c": "--cfg",
    "--cfg": "--cfg",
    "-i": "--info",
    "--info": "--info",
    "-sc": "--shell-completion",
    "--shell-completion": "--shell-completion",
}


#: what may accompany ``+rerun=<record id>``: where to read and what to print (the replay uses the
#: record's own configuration, so any other override would be silently ignored)
RERUN_COMPANIONS = ("results_dir", "data_dir", "quiet", "print_record", "progress")


def check_rerun(args: list[str]) -> None:
    """Raise :class:`UserError` when ``+rerun=`` comes with an override the replay would ignore."""
    overrides = [(a, _override_key(a)) for a in _overrides(args)]
    if "rerun" not in (key for _, key in overrides):
        return
    ignored = [a for a, key in overrides if key not in ("rerun", *RERUN_COMPANIONS)]
    if ignored:
        raise UserError(
            f"+rerun replays the record's own configuration, so {', '.join(ignored)} would be "
            f"ignored: drop it (allowed beside +rerun: {', '.join(RERUN_COMPANIONS)})"
        )


def check_results_dir(args: list[str]) -> None:
    """Raise :class:`UserError` when the store ``results_dir=`` names (the last such override; a
    relative path is taken from the project root) cannot be written: a file, a directory without
    write permission, or a path the system refuses (tried by creating it and a temporary file in
    it).  Every run writes there, Hydra's log included,
    also one that only shows a stored record; refused before any work, nothing is lost."""
    from experiments.store.provenance import REPO_ROOT

    values = [a.split("=", 1)[1] for a in _overrides(args) if _override_key(a) == "results_dir"]
    if not values or "," in values[-1] or "(" in values[-1]:  # default, or a sweep over stores
        return
    value = values[-1].strip("'\"")
    path = Path(value) if Path(value).is_absolute() else REPO_ROOT / value
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


def check_launcher(args: list[str]) -> None:
    """Raise :class:`UserError` for ``hydra/launcher=slurm`` on a machine without SLURM's ``sbatch``
    (submitit would end in a traceback after composing)."""
    import shutil

    chosen = [a.split("=", 1)[1] for a in _overrides(args) if _override_key(a) == "hydra/launcher"]
    if "slurm" in chosen and shutil.which("sbatch") is None:
        raise UserError(
            "hydra/launcher=slurm needs SLURM (sbatch on PATH), which this machine does not have; "
            "on one machine use hydra/launcher=local_parallel (joblib) or hydra/launcher=submitit_test"
        )


def check_modes(args: list[str]) -> None:
    """Raise :class:`UserError` for two of Hydra's run modes on one command line (``-m --cfg job``),
    which Hydra refuses with a traceback."""
    modes = sorted({MODE_FLAGS[f] for a in args if (f := a.split("=", 1)[0]) in MODE_FLAGS})
    if len(modes) > 1:
        raise UserError(f"{' and '.join(modes)} cannot be combined: give one of them")


#: the config groups of ``conf/`` chosen on the command line (``mechanism=ppca``)
CHOSEN_GROUPS = ("dataset", "mechanism", "scale", "experiment")


def _conf_dir() -> Path:
    from experiments.store.provenance import REPO_ROOT

    return REPO_ROOT / "conf"


def _config_dirs(args: list[str], parsed) -> list[Path] | None:
    """The directories Hydra searches for config groups: ``--config-dir``/``-cd`` and the
    ``file://`` entries of ``hydra.searchpath``, then ``conf/``; None if an entry is not a directory
    (``pkg://``), whose options are left to Hydra."""
    dirs = []
    for i, a in enumerate(args):
        for flag in ("--config-dir", "-cd"):
            if a == flag and i + 1 < len(args):
                dirs.append(Path(args[i + 1]))
            elif a.startswith(flag + "="):
                dirs.append(Path(a.split("=", 1)[1]))
    for o in parsed:
        if o.key_or_group == "hydra.searchpath":
            for entry in o.value() if isinstance(o.value(), list) else [o.value()]:
                if not str(entry).startswith("file://"):
                    return None
                dirs.append(Path(str(entry)[len("file://") :]))
    return [*dirs, _conf_dir()]


def _group_options(group: str, dirs: list[Path]) -> list[str]:
    return sorted({p.stem for d in dirs for p in (d / group).glob("*.yaml")})


def _values(override) -> list:
    """The values of a parsed override: its choices for a sweep (``a,b``, ``range(1,4)``); a
    ``glob(...)`` of a config group stays one value, expanded by :func:`_group_choices`."""
    from hydra.core.override_parser.types import Glob

    if isinstance(override.value(), Glob):
        return [override.value()]
    return list(override.sweep_iterator()) if override.is_sweep_override() else [override.value()]


def _group_choices(values: list, options: list[str]) -> list[str]:
    """``values`` of a group override as option names, each ``glob(...)`` expanded over ``options``."""
    from hydra.core.override_parser.types import Glob

    out: list[str] = []
    for v in values:
        out.extend(v.filter(options) if isinstance(v, Glob) else [str(v)])
    return out


def _group_file(group: str, name: str, dirs: list[Path]) -> Path | None:
    """The first ``<group>/<name>.yaml`` of ``dirs`` (Hydra's search order)."""
    return next(
        (d / group / f"{name}.yaml" for d in dirs if (d / group / f"{name}.yaml").exists()), None
    )


def _default_choice(path: Path, group: str) -> str | None:
    """The choice of ``group`` in the defaults list of config file ``path`` (``group: x`` or
    ``override /group: x``), if it makes one."""
    from omegaconf import OmegaConf

    for item in OmegaConf.load(path).get("defaults") or []:
        if isinstance(item, DictConfig):
            for key, value in item.items():
                if str(key).split(" ")[-1].lstrip("/") == group:
                    return str(value)
    return None


def _chosen(parsed, group: str, dirs: list[Path]) -> list[str] | None:
    for o in parsed:
        if o.key_or_group == group and not o.is_delete():
            return _group_choices(_values(o), _group_options(group, dirs))
    return None


def _chosen_experiments(parsed, dirs: list[Path]) -> list[str | None]:
    """The experiments a command line runs: its ``experiment=`` choices, else ``conf/config.yaml``'s
    default."""
    return _chosen(parsed, "experiment", dirs) or [
        _default_choice(_conf_dir() / "config.yaml", "experiment")
    ]


def _chosen_mechanisms(parsed, dirs: list[Path]) -> list[str]:
    """The mechanisms a command line runs: its ``mechanism=`` choices, else the one each chosen
    experiment selects (``override /mechanism``), else ``conf/config.yaml``'s default."""
    mechanisms = _chosen(parsed, "mechanism", dirs)
    if mechanisms is not None:
        return mechanisms
    fallback = _default_choice(_conf_dir() / "config.yaml", "mechanism")
    out = []
    for e in _chosen_experiments(parsed, dirs):
        path = _group_file("experiment", str(e), dirs) if e is not None else None
        out.append((path and _default_choice(path, "mechanism")) or fallback)
    return [m for m in out if m is not None]


def _shown_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it."""
    rel = os.path.relpath(path)
    return path.as_posix() if rel.startswith("..") else Path(rel).as_posix()


def _check_mechanism_key(key: str, mechanism: str, dirs: list[Path]) -> None:
    """``mechanism.fn.<option>=v`` without ``+`` needs the option in the mechanism's config file
    (the first ``mechanism/<name>.yaml`` of ``dirs``)."""
    from omegaconf import OmegaConf

    path = _group_file("mechanism", mechanism, dirs)
    fn = OmegaConf.load(path).get("fn") or {}
    option = key[len("mechanism.fn.") :].split(".", 1)[0]
    if option in fn:
        return
    accepted = _target_parameters(str(fn.get("_target_", "")))
    if accepted is None or option in accepted:
        raise UserError(f"{key}: not in {_shown_path(path)}; set it with +{key}=<value>")
    raise _no_such_option(key, mechanism, option, accepted)


def _check_experiment_key(key: str, experiment: str, dirs: list[Path]) -> None:
    """``experiment.<option>=v`` without ``+`` needs the option in the experiment's config file."""
    from omegaconf import OmegaConf

    path = _group_file("experiment", experiment, dirs)
    if path is None:  # an unknown experiment is refused with the group's options
        return
    options = OmegaConf.load(path).get("experiment") or {}
    option = key[len("experiment.") :].split(".", 1)[0]
    if option not in options:
        raise UserError(
            f"{key}: experiment {experiment} has no option {option!r}; its options: "
            + ", ".join(str(o) for o in options)
        )


def _no_such_option(key: str, mechanism: str, option: str, accepted: list[str]) -> UserError:
    """The error for ``mechanism.fn.<option>`` that mechanism's function does not take."""
    return UserError(
        f"{key}: mechanism {mechanism} has no option {option!r}; "
        + (f"its options: {', '.join(accepted)}" if accepted else "it takes none")
    )


def check_override_values(args: list[str]) -> None:
    """Raise :class:`UserError` for what Hydra would refuse while composing, in one line: a group
    option that does not exist (``mechanism=ppcaa``), a value of the wrong type for a typed key
    (``epsilon=abc``, ``seed=1.5``; :class:`RunConfig`), and a ``mechanism.fn.<option>`` without
    ``+`` that the mechanism's config file does not hold.  Sweeps are checked choice by choice;
    what the parser cannot read is left to Hydra."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException
    from omegaconf import OmegaConf
    from omegaconf.errors import ValidationError

    parser = OverridesParser.create()
    parsed = []
    for line in _overrides(args):  # one at a time, to name the one the grammar cannot read
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
    typed = {f.name for f in fields(RunConfig) if f.type is not Any}
    dirs = _config_dirs(args, parsed)
    mechanisms = experiments = None
    for o, vals in zip(parsed, values):
        key = o.key_or_group
        if o.is_delete():
            continue
        if key in CHOSEN_GROUPS:
            if dirs is None:
                continue
            options = _group_options(key, dirs)
            for v in vals:
                names = _group_choices([v], options)
                if not names:  # a glob(...) that matches no option: Hydra would launch 0 jobs
                    raise UserError(f"{o.input_line} matches no {key}; valid: {', '.join(options)}")
                for name in names:
                    if name not in options:
                        raise UserError(f"unknown {key} {name!r}; valid: {', '.join(options)}")
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
                error = _range_error(key, schema[key], shown)
                if error is not None:
                    raise error
        elif key.startswith("experiment.") and not o.is_add() and dirs is not None:
            if experiments is None:  # found once per command line
                experiments = _chosen_experiments(parsed, dirs)
            for experiment in experiments:
                _check_experiment_key(key, str(experiment), dirs)
        elif key.startswith("mechanism.fn.") and not key.startswith("mechanism.fn._"):
            if not o.is_add() and dirs is not None:
                if mechanisms is None:  # the mechanisms that have a config file, found once
                    mechanisms = _configured_mechanisms(parsed, dirs)
                for mechanism in mechanisms:
                    _check_mechanism_key(key, mechanism, dirs)
    if dirs is not None and not any(o.key_or_group == "mechanism.fn._target_" for o in parsed):
        # before a sweep's first job: the example mechanism without PYTHONPATH would fail only at
        # its own job, after the others had run
        for mechanism in (
            mechanisms if mechanisms is not None else _configured_mechanisms(parsed, dirs)
        ):
            _check_target_importable(mechanism, dirs)


def _configured_mechanisms(parsed, dirs: list[Path]) -> list[str]:
    """The mechanisms a command line runs that have a config file among ``dirs``."""
    known = _group_options("mechanism", dirs)
    return [m for m in _chosen_mechanisms(parsed, dirs) if m in known]


def _check_target_importable(mechanism: str, dirs: list[Path]) -> None:
    """The module of the mechanism file's ``_target_`` must be importable."""
    import importlib.util

    from omegaconf import OmegaConf

    target = str(
        (OmegaConf.load(_group_file("mechanism", mechanism, dirs)).get("fn") or {}).get(
            "_target_", ""
        )
    )
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


def _positive_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def _choices(module: str, name: str) -> tuple:
    import importlib

    return tuple(getattr(importlib.import_module(module), name))


#: option -> (test, what it must be) for ``mechanism.fn.<option>``; a mechanism without the option
#: is not checked.  Choices are read from the mechanism modules, so they stay the mechanisms' own.
MECHANISM_OPTIONS: dict[str, tuple[Callable[[Any, str], bool], Callable[[str], str]]] = {
    "sampler": (
        lambda v, m: m != "ppca" or v in _choices("mechanisms.ppca", "SAMPLERS"),
        lambda m: "one of " + ", ".join(_choices("mechanisms.ppca", "SAMPLERS")),
    ),
    "iterations": (
        lambda v, m: v is None and m != "ppca" or _positive_int(v),
        lambda m: "an integer >= 1" + ("" if m == "ppca" else " or null (the mechanism's default)"),
    ),
    "n_chains": (lambda v, m: _positive_int(v), lambda m: "an integer >= 1"),
    "timeout": (
        lambda v, m: isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0,
        lambda m: "a number of seconds > 0",
    ),
}


def check_mechanism_options(cfg: DictConfig, overrides: list[str]) -> None:
    """Raise :class:`UserError` naming a ``mechanism.fn.<option>`` the user set to a value the
    mechanism refuses (:data:`MECHANISM_OPTIONS`)."""
    mech = str(cfg.mechanism.get("name", ""))
    for override in overrides:
        key = _override_key(override)
        if not key.startswith("mechanism.fn.") or key.startswith("mechanism.fn._"):
            continue
        option = key[len("mechanism.fn.") :]
        accepted = _mechanism_parameters(cfg)
        if accepted is not None and option.split(".", 1)[0] not in accepted:
            raise _no_such_option(key, mech, option, accepted)
        if option in MECHANISM_OPTIONS and option in cfg.mechanism.fn:
            ok, what = MECHANISM_OPTIONS[option]
            value = cfg.mechanism.fn[option]
            if not ok(value, mech):
                raise UserError(
                    f"{key}={value!r} is not valid for mechanism {mech}: {option} must be {what(mech)}"
                )


def _mechanism_parameters(cfg: DictConfig) -> list[str] | None:
    """The keyword options of the configured mechanism function (None: it takes any, or is unknown)."""
    return _target_parameters(str(cfg.mechanism.fn._target_))


def _target_parameters(target: str) -> list[str] | None:
    """The keyword options of mechanism function ``target`` (None: it takes any, or is unknown)."""
    import inspect

    from hydra.utils import get_method

    try:
        fn = get_method(target)
        params = inspect.signature(fn).parameters.values()
    except Exception:  # noqa: BLE001 - an unresolvable target is reported when it is instantiated
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return [
        p.name
        for p in params
        if (p.kind is p.KEYWORD_ONLY or p.default is not p.empty) and p.name not in ("rng", "clip")
    ]  # given by the harness, not options


def _task_overrides() -> list[str]:
    """The command line's overrides of this job (Hydra's record of them; [] outside a Hydra app)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return list(HydraConfig.get().overrides.task)
    except (ValueError, ImportError, AttributeError):
        return []


def _warning_printer(run: str):
    """``warnings.showwarning`` replacement: one line naming the run, not the file that warned."""

    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        print(
            f"warning ({category.__name__}) in run [{run}]: {text}",
            file=file or sys.stderr,
            flush=True,
        )

    return show


def register_schema() -> None:
    ConfigStore.instance().store(name="run_schema", node=RunConfig)


#: key -> (test, what the key must be)
_RANGES: dict[str, tuple[Callable[[Any], bool], str]] = {
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


def _accepted(check: Callable[[Any], Any], value: Any) -> bool:
    try:
        check(value)
    except PrivacyInputError:
        return False
    return True


def _range_error(key: str, value: Any, shown: str) -> UserError | None:
    """The error for ``value`` of top-level ``key`` outside its :data:`_RANGES` rule (``shown``: the
    override as the user typed it), or None."""
    ok, what = _RANGES.get(key, (None, ""))
    if ok is None or ok(value):
        return None
    return UserError(f"{shown} is out of range: {key} must be {what}")


def check_ranges(cfg: DictConfig) -> None:
    """Raise :class:`UserError` naming the first top-level key whose value is out of range."""
    for key in _RANGES:
        if key in cfg:
            error = _range_error(key, cfg[key], f"{key}={cfg[key]!r}")
            if error is not None:
                raise error


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, DataUnavailableError):
        what, hint = "data file missing", " (docs/data.md)"
    elif isinstance(exc, DataCorruptError):
        what, hint = "data file unreadable", " (re-download the file or fix the path)"
    elif isinstance(exc, PrivacyInputError):
        what, hint = "input refused by the mechanism", ""
    elif isinstance(exc, NotReproduced):
        what, hint = "not reproduced", ""
    else:
        what, hint = "bad value", ""
    msg = " ".join(str(exc).split())  # one line
    return f"Error ({what}): {msg}{hint}"


USER_ERRORS = (UserError, PrivacyInputError, DataUnavailableError, DataCorruptError)


def _set_by(exc: BaseException, mechanism_set: list[str]) -> str:
    """The suffix `` (you set mechanism.fn.tree=maybe)`` when a mechanism's refusal opens with the
    name of an option the user set on the command line (``tree must be ...``); else ``""``."""
    if not isinstance(exc, PrivacyInputError):
        return ""
    first_word = str(exc).split(" ", 1)[0]
    named = [o for o in mechanism_set if _override_key(o).rsplit(".", 1)[-1] == first_word]
    return f" (you set {', '.join(named)})" if named else ""


def _names_override(message: str, override: str) -> bool:
    """Whether ``message`` names the option of ``override`` (its last key) or its value, as a word."""
    key, _, value = override.partition("=")
    words = [_override_key(key).rsplit(".", 1)[-1], value.strip("'\"")]
    return any(w and re.search(rf"(?<!\w){re.escape(w)}(?!\w)", message) for w in words)


def report_user_errors(task: Callable[[DictConfig], Any]) -> Callable[[DictConfig], Any]:
    """Decorator for the Hydra task function (see the module docstring)."""

    @functools.wraps(task)
    def wrapper(cfg: DictConfig):
        overrides = _task_overrides()
        mechanism_set = [
            o
            for o in overrides
            if _override_key(o).startswith("mechanism.fn.")
            and not _override_key(o).startswith("mechanism.fn._")
        ]  # _target_: code
        options_set = mechanism_set + [
            o for o in overrides if _override_key(o).startswith("experiment.")
        ]
        try:
            check_ranges(cfg)
            check_mechanism_options(cfg, overrides)
            with warnings.catch_warnings():
                warnings.showwarning = _warning_printer(" ".join(overrides) or "defaults")
                return task(cfg)
        except USER_ERRORS as exc:
            print(_one_line(exc) + _set_by(exc, mechanism_set), file=sys.stderr, flush=True)
            raise SystemExit(USER_ERROR_EXIT) from None
        except OSError as exc:
            if not _is_storage_error(exc) or os.environ.get("HYDRA_FULL_ERROR") == "1":
                raise
            print(_storage_line(exc), file=sys.stderr, flush=True)
            raise SystemExit(STORAGE_ERROR_EXIT) from None
        except (ValueError, TypeError) as exc:
            # a mechanism or an experiment refusing an option the user set: name the option, not
            # a library frame
            if not options_set or os.environ.get("HYDRA_FULL_ERROR") == "1":
                raise
            msg = " ".join(str(exc).split())
            named = [o for o in options_set if _names_override(msg, o)]
            if named:
                what = "mechanism option refused" if mechanism_set else "experiment option refused"
                msg = f" ({what}): {msg} (you set {', '.join(named)})"
            else:  # the refusal is not about an option the user set: do not blame one
                msg = f": {msg}"
            print(f"Error{msg}", file=sys.stderr, flush=True)
            raise SystemExit(USER_ERROR_EXIT) from None
        except InstantiationException as exc:
            # e.g. a mechanism file's _target_ whose package is not importable (PYTHONPATH unset)
            if os.environ.get("HYDRA_FULL_ERROR") == "1":
                raise
            print(f"Error (bad value): {_instantiation_line(exc)}", file=sys.stderr, flush=True)
            raise SystemExit(USER_ERROR_EXIT) from None
        except KeyboardInterrupt:
            raise SystemExit(INTERRUPTED_EXIT) from None

    return wrapper


def _is_storage_error(exc: OSError) -> bool:
    """A record the store would not take, or a full or read-only file system anywhere in the run."""
    return isinstance(exc, StoreWriteError) or exc.errno in STORAGE_ERRNOS


def _storage_line(exc: OSError) -> str:
    """One line for :func:`_is_storage_error`: the file and the system's reason, and that the records
    already stored are kept (each is written whole or not at all)."""
    if isinstance(exc, StoreWriteError):
        return f"Error (results store): {' '.join(str(exc).split())}"
    where = f"{exc.filename}: " if exc.filename else ""
    return (
        f"Error (disk): {where}{exc.strerror or exc}; the run stopped, records already stored are "
        "kept: run the same command again once the disk can be written"
    )


def _instantiation_line(exc: BaseException) -> str:
    """Hydra's instantiation error in one line: its first line, the config key, and for a target
    that cannot be imported, where Python looks for it."""
    lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
    first = lines[0].replace(", set env var HYDRA_FULL_ERROR=1 to see chained exception.", "")
    key = next((x.split(":", 1)[1].strip() for x in lines if x.startswith("full_key:")), None)
    hint = " (is its module on PYTHONPATH?)" if first.startswith("Error locating target") else ""
    return f"{key}: {first}{hint}" if key else f"{first}{hint}"


def run_command_line(app: Callable[[], Any], args: list[str] | None = None) -> int:
    """``run.py``'s main: refuse unknown top-level keys, run the Hydra ``app``, and turn Ctrl-C into
    one line and exit status 130 (worker processes of a sweep stay silent)."""
    argv = sys.argv[1:] if args is None else args
    for check, what in (
        (check_modes, "bad flags"),
        (check_launcher, "no cluster"),
        (check_command_line, "unknown key"),
        (check_override_values, "bad value"),
        (check_results_dir, "results_dir"),
        (check_rerun, "+rerun"),
    ):
        try:
            check(argv)
        except UserError as exc:
            print(f"Error ({what}): {exc}", file=sys.stderr, flush=True)
            return USER_ERROR_EXIT
    # a sweep's joblib workers share a resource-tracker process; interrupted, it would report their
    # queues' semaphores as leaked (harmless: the processes are gone).  The filter reaches it through
    # the environment and matches only that message.
    quiet_tracker = "ignore:resource_tracker:UserWarning"
    os.environ["PYTHONWARNINGS"] = ",".join(
        filter(None, [os.environ.get("PYTHONWARNINGS"), quiet_tracker])
    )
    sys.unraisablehook = _interrupt_again_hook(sys.unraisablehook)
    try:
        app()
    except KeyboardInterrupt:
        return _interrupted()
    except SystemExit as exc:
        if exc.code == INTERRUPTED_EXIT:
            return _interrupted()
        raise
    return 0


def _interrupt_again_hook(default: Callable[[Any], None]) -> Callable[[Any], None]:
    """An unraisable-exception hook for Ctrl-C: a KeyboardInterrupt raised inside a callback Python
    cannot propagate from (a weakref or ``__del__``) is re-delivered to the main thread instead of being
    printed as "Exception ignored ..." and lost; every other unraisable exception goes to ``default``."""

    def hook(unraisable) -> None:
        if issubclass(unraisable.exc_type, KeyboardInterrupt):
            _thread.interrupt_main()
            return
        default(unraisable)

    return hook


def _interrupted() -> int:
    print(INTERRUPTED_MESSAGE, file=sys.stderr, flush=True)
    # skip interpreter shutdown: joblib's resource tracker would add a leaked-semaphore warning, and
    # the workers, interrupted too, have nothing left to write (the store is written atomically)
    sys.stdout.flush()
    os._exit(INTERRUPTED_EXIT)
