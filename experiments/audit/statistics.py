"""Reducing one mechanism output (a d x k basis V, or None for ⊥) to numbers an event can test.

``STATISTICS`` holds the named scalar statistics of the hand-made designs.  :func:`output_features`
computes, for the automatic search (:mod:`.search`), a whole vector of statistics at once:

* ``bottom``: 1 if the output is ⊥ (``components is None``), else 0;
* ``proj[r]`` = ‖Vᵀr‖² for every reference direction r (coordinate axes, the directions of the
  differing rows, random directions drawn once per design); ⊥ maps to −1;
* ``span[R]`` = ‖VᵀR‖_F² = Σ cos² of the principal angles between span(V) and a reference
  subspace R, and ``angle[R]`` = cos² of the *largest* principal angle (σ_min(VᵀR)²; equals 1
  exactly when span(V) ⊆ span(R), i.e. "the output is that candidate span" for dim R = k); ⊥ → −1;
* ``col1[r]`` = r·v₁, the signed projection of the output's *first column* on each reference
  direction: a frame statistic, not invariant under rotations inside span(V) or sign flips, so it
  sees a frame that depends on which rows span the subspace; ⊥ → −2.

The search (:mod:`.search`) adds statistics of the exact release that need the calibration runs:
``same[D]`` / ``same[D']`` = 1 when the output equals, bit for bit, the most frequent non-⊥ output
under D (resp. D′) in the calibration runs, and ``near[D]`` / ``near[D']`` the same after rounding
every entry to 9 decimals (:class:`ModalRelease`).

Events are one-sided thresholds on one of these numbers, so e.g. "the output equals span(e₂)" is
``angle[e₂] ≥ 1 − 1e-9``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


def _proj(V: np.ndarray | None, i: int) -> float:
    if V is None:
        return -1.0
    return float(np.sum(np.asarray(V)[i] ** 2))


#: name -> function(components) -> float (⊥ outputs, components None, map to -1)
STATISTICS: dict[str, Callable[[np.ndarray | None], float]] = {
    "proj_e1": lambda V: _proj(V, 0),  # ‖V̂ᵀe₁‖²
    "proj_e1_minus_e2": lambda V: -2.0 if V is None else _proj(V, 0) - _proj(V, 1),
}


# ---------------------------------------------------------------------------------------------
# Families of statistics for the automatic search
# ---------------------------------------------------------------------------------------------


def _unit_rows(M: np.ndarray) -> np.ndarray:
    M = np.atleast_2d(np.asarray(M, float))
    nrm = np.linalg.norm(M, axis=1)
    return M[nrm > 1e-12] / nrm[nrm > 1e-12, None]


def _orth(B: np.ndarray) -> np.ndarray | None:
    """Orthonormal basis of the column span of B (d x j), None if B is zero."""
    U, s, _ = np.linalg.svd(np.asarray(B, float), full_matrices=False)
    r = int(np.sum(s > 1e-9 * max(1.0, s[0] if s.size else 1.0)))
    return U[:, :r] if r else None


@dataclass
class FeatureSet:
    """Reference directions and subspaces defining a vector of statistics of an output."""

    directions: np.ndarray  # m x d, unit rows
    direction_names: list[str]
    subspaces: list[np.ndarray] = field(default_factory=list)  # each d x j orthonormal
    subspace_names: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return (
            ["bottom"]
            + [f"proj[{n}]" for n in self.direction_names]
            + [f"span[{n}]" for n in self.subspace_names]
            + [f"angle[{n}]" for n in self.subspace_names]
            + [f"col1[{n}]" for n in self.direction_names]
        )

    def __call__(self, V: np.ndarray | None) -> np.ndarray:
        m, s = len(self.direction_names), len(self.subspace_names)
        if V is None:
            return np.concatenate([[1.0], -np.ones(m + 2 * s), -2.0 * np.ones(m)])
        V = np.asarray(V, float)
        proj = np.sum((self.directions @ V) ** 2, axis=1)
        span, angle = np.empty(s), np.empty(s)
        for i, R in enumerate(self.subspaces):
            sv = np.linalg.svd(V.T @ R, compute_uv=False)
            span[i] = float(np.sum(sv**2))
            # largest principal angle between span(V) and R (over the smaller of the two dimensions)
            angle[i] = float(sv.min() ** 2) if sv.size else 0.0
        col1 = self.directions @ V[:, 0]
        return np.concatenate([[0.0], proj, span, angle, col1])


def design_features(
    X1: np.ndarray,
    X0: np.ndarray,
    k: int,
    *,
    n_random: int = 4,
    rng: np.random.Generator | None = None,
) -> FeatureSet:
    """The statistics the search tries on a design: built from the two datasets only (never told a bug).

    Directions: the coordinate axes, every distinct row of the symmetric difference of the two
    datasets (the rows that differ), the top eigenvector of each dataset, and ``n_random`` random
    unit directions.  Subspaces (dimension k): span of the differing rows taken k at a time, the top-k
    eigenspace of each dataset, and the span of each distinct data direction padded with its top
    eigenvectors (so that "the output is a candidate span" can be an event).
    """
    rng = np.random.default_rng(0) if rng is None else rng
    d = X1.shape[1]
    dirs, names = [np.eye(d)[i] for i in range(d)], [f"e{i + 1}" for i in range(d)]

    def add_dir(v, name):
        v = np.asarray(v, float)
        nv = np.linalg.norm(v)
        if nv < 1e-12:
            return
        v = v / nv
        if any(abs(abs(float(v @ w)) - 1.0) < 1e-9 for w in dirs):
            return
        dirs.append(v)
        names.append(name)

    diff = _differing_rows(X1, X0)
    for j, r in enumerate(diff):
        add_dir(r, f"diff{j}")
    tops = []
    for lab, X in (("D", X1), ("D'", X0)):
        w, U = np.linalg.eigh(X.T @ X)
        add_dir(U[:, -1], f"top1({lab})")
        tops.append((lab, U[:, ::-1][:, :k]))
    for j in range(n_random):
        add_dir(rng.standard_normal(d), f"rand{j}")
    subs, snames = [], []

    def add_sub(B, name):
        Q = _orth(B)
        if Q is None or Q.shape[1] != k:
            return
        P = Q @ Q.T
        if any(np.allclose(P, R @ R.T, atol=1e-9) for R in subs):
            return
        subs.append(Q)
        snames.append(name)

    for lab, U in tops:
        add_sub(U, f"topk({lab})")
    # candidate spans: each distinct data direction, completed to dimension k by data directions
    uniq = _unit_rows(np.unique(np.round(np.vstack([X1, X0]), 12), axis=0))
    uniq = [
        u
        for i, u in enumerate(uniq)
        if not any(abs(abs(float(u @ w)) - 1) < 1e-9 for w in uniq[:i])
    ]
    for i, u in enumerate(uniq[:12]):
        others = [w for w in uniq if abs(abs(float(u @ w)) - 1) > 1e-9][: k - 1]
        add_sub(np.column_stack([u] + others) if k > 1 else u[:, None], f"cand{i}")
    return FeatureSet(np.array(dirs), names, subs, snames)


def _differing_rows(X1: np.ndarray, X0: np.ndarray) -> list[np.ndarray]:
    """Rows in the multiset symmetric difference of the two datasets (at most a few)."""
    from collections import Counter

    c1 = Counter(map(tuple, np.round(X1, 12)))
    c0 = Counter(map(tuple, np.round(X0, 12)))
    out = [np.array(r) for r in (c1 - c0)] + [np.array(r) for r in (c0 - c1)]
    return out[:4]


def release_bytes(V: np.ndarray | None, decimals: int | None = None) -> bytes | None:
    """The exact release as bytes (``None`` for ⊥); with ``decimals``, after rounding every entry."""
    if V is None:
        return None
    V = np.ascontiguousarray(np.asarray(V, np.float64))
    return (np.round(V, decimals) + 0.0).tobytes() if decimals is not None else V.tobytes()


@dataclass
class ModalRelease:
    """Events "the output equals the most frequent non-⊥ output of the calibration runs under D (or D′)",
    bit for bit and after rounding to ``decimals``: chosen on the calibration runs, fixed for
    certification."""

    modes: dict[str, bytes | None]  # statistic name -> modal bytes
    decimals: int = 9

    @classmethod
    def from_calibration(
        cls, raw1: list[np.ndarray | None], raw0: list[np.ndarray | None], decimals: int = 9
    ) -> "ModalRelease":
        modes = {}
        for side, raw in (("D", raw1), ("D'", raw0)):
            modes[f"same[{side}]"] = _mode([release_bytes(V) for V in raw])
            modes[f"near[{side}]"] = _mode([release_bytes(V, decimals) for V in raw])
        return cls(modes, decimals)

    @property
    def names(self) -> list[str]:
        return list(self.modes)

    def __call__(self, raw: list[np.ndarray | None]) -> np.ndarray:
        exact = [release_bytes(V) for V in raw]
        rounded = [release_bytes(V, self.decimals) for V in raw]
        cols = []
        for name, mode in self.modes.items():
            got = exact if name.startswith("same") else rounded
            cols.append([1.0 if (mode is not None and b == mode) else 0.0 for b in got])
        return np.array(cols, dtype=float).T.reshape(len(raw), len(self.modes))


def _mode(items: list[bytes | None]) -> bytes | None:
    from collections import Counter

    counts = Counter(b for b in items if b is not None)
    return counts.most_common(1)[0][0] if counts else None
