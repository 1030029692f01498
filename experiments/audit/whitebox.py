"""White-box audits: the likelihood-ratio test on the noisy statistic a mechanism actually computes.

A Gaussian mechanism releases (or computes, then post-processes) Y = f(D) + N(0, σ²) — the noisy
matrix of MOD-SULQ (JMLR 2013, Algorithm 1) and Analyze Gauss (DTTZ 2014, Algorithm 1), the noisy
products Y_l = A X_{l−1} + G_l of the private and streaming power methods (Hardt–Price 2014,
Figure 3 / appendix D), the tree nodes of online PCA (DTTZ 2014, section 4).  For two neighbouring
datasets the optimal (Neyman–Pearson) test between N(f(D), σ²I) and N(f(D′), σ²I) thresholds the
projection on the shift direction,

    T = Σ_l ⟨Y_l − (m_l(D) + m_l(D′))/2, m_l(D) − m_l(D′)⟩ / σ_l²,    m_l = A_l X_{l−1} (or f(D)),

which is N(±μ²/2, μ²) with μ² = Σ_l ‖m_l(D) − m_l(D′)‖² / σ_l² (adaptive composition of Gaussians is
exactly a Gaussian with μ combined in quadrature; Dong, Roth & Su 2022).  Its privacy profile is the
exact ε(δ) of :func:`mechanisms.calibration.gaussian_epsilon_for_delta`, so a white-box audit can come
close to it; the audit prints both.

Nothing is re-implemented: the statistic, its inputs and σ are captured from the code actually run
(taps, :data:`TAPS`): the noise-adding call (``symmetric_gaussian`` in the mechanism's module, or
``rng.normal`` of a recording generator) is wrapped to record σ, and the matrix the mechanism
post-processes (the argument of ``top_k_eigenvectors``, the input of ``orthonormalize``, or the
documented ``return_trace`` of the noisy power method) is recorded.  The means m_l(D) come from
the same code run with its noise switched to zero (the wrapped noise call returns zeros).  For the
sketch (Upadhyay 2014 / Blocki et al. 2012), Z = Φ[X; wI] has i.i.d. rows N(0, XᵀX + w²I): the test
is S = ‖Zx‖² for the differing row x, S/v ~ χ²_r, and the exact profile is computed for that law.
For DP-PCA and k-DP-PCA (Liu et al. 2022; Düngler & Sanyal 2025, mechanisms/dp_pca.py), the noisy
statistic is the private mean ĝ of the minibatch that holds the differing row, Gaussian given its
private centre and clipping radius; its means under D and D′ come from the mechanism run on the
neighbour with the same seed (:class:`CoupledMeanLRT`, design :func:`oja_gradient_design`).
For ``amin_cov`` (Amin et al. 2019, Algorithm 1 step 1) the noisy statistic is its r released
eigenvalues, Laplace around A's (the ``rng.laplace`` draw is recorded, :class:`LaplaceRecordingGenerator`);
the test is the Laplace log-likelihood ratio (:class:`LaplaceLRT`), whose law and exact ε(δ) are
computed (:func:`laplace_loss_survival`, :func:`laplace_delta_for_epsilon`), on the pair that moves two
eigenvalues by 1/n each (:func:`.designs.eigenvalue_swap_design`).  That release is one part of a
basic composition (ε = ε_0 + Σ ε_i, the paper's Theorem 1), so it is audited against its share ε_0 of
the claim (:attr:`Tap.share`): the composition proof needs each part within its share, and the vector
draws, independent of the eigenvalue noise given the data, are not observed.  (Against the whole
claim the test would be vacuous for the known defect: with the ``half`` split, eigenvalues at twice
their share spend exactly ε, the whole claim, so only the vectors' loss on top would exceed it.)

Any statistic gives a valid bound (the event is chosen on a calibration split and certified on fresh
trials); the model above only decides how tight it is.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from experiments.audit.bounds import (
    audit_scores,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_lower_bound,
    max_certifiable_epsilon,
)
from experiments.audit.common import accepted_params, resolve, verdict
from experiments.audit.designs import (
    AUDIT_PARAMS,
    AuditDesign,
    check_neighbours,
    eigenvalue_swap_design,
    pair_design,
)
from mechanisms import MechanismOutput

# ---------------------------------------------------------------------------------------------
# Exact privacy profiles
# ---------------------------------------------------------------------------------------------


def chi2_scale_delta_for_epsilon(r: int, v1: float, v0: float, epsilon: float) -> float:
    """Exact δ(ε) between S = v₁·χ²_r and S = v₀·χ²_r (both orders): rows N(0, v) along one direction.

    The log-likelihood ratio (r/2)·log(v₀/v₁) + S (1/(2v₀) − 1/(2v₁)) is monotone in S, so the optimal
    event is a tail of S: δ(ε) = max over the two orders of P(S ∈ E | one) − e^ε P(S ∈ E | other)."""
    from scipy.stats import chi2

    if v1 == v0:
        return 0.0
    hi, lo = max(v1, v0), min(v1, v0)
    c = 1.0 / (2.0 * lo) - 1.0 / (2.0 * hi)
    base = 0.5 * r * math.log(lo / hi)  # LLR(hi over lo) = base + c·S
    t_up = (epsilon - base) / c  # LLR >= ε  <=> S >= t_up
    d_up = chi2.sf(t_up / hi, r) - math.exp(epsilon) * chi2.sf(t_up / lo, r)
    t_dn = (-epsilon - base) / c  # LLR <= −ε <=> S <= t_dn (lo over hi)
    d_dn = (
        (chi2.cdf(t_dn / lo, r) - math.exp(epsilon) * chi2.cdf(t_dn / hi, r)) if t_dn > 0 else 0.0
    )
    return max(0.0, float(d_up), float(d_dn))


def _laplace_loss_survival_1(s, a: float, side: int):
    """P(L ≥ s) for one coordinate's privacy loss L = (|y − m₀| − |y − m₁|)/b, with a = |m₁ − m₀|/b,
    y ~ Lap(m₁, b) (``side=1``, D) or Lap(m₀, b) (``side=0``, D′).

    L is a beyond m₁ (probability 1/2 under D, e^{−a}/2 under D′), −a beyond m₀ (e^{−a}/2 under D,
    1/2 under D′) and 2|y − m₀|/b − a between them, with density e^{(l−a)/2}/4 under D and
    e^{−(l+a)/2}/4 under D′ on (−a, a) (their ratio is e^l)."""
    s = np.asarray(s, dtype=float)
    inside = np.clip(s, -a, a)
    mid = 1.0 - 0.5 * np.exp((inside - a) / 2.0) if side == 1 else 0.5 * np.exp(-(inside + a) / 2)
    return np.where(s <= -a, 1.0, np.where(s > a, 0.0, mid))


def laplace_loss_survival(shifts, t: float, side: int) -> float:
    """P(Σ_i L_i ≥ t) for the privacy loss of independent Laplace coordinates with the same scale b,
    whose means under D and D′ differ by a_i·b (``shifts`` = the a_i), under D (``side=1``) or D′.

    This is the law of the likelihood-ratio statistic of :class:`LaplaceLRT`.  Exact up to
    quadrature for at most two moving coordinates (the designs of the audit move at most two):
    P(L₁ + L₂ ≥ t) = Σ_atoms w·S₂(t − l) + ∫ f₁(l) S₂(t − l) dl, with S₂ in closed form."""
    from scipy.integrate import quad

    a = [float(x) for x in np.ravel(shifts) if x > 0]
    if not a:
        return 1.0 if t <= 0 else 0.0
    if len(a) == 1:
        return float(_laplace_loss_survival_1(t, a[0], side))
    if len(a) > 2:
        raise NotImplementedError(
            "the exact Laplace profile is implemented for at most two moving coordinates"
        )
    a1, a2 = a
    up, down = (0.5, 0.5 * math.exp(-a1)) if side == 1 else (0.5 * math.exp(-a1), 0.5)
    if side == 1:
        dens = lambda l: 0.25 * math.exp((l - a1) / 2.0)  # noqa: E731
    else:
        dens = lambda l: 0.25 * math.exp(-(l + a1) / 2.0)  # noqa: E731
    s2 = lambda l: float(_laplace_loss_survival_1(t - l, a2, side))  # noqa: E731
    kinks = [x for x in (t - a2, t + a2) if -a1 < x < a1]
    cont = quad(lambda l: dens(l) * s2(l), -a1, a1, points=kinks or None, epsabs=1e-13, limit=200)
    return float(up * s2(a1) + down * s2(-a1) + cont[0])


def laplace_delta_for_epsilon(shifts, epsilon: float) -> float:
    """Exact δ(ε) between two products of Laplace laws of one scale whose means differ by a_i·b.

    δ(ε) = P_D(L ≥ ε) − e^ε P_D′(L ≥ ε), L the privacy loss (the optimal event is {L ≥ ε}; on an
    atom at L = ε both sides contribute in the ratio e^ε).  The law of −L under D′ is the law of L
    under D, so the other order gives the same profile.  At δ = 0 the profile is ε = Σ a_i, the
    largest value L takes (with probability ≥ 1/4 under D)."""
    if any(not math.isfinite(float(x)) for x in np.ravel(shifts)):
        return 1.0
    d1 = laplace_loss_survival(shifts, epsilon, 1)
    d0 = laplace_loss_survival(shifts, epsilon, 0)
    return max(0.0, d1 - math.exp(epsilon) * d0)


def _invert(delta_of: Callable[[float], float], delta: float) -> float:
    from scipy.optimize import brentq

    if delta_of(0.0) <= delta:
        return 0.0
    hi = 1.0
    while delta_of(hi) > delta:
        hi *= 2.0
        if hi > 1e4:
            return math.inf
    return float(brentq(lambda e: delta_of(e) - delta, 0.0, hi, xtol=1e-10, rtol=1e-10))


def exact_epsilon(measured: dict, delta: float, *, noise_factor: float = 1.0) -> float:
    """Exact ε(δ) of the noisy statistic ``measured`` (from :func:`measure_mu`), noise scaled by a factor.

    Gaussian: ε(δ) of μ / noise_factor (Balle & Wang 2018, Theorem 8).  Sketch: the χ² profile with
    the lift w scaled by noise_factor (:func:`chi2_scale_delta_for_epsilon`).  Laplace: the profile
    of the shifts a_i / noise_factor (:func:`laplace_delta_for_epsilon`); Σ a_i at δ = 0."""
    from mechanisms.calibration import gaussian_epsilon_for_delta

    if measured["kind"] == "laplace":
        a = np.asarray(measured["shifts"], dtype=float) / noise_factor
        if delta <= 0 or not np.all(np.isfinite(a)):
            return float(np.sum(a))
        return _invert(lambda e: laplace_delta_for_epsilon(a, e), delta)
    if measured["kind"] == "gaussian":
        return gaussian_epsilon_for_delta(measured["mu"] / noise_factor, delta)
    if measured["kind"] == "chi2":
        w2 = (measured["w"] * noise_factor) ** 2
        v1, v0 = w2 + measured["mass_D"], w2 + measured["mass_Dprime"]
        return _invert(lambda e: chi2_scale_delta_for_epsilon(measured["r"], v1, v0, e), delta)
    raise ValueError(f"unknown statistic kind {measured['kind']!r}")


# ---------------------------------------------------------------------------------------------
# Taps: capture the noisy statistic from the code actually run
# ---------------------------------------------------------------------------------------------


@dataclass
class Release:
    """One noisy statistic computed during a run: Y = A·X + noise (X None: Y = A + noise)."""

    Y: np.ndarray
    X: np.ndarray | None
    scale: float
    mask: str  # "upper": symmetric noise, i.i.d. on the upper triangle; "full": i.i.d. entries
    #: the noise drawn, where the tap captures it (Laplace taps: Y must be the mean plus this draw)
    noise: np.ndarray | None = None


@dataclass
class MeanRelease:
    """One private minibatch mean of DP-PCA (``mechanisms.dp_pca.private_mean``), as computed.

    ĝ = c + (1/B) Σ_i Π_R(g_i − c) + N(0, σ² I): given the private centre c and the radius R (a
    function of the released range τ), ĝ is Gaussian with a mean computed from the gradients g by
    the clipping function the run used.  ``seed`` and ``source`` identify the run, so that the
    gradients of the neighbouring dataset can be computed by a run coupled to it."""

    Y: np.ndarray  # ĝ
    g: np.ndarray  # the B gradients averaged
    center: np.ndarray  # c
    radius: float  # R
    scale: float  # σ of the noise added to the clipped mean
    clip: Callable  # the clipping function the run called (clip_around, or a variant's)
    seed: int | None
    source: np.ndarray | None


class RecordingGenerator:
    """A ``numpy.random.Generator`` stand-in that records every ``normal`` draw (the noise-adding call
    of the power methods) and, in zero mode, returns its mean instead.  Everything else is delegated."""

    def __init__(self, rng: np.random.Generator, zero: bool = False) -> None:
        self._rng, self.zero, self.scales = rng, zero, []

    def normal(self, loc=0.0, scale=1.0, size=None):
        self.scales.append(float(scale))
        if self.zero:
            return np.full(size if size is not None else (), float(loc))
        return self._rng.normal(loc, scale, size)

    def __getattr__(self, name):
        return getattr(self._rng, name)


class LaplaceRecordingGenerator:
    """A ``numpy.random.Generator`` stand-in that records every ``laplace`` draw (the eigenvalue noise
    of ``amin_cov``): its scale and the noise drawn; in zero mode it returns the location instead.
    Everything else (the eigenvector sampler's draws) is delegated unchanged."""

    def __init__(self, rng: np.random.Generator, zero: bool = False) -> None:
        self._rng, self.zero, self.scales, self.draws = rng, zero, [], []

    def laplace(self, loc=0.0, scale=1.0, size=None):
        self.scales.append(float(scale))
        if self.zero:
            x = np.full(size if size is not None else (), loc, dtype=float)
        else:
            x = self._rng.laplace(loc, scale, size)
        self.draws.append(np.asarray(x, dtype=float) - loc)
        return x

    def __getattr__(self, name):
        return getattr(self._rng, name)


class Recorder:
    """What the patched functions saw during one call."""

    def __init__(self, zero: bool) -> None:
        self.zero = zero
        self.sym_scales: list[float] = []
        self.eig_inputs: list[np.ndarray] = []
        self.orth_inputs: list[np.ndarray] = []
        self.orth_outputs: list[np.ndarray] = []
        self.initial: list[np.ndarray] = []
        self.lift: list[float] = []
        self.centers: list[np.ndarray] = []
        self.means: list[MeanRelease] = []
        #: a coupled tap's run: the seed of its generator and the dataset it ran on
        self.seed: int | None = None
        self.source: np.ndarray | None = None

    def clear(self) -> None:
        for v in vars(self).values():
            if isinstance(v, list):
                v.clear()


@contextlib.contextmanager
def _patch_module(module: str, rec: Recorder, names: tuple[str, ...]):
    mod = importlib.import_module(module)
    saved = {}
    wrappers: dict[str, Callable] = {}
    if "symmetric_gaussian" in names:
        f = mod.symmetric_gaussian

        def symmetric_gaussian(d, scale, rng, _f=f):
            rec.sym_scales.append(float(scale))
            return np.zeros((d, d)) if rec.zero else _f(d, scale, rng)

        wrappers["symmetric_gaussian"] = symmetric_gaussian
    if "top_k_eigenvectors" in names:
        f = mod.top_k_eigenvectors

        def top_k_eigenvectors(M, k, _f=f):
            rec.eig_inputs.append(np.array(M, dtype=float))
            return _f(M, k)

        wrappers["top_k_eigenvectors"] = top_k_eigenvectors
    if "orthonormalize" in names:
        f = mod.orthonormalize

        def orthonormalize(Y, _f=f):
            Q = _f(Y)
            rec.orth_inputs.append(np.array(Y, dtype=float))
            rec.orth_outputs.append(np.array(Q))
            return Q

        wrappers["orthonormalize"] = orthonormalize
    if "random_orthonormal" in names:
        f = mod.random_orthonormal

        def random_orthonormal(d, k, rng, _f=f):
            Q = _f(d, k, rng)
            rec.initial.append(np.array(Q))
            return Q

        wrappers["random_orthonormal"] = random_orthonormal
    if "single_thread_blas" in names:
        # performance only: BLAS thread limits do not change results (mechanisms/linalg.py), and
        # threadpoolctl's library scan costs milliseconds per call
        def single_thread_blas():
            return contextlib.nullcontext()

        wrappers["single_thread_blas"] = single_thread_blas
    if "private_sketch_lift" in names:
        f = mod.private_sketch_lift

        def private_sketch_lift(*a, _f=f, **kw):
            w = _f(*a, **kw)
            rec.lift.append(float(w))
            return w

        wrappers["private_sketch_lift"] = private_sketch_lift
    if "private_center" in names:
        f = mod.private_center

        def private_center(*a, _f=f, **kw):
            c, sc = _f(*a, **kw)
            rec.centers.append(np.array(c))
            return c, sc

        wrappers["private_center"] = private_center
    if "private_mean" in names:
        f = mod.private_mean

        def private_mean(g, rho, rng, *a, _f=f, **kw):
            scales = getattr(rng, "scales", None)
            n_scales, n_centers = len(scales or ()), len(rec.centers)
            clip = mod.clip_around  # the clipping function of this call (a variant patches it)
            est, info = _f(g, rho, rng, *a, **kw)
            if len(rec.centers) != n_centers + 1:
                raise RuntimeError(
                    "private_mean no longer computes one private centre: update the white-box "
                    "tap in experiments/audit/whitebox.py"
                )
            # σ of the last Gaussian draw of this call (the clipped mean's noise), as drawn
            sigma = scales[-1] if scales is not None and len(scales) > n_scales else info["sigma_m"]
            rec.means.append(
                MeanRelease(
                    np.array(est),
                    np.array(g),
                    rec.centers[-1],
                    float(info["radius"]),
                    float(sigma),
                    clip,
                    rec.seed,
                    rec.source,
                )
            )
            return est, info

        wrappers["private_mean"] = private_mean
    for nm in wrappers:
        if not hasattr(mod, nm):
            raise AttributeError(
                f"{module} no longer calls {nm}: update the white-box tap in "
                "experiments/audit/whitebox.py"
            )
        saved[nm] = getattr(mod, nm)
    try:
        for nm, w in wrappers.items():
            setattr(mod, nm, w)
        yield
    finally:
        for nm, f in saved.items():
            setattr(mod, nm, f)


def _power_of_two_prefixes(eig_inputs: list[np.ndarray]) -> list[int]:
    """Indices of the prefixes [0, 2^h − 1] of the online tree: each is one tree node (h, 0), the node
    sums holding the first row, with independent noise (mechanisms/online_pca.py, TreeAggregator)."""
    out, c = [], 1
    while c <= len(eig_inputs):
        out.append(c - 1)
        c *= 2
    return out


def _trace(out: MechanismOutput) -> list[np.ndarray]:
    for part in ("diagnostics", "info", "release"):
        tr = (getattr(out, part, None) or {}).get("trace")
        if tr is not None:
            return list(tr)
    raise KeyError("noisy_power returned no trace (return_trace=True): update the white-box tap")


@dataclass
class Tap:
    """How to capture the noisy statistic of one mechanism."""

    module: str
    patches: tuple[str, ...]
    kind: str  # "gaussian" or "chi2"
    extract: Callable[[Recorder, Any, MechanismOutput, dict], list[Release]] | None = None
    uses_rng_normal: bool = False
    extra_params: dict = field(default_factory=dict)
    #: which captured releases carry independent noise (online tree: the power-of-two prefixes)
    select: Callable[[list[np.ndarray]], list[int]] | None = None
    #: where the patched functions live, when not in ``module`` (k-DP-PCA's private mean is DP-PCA's)
    patch_module: str | None = None
    #: coupled: each run draws its own seed, and the statistic runs the mechanism again on the
    #: neighbouring dataset with that seed (:class:`CoupledMeanLRT`) instead of using zero-noise means
    coupled: bool = False
    #: the noise is ``rng.laplace`` (recorded by :class:`LaplaceRecordingGenerator`)
    uses_rng_laplace: bool = False
    #: the tapped release is one part of a composition: ``share(output, d)`` is the ε that part
    #: claims and a line saying which part (the audit's claim); None: the whole guarantee's ε
    share: Callable[[MechanismOutput, int], tuple[float, str]] | None = None


def _sym_releases(rec: Recorder, rng, out, params) -> list[Release]:
    if not rec.sym_scales:
        raise RuntimeError(
            "no noise call captured: the mechanism changed; update the white-box tap"
        )
    select = params.get("_select")
    idx = (
        select(rec.eig_inputs)
        if (select is not None and params.get("tree", True))
        else range(len(rec.eig_inputs))
    )
    s = rec.sym_scales[0]
    if any(abs(x - s) > 1e-12 * s for x in rec.sym_scales):
        raise RuntimeError(
            "unequal noise scales within one run: the white-box tap assumes one sigma"
        )
    return [Release(rec.eig_inputs[i], None, s, "upper") for i in idx]


def _noisy_power_releases(rec: Recorder, rng, out, params) -> list[Release]:
    Ys = _trace(out)
    inputs = (rec.initial + rec.orth_outputs)[: len(Ys)]
    return [Release(np.asarray(Y), X, s, "full") for Y, X, s in zip(Ys, inputs, rng.scales)]


def _streaming_releases(rec: Recorder, rng, out, params) -> list[Release]:
    Ys = rec.orth_inputs
    inputs = (rec.initial + rec.orth_outputs)[: len(Ys)]
    return [Release(Y, X, s, "full") for Y, X, s in zip(Ys, inputs, rng.scales)]


def _sketch_releases(rec: Recorder, rng, out, params) -> list[Release]:
    Z = rec.orth_inputs[0].T  # Q = orthonormalize(Z.T) is the first post-processing step
    # the lift w the mechanism used, as it records it (a variant's cut lift is applied after our wrapper)
    w = None
    for part in ("release", "diagnostics", "info"):
        w = (getattr(out, part, None) or {}).get("lift", w) if w is None else w
    return [Release(Z, None, float(rec.lift[0] if w is None else w), "rows")]


def _eigenvalue_releases(rec: Recorder, rng, out, params) -> list[Release]:
    """amin_cov's noisy eigenvalues λ̂ = λ + Lap(b)^r: the released ``eigenvalues``, the one Laplace
    draw of the run and its scale b, as drawn."""
    if len(rng.scales) != 1:
        raise RuntimeError(
            f"{len(rng.scales)} Laplace draws captured, expected one (the eigenvalue noise): the "
            "mechanism changed; update the white-box tap"
        )
    Y = np.asarray(out.release["eigenvalues"], dtype=float)
    noise = rng.draws[0]
    if noise.shape != Y.shape:
        raise RuntimeError(
            "the Laplace draw and the released eigenvalues differ in shape: update the white-box tap"
        )
    return [Release(Y, None, rng.scales[0], "full", noise)]


def _eigenvalue_share(out: MechanismOutput, d: int) -> tuple[float, str]:
    """The part of amin_cov's claimed ε that its eigenvalue release must keep: ε_0 of the budget split
    of the claimed ε (``mechanisms.amin_cov.budget_split``, with the release's split and rank r; m =
    min(r, d − 1) vectors drawn).  Computed from the claim, not read from the release, so a variant
    that runs at another ε than it claims is held to the claim's share."""
    from mechanisms.amin_cov import budget_split

    r, split = int(out.release["rank"]), str(out.release["split"])
    eps0, eps_vec = budget_split(float(out.guarantee.epsilon), min(r, d - 1), split)
    return float(eps0), (
        f"eigenvalues: epsilon_0 = {eps0:.6g} of the claimed epsilon = "
        f"{out.guarantee.epsilon:.6g} ({split} split; the {len(eps_vec)} eigenvector draws hold the rest)"
    )


def _private_mean_releases(rec: Recorder, rng, out, params) -> list[MeanRelease]:
    if not rec.means:
        raise RuntimeError(
            "no private mean captured: the mechanism changed; update the white-box tap"
        )
    return list(rec.means)


TAPS: dict[str, Tap] = {
    "mod_sulq": Tap(
        "mechanisms.mod_sulq",
        ("symmetric_gaussian", "top_k_eigenvectors"),
        "gaussian",
        _sym_releases,
    ),
    "analyze_gauss": Tap(
        "mechanisms.analyze_gauss",
        ("symmetric_gaussian", "top_k_eigenvectors"),
        "gaussian",
        _sym_releases,
    ),
    "online_pca": Tap(
        "mechanisms.online_pca",
        ("symmetric_gaussian", "top_k_eigenvectors", "single_thread_blas"),
        "gaussian",
        _sym_releases,
        extra_params={"keep_subspaces": False, "keep_curves": False},
        select=_power_of_two_prefixes,
    ),
    "noisy_power": Tap(
        "mechanisms.noisy_power",
        ("random_orthonormal", "orthonormalize"),
        "gaussian",
        _noisy_power_releases,
        uses_rng_normal=True,
        extra_params={"return_trace": True},
    ),
    "streaming_power": Tap(
        "mechanisms.streaming_power",
        ("random_orthonormal", "orthonormalize"),
        "gaussian",
        _streaming_releases,
        uses_rng_normal=True,
    ),
    # GaussCov (Dong, Liang & Yi 2022): one Gaussian release of the upper triangle of XᵀX/n
    "gauss_cov": Tap(
        "mechanisms.dong_cov",
        ("symmetric_gaussian", "top_k_eigenvectors"),
        "gaussian",
        _sym_releases,
    ),
    "private_sketch": Tap(
        "mechanisms.private_sketch",
        ("orthonormalize", "private_sketch_lift"),
        "chi2",
        _sketch_releases,
    ),
    # DP-PCA / k-DP-PCA: the private mean ĝ of the minibatch holding the differing row, given its
    # private centre and radius (CoupledMeanLRT); both mechanisms call mechanisms.dp_pca's
    "dp_pca": Tap(
        "mechanisms.dp_pca",
        ("private_mean", "private_center"),
        "gaussian",
        _private_mean_releases,
        uses_rng_normal=True,
        coupled=True,
    ),
    "k_dp_pca": Tap(
        "mechanisms.k_dp_pca",
        ("private_mean", "private_center"),
        "gaussian",
        _private_mean_releases,
        uses_rng_normal=True,
        patch_module="mechanisms.dp_pca",
        coupled=True,
    ),
    # amin_cov (Amin et al. 2019, Algorithm 1 step 1): the r eigenvalues of A plus Laplace noise,
    # audited against their share ε_0 of the claim (:class:`LaplaceLRT`, eigenvalue_swap_design)
    "amin_cov": Tap(
        "mechanisms.amin_cov",
        (),
        "laplace",
        _eigenvalue_releases,
        extra_params={"clamp_eigenvalues": False},
        uses_rng_laplace=True,
        share=_eigenvalue_share,
    ),
}

#: white-box dataset sizes and parameters (d = 2, k = 1; p = d so that every product sees the full shift).
#: Online PCA: a 32-row stream (H = 5), so that the differing row enters 6 released tree nodes; on a
#: short stream a calibration that mis-counts the levels is off by less (√3 for 4 rows against √6)
WHITEBOX_N = {
    "online_pca": 32,
    "streaming_power": 50,
    "dp_pca": 4000,
    "k_dp_pca": 4000,
    "amin_cov": 2,
}
#: relative tolerance of the exact-ε(δ) verdict: the numerical inversions (Balle–Wang by root finding,
#: dp-accounting's privacy-loss distribution for the tight calibrations) agree to about 1e-7
EXACT_TOLERANCE = 1e-6
#: noisy power is audited row-level (its entry-level noise scales with ||X_{l-1}||_inf, a random
#: quantity, so μ would change from run to run)
WHITEBOX_PARAMS = {
    "streaming_power": {"block_size": 50, "p": 2},
    "noisy_power": {"iterations": 1, "neighbouring": "replace-one-row"},
    # one minibatch of all the rows (of each round's rows for k-DP-PCA): :func:`oja_gradient_design`
    "dp_pca": {"iterations": 1},
    "k_dp_pca": {"iterations": 1},
    # two eigenvalues released: the design moves both (one alone moves by at most 1/n)
    "amin_cov": {"rank": 2},
}


class TapRunner:
    """Runs a mechanism (or a variant of it) under its tap: ``run(X, zero)`` -> list of releases."""

    def __init__(self, name: str, fn: Callable, k: int, params: dict) -> None:
        if name not in TAPS:
            raise ValueError(f"no white-box tap for {name!r}; available: {sorted(TAPS)}")
        self.name, self.fn, self.k, self.tap = name, fn, k, TAPS[name]
        self.params = {**params, **self.tap.extra_params}
        self.rec = Recorder(zero=False)
        self.last_output: MechanismOutput | None = None

    @property
    def patch_module(self) -> str:
        return self.tap.patch_module or self.tap.module

    @contextlib.contextmanager
    def active(self):
        with _patch_module(self.patch_module, self.rec, self.tap.patches):
            yield self

    def run(self, X: np.ndarray, rng: np.random.Generator, zero: bool = False) -> list[Release]:
        self.rec.clear()
        self.rec.zero = zero
        if self.tap.coupled:  # a seed of its own, which the coupled run on the neighbour reuses
            self.rec.seed = int(rng.integers(2**63 - 1))
            self.rec.source = X
            rng = np.random.default_rng(self.rec.seed)
        if self.tap.uses_rng_normal:
            g = RecordingGenerator(rng, zero=zero)
        elif self.tap.uses_rng_laplace:
            g = LaplaceRecordingGenerator(rng, zero=zero)
        else:
            g = rng
        out = self.fn(X, self.k, rng=g, **self.params)
        self.last_output = out
        return self.tap.extract(self.rec, g, out, {**self.params, "_select": self.tap.select})


_TRIU: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _masked(M: np.ndarray, mask: str) -> np.ndarray:
    """The i.i.d. noise coordinates of M: its upper triangle (symmetric noise) or all entries."""
    if mask != "upper":
        return np.asarray(M).reshape(-1)
    d = M.shape[0]
    if d not in _TRIU:
        _TRIU[d] = np.triu_indices(d)
    return M[_TRIU[d]]


def _mean_matrices(rel0: list[Release]) -> list[np.ndarray]:
    """A_l from a zero-noise run: Y⁰_l itself, or Y⁰_l X_lᵀ when Y = A X with X square orthonormal."""
    out = []
    for r in rel0:
        if r.X is None:
            out.append(r.Y)
        else:
            if r.X.shape[0] != r.X.shape[1]:
                raise ValueError(
                    "the white-box test of a power method needs p = d (square iterates)"
                )
            out.append(r.Y @ r.X.T)
    return out


class GaussianLRT:
    """T = Σ_l ⟨Y_l − mid_l, shift_l⟩/σ_l² for the releases of one run (means from zero-noise runs)."""

    def __init__(self, A1: list[np.ndarray], A0: list[np.ndarray]) -> None:
        self.A1, self.A0 = A1, A0
        self.L = min(len(A1), len(A0))
        self._fixed: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}

    def _mean_parts(self, l: int, r: Release) -> tuple[np.ndarray, np.ndarray]:
        if r.X is None:  # non-adaptive: the same for every run, computed once
            key = (l, r.mask)
            if key not in self._fixed:
                m1, m0 = self.A1[l], self.A0[l]
                self._fixed[key] = (_masked((m1 + m0) / 2, r.mask), _masked(m1 - m0, r.mask))
            return self._fixed[key]
        m1, m0 = self.A1[l] @ r.X, self.A0[l] @ r.X
        return _masked((m1 + m0) / 2, r.mask), _masked(m1 - m0, r.mask)

    def __call__(self, rel: list[Release]) -> tuple[float, float]:
        T, mu2 = 0.0, 0.0
        for l, r in enumerate(rel[: self.L]):
            mid, shift = self._mean_parts(l, r)
            T += float(np.dot(_masked(r.Y, r.mask) - mid, shift)) / r.scale**2
            mu2 += float(np.dot(shift, shift)) / r.scale**2
        return T, math.sqrt(mu2)


