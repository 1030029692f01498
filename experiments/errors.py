"""Errors run.py reports in one line without a traceback (:mod:`experiments.app.report`): those caused by
what the user asked for (bad values, unknown names; subclasses of ValueError, so callers that catch
ValueError keep working), and a results store that cannot be written (a subclass of OSError)."""


class UserError(ValueError):
    """A problem with what the user asked for (not a bug)."""


class NotReproduced(UserError):
    """``+rerun``: the re-run's values differ from the record's (the message names the fields and cause)."""


class StoreWriteError(OSError):
    """A record could not be written to the results store (a full disk, a read-only file system, no
    permission).  Nothing partial is left under the record's name; the same command, run again once
    the store can be written, resumes.  ``errno`` is the system's."""
