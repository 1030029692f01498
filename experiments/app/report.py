"""One-line reports of what goes wrong once Hydra has composed a config, and the exit statuses.

:func:`report_user_errors` wraps the task function: it checks the ranges and the mechanism options
the schema cannot express (:mod:`experiments.app.schema`), then runs the task.  An error caused by
the user (a bad value, a missing or corrupt data file, input a mechanism refuses, a mechanism or
experiment option it refuses, a ``_target_`` that cannot be imported) prints one line to stderr —
what is wrong, which key or file, what to do — and exits with status 2, without a traceback.  Any
other exception (a real bug) propagates with its traceback as usual; ``HYDRA_FULL_ERROR=1`` still
gives the full trace.  A disk that is full or read-only (a record the store would not take, or
ENOSPC, EDQUOT, EROFS or EFBIG anywhere in the run) also prints one line, naming the file and the
reason, and exits with status 1.  Warnings raised during the run print as one line naming the run
(its command-line overrides), not the library file that raised them.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import sys
import warnings
from typing import Any, Callable

from hydra.errors import InstantiationException
from omegaconf import DictConfig

from experiments.app.schema import check_mechanism_options, check_ranges, override_key
from experiments.data.uci import DataCorruptError, DataUnavailableError
from experiments.errors import NotReproduced, StoreWriteError, UserError
from mechanisms import PrivacyInputError

#: exit status of a run refused because of the user's input (Hydra's own composition errors exit 1)
USER_ERROR_EXIT = 2
#: exit status of a run stopped because the disk is full or not writable (no traceback)
STORAGE_ERROR_EXIT = 1
#: system errors that mean "the file system cannot take the write", not a bug: one line, no traceback
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})
#: exit status after Ctrl-C (128 + SIGINT, the shell's convention)
INTERRUPTED_EXIT = 130
#: the errors :func:`report_user_errors` reports as the user's, in one line with exit status 2
USER_ERRORS = (UserError, PrivacyInputError, DataUnavailableError, DataCorruptError)


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


def _set_by(exc: BaseException, mechanism_set: list[str]) -> str:
    """The suffix `` (you set mechanism.fn.tree=maybe)`` when a mechanism's refusal opens with the
    name of an option the user set on the command line (``tree must be ...``); else ``""``."""
    if not isinstance(exc, PrivacyInputError):
        return ""
    first_word = str(exc).split(" ", 1)[0]
    named = [o for o in mechanism_set if override_key(o).rsplit(".", 1)[-1] == first_word]
    return f" (you set {', '.join(named)})" if named else ""


def _names_override(message: str, override: str) -> bool:
    """Whether ``message`` names the option of ``override`` (its last key) or its value, as a word."""
    key, _, value = override.partition("=")
    words = [override_key(key).rsplit(".", 1)[-1], value.strip("'\"")]
    return any(w and re.search(rf"(?<!\w){re.escape(w)}(?!\w)", message) for w in words)


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


def report_user_errors(task: Callable[[DictConfig], Any]) -> Callable[[DictConfig], Any]:
    """Decorator for the Hydra task function (see the module docstring).

    Parameters
    ----------
    task : callable
        The task function, called with the composed config.

    Returns
    -------
    callable
        The task, its user errors reported in one line: ``SystemExit`` with :data:`USER_ERROR_EXIT`
        or :data:`STORAGE_ERROR_EXIT`, and with :data:`INTERRUPTED_EXIT` on Ctrl-C.
    """

    @functools.wraps(task)
    def wrapper(cfg: DictConfig):
        overrides = _task_overrides()
        mechanism_set = [
            o
            for o in overrides
            if override_key(o).startswith("mechanism.fn.")
            and not override_key(o).startswith("mechanism.fn._")
        ]  # _target_: code
        options_set = mechanism_set + [
            o for o in overrides if override_key(o).startswith("experiment.")
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
