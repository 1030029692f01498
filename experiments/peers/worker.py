"""Worker that runs one peer library's PCA (or its vector-Bingham sampler) in a subprocess.

Run by :mod:`experiments.peers` as ``<python> peer_worker.py <job_dir>``, with the interpreter of
whichever environment holds the peer (the project's own, or the harness-made ``.venv-peers``).
It therefore imports only the standard library, NumPy and the peer -- never ``privpca``.

Protocol (files in ``job_dir``):

* ``request.json`` (written by the harness): ``{"command": "probe" | "pca" | "bingham_d2",
  "peer": "diffprivlib" | "opendp", ...}``; ``pca`` reads ``X.npy`` (``n x d``, rows of L2 norm <= 1).
  A ``pca`` request with ``"seeds": [s_1, …, s_R]`` fits R times on the same data in this one
  process, fit i with seed s_i (the audit's many runs without R interpreter starts), and returns
  the R releases stacked (``R x d x k``).
* ``plan.json`` (written here *before* any data-dependent work): the ε the peer's own accounting
  certifies for the release about to be computed, so that a run killed by the wall-clock cap still
  leaves its certified ε on record.
* ``result.json`` + ``result.npz`` (written here at the end): status, the peer's accounting after
  the fit, timings, and the arrays (``components`` d x k, or ``draws`` for ``bingham_d2``).

Accounting recorded for each peer (as the peer itself states it, not as we would):

* diffprivlib: ``models.PCA(epsilon=ε, data_norm=1, centered=True)`` spends ε on the
  ``BudgetAccountant`` passed to it; the recorded ε is the accountant's ``total()`` after the fit.
  ``centered=True`` makes it decompose XᵀX (no private mean), the same target as privpca's PCA
  (JMLR 2013 eq. (1)).
* OpenDP: the measurement's privacy map evaluated at the symmetric distance of one changed row of
  a known-size data set (d_in = 2: one removal plus one addition, OpenDP's own "unit d_in").
  ``api="measurement"`` builds ``make_private_pca`` on a domain with origin 0 (no private mean,
  XᵀX as above); ``api="sklearn"`` uses the scikit-learn style ``PCA`` class (private mean, then
  centred). ``match_certified`` chooses the nominal ε so that the map equals the requested ε.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path

import numpy as np


def _write_json(path: Path, obj: dict) -> None:
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps(obj, sort_keys=True))
    os.replace(tmp, path)


def _versions(peer: str) -> dict:
    from importlib import metadata

    out = {"python": sys.version.split()[0], "numpy": np.__version__}
    names = {
        "diffprivlib": ("diffprivlib", "diffprivlib-fix", "scikit-learn", "scipy"),
        "opendp": ("opendp", "scikit-learn", "scipy", "randomgen"),
    }.get(peer, ())
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


# --------------------------------------------------------------------------- diffprivlib


def _diffprivlib_probe() -> None:
    import diffprivlib.models  # noqa: F401  (fails with scikit-learn >= 1.9: sklearn.tree._tree.DOUBLE)


def _diffprivlib_pca(req: dict, X: np.ndarray, job: Path) -> dict:
    import warnings

    from diffprivlib import BudgetAccountant
    from diffprivlib.models import PCA

    eps = float(req["epsilon"])
    accountant = BudgetAccountant()
    # diffprivlib's PCA spends exactly the epsilon it is given (accountant.spend(self.epsilon, 0)).
    _write_json(
        job / "plan.json",
        {
            "certified_epsilon": eps,
            "certified_delta": 0.0,
            "nominal_epsilon": eps,
            "accounting": "BudgetAccountant: PCA spends its epsilon argument",
        },
    )
    model = PCA(
        n_components=int(req["k"]),
        epsilon=eps,
        data_norm=1.0,
        centered=True,
        random_state=req.get("seed"),
        accountant=accountant,
    )
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(np.array(X, copy=True))
    fit_seconds = time.perf_counter() - t0
    spent_eps, spent_delta = accountant.total()
    return {
        "components": np.asarray(model.components_, dtype=np.float64).T,
        "meta": {
            "certified_epsilon": float(spent_eps),
            "certified_delta": float(spent_delta),
            "nominal_epsilon": eps,
            "fit_seconds": fit_seconds,
            "seeded": True,
            "accounting": "BudgetAccountant.total() after fit",
        },
    }


def _diffprivlib_bingham(req: dict) -> np.ndarray:
    from diffprivlib.mechanisms import Bingham

    C = np.asarray(req["matrix"], dtype=np.float64)
    # diffprivlib's Bingham targets exp(epsilon / (4 * sensitivity) * u'Cu): epsilon = 4 kappa.
    mech = Bingham(
        epsilon=4.0 * float(req["kappa"]), sensitivity=1.0, random_state=int(req["seed"])
    )
    return np.array([mech.randomise(C) for _ in range(int(req["draws"]))])


# --------------------------------------------------------------------------- OpenDP

#: OpenDP features the PCA constructors assert ("honest-but-curious": the sklearn-style class
#: wraps a Python post-processing function, which OpenDP cannot verify).
OPENDP_FEATURES = ("contrib", "idealized-numerics", "honest-but-curious")


def _opendp():
    import opendp.prelude as dp

    dp.enable_features(*OPENDP_FEATURES)
    return dp


def _opendp_probe() -> None:
    dp = _opendp()
    import opendp.extras.sklearn.decomposition  # noqa: F401

    dp.numpy.array2_domain(num_columns=2, size=3, T=float)


#: measurements already built in this process, by (api, k, n, d, nominal ε): a batch of releases
#: (a request with ``seeds``) builds each once
_MEASUREMENTS: dict = {}


def _opendp_measurement(dp, req: dict, n: int, d: int, nominal: float):
    """(measurement, sklearn model or None) for nominal epsilon ``nominal``."""
    k = int(req["k"])
    api = req.get("api", "measurement")
    if api == "sklearn":  # a model is fitted in place: never shared between releases
        return _build_opendp_measurement(dp, api, k, n, d, nominal)
    key = (api, k, n, d, float(nominal))
    if key not in _MEASUREMENTS:
        _MEASUREMENTS[key] = _build_opendp_measurement(dp, api, k, n, d, nominal)
    return _MEASUREMENTS[key]


def _build_opendp_measurement(dp, api: str, k: int, n: int, d: int, nominal: float):
    if api == "sklearn":
        model = dp.sklearn.decomposition.PCA(
            epsilon=nominal, row_norm=1.0, n_samples=n, n_features=d, n_components=k
        )
        return model.measurement(), model
    domain = dp.numpy.array2_domain(
        norm=1.0, p=2, origin=np.zeros(d), size=n, num_columns=d, T=float
    )
    meas = dp.sklearn.decomposition.make_private_pca(
        domain, dp.symmetric_distance(), float(nominal), num_components=k
    )
    return meas, None


#: OpenDP's unit d_in for one changed row of a known-size data set (one removal + one addition).
OPENDP_ONE_CHANGE = 2


def _opendp_pca(req: dict, X: np.ndarray, job: Path) -> dict:
    dp = _opendp()
    n, d = X.shape
    target = float(req["epsilon"])
    meas, model = _opendp_measurement(dp, req, n, d, target)
    certified_at_target = float(meas.map(OPENDP_ONE_CHANGE))
    nominal = target
    if req.get("match_certified", True):
        # The map is linear in the nominal epsilon; rescale once, then check.
        nominal = target * target / certified_at_target
        meas, model = _opendp_measurement(dp, req, n, d, nominal)
    certified = float(meas.map(OPENDP_ONE_CHANGE))
    info = {
        "certified_epsilon": certified,
        "certified_delta": 0.0,
        "nominal_epsilon": nominal,
        "certified_epsilon_at_nominal_target": certified_at_target,
        "map_d_in_1": float(meas.map(1)),
        "accounting": f"measurement.map({OPENDP_ONE_CHANGE})",
        "features": list(OPENDP_FEATURES),
        "api": req.get("api", "measurement"),
    }
    _write_json(job / "plan.json", info)
    t0 = time.perf_counter()
    if model is not None:
        model.fit(X)
        V = np.asarray(model.components_, dtype=np.float64).T
    else:
        V = np.asarray(meas(X).Vt, dtype=np.float64).T[:, : int(req["k"])]
    info.update(fit_seconds=time.perf_counter() - t0, seeded=False)
    return {"components": V, "meta": info}


def _opendp_bingham(req: dict) -> np.ndarray:
    dp = _opendp()
    from opendp.extras.numpy import _sscp_domain
    from opendp.extras.sklearn._make_eigenvector import make_private_eigenvector

    C = np.asarray(req["matrix"], dtype=np.float64)
    domain = _sscp_domain(num_features=C.shape[0], norm=1.0, p=2, size=10, T=float)
    # OpenDP's eigenvector sampler targets exp(unit_epsilon / 4 * u'(C / norm^2)u): unit_epsilon = 4 kappa.
    meas = make_private_eigenvector(domain, dp.symmetric_distance(), 4.0 * float(req["kappa"]))
    return np.array([np.asarray(meas(C), dtype=np.float64) for _ in range(int(req["draws"]))])


PEERS = {
    "diffprivlib": {
        "probe": _diffprivlib_probe,
        "pca": _diffprivlib_pca,
        "bingham_d2": _diffprivlib_bingham,
    },
    "opendp": {"probe": _opendp_probe, "pca": _opendp_pca, "bingham_d2": _opendp_bingham},
}


def main(job_dir: str) -> int:
    job = Path(job_dir)
    req = json.loads((job / "request.json").read_text())
    peer, command = req["peer"], req["command"]
    result: dict = {"peer": peer, "command": command}
    arrays: dict = {}
    try:
        impl = PEERS[peer][command]
        if command == "probe":
            impl()
            result["status"] = "ok"
        elif command == "pca":
            X = np.asarray(np.load(job / "X.npy", mmap_mode="r"))
            if req.get("seeds") is None:
                out = impl(req, X, job)
                arrays["components"] = out["components"]
            else:
                releases = []
                for seed in req["seeds"]:
                    out = impl(dict(req, seed=int(seed)), X, job)
                    releases.append(out["components"])
                arrays["components"] = np.stack(releases)
            result.update(out["meta"], status="ok")
        elif command == "bingham_d2":
            t0 = time.perf_counter()
            arrays["draws"] = impl(req)
            result.update(status="ok", sampler_seconds=time.perf_counter() - t0)
        result["versions"] = _versions(peer)
    except Exception as exc:  # reported to the harness, which raises it there
        result.update(
            status="error", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()
        )
    if arrays:
        np.savez(job / "result.npz", **arrays)
    _write_json(job / "result.json", result)
    return 0


#: the environment variable the harness sets to its own pid (experiments.peers.environment)
PARENT_ENV = "PRIVPCA_PEER_PARENT"


def _exit_with_parent(poll_seconds: float = 1.0) -> None:
    """Exit when the harness process that started this worker is gone.

    The worker runs in a session of its own (so that a timeout kills exactly its session), which
    also keeps it out of reach of a signal sent to the harness's process group: without this
    watch, a worker whose harness was killed (Ctrl-C, a lost engine worker) would run on."""
    # the harness's pid, as it set it: a worker whose harness died while it was starting sees it too
    parent = int(os.environ.get(PARENT_ENV, os.getppid()))

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_seconds)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


if __name__ == "__main__":
    _exit_with_parent()
    sys.exit(main(sys.argv[1]))
