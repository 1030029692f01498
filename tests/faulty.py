"""Fault injection for the sweep tests: a MOD-SULQ that hard-crashes its process on its N-th call.

Controlled by environment variables (so the mechanism's parameters, and hence the records' run keys,
are those of the ordinary ``mod_sulq``): ``PRIVPCA_TEST_CRASH_FILE`` (a counter file shared by all
worker processes) and ``PRIVPCA_TEST_CRASH_AT`` (crash on that call number).
"""

import fcntl
import os

from mechanisms.mod_sulq import mod_sulq


def crashing_mod_sulq(X, k, *, rng, epsilon, delta, clip=False, **params):
    path = os.environ["PRIVPCA_TEST_CRASH_FILE"]
    crash_at = int(os.environ["PRIVPCA_TEST_CRASH_AT"])
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        count = len(fh.read()) + 1
        fh.write("x")
        fh.flush()
    if count == crash_at:
        os._exit(13)  # a worker dying without cleanup, as on SIGKILL or OOM
    return mod_sulq(
        X, k, rng=rng, epsilon=epsilon, delta=delta, clip=clip, **params
    )  # e.g. calibration


def buggy_mechanism(X, k, *, rng, epsilon, clip=False):
    """A mechanism with a programming error (a bug, not a user mistake: run.py shows its traceback)."""
    return len(None)


def disk_full_mod_sulq(X, k, *, rng, epsilon, delta, clip=False, **params):
    """MOD-SULQ, after which the disk is full: every ``os.fsync`` in this process raises ENOSPC, as
    a write would when the file system has no room left (for run.py's one-line report)."""
    import errno

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    os.fsync = full
    return mod_sulq(X, k, rng=rng, epsilon=epsilon, delta=delta, clip=clip, **params)
