"""DP-PCA: Liu, Kong, Jain & Oh, "DP-PCA: statistically optimal and differentially private PCA"
(NeurIPS 2022, arXiv 2205.13709): a single pass of minibatch Oja's method whose every minibatch
gradient is averaged by a private mean estimator that adapts its noise to the spread of the
minibatch, not to the worst-case norm of a gradient.

**Sources and fidelity.**  The paper's full text (its algorithm boxes and appendices) could not be
consulted where this module was written; only its abstract was.  What the abstract states is
followed exactly: one pass over the data, minibatch gradient ascent on Oja's objective, each
minibatch's gradients averaged by a private mean estimator whose noise adapts to their spread
(its "private range estimation"), the top eigenvector (k = 1) estimated.  The three subroutines
below are this module's own, built from the standard constructions the paper draws on (a Laplace
histogram over geometric bins for the range, Karwa & Vadhan 2018; clip-and-noise Gaussian mean
estimation): their algorithm and line numbers are not the paper's, and none is cited as such.
Their privacy is proved here, for every input, and holds whatever the paper's constants are;
docs/dp_pca.md says what is and is not known to match the paper.

**The algorithm** (one pass, minibatches of B rows; :func:`private_oja` with one round, whose
minibatch loop :func:`_oja_pass` k-DP-PCA shares):

1. the rows are put in a uniformly random order drawn from ``rng`` (``shuffle=True``, default) or
   kept in the given order (``shuffle=False``); the first T·B rows form T disjoint minibatches, the
   rest are not read;
2. w₀ is uniform on the unit sphere (data-independent);
3. for t = 1..T: the gradients g_i = (x_iᵀ w_{t−1}) x_i of minibatch t (‖g_i‖ <= 1 for rows in
   the unit ball) are averaged by :func:`private_mean` into ĝ_t; then
   w_t = (w_{t−1} + η_t ĝ_t) / ‖w_{t−1} + η_t ĝ_t‖ (Oja's update, normalised);
4. the output is w_T (d × 1).

:func:`private_mean` (ρ-zCDP for replacing one of its B inputs, inputs of norm <= 1):

a. **range** (:func:`private_range`): the norms r_j = ‖g_{2j−1} − g_{2j}‖ of ⌊B/2⌋ disjoint pairs
   are counted in :data:`RANGE_LEVELS` + 1 geometric bins (bin b < L holds (2^{−b}, 2^{1−b}], bin L
   holds [0, 2^{1−L}]); Laplace noise of scale 2/ε_r is added to every count (replacing one input
   moves one r_j: one count −1, another +1, L1 sensitivity 2: :func:`range_histogram_sensitivity`);
   the released scale τ is the upper edge of the bin with the largest noisy count.  ε_r-DP, hence
   ε_r²/2-zCDP (Bun & Steinke 2016, Prop. 1.4).
b. **centre** (:func:`private_center`): c = (1/B) Σ g_i + N(0, σ_c² I), L2 sensitivity 2/B.
c. **clipped mean**: with radius R = :data:`RANGE_FACTOR`·τ + e, where
   e = σ_c (√d + √(2 ln(1/β))) bounds ‖c − mean‖ with probability 1 − β (Laurent & Massart 2000,
   Lemma 1), ĝ = c + (1/B) Σ Π_R(g_i − c) + N(0, σ_m² I) with Π_R the projection onto the ball of
   radius R; the sum's L2 sensitivity is min(2R, 2)/B (the projection is 1-Lipschitz and
   ‖g_i − g_j‖ <= 2): :func:`mean_noise_scale`.

The budget ρ of one minibatch is split ρ_r : ρ_c : ρ_m = :data:`BUDGET_SPLIT` (ε_r = √(2ρ_r));
σ_c = (2/B)/√(2ρ_c), σ_m = Δ_m/√(2ρ_m).  R and c are released before the clipped sum is computed,
so the three steps compose adaptively: ρ_r + ρ_c + ρ_m = ρ (Bun & Steinke 2016, Lemma 2.3).

**Privacy (replace-one-row, every input with rows in the unit ball).**  Neighbouring datasets
differ in one row at one position; the random order is drawn from ``rng`` independently of the
data, so under the coupling that uses the same order for both, the processed sequences differ in
one position, hence in one minibatch (or in none, if the row is not read).  Minibatch t's
release is ρ-zCDP given w_{t−1}, a function of earlier releases only; the other minibatches'
releases have the same conditional law under both datasets.  By the chain rule of Rényi
divergence the whole transcript is ρ-zCDP (parallel composition over disjoint minibatches, as
for the streaming power method), and w_T is post-processing.  ρ is the largest certifying the
requested (ε, δ) (:func:`mechanisms.calibration.zcdp_budget`).  No step of this proof uses the
sub-Gaussian assumption: a heavy-tailed or adversarial minibatch only makes τ large (more noise)
or clips more gradients (bias), never more leakage.

**Utility** (not privacy) is the paper's for sub-Gaussian data: the noise of the clipped mean
scales with the spread of the minibatch's gradients (τ), which vanishes when the data have little
randomness, instead of with the norm bound 1.

**Step size.**  η_t = :data:`STEP_CONSTANT` / (λ̂_t · t) with λ̂_t = max_{s <= t} ‖ĝ_s‖, a
private (post-processed) estimate of the top eigenvalue from the released gradient means; the
paper's η_t ∝ 1/(λ₁ t) needs λ₁, whose private estimate here is this post-processing (no budget).

Release vs diagnostics (``MechanismOutput``):
  release      ``status``, ``batch_size``, ``iterations`` (T), ``samples_used`` (T·B; n is public
               under replace-one-row), ``rho`` (per minibatch = of the whole run), ``budget_split``,
               ``range_scale_per_iteration`` (τ_t), ``clip_radius_per_iteration`` (R_t),
               ``noise_std_per_iteration`` (σ_m per minibatch), ``center_noise_std`` (σ_c),
               ``step_sizes`` (η_t), ``shuffle``; with ``return_trace=True`` also ``trace`` (every
               ĝ_t: what the composition argument releases).
  diagnostics  (not private) ``n_clipped`` (rows above the unit norm), ``n_gradients_clipped``
               (per minibatch, by the clipped mean), ``n``.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ._base import (
    MechanismOutput,
    PrivacyGuarantee,
    PrivacyInputError,
    check_data,
    check_delta,
    check_flag,
    check_k,
)
from .calibration import zcdp_budget
from .linalg import orthonormalize

RELATION = "replace-one-row"
PAPER = 'Liu, Kong, Jain & Oh, "DP-PCA: statistically optimal and differentially private PCA", NeurIPS 2022'

#: L: number of geometric bins above the bottom bin of the range histogram (bin b < L holds
#: (2^-b, 2^(1-b)], bin L holds [0, 2^(1-L)]); 2^(1-L) ≈ 1.9e-9 is the finest scale resolved.
#: A public constant of this implementation (utility only).
RANGE_LEVELS = 31

#: R = RANGE_FACTOR · τ + e: the clipping radius around the centre as a multiple of the released
#: pair-distance scale τ.  A pair of independent gradients is √2 times as far apart as one gradient
#: from the mean, and τ is the upper edge of the modal bin (up to 2x the modal distance), so 1.0
#: covers a typical gradient with room (utility only; privacy holds for any value).
RANGE_FACTOR = 1.0

#: ρ_range : ρ_centre : ρ_mean, the split of one minibatch's budget (utility only).
BUDGET_SPLIT = (0.1, 0.2, 0.7)

#: β: the probability that the centre's noise exceeds the bound e added to R (Laurent & Massart).
CENTER_FAILURE = 0.01

#: η_t · λ̂_t = STEP_CONSTANT / t (Oja's decreasing step; utility only).
STEP_CONSTANT = 4.0


# ---------------------------------------------------------------------------------------------
# Calibration: each function returns one noise scale from public quantities and released ones
# ---------------------------------------------------------------------------------------------


def range_histogram_sensitivity() -> float:
    """L1 sensitivity of the range histogram under replacing one input: 2.

    Replacing g_i changes the single pair distance r_j of the pair holding i; its old bin loses one
    count and its new bin gains one (no change if both fall in one bin).  Inputs outside every pair
    (the last one when B is odd) are not counted.
    """
    return 2.0


def range_laplace_scale(rho_range: float) -> float:
    """Laplace scale b = 2/ε_r of the range histogram, ε_r = √(2 ρ_r): ε_r-DP (Laplace mechanism,
    L1 sensitivity 2), hence ρ_r = ε_r²/2-zCDP (Bun & Steinke 2016, Proposition 1.4)."""
    return range_histogram_sensitivity() / math.sqrt(2.0 * rho_range)


def center_noise_scale(batch_size: int, rho_center: float) -> float:
    """σ_c of the centre: the mean of B inputs of norm <= 1 has L2 sensitivity 2/B under
    replacement; σ = Δ/√(2ρ) is ρ-zCDP (Bun & Steinke 2016, Proposition 1.6)."""
    return (2.0 / batch_size) / math.sqrt(2.0 * rho_center)


def mean_noise_scale(radius: float, batch_size: int, rho_mean: float) -> float:
    """σ_m of the clipped mean: (1/B) Σ Π_R(g_i − c) has L2 sensitivity min(2R, 2)/B under
    replacement (inputs of norm <= 1, projection 1-Lipschitz); σ = Δ/√(2ρ_m)."""
    sens = min(2.0 * radius, 2.0) / batch_size
    return sens / math.sqrt(2.0 * rho_mean)


def center_error_bound(sigma_c: float, d: int, failure: float = CENTER_FAILURE) -> float:
    """e = σ_c (√d + √(2 ln(1/β))): ‖N(0, σ_c² I_d)‖ <= e with probability >= 1 − β (Laurent &
    Massart 2000, Lemma 1, chi-square upper tail with x = ln(1/β)).  Utility only."""
    return sigma_c * (math.sqrt(d) + math.sqrt(2.0 * math.log(1.0 / failure)))


# ---------------------------------------------------------------------------------------------
# Subroutines
# ---------------------------------------------------------------------------------------------


def range_bin_edges(levels: int = RANGE_LEVELS) -> np.ndarray:
    """Upper edges 2^(1-b), b = 0..L: bin b < L is (2^-b, 2^(1-b)], bin L is [0, 2^(1-L)]."""
    return 2.0 ** (1.0 - np.arange(levels + 1, dtype=np.float64))


def range_histogram(distances: np.ndarray, levels: int = RANGE_LEVELS) -> np.ndarray:
    """Exact counts of the distances (each in [0, 2]) in the bins of :func:`range_bin_edges`.

    A distance r goes to the bin b with 2^(-b) < r <= 2^(1-b) (b < L), or to bin L when
    r <= 2^(1-L); found by comparison with the edges, not by rounding a logarithm.
    """
    r = np.asarray(distances, dtype=np.float64)
    edges = range_bin_edges(levels)  # decreasing: 2, 1, 1/2, ..., 2^(1-L)
    # the first edge below r is edges[b + 1]; none below r: the bottom bin L
    idx = np.searchsorted(-edges, -r, side="right") - 1
    idx = np.clip(idx, 0, levels)
    return np.bincount(idx, minlength=levels + 1)[: levels + 1]


def private_range(
    g: np.ndarray,
    rho_range: float,
    rng: np.random.Generator,
    levels: int = RANGE_LEVELS,
    scale_fn: Callable[[float], float] = range_laplace_scale,
) -> tuple[float, np.ndarray]:
    """The private scale τ of a minibatch: the upper edge of the modal bin of the noisy histogram of
    the pair distances ‖g_{2j−1} − g_{2j}‖ (module docstring, step a).

    Returns ``(τ, noisy_counts)``; both are covered by the ρ_r-zCDP guarantee.
    """
    m = g.shape[0] // 2
    dist = np.linalg.norm(g[0 : 2 * m : 2] - g[1 : 2 * m : 2], axis=1)
    counts = range_histogram(dist, levels).astype(np.float64)
    noisy = counts + rng.laplace(0.0, scale_fn(rho_range), size=counts.shape)
    b = int(np.argmax(noisy))
    return float(range_bin_edges(levels)[b]), noisy


def private_center(
    g: np.ndarray,
    rho_center: float,
    rng: np.random.Generator,
    scale_fn: Callable[[int, float], float] = center_noise_scale,
) -> tuple[np.ndarray, float]:
    """The noisy mean c = (1/B) Σ g_i + N(0, σ_c² I) (step b); returns ``(c, σ_c)``."""
    B, d = g.shape
    s = scale_fn(B, rho_center)
    return g.mean(axis=0) + rng.normal(0.0, s, size=d), s


def private_mean(
    g: np.ndarray,
    rho: float,
    rng: np.random.Generator,
    *,
    split: tuple[float, float, float] = BUDGET_SPLIT,
    levels: int = RANGE_LEVELS,
    range_factor: float = RANGE_FACTOR,
    scales: dict[str, Callable] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """ρ-zCDP mean of B vectors of norm <= 1 under replacing one of them (module docstring, a–c).

    ``scales`` maps "range", "center", "mean" to the noise-scale functions (default this module's;
    the mechanisms pass the ones they look up at call time, which the audit patches).

    Returns ``(ĝ, info)`` with ``info`` holding the released ``tau``, ``radius``, ``sigma_c``,
    ``sigma_m`` and the not-private ``n_clipped`` (gradients moved by the projection).
    """
    sc = {"range": range_laplace_scale, "center": center_noise_scale, "mean": mean_noise_scale}
    if scales:
        sc.update(scales)
    B, d = g.shape
    tot = float(sum(split))
    rho_r, rho_c, rho_m = (rho * s / tot for s in split)
    tau, _ = private_range(g, rho_r, rng, levels, sc["range"])
    c, sigma_c = private_center(g, rho_c, rng, sc["center"])
    R = range_factor * tau + center_error_bound(sigma_c, d)
    diff, n_over = clip_around(g, c, R)
    sigma_m = sc["mean"](R, B, rho_m)
    est = c + diff.mean(axis=0) + rng.normal(0.0, sigma_m, size=d)
    return est, {
        "tau": tau,
        "radius": R,
        "sigma_c": sigma_c,
        "sigma_m": sigma_m,
        "n_clipped": n_over,
    }


def clip_around(g: np.ndarray, c: np.ndarray, radius: float) -> tuple[np.ndarray, int]:
    """Π_R(g_i − c) for every row: the projection of g_i − c onto the ball of radius R (rows longer
    than R scaled to length R).  Returns the projected differences and how many were moved (an
    exact data statistic: a diagnostic).  The projection onto a convex set is 1-Lipschitz, so
    replacing one g_i moves the sum by at most min(2R, ‖g_i − g_i′‖) <= min(2R, 2)."""
    diff = g - c
    nrm = np.sqrt(np.einsum("ij,ij->i", diff, diff))
    over = nrm > radius
    if np.any(over):
        diff[over] *= (radius / nrm[over])[:, None]
    return diff, int(over.sum())


def _oja_pass(
    X: np.ndarray,
    w0: np.ndarray,
    batch_size: int,
    iterations: int,
    rho: float,
    rng: np.random.Generator,
    *,
    project: np.ndarray | None = None,
    scales: dict[str, Callable] | None = None,
    step_constant: float = STEP_CONSTANT,
    return_trace: bool = False,
) -> tuple[np.ndarray, dict[str, list]]:
    """Minibatch Oja with :func:`private_mean` on ``iterations`` disjoint minibatches of ``X`` (in
    its row order; the caller shuffles).  ``project`` (d × d, optional) replaces each row x by Px
    first (k-DP-PCA's deflation; ‖Px‖ <= ‖x‖ for an orthogonal projector).  Returns ``(w_T, log)``."""
    w = w0.copy()
    log: dict[str, list] = {
        "tau": [],
        "radius": [],
        "sigma_m": [],
        "sigma_c": [],
        "eta": [],
        "n_clipped": [],
        "trace": [],
    }
    lam = 0.0
    for t in range(1, iterations + 1):
        Xb = X[(t - 1) * batch_size : t * batch_size]
        if project is not None:
            Xb = Xb @ project
        g = (Xb @ w)[:, None] * Xb
        est, info = private_mean(g, rho, rng, scales=scales)
        lam = max(lam, float(np.linalg.norm(est)))
        eta = step_constant / (max(lam, 1e-300) * t)
        w_new = w + eta * est
        if project is not None:
            w_new = project @ w_new
        nw = float(np.linalg.norm(w_new))
        if nw > 0 and math.isfinite(nw):
            w = w_new / nw
        for key in ("tau", "radius", "sigma_m", "sigma_c", "n_clipped"):
            log[key].append(info[key])
        log["eta"].append(eta)
        if return_trace:
            log["trace"].append(est.copy())
    return w, log


def default_iterations(n: int) -> int:
    """T = ⌈log2 n⌉ minibatches (at least 1) when neither T nor B is given (utility only)."""
    return max(1, int(math.ceil(math.log2(max(n, 2)))))


def plan_batches(n: int, batch_size: int | None, iterations: int | None) -> tuple[int, int]:
    """``(B, T)`` from the public n and the options; refuses what leaves a minibatch without a pair."""
    for name, v in (("batch_size", batch_size), ("iterations", iterations)):
        if v is not None and (isinstance(v, bool) or int(v) != v or int(v) < 1):
            raise PrivacyInputError(f"{name} must be a positive integer, got {v!r}")
    if batch_size is None:
        T = default_iterations(n) if iterations is None else int(iterations)
        B = n // T
    else:
        B = int(batch_size)
        T = n // B if iterations is None else int(iterations)
    if B < 2:
        raise PrivacyInputError(
            "each minibatch needs at least 2 rows (one pair for the range estimate): "
            f"n = {n} rows do not give {T} minibatches of 2 or more"
        )
    if T < 1 or T * B > n:
        raise PrivacyInputError(
            f"n = {n} rows are fewer than iterations x batch_size = {max(T, 1)} x {B}"
        )
    return B, T


def process_order(n: int, shuffle: bool, rng: np.random.Generator) -> np.ndarray | None:
    """The order rows are read in: ``rng.permutation(n)`` (the first draw from ``rng``) or None."""
    return rng.permutation(n) if shuffle else None


def mechanism_scales(module_globals: dict[str, Any]) -> dict[str, Callable]:
    """The noise-scale functions a mechanism module holds at call time (the audit patches them)."""
    return {
        "range": module_globals["range_laplace_scale"],
        "center": module_globals["center_noise_scale"],
        "mean": module_globals["mean_noise_scale"],
    }


def private_oja(
    X: np.ndarray,
    rounds: int,
    rho: float,
    rng: np.random.Generator,
    *,
    batch_size: int | None,
    iterations: int | None,
    shuffle: bool,
    scales: dict[str, Callable] | None = None,
    return_trace: bool = False,
) -> dict[str, Any]:
    """The whole run of DP-PCA (``rounds = 1``) or k-DP-PCA (``rounds = k``): row order, minibatch
    plan, and one private Oja pass per round on its own part of the rows, each deflated against the
    directions released before it.

    The rows are read in the order ``rng.permutation(n)`` (``shuffle=True``; the generator's first
    draw) or as given, split into ``rounds`` consecutive parts of n // rounds rows, and round j runs
    :func:`_oja_pass` on the first T·B rows of part j.  Round j > 1 replaces every row x by P x with
    P = I − U Uᵀ, U the orthonormal basis of the directions of rounds 1..j−1 (a function of earlier
    releases only), starts from P w₀ and outputs P w_T; round 1 projects nothing.  Every row is read
    in at most one minibatch, so the run is ρ-zCDP by parallel composition (module docstring).

    Parameters
    ----------
    X : numpy.ndarray of shape (n, d)
        Rows of L2 norm at most 1 (checked by the caller).
    rounds : int
        Number of deflation rounds (1 for DP-PCA, k for k-DP-PCA).
    rho : float
        ρ of every minibatch's private mean (= of the whole run).
    rng : numpy.random.Generator
        Source of the row order, the starting vectors and all noise, drawn in that order per round.
    batch_size, iterations : int or None
        B and T per round (:func:`plan_batches` on n // rounds rows).
    shuffle : bool
        Whether to read the rows in a random order.
    scales : dict, optional
        The noise-scale functions (:func:`mechanism_scales` of the calling module).
    return_trace : bool, default False
        Keep every private minibatch mean ĝ_t in ``log["trace"]``.

    Returns
    -------
    dict
        ``outputs`` (list of the rounds' unit vectors w, as each round releases it), ``basis``
        (d × rounds, orthonormal: the deflation basis after the last round), ``log`` (the
        per-minibatch lists of :func:`_oja_pass`, concatenated over rounds), ``batch_size`` (B),
        ``iterations`` (T) and ``return_trace``.
    """
    n, d = X.shape
    part = n // rounds
    B, T = plan_batches(part, batch_size, iterations)
    order = process_order(n, shuffle, rng)
    Xs = X if order is None else X[order]
    U = np.zeros((d, 0))
    outputs: list[np.ndarray] = []
    logs: dict[str, list] = {}
    for j in range(rounds):
        P = None if j == 0 else np.eye(d) - U @ U.T
        w0 = rng.standard_normal(d)
        if P is not None:
            w0 = P @ w0
        w0 /= np.linalg.norm(w0)
        rows = Xs[j * part : j * part + T * B]
        w, log = _oja_pass(
            rows, w0, B, T, rho, rng, project=P, scales=scales, return_trace=return_trace
        )
        if P is not None:
            w = P @ w
            nw = float(np.linalg.norm(w))
            if not (nw > 0 and math.isfinite(nw)):  # pragma: no cover - measure zero
                w = w0
        outputs.append(w)
        U = orthonormalize(np.column_stack([U, w / np.linalg.norm(w)]))
        for key, val in log.items():
            logs.setdefault(key, []).extend(val)
    return {
        "outputs": outputs,
        "basis": U,
        "log": logs,
        "batch_size": B,
        "iterations": T,
        "return_trace": return_trace,
    }


def run_release(run: dict[str, Any], rho: float, shuffle: bool, **extra: Any) -> dict[str, Any]:
    """The ``release`` of a :func:`private_oja` run (module docstring): B, T, the samples read, ρ,
    the budget split, per minibatch τ_t, R_t, σ_m and η_t, σ_c, ``shuffle``; with a trace, every
    ĝ_t.  ``extra`` (k-DP-PCA's ``rounds``) follows ``status``."""
    log = run["log"]
    B, T = run["batch_size"], run["iterations"]
    release: dict[str, Any] = {
        "status": "ok",
        **extra,
        "batch_size": B,
        "iterations": T,
        "samples_used": len(run["outputs"]) * T * B,
        "rho": rho,
        "budget_split": list(BUDGET_SPLIT),
        "range_scale_per_iteration": log["tau"],
        "clip_radius_per_iteration": log["radius"],
        "noise_std_per_iteration": log["sigma_m"],
        "center_noise_std": log["sigma_c"][0],
        "step_sizes": log["eta"],
        "shuffle": shuffle,
    }
    if run["return_trace"]:
        release["trace"] = log["trace"]
    return release


def dp_pca(
    X: Any,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float | None = None,
    delta: float = 1e-6,
    rho: float | None = None,
    batch_size: int | None = None,
    iterations: int | None = None,
    shuffle: bool = True,
    clip: bool = False,
    return_trace: bool = False,
) -> MechanismOutput:
    """DP-PCA (Liu, Kong, Jain & Oh 2022): one pass of minibatch Oja with a private mean estimator
    per minibatch (module docstring); the top eigenvector.

    Parameters
    ----------
    X : array-like of shape (n, d)
        The data; every row must have L2 norm at most 1 (refused above unless ``clip=True``).
    k : int
        Must be 1: DP-PCA estimates the top eigenvector (``k_dp_pca`` estimates k of them).
    rng : numpy.random.Generator
        Source of the row order, w₀ and all noise.
    epsilon : float
        Privacy parameter ε > 0 (the run is ρ-zCDP at the largest ρ certifying (ε, δ)).
    delta : float, default 1e-6
        Privacy parameter δ in (0, 1).
    rho : float, optional
        Run at this ρ-zCDP instead; the recorded ε is then the one ρ certifies at δ.
    batch_size : int, optional
        B rows per minibatch; default n // T.
    iterations : int, optional
        T minibatches; default n // B, or ⌈log2 n⌉ when B is not given either.
    shuffle : bool, default True
        Read the rows in the order ``rng.permutation(n)`` (the first draw from ``rng``) rather than
        as given; the law of the output then does not depend on the row order.
    clip : bool, default False
        Scale rows above the unit norm back onto the unit ball instead of refusing them.
    return_trace : bool, default False
        Put every private minibatch mean ĝ_t into ``release["trace"]``.

    Returns
    -------
    MechanismOutput
        ``components`` (d × 1, unit norm), the ρ-zCDP / (ε, δ) guarantee (replace-one-row) and the
        ``release`` and ``diagnostics`` (not private) fields of the module docstring.

    References
    ----------
    Liu, Kong, Jain and Oh, "DP-PCA: statistically optimal and differentially private PCA",
    NeurIPS 2022 (arXiv 2205.13709).  Karwa and Vadhan, "Finite sample differentially private
    confidence intervals", ITCS 2018 (the histogram range estimate).  Bun and Steinke, TCC 2016
    (zCDP).  Laurent and Massart, Annals of Statistics 2000 (the chi-square tail).
    """
    X, n_clipped = check_data(X, clip=clip)
    n, d = X.shape
    k = check_k(k, d)
    if k != 1:
        raise PrivacyInputError(
            f"dp_pca estimates the top eigenvector only (k = 1), got k = {k}; use k_dp_pca for k > 1"
        )
    shuffle = check_flag(shuffle, "shuffle")
    check_delta(delta)
    rho_run, eps, dl = zcdp_budget(epsilon, delta, rho)
    run = private_oja(
        X,
        1,
        rho_run,
        rng,
        batch_size=batch_size,
        iterations=iterations,
        shuffle=shuffle,
        scales=mechanism_scales(globals()),
        return_trace=return_trace,
    )
    guarantee = PrivacyGuarantee(
        eps,
        dl,
        RELATION,
        exact=True,
        note=(
            "DP-PCA (Liu et al. 2022) single pass: rho-zCDP per disjoint minibatch (range "
            "histogram, centre, clipped mean; parallel composition); privacy for every input "
            "with rows in the unit ball, utility for sub-Gaussian data; subroutines "
            "reconstructed (docs/dp_pca.md)"
        ),
        rho=rho_run,
    )
    return MechanismOutput(
        components=run["outputs"][0].reshape(d, 1),
        guarantee=guarantee,
        release=run_release(run, rho_run, shuffle),
        diagnostics={
            "n_clipped": n_clipped,
            "n_gradients_clipped": run["log"]["n_clipped"],
            "n": n,
        },
    )
