"""Where and how a peer runs: its interpreter (``.venv-peers``, created on first use), the subprocess worker
with a wall-clock cap, and the data files handed to it."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from experiments.store.provenance import REPO_ROOT

log = logging.getLogger(__name__)

WORKER = Path(__file__).resolve().parent / "worker.py"
PEER_VENV = REPO_ROOT / ".venv-peers"

#: What the harness installs into ``.venv-peers`` (pinned: the findings in docs/peers.md are about
#: these versions).  scikit-learn < 1.9 because diffprivlib imports ``sklearn.tree._tree.DOUBLE``.
PEER_VENV_REQUIREMENTS = (
    "diffprivlib==0.6.6",
    "opendp[scikit-learn]==0.16.0",
    "scikit-learn>=1.6,<1.9",
    "numpy>=2,<3",
    "scipy>=1.13,<2",
)

#: Environment of every worker: one thread (the machine is shared; timings compare one core each).
WORKER_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONWARNINGS": "ignore",
    "PYTHONDONTWRITEBYTECODE": "1",
}


class PeerUnavailableError(SystemExit):
    """The peer library cannot be run (not installed and no environment could be made for it).

    A ``SystemExit`` on purpose: raised from a ``run.py`` job it ends the process with its one-line
    message and exit status 1, without a traceback (Hydra's error report handles only ``Exception``s).
    """

    def __init__(self, message: str):
        super().__init__(f"privpca: {message}")
        self.message = message


class PeerError(RuntimeError):
    """The peer ran but failed (an exception inside the peer, or a broken protocol)."""


@dataclass(frozen=True)
class PeerSpec:
    name: str  # mechanism name in the harness
    module: str  # the peer's package name in the worker
    distribution: str  # what pip installs
    neighbouring: str  # relation of the peer's accounting, in privpca's vocabulary
    relation_note: str  # how the peer states it


PEERS = {
    "diffprivlib_pca": PeerSpec(
        "diffprivlib_pca",
        "diffprivlib",
        "diffprivlib==0.6.6",
        "replace-one-row",
        "diffprivlib states no neighbouring relation; its PCA (Amin et al. 2019) adds Laplace noise of "
        "sensitivity 2 to the eigenvalues of X'X, which is the replace-one-row sensitivity",
    ),
    "opendp_pca": PeerSpec(
        "opendp_pca",
        "opendp",
        "opendp[scikit-learn]==0.16.0",
        "replace-one-row",
        "OpenDP: symmetric distance on a data set of known size; one changed row is d_in = 2 "
        "(one removal + one addition), at which the privacy map is evaluated",
    ),
}


# --------------------------------------------------------------------------- environments


def _probe(python: str, peer: str, timeout: float = 120.0) -> tuple[bool, str]:
    """(importable, detail): does ``python`` run the worker's probe for ``peer``?"""
    try:
        res = call_worker(python, {"command": "probe", "peer": peer}, timeout=timeout)
    except (PeerError, OSError) as exc:
        return False, str(exc)
    if res["status"] == "timeout":
        return False, f"probe timed out after {timeout:g} s"
    if res.get("status") != "ok":
        return False, str(res.get("error", res))
    return True, json.dumps(res.get("versions", {}), sort_keys=True)


@functools.lru_cache(maxsize=None)
def _probe_cached(python: str, peer: str) -> tuple[bool, str]:
    return _probe(python, peer)


def create_peer_venv(
    path: Path = PEER_VENV, requirements: tuple[str, ...] = PEER_VENV_REQUIREMENTS
) -> Path:
    """Create ``path`` as a virtual environment holding the peers; return its interpreter."""
    python = path / "bin" / "python"
    log.warning(
        "creating the peers' environment %s (%s); this takes a minute", path, " ".join(requirements)
    )
    try:
        subprocess.run(
            [sys.executable, "-m", "venv", str(path)], check=True, capture_output=True, text=True
        )
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", *requirements],
            check=True,
            capture_output=True,
            text=True,
        )
    except subprocess.CalledProcessError as exc:
        tail = (exc.stderr or exc.stdout or "").strip().splitlines()[-1:] or [""]
        raise PeerUnavailableError(
            f"could not create the peers' environment {path}: {tail[0]}"
        ) from None
    return python


