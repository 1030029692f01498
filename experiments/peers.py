"""The peers, run by the harness: IBM diffprivlib's and OpenDP's private PCA as optional mechanisms.

Why here and not in :mod:`mechanisms`: the peers run in a *subprocess* (``experiments/peer_worker.py``)
so that every run has a wall-clock cap -- both peers ship a vector-Bingham rejection sampler that can
stall (docs/peers.md) -- and so that a peer may live in an environment of its own: diffprivlib 0.6.6
(and its fork diffprivlib-fix 0.6.7) fails to import with scikit-learn >= 1.9, which privpca's own
environment may use.  That is process and file I/O, which the library code does not do.

Mechanism contract (as every privpca mechanism): ``mechanism(X, k, *, rng, epsilon, ...) ->
MechanismOutput``.  Here ``epsilon`` is the ε the **peer certifies by its own accounting** for the
release (diffprivlib's ``BudgetAccountant``; OpenDP's privacy map at one changed row), so that runs
are compared at equal certified privacy; the guarantee records that certified ε, the neighbouring
relation the peer's accounting uses, and ``exact=False``: both peers' vector-Bingham samplers draw
from another law than the one their proofs assume (the d = 2 check, :func:`bingham_d2_check`).

Which interpreter runs a peer (:func:`peer_python`): ``python=`` if given (or ``$PRIVPCA_PEERS_PYTHON``),
else the current interpreter if the peer imports there (``pip install -e '.[peers]'``), else the
harness's own environment ``<repo>/.venv-peers``, created on first use with
:data:`PEER_VENV_REQUIREMENTS` (disable with ``install=False`` or ``$PRIVPCA_PEERS_INSTALL=0``).
A peer that cannot be made available raises :class:`PeerUnavailableError`, which ends a
``run.py`` job with one line (it is a ``SystemExit``).
"""

from __future__ import annotations

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
from typing import Any

import numpy as np

from mechanisms import MechanismOutput, PrivacyGuarantee, check_data, check_epsilon, check_k

from .provenance import REPO_ROOT

log = logging.getLogger(__name__)

WORKER = Path(__file__).resolve().with_name("peer_worker.py")
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
        env = {**os.environ, **WORKER_ENV}
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
        except subprocess.TimeoutExpired:
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