class LaplaceLRT:
    """T = Σ_i (|Y_i − m₀_i| − |Y_i − m₁_i|)/b: the log-likelihood ratio of D over D′ for a release
    Y ~ m + Lap(b)^r (i.i.d. coordinates), with the means m₁ = m(D), m₀ = m(D′) from zero-noise runs.

    Its law is that of the privacy loss, Σ_i L_i with a_i = |m₁_i − m₀_i|/b
    (:func:`laplace_loss_survival`); only the coordinates whose means differ contribute.  Each call
    checks that the release is the zero-noise mean plus the Laplace draw the tap captured (so the
    noise is the draw whose scale was recorded), and refuses otherwise.  Returns (T, Σ a_i)."""

    def __init__(self, A1: list[np.ndarray], A0: list[np.ndarray]) -> None:
        if len(A1) != 1 or len(A0) != 1 or A1[0].shape != A0[0].shape:
            raise RuntimeError(
                "the Laplace tap expects one release of the same shape under D and D'"
            )
        self.m1, self.m0 = np.asarray(A1[0], float), np.asarray(A0[0], float)
        self.moving = np.flatnonzero(self.m1 != self.m0)

    def shifts(self, scale: float) -> np.ndarray:
        """a_i = |m₁_i − m₀_i|/b of the moving coordinates (∞ without noise)."""
        diff = np.abs(self.m1 - self.m0)[self.moving]
        if scale <= 0:
            return np.full(diff.shape, math.inf)
        return diff / scale

    def __call__(self, rel: list[Release]) -> tuple[float, float]:
        r = rel[0]
        if r.noise is not None:
            base = r.Y - r.noise
            tol = 1e-12 * (1.0 + np.abs(r.Y))
            if not (np.all(np.abs(base - self.m1) <= tol) or np.all(np.abs(base - self.m0) <= tol)):
                raise RuntimeError(
                    "the release is not the zero-noise mean plus the captured Laplace draw: update "
                    "the white-box tap (LaplaceLRT)"
                )
        y, m1, m0 = r.Y[self.moving], self.m1[self.moving], self.m0[self.moving]
        with np.errstate(divide="ignore", invalid="ignore"):
            T = float(np.sum((np.abs(y - m0) - np.abs(y - m1)) / r.scale))
        return T, float(np.sum(self.shifts(r.scale)))


