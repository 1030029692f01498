"""Private online PCA of Dwork, Talwar, Thakurta & Zhang, "Analyze Gauss" (STOC 2014), section 4.

Notation of the paper: m rows a_t in R^n (here: d), rank k.

* **Algorithm 2 (FPL with Gaussian noise)** — ``tree=False``: at step t the learner plays V_t
  (chosen before seeing a_t), earns ``tr(V_tᵀ a_t a_tᵀ V_t) = ||V_tᵀ a_t||²``, then computes
  ``Ĉ_t = Σ_{τ<=t} a_τ a_τᵀ + E_t`` with *fresh* Algorithm-1 noise E_t (symmetric, upper triangle
  i.i.d. N(0, Δ_{ε,δ}²), Δ_{ε,δ} = sqrt(2 ln(1.25/δ))/ε) and plays V_{t+1} = top-k eigenvectors of Ĉ_t.
  V_1 is a data-independent uniformly random subspace ("arbitrary" in the paper).
  Each Ĉ_t alone is (ε, δ)-DP; the whole sequence is not (the paper says so).  The guarantee we
  report is the sound composition bound: a row enters at most m releases, each a Gaussian
  mechanism of L2 sensitivity 1 and std σ, hence ρ = m/(2σ²)-zCDP, hence
  (ρ + 2 sqrt(ρ log 1/δ), δ)-DP (Bun–Steinke) — reported with ``exact=False`` (upper bound).
* **Tree-based aggregation** — ``tree=True`` (default; the construction behind Theorem 8):
  a binary tree over positions [0, m-1] (m rounded up to a power of two, H = ceil(log2 m) levels
  above the leaves).  Every node releases its sum Σ_{i in node} a_i a_iᵀ plus symmetric Gaussian
  noise drawn once when the node is complete; the prefix [0, t] is the sum of the <= H + 1
  complete nodes of the binary decomposition of t + 1.  Each element enters exactly one node per
  level, i.e. ``1 + H = 1 + ceil(log2 m)`` nodes (``TreeAggregator.membership`` records it).
  **Calibration (derived here):** the map data -> (upper triangles of all node sums) has L2
  sensitivity ``Δ_row · sqrt(1 + H)`` (Δ_row = ||upper(aaᵀ)||_F <= ||a||² <= 1 for add/remove,
  ||xxᵀ - yyᵀ||_F <= sqrt(2) for replacement), and node noises are independent and
  non-adaptive, so the whole release is ONE Gaussian mechanism: per-node std
  ``σ_node = gaussian_sigma(Δ_row sqrt(1 + H), ε, δ)`` (classical sqrt(2 ln(1.25/δ))/ε scaling
  when ε < 1, zCDP otherwise, whichever is smaller) makes the whole sequence (ε, δ)-DP.  All
  V_t are post-processing.  (The paper only states the resulting prefix variance
  log³(m/δ)Δ²_{ε,δ}; ours is at most (1 + H)² Δ² because <= 1 + H nodes are summed.)
* **Neighbouring** (``neighbouring=``).  The offline paper's neighbours "differ in exactly one
  row" with sensitivity ‖aaᵀ‖ <= 1, i.e. a row against nothing.  In a stream, what the
  calibration covers is ``"zero-out-one-row"`` (default): a_t present vs replaced by the zero
  vector *at the same position*, every other row keeping its time step (event-level privacy).
  It is NOT add/remove-one-row: a true deletion shifts every later row by one position, which
  changes O(m) tree nodes (and, for Algorithm 2, every later prefix by a different row), so
  ``"add-remove-one-row"`` is refused.  ``"replace-one-row"`` (a_t -> b_t at the same position)
  is also offered: Δ_row = sqrt(2) in both variants.
* **Algorithm 2's per-step noise** is ``σ = Δ_row · Δ_{ε,δ}`` (:func:`algorithm1_noise_scale`
  with ``sensitivity=Δ_row``), so that each Ĉ_t is (ε, δ)-DP under the chosen relation, as the
  note says: Δ_row = 1 (zero-out) is DTTZ's Algorithm 1, and Δ_row = sqrt(2) under
  replace-one-row (the same scaling as ``analyze_gauss``).  The whole-sequence bound then
  composes m Gaussian releases of sensitivity/std ratio 1/Δ_{ε,δ}.
* **Tight calibration** (``calibration="tight"``, docs/calibration.md).  Tree: a node is released
  (noised) only once it is complete, and a complete node at level h holds 2^h <= m elements, so one
  element enters at most ``floor(log2 m) + 1 = m.bit_length()`` released nodes (row 0 attains it;
  = 1 + H when m is a power of two, H otherwise); the release is one Gaussian mechanism of
  sensitivity Δ_row·sqrt(that count), and σ_node is the smallest for its exact profile
  (:func:`mechanisms.calibration.gaussian_sigma_tight`, dp-accounting).  Algorithm 2: each step's
  σ is the smallest making that step (ε, δ)-DP at sensitivity Δ_row, and the whole sequence of t
  steps is reported at its exact composed ε (one Gaussian of ratio sqrt(t)·Δ_row/σ, ε from
  dp-accounting's privacy-loss distribution).
* **Regret** (section 2.2): ``OPT = Σ top-k eigenvalues of Σ_t a_t a_tᵀ``,
  ``regret = OPT − Σ_t ||V_tᵀ a_t||²``.  :func:`online_regret_bounds` gives the rates of
  Theorems 8 and 9 with every O(·) constant set to 1 (the paper gives none) — for plotting shapes.

Release vs diagnostics (``MechanismOutput``):
  release      ``status``, ``m``, ``tree``, ``neighbouring_sensitivity``, ``noise_scale``; tree:
               ``node_noise_scale``, ``horizon``, ``tree_height``; Algorithm 2:
               ``per_step_epsilon``, ``per_step_delta``, ``composed_epsilon``; and, with
               ``keep_subspaces=True``, ``subspaces`` V_1..V_{m+1} (post-processing of the noisy
               prefix sums, so covered by the guarantee).  m is public under both relations
               (neighbouring streams have the same length).
  diagnostics  (not private) ``gains``, ``regret_curve`` (``keep_curves=True``), ``cumulative_gain``,
               ``opt``, ``regret`` (all computed from the raw rows), ``n_clipped``,
               ``max_membership`` and ``n_noise_draws`` (tree internals, for tests).
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Iterable

import numpy as np

from ._base import (
    STREAM_ROW_MESSAGE,
    MechanismOutput,
    PreparedData,
    PrivacyGuarantee,
    PrivacyInputError,
    check_data,
    check_delta,
    check_epsilon,
    check_flag,
    check_k,
    stream_rows,
)
from .calibration import (
    analyze_gauss_noise_scale,
    check_calibration,
    gaussian_epsilon_tight,
    gaussian_sigma,
    gaussian_sigma_tight,
    zcdp_to_epsilon,
)
from .linalg import random_orthonormal, single_thread_blas, symmetric_gaussian, top_k_eigenvectors


def tree_height(m: int) -> int:
    """H = ceil(log2 m) (0 for m = 1): the tree has H + 1 levels, each element enters H + 1 nodes."""
    if m < 1:
        raise ValueError(f"horizon must be >= 1, got {m}")
    return int(math.ceil(math.log2(m))) if m > 1 else 0


def algorithm1_noise_scale(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Δ_{ε,δ} = sensitivity · sqrt(2 ln(1.25/δ)) / ε (DTTZ Algorithm 1; classical Gaussian mechanism).

    DTTZ use sensitivity 1 (a row against the zero row); pass ``sensitivity=sqrt(2)`` for
    replace-one-row.  The classical bound needs ε < 1; for ε >= 1 the zCDP calibration
    ``gaussian_sigma(sensitivity, ε, δ)`` is returned instead (valid for every ε).
    """
    if epsilon < 1.0:
        return analyze_gauss_noise_scale(epsilon, delta, sensitivity)
    return gaussian_sigma(sensitivity, epsilon, delta)