def run_peer_pca(
    name: str,
    X: Any,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float,
    timeout: float = 60.0,
    clip: bool = False,
    python: str | None = None,
    install: bool | None = None,
    worker: str | Path | None = None,
    **options: Any,
) -> MechanismOutput:
    """Run peer ``name``'s PCA on ``X`` (rows of L2 norm <= 1) at certified ε = ``epsilon``.

    Returns ``components`` (d x k, orthonormal) or ``None`` with release status ``"timeout"`` when the
    peer did not finish within ``timeout`` seconds.  The guarantee's ε is what the peer's accounting
    certifies (read back from the worker, also for a run that timed out), never assumed.
    """
    spec = peer_spec(name)
    eps = check_epsilon(epsilon)
    data, n_clipped = check_data(X, clip=clip)
    n, d = data.shape
    k = check_k(k, d)
    if worker is None:
        python = peer_python(name, python, install)
    else:
        python = python or sys.executable
    seed = int(rng.integers(0, 2**32 - 1))
    request = {
        "command": "pca",
        "peer": spec.module,
        "k": k,
        "epsilon": eps,
        "seed": seed,
        **options,
    }
    data_file = _data_file(
        data
    )  # shared across runs when data is a (read-only) PreparedData matrix
    res = call_worker(python, request, X=data, timeout=timeout, worker=worker, data_file=data_file)
    if res["status"] not in ("ok", "timeout"):
        raise PeerError(f"{name} failed: {res.get('error', res)}")
    meta = res if res["status"] == "ok" else (res.get("plan") or {})
    certified = meta.get("certified_epsilon")
    note = (
        f"epsilon as certified by {spec.module}'s own accounting ({meta.get('accounting', 'unknown')}); "
        f"{spec.relation_note}; not exact: the peer's vector-Bingham sampler draws from another law "
        f"than its proof assumes (docs/peers.md, d = 2 check)"
    )
    if (
        certified is None
    ):  # killed before it could state its accounting: nothing certified on record
        guarantee = PrivacyGuarantee(
            float("nan"),
            0.0,
            spec.neighbouring,
            exact=False,
            note="timed out before the peer stated its accounting",
            status="unknown",
        )
    else:
        guarantee = PrivacyGuarantee(
            float(certified),
            float(meta.get("certified_delta", 0.0)),
            spec.neighbouring,
            exact=False,
            note=note,
            status="certified by peer, not met",
        )
    diagnostics = {
        "peer": spec.module,
        "interpreter": str(python),
        "requested_epsilon": eps,
        "nominal_epsilon": meta.get("nominal_epsilon"),
        "peer_seed": seed,
        "peer_fit_seconds": res.get("fit_seconds"),
        "subprocess_seconds": res.get("elapsed_seconds"),
        "timeout_seconds": float(timeout),
        "n_clipped": n_clipped,
        "peer_versions": res.get("versions"),
        "seeded": meta.get("seeded"),
        **{
            key: meta[key]
            for key in ("certified_epsilon_at_nominal_target", "map_d_in_1", "api", "features")
            if key in meta
        },
    }
    if res["status"] == "timeout":
        # said on the terminal at once: the run was silent for the whole cap and has no utility to show
        print(
            f"{name}: timed out after {timeout:g} s (the wall-clock cap); recorded with status 'timeout', "
            "no subspace released",
            file=sys.stderr,
            flush=True,
        )
        return MechanismOutput(
            None, guarantee, release={"status": "timeout"}, diagnostics=diagnostics
        )
    V = np.asarray(res["arrays"]["components"], dtype=np.float64)
    if V.shape != (d, k):
        raise PeerError(f"{name} returned components of shape {V.shape}, expected {(d, k)}")
    return MechanismOutput(V, guarantee, release={"status": "ok"}, diagnostics=diagnostics)


def diffprivlib_pca(
    X: Any,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float,
    timeout: float = 60.0,
    clip: bool = False,
    python: str | None = None,
    install: bool | None = None,
    worker: str | Path | None = None,
) -> MechanismOutput:
    """IBM diffprivlib's ``models.PCA`` (Amin et al., NeurIPS 2019, Algorithm 1), ``centered=True``,
    ``data_norm=1``: ε-DP by diffprivlib's accountant, with the sampler caveat of the module docstring."""
    return run_peer_pca(
        "diffprivlib_pca",
        X,
        k,
        rng=rng,
        epsilon=epsilon,
        timeout=timeout,
        clip=clip,
        python=python,
        install=install,
        worker=worker,
    )


def opendp_pca(
    X: Any,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float,
    timeout: float = 60.0,
    clip: bool = False,
    api: str = "measurement",
    match_certified: bool = True,
    python: str | None = None,
    install: bool | None = None,
    worker: str | Path | None = None,
) -> MechanismOutput:
    """OpenDP's private PCA (Amin et al. 2019) at certified ε = ``epsilon``.

    ``api="measurement"``: ``make_private_pca`` on a domain with origin 0 (decomposes XᵀX, as
    privpca's PCA does); ``api="sklearn"``: the scikit-learn style ``PCA`` class (spends part of ε
    on a private mean).  ``match_certified=False`` passes ``epsilon`` as OpenDP's nominal parameter
    and records what OpenDP then certifies (2ε for the ``sklearn`` class).  OpenDP draws from its
    own CSPRNG: runs are not reproducible from ``rng``.
    """
    if api not in ("measurement", "sklearn"):
        raise ValueError(f"api must be 'measurement' or 'sklearn', got {api!r}")
    return run_peer_pca(
        "opendp_pca",
        X,
        k,
        rng=rng,
        epsilon=epsilon,
        timeout=timeout,
        clip=clip,
        python=python,
        install=install,
        worker=worker,
        api=api,
        match_certified=bool(match_certified),
    )