class CoupledMeanLRT:
    """The likelihood-ratio statistic of DP-PCA's private mean on the minibatch holding the differing row.

    Given the past releases, the minibatch's private centre c and its radius R (a function of the
    released range τ and of public quantities), the clipped mean is Gaussian:
    ĝ ~ N(m(D), σ² I) with m(D) = c + (1/B) Σ_i Π_R(g_i(D) − c) (mechanisms/dp_pca.py, step c).
    The privacy proof composes τ, c and ĝ adaptively, so the audit observes c as the proof does.
    The test between D and D′ is T = ⟨ĝ − (m(D) + m(D′))/2, m(D) − m(D′)⟩/σ², which given c is
    N(±μ²/2, μ²) with μ = ‖m(D) − m(D′)‖/σ; every other minibatch has the same conditional law
    under D and D′ and adds nothing.

    Nothing of the mechanism is re-implemented: ĝ, c, R, σ, the gradients and the clipping function
    are captured from the run (:class:`MeanRelease`); the gradients under the neighbouring dataset
    come from the mechanism run again on it with the same seed (the coupling of the privacy proof:
    the same row order, w₀ and noise, so the two runs agree up to the first minibatch whose
    gradients differ, the one holding the differing row).  The one formula used is the mean's,
    m = c + mean(clip(g, c, R)), which :func:`check_mean_model` checks against the code on a
    zero-noise run.
    """

    def __init__(self, runner: "TapRunner", design: AuditDesign) -> None:
        self.fn, self.k, self.params = runner.fn, runner.k, runner.params
        self.module, self.patches = runner.patch_module, runner.tap.patches
        self.design = design

    def _side(self, X: np.ndarray) -> int:
        if X is self.design.X1 or np.array_equal(X, self.design.X1):
            return 1
        if X is self.design.X0 or np.array_equal(X, self.design.X0):
            return 0
        raise ValueError("the run was on neither dataset of the design")

    def __call__(self, rel: list[MeanRelease]) -> tuple[float, float]:
        side = self._side(rel[0].source)
        other = self.design.X0 if side == 1 else self.design.X1
        rec = Recorder(zero=False)
        with _patch_module(self.module, rec, self.patches):
            self.fn(other, self.k, rng=np.random.default_rng(rel[0].seed), **self.params)
        for r, a in zip(rel, rec.means):
            if np.array_equal(r.g, a.g):
                if not np.array_equal(r.Y, a.Y):
                    raise RuntimeError(
                        "the coupled runs differ before the differing row is read: the mechanism "
                        "draws its noise differently; update the white-box tap"
                    )
                continue
            g1, g0 = (r.g, a.g) if side == 1 else (a.g, r.g)
            m1 = r.center + r.clip(g1, r.center, r.radius)[0].mean(axis=0)
            m0 = r.center + r.clip(g0, r.center, r.radius)[0].mean(axis=0)
            shift = m1 - m0
            T = float(np.dot(r.Y - (m1 + m0) / 2, shift)) / r.scale**2
            return T, float(np.linalg.norm(shift)) / r.scale
        return 0.0, 0.0  # the differing row was not read, or moved no gradient


