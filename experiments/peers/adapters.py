"""The peers as privpca mechanisms: diffprivlib's and OpenDP's private PCA, run in the capped worker, each
recording the ε its own accounting certifies."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from experiments.peers.environment import (
    PeerError,
    _data_file,
    call_worker,
    peer_python,
    peer_spec,
)
from mechanisms import MechanismOutput, PrivacyGuarantee
from mechanisms.toolkit import check_data, check_epsilon, check_k

#: a peer release's wall-clock cap in seconds, unless the caller (a benchmark grid's ``options``) sets
#: another
RELEASE_TIMEOUT_S = 60.0


def _pca_request(name, X, k, epsilon, clip, python, install, worker, options):
    """What every ``pca`` job of peer ``name`` starts with: its spec, the checked data (and how many
    rows were clipped), k, the interpreter, and the request without a seed."""
    spec = peer_spec(name)
    eps = check_epsilon(epsilon)
    data, n_clipped = check_data(X, clip=clip)
    k = check_k(k, data.shape[1])
    python = peer_python(name, python, install) if worker is None else (python or sys.executable)
    request = {"command": "pca", "peer": spec.module, "k": k, "epsilon": eps, **options}
    return spec, data, n_clipped, k, python, request


def run_peer_pca(
    name: str,
    X: Any,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float,
    timeout: float = RELEASE_TIMEOUT_S,
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
    spec, data, n_clipped, k, python, request = _pca_request(
        name, X, k, epsilon, clip, python, install, worker, options
    )
    d = data.shape[1]
    request["seed"] = int(rng.integers(0, 2**32 - 1))
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
            status="certified by peer, unproven",
        )
    diagnostics = {
        "peer": spec.module,
        "interpreter": str(python),
        "requested_epsilon": request["epsilon"],
        "nominal_epsilon": meta.get("nominal_epsilon"),
        "peer_seed": request["seed"],
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


def run_peer_pca_repeated(
    name: str,
    X: Any,
    k: int,
    repeats: int,
    *,
    rng: np.random.Generator,
    epsilon: float,
    timeout: float = RELEASE_TIMEOUT_S,
    clip: bool = False,
    python: str | None = None,
    install: bool | None = None,
    worker: str | Path | None = None,
    **options: Any,
) -> list[np.ndarray]:
    """``repeats`` independent releases of peer ``name``'s PCA on the same ``X``, in one worker
    process (the audit's runs: :func:`experiments.audit.run_trials`); each is what
    :func:`run_peer_pca` releases with its own seed drawn from ``rng`` (OpenDP ignores seeds: its
    draws come from its own CSPRNG).  ``timeout`` caps each release, so the batch gets
    ``repeats × timeout``; a batch that does not finish raises :class:`PeerError`."""
    _, data, _, k, python, request = _pca_request(
        name, X, k, epsilon, clip, python, install, worker, options
    )
    d = data.shape[1]
    seeds = [int(s) for s in rng.integers(0, 2**32 - 1, size=int(repeats))]
    request["seeds"] = seeds
    res = call_worker(python, request, X=data, timeout=timeout * len(seeds), worker=worker)
    if res["status"] != "ok":
        raise PeerError(
            f"{name}: {len(seeds)} releases did not finish: {res.get('error', res['status'])}"
        )
    V = np.asarray(res["arrays"]["components"], dtype=np.float64)
    if V.shape != (len(seeds), d, k):
        raise PeerError(
            f"{name} returned releases of shape {V.shape}, expected {(len(seeds), d, k)}"
        )
    return list(V)


def _with_repeated(mechanism):
    """Give a peer mechanism the ``repeated(X, k, repeats, *, rng, **params)`` the audit batches
    its runs with (one worker process instead of one per run)."""

    def repeated(X, k, repeats, *, rng, **params):
        return run_peer_pca_repeated(mechanism.__name__, X, k, repeats, rng=rng, **params)

    mechanism.repeated = repeated
    return mechanism


@_with_repeated
def diffprivlib_pca(
    X: Any,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float,
    timeout: float = RELEASE_TIMEOUT_S,
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


@_with_repeated
def opendp_pca(
    X: Any,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float,
    timeout: float = RELEASE_TIMEOUT_S,
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
