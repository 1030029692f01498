"""What a result record needs to be re-run: package versions, the git commit, the BLAS threads.

:func:`record_provenance` is the one stamp every runner adds to every record it writes: the resolved
config, the package versions, the git commit, the BLAS libraries and threads
(:func:`experiments.threads.blas_provenance`, which ``+rerun`` compares) and the time.
"""

from __future__ import annotations

import functools
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from experiments.threads import blas_provenance

REPO_ROOT = Path(__file__).resolve().parents[2]
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
def git_commit() -> str:
    """HEAD commit of the project, with ``+dirty`` when tracked files have uncommitted changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO_ROOT,
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
        (:func:`git_commit`), ``provenance`` (the BLAS libraries and thread count,
        :func:`experiments.threads.blas_provenance`, which ``+rerun`` reads) and ``timestamp``.
    """
    return {
        "config": OmegaConf.to_container(cfg, resolve=True),
        "versions": package_versions(),
        "git_commit": git_commit(),
        "provenance": blas_provenance(),
        "timestamp": utc_timestamp() if timestamp is None else timestamp,
    }
