"""Does the peers' vector-Bingham sampler leak more than the ε they certify?  (docs/peers.md)

diffprivlib 0.6.6 (``mechanisms.Bingham``) and OpenDP 0.16.0 (``make_private_eigenvector``) both draw
the top eigenvector of Amin et al. (NeurIPS 2019, Algorithm 2) by rejection from the angular central
Gaussian ACG(Ω) of Kent, Ganeiber & Mardia (2018), Ω = I + 2A/b, with the acceptance ratio inverted
(docs/peers.md, finding 1).  Their target on the unit sphere is

    f(u | C) ∝ exp(−uᵀAu),   A = ε_v/4 · (λ_max(C) I − C),   C = XᵀX (rows of norm ≤ 1),

with ε_v the share of ε spent on the eigenvector (ε/2 for both peers at k = 1, d = 2).  The ACG(Ω)
proposal has density ∝ (uᵀΩu)^{−d/2} and the peers accept with probability
exp(−uᵀAu)·(uᵀΩu)^{−d/2}/M, which is at most the correct exp(−uᵀAu)·(uᵀΩu)^{d/2}/M ≤ 1 (Ω ⪰ I), so no
acceptance probability is clipped and the law of an accepted draw is exactly

    q(u | C) ∝ exp(−uᵀAu) · (uᵀΩu)^{−d}                                                         (*)

b solves Σᵢ 1/(b + 2aᵢ) = 1 over the eigenvalues aᵢ of A (both peers find it by bisection), so Ω, and
the factor (uᵀΩu)^{−d}, depend on the data.  At d = 2 the law (*) is a density in one angle and its
privacy loss between two neighbouring data sets is computed here on a fine grid of angles, exactly up
to the quadrature (the densities are smooth and periodic, and the periodic trapezoidal rule converges
geometrically).

Only the matrix C matters, and only up to a multiple of I.  Under replace-one-row the two data sets
are C = B + x₁x₁ᵀ and C′ = B + x₀x₀ᵀ with B the other n − 1 rows; rotating, B = diag(γ, 0) + βI with
γ ≥ 0 the base's eigengap, and any 0 ≤ γ ≤ n − 1 is attained by n − 1 rows of norm ≤ 1, so n enters
only as the bound γ ≤ n − 1 and the grid below runs over γ.  The differing rows are
x = r(cos φ, sin φ), 0 ≤ r ≤ 1.

What is compared with what (ε the ε the peer certifies for the whole release, ε_v = ε/2):

* the eigenvector alone, as the harness receives it (``components`` is all a peer returns to it,
  so this is the release the harness audits and the ε it records): its ε(0) against ε_v (its share
  of the accounting) and against ε (the peer's certificate for this release);
* the peers' own full release, which adds the d eigenvalues with Laplace noise of scale 2/ε₀,
  ε₀ = ε − ε_v (both peers): on a pair, the privacy loss of independent releases adds, and the
  eigenvalues' worst loss is ε₀·‖λ(C) − λ(C′)‖₁/2 (diffprivlib truncates its Laplace law to [0, ∞)
  and widens the scale to pay for it; that is ignored here, so this column is the loss of the plain
  Laplace step).

Usage::

    .venv/bin/python scripts/studies/peer_sampler_leak.py grid
    .venv/bin/python scripts/studies/peer_sampler_leak.py design --epsilon 2
    .venv/bin/python scripts/studies/peer_sampler_leak.py check --draws 20000
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

import numpy as np
from scipy import optimize, special, stats

#: angles on the half circle (the laws are symmetric under u → −u) for the quadrature
N_ANGLES = 4096


def envelope_b(a: np.ndarray) -> float:
    """The ACG envelope's b: the root in (0, d] of Σᵢ 1/(b + 2aᵢ) = 1 (Kent, Ganeiber & Mardia 2018,
    §3.6; the equation both peers solve by bisection), for the eigenvalues aᵢ ≥ 0 of A."""
    a = np.asarray(a, dtype=np.float64)
    d = a.size
    g = lambda b: np.sum(1.0 / (b + 2.0 * a)) - 1.0  # noqa: E731
    if g(float(d)) >= 0:  # A = 0: b = d
        return float(d)
    return float(optimize.brentq(g, 1e-12, float(d), xtol=1e-15, rtol=1e-15))


def _angles(n: int = N_ANGLES, midpoints: bool = False) -> np.ndarray:
    """n equally spaced angles of [0, π): kπ/n (the axes included, where the losses of axis-aligned
    pairs peak), or the midpoints (k + ½)π/n."""
    return (np.arange(n) + (0.5 if midpoints else 0.0)) * (math.pi / n)


def _quadratic(M: np.ndarray, theta: np.ndarray) -> np.ndarray:
    c, s = np.cos(theta), np.sin(theta)
    return M[0, 0] * c * c + 2.0 * M[0, 1] * c * s + M[1, 1] * s * s


def peer_log_density(C: np.ndarray, epsilon_v: float, theta: np.ndarray | None = None):
    """log q(u(θ) | C) of (*) on the half circle, u(θ) = (cos θ, sin θ), d = 2, normalised so that
    the mean of exp over the grid is 1 (a density against the uniform law of θ on [0, π)).

    Parameters
    ----------
    C : (2, 2) array
        XᵀX of the data (rows of norm ≤ 1, the peers' ``data_norm = 1``).
    epsilon_v : float
        The ε the peer spends on the eigenvector (its Bingham mechanism's ``epsilon``, sensitivity 1).
    theta : array, optional
        The angles; default the :data:`N_ANGLES` angles kπ/N of [0, π) (equally spaced, so the mean
        over them is the periodic trapezoidal rule).

    Returns
    -------
    (theta, log_q, log_target) : the angles, the peers' law (*) and the target exp(−uᵀAu), both
    normalised on the grid.
    """
    C = np.asarray(C, dtype=np.float64)
    theta = _angles() if theta is None else np.asarray(theta, dtype=np.float64)
    A = epsilon_v / 4.0 * (np.linalg.eigvalsh(C).max() * np.eye(2) - C)
    b = envelope_b(np.linalg.eigvalsh(A))
    Omega = np.eye(2) + 2.0 * A / b
    uAu = _quadratic(A, theta)
    log_target = -uAu
    log_q = -uAu - 2.0 * np.log(_quadratic(Omega, theta))
    for v in (log_q, log_target):
        v -= special.logsumexp(v) - math.log(v.size)
    return theta, log_q, log_target


def epsilon_of(l1: np.ndarray, l0: np.ndarray, delta: float = 0.0) -> float:
    """ε(δ) between two densities given by their logs on the same uniform grid: the smallest ε with
    ∫ (p₁ − e^ε p₀)₊ ≤ δ and ∫ (p₀ − e^ε p₁)₊ ≤ δ (δ = 0: the largest |log p₁ − log p₀|)."""
    loss = l1 - l0
    if delta <= 0:
        return float(np.max(np.abs(loss)))
    out = 0.0
    for la, lb, s in ((l1, l0, loss), (l0, l1, -loss)):
        pa, pb = np.exp(la), np.exp(lb)
        h = lambda e, pa=pa, pb=pb: np.mean(np.maximum(pa - np.exp(e) * pb, 0.0)) - delta  # noqa: E731
        hi = float(np.max(s))
        if hi <= 0 or h(0.0) <= 0:
            continue
        out = max(out, float(optimize.brentq(h, 0.0, hi, xtol=1e-10)))
    return out


def pair(gamma: float, x1, x0) -> tuple[np.ndarray, np.ndarray]:
    """C = diag(γ, 0) + x₁x₁ᵀ and C′ = diag(γ, 0) + x₀x₀ᵀ (replace-one-row; see the module text)."""
    B = np.diag([float(gamma), 0.0])
    x1, x0 = np.asarray(x1, dtype=np.float64), np.asarray(x0, dtype=np.float64)
    return B + np.outer(x1, x1), B + np.outer(x0, x0)


def row(r: float, phi: float) -> np.ndarray:
    return float(r) * np.array([math.cos(phi), math.sin(phi)])


def leak(
    epsilon: float, gamma: float, x1, x0, delta: float = 0.0, n_angles: int = N_ANGLES
) -> dict:
    """The privacy losses on one pair at certified ε (ε_v = ε/2 on the eigenvector, ε₀ = ε/2 on the
    eigenvalues): the peers' eigenvector law, the target law, and the full release's total."""
    ev = epsilon / 2.0
    C1, C0 = pair(gamma, x1, x0)
    th = _angles(n_angles)
    _, q1, t1 = peer_log_density(C1, ev, th)
    _, q0, t0 = peer_log_density(C0, ev, th)
    dl = np.abs(np.linalg.eigvalsh(C1) - np.linalg.eigvalsh(C0)).sum()
    vec = epsilon_of(q1, q0, delta)
    return {
        "vector": vec,
        "target": epsilon_of(t1, t0, delta),
        "eigenvalues": (epsilon - ev) * dl / 2.0,
        "total": vec + (epsilon - ev) * dl / 2.0,
    }


# ---------------------------------------------------------------------------------------------
# A sampler with the inverted acceptance ratio, built from the description above (not the peers'
# code), to check the law (*) against draws
# ---------------------------------------------------------------------------------------------


def inverted_acg_sampler(
    C: np.ndarray, epsilon_v: float, size: int, rng: np.random.Generator
) -> np.ndarray:
    """``size`` unit vectors from the rejection sampler with the inverted ratio: proposals u = z/‖z‖,
    z ~ N(0, Ω⁻¹), accepted with probability exp(−uᵀAu) / (M·(uᵀΩu)^{d/2}),
    M = e^{−(d − b)/2}(d/b)^{d/2} (the envelope constant both peers use)."""
    C = np.asarray(C, dtype=np.float64)
    d = C.shape[0]
    A = epsilon_v / 4.0 * (np.linalg.eigvalsh(C).max() * np.eye(d) - C)
    b = envelope_b(np.linalg.eigvalsh(A))
    Omega = np.eye(d) + 2.0 * A / b
    M = math.exp(-(d - b) / 2.0) * (d / b) ** (d / 2.0)
    L = np.linalg.cholesky(np.linalg.inv(Omega))
    out, have = np.empty((size, d)), 0
    while have < size:
        z = rng.standard_normal((2 * (size - have) + 16, d)) @ L.T
        u = z / np.linalg.norm(z, axis=1, keepdims=True)
        p = np.exp(-np.einsum("ij,jk,ik->i", u, A, u)) / (
            M * np.einsum("ij,jk,ik->i", u, Omega, u) ** (d / 2.0)
        )
        keep = u[rng.random(u.shape[0]) < p][: size - have]
        out[have : have + keep.shape[0]] = keep
        have += keep.shape[0]
    return out


def law_cdf(C: np.ndarray, epsilon_v: float, n: int = 1 << 16):
    """The CDF of θ = angle of ±u in [0, π) under (*), by cumulative midpoint sums on n angles."""
    theta, lq, _ = peer_log_density(C, epsilon_v, _angles(n, midpoints=True))
    cum = np.concatenate([[0.0], np.cumsum(np.exp(lq))]) / n
    edges = np.linspace(0.0, math.pi, n + 1)
    return lambda t: np.interp(np.asarray(t, dtype=np.float64), edges, cum)


def half_angle(U: np.ndarray) -> np.ndarray:
    """The angle in [0, π) of the line through each row of U (d = 2)."""
    return np.mod(np.arctan2(U[:, 1], U[:, 0]), math.pi)


# ---------------------------------------------------------------------------------------------
# The study
# ---------------------------------------------------------------------------------------------

EPSILONS = (0.1, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
GAPS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 16.0, 64.0, 1024.0)
ANGLES = tuple(np.arange(8) * math.pi / 8)
NORMS = ((1.0, 1.0), (1.0, 0.5), (1.0, 0.0), (0.0, 1.0))
#: angles for the grid scan (the refinement and every reported value use N_ANGLES)
SCAN_ANGLES = 1024


def _refine(epsilon: float, start: tuple, key: str) -> tuple[float, tuple]:
    """Nelder–Mead on (γ, φ₁, φ₀, r₁, r₀) from ``start``, maximising ``leak(...)[key]``; γ ≥ 0 and
    r ∈ [0, 1] by folding."""

    def unpack(z):
        g, p1, p0, r1, r0 = z
        fold = lambda r: 1.0 - abs(1.0 - abs(r) % 2.0)  # noqa: E731
        return abs(g), p1, p0, fold(r1), fold(r0)

    def f(z):
        g, p1, p0, r1, r0 = unpack(z)
        return -leak(epsilon, g, row(r1, p1), row(r0, p0))[key]

    res = optimize.minimize(
        f,
        np.asarray(start, float),
        method="Nelder-Mead",
        options={"xatol": 1e-4, "fatol": 1e-7, "maxfev": 400},
    )
    return -float(res.fun), unpack(res.x)


def grid(epsilons=EPSILONS, gaps=GAPS, refine: int = 3) -> list[dict]:
    """For each certified ε: the largest ε(0) of the peers' eigenvector law (*) over the grid of
    pairs (base gap γ, differing rows' angles and norms), refined by Nelder–Mead from the ``refine``
    best grid points, against ε_v = ε/2 and ε; the same for the full release (eigenvalues added)."""
    rows = []
    for eps in epsilons:
        t0 = time.perf_counter()
        found = {"vector": [], "total": []}
        for g, p1, p0, (r1, r0) in itertools.product(gaps, ANGLES, ANGLES, NORMS):
            L = leak(eps, g, row(r1, p1), row(r0, p0), n_angles=SCAN_ANGLES)
            for key in found:
                found[key].append((L[key], (g, p1, p0, r1, r0)))
        best = {}
        for key, vals in found.items():
            vals.sort(key=lambda t: -t[0])
            cands = [_refine(eps, s, key) for _, s in vals[:refine]]
            best[key] = max(cands, key=lambda t: t[0])
        g, p1, p0, r1, r0 = best["vector"][1]
        at = leak(eps, g, row(r1, p1), row(r0, p0))
        rows.append(
            {
                "epsilon": eps,
                "pairs": len(found["vector"]),
                "max_vector_epsilon": best["vector"][0],
                "vector_over_share": best["vector"][0] / (eps / 2.0),
                "vector_over_certified": best["vector"][0] / eps,
                "target_at_that_pair": at["target"],
                "pair": "gamma=%.3g x1=%.2f@%.1fdeg x0=%.2f@%.1fdeg"
                % (g, r1, math.degrees(p1) % 180, r0, math.degrees(p0) % 180),
                "max_total_epsilon": best["total"][0],
                "total_over_certified": best["total"][0] / eps,
                "seconds": time.perf_counter() - t0,
            }
        )
    return rows


def design_pair(epsilon: float, n: int = 200):
    """The audit's Bingham design for the peers at claimed ε (:func:`experiments.audit.designs.bingham_design`)."""
    from experiments.audit.designs import bingham_design

    des = bingham_design(epsilon, d=2, n=n)
    return des, des.X1.T @ des.X1, des.X0.T @ des.X0


def design_row(epsilon: float) -> dict:
    """The exact ε(0) of the peers' law (*) and of the target on the audit's Bingham design."""
    des, C1, C0 = design_pair(epsilon)
    ev = epsilon / 2.0
    _, q1, t1 = peer_log_density(C1, ev)
    _, q0, t0 = peer_log_density(C0, ev)
    return {
        "epsilon": epsilon,
        "design": des.description,
        "peer_vector_epsilon": epsilon_of(q1, q0),
        "target_epsilon": epsilon_of(t1, t0),
    }


def check(draws: int = 20000, seed: int = 0, peers: bool = False) -> list[dict]:
    """KS tests of the angle of ±u against the law (*) (and against the target): draws of the
    inverted sampler rebuilt here and, with ``peers``, of the peers' own samplers (their worker's
    ``bingham_d2`` command, ε_v = 4κ on the matrix given)."""
    cases = [(2.0, 3.0, row(1, 0), row(1, math.pi / 2)), (8.0, 1.0, row(1, 0), row(1, math.pi / 2))]
    out = []
    for eps, g, x1, x0 in cases:
        C, _ = pair(g, x1, x0)
        ev = eps / 2.0
        cdf = law_cdf(C, ev)
        tgrid = _angles(1 << 16, midpoints=True)
        lt = peer_log_density(C, ev, tgrid)[2]
        cum_t = np.concatenate([[0.0], np.cumsum(np.exp(lt))]) / tgrid.size
        edges = np.linspace(0.0, math.pi, tgrid.size + 1)
        cdf_t = lambda t: np.interp(t, edges, cum_t)  # noqa: E731
        sources = {
            "rebuilt": half_angle(inverted_acg_sampler(C, ev, draws, np.random.default_rng(seed)))
        }
        if peers:
            from experiments.peers.environment import call_worker, peer_python, peer_spec

            for name in ("diffprivlib_pca", "opendp_pca"):
                res = call_worker(
                    peer_python(name, None, None),
                    {
                        "command": "bingham_d2",
                        "peer": peer_spec(name).module,
                        "kappa": ev / 4.0,
                        "matrix": C.tolist(),
                        "draws": draws,
                        "seed": seed,
                    },
                    timeout=1200.0,
                )
                if res["status"] == "ok":
                    sources[name] = half_angle(np.asarray(res["arrays"]["draws"]))
        for src, th in sources.items():
            out.append(
                {
                    "epsilon": eps,
                    "gamma": g,
                    "source": src,
                    "draws": th.size,
                    "ks_p_peer_law": float(stats.kstest(th, cdf).pvalue),
                    "ks_p_target": float(stats.kstest(th, cdf_t).pvalue),
                }
            )
    return out


def _print(rows: list[dict]) -> None:
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        cells = [f"{v:.4g}" if isinstance(v, float) else str(v) for v in r.values()]
        print("| " + " | ".join(cells) + " |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("part", choices=["grid", "design", "check"])
    ap.add_argument("--epsilon", type=float, nargs="*", default=None)
    ap.add_argument("--draws", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--peers", action="store_true", help="check: also draw from the real peers")
    a = ap.parse_args(argv)
    if a.part == "grid":
        _print(grid(tuple(a.epsilon) if a.epsilon else EPSILONS))
    elif a.part == "design":
        _print([design_row(e) for e in (a.epsilon or (1.0, 2.0, 4.0))])
    else:
        _print(check(a.draws, a.seed, a.peers))


if __name__ == "__main__":
    main()
