"""The command line's ``--help``: its config groups with their options, and its top-level keys with
their types and defaults, read from the schema (:mod:`experiments.app.schema`) and from Hydra's
config repository for the command line (:class:`experiments.app.preflight.CommandLineConfigs`), so
that ``--config-dir`` and the overrides given beside ``--help`` show in it.  Hydra's own page stays
``--hydra-help``."""

from __future__ import annotations

import os
import sys
import textwrap
import types
import typing
from typing import Any

from hydra.core.object_type import ObjectType
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from experiments.app.preflight import CommandLineConfigs, command_line_overrides
from experiments.app.schema import EXTRA_KEYS, schema_types

#: the groups of Hydra's own configs a user of this app chooses (``-m hydra/launcher=local_parallel``)
HYDRA_GROUPS = ("hydra/launcher",)
#: what an extra key (:data:`experiments.app.schema.EXTRA_KEYS`) takes
EXTRA_KEY_HELP = {"rerun": "a record id: replay that stored record and check it bit for bit"}


def program() -> str:
    """How the command was called: ``python run.py``, or the console command's name."""
    argv0 = sys.argv[0] if sys.argv else ""
    name = os.path.basename(argv0)
    if name.endswith(".py"):
        return f"python {argv0}"
    return "privpca" if not name or name.startswith("-") else name


def type_name(tp: Any) -> str:
    """``Optional[int]`` -> ``int or null``; ``float`` -> ``float``."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        members = [m for m in typing.get_args(tp) if m is not type(None)]
        names = " or ".join(type_name(m) for m in members)
        return f"{names} or null" if len(members) < len(typing.get_args(tp)) else names
    return getattr(tp, "__name__", str(tp))


def value_text(value: Any) -> str:
    """A config value as YAML writes it (``null``, ``true``, ``0.1``, ``${dataset.k}``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


#: the width the page wraps to
WIDTH = 100


def _table(rows: list[tuple[str, ...]], indent: str = "  ") -> list[str]:
    """Rows in aligned columns, the last one wrapped at :data:`WIDTH` under itself."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)] if rows else []
    out = []
    for r in rows:
        head = indent + "".join(c.ljust(w + 2) for c, w in zip(r, widths))
        out += textwrap.wrap(
            r[-1],
            width=WIDTH,
            initial_indent=head,
            subsequent_indent=" " * len(head),
            break_on_hyphens=False,
        ) or [head.rstrip()]
    return out


def _configs(args: list[str]) -> tuple[CommandLineConfigs | None, list[str]]:
    """Hydra's configs for the command line, and the overrides among ``args`` that Hydra reads."""
    parser = OverridesParser.create()
    parsed, lines = [], []
    for line in command_line_overrides(args):
        try:
            parsed += parser.parse_overrides([line])
            lines.append(line)
        except Exception:  # noqa: BLE001 - the help shows the defaults then
            continue
    return CommandLineConfigs.of(args, parsed), lines


def _choices(configs: CommandLineConfigs, overrides: list[str]) -> dict[str, Any]:
    """The choice of each group a run with ``overrides`` makes (Hydra's defaults list), or the
    defaults when these overrides do not compose."""
    for attempt in (overrides, []):
        try:
            defaults = configs.loader.compute_defaults_list(
                configs.config_name, [*configs.searchpath, *attempt], RunMode.RUN
            )
            return dict(defaults.overrides.known_choices)
        except Exception:  # noqa: BLE001 - an override that does not compose: the defaults
            continue
    return {}


def help_page(args: list[str]) -> str:
    """The text ``--help`` prints for the command line ``args``.

    Parameters
    ----------
    args : list of str
        The command line, without the program (``--help`` among it).

    Returns
    -------
    str
        Usage, the config groups and their options (``*`` marks the choice a run would make), the
        top-level keys with their types and defaults, and where to read more.
    """
    prog = program()
    configs, overrides = _configs(args)
    lines = [
        f"usage: {prog} [-m] [group=option ...] [key=value ...]",
        "",
        "Runs the experiment the config names (the default: one run), or with -m (--multirun) a",
        "sweep over every combination of comma-separated values. Hydra composes the config from",
        "the groups and keys below; records go to <results_dir>/records/ (docs/running.md).",
    ]
    primary: dict[str, Any] = {}
    if configs is not None:
        chosen = _choices(configs, overrides)
        groups = [
            g
            for g in configs.repo.get_group_options("", results_filter=ObjectType.GROUP)
            if g != "hydra"
        ] + [g for g in HYDRA_GROUPS if configs.is_group(g)]
        rows = [
            (g, ", ".join(o + ("*" if o == chosen.get(g) else "") for o in configs.options(g)))
            for g in groups
        ]
        lines += ["", "Config groups (group=option; * the option this command line runs):"]
        lines += _table(rows)
        result = configs.repo.load_config(configs.config_name)
        if result is not None and isinstance(result.config, DictConfig):
            primary = OmegaConf.to_container(result.config, resolve=False)
    rows = [
        (key, type_name(tp), value_text(primary[key]) if key in primary else "")
        for key, tp in schema_types().items()
        if tp is not Any
    ]
    rows += [(f"+{key}", "str", EXTRA_KEY_HELP.get(key, "")) for key in EXTRA_KEYS]
    lines += ["", "Top-level keys (key=value; type, default in the primary config):"]
    lines += _table(rows)
    lines += [
        "",
        "A group's own keys: mechanism.fn.<option> (conf/mechanism/<name>.yaml), experiment.<option>",
        f"(conf/experiment/<name>.yaml); {prog} <overrides> --cfg job prints the composed config.",
        "Hydra's flags work as usual (-m, --cfg job|hydra|all, --info, --config-dir DIR, -cn NAME);",
        "--hydra-help prints Hydra's own help.",
    ]
    return "\n".join(lines)