def peer_python(name: str, python: str | None = None, install: bool | None = None) -> str:
    """The interpreter that runs peer ``name`` (see the module docstring for the order tried)."""
    spec = peer_spec(name)
    python = python or os.environ.get("PRIVPCA_PEERS_PYTHON")
    hint = (
        f"install it with pip install -e '.[peers]' (where scikit-learn < 1.9 for diffprivlib), or let "
        f"the harness create {PEER_VENV.name} (install=true)"
    )
    if python:
        ok, why = _probe_cached(str(python), spec.module)
        if not ok:
            raise PeerUnavailableError(
                f"mechanism {name} needs {spec.module}, which {python} cannot import "
                f"({why.splitlines()[-1] if why else 'no detail'})"
            )
        return str(python)
    candidates = [sys.executable]
    venv_python = PEER_VENV / "bin" / "python"
    if venv_python.exists():
        candidates.append(str(venv_python))
    for cand in candidates:
        if _probe_cached(cand, spec.module)[0]:
            return cand
    if install is None:
        install = os.environ.get("PRIVPCA_PEERS_INSTALL", "1") not in ("0", "false", "no")
    if not install:
        raise PeerUnavailableError(
            f"mechanism {name} needs {spec.module}, which is not installed; {hint}"
        )
    if not venv_python.exists():
        create_peer_venv()
    _probe_cached.cache_clear()
    ok, why = _probe_cached(str(venv_python), spec.module)
    if not ok:
        raise PeerUnavailableError(
            f"mechanism {name}: {spec.module} does not import in {PEER_VENV} "
            f"({why.splitlines()[-1] if why else 'no detail'}); {hint}"
        )
    return str(venv_python)


def peer_spec(name: str) -> PeerSpec:
    try:
        return PEERS[name]
    except KeyError:
        raise ValueError(f"unknown peer {name!r}; valid: {', '.join(sorted(PEERS))}") from None


# --------------------------------------------------------------------------- the protocol


def call_worker(
    python: str,
    request: dict,
    *,
    X: np.ndarray | None = None,
    timeout: float = 60.0,
    worker: str | Path | None = None,
    data_file: Path | None = None,
) -> dict:
    """Run one worker job; return its ``result.json`` (plus ``arrays`` and ``plan``) as a dict.

    The worker runs in a session of its own; when ``timeout`` seconds of wall-clock time pass, the
    whole session is killed and the result is ``{"status": "timeout", "plan": <its plan.json, if
    any>}`` -- a stalled peer never hangs the harness.
    """
    if not (timeout > 0):
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    with tempfile.TemporaryDirectory(prefix="privpca-peer-") as tmp:
        job = Path(tmp)
        if X is not None:
            if data_file is not None:
                os.symlink(data_file, job / "X.npy")
            else:
                np.save(job / "X.npy", np.ascontiguousarray(X, dtype=np.float64))
        (job / "request.json").write_text(json.dumps(request))
        # the worker exits by itself if this process dies (experiments/peers/worker.py)
        env = {**os.environ, **WORKER_ENV, "PRIVPCA_PEER_PARENT": str(os.getpid())}
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [str(python), str(worker or WORKER), str(job)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except BaseException as exc:  # the cap, or Ctrl-C / an error here: the worker goes too
            if not isinstance(exc, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                raise
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the worker's own session only
            except ProcessLookupError:
                pass
            proc.communicate()
            return {
                "status": "timeout",
                "elapsed_seconds": time.perf_counter() - t0,
                "timeout_seconds": timeout,
                "plan": _read_json(job / "plan.json"),
            }
        elapsed = time.perf_counter() - t0
        result = _read_json(job / "result.json")
        if result is None:
            tail = (stderr or stdout or "").strip().splitlines()[-1:] or ["no output"]
            raise PeerError(
                f"peer worker exited with status {proc.returncode} without a result: {tail[0]}"
            )
        result["elapsed_seconds"] = elapsed
        result["plan"] = _read_json(job / "plan.json")
        if (job / "result.npz").exists():
            with np.load(job / "result.npz") as z:
                result["arrays"] = {key: z[key] for key in z.files}
        return result


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


#: One ``.npy`` file per read-only data matrix (a PreparedData's), shared by the runs on it and
#: removed with the matrix: the full kddcup matrix is 0.46 GB.
_DATA_FILES: dict[int, Path] = {}


def _data_file(X: np.ndarray) -> Path | None:
    if X.flags.writeable:
        return None
    key = id(X)
    path = _DATA_FILES.get(key)
    if path is None or not path.exists():
        fd, name = tempfile.mkstemp(prefix="privpca-peer-data-", suffix=".npy")
        os.close(fd)
        path = Path(name)
        np.save(path, X)
        _DATA_FILES[key] = path
        weakref.finalize(X, _drop_data_file, key, path)
    return path


def _drop_data_file(key: int, path: Path) -> None:
    _DATA_FILES.pop(key, None)
    try:
        path.unlink()
    except OSError:
        pass


# --------------------------------------------------------------------------- mechanisms
