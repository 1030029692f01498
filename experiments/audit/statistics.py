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

The search also adds statistics that look where a leak through the release's representation would
hide (a release is more than the subspace its components span):

* ``bit{b}[V i,j]`` = bit b (b = 0 the lowest) of the float64 mantissa of entry (i, j) of
  ``components``, and ``lowbits[V]`` the number of entries whose lowest bit is 1
  (:class:`BitFeatures`); ⊥ → −1;
* the values of the ``release`` dict (:class:`ReleaseFeatures`): ``release[key]`` (a number) or
  ``release[key][i]`` (an entry of an array, the first 64), the lowest mantissa bit of each float
  entry (``bit0[release[key]...]``), and for every field, ``components`` included,
  ``ref[key]=D`` / ``ref[key]=D'``: 1 when its exact bytes equal those of a reference run on D (resp.
  D′) made with a fixed noise stream, the same for both datasets.  A field absent from an output maps
  to −inf (its bits and equalities to −1).

Events are one-sided thresholds on one of these numbers, so e.g. "the output equals span(e₂)" is
``angle[e₂] ≥ 1 − 1e-9`` and "the lowest bit of V₁₁ is 1" is ``bit0[V 0,0] ≥ 1``.
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


# ---------------------------------------------------------------------------------------------
# Bit-level statistics and the values of the release dict
# ---------------------------------------------------------------------------------------------


def mantissa_bits(values, n_bits: int = 1) -> np.ndarray:
    """The lowest ``n_bits`` bits of the float64 representation of every entry, as 0.0/1.0.

    Parameters
    ----------
    values : array-like
        Numbers (converted to float64).
    n_bits : int, default 1
        How many of the lowest mantissa bits to return (at most 52).

    Returns
    -------
    numpy.ndarray of shape (values.size, n_bits)
        Column b holds bit b of each entry's mantissa (b = 0: the lowest).
    """
    if not 1 <= int(n_bits) <= 52:
        raise ValueError(f"n_bits must lie in [1, 52], got {n_bits!r}")
    u = np.ascontiguousarray(np.asarray(values, dtype=np.float64)).reshape(-1).view(np.uint64)
    shifts = np.arange(int(n_bits), dtype=np.uint64)
    return ((u[:, None] >> shifts[None, :]) & np.uint64(1)).astype(float)


@dataclass
class BitFeatures:
    """The lowest mantissa bits of every entry of a d x k ``components`` matrix.

    Parameters
    ----------
    shape : tuple of int
        (d, k), the shape of the components of a design's outputs.
    n_bits : int, default 2
        Bits per entry, from the lowest.
    """

    shape: tuple[int, int]
    n_bits: int = 2

    @property
    def names(self) -> list[str]:
        d, k = self.shape
        cells = [f"V {i},{j}" for i in range(d) for j in range(k)]
        return [f"bit{b}[{c}]" for c in cells for b in range(self.n_bits)] + ["lowbits[V]"]

    def __call__(self, V: np.ndarray | None) -> np.ndarray:
        m = self.shape[0] * self.shape[1] * self.n_bits + 1
        if V is None or np.shape(V) != tuple(self.shape):
            return -np.ones(m)
        bits = mantissa_bits(V, self.n_bits)
        return np.concatenate([bits.reshape(-1), [bits[:, 0].sum()]])


def value_bytes(value) -> bytes:
    """Exact bytes of a released value: its dtype, shape and raw bytes for a number or a numeric
    array, its ``repr`` otherwise (strings, ``None``, nested containers)."""
    arr = _numeric(value)
    if arr is None:
        return b"r" + repr(value).encode()
    arr = np.ascontiguousarray(arr)
    return arr.dtype.str.encode() + repr(arr.shape).encode() + arr.tobytes()


def _numeric(value) -> np.ndarray | None:
    """``value`` as a numeric numpy array (bool, int, float), or ``None`` when it is not one."""
    if isinstance(value, (str, bytes)) or value is None:
        return None
    try:
        arr = np.asarray(value)
    except Exception:  # ragged nested containers
        return None
    if arr.dtype.kind not in "biuf":
        return None
    return arr


@dataclass
class ReleaseFeatures:
    """Statistics of the ``release`` dict and exact-bytes comparisons with fixed-noise reference runs.

    Built by :meth:`from_references` from one run on each dataset of a design, both made with the
    same fixed noise stream (``default_rng`` of the same seed).  The fields and their shapes are
    fixed then, so every output maps to a vector of the same length (:attr:`names`).

    Parameters
    ----------
    numeric : list of (str, int, bool)
        Numeric release keys, how many leading entries are used, and whether they are floats (whose
        lowest mantissa bit is a statistic too).
    references : dict
        ``"D"`` and ``"D'"`` -> {field: bytes} of the two reference runs (``components`` included).
    """

    numeric: list[tuple[str, int, bool]]
    references: dict[str, dict[str, bytes]]

    #: entries of an array field used as statistics (its first ones)
    MAX_ENTRIES = 64

    @classmethod
    def from_references(cls, ref1, ref0) -> "ReleaseFeatures":
        """From the reference outputs on D (``ref1``) and D′ (``ref0``), MechanismOutputs."""
        releases = [dict(getattr(r, "release", None) or {}) for r in (ref1, ref0)]
        keys = sorted(set(releases[0]) | set(releases[1]))
        numeric = []
        for key in keys:
            vals = [_numeric(rel[key]) for rel in releases if key in rel]
            if not vals or any(v is None for v in vals):
                continue
            size = min(max(v.size for v in vals), cls.MAX_ENTRIES)
            if size:
                numeric.append((key, size, any(v.dtype.kind == "f" for v in vals)))
        references = {}
        for side, out, rel in (("D", ref1, releases[0]), ("D'", ref0, releases[1])):
            refs = {key: value_bytes(rel[key]) for key in rel}
            bottom = rel.get("status") == "bottom"  # the search maps ⊥ to components None
            refs["components"] = value_bytes(None if bottom else getattr(out, "components", None))
            references[side] = refs
        return cls(numeric, references)

    @property
    def fields(self) -> list[str]:
        """Every field compared with the references (``components`` and each release key)."""
        return sorted(set(self.references["D"]) | set(self.references["D'"]))

    @property
    def names(self) -> list[str]:
        out = []
        for key, size, is_float in self.numeric:
            cells = (
                [f"release[{key}]"] if size == 1 else [f"release[{key}][{i}]" for i in range(size)]
            )
            out += cells
            if is_float:
                out += [f"bit0[{c}]" for c in cells]
        for key in self.fields:
            out += [f"ref[{key}]=D", f"ref[{key}]=D'"]
        return out

    def __call__(self, components, release: dict | None) -> np.ndarray:
        release = release or {}
        out: list[float] = []
        for key, size, is_float in self.numeric:
            arr = _numeric(release.get(key)) if key in release else None
            if arr is None:
                vals, bits = np.full(size, -np.inf), -np.ones(size)
            else:
                flat = arr.reshape(-1)[:size].astype(np.float64)
                vals = np.full(size, -np.inf)
                vals[: flat.size] = flat
                bits = -np.ones(size)
                bits[: flat.size] = mantissa_bits(flat)[:, 0]
            out += vals.tolist()
            if is_float:
                out += bits.tolist()
        for key in self.fields:
            if key == "components":
                got = value_bytes(components)
            else:
                got = value_bytes(release[key]) if key in release else None
            for side in ("D", "D'"):
                ref = self.references[side].get(key)
                out.append(1.0 if (got is not None and ref is not None and got == ref) else 0.0)
        return np.asarray(out, dtype=float)
