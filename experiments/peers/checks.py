"""Checks of the peers' claims: the law of their vector-Bingham samplers at d = 2 against the exact target,
and their accounting against privpca's."""

from __future__ import annotations

import time

import numpy as np

from experiments.peers.adapters import (
    diffprivlib_pca,
    opendp_pca,
)
from experiments.peers.environment import (
    PeerUnavailableError,
    call_worker,
    peer_python,
    peer_spec,
)


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
