"""What ``subspace_exact`` releases is a function of the chosen subspace alone (docs/subspace_exact_privacy.md).

Each test reproduces a way the released bits could carry information about individual rows and
checks the bits themselves (``components.tobytes()``), not only the projector:

* the frame inside the released subspace (k = 2): it must not depend on which rows span it;
* the scores' identification of (k − 1)-subspaces: near-duplicate directions are different
  subspaces, so every score keeps sensitivity 1;
* the low-order bits of a k = 1 release: the released line must not be a member row's float direction;
* the row order and the scale of the rows.
"""

import numpy as np
import pytest

from mechanisms.rational_subspaces import canonical_frame, primitive_rows, subspace_key
from mechanisms.subspace import subspace_exact
from mechanisms.subspace.exact import _exact_candidates

EPS, DELTA = 1.0, 1e-6


def release_bytes(X, k, seeds):
    """{components bytes or None: count} over runs with the given seeds."""
    out = {}
    for s in seeds:
        o = subspace_exact(X, k, rng=np.random.default_rng([3, s]), epsilon=EPS, delta=DELTA)
        b = None if o.components is None else o.components.tobytes()
        out[b] = out.get(b, 0) + 1
    return out


def in_plane(angles):
    a = np.asarray(angles, float)
    return np.c_[np.cos(a), np.sin(a), np.zeros(a.size)]


def test_frame_does_not_depend_on_the_spanning_rows():
    """60 unit rows in the xy-plane at angles linspace(0.1, 3.0, 60) against the same with row 0 moved to
    angle 1.3 in the plane: the gap is 59 on both sides (sure release), and every release on both sides
    is the same frame, bit for bit, the plane's canonical frame.  A frame built from the first rows
    (the SVD basis of rows 0 and 1) differs between the two sides in every run."""
    D = in_plane(np.linspace(0.1, 3.0, 60))
    Dp = D.copy()
    Dp[0] = in_plane([1.3])[0]
    seen_D, seen_Dp = release_bytes(D, 2, range(20)), release_bytes(Dp, 2, range(20))
    assert list(seen_D) == list(seen_Dp) and None not in seen_D
    plane = canonical_frame(subspace_key([(1, 0, 0), (0, 1, 0)]))
    assert list(seen_D) == [plane.tobytes()]


def test_near_duplicate_lines_are_different_subspaces():
    """61 rows exactly in the xy-plane: one generic in-plane row, one row at angle 2e-7 from e₁, 30 rows
    e₁, 29 generic in-plane rows; the neighbour replaces the 2e-7 row by e₁.  The plane's exact score
    is 61 − 30 = 31 against 61 − 31 = 30, so the gaps are 31 and 30 (a key that merged the 2e-7 line
    with e₁ would skip the e₁ count on the first side and compute 60)."""
    rng = np.random.default_rng(5)
    g = rng.uniform(0.2, 3.0, 30)
    rows = (
        [in_plane([g[0]])[0], in_plane([2e-7])[0]]
        + [np.array([1.0, 0, 0])] * 30
        + list(in_plane(g[1:]))
    )
    D = np.array(rows)
    Dp = D.copy()
    Dp[1] = [1.0, 0, 0]
    gaps = [
        subspace_exact(X, 2, rng=np.random.default_rng(0), epsilon=EPS, delta=DELTA).diagnostics[
            "gap"
        ]
        for X in (D, Dp)
    ]
    assert gaps == [31.0, 30.0]


def test_line_release_is_not_a_member_rows_direction():
    """57 rows e₁ plus one row (1, 1e-9, 0) against 58 rows e₁: span(e₁) is the top line on both sides
    (gaps 56 and 58, sure release), and both release exactly [1, 0, 0]."""
    e1 = np.array([1.0, 0.0, 0.0])
    D = np.vstack([[1.0, 1e-9, 0.0], np.tile(e1, (57, 1))])
    Dp = np.tile(e1, (58, 1))
    for X in (D, Dp):
        seen = release_bytes(X, 1, range(10))
        assert list(seen) == [np.array([[1.0], [0.0], [0.0]]).tobytes()]


@pytest.mark.parametrize("seed", range(5))
def test_rescaled_row_leaves_the_release_unchanged(seed):
    """Rows on one line in a random direction v (d = 4), with row 0 replaced by an exact multiple of v
    (3v, v with short mantissas so that 3v is exact) or by a float rescaling of v (0.37·v, which
    rounding moves off the line): the released line is bit for bit the same frame."""
    rng = np.random.default_rng(seed)
    v = np.round(rng.standard_normal(4) * 8) / 16  # short mantissas: 3·v is exact
    v /= 2.0 ** np.ceil(np.log2(3 * np.linalg.norm(v)))  # exact power-of-two scaling, ‖3v‖ <= 1
    base = np.tile(v, (60, 1))
    variants = [base.copy() for _ in range(3)]
    variants[1][0] = 3 * v
    variants[2][0] = 0.37 * v
    assert primitive_rows(variants[1][:1]) == primitive_rows(base[:1])
    frames = {b for X in variants for b in release_bytes(X, 1, range(3))}
    assert len(frames) == 1 and None not in frames


def test_release_does_not_depend_on_row_order():
    """Any permutation of the rows gives the same output bit for bit (same random stream): the scores,
    the gap and the frame are functions of the multiset of rows."""
    rng = np.random.default_rng(9)
    ang = rng.uniform(0.1, 3.0, 40)
    X = np.vstack([in_plane(ang), [[0.0, 0.0, 0.5]], np.tile([0.0, 0.6, 0.0], (5, 1))])
    ref = subspace_exact(X, 2, rng=np.random.default_rng(1), epsilon=EPS, delta=DELTA)
    assert ref.components is not None
    for _ in range(5):
        perm = rng.permutation(X.shape[0])
        out = subspace_exact(X[perm], 2, rng=np.random.default_rng(1), epsilon=EPS, delta=DELTA)
        assert out.components.tobytes() == ref.components.tobytes()
        assert out.release == ref.release


def test_candidate_keys_are_exact():
    """Membership is exact rational arithmetic: a row 1e-300 off a line is off it, an exact multiple is
    on it, and the zero row is in every subspace."""
    X = np.array([[1.0, 0.0, 0.0], [2.0, 0.0, 0.0], [1.0, 1e-300, 0.0], [0.0, 0.0, 0.0]])
    keys, scores, _, n_zero = _exact_candidates(X, 1)
    assert n_zero == 1 and keys == [((1, 0, 0),), (primitive_rows(X[2:3])[0],)]
    assert list(scores) == [2.0, 1.0]


def test_frame_of_a_key_with_huge_entries():
    """A subspace whose primitive key holds integers far beyond float range (a unit row with a
    2⁻⁵²⁰ entry) is still released: the frame's vectors are scaled exactly by a power of two before
    rounding, so the release is the line itself, not an OverflowError."""
    X = np.tile([1.0, 2.0**-520, 0.0], (60, 1))
    out = subspace_exact(X, 1, rng=np.random.default_rng(0), epsilon=1.0, delta=1e-6)
    assert out.status == "ok"
    assert out.components[:, 0].tolist() == [1.0, 2.0**-520, 0.0]
    key = subspace_key(primitive_rows(X[:1]))
    assert max(abs(v) for v in key[0]).bit_length() > 520  # beyond float range as an integer