def check_mean_model(rel: list[MeanRelease]) -> None:
    """On a zero-noise run, every captured ĝ must equal c + mean(clip(g, c, R)): the mean of the
    Gaussian :class:`CoupledMeanLRT` tests.  Raises if the mechanism computes it otherwise."""
    for r in rel:
        m = r.center + r.clip(r.g, r.center, r.radius)[0].mean(axis=0)
        if not np.allclose(r.Y, m, rtol=1e-12, atol=1e-15):
            raise RuntimeError(
                "the private mean is no longer c + mean(clip(g - c, R)) + noise: update the "
                "white-box tap (CoupledMeanLRT)"
            )


def model_event(measured: dict, delta: float, trials: int, alpha: float) -> dict:
    """The event to certify, chosen from the statistic's model alone (before any trial is run).

    Gaussian: T/μ ~ N(±μ/2, 1) under D / D′; sketch: S ~ v·χ²_r.  Over a grid of thresholds and both
    tails/orientations, the event whose *expected* Clopper–Pearson bound with ``trials`` runs per side
    is largest.  Being fixed in advance, it needs no calibration split and no correction."""
    from scipy.stats import chi2, norm

    if measured["kind"] == "laplace":
        return _laplace_model_event(measured["shifts"], delta, trials, alpha)
    if measured["kind"] == "gaussian":
        mu = measured["mu"]
        grid = np.linspace(-3.0, 3.0 + mu, 601)
        p1, p0 = norm.sf(grid - mu / 2), norm.sf(grid + mu / 2)  # upper tail of T/μ, D over D'
        cands = [("D1>D0", "upper", grid * mu, p1, p0), ("D0>D1", "lower", -grid * mu, p1, p0)]
    else:
        w2 = measured["w"] ** 2
        v1, v0 = w2 + measured["mass_D"], w2 + measured["mass_Dprime"]
        r = measured["r"]
        grid = np.linspace(chi2.ppf(1e-6, r), chi2.ppf(1 - 1e-6, r), 801) * max(v1, v0)
        cands = [
            ("D1>D0", "upper", grid, chi2.sf(grid / v1, r), chi2.sf(grid / v0, r)),
            ("D0>D1", "lower", grid, chi2.cdf(grid / v0, r), chi2.cdf(grid / v1, r)),
        ]
    best = {"expected_epsilon_lower": -1.0}
    for orient, tail, thr, pa, pb in cands:
        exp = np.asarray(
            epsilon_lower_bound(pa * trials, trials, pb * trials, trials, delta, alpha)
        )
        i = int(np.argmax(exp))
        if exp[i] > best["expected_epsilon_lower"]:
            best = {
                "expected_epsilon_lower": float(exp[i]),
                "orientation": orient,
                "tail": tail,
                "threshold": float(thr[i]),
            }
    return best


