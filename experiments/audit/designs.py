"""Pairs of neighbouring datasets (D, D′) for the audit, and a check that each pair is one.

* The hand-made designs of the first audit (:func:`gaussian_design`, :func:`bingham_design`,
  :func:`subspace_exact_design`, :func:`subspace_approx_design`, chosen by :func:`design_for`).
* :func:`catalogue`: many more designs per relation and mechanism — candidate sets that differ
  between D and D′, near-ties (a real subspace whose score is near the NULL score of Singhal–Steinke
  Algorithm 1), rows of norm exactly 1 and zero rows, degenerate and repeated eigenvalues, small n,
  k > 1 and d > 2.
* :func:`random_designs`: designs drawn at random (dimension, rank, base directions and counts, the
  differing rows), for the search to explore beyond the catalogue.

Every design is checked by :func:`check_neighbours` against the relation the mechanism's guarantee
declares (any name in ``mechanisms.NEIGHBOURING_RELATIONS`` at run time).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mechanisms import NEIGHBOURING_RELATIONS
from mechanisms.toolkit import ROW_NORM_TOLERANCE


@dataclass
class AuditDesign:
    """A pair of neighbouring datasets and the statistic to compare them with."""

    X1: np.ndarray
    X0: np.ndarray
    neighbouring: str
    name: str
    description: str
    statistic: str = "proj_e1"
    k: int = 1
    mechanism_params: dict = field(default_factory=dict)

    def summary(self) -> dict:
        return {
            "design": self.name,
            "design_description": self.description,
            "statistic": self.statistic,
            "d": int(self.X1.shape[1]),
            "n_D": int(self.X1.shape[0]),
            "n_Dprime": int(self.X0.shape[0]),
            "k": self.k,
            "neighbouring": self.neighbouring,
        }


def _unit(d: int, i: int) -> np.ndarray:
    e = np.zeros(d)
    e[i] = 1.0
    return e


def gaussian_design(
    neighbouring: str, *, d: int = 2, n: int = 200, row_norm: float = 1.0, position: str = "first"
) -> AuditDesign:
    """For noise added to XᵀX (MOD-SULQ, Analyze Gauss, noisy power, online PCA; also pca/random).

    Base: n − 1 rows u = (e₁ + e₂)/√2.  They make the top eigenvector sit at 45° with a large
    eigen-gap, so that the released direction is, to first order, a linear function of the
    (A₁₁ − A₂₂) entry the differing row moves — nothing the noise adds to it is lost by only
    releasing eigenvectors.  Differing row (length ``row_norm``, at the ``position`` "first" or
    "last" row): replace-one-row: r·e₁ in D vs r·e₂ in D'; add-remove-one-row: r·e₁ present in D,
    absent in D' (a true deletion: later rows move up); zero-out-one-row (the event-level relation
    of a stream): r·e₁ vs the zero row at the same position; entry-level: r·e₁ in D vs the zero
    row in D' (XᵀX differs in the single entry (1, 1)).  Statistic ‖V̂ᵀe₁‖².
    """
    if d < 2:
        raise ValueError("d must be >= 2")
    u = (_unit(d, 0) + _unit(d, 1)) / math.sqrt(2.0)
    base = np.tile(u, (n - 1, 1))
    a, b, z = row_norm * _unit(d, 0), row_norm * _unit(d, 1), np.zeros(d)

    def put(row):
        return np.vstack([row, base]) if position == "first" else np.vstack([base, row])

    if neighbouring in ("replace-one-row", "none"):
        X1, X0, diff = put(a), put(b), f"{row_norm:g}*e1 vs {row_norm:g}*e2"
        neighbouring = "replace-one-row"
    elif neighbouring == "add-remove-one-row":
        X1, X0, diff = put(a), base.copy(), f"{row_norm:g}*e1 added"
    elif neighbouring in ("zero-out-one-row", "entry-level"):
        X1, X0, diff = put(a), put(z), f"{row_norm:g}*e1 vs zero row"
    else:
        raise ValueError(f"no Gaussian design for neighbouring {neighbouring!r}")
    return AuditDesign(
        X1,
        X0,
        neighbouring,
        "gaussian",
        f"{n - 1} rows (e1+e2)/sqrt2 in R^{d}; differing row ({position}) {diff}",
        "proj_e1",
    )


def bingham_design(
    epsilon: float,
    *,
    d: int = 2,
    n: int | None = None,
    row_norm: float = 1.0,
    base_concentration: float = 3.0,
) -> AuditDesign:
    """For the exponential mechanism with score Σ(vᵀx)² (PPCA, iterative PPCA), replace-one-row.

    Density ∝ exp(ε/2 · Σ (vᵀx)²).  Row r·e₁ in D vs r·e₂ in D'.  On a symmetric base the
    normalising constants cancel and the log density ratio ε/2 (v₁² − v₂²) only reaches ε/2; a
    base of total squared mass w = 2·base_concentration/ε along e₂ makes Z_D'/Z_D approach
    e^{ε/2} too, so that the ratio near v = e₁ approaches e^ε (the claim) while that region keeps
    enough probability to be seen in a few thousand trials (concentration ≈ 3 maximises the
    expected audit for ε = 1..4 and 10⁴ trials, d = 2).  Statistic ‖V̂ᵀe₁‖² = v₁².
    """
    w = 2.0 * base_concentration / float(epsilon)
    full = int(math.floor(w))
    rows = [_unit(d, 1)] * full
    frac = w - full
    if frac > 1e-12:
        rows.append(math.sqrt(frac) * _unit(d, 1))
    n_rows = len(rows) + 1
    n = n_rows if n is None else max(int(n), n_rows)
    rows += [np.zeros(d)] * (n - n_rows)
    base = np.array(rows).reshape(-1, d)
    X1 = np.vstack([row_norm * _unit(d, 0), base])
    X0 = np.vstack([row_norm * _unit(d, 1), base])
    return AuditDesign(
        X1,
        X0,
        "replace-one-row",
        "bingham",
        f"base of squared mass {w:.4g} along e2 (+{n - n_rows} zero rows) in R^{d}; "
        f"differing row {row_norm:g}*e1 vs {row_norm:g}*e2",
        "proj_e1",
    )


def bingham_expected_bound(
    epsilon: float,
    w: float,
    trials: int,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
    grid: int = 200_000,
) -> dict:
    """The expected audit of an exponential mechanism on the heavy-axis pair, from its exact d = 2 law.

    The pair is :func:`bingham_design`'s (row e₁ vs e₂ on a base of squared mass w along e₂, k = 1);
    the mechanism draws v = (cos θ, sin θ) with density ∝ exp(ε/2 · Σ(vᵀx)²) in θ (the Bingham law
    PPCA samples, run at ``epsilon``, which may differ from its claim).  For every event
    {‖Vᵀe₁‖² ≥ t} the Clopper–Pearson bound that ``trials`` runs per dataset give at the exact
    probabilities (expected counts) is computed; the best is returned.

    Parameters
    ----------
    epsilon : float
        The ε the mechanism actually runs at (its true ε).
    w : float
        The base's squared mass along e₂.
    trials : int
        Runs per dataset.
    delta : float, default 0.0
        The claimed δ.
    confidence : float, default 0.95
        Confidence of the bound.
    grid : int, default 200000
        Points of the θ grid on [0, π) (Riemann sums of the densities).

    Returns
    -------
    dict
        ``expected_epsilon_lower``, the event's ``threshold`` t and its probabilities ``p_D``,
        ``p_Dprime``.
    """
    from experiments.audit.bounds import epsilon_lower_bound

    theta = np.arange(int(grid)) * (math.pi / int(grid))
    c2 = np.cos(theta) ** 2
    c = float(epsilon) / 2.0
    logs = (c * (c2 + float(w) * (1.0 - c2)), c * (float(w) + 1.0) * (1.0 - c2))
    p1, p0 = (np.exp(lg - lg.max()) / np.exp(lg - lg.max()).sum() for lg in logs)
    order = np.argsort(-c2, kind="stable")
    P1, P0 = np.cumsum(p1[order]), np.cumsum(p0[order])  # P[‖Vᵀe₁‖² ≥ t] down the sorted t
    idx = np.unique(np.geomspace(1, order.size - 1, 2000).astype(int))
    n = int(trials)
    eps = np.asarray(
        epsilon_lower_bound(P1[idx] * n, n, P0[idx] * n, n, float(delta), 1.0 - float(confidence))
    )
    i = int(np.argmax(eps))
    return {
        "expected_epsilon_lower": float(eps[i]),
        "threshold": float(c2[order][idx[i]]),
        "p_D": float(P1[idx[i]]),
        "p_Dprime": float(P0[idx[i]]),
    }


def subspace_exact_design(epsilon: float, delta: float, *, d: int = 2, n2: int = 3) -> AuditDesign:
    """For Singhal–Steinke's exact case with the propose-test-release test (replace-one-row, k = 1).

    D: n₂ points on e₂ and n₁ = n₂ + ⌊τ⌋ on e₁ (τ the test's public threshold), so the gap is ⌊τ⌋ and
    the release probability sits where the truncated Laplace tail is exponential; D′: one e₁ point
    moved to e₂, the gap falls by 2 (its full sensitivity) and the release probability by the factor
    e^ε.  Statistic ‖V̂ᵀe₁‖² (⊥ → −1): the event "the output is span(e₁)" is e^ε likelier under D.
    """
    from mechanisms.subspace import exact_ptr_threshold

    n1 = int(n2) + int(math.floor(exact_ptr_threshold(epsilon, delta)))
    e1, e2 = _unit(d, 0), _unit(d, 1)
    X1 = np.vstack([np.tile(e1, (n1, 1)), np.tile(e2, (n2, 1))])
    X0 = np.vstack([np.tile(e1, (n1 - 1, 1)), np.tile(e2, (n2 + 1, 1))])
    return AuditDesign(
        X1,
        X0,
        "replace-one-row",
        "subspace_exact",
        f"{n1} points on e1 and {n2} on e2 (gap at the test threshold) vs one moved from e1 to e2 "
        f"(R^{d})",
        "proj_e1",
    )


def subspace_approx_design(epsilon: float, delta: float, *, d: int = 2) -> AuditDesign:
    """For Singhal–Steinke's subsample-and-aggregate (Algorithm 2, replace-one-row, k = 1).

    t blocks of m = 3 rows (t from the mechanism's parameters): ⌈t/2⌉ blocks spanning e₁ (rows
    e₁, e₁, e₁) and the rest spanning e₂, except that the last e₁ block is (e₁, e₁, e₂) in D and
    (e₁, e₂, e₂) in D' — one row changed flips that block's subspace, moving one point of the
    stable histogram from the e₁ cell to the e₂ cell, with counts around the t/2 release rule.
    """
    from mechanisms.subspace import approx_parameters

    t = int(approx_parameters(10**6, d, 1, epsilon, delta, 0.01)["t"])
    h = (t + 1) // 2
    e1, e2 = _unit(d, 0), _unit(d, 1)
    blocks1 = [np.array([e1, e1, e1])] * (h - 1)
    blocks2 = [np.array([e2, e2, e2])] * (t - h)
    X1 = np.vstack(blocks1 + [np.array([e1, e1, e2])] + blocks2)
    X0 = np.vstack(blocks1 + [np.array([e1, e2, e2])] + blocks2)
    return AuditDesign(
        X1,
        X0,
        "replace-one-row",
        "subspace_approx",
        f"{t} blocks of 3 rows: {h} spanning e1, {t - h} spanning e2; one row of the last "
        f"e1 block changed e1 -> e2 flips it (R^{d})",
        "proj_e1",
    )


def eigenvalue_swap_design(relation: str, *, d: int = 2, n: int = 2) -> AuditDesign:
    """The pair on which two eigenvalues of XᵀX move by 1 each, in opposite directions.

    D: the differing row e₁, then e₂ and n − 2 zero rows; D′ (replace-one-row): e₂ in place of e₁.
    λ(XᵀX) = (1, 1, 0, …) under D and (2, 0, 0, …) under D′: the largest eigenvalue moves by +1 and
    the second by −1, an L1 change of 2, the replace-one-row sensitivity of the eigenvalues
    (Lidskii; docs/amin_cov.md, "Guarantee").  No single eigenvalue can move by more than 1 (Weyl),
    so a pair that attains the sensitivity 2 must move two of them: a mechanism that releases fewer
    than two eigenvalues does not see its full sensitivity here.  Under another relation D′ is built
    by :func:`pair_design` (add-remove: the row removed, λ = (1, 0, …): an L1 change of 1).
    """
    if d < 2 or n < 2:
        raise ValueError("the eigenvalue swap needs d >= 2 and n >= 2")
    base = np.zeros((n - 1, d))
    base[0, 1] = 1.0
    des = pair_design(
        base,
        _unit(d, 0),
        _unit(d, 1),
        relation,
        "eigenvalue_swap",
        f"e1 (D) or e2 (D') then e2 and {n - 2} zero rows in R^{d}: "
        "eigenvalues of X'X (1, 1) vs (2, 0)",
        k=1,
    )
    des.statistic = "likelihood-ratio"
    return des


#: which design suits which mechanism (anything not listed uses the Gaussian design)
DESIGN_OF = {
    "ppca": "bingham",
    "ppca_iterative": "bingham",
    "amin_cov": "bingham",  # its eigenvector is an exponential-mechanism draw with score Σ(vᵀx)²
    "subspace_exact": "subspace_exact",
    "subspace_approx": "subspace_approx",
    # the peers release eigenvectors drawn by a (vector) Bingham sampler, like PPCA
    "diffprivlib_pca": "bingham",
    "opendp_pca": "bingham",
}
#: rows of the catalogue's large zero-base pair, and the catalogue's default row cap: DP-PCA's private
#: centre and clip radius need thousands of rows before a missing clip moves its release
#: (with its clip removed, k-DP-PCA's search certifies 0.19 on the pair at n = 200, and 3.77 unaided,
#: winning on this pair, against a claim of 2)
LARGE_ZERO_BASE_ROWS = 4000
#: extra mechanism parameters for the audit (cheap and hard settings)
AUDIT_PARAMS = {
    "ppca": {"sampler": "exact"},
    "noisy_power": {"iterations": 1},  # with p = d the earlier products carry no information
    # one minibatch of all the rows (of each round's rows for k-DP-PCA), as the white-box audit runs
    # them: the differing row's share of the one private mean is largest
    "dp_pca": {"iterations": 1},
    "k_dp_pca": {"iterations": 1},
    "online_pca": {"keep_subspaces": False},
    "streaming_power": {"block_size": 50},  # 4 blocks of 50 rows; the differing row is in the last
}
#: Gaussian-design options per mechanism (online PCA runs one eigendecomposition per row; the
#: streaming power method's last block matters most)
GAUSSIAN_OPTIONS = {"online_pca": {"n": 32}, "streaming_power": {"n": 200, "position": "last"}}


def design_for(
    name: str,
    neighbouring: str,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    d: int = 2,
    n: int | None = None,
    row_norm: float = 1.0,
) -> AuditDesign:
    """The hard pair of datasets for mechanism ``name`` under ``neighbouring``."""
    if neighbouring == "none":  # no claim about neighbours (pca, random): audit under replacement
        neighbouring = "replace-one-row"
    kind = DESIGN_OF.get(name, "gaussian")
    replace = neighbouring == "replace-one-row"
    if kind == "bingham" and replace and epsilon is not None:
        return bingham_design(epsilon, d=d, n=n, row_norm=row_norm)
    if kind == "subspace_exact" and replace and epsilon and delta:
        return subspace_exact_design(epsilon, delta, d=d)
    if kind == "subspace_approx" and replace and epsilon and delta:
        return subspace_approx_design(epsilon, delta, d=d)
    opts = dict(GAUSSIAN_OPTIONS.get(name, {}))
    if n is not None:
        opts["n"] = n
    return gaussian_design(neighbouring, d=d, row_norm=row_norm, **opts)


# ---------------------------------------------------------------------------------------------
# Is a pair neighbouring under a relation?
# ---------------------------------------------------------------------------------------------


class NotNeighbours(ValueError):
    """A design's two datasets are not neighbours under the relation it claims."""


def check_neighbours(
    X1: np.ndarray, X0: np.ndarray, relation: str, *, row_norm_bound: float = 1.0
) -> None:
    """Raise :class:`NotNeighbours` unless (X1, X0) is a neighbouring pair under ``relation``.

    Accepts every name in ``NEIGHBOURING_RELATIONS`` at run time: ``replace-one-row`` (same n, one
    row differs), ``add-remove-one-row`` (one dataset is the other with one row inserted at some
    position, the later rows moving), ``zero-out-one-row`` (same n, one position holds a row in one
    dataset and the zero vector in the other), ``entry-level`` (XᵀX differ in exactly one entry, by at
    most 1; a symmetric off-diagonal change is two entries) and ``none`` (checked as replace-one-row).
    Rows must have L2 norm <= ``row_norm_bound`` (the mechanisms' bound).
    """
    if relation not in NEIGHBOURING_RELATIONS:
        raise ValueError(
            f"unknown neighbouring relation {relation!r}; valid: {sorted(NEIGHBOURING_RELATIONS)}"
        )
    X1, X0 = np.asarray(X1, float), np.asarray(X0, float)
    if X1.ndim != 2 or X0.ndim != 2 or X1.shape[1] != X0.shape[1]:
        raise NotNeighbours(
            f"shapes {X1.shape} and {X0.shape} are not two datasets of the same dimension"
        )
    for lab, X in (("D", X1), ("D'", X0)):
        nrm = np.linalg.norm(X, axis=1)
        if np.any(nrm > row_norm_bound * (1 + ROW_NORM_TOLERANCE)):
            raise NotNeighbours(f"{lab} has a row of norm {nrm.max():.6g} > {row_norm_bound}")
    rel = "replace-one-row" if relation == "none" else relation
    if rel in ("replace-one-row", "zero-out-one-row"):
        if X1.shape != X0.shape:
            raise NotNeighbours(
                f"{rel} needs datasets of the same size, got {X1.shape[0]} and {X0.shape[0]} rows"
            )
        rows = np.flatnonzero(np.any(X1 != X0, axis=1))
        if rows.size != 1:
            raise NotNeighbours(f"{rel} needs exactly one differing row, got {rows.size}")
        if rel == "zero-out-one-row":
            i = rows[0]
            if np.any(X1[i] != 0) and np.any(X0[i] != 0):
                raise NotNeighbours(
                    "zero-out-one-row: neither version of the differing row is the zero vector"
                )
    elif rel == "add-remove-one-row":
        big, small = (X1, X0) if X1.shape[0] > X0.shape[0] else (X0, X1)
        if big.shape[0] != small.shape[0] + 1:
            raise NotNeighbours(
                f"add-remove-one-row needs sizes differing by one, got {X1.shape[0]} and {X0.shape[0]}"
            )
        mism = np.flatnonzero(np.any(big[:-1] != small, axis=1))
        i = int(mism[0]) if mism.size else small.shape[0]  # first position where they disagree
        if not np.array_equal(np.delete(big, i, axis=0), small):
            raise NotNeighbours(
                "add-remove-one-row: removing one row of the larger dataset does not give the other"
            )
    elif rel == "entry-level":
        if X1.shape[0] != X0.shape[0] and abs(X1.shape[0] - X0.shape[0]) != 1:
            raise NotNeighbours("entry-level pairs here differ by at most one row")
        diff = X1.T @ X1 - X0.T @ X0
        nz = np.abs(diff) > 1e-12
        if int(nz.sum()) != 1 or float(np.abs(diff).max()) > 1 + 1e-9:
            raise NotNeighbours(
                f"entry-level needs XᵀX to differ in one entry by <= 1, got {int(nz.sum())} entries"
            )
    else:  # a relation added to the list after this audit was written
        raise NotImplementedError(
            f"the audit has no neighbour check for relation {relation!r}; add one to "
            "experiments/audit/designs.py:check_neighbours"
        )


# ---------------------------------------------------------------------------------------------
# A catalogue of designs
# ---------------------------------------------------------------------------------------------


def pair_design(
    base: np.ndarray,
    a: np.ndarray,
    b: np.ndarray | None,
    relation: str,
    name: str,
    description: str,
    *,
    k: int = 1,
    position: int = 0,
) -> AuditDesign:
    """D = base with row ``a`` inserted at ``position``; D′ per ``relation``: ``b`` there (replace),
    nothing (add-remove), the zero row (zero-out, entry-level).  Checked with :func:`check_neighbours`."""
    d = a.shape[0]
    base = np.asarray(base, float).reshape(-1, d)
    pos = position if position >= 0 else base.shape[0] + 1 + position

    def put(row):
        return np.insert(base, pos, row, axis=0)

    rel = "replace-one-row" if relation == "none" else relation
    if rel == "replace-one-row":
        if b is None:
            raise ValueError("replace-one-row needs the replacement row b")
        X1, X0 = put(a), put(b)
    elif rel == "add-remove-one-row":
        X1, X0 = put(a), base.copy()
    elif rel in ("zero-out-one-row", "entry-level"):
        X1, X0 = put(a), put(np.zeros(d))
    else:
        raise NotImplementedError(f"no pair construction for relation {relation!r}")
    check_neighbours(X1, X0, rel)
    if rel != "replace-one-row":
        description += (
            f" ({rel}: D′ has {'no row' if rel == 'add-remove-one-row' else 'the zero row'} there)"
        )
    return AuditDesign(X1, X0, rel, name, description, "features", k=k)


def _rows(*groups) -> np.ndarray:
    """Stack (count, row) groups into a matrix."""
    mats = [np.tile(np.asarray(r, float), (int(c), 1)) for c, r in groups if int(c) > 0]
    return np.vstack(mats) if mats else np.zeros((0, np.asarray(groups[0][1]).shape[0]))


def near_tie_counts(null_score: float) -> list[int]:
    """Counts around a public score threshold: ⌊S⌋ − 1, ⌊S⌋, ⌈S⌉, ⌈S⌉ + 1 (distinct, >= 1)."""
    f, c = math.floor(null_score), math.ceil(null_score)
    return sorted({max(1, v) for v in (f - 1, f, c, c + 1)})


def count_scales(name: str, epsilon: float | None, delta: float | None, k: int = 1) -> list[int]:
    """Base sizes worth trying for mechanism ``name``: small n always; for Singhal–Steinke's exact
    estimator also counts around its (public) NULL score, where scores tie (near-ties)."""
    scales = [1, 2, 5, 30]
    if name.startswith("subspace_exact") and epsilon and delta:
        from mechanisms.subspace import exact_null_score

        scales += near_tie_counts(exact_null_score(max(1, k - 1), float(epsilon), float(delta)))
    return sorted(set(scales))


def heavy_axis_masses(epsilon: float | None) -> list[float]:
    """Base masses w of the heavy-axis family: w = 2c/ε for base concentrations c = 3, 1.5, 0.75 when the
    claim ε is known, else 1 and 3.

    :func:`bingham_design` explains the pair: for an exponential mechanism with score Σ(vᵀx)² run at
    ε′, the base concentration ε′w/2 ≈ 3 maximises the expected audit, so these masses suit a true ε′
    of 1, 2 and 4 times the claim (the search is not told which).
    """
    if not epsilon or not math.isfinite(float(epsilon)):
        return [1.0, 3.0]
    return [2.0 * c / float(epsilon) for c in (3.0, 1.5, 0.75)]


def _heavy_axis_base(w: float, d: int) -> np.ndarray:
    """Rows along e₂ of total squared mass w: ⌊w⌋ rows e₂ and one row √(w − ⌊w⌋)·e₂."""
    full = int(math.floor(w))
    rows = [_unit(d, 1)] * full
    if w - full > 1e-12:
        rows.append(math.sqrt(w - full) * _unit(d, 1))
    return np.array(rows).reshape(-1, d)


def catalogue(
    relation: str,
    *,
    name: str = "",
    epsilon: float | None = None,
    delta: float | None = None,
    max_rows: int = LARGE_ZERO_BASE_ROWS,
) -> list[AuditDesign]:
    """The catalogue of structured designs for ``relation`` (every one checked to be a neighbouring pair).

    Families (d, k in the name): rows of norm exactly 1 against zero rows (n up to 200, and, last,
    n = :data:`LARGE_ZERO_BASE_ROWS`); a unit row against the zero row; repeated top eigenvalues
    broken by the differing row; a rank-one base with differing rows outside its span (the candidate
    spans of D and D′ differ); near-ties of a base count with a public threshold
    (:func:`count_scales`); a heavy base along one axis with the differing row across it
    (:func:`heavy_axis_masses`); small n; k = 2 with d = 4; d = 5; under replacement, the
    subspace-release family (:func:`subspace_release_family`: common planes, near-duplicate directions,
    exact rescalings).
    """
    rel = "replace-one-row" if relation == "none" else relation
    out: list[AuditDesign] = []
    e = lambda d, i: _unit(d, i)  # noqa: E731

    def add(base, a, b, nm, desc, k=1, position=0):
        if base.shape[0] + 1 > max_rows:
            return
        try:
            out.append(pair_design(base, a, b, rel, nm, desc, k=k, position=position))
        except NotNeighbours:
            pass

    scales = count_scales(name, epsilon, delta)

    def add_zero_base(n):
        add(
            np.zeros((n - 1, 2)),
            e(2, 0),
            e(2, 1),
            f"zero-base n={n} d=2",
            f"{n - 1} zero rows; e1 vs e2",
        )

    # unit rows and zero rows
    for n in (2, 30, 200):
        add_zero_base(n)
    add(
        np.tile((e(2, 0) + e(2, 1)) / math.sqrt(2), (199, 1)),
        e(2, 0),
        e(2, 1),
        "axis45 n=200 d=2",
        "199 rows (e1+e2)/sqrt2; e1 vs e2",
    )
    if rel == "replace-one-row":
        add(
            np.zeros((29, 2)),
            e(2, 0),
            np.zeros(2),
            "unit-vs-zero n=30 d=2",
            "29 zero rows; e1 vs the zero row",
        )
        add(
            _rows((15, e(2, 0)), (14, e(2, 1))),
            e(2, 0),
            (e(2, 0) + e(2, 1)) / math.sqrt(2),
            "oblique n=30 d=2",
            "15 e1 + 14 e2; e1 vs (e1+e2)/sqrt2",
        )
    # repeated (degenerate) eigenvalues, broken by the differing row
    for m in (1, 10, 100):
        add(
            _rows((m, e(2, 0)), (m, e(2, 1))),
            e(2, 0),
            e(2, 1),
            f"repeated-eig n={2 * m + 1} d=2",
            f"{m} e1 + {m} e2 (lambda1 = lambda2); e1 vs e2",
        )
        add(
            _rows((m, e(3, 0)), (m, e(3, 1)), (m, e(3, 2))),
            e(3, 0),
            e(3, 1),
            f"isotropic n={3 * m + 1} d=3",
            f"{m} rows on each axis of R^3; e1 vs e2",
        )
    # rank-one base, differing rows outside its span: candidate sets differ between D and D'
    for c in sorted(set(scales)):
        if c + 1 > max_rows:
            continue
        add(
            np.tile(e(3, 0), (c, 1)),
            e(3, 1),
            e(3, 2),
            f"rank1-base c={c} d=3",
            f"{c} rows e1; e2 vs e3",
        )
        add(
            _rows((c, e(2, 0)), (max(1, c // 2), e(2, 1))),
            e(2, 0),
            e(2, 1),
            f"two-axes c={c} d=2",
            f"{c} e1 + {max(1, c // 2)} e2; e1 vs e2",
        )
    # a heavy base along one axis, the differing row across it: the hard pair of an exponential
    # mechanism with score Σ(vᵀx)² (bingham_design), at base masses for true ε from 1 to 4 x the claim
    for w in heavy_axis_masses(epsilon):
        add(
            _heavy_axis_base(w, 2),
            e(2, 0),
            e(2, 1),
            f"heavy-axis w={w:.4g} d=2",
            f"base of squared mass {w:.4g} along e2; e1 vs e2",
        )
    # small n
    add(
        np.array([e(2, 0)]),
        e(2, 1),
        (e(2, 0) + e(2, 1)) / math.sqrt(2),
        "small n=2 d=2",
        "e1; e2 vs (e1+e2)/sqrt2",
    )
    add(np.array([e(3, 0), e(3, 1)]), e(3, 2), e(3, 0), "small n=3 d=3", "e1, e2; e3 vs e1")
    # k = 2, d = 4 and d = 5
    for c in (1, 10):
        add(
            _rows((c, e(4, 0)), (c, e(4, 1))),
            e(4, 2),
            e(4, 3),
            f"k2 c={c} d=4",
            f"{c} e1 + {c} e2 in R^4; e3 vs e4 (k = 2)",
            k=2,
        )
    add(np.tile(e(5, 0), (30, 1)), e(5, 1), e(5, 4), "d5 n=31", "30 rows e1 in R^5; e2 vs e5")
    if rel == "replace-one-row":
        for m in release_scales(name, epsilon, delta):
            for base, a, b, nm, desc, k in subspace_release_family(m):
                add(base, a, b, nm, desc, k=k)
    # the zero-base pair at large n, last (a time budget drops it first): a mechanism that clips
    # around a private centre shrinks its clip radius with n, so a missing clip shows only here
    add_zero_base(LARGE_ZERO_BASE_ROWS)
    return out


def release_scales(name: str, epsilon: float | None, delta: float | None) -> list[int]:
    """Base sizes for the subspace-release family: 60 always, and for Singhal–Steinke's exact estimator
    the size at which its test releases surely (2τ + 2, τ its public threshold)."""
    scales = [60]
    if name.startswith("subspace_exact") and epsilon and delta:
        from mechanisms.subspace import exact_ptr_threshold

        scales.append(int(math.ceil(2 * exact_ptr_threshold(float(epsilon), float(delta)))) + 2)
    return sorted(set(scales))


def _in_plane(angles) -> np.ndarray:
    a = np.atleast_1d(np.asarray(angles, float))
    return np.c_[np.cos(a), np.sin(a), np.zeros(a.size)]


def subspace_release_family(m: int) -> list[tuple]:
    """Pairs for leaks through the released bits of a subspace estimator (d = 3, base of m − 1 rows).

    * rows on a common plane in general position, one replaced by another point of the same plane
      (a frame built from particular rows changes; the subspace does not);
    * near-duplicate directions, 1e-9, 2e-7 and 1e-5 rad from a repeated direction (around a
      membership tolerance and a rounding of keys), against that direction itself, for k = 1 and k = 2;
    * a row replaced by an exact multiple of itself (5x and 7x of a direction with short mantissas:
      the same line, other float bits after normalisation), for k = 1 and k = 2.
    Each entry is (base, row in D, row in D′, name, description, k); the differing row comes first.
    """
    out = []
    ang = np.linspace(0.1, 3.0, m)
    out.append(
        (
            _in_plane(ang[1:]),
            _in_plane(ang[0])[0],
            _in_plane(1.3)[0],
            f"coplanar m={m} k=2 d=3",
            f"{m - 1} in-plane rows at angles linspace(0.1, 3, {m}); angle 0.1 vs 1.3 (same plane)",
            2,
        )
    )
    e1 = np.array([1.0, 0.0, 0.0])
    h = (m - 1) // 2
    generic = _in_plane(np.linspace(0.3, 2.9, m - 1 - h))
    for theta in (1e-9, 2e-7, 1e-5):
        near = _in_plane(theta)[0]
        out.append(
            (
                np.vstack([np.tile(e1, (h, 1)), generic]),
                near,
                e1,
                f"near-dup {theta:g} m={m} k=2 d=3",
                f"{h} rows e1 + {m - 1 - h} in-plane rows; direction {theta:g} rad from e1 vs e1",
                2,
            )
        )
        out.append(
            (
                np.tile(e1, (m - 1, 1)),
                near,
                e1,
                f"near-dup {theta:g} m={m} k=1 d=3",
                f"{m - 1} rows e1; direction {theta:g} rad from e1 vs e1",
                1,
            )
        )
    v = np.array([0.0625, 0.03125, -0.0625])  # short mantissas: 5v and 7v are exact
    w = np.array([0.03125, -0.0625, 0.0])
    for c in (5.0, 7.0):
        out.append(
            (
                np.tile(v, (m - 1, 1)),
                c * v,
                v,
                f"rescaled {c:g}x m={m} k=1 d=3",
                f"{m - 1} rows v; {c:g}v vs v (same line)",
                1,
            )
        )
        plane = np.vstack([np.tile(v, (h, 1)), np.tile(w, (m - 1 - h, 1))])
        out.append(
            (
                plane,
                c * v,
                v,
                f"rescaled {c:g}x m={m} k=2 d=3",
                f"{h} rows v + {m - 1 - h} rows w; {c:g}v vs v (same line)",
                2,
            )
        )
    return out


def random_designs(
    relation: str,
    count: int,
    rng: np.random.Generator,
    *,
    name: str = "",
    epsilon: float | None = None,
    delta: float | None = None,
    max_rows: int = 400,
    k_max: int = 2,
) -> list[AuditDesign]:
    """``count`` random designs: d ∈ {2, 3, 4}, k ∈ {1, .., min(k_max, d − 1)}, a base of one to three
    directions (an axis or a uniformly random unit vector) with counts drawn from
    :func:`count_scales` (± 1), and differing rows each drawn among: a fresh axis, a base direction,
    a random unit vector, a random vector of norm < 1, the zero row.  Positions first or last."""
    rel = "replace-one-row" if relation == "none" else relation
    scales = [s for s in count_scales(name, epsilon, delta) if s < max_rows]
    out: list[AuditDesign] = []
    tries = 0
    while len(out) < count and tries < 50 * count:
        tries += 1
        d = int(rng.choice([2, 3, 4]))
        k = int(rng.integers(1, min(k_max, d - 1) + 1))
        dirs = []
        for _ in range(int(rng.integers(1, 4))):
            if rng.random() < 0.5:
                v = _unit(d, int(rng.integers(d)))
            else:
                v = rng.standard_normal(d)
                v /= np.linalg.norm(v)
            dirs.append(v)
        counts = [max(0, int(rng.choice(scales)) + int(rng.integers(-1, 2))) for _ in dirs]
        if sum(counts) + 1 > max_rows or sum(counts) == 0:
            continue
        if k > 1 and sum(counts) > 40:  # the exact estimator's search is combinatorial in C(n, k)
            k = 1
        base = _rows(*zip(counts, dirs))
        base = base[rng.permutation(base.shape[0])]

        def draw_row(allow_zero: bool):
            c = int(rng.integers(5 if allow_zero else 4))
            if c == 0:
                return _unit(d, int(rng.integers(d))), "axis"
            if c == 1:
                return dirs[int(rng.integers(len(dirs)))].copy(), "base direction"
            if c == 2:
                v = rng.standard_normal(d)
                return v / np.linalg.norm(v), "random unit"
            if c == 3:
                v = rng.standard_normal(d)
                return v / np.linalg.norm(v) * rng.uniform(0.2, 1.0), "random short"
            return np.zeros(d), "zero"

        a, la = draw_row(False)
        b, lb = draw_row(rel == "replace-one-row")
        if np.allclose(a, b):
            continue
        pos = 0 if rng.random() < 0.5 else -1
        desc = (
            f"random: R^{d}, k={k}, base counts {counts} on {len(dirs)} direction(s); differing row {la} "
            f"vs {lb if rel == 'replace-one-row' else rel}, position {'first' if pos == 0 else 'last'}"
        )
        try:
            out.append(pair_design(base, a, b, rel, f"random#{len(out)}", desc, k=k, position=pos))
        except NotNeighbours:
            continue
    return out