# --------------------------------------------------------------------------- d = 2 sampler check


def bingham_d2_target(kappa: float) -> dict:
    """The vector Bingham law f(u) ∝ exp(κ u₁²) on the circle, u = (cos θ, sin θ).

    f(θ) ∝ exp(−κ sin²θ) = exp(−κ/2) exp((κ/2) cos 2θ), a von Mises law in 2θ, so
    E[sin²θ] = (1 − I₁(κ/2)/I₀(κ/2)) / 2 and P(sin²θ ≤ t) = F(arcsin √t) with F the
    normalised ∫₀^φ exp(−κ sin²ψ) dψ over [0, π/2].
    """
    from scipy import integrate, special

    h = kappa / 2.0
    mean = 0.5 * (1.0 - special.i1e(h) / special.i0e(h))
    total = integrate.quad(lambda p: np.exp(-kappa * np.sin(p) ** 2), 0.0, np.pi / 2)[0]

    def cdf(t):
        t = np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0)
        phi = np.arcsin(np.sqrt(t))
        return (
            np.vectorize(
                lambda a: integrate.quad(lambda p: np.exp(-kappa * np.sin(p) ** 2), 0.0, a)[0]
            )(phi)
            / total
        )

    return {"mean_sin2": float(mean), "cdf": cdf}


def bingham_d2_check(
    kappa: float = 10.0,
    draws: int = 2000,
    seed: int = 0,
    *,
    timeout: float = 600.0,
    peers: tuple[str, ...] = ("diffprivlib_pca", "opendp_pca"),
    python: str | None = None,
    install: bool | None = None,
) -> list[dict]:
    """Draw ``draws`` unit vectors from each implementation's vector-Bingham sampler for
    f(u) ∝ exp(κ u₁²) on S¹ and compare with the exact law (:func:`bingham_d2_target`).

    Returns one row per implementation: mean of sin²θ (= u₂²) with its Monte Carlo standard error,
    the target mean, the z-score and a Kolmogorov-Smirnov test of sin²θ against the exact CDF.
    ``privpca`` is :func:`mechanisms.bingham.sample_vector_bingham` (used by ``ppca`` for k = 1 and
    by ``ppca_iterative``).  A peer that is unavailable or times out gets a row with that status.
    """
    from scipy import stats

    from mechanisms.bingham import sample_vector_bingham

    target = bingham_d2_target(kappa)
    C = [[1.0, 0.0], [0.0, 0.0]]
    samples: dict[str, tuple[str, np.ndarray | None, float | None, dict]] = {}
    t0 = time.perf_counter()
    ours = sample_vector_bingham(
        kappa * np.asarray(C), size=draws, rng=np.random.default_rng([seed, 2])
    )
    samples["privpca"] = ("ok", ours, time.perf_counter() - t0, {})
    for name in peers:
        spec = peer_spec(name)
        try:
            py = peer_python(name, python, install)
        except PeerUnavailableError as exc:
            samples[name] = ("unavailable", None, None, {"error": exc.message})
            continue
        res = call_worker(
            py,
            {
                "command": "bingham_d2",
                "peer": spec.module,
                "kappa": kappa,
                "matrix": C,
                "draws": draws,
                "seed": seed,
            },
            timeout=timeout,
        )
        if res["status"] != "ok":
            samples[name] = (res["status"], None, None, {"error": res.get("error")})
            continue
        samples[name] = (
            "ok",
            res["arrays"]["draws"],
            res.get("sampler_seconds"),
            {"versions": res.get("versions")},
        )
    rows = []
    for name, (status, U, seconds, extra) in samples.items():
        row = {
            "implementation": name,
            "status": status,
            "kappa": kappa,
            "draws": draws,
            "target_mean_sin2": target["mean_sin2"],
            "seconds": seconds,
            **extra,
        }
        if U is not None:
            s2 = np.asarray(U)[:, 1] ** 2 / np.sum(np.asarray(U) ** 2, axis=1)
            mean, se = float(s2.mean()), float(s2.std(ddof=1) / np.sqrt(s2.size))
            ks = stats.kstest(s2, target["cdf"])
            row.update(
                mean_sin2=mean,
                mc_standard_error=se,
                z=(mean - target["mean_sin2"]) / se,
                ks_statistic=float(ks.statistic),
                ks_pvalue=float(ks.pvalue),
            )
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- accounting check