def _laplace_model_event(shifts, delta: float, trials: int, alpha: float) -> dict:
    """The event {T ≥ t} of :class:`LaplaceLRT` whose expected Clopper–Pearson bound is largest, t on a
    grid over the loss's range [−Σa, Σa] (:func:`laplace_loss_survival` for its probabilities).  Each
    threshold is lowered by 1e-9 so that the atom at T = Σa, computed in floating point, is inside.
    The other orientation gives the same bounds (the law of −T under D′ is the law of T under D)."""
    a = np.asarray(shifts, dtype=float)
    if not np.all(np.isfinite(a)):  # no noise: T = +∞ under D, −∞ under D′
        return {
            "expected_epsilon_lower": math.inf,
            "orientation": "D1>D0",
            "tail": "upper",
            "threshold": 0.0,
        }
    total = float(np.sum(a))
    grid = np.linspace(-total, total, 201)
    p1 = np.array([laplace_loss_survival(a, t, 1) for t in grid])
    p0 = np.array([laplace_loss_survival(a, t, 0) for t in grid])
    exp = np.asarray(epsilon_lower_bound(p1 * trials, trials, p0 * trials, trials, delta, alpha))
    i = int(np.argmax(exp))
    return {
        "expected_epsilon_lower": float(exp[i]),
        "orientation": "D1>D0",
        "tail": "upper",
        "threshold": float(grid[i]) - 1e-9,
        "p_D_model": float(p1[i]),
        "p_Dprime_model": float(p0[i]),
    }