#: relations online_pca's calibration covers (see the module docstring; add/remove is not one)
NEIGHBOURINGS = ("zero-out-one-row", "replace-one-row")


def row_sensitivity(neighbouring: str) -> float:
    """L2 sensitivity of upper(Σ a aᵀ): 1 (zero-out: a -> 0 at the same position) or sqrt(2)
    (replace x -> y).  ``"add-remove-one-row"`` is refused: a deletion shifts later positions."""
    if neighbouring == "zero-out-one-row":
        return 1.0
    if neighbouring == "replace-one-row":
        return math.sqrt(2.0)
    if neighbouring == "add-remove-one-row":
        raise PrivacyInputError(
            "online_pca does not cover add-remove-one-row: deleting a row shifts every later row's "
            "position (O(m) tree nodes change); its event-level relation is 'zero-out-one-row' "
            "(a row replaced by the zero vector at the same position)"
        )
    raise PrivacyInputError(f"neighbouring must be one of {NEIGHBOURINGS}, got {neighbouring!r}")


def tree_released_nodes_per_element(m: int) -> int:
    """Most released (complete) tree nodes one element of an m-element stream enters: floor(log2 m) + 1.

    A complete node at level h covers 2^h <= m positions, so only levels h <= floor(log2 m) can hold
    a released node containing a given element (one per level); position 0 enters one at each.
    """
    if m < 1:
        raise ValueError(f"horizon must be >= 1, got {m}")
    return int(m).bit_length()


