"""Errors caused by what the user asked for (bad values, unknown names): run.py reports them in one
line without a traceback (:mod:`experiments.cli`).  Subclasses of ValueError, so callers that catch
ValueError keep working."""


class UserError(ValueError):
    """A problem with what the user asked for (not a bug)."""


class NotReproduced(UserError):
    """``+rerun``: the re-run's values differ from the record's (the message names the fields and cause)."""