def whitebox_design(name: str, relation: str, *, d: int = 2, n: int | None = None) -> AuditDesign:
    """The full-sensitivity pair: row e₁ first, then n − 1 zero rows; D′ per relation: e₂ there
    (replace), the row removed (add-remove), the zero row (zero-out, entry-level).  Zero rows keep the
    shift of every noisy statistic at the sensitivity the calibration assumes."""

    n = WHITEBOX_N.get(name, 50) if n is None else int(n)
    e1, e2 = np.eye(d)[0], np.eye(d)[1]
    des = pair_design(
        np.zeros((n - 1, d)),
        e1,
        e2,
        relation,
        "whitebox",
        f"e1 then {n - 1} zero rows in R^{d}; differing row e1 "
        + ("vs e2" if relation in ("replace-one-row", "none") else f"({relation})"),
        k=1,
    )
    des.statistic = "likelihood-ratio"
    return des


def oja_gradient_design(relation: str, *, d: int = 2, n: int = 4000) -> AuditDesign:
    """DP-PCA's pair: n − 1 rows a·e₁ with a² = 1/2, and the differing row e₁ (D) or 0 (D′) first.

    At the iterate w, Oja's gradient of a row x is (xᵀw) x: the base rows give p = w₁ e₁/2, the
    differing row w₁ e₁ in D and 0 in D′, both at distance |w₁|/2 from p on opposite sides.  The
    base rows' pair distances are 0, so the range τ sits in the bottom bin and the clipping radius R
    is about the centre's error bound, O(1/B); the differing pair's distance is |w₁|/2 in D and in
    D′ (the same bin), so τ has the same law under both.  With one minibatch of all n rows and
    |w₁|/2 > R + ‖c − p‖, the differing gradient is clipped to R·e₁ or −R·e₁ around the centre:
    the clipped mean moves by 2R/B, the largest a replaced row can move it at radius R, against
    noise of σ_m = (2R/B)/√(2ρ_m), so μ = √(2ρ_m), whatever w₀ and R are.  (Gradients of rows in
    the unit ball lie in the ball of radius 1/2 around w/2: no pair moves the unclipped mean by more
    than 1/B, half the 2/B the noise is calibrated to; the clipped mean is where the calibration is
    attained.)
    """
    if d < 2:
        raise ValueError("d must be >= 2")
    base = np.zeros((n - 1, d))
    base[:, 0] = math.sqrt(0.5)
    des = pair_design(
        base,
        np.eye(d)[0],
        np.zeros(d),
        relation,
        "oja_gradient",
        f"e1 (D) or 0 (D') then {n - 1} rows e1/sqrt(2) in R^{d}: antipodal clipped gradients",
        k=1,
    )
    des.statistic = "likelihood-ratio"
    return des