#: (mechanism, options, label): each peer's user-facing call with ε passed as its nominal parameter.
ACCOUNTING_CALLS = (
    ("diffprivlib_pca", {}, "diffprivlib models.PCA(epsilon=eps, centered=True)"),
    (
        "opendp_pca",
        {"api": "sklearn", "match_certified": False},
        "OpenDP sklearn.decomposition.PCA(epsilon=eps)",
    ),
    (
        "opendp_pca",
        {"api": "measurement", "match_certified": False},
        "OpenDP make_private_pca(unit_epsilon=eps, origin 0)",
    ),
)


def accounting_check(
    epsilon: float = 1.0,
    n: int = 500,
    d: int = 6,
    k: int = 2,
    *,
    seed: int = 0,
    timeout: float = 120.0,
    python: str | None = None,
    install: bool | None = None,
) -> list[dict]:
    """What each peer certifies, by its own accounting, when its user-facing call is given ε.

    Runs every call of :data:`ACCOUNTING_CALLS` on a small Gaussian data set (rows scaled into the
    unit ball) and reports the certified ε and the ratio certified/nominal.
    """
    rng = np.random.default_rng([seed, 3])
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1).max()
    rows = []
    for name, options, label in ACCOUNTING_CALLS:
        row = {"call": label, "mechanism": name, "nominal_epsilon": float(epsilon)}
        try:
            fn = diffprivlib_pca if name == "diffprivlib_pca" else opendp_pca
            out = fn(
                X,
                k,
                rng=np.random.default_rng(seed),
                epsilon=epsilon,
                timeout=timeout,
                python=python,
                install=install,
                **options,
            )
        except PeerUnavailableError as exc:
            rows.append({**row, "status": "unavailable", "error": exc.message})
            continue
        row.update(
            status=out.status,
            certified_epsilon=out.guarantee.epsilon,
            ratio=out.guarantee.epsilon / float(epsilon),
            neighbouring=out.guarantee.neighbouring,
            accounting=out.guarantee.note.split(";")[0],
        )
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- the `peers` experiment


def _config_node(group: str, name: str):
    from omegaconf import OmegaConf

    path = REPO_ROOT / "conf" / group / f"{name}.yaml"
    if not path.exists():
        raise ValueError(f"no config conf/{group}/{name}.yaml")
    return OmegaConf.load(path)


def _with(cfg, **nodes):
    """A copy of ``cfg`` with top-level keys replaced (not merged)."""
    from omegaconf import OmegaConf

    out = cfg.copy()
    for key, value in nodes.items():
        OmegaConf.update(out, key, value, merge=False, force_add=True)
    return out


