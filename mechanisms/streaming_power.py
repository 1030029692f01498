"""Streaming PCA by the noisy power method — Hardt & Price (NIPS 2014), section 3 / appendix D.

Appendix D of the paper (Lemma D.1, proof of Theorem 3.2, Lemma D.2
for the spiked covariance model).  Each iteration consumes a FRESH block of B samples:

    Y_l = (1/B) Σ_{z in block l} z zᵀ X_{l-1},   X_l = orthonormalise(Y_l)

so ``Y_l = A X_{l-1} + G_l`` with the sampling error ``G_l = (Â_l − A) X_{l-1}`` playing the noise
of the noisy power method (appendix D, first paragraph).  The stream is consumed once, block after
block; memory is O(d p).

Privacy (a choice, derived here; the paper's streaming result is non-private):
* ``epsilon=None`` (default): non-private, ``PrivacyGuarantee(inf, 0, "none")``; rows need no norm
  bound (any finite data is accepted).
* ``epsilon`` given: rows must have L2 norm <= 1 (``clip=True`` rescales) and each block product gets
  Gaussian noise N(0, σ²)^{d x p} with ``σ = gaussian_sigma(sqrt(2)/B, ε, δ)``: replacing one row
  changes ONE block's product by ``(xxᵀ − yyᵀ) X_{l-1} / B`` of Frobenius norm <= sqrt(2)/B
  (see ``mechanisms/noisy_power.py``), and blocks are disjoint, so by parallel composition (the
  later iterations only see earlier *released* iterates) the whole run is (ε, δ)-DP for
  replace-one-row — no composition over L is needed.  Rows beyond the last full block are not read.
  ``calibration="tight"``: the same release, σ the smallest for the exact Gaussian profile at
  sensitivity sqrt(2)/B (:func:`mechanisms.calibration.gaussian_sigma_tight`, dp-accounting).

Release: ``status``, ``iterations`` (L), ``block_size``, ``samples_used`` (L·B; n is public under
replace-one-row), ``p``, ``noise_scale`` (σ: a function of ε, δ, B only; 0 if non-private),
``calibration``.  Diagnostics (not private): ``n_clipped``.  Every block (whatever container the
stream arrives in, :class:`PreparedData` included) goes through the shared row-norm check ``check_data``.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from ._base import (
    MechanismOutput,
    PreparedData,
    PrivacyGuarantee,
    PrivacyInputError,
    check_data,
    check_delta,
    check_epsilon,
    check_k,
    stream_chunk,
)
from .calibration import check_calibration, gaussian_sigma, gaussian_sigma_tight
from .linalg import orthonormalize, random_orthonormal
from .metrics import projector_distance


def streaming_power_noise_scale(
    epsilon: float, delta: float, block_size: int, calibration: str = "paper"
) -> float:
    """σ of the private streaming variant (one Gaussian mechanism per disjoint block; parallel
    composition): ``"paper"`` gaussian_sigma(sqrt(2)/B, ε, δ) (classical or zCDP, whichever is
    smaller); ``"tight"`` gaussian_sigma_tight(sqrt(2)/B, ε, δ) (exact profile, dp-accounting)."""
    sigma = gaussian_sigma if check_calibration(calibration) == "paper" else gaussian_sigma_tight
    return sigma(math.sqrt(2.0) / block_size, epsilon, delta)


def _row_blocks(stream: Any, block_size: int) -> Iterator[np.ndarray]:
    """Yield consecutive B x d blocks from an array, an iterable of rows, or an iterable of chunks."""
    if isinstance(stream, PreparedData):  # the runners' validated data: its rows, in order
        stream = stream.X
    if isinstance(stream, np.ndarray):
        for s in range(0, stream.shape[0] - block_size + 1, block_size):
            yield stream[s : s + block_size]
        return
    buf: list[np.ndarray] = []
    have = 0
    width = None
    for item in stream:
        a = stream_chunk(item, width)  # a row of another length: one text, wherever it is
        width = a.shape[1]
        buf.append(a)
        have += a.shape[0]
        while have >= block_size:
            allrows = np.vstack(buf)
            yield allrows[:block_size]
            rest = allrows[block_size:]
            buf, have = ([rest] if rest.shape[0] else []), rest.shape[0]


def streaming_power(
    X: Any,
    k: int,
    *,
    rng: np.random.Generator,
    block_size: int,
    iterations: int | None = None,
    p: int | None = None,
    d: int | None = None,
    epsilon: float | None = None,
    delta: float = 1e-6,
    clip: bool = False,
    calibration: str = "paper",
) -> MechanismOutput:
    """Block streaming power method (Hardt–Price Theorem 3.2 / appendix D); optional private variant.

    Parameters
    ----------
    X : array-like of shape (n, d), PreparedData, or iterable of rows or row chunks
        The stream, read once; a private run requires rows of L2 norm at most 1 (see ``clip``).
    k : int
        Dimension of the released subspace, 1 <= k < d.
    rng : numpy.random.Generator
        Source of the starting matrix and of the noise.
    block_size : int
        Rows per block B; each power step consumes one disjoint block.
    iterations : int, optional
        Number L of blocks to consume; default as many full blocks as the stream holds.
    p : int, optional
        Number of iterated columns (default k); the output is the first k columns of X_L.
    d : int, optional
        Dimension, needed only when the stream cannot tell it before its first row.
    epsilon : float, optional
        None (default) runs the paper's non-private method; a value ε > 0 the private variant.
    delta : float, default 1e-6
        Privacy parameter δ in (0, 1) of the private variant.
    clip : bool, default False
        Scale rows above the unit norm back onto the unit ball instead of refusing them.
    calibration : {"paper", "tight"}, default "paper"
        Noise of the private variant (:func:`streaming_power_noise_scale`); ignored when
        non-private.

    Returns
    -------
    MechanismOutput
        ``components`` (d x k, orthonormal), the guarantee ((ε, δ), replace-one-row, for the
        private variant; none otherwise), and the ``release`` and ``diagnostics`` (not private)
        fields listed in the module docstring.

    References
    ----------
    Hardt and Price, "The noisy power method: a meta algorithm with applications", NeurIPS 2014,
    Theorem 3.2 and appendix D.
    """
    calibration = check_calibration(calibration)
    if block_size < 1:
        raise PrivacyInputError(f"block_size must be >= 1, got {block_size}")
    private = epsilon is not None
    if private:
        eps = check_epsilon(epsilon)
        dl = check_delta(delta)
        sigma = streaming_power_noise_scale(eps, dl, block_size, calibration)
    else:
        sigma = 0.0
    bound = 1.0 if private else float("inf")
    pre_clipped = X.n_clipped if isinstance(X, PreparedData) else 0
    stream = not isinstance(X, (np.ndarray, PreparedData))  # d is then the first row's length
    blocks = _row_blocks(X, block_size)
    Xl = None
    L = 0
    n_clipped = 0
    for B in blocks:
        B, nc = check_data(B, row_norm_bound=bound, clip=clip)
        n_clipped += nc
        if Xl is None:
            d = B.shape[1]
            k = check_k(k, d, stream=stream)
            p = k if p is None else int(p)
            if not (k <= p <= d):
                raise PrivacyInputError(f"p must satisfy k <= p <= d, got {p}")
            Xl = random_orthonormal(d, p, rng)
        Y = B.T @ (B @ Xl) / block_size
        if private:
            Y = Y + rng.normal(0.0, sigma, size=Y.shape)
        Xl = orthonormalize(Y)
        L += 1
        if iterations is not None and L >= iterations:
            break
    if Xl is None:
        raise PrivacyInputError(f"the stream holds fewer than block_size={block_size} rows")
    if iterations is not None and L < iterations:
        # the number of blocks read is a function of the stream's length: not named
        raise PrivacyInputError(
            f"the stream ran out before iterations={iterations} blocks of block_size={block_size} rows"
        )
    if private:
        guarantee = PrivacyGuarantee(
            eps,
            dl,
            "replace-one-row",
            exact=True,
            note="private streaming power method: Gaussian noise per disjoint block",
        )
    else:
        guarantee = PrivacyGuarantee(float("inf"), 0.0, "none", note="non-private streaming PCA")
    release = {
        "status": "ok",
        "iterations": L,
        "block_size": block_size,
        "samples_used": L * block_size,
        "p": p,
        "noise_scale": sigma,
        "calibration": calibration if private else None,
    }
    return MechanismOutput(
        components=Xl[:, :k].copy(),
        guarantee=guarantee,
        release=release,
        diagnostics={"n_clipped": n_clipped + pre_clipped},
    )


def streaming_error_curve(
    sampler: Callable[[int, np.random.Generator], np.ndarray],
    U: np.ndarray,
    k: int,
    *,
    rng: np.random.Generator,
    block_sizes: Iterable[int],
    iterations: int,
    repeats: int = 1,
    p: int | None = None,
    epsilon: float | None = None,
    delta: float = 1e-6,
    clip: bool = False,
):
    """Error ||UUᵀ − VVᵀ||₂ of :func:`streaming_power` against the number of samples L·B.

    ``sampler(n, rng)`` returns an n x d sample (e.g. the spiked covariance model); ``U`` (d x k) is
    the true top-k subspace.  For every block size B and repeat, a fresh stream of L·B samples is
    drawn and consumed once.  Returns a pandas DataFrame with columns
    ``block_size, n_samples, repeat, error`` (a dict of arrays if pandas is unavailable).
    """
    rows = []
    for B in block_sizes:
        for r in range(repeats):
            X = sampler(int(B) * iterations, rng)
            out = streaming_power(
                X,
                k,
                rng=rng,
                block_size=int(B),
                iterations=iterations,
                p=p,
                epsilon=epsilon,
                delta=delta,
                clip=clip,
            )
            rows.append((int(B), int(B) * iterations, r, projector_distance(out.components, U)))
    cols = ["block_size", "n_samples", "repeat", "error"]
    try:
        import pandas as pd

        return pd.DataFrame(rows, columns=cols)
    except ImportError:  # pragma: no cover
        return {c: np.array([row[i] for row in rows]) for i, c in enumerate(cols)}
