"""Exact linear algebra over the rationals for the exact-case subspace estimator.

Every float64 is a rational number, so a data matrix of floats has exact linear dependencies,
spans and memberships; this module decides them without rounding.  It is the arithmetic behind
:func:`mechanisms.subspace.subspace_exact`, whose privacy proof (docs/subspace_exact_privacy.md)
needs "x lies in s" to mean exactly that, and whose release must be a function of the subspace
alone (Singhal and Steinke, "Privately learning subspaces", NeurIPS 2021, section 4).

Representations
---------------
* A row becomes its **primitive line**: the integer vector proportional to it with coprime entries
  and a positive first non-zero entry (:func:`primitive_rows`).  Rescaling a row, or flipping its
  sign, leaves its line unchanged; the zero row maps to the zero vector.
* A subspace becomes its **canonical key**: the reduced row echelon form (RREF) of any spanning set,
  each row scaled to a primitive integer vector with a positive pivot (:func:`subspace_key`).  The
  RREF of a subspace is unique, so two spanning sets give the same key exactly when they span the
  same subspace.
* A subspace's released frame is :func:`canonical_frame`: Gram–Schmidt run exactly on the key's
  rows, then each vector rounded to floats and normalised, so the frame's bits depend on the
  subspace only.

Search
------
:func:`candidate_flats` finds every k-dimensional subspace spanned by data lines, with its exact count
and score, by walking the lattice of subspaces spanned by data lines from {0} upwards.  At a subspace t
it keeps, for each line x outside t, a primitive integer vector that is a non-zero multiple of L_t(x)
for one linear map L_t whose kernel is exactly t (for t = {0}, the line itself).  Lines whose vectors
are equal span, with t, the same subspace of one more dimension, so the children of t are found by
grouping, and a child's vectors come from its parent's by one elimination step
(``a·r_x − r_x[q]·r_y``, then divided by the entries' gcd).  Each subspace spanned by data lines is
expanded once, so the number of operations has a bound in n, d, k and the entries' bit length alone
(:func:`mechanisms.subspace.exact_work_bound`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Sequence

import numpy as np

from .linalg import fix_signs

Line = tuple[int, ...]
Key = tuple[Line, ...]


def primitive_rows(X: np.ndarray, precision_bits: int | None = None) -> list[Line]:
    """Exact primitive integer representative of each row's line (zero rows map to zeros).

    Parameters
    ----------
    X : ndarray of shape (n, d), finite floats
    precision_bits : int, optional
        None (default): the rows as they are, exactly.  An integer P >= 2: each row is first rounded
        to P significant bits relative to its largest entry (its exact integer vector, halved with
        rounding to nearest, ties away from zero, until its largest entry has at most P bits), so
        every entry of a line has at most P bits.  The rounding is a function of the row alone, so it
        maps neighbouring datasets to neighbouring datasets; a row whose integer vector already fits
        in P bits is unchanged.

    Returns
    -------
    list of tuple of int
        Row ``i`` is the integer vector ``c · X[i]`` (some rational ``c > 0`` or ``c < 0``) with
        ``gcd = 1`` and a positive first non-zero entry (after the rounding, if any).
    """
    out: list[Line] = []
    for row in np.asarray(X, dtype=np.float64):
        ratios = [float(v).as_integer_ratio() for v in row]
        scale = max(den for _, den in ratios)  # denominators are powers of two
        ints = [num * (scale // den) for num, den in ratios]
        if precision_bits is not None:
            ints = _round_to_bits(ints, precision_bits)
        out.append(_primitive(ints))
    return out


def _round_to_bits(ints: list[int], bits: int) -> list[int]:
    """``ints`` divided by 2^s and rounded to nearest (ties away from zero), for the least s >= 0
    that leaves every entry with at most ``bits`` bits; unchanged when they already fit."""
    top = max(abs(v) for v in ints).bit_length()
    s = top - bits
    if s <= 0:
        return ints
    half = 1 << (s - 1)
    out = [(abs(v) + half) >> s for v in ints]
    if max(out).bit_length() > bits:  # rounded up to 2^bits: one more halving
        s += 1
        half = 1 << (s - 1)
        out = [(abs(v) + half) >> s for v in ints]
    return [o if v >= 0 else -o for o, v in zip(out, ints)]


def _primitive(ints: Sequence[int]) -> Line:
    g = 0
    for v in ints:
        g = math.gcd(g, v)
    if g == 0:
        return tuple(0 for _ in ints)
    first = next(v for v in ints if v)
    if first < 0:
        g = -g
    return tuple(v // g for v in ints)


def _reduced(vec: list[int]) -> Line | None:
    """``vec`` divided by the gcd of its entries, signed so that its first non-zero entry is
    positive; None for the zero vector."""
    g = math.gcd(*vec)
    if g == 0:
        return None
    if next(v for v in vec if v) < 0:
        g = -g
    return tuple(vec) if g == 1 else tuple(v // g for v in vec)


@dataclass
class FlatSearch:
    """What :func:`candidate_flats` finds.

    Attributes
    ----------
    scores : list of int
        u(X, s) of every k-dimensional subspace s spanned by data lines (the candidates), in the
        order of their witnesses.
    witnesses : list of tuple of int
        For each candidate, the first k-subset of rows, in row order, that spans it (row indices).
    n_zero : int
        Number of zero rows.
    expanded : list of int
        Number of subspaces of each dimension j = 0, ..., k − 1 spanned by data lines (each is
        expanded once); ``expanded[j] <= C(n, j)``.
    """

    scores: list[int]
    witnesses: list[tuple[int, ...]]
    n_zero: int
    expanded: list[int] = field(default_factory=list)


def candidate_flats(lines: Sequence[Line], k: int) -> FlatSearch:
    """Every k-dimensional subspace spanned by data lines, with its score, in exact arithmetic.

    The score (Singhal–Steinke section 4) is ``u(X, s) = |X ∩ s| − max{|X ∩ t| : t ⊊ s}``, rows
    counted with multiplicity and zero rows in every subspace.  The max is attained at {0} (k = 1)
    or at a (k−1)-dimensional subspace of s spanned by data lines (docs/subspace_exact_privacy.md,
    Claim 1); those are exactly the subspaces from which the search reaches s, so s's score is its
    count minus the largest count among the subspaces it is reached from.

    The walk is depth first, children in the order of their smallest line (lines numbered by their
    first row), and each subspace is expanded at its first visit only; a subspace is first reached
    along its greedy basis (the first line in it, then the first line outside the span so far, ...),
    so the candidates come out in the order of their witnesses, the first spanning k-subsets of rows.

    Parameters
    ----------
    lines : sequence of tuple of int
        The rows' primitive lines (:func:`primitive_rows`), zero rows as zero vectors.
    k : int
        Dimension of the candidates, k >= 1.

    Returns
    -------
    FlatSearch
    """
    index: dict[Line, int] = {}
    uniq: list[Line] = []
    mult: list[int] = []
    first_row: list[int] = []
    n_zero = 0
    for r, line in enumerate(lines):
        if not any(line):
            n_zero += 1
            continue
        i = index.get(line)
        if i is None:
            index[line] = len(uniq)
            uniq.append(line)
            mult.append(1)
            first_row.append(r)
        else:
            mult[i] += 1
    found: dict[int, list] = {}  # members (bit set of line numbers) -> [count, sup, path]
    seen: list[set[int]] = [set() for _ in range(k)]
    expanded = [0] * k

    def expand(level: int, members: int, count: int, resid: dict[int, Line], path: tuple) -> None:
        expanded[level] += 1
        groups: dict[Line, list[int]] = {}
        for x, r in resid.items():  # x increasing: groups in the order of their smallest line
            groups.setdefault(r, []).append(x)
        for r_y, group in groups.items():
            child, c = members, count
            for x in group:
                child |= 1 << x
                c += mult[x]
            child_path = path + (group[0],)
            if level + 1 == k:
                rec = found.get(child)
                if rec is None:
                    found[child] = [c, count, child_path]
                elif count > rec[1]:
                    rec[1] = count
                continue
            if child in seen[level + 1]:
                continue
            seen[level + 1].add(child)
            q = next(i for i, v in enumerate(r_y) if v)
            a = r_y[q]  # > 0: r_y is primitive with a positive first non-zero entry
            child_resid: dict[int, Line] = {}
            for x, r in resid.items():
                if child >> x & 1:
                    continue
                b = r[q]
                # b == 0: a·r, whose primitive vector is r itself
                child_resid[x] = _reduced([a * u - b * w for u, w in zip(r, r_y)]) if b else r
            expand(level + 1, child, c, child_resid, child_path)

    expand(0, 0, n_zero, dict(enumerate(uniq)), ())
    return FlatSearch(
        scores=[c - sup for c, sup, _ in found.values()],
        witnesses=[tuple(first_row[x] for x in path) for _, _, path in found.values()],
        n_zero=n_zero,
        expanded=expanded,
    )


def subspace_key(lines: Sequence[Line]) -> Key:
    """Canonical key of span(lines): its RREF with rows scaled to primitive integers (pivot > 0).

    The key's length is the dimension of the span (rank over the rationals).
    """
    rows = [[Fraction(v) for v in line] for line in lines]
    d = len(rows[0]) if rows else 0
    pivots: list[int] = []
    r = 0
    for col in range(d):
        pivot = next((i for i in range(r, len(rows)) if rows[i][col] != 0), None)
        if pivot is None:
            continue
        rows[r], rows[pivot] = rows[pivot], rows[r]
        p = rows[r][col]
        rows[r] = [v / p for v in rows[r]]
        for i in range(len(rows)):
            if i != r and rows[i][col] != 0:
                f = rows[i][col]
                rows[i] = [a - f * b for a, b in zip(rows[i], rows[r])]
        pivots.append(col)
        r += 1
        if r == len(rows):
            break
    key = []
    for row in rows[:r]:
        den = 1
        for v in row:
            den = den * v.denominator // math.gcd(den, v.denominator)
        key.append(_primitive([int(v * den) for v in row]))
    return tuple(key)


class Members:
    """Exact membership of many lines in one subspace, vectorised over the lines.

    ``Members(key)(L)`` takes an object array ``L`` (n x d, Python ints: the primitive lines) and
    returns the boolean mask of the lines that lie in the subspace with canonical key ``key``.
    With the key's rows ``R_j`` (pivot column ``p_j``, pivot value ``a_j``; RREF: zero in every
    other pivot column) and ``M = lcm(a_j)``, a vector x lies in the span exactly when
    ``M·x = Σ_j x[p_j] (M / a_j) R_j``, an identity between integer vectors.
    """

    def __init__(self, key: Key):
        self.R = np.array(key, dtype=object)
        self.pivots = [next(c for c, v in enumerate(row) if v) for row in key]
        a = [row[p] for row, p in zip(key, self.pivots)]
        m = 1
        for v in a:
            m = m * v // math.gcd(m, v)
        self.m = m
        self.weights = np.array([m // v for v in a], dtype=object)

    def __call__(self, L: np.ndarray) -> np.ndarray:
        coeffs = L[:, self.pivots] * self.weights
        resid = L * self.m - coeffs.dot(self.R)
        return ~np.any(resid != 0, axis=1)


def lines_array(lines: Sequence[Line]) -> np.ndarray:
    """Object array (n x d) of Python ints, for :class:`Members`."""
    arr = np.empty((len(lines), len(lines[0]) if lines else 0), dtype=object)
    for i, line in enumerate(lines):
        arr[i, :] = line
    return arr


def _power_of_two_exponent(x: Fraction) -> int:
    """The integer e with 2**e <= x < 2**(e + 1), for a rational x > 0 (exact)."""
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if (x.numerator << max(-e, 0)) < (x.denominator << max(e, 0)):
        e -= 1
    return e


def canonical_frame(key: Key) -> np.ndarray:
    """Orthonormal d x k frame of the subspace with canonical key ``key``: a function of the subspace.

    Gram–Schmidt runs exactly over the rationals on the key's rows (the subspace's canonical RREF),
    giving an orthogonal basis ``w_1, …, w_k``.  Each ``w_j`` is first divided exactly by the power
    of two 2^e with 2^e <= max |w_j| < 2^(e+1), so that its entries and its squared norm lie in
    floating-point range whatever the key's size; each entry is then rounded to a float and divided
    by the float square root of the (exact, then rounded) squared norm.  Dividing by a power of two
    commutes with every one of these roundings (away from underflow), so the scaling changes no bit
    of a frame that was representable without it.  No floating-point linear algebra (hence no BLAS,
    no thread-count dependence) is involved, so equal subspaces give bit-identical frames; signs are
    then fixed by :func:`mechanisms.linalg.fix_signs`, itself a function of the frame.
    """
    basis: list[list[Fraction]] = []
    for row in key:
        w = [Fraction(v) for v in row]
        for b in basis:
            c = sum(x * y for x, y in zip(w, b)) / sum(y * y for y in b)
            w = [x - c * y for x, y in zip(w, b)]
        basis.append(w)
    cols = []
    for w in basis:
        e = _power_of_two_exponent(max(abs(x) for x in w))
        scale = Fraction(1, 1 << e) if e >= 0 else Fraction(1 << -e)
        w = [x * scale for x in w]
        norm = math.sqrt(sum(x * x for x in w))
        cols.append([float(x) / norm for x in w])
    return fix_signs(np.array(cols, dtype=np.float64).T.copy())