def run_peers(cfg) -> dict:
    """privpca's ``ppca``/``ppca_iterative`` against the peers at equal certified ε (docs/peers.md).

    For each dataset of ``experiment.datasets``, n on a log grid from ``experiment.n_min`` to the full
    set (one random subset per n, shared by every mechanism), each ε of ``experiment.epsilons`` and
    each mechanism, ``experiment.restarts`` runs; peers are capped at ``experiment.timeout`` seconds
    and, with ``skip_after_timeout``, a cell whose run timed out gets no further restarts (each
    stall costs the full cap).  Then the d = 2 sampler check.  Records go to the results store
    (resumable); ``results/tables/peers.csv`` and ``peers_sampler_check.csv`` summarise them.
    """
    import pandas as pd

    from mechanisms import PreparedData

    from .jmlr import n_grid
    from .loading import load_configured, subsample
    from .provenance import git_commit, package_versions
    from .records import (
        configured_mechanism,
        emit,
        mechanism_stream,
        output_fields,
        results_root,
        run_key,
        subset_stream,
        write_record,
    )
    from .results import ResultStore, record_id

    e = cfg.experiment
    store = ResultStore(results_root(cfg))
    written, unavailable = 0, {}
    for ds_name in e.datasets:
        dcfg = _with(cfg, dataset=_config_node("dataset", ds_name))
        dataset = load_configured(dcfg.dataset, dcfg.data_dir)
        total = dataset.X.shape[0]
        grid = list(e.n_grid) if e.get("n_grid") else n_grid(total, int(e.n_min), int(e.n_points))
        for n in grid:
            stream = subset_stream(cfg.seed, 0, n)
            data = None
            for i_eps, eps in enumerate(e.epsilons):
                for mech_name in e.mechanisms:
                    if mech_name in unavailable:
                        continue
                    mnode = _config_node("mechanism", mech_name)
                    if "timeout" in mnode.fn:
                        mnode.fn.timeout = float(e.timeout)
                    for param, value in (
                        (e.get("mechanism_params") or {}).get(mech_name, {}).items()
                    ):
                        mnode.fn[param] = value
                    mcfg = _with(dcfg, mechanism=mnode, epsilon=float(eps))
                    mech = None
                    for r in range(int(e.restarts)):
                        key = run_key(mcfg, n=int(n), subset=0, restart=r)
                        if store.has(key):
                            if (
                                store.get(record_id(key)).get("status") == "timeout"
                                and e.skip_after_timeout
                            ):
                                break
                            continue
                        if data is None:
                            X, _, _ = subsample(dataset.X, int(n), np.random.default_rng(stream))
                            data = PreparedData(X, clip=bool(cfg.clip_rows))
                        mech = mech or configured_mechanism(mcfg)
                        t0 = time.perf_counter()
                        m_stream = mechanism_stream(cfg.seed, 0, r, n, i_eps)
                        try:
                            out = mech(
                                data,
                                int(mcfg.k),
                                rng=np.random.default_rng(m_stream),
                                clip=bool(cfg.clip_rows),
                            )
                        except PeerUnavailableError as exc:
                            unavailable[mech_name] = exc.message
                            log.warning("skipping %s: %s", mech_name, exc.message)
                            break
                        out_fields = output_fields(mcfg, out, data, time.perf_counter() - t0)
                        out_fields.update(
                            n=int(n),
                            subset=0,
                            restart=r,
                            subset_stream=stream,
                            mechanism_stream=m_stream,
                            epsilon_requested=float(eps),
                            release=out.release,
                            diagnostics=out.diagnostics,
                        )
                        rec, _, new = write_record(
                            store, mcfg, dataset, data.X, out_fields, time.perf_counter() - t0, key
                        )
                        written += new
                        if not cfg.quiet:
                            log.info(
                                "%s %s n=%d eps=%g r=%d: %s q_F/opt=%s certified eps=%s (%.1f s)",
                                ds_name,
                                mech_name,
                                n,
                                eps,
                                r,
                                rec["status"],
                                rec.get("q_F_normalised"),
                                rec["epsilon"],
                                rec["mechanism_seconds"],
                            )
                        if rec["status"] == "timeout" and e.skip_after_timeout:
                            break
            del data
    # d = 2 sampler check (one record per implementation)
    sc = e.sampler_check
    check_peers = (
        tuple(m for m in e.mechanisms if m in PEERS) if sc.get("peers") is None else tuple(sc.peers)
    )
    check_key = {
        "experiment": "peers_sampler_check",
        "kappa": float(sc.kappa),
        "draws": int(sc.draws),
        "seed": int(sc.seed),
    }
    rows = None
    if not all(
        store.has({**check_key, "implementation": impl}) for impl in ("privpca", *check_peers)
    ):
        rows = bingham_d2_check(
            float(sc.kappa),
            int(sc.draws),
            int(sc.seed),
            timeout=float(sc.timeout),
            peers=check_peers,
        )
        for row in rows:
            k = {**check_key, "implementation": row["implementation"]}
            written += store.write(
                {
                    "run_key": k,
                    **row,
                    "experiment": "peers_sampler_check",
                    "versions": package_versions(),
                    "git_commit": git_commit(),
                    "mechanism": row["implementation"],
                }
            )[1]
    ac = e.get("accounting_check")
    if ac and check_peers:
        acc_key = {
            "experiment": "peers_accounting",
            "epsilon": float(ac.epsilon),
            "seed": int(cfg.seed),
        }
        if not store.has({**acc_key, "call": ACCOUNTING_CALLS[0][2]}):
            for row in accounting_check(float(ac.epsilon), seed=int(cfg.seed)):
                written += store.write(
                    {
                        "run_key": {**acc_key, "call": row["call"]},
                        **row,
                        "experiment": "peers_accounting",
                        "versions": package_versions(),
                        "git_commit": git_commit(),
                    }
                )[1]
    table, check = peers_tables(store)
    out_dir = results_root(cfg) / "tables"
    out_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(out_dir / "peers.csv", index=False)
    check.to_csv(out_dir / "peers_sampler_check.csv", index=False)
    accounting = store.load(experiment="peers_accounting")
    if len(accounting):
        accounting = accounting[
            [
                c
                for c in (
                    "call",
                    "status",
                    "nominal_epsilon",
                    "certified_epsilon",
                    "ratio",
                    "neighbouring",
                    "accounting",
                )
                if c in accounting
            ]
        ]
        accounting.to_csv(out_dir / "peers_accounting.csv", index=False)
    if not cfg.quiet:
        with pd.option_context("display.width", 200, "display.max_rows", 500):
            print(table.to_string(index=False))
            print(check.to_string(index=False))
            if len(accounting):
                print(accounting.to_string(index=False))
        for name, why in unavailable.items():
            print(f"skipped {name}: {why}")
    result = {
        "experiment": "peers",
        "records_written": int(written),
        "unavailable": unavailable,
        "tables": [
            str(out_dir / name)
            for name in ("peers.csv", "peers_sampler_check.csv", "peers_accounting.csv")
        ],
    }
    emit(result, cfg)
    return result


