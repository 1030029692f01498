"""Tests of the streaming noisy power method (mechanisms/streaming_power.py)."""

import math

import numpy as np
import pytest

from mechanisms._base import PrivacyInputError
from mechanisms.calibration import gaussian_sigma
from mechanisms.metrics import projector_distance
from mechanisms.streaming_power import (
    streaming_error_curve,
    streaming_power,
    streaming_power_noise_scale,
)


def make_spiked(d, k, spike, noise, rng):
    """Tiny local spiked-covariance generator: x = U diag(spike) g + noise h (Hardt–Price section D)."""
    U = np.linalg.qr(rng.standard_normal((d, k)))[0]
    spike = np.broadcast_to(np.asarray(spike, float), (k,))

    def sampler(n, r):
        return (r.standard_normal((n, k)) * spike) @ U.T + noise * r.standard_normal((n, d))

    return sampler, U


class CountingStream:
    def __init__(self, X):
        self.X, self.taken, self.passes = X, 0, 0

    def __iter__(self):
        self.passes += 1
        if self.passes > 1:
            raise RuntimeError("second pass")
        for row in self.X:
            self.taken += 1
            yield row


def test_consumes_fresh_blocks_once():
    rng = np.random.default_rng(0)
    sampler, U = make_spiked(8, 2, 3.0, 0.5, rng)
    X = sampler(1000, rng)
    s = CountingStream(X)
    out = streaming_power(s, 2, rng=rng, block_size=100, iterations=5)
    assert s.passes == 1 and s.taken == 500
    assert out.release["samples_used"] == 500 and out.release["iterations"] == 5
    assert out.guarantee.neighbouring == "none" and math.isinf(out.guarantee.epsilon)
    V = out.components
    assert V.shape == (8, 2)
    np.testing.assert_allclose(V.T @ V, np.eye(2), atol=1e-10)


def test_recovers_spiked_subspace():
    """Spike 3 vs noise 0.5 (eigen-ratio 37): 10 blocks of 500 -> error < 0.15 (random ~1)."""
    rng = np.random.default_rng(1)
    sampler, U = make_spiked(20, 2, 3.0, 0.5, rng)
    out = streaming_power(sampler(5000, rng), 2, rng=rng, block_size=500)
    assert out.release["iterations"] == 10
    assert projector_distance(out.components, U) < 0.15


def test_error_decreases_with_samples():
    rng = np.random.default_rng(2)
    sampler, U = make_spiked(30, 2, 1.5, 1.0, rng)
    df = streaming_error_curve(
        sampler, U, 2, rng=rng, block_sizes=[50, 400, 3200], iterations=8, repeats=3
    )
    assert list(df.columns) == ["block_size", "n_samples", "repeat", "error"]
    assert len(df) == 9
    med = df.groupby("n_samples")["error"].median()
    assert med.iloc[-1] < med.iloc[0]
    assert med.iloc[-1] < 0.3


def test_private_variant_noise_scale_and_guarantee():
    """Private variant: σ = gaussian_sigma(sqrt2/B, ε, δ); with X = 0 each block's product is pure noise.

    We check the formula and the empirical std on an all-zero stream through the trace of one block
    (d*p = 240 entries, s.e. ~4.6%, tolerance 15%): the first X_1 is the orthonormalised noise, so
    instead we recompute Y from the same rng stream."""
    eps, delta, B = 0.5, 1e-6, 200
    sig = streaming_power_noise_scale(eps, delta, B)
    assert sig == pytest.approx(gaussian_sigma(math.sqrt(2) / B, eps, delta))
    d, k = 60, 4
    rng = np.random.default_rng(3)
    out = streaming_power(np.zeros((B, d)), k, rng=rng, block_size=B, epsilon=eps, delta=delta)
    assert out.release["noise_scale"] == pytest.approx(sig)
    assert out.guarantee.epsilon == eps and out.guarantee.neighbouring == "replace-one-row"
    # replay: same seed -> X0 then the noise draw of block 1
    r2 = np.random.default_rng(3)
    _ = r2.standard_normal((d, k))  # random_orthonormal(d, k) consumes d*k normals
    G = r2.normal(0.0, sig, size=(d, k))
    assert np.std(G) == pytest.approx(sig, rel=0.15)
    from mechanisms.linalg import orthonormalize

    np.testing.assert_allclose(np.abs(out.components), np.abs(orthonormalize(G)), atol=1e-10)


def test_private_variant_needs_unit_rows():
    rng = np.random.default_rng(4)
    sampler, _ = make_spiked(6, 1, 3.0, 0.5, rng)
    X = sampler(400, rng)
    streaming_power(X, 1, rng=rng, block_size=100)  # non-private: any finite rows
    with pytest.raises(PrivacyInputError):
        streaming_power(X, 1, rng=rng, block_size=100, epsilon=1.0, delta=1e-6)
    out = streaming_power(X, 1, rng=rng, block_size=100, epsilon=1.0, delta=1e-6, clip=True)
    assert out.diagnostics["n_clipped"] > 0


def test_bad_inputs():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((100, 5)) / 10
    with pytest.raises(PrivacyInputError):
        streaming_power(X, 1, rng=rng, block_size=200)
    with pytest.raises(PrivacyInputError):
        streaming_power(X, 1, rng=rng, block_size=50, iterations=3)
    with pytest.raises(PrivacyInputError):
        streaming_power(X, 5, rng=rng, block_size=50)
    with pytest.raises(PrivacyInputError):
        streaming_power(X, 1, rng=rng, block_size=0)
    bad = X.copy()
    bad[1, 1] = np.nan
    with pytest.raises(PrivacyInputError):
        streaming_power(bad, 1, rng=rng, block_size=50)
    with pytest.raises(PrivacyInputError):
        streaming_power(X, 1, rng=rng, block_size=50, epsilon=0.0)
    # chunks in an iterator work and are regrouped into blocks
    out = streaming_power((X[i : i + 30] for i in range(0, 100, 30)), 1, rng=rng, block_size=25)
    assert out.release["iterations"] == 4


def test_prepared_data_is_read_as_its_rows():
    from mechanisms._base import PreparedData

    rng = np.random.default_rng(5)
    X = rng.standard_normal((300, 6))
    X /= np.linalg.norm(X, axis=1).max()
    a = streaming_power(X, 2, rng=np.random.default_rng(0), block_size=100, epsilon=1.0, delta=1e-5)
    b = streaming_power(
        PreparedData(X), 2, rng=np.random.default_rng(0), block_size=100, epsilon=1.0, delta=1e-5
    )
    assert np.array_equal(a.components, b.components) and b.release["iterations"] == 3