def tree_node_noise_scale(
    epsilon: float,
    delta: float,
    m: int,
    neighbouring: str = "zero-out-one-row",
    calibration: str = "paper",
) -> float:
    """Per-node noise std making the whole tree release (ε, δ)-DP.

    ``"paper"`` (default): gaussian_sigma(Δ_row sqrt(1 + H), ε, δ) (every element counted in all H + 1
    levels; classical or zCDP calibration); ``"tight"``: gaussian_sigma_tight(Δ_row, ε, δ,
    :func:`tree_released_nodes_per_element` (m)) (exact profile, dp-accounting).
    """
    if check_calibration(calibration) == "tight":
        return gaussian_sigma_tight(
            row_sensitivity(neighbouring), epsilon, delta, tree_released_nodes_per_element(m)
        )
    return gaussian_sigma(
        row_sensitivity(neighbouring) * math.sqrt(1 + tree_height(m)), epsilon, delta
    )


def algorithm2_composed_epsilon(
    epsilon: float,
    delta: float,
    m: int,
    sigma: float | None = None,
    neighbouring: str = "zero-out-one-row",
    calibration: str = "paper",
) -> float:
    """ε of the whole Algorithm-2 sequence (m releases, each Gaussian with std σ).

    ``"paper"``: zCDP composition (Bun–Steinke conversion); ``"tight"``: the exact composed profile
    (one Gaussian of ratio sqrt(m)·Δ_row/σ) by dp-accounting's privacy-loss distribution.
    ``sigma=None``: the per-step std of that calibration (paper: ``algorithm1_noise_scale(ε, δ, Δ_row)``).
    """
    sens = row_sensitivity(neighbouring)
    if check_calibration(calibration) == "tight":
        sigma = (
            algorithm2_noise_scale_tight(epsilon, delta, neighbouring) if sigma is None else sigma
        )
        return gaussian_epsilon_tight(sens, sigma, delta, m)
    sigma = algorithm1_noise_scale(epsilon, delta, sens) if sigma is None else sigma
    rho = m * sens**2 / (2.0 * sigma**2)
    return zcdp_to_epsilon(rho, delta)


def algorithm2_noise_scale_tight(
    epsilon: float, delta: float, neighbouring: str = "zero-out-one-row"
) -> float:
    """``calibration="tight"`` per-step std of Algorithm 2: the smallest σ making one step (ε, δ)-DP
    at sensitivity Δ_row (the ``"paper"`` one is :func:`algorithm1_noise_scale`, sensitivity 1)."""
    return gaussian_sigma_tight(row_sensitivity(neighbouring), epsilon, delta)