#: white-box designs other than :func:`whitebox_design`
WHITEBOX_DESIGNS: dict[str, Callable[..., AuditDesign]] = {
    "dp_pca": oja_gradient_design,
    "k_dp_pca": oja_gradient_design,
    "amin_cov": eigenvalue_swap_design,
}


def _declared_relation(fn: Callable, name: str, k: int, params: dict, d: int = 2) -> str:
    probe = np.zeros((WHITEBOX_N.get(name, 50), d))
    probe[0, 0] = 1.0
    return fn(probe, k, rng=np.random.default_rng(0), **params).guarantee.neighbouring


def _prepare(mechanism, epsilon, delta, params):
    name, fn = resolve(mechanism)
    base = getattr(fn, "audit_design", name)
    p = {
        **AUDIT_PARAMS.get(base, {}),
        **WHITEBOX_PARAMS.get(base, {}),
        "epsilon": float(epsilon),
        "delta": 0.0 if delta is None else float(delta),  # None: a pure-epsilon mechanism
        **params,
    }
    p.pop("keep_subspaces", None)
    return (
        name,
        base,
        fn,
        accepted_params(fn, {**p, **TAPS[base].extra_params}) if base in TAPS else p,
    )


def measure_mu(
    mechanism,
    *,
    epsilon: float,
    delta: float,
    k: int = 1,
    d: int = 2,
    seed: int = 0,
    n: int | None = None,
    **params,
) -> dict:
    """The exact statistic model of a mechanism's noisy statistic on its full-sensitivity design.

    Gaussian taps: ``{"kind": "gaussian", "mu": μ, "sigma": [σ_l], ...}`` with μ = sqrt(Σ ‖shift_l‖²/σ_l²)
    measured on the code actually run.  Sketch: ``{"kind": "chi2", "r", "w", "mass_D", "mass_Dprime"}``.
    Laplace (amin_cov's eigenvalues): ``{"kind": "laplace", "shifts": [a_i], "scale": b, ...}`` with
    a_i = |m_i(D) − m_i(D′)|/b for the coordinates that move."""
    name, base, fn, p = _prepare(mechanism, epsilon, delta, params)
    tap = TapRunner(base, fn, k, p)
    relation = _declared_relation(fn, base, k, tap.params, d)
    if base in WHITEBOX_DESIGNS:
        des = WHITEBOX_DESIGNS[base](relation, d=d, n=WHITEBOX_N[base] if n is None else int(n))
    else:
        des = whitebox_design(base, relation, d=d, n=n)
    with tap.active():
        if TAPS[base].kind == "chi2":
            rel = tap.run(des.X1, np.random.default_rng([seed, 11]))
            x = des.X1[0] / np.linalg.norm(des.X1[0])
            return {
                "kind": "chi2",
                "r": int(rel[0].Y.shape[0]),
                "w": rel[0].scale,
                "mass_D": float(np.sum((des.X1 @ x) ** 2)),
                "mass_Dprime": float(np.sum((des.X0 @ x) ** 2)),
                "relation": relation,
                "design": des,
            }
        if TAPS[base].kind == "laplace":
            A1 = _mean_matrices(tap.run(des.X1, np.random.default_rng([seed, 11]), zero=True))
            A0 = _mean_matrices(tap.run(des.X0, np.random.default_rng([seed, 11]), zero=True))
            lrt = LaplaceLRT(A1, A0)
            rel = tap.run(des.X1, np.random.default_rng([seed, 12]))
            lrt(rel)  # checks the release against the captured draw
            return {
                "kind": "laplace",
                "shifts": [float(a) for a in lrt.shifts(rel[0].scale)],
                "scale": rel[0].scale,
                "n_releases": len(rel),
                "relation": relation,
                "design": des,
                "lrt": lrt,
            }
        if TAPS[base].coupled:
            check_mean_model(tap.run(des.X1, np.random.default_rng([seed, 11]), zero=True))
            lrt = CoupledMeanLRT(tap, des)
        else:
            A1 = _mean_matrices(tap.run(des.X1, np.random.default_rng([seed, 11]), zero=True))
            A0 = _mean_matrices(tap.run(des.X0, np.random.default_rng([seed, 11]), zero=True))
            lrt = GaussianLRT(A1, A0)
        rel = tap.run(des.X1, np.random.default_rng([seed, 12]))
        _, mu = lrt(rel)
    return {
        "kind": "gaussian",
        "mu": mu,
        "sigma": [r.scale for r in rel],
        "n_releases": len(rel),
        "relation": relation,
        "design": des,
        "lrt": lrt,
    }


