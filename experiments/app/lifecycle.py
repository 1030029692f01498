"""The command line's process: ``--help``, the checks before Hydra composes, the Hydra app, Ctrl-C and
the exit status.

* :func:`run_command_line` is the main of ``run.py`` and of the ``privpca`` console command
  (:func:`main`): it registers the schema, answers ``--help`` (:mod:`experiments.app.help`), runs
  the checks of :data:`experiments.app.preflight.CHECKS` (a refusal prints one line and exits with
  status 2), then the Hydra app; Ctrl-C prints one line (records already stored are kept:
  re-running the command resumes) and exits with status 130.
* :func:`run_task` is the task function both apps run on the composed config: the experiment it
  names (:func:`experiments.app.dispatch.run_experiment`), its errors reported in one line
  (:func:`experiments.app.report.report_user_errors`).

Exit statuses: 0 done; 1 Hydra's own composition errors, and a disk that cannot take the records
(:data:`~experiments.app.report.STORAGE_ERROR_EXIT`); 2 a mistake in the command line or a value a
run refuses (:data:`~experiments.app.report.USER_ERROR_EXIT`); 130 Ctrl-C
(:data:`~experiments.app.report.INTERRUPTED_EXIT`).
"""

from __future__ import annotations

import _thread
import os
import sys
from typing import Any, Callable

from omegaconf import DictConfig

from experiments.app.preflight import CHECKS, CONFIG_NAME, parse_command_line
from experiments.app.report import INTERRUPTED_EXIT, USER_ERROR_EXIT, report_user_errors
from experiments.app.schema import register_schema
from experiments.errors import UserError
from experiments.paths import config_dir

#: the Hydra version whose defaults the app keeps (``@hydra.main(version_base=...)``)
VERSION_BASE = "1.3"
INTERRUPTED_MESSAGE = "interrupted; re-run the same command to resume"


@report_user_errors
def run_task(cfg: DictConfig) -> Any:
    """Run the experiment the composed config names (or ``+rerun``), its user errors in one line."""
    from experiments.app.dispatch import run_experiment  # the harness: after the checks

    return run_experiment(cfg)


def run_command_line(app: Callable[[], Any], args: list[str] | None = None) -> int:
    """Answer ``--help``, refuse a command line the checks refuse, run the Hydra ``app``, and turn
    Ctrl-C into one line and exit status 130 (worker processes of a sweep stay silent).

    Parameters
    ----------
    app : callable
        The ``@hydra.main`` app, which reads ``sys.argv`` itself.
    args : list of str, optional
        The command line, without the program; default ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0, or :data:`~experiments.app.report.USER_ERROR_EXIT` for a command line
        refused before Hydra composes (a run refused later exits through ``SystemExit``).
    """
    argv = sys.argv[1:] if args is None else args
    register_schema()
    parsed = parse_command_line(argv)
    if parsed is not None and parsed.help:
        from experiments.app.help import help_page

        print(help_page(argv), flush=True)
        return 0
    for check, what in CHECKS:
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


def main() -> None:
    """The ``privpca`` console command: ``run.py``'s app, on the configs of
    :func:`experiments.paths.config_dir` (``privpca mechanism=ppca dataset=census`` is
    ``python run.py mechanism=ppca dataset=census``)."""
    import hydra

    app = hydra.main(
        version_base=VERSION_BASE, config_path=str(config_dir()), config_name=CONFIG_NAME
    )(run_task)
    sys.exit(run_command_line(app))


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


if __name__ == "__main__":
    main()