class TreeAggregator:
    """Binary-tree (binary mechanism) continual release of prefix sums of a stream of arrays.

    Positions 0..m-1; a node at level h with index j covers [j 2^h, (j+1) 2^h - 1].  ``add(x)``
    adds x to the one open node of every level (H + 1 nodes), noises each node once, when it is
    complete, with ``noise()``; ``prefix()`` returns the noisy sum of all elements added so far
    from the <= H + 1 complete nodes of the binary decomposition of the count.  Only nodes that
    can still be used are kept (O(log m) arrays of the element's shape).
    """

    def __init__(
        self, horizon: int, shape: tuple[int, ...], noise: Callable[[], np.ndarray] | None = None
    ) -> None:
        self.m = int(horizon)
        self.H = tree_height(self.m)
        self.shape = tuple(shape)
        self.noise = noise
        self.t = 0
        self._open: dict[int, tuple[int, np.ndarray]] = {}
        self._done: dict[tuple[int, int], np.ndarray] = {}
        self.membership: list[int] = []  # number of nodes each element entered
        self.nodes_of: list[list[tuple[int, int]]] = []  # (level, index) of those nodes
        self.n_noise_draws = 0

    def add(self, x: np.ndarray) -> None:
        if self.t >= self.m:
            raise ValueError(f"TreeAggregator horizon {self.m} exceeded")
        t = self.t
        nodes = []
        for h in range(self.H + 1):
            j = t >> h
            cur = self._open.get(h)
            if cur is None or cur[0] != j:
                cur = (j, np.zeros(self.shape))
            s = cur[1] + x
            nodes.append((h, j))
            if t == ((j + 1) << h) - 1:  # node complete: release it once, with fresh noise
                if self.noise is not None:
                    s = s + self.noise()
                    self.n_noise_draws += 1
                self._done[(h, j)] = s
                self._open.pop(h, None)
                if h > 0:
                    self._done.pop((h - 1, 2 * j), None)
                    self._done.pop((h - 1, 2 * j + 1), None)
            else:
                self._open[h] = (j, s)
        self.membership.append(len(nodes))
        self.nodes_of.append(nodes)
        self.t += 1

    def decomposition(self, count: int | None = None) -> list[tuple[int, int]]:
        """(level, index) of the complete nodes whose union is [0, count - 1]."""
        count = self.t if count is None else count
        out, pos = [], 0
        for h in range(self.H, -1, -1):
            if count & (1 << h):
                out.append((h, pos >> h))
                pos += 1 << h
        return out

    def prefix(self) -> np.ndarray:
        total = np.zeros(self.shape)
        for node in self.decomposition():
            total = total + self._done[node]
        return total

    @property
    def n_stored(self) -> int:
        return len(self._done) + len(self._open)


def _rows(
    stream: Any, clip: bool
) -> tuple[Iterable[np.ndarray], int | None, int | None, list[int]]:
    """The stream's rows, each through the shared row-norm check (``check_data``), whatever the container."""
    clipped = [0]
    if (
        isinstance(stream, PreparedData)
        or isinstance(stream, np.ndarray)
        or (isinstance(stream, (list, tuple)) and len(stream) and np.ndim(stream[0]) == 1)
    ):
        # check_data re-checks a PreparedData validated for a looser bound than 1
        X, nc = check_data(
            stream if isinstance(stream, PreparedData) else np.asarray(stream), clip=clip
        )
        clipped[0] = nc
        return iter(X), X.shape[0], X.shape[1], clipped

    def gen():
        width = None
        for row in stream:
            r = stream_rows(row).reshape(1, -1)  # any item is one row, its entries in order
            if r.shape[1] == 0 or width not in (None, r.shape[1]):
                raise PrivacyInputError(STREAM_ROW_MESSAGE)  # no position, no length
            width = r.shape[1]
            r, nc = check_data(r, clip=clip)
            clipped[0] += nc
            yield r[0]

    return gen(), None, None, clipped