def peers_tables(store) -> tuple[Any, Any]:
    """(per-cell table of the ``peers`` records, sampler-check table) from the results store."""
    import pandas as pd

    df = store.load(experiment="peers")
    if len(df):
        df["seconds"] = df["mechanism_seconds"]
        df["peer_fit_seconds"] = df.get("diagnostics.peer_fit_seconds", np.nan)
        g = df.groupby(["dataset", "n", "epsilon_requested", "mechanism"], sort=True)
        table = g.agg(
            runs=("status", "size"),
            ok=("status", lambda s: int((s == "ok").sum())),
            timeouts=("status", lambda s: int((s == "timeout").sum())),
            certified_epsilon=("epsilon", "max"),
            exact=("guarantee_exact", "all"),
            q_F_normalised=("q_F_normalised", "mean"),
            q_F_normalised_sd=("q_F_normalised", "std"),
            median_seconds=("seconds", "median"),
            median_peer_fit_seconds=("peer_fit_seconds", "median"),
        ).reset_index()
    else:
        table = pd.DataFrame()
    check = store.load(experiment="peers_sampler_check")
    if len(check):
        cols = [
            c
            for c in (
                "implementation",
                "status",
                "kappa",
                "draws",
                "target_mean_sin2",
                "mean_sin2",
                "mc_standard_error",
                "z",
                "ks_statistic",
                "ks_pvalue",
                "seconds",
            )
            if c in check
        ]
        check = check[cols].sort_values("implementation").reset_index(drop=True)
    return table, check
