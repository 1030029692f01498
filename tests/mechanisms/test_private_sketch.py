"""Tests of the one-pass private sketch (mechanisms/private_sketch.py)."""

import math

import numpy as np
import pytest

from mechanisms._base import PrivacyInputError
from mechanisms.linalg import top_k_eigenvectors
from mechanisms.metrics import projector_distance
from mechanisms.private_sketch import (
    GaussianRowSketch,
    default_sketch_size,
    private_sketch,
    private_sketch_lift,
)


class OnePass:
    """Iterable that can be iterated only once; counts the items handed out."""

    def __init__(self, data, chunk=None):
        self.data, self.chunk, self.used, self.served = data, chunk, False, 0

    def __iter__(self):
        if self.used:
            raise RuntimeError("second pass over the stream")
        self.used = True
        if self.chunk is None:
            for row in self.data:
                self.served += 1
                yield row
        else:
            for s in range(0, len(self.data), self.chunk):
                self.served += 1
                yield self.data[s : s + self.chunk]


def spiked(n, d, k, rng, spike=30.0):
    U = np.linalg.qr(rng.standard_normal((d, k)))[0]
    X = rng.standard_normal((n, k)) * math.sqrt(spike) @ U.T + rng.standard_normal((n, d))
    return X / np.linalg.norm(X, axis=1).max(), U


def test_lift_formula():
    r, eps, delta = 12, 0.5, 1e-6
    assert private_sketch_lift(eps, delta, r) == pytest.approx(
        16 * math.sqrt(r * math.log(2 / delta)) / eps * math.log(16 * r / delta)
    )
    assert default_sketch_size(2, 50) == 12 and default_sketch_size(2, 8, oversample=3) == 5


def test_single_pass_rows_and_chunks():
    rng = np.random.default_rng(0)
    X, _ = spiked(300, 6, 1, rng)
    for chunk in (None, 37):
        s = OnePass(X, chunk)
        out = private_sketch(s, 1, rng=np.random.default_rng(1), epsilon=1.0, delta=1e-5)
        assert s.used and s.served == (300 if chunk is None else math.ceil(300 / 37))
        assert out.diagnostics["n_rows"] == 300
        with pytest.raises(RuntimeError):
            iter(s).__next__()
    # a plain generator works too (consumed once)
    out = private_sketch((r for r in X), 1, rng=np.random.default_rng(1), epsilon=1.0, delta=1e-5)
    assert out.components.shape == (6, 1)