def online_pca(
    X: Any,
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: float,
    delta: float = 1e-6,
    tree: bool = True,
    horizon: int | None = None,
    neighbouring: str = "zero-out-one-row",
    clip: bool = False,
    keep_subspaces: bool = True,
    keep_curves: bool = True,
    calibration: str = "paper",
) -> MechanismOutput:
    """DTTZ online PCA (Algorithm 2; tree-based aggregation of section 4 when ``tree=True``).

    Parameters
    ----------
    X : array-like of shape (m, d), or iterable of length-d rows
        The stream, consumed once; rows of L2 norm at most 1 (see ``clip``).
    k : int
        Dimension of the subspaces played, 1 <= k < d.
    rng : numpy.random.Generator
        Source of the noise.
    epsilon : float
        Privacy parameter ε > 0 for the whole sequence of outputs.
    delta : float, default 1e-6
        Privacy parameter δ in (0, 1).
    tree : bool, default True
        Tree-based aggregation of the noisy sums (section 4); False runs Algorithm 2 with a fresh
        Gaussian mechanism per step and reports the composed bound (``exact=False``).
    horizon : int, optional
        The stream length m; required for an iterable stream with ``tree=True`` (the tree, hence
        the noise, depends on it). A longer stream is refused.
    neighbouring : {"zero-out-one-row", "replace-one-row"}, default "zero-out-one-row"
        The relation the guarantee refers to (module docstring; add/remove is refused).
    clip : bool, default False
        Scale rows above the unit norm back onto the unit ball instead of refusing them.
    keep_subspaces, keep_curves : bool, default True
        False leaves out the length-m arrays (``subspaces``; ``gains`` and ``regret_curve``), so
        that release and diagnostics hold scalars only (for result records).
    calibration : {"paper", "tight"}, default "paper"
        Noise calibration (module docstring).

    Returns
    -------
    MechanismOutput
        ``components``: the final subspace V_{m+1} (d x k). ``release``: ``subspaces`` (array
        (m+1, d, k): V_1..V_{m+1}, V_t chosen before a_t; post-processing of the noisy sums), noise
        scales and the tree shape. ``diagnostics`` (not private: computed from the raw rows):
        ``gains``, ``cumulative_gain``, ``opt``, ``regret``, ``regret_curve`` (regret of the first t
        steps against the best fixed subspace of those t rows), ``n_clipped`` and tree counters.

    References
    ----------
    Dwork, Talwar, Thakurta and Zhang, "Analyze Gauss: optimal bounds for privacy-preserving
    principal component analysis", STOC 2014, section 4 and Algorithm 2.
    """
    calibration = check_calibration(calibration)
    tree = check_flag(tree, "tree")
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    sens = row_sensitivity(neighbouring)
    rows, m_known, d, clipped = _rows(X, clip)
    m = m_known if horizon is None else int(horizon)
    if m_known is not None and horizon is not None and m_known > int(horizon):
        raise PrivacyInputError(f"stream longer than horizon={horizon}")  # its length: not named
    if tree and m is None:
        raise PrivacyInputError("tree=True needs the stream length: pass an array or horizon=m")

    it = iter(rows)
    try:
        first = next(it)
    except StopIteration:
        raise PrivacyInputError("empty stream") from None
    d = first.shape[0]
    if m_known is None:
        # a stream: its second row is read (and compared with the first) before k is checked
        # against d, so that a malformed first row gets the same refusal as any other
        second = next(it, None)
        if second is not None:
            it = itertools.chain([second], it)
    k = check_k(k, d, stream=m_known is None)

    if tree:
        sigma = tree_node_noise_scale(eps, dl, m, neighbouring, calibration)
        agg = TreeAggregator(m, (d, d), noise=lambda: symmetric_gaussian(d, sigma, rng))
    else:
        sigma = (
            algorithm1_noise_scale(eps, dl, sens)
            if calibration == "paper"  # each step (eps, dl)-DP
            else algorithm2_noise_scale_tight(eps, dl, neighbouring)
        )  # under `neighbouring`
        C = np.zeros((d, d))

    V = random_orthonormal(d, k, rng)
    subspaces = [V] if keep_subspaces else []
    gains: list[float] = []
    S_true = np.zeros((d, d))
    regret_curve: list[float] = []

    t = 0
    row = first
    with single_thread_blas():
        while row is not None:
            if tree and t >= m:
                raise PrivacyInputError(f"stream longer than horizon={m}")
            g = float(np.sum((V.T @ row) ** 2))
            gains.append(g)
            outer = np.outer(row, row)
            S_true += outer
            if tree:
                agg.add(outer)
                C_hat = agg.prefix()
            else:
                C = C + outer
                C_hat = C + symmetric_gaussian(d, sigma, rng)
            V = top_k_eigenvectors(C_hat, k)
            if keep_subspaces:
                subspaces.append(V)
            w = np.linalg.eigvalsh(S_true)
            regret_curve.append(float(np.sum(w[::-1][:k])) - float(np.sum(gains)))
            t += 1
            row = next(it, None)

    opt = float(np.sum(np.linalg.eigvalsh(S_true)[::-1][:k]))
    cum = float(np.sum(gains))
    release: dict[str, Any] = {
        "status": "ok",
        "m": t,
        "tree": tree,
        "neighbouring_sensitivity": sens,
    }
    diagnostics: dict[str, Any] = {
        "cumulative_gain": cum,
        "opt": opt,
        "regret": opt - cum,
        "n_clipped": clipped[0],
    }
    if keep_curves:
        diagnostics.update(gains=np.asarray(gains), regret_curve=np.asarray(regret_curve))
    if keep_subspaces:
        release["subspaces"] = np.stack(subspaces)
    if tree:
        release.update(noise_scale=sigma, node_noise_scale=sigma, horizon=m, tree_height=agg.H)
        diagnostics.update(max_membership=max(agg.membership), n_noise_draws=agg.n_noise_draws)
        guarantee = PrivacyGuarantee(
            eps,
            dl,
            neighbouring,
            exact=True,
            note=f"tree-based aggregation: whole sequence (eps, delta)-DP "
            f"({neighbouring}: event-level stream neighbours, same positions)",
        )
    else:
        eps_total = algorithm2_composed_epsilon(eps, dl, t, sigma, neighbouring, calibration)
        release.update(
            noise_scale=sigma, per_step_epsilon=eps, per_step_delta=dl, composed_epsilon=eps_total
        )
        guarantee = PrivacyGuarantee(
            eps_total,
            dl,
            neighbouring,
            exact=False,
            note=f"Algorithm 2: each step ({eps}, {dl})-DP under {neighbouring} "
            f"(sigma = {sigma:.6g} for row sensitivity {sens:.6g}); whole "
            "sequence bounded by "
            + (
                "zCDP composition"
                if calibration == "paper"
                else "the exact Gaussian composition (dp-accounting PLD)"
            )
            + f" over {t} releases",
        )
    release["calibration"] = calibration
    return MechanismOutput(
        components=V, guarantee=guarantee, release=release, diagnostics=diagnostics
    )


