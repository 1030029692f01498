"""The command line's contract: a typed schema for the top-level config, and one-line user errors.

* :class:`RunConfig` is a Hydra structured config (registered as ``run_schema`` in Hydra's
  ConfigStore and listed first in ``conf/config.yaml``'s defaults).  A value of the wrong type
  (``epsilon=abc``, ``seed=1.5``) fails while Hydra composes the config, with Hydra's own one-line
  message naming the key.
* :func:`check_ranges` checks the ranges a type cannot express (``seed >= 0``, ``0 < delta < 1``, ...)
  and raises :class:`UserError` naming the key.
* :func:`report_user_errors` wraps the task function: an error caused by the user (a bad value,
  a missing or corrupt data file, input a mechanism refuses) prints one line to stderr — what is
  wrong, which key or file, what to do — and exits with status 2, without a traceback.  Any other
  exception (a real bug) propagates with its traceback as usual; ``HYDRA_FULL_ERROR=1`` still gives
  the full trace.
"""

from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass
from typing import Any, Callable, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig

from mechanisms import PrivacyInputError

from .datasets import DataCorruptError, DataUnavailableError
from .errors import NotReproduced, UserError

#: exit status of a run refused because of the user's input (Hydra's own composition errors exit 1)
USER_ERROR_EXIT = 2


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
    ppca_iterations: int = MISSING
    progress: Optional[bool] = None
    workers: int = 1


def register_schema() -> None:
    ConfigStore.instance().store(name="run_schema", node=RunConfig)


#: key -> (test, what the key must be)
_RANGES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "epsilon": (lambda v: math.isfinite(v) and v > 0, "a finite number > 0"),
    "delta": (lambda v: 0 <= v < 1, "a number in [0, 1)"),
    "k": (lambda v: v >= 1, "an integer >= 1"),
    "n": (lambda v: v is None or v >= 1, "a positive integer or null (the whole data set)"),
    "seed": (lambda v: v >= 0, "a non-negative integer"),
    "subset": (lambda v: v >= 0, "a non-negative integer"),
    "restart": (lambda v: v >= 0, "a non-negative integer"),
    "ppca_iterations": (lambda v: v >= 1, "an integer >= 1"),
    "workers": (lambda v: v >= 1, "an integer >= 1 (processes for the utility_vs_n groups)"),
}


def check_ranges(cfg: DictConfig) -> None:
    """Raise :class:`UserError` naming the first top-level key whose value is out of range."""
    for key, (ok, what) in _RANGES.items():
        if key not in cfg:
            continue
        value = cfg[key]
        if not ok(value):
            raise UserError(f"{key}={value!r} is out of range: {key} must be {what}")


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, DataUnavailableError):
        what = "data file missing"
        hint = " (set PRIVPCA_DATA_DIR or data_dir=<folder with the raw UCI files>; see README, Data)"
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


def report_user_errors(task: Callable[[DictConfig], Any]) -> Callable[[DictConfig], Any]:
    """Decorator for the Hydra task function (see the module docstring)."""

    @functools.wraps(task)
    def wrapper(cfg: DictConfig):
        try:
            check_ranges(cfg)
            return task(cfg)
        except USER_ERRORS as exc:
            print(_one_line(exc), file=sys.stderr, flush=True)
            raise SystemExit(USER_ERROR_EXIT) from None

    return wrapper