def test_chunking_invariance_and_linearity():
    """Same seed -> same Φ, whatever the chunking; and the (unlifted) sketch is linear in the data."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((50, 5)) / 10
    Y = rng.standard_normal((50, 5)) / 10

    def sk(data, chunk):
        s = GaussianRowSketch(5, 3, np.random.default_rng(7))
        for a in range(0, len(data), chunk):
            s.update(data[a : a + chunk])
        return s.Z

    np.testing.assert_allclose(sk(X, 1), sk(X, 50), atol=1e-12)
    np.testing.assert_allclose(sk(X, 7), sk(X, 50), atol=1e-12)
    np.testing.assert_allclose(
        sk(0.3 * X + 0.5 * Y, 9), 0.3 * sk(X, 9) + 0.5 * sk(Y, 9), atol=1e-12
    )
    # and it is the matrix product Φ X with Φ's columns drawn per row
    Phi = np.random.default_rng(7).standard_normal((50, 3)).T
    np.testing.assert_allclose(sk(X, 13), Phi @ X, atol=1e-12)


def test_memory_independent_of_n():
    d, r = 8, 4
    sizes = []
    for n in (100, 20000):
        s = GaussianRowSketch(d, r, np.random.default_rng(3))
        data = np.random.default_rng(4).standard_normal((n, d)) / 10
        for a in range(0, n, 1000):
            s.update(data[a : a + 1000])
        sizes.append(s.state_nbytes)
        arrays = [v for v in vars(s).values() if isinstance(v, np.ndarray)]
        assert sum(a.nbytes for a in arrays) == r * d * 8
    assert sizes[0] == sizes[1] == r * d * 8


def test_lift_noise_empirical():
    """X = 0: the sketch is w·Gaussian (r x d); sample std of its entries must equal w.

    r*d = 12*60 = 720 entries; s.e. of the std ~ 2.6%; tolerance 10%.  With X = 0 the projected
    eigenvalues are those of ZZᵀ/r − w², at most ((sqrt d + sqrt r)²/r − 1) w² up to fluctuations
    (Bai–Yin edge; 1.3x slack)."""
    rng = np.random.default_rng(5)
    d, k = 60, 2
    eps, delta = 1.0, 1e-5
    out = private_sketch(np.zeros((10, d)), k, rng=rng, epsilon=eps, delta=delta)
    w = out.release["lift"]
    assert out.release["noise_scale"] == w == pytest.approx(private_sketch_lift(eps, delta, 12))
    s = GaussianRowSketch(d, 12, np.random.default_rng(6))
    s.update(np.zeros((10, d)))
    s.lift(w)
    assert np.std(s.Z) == pytest.approx(w, rel=0.10)
    edge = ((math.sqrt(d) + math.sqrt(12)) ** 2 / 12 - 1) * w**2
    assert np.all(out.release["projected_eigenvalues"] < 1.3 * edge)


def test_output_shape_guarantee_and_utility():
    """Huge ε makes the lift small: the sketch must then find the planted top subspace.

    With ε = 1e4 and r = 400 sketch rows the lift is w ≈ 2 (w² ≈ 4, against signal eigenvalues in the
    thousands) and the r-sample estimate of XᵀX has relative error ~ sqrt(d/r) = 0.16, with an
    eigen-ratio ~ 30: projector distance < 0.2 (random 2-dim subspace of R^10: ~1)."""
    rng = np.random.default_rng(7)
    X, U = spiked(20000, 10, 2, rng)
    out = private_sketch(X, 2, rng=rng, epsilon=1e4, delta=1e-5, sketch_size=400)
    V = out.components
    assert V.shape == (10, 2)
    np.testing.assert_allclose(V.T @ V, np.eye(2), atol=1e-10)
    assert projector_distance(V, top_k_eigenvectors(X.T @ X, 2)) < 0.2
    g = out.guarantee
    # reconstructed constants (exact=False), but the lift is 14 times the exact requirement here: proven
    assert g.neighbouring == "add-remove-one-row" and not g.exact and g.status == "proven"
    assert g.epsilon == 1e4 and g.delta == 1e-5


def test_release_does_not_reveal_n():
    """Under add/remove n is not public: the release must be the same function of (ε, δ, r) for
    any n, and n itself is a diagnostic only."""
    rng = np.random.default_rng(9)
    outs = {
        n: private_sketch(spiked(n, 6, 1, rng)[0], 1, rng=rng, epsilon=1.0, delta=1e-5)
        for n in (20, 2000)
    }
    for key in ("lift", "noise_scale", "sketch_size"):
        assert outs[20].release[key] == outs[2000].release[key]
    for n, out in outs.items():
        assert out.diagnostics["n_rows"] == n
        assert n not in [v for v in out.release.values() if isinstance(v, int)]
        assert set(out.release) == {
            "status",
            "lift",
            "noise_scale",
            "sketch_size",
            "projected_eigenvalues",
            "calibration",
        }


def test_bad_inputs():
    rng = np.random.default_rng(8)
    X, _ = spiked(100, 6, 1, rng)
    with pytest.raises(PrivacyInputError):
        private_sketch(X * 3, 1, rng=rng, epsilon=1.0, delta=1e-5)
    out = private_sketch(X * 3, 1, rng=rng, epsilon=1.0, delta=1e-5, clip=True)
    assert out.diagnostics["n_clipped"] > 0
    bad = X.copy()
    bad[5, 2] = np.nan
    with pytest.raises(PrivacyInputError):
        private_sketch(bad, 1, rng=rng, epsilon=1.0, delta=1e-5)
    with pytest.raises(PrivacyInputError):
        private_sketch(X, 6, rng=rng, epsilon=1.0, delta=1e-5)
    with pytest.raises(PrivacyInputError):
        private_sketch(X, 2, rng=rng, epsilon=1.0, delta=1e-5, sketch_size=1)
    out = private_sketch(X, 2, rng=rng, epsilon=1.0, delta=1e-5, sketch_size=30)  # r > d is allowed
    assert out.components.shape == (6, 2)
    with pytest.raises(PrivacyInputError):
        private_sketch(iter([]), 1, rng=rng, epsilon=1.0, delta=1e-5)
    with pytest.raises(PrivacyInputError):
        private_sketch(X, 1, rng=rng, epsilon=0.0, delta=1e-5)
    with pytest.raises(PrivacyInputError):
        private_sketch((r for r in [X[0], X[1, :3]]), 1, rng=rng, epsilon=1.0, delta=1e-5)