def online_regret_bounds(
    m: int | np.ndarray, d: int, k: int, opt: float | np.ndarray, epsilon: float, delta: float
) -> dict[str, Any]:
    """Regret-bound *rates* of DTTZ Theorems 9 and 8 with all O(·) constants set to 1.

    Theorem 9 (Algorithm 2, ε < 1, δ < 1/m): ``k sqrt(d) log m / ε + ε OPT + 1``.
    Theorem 8 (private, tree; needs δ < 1/m², ε < 0.1, OPT > k sqrt(d) log²(m/δ)/ε²):
    ``sqrt(k OPT) d^{1/4} log²(m/δ)``.  ``theorem8_conditions`` says whether the hypotheses hold.
    """
    m = np.asarray(m, dtype=float)
    opt = np.asarray(opt, dtype=float)
    t9 = k * math.sqrt(d) * np.log(m) / epsilon + epsilon * opt + 1.0
    t8 = np.sqrt(k * opt) * d**0.25 * np.log(m / delta) ** 2
    cond8 = (
        (delta < 1.0 / m**2)
        & (epsilon < 0.1)
        & (opt > k * math.sqrt(d) * np.log(m / delta) ** 2 / epsilon**2)
    )
    cond9 = (epsilon < 1.0) & (delta < 1.0 / m)
    return {
        "theorem9": t9,
        "theorem8": t8,
        "theorem8_conditions": cond8,
        "theorem9_conditions": cond9,
    }