def _certify(s1: np.ndarray, s0: np.ndarray, ev: dict, delta: float, confidence: float) -> dict:

    alpha = 1.0 - confidence
    hi, lo = (s1, s0) if ev["orientation"] == "D1>D0" else (s0, s1)
    cnt = (
        (lambda s: int(np.sum(s >= ev["threshold"])))
        if ev["tail"] == "upper"
        else (lambda s: int(np.sum(s <= ev["threshold"])))
    )
    k_hi, k_lo, n_hi, n_lo = cnt(hi), cnt(lo), hi.size, lo.size
    eps = float(epsilon_lower_bound(k_hi, n_hi, k_lo, n_lo, delta, alpha))
    ceiling = max_certifiable_epsilon(n_hi, n_lo, delta, alpha)
    return {
        "audited_epsilon_lower": eps,
        "confidence": float(confidence),
        "method": "model-chosen event",
        "events_tested": 1,
        "orientation": ev["orientation"],
        "tail": ev["tail"],
        "threshold": ev["threshold"],
        "expected_epsilon_lower": ev["expected_epsilon_lower"],
        "audit_trials": [int(n_hi), int(n_lo)],
        "count_D": k_hi,
        "count_Dprime": k_lo,
        "p_D": k_hi / n_hi,
        "p_Dprime": k_lo / n_lo,
        "p_D_lower": float(clopper_pearson_lower(k_hi, n_hi, alpha / 2)),
        "p_Dprime_upper": float(clopper_pearson_upper(k_lo, n_lo, alpha / 2)),
        "max_certifiable_epsilon": ceiling,
        "at_ceiling": bool(eps >= ceiling - 1e-9),
    }


def whitebox_verdict(claimed: float, lower: float, exact: float, at_ceiling: bool = False) -> str:
    """The verdict of a white-box audit: a violation when the certified lower bound or the computed
    exact ε(δ) of the noisy statistic exceeds the claim.

    Parameters
    ----------
    claimed : float
        The claimed ε.
    lower : float
        The certified lower bound on ε (statistical, at the audit's confidence).
    exact : float
        The exact ε(δ) of the noisy statistic the code computes, on the audit's pair (computed from
        the measured noise and shift, not estimated).
    at_ceiling : bool, default False
        Whether the lower bound is at the largest the trials can certify.

    Returns
    -------
    str
        ``verdict`` of :mod:`.common` for the lower bound, or a violation naming the exact ε(δ) when
        only that exceeds the claim (relative tolerance :data:`EXACT_TOLERANCE`).
    """
    exact_over = exact > claimed * (1.0 + EXACT_TOLERANCE)
    if lower > claimed:
        out = verdict(claimed, lower, at_ceiling)
        return out + (
            "; so does the exact epsilon(delta) of the noisy statistic" if exact_over else ""
        )
    if exact_over:
        return (
            "VIOLATION: the exact epsilon(delta) of the noisy statistic the code computes exceeds the "
            "claimed epsilon (the calibration does not cover it)"
        )
    return verdict(claimed, lower, at_ceiling)


def whitebox_audit(
    mechanism,
    *,
    epsilon: float,
    delta: float,
    trials: int = 20000,
    k: int = 1,
    d: int = 2,
    n: int | None = None,
    seed: int = 0,
    confidence: float = 0.95,
    calibration_fraction: float = 0.5,
    event: str = "model",
    **params,
) -> dict:
    """White-box audit of a Gaussian mechanism (or the sketch): the likelihood-ratio statistic of its
    noisy intermediate on the full-sensitivity design and one event, certified by Clopper–Pearson on
    ``trials`` runs per dataset.  ``event="model"`` (default): the event is fixed in advance from the
    statistic's model (:func:`model_event`), so every trial certifies; ``event="split"``: chosen on a
    calibration split (:func:`.bounds.audit_scores`), as in the black-box audit.  The exact ε(δ) of
    the measured noisy statistic is returned beside the bound (``exact_epsilon``, ``bound_over_exact``)
    and enters the verdict (:func:`whitebox_verdict`): ``violation`` is true when the certified bound
    (``statistical_violation``) or the exact ε(δ) (``exact_violation``) exceeds the claim.  For a tap
    with a :attr:`Tap.share` (``amin_cov``) the claim is the tapped part's share of the guarantee:
    ``claimed_epsilon`` is that share, ``claimed_epsilon_total`` the guarantee's ε and ``claim_part``
    says which part; δ is the guarantee's (0 for ``amin_cov``, whatever ``delta`` is passed)."""
    if event not in ("model", "split"):
        raise ValueError(f"event must be 'model' or 'split', got {event!r}")
    name, base, fn, p = _prepare(mechanism, epsilon, delta, params)
    t0 = time.perf_counter()
    m = measure_mu(mechanism, epsilon=epsilon, delta=delta, k=k, d=d, seed=seed, n=n, **params)
    des = m["design"]
    check_neighbours(des.X1, des.X0, m["relation"])
    tap = TapRunner(base, fn, k, p)
    stats = {1: np.empty(trials), 0: np.empty(trials)}
    mus = []
    g = None
    with tap.active():
        for side, X in ((1, des.X1), (0, des.X0)):
            rng = np.random.default_rng([seed, 13, side])
            for i in range(int(trials)):
                rel = tap.run(X, rng)
                if m["kind"] in ("gaussian", "laplace"):
                    T, mu = m["lrt"](rel)
                    if i < 3:
                        mus.append(mu)
                else:
                    x = des.X1[0] / np.linalg.norm(des.X1[0])
                    T = float(np.sum((rel[0].Y @ x) ** 2))
                stats[side][i] = T
                if g is None:
                    g = tap.last_output.guarantee
    if event == "split":
        res = audit_scores(
            stats[1],
            stats[0],
            delta=g.delta,
            confidence=confidence,
            calibration_fraction=calibration_fraction,
        )
    else:
        res = _certify(
            stats[1],
            stats[0],
            model_event(m, g.delta, int(trials), 1.0 - confidence),
            g.delta,
            confidence,
        )
    exact = exact_epsilon(m, g.delta)
    lower = res["audited_epsilon_lower"]
    claimed, part = float(g.epsilon), None
    if TAPS[base].share is not None:  # the tapped release is one part of a composition
        claimed, part = TAPS[base].share(tap.last_output, int(des.X1.shape[1]))
    exact_violation = bool(exact > claimed * (1.0 + EXACT_TOLERANCE))
    statistical_violation = bool(lower > claimed)
    out = {
        "mechanism": getattr(fn, "audit_name", name),
        "mode": "whitebox",
        "claimed_epsilon": claimed,
        "delta": float(g.delta),
        "neighbouring": g.neighbouring,
        "guarantee_exact": bool(g.exact),
        **des.summary(),
        **res,
        "trials": int(trials),
        "seed": int(seed),
        "exact_epsilon": exact,
        "bound_over_exact": (lower / exact) if exact > 0 else math.nan,
        "statistic_model": m["kind"],
        "seconds": time.perf_counter() - t0,
        "exact_violation": exact_violation,
        "statistical_violation": statistical_violation,
        "violation": exact_violation or statistical_violation,
        "verdict": whitebox_verdict(claimed, lower, exact, bool(res["at_ceiling"])),
    }
    if part is not None:
        out.update(claimed_epsilon_total=float(g.epsilon), claim_part=part)
    if m["kind"] == "laplace":
        out.update(
            laplace_shifts=m["shifts"],
            noise_scales=[m["scale"]],
            n_noisy_releases=m["n_releases"],
        )
    elif m["kind"] == "gaussian":
        out.update(
            mu=m["mu"],
            noise_scales=m["sigma"],
            n_noisy_releases=m["n_releases"],
            mu_spread=float(np.ptp(mus)) if mus else 0.0,
        )
    else:
        out.update(sketch_rows=m["r"], lift=m["w"])
    if hasattr(fn, "audit_noise_factor"):
        out["noise_factor"] = fn.audit_noise_factor
    return out
