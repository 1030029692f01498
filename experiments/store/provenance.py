"""What a result record needs to be re-run: package versions, the git commit, the BLAS threads.

:func:`record_provenance` is the one stamp every runner adds to every record it writes: the resolved
config, the package versions, the git commit, the BLAS libraries and threads
(:func:`experiments.threads.blas_provenance`, which ``+rerun`` compares) and the time.

Code run from the project's checkout is named by its git commit (:func:`git_commit`).  An
installed copy (``pip install .``, :func:`experiments.paths.is_checkout` false) has no commit: its
records hold ``"git_commit": null``, and its code is named by the installed distribution's version,
``versions["privpca"]`` (:func:`package_versions`), which every record holds.
"""

from __future__ import annotations

import functools
import platform
import subprocess
import time
from importlib import metadata

from omegaconf import DictConfig, OmegaConf

from experiments.paths import SOURCE_ROOT, checkout_root
from experiments.threads import blas_provenance

#: the folder holding the packages: the checkout's root when running from one
#: (:data:`experiments.paths.SOURCE_ROOT`; configs and results: :mod:`experiments.paths`)
REPO_ROOT = SOURCE_ROOT
PACKAGES = (
    "numpy",
    "scipy",
    "pandas",
    "scikit-learn",
    "hydra-core",
    "numba",
    "dp-accounting",
    "privpca",
)
#: the provenance fields every record carries (:func:`record_provenance`)
PROVENANCE_FIELDS = ("config", "versions", "git_commit", "provenance", "timestamp")


@functools.lru_cache(maxsize=1)
def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    """HEAD commit of the project's checkout, with ``+dirty`` when tracked files have uncommitted
    changes.

    Returns
    -------
    str or None
        The commit; ``"unknown"`` for a checkout git cannot read; None for an installed copy
        (:func:`experiments.paths.checkout_root` is None), whose code is named by
        ``versions["privpca"]`` instead (never by the commit of a repository that happens to
        enclose ``site-packages``).
    """
    root = checkout_root()
    if root is None:
        return None
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if not head:
        return "unknown"
    return head + ("+dirty" if dirty else "")


def utc_timestamp() -> str:
    """The time now, UTC, as ``YYYY-MM-DDTHH:MM:SSZ`` (the records' ``timestamp``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def record_provenance(cfg: DictConfig, timestamp: str | None = None) -> dict:
    """The provenance fields of a record made under ``cfg`` (:data:`PROVENANCE_FIELDS`).

    Parameters
    ----------
    cfg : DictConfig
        The composed config of the run; stored resolved under ``"config"``.
    timestamp : str, optional
        The record's time stamp (records written together may share one); default: now
        (:func:`utc_timestamp`).

    Returns
    -------
    dict
        ``config`` (the resolved config), ``versions`` (:func:`package_versions`), ``git_commit``
        (:func:`git_commit`: None for an installed copy), ``provenance`` (the BLAS libraries and thread count,
        :func:`experiments.threads.blas_provenance`, which ``+rerun`` reads) and ``timestamp``.
    """
    return {
        "config": OmegaConf.to_container(cfg, resolve=True),
        "versions": package_versions(),
        "git_commit": git_commit(),
        "provenance": blas_provenance(),
        "timestamp": utc_timestamp() if timestamp is None else timestamp,
    }
