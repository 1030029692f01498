"""k-DP-PCA: Düngler & Sanyal, "An iterative algorithm for differentially private k-PCA with
adaptive noise" (NeurIPS 2025, arXiv 2508.10879): the top-k subspace by k rounds of a DP-PCA-style
private Oja pass, each on fresh rows projected onto the orthogonal complement of the directions
already found (deflation).

**Sources and fidelity.**  Only the paper's abstract could be consulted where this module was
written.  It states: stochastic k-PCA of i.i.d. matrices A_i with common mean Σ, DP for each
A_i, an iterative algorithm extending DP-PCA (Liu et al. 2022) from k = 1 to any k with adaptive
noise, matching DP-PCA's utility for k = 1.  This module implements that description for
A_i = x_i x_iᵀ: :func:`mechanisms.dp_pca.private_oja` with k rounds (DP-PCA is the same run with
one round).  Round j is the private minibatch Oja pass of :mod:`mechanisms.dp_pca` (with its
adaptive private mean) on the j-th of k disjoint parts of the rows, each row x replaced by
P_{j−1} x with P_{j−1} = I − U_{j−1}U_{j−1}ᵀ the projector onto the complement of the directions
u_1..u_{j−1} already released (round 1 projects nothing); u_j is the round's output, projected,
normalised and orthonormalised against U_{j−1}.  The paper's own algorithm box, its constants and its accounting could
not be checked against this: docs/dp_pca.md says so.

**Privacy (replace-one-row, every input with rows in the unit ball).**  The rows are put in a
uniformly random order from ``rng`` (``shuffle=True``) or taken as given, and split into k
consecutive parts of T·B rows (rows beyond k·T·B are not read).  A row is read in exactly one
minibatch of one round; P_{j−1} is a function of earlier releases only and ‖P x‖ <= ‖x‖ <= 1, so
every gradient fed to the private mean has norm <= 1 and each minibatch's release is ρ-zCDP given
the past (:mod:`mechanisms.dp_pca`).  Parallel composition over all k·T disjoint minibatches (the
chain rule of Rényi divergence) makes the whole run ρ-zCDP; the output is post-processing.  No
step uses the sub-Gaussian assumption, which the utility needs.

Release vs diagnostics: as :mod:`mechanisms.dp_pca`, every per-iteration list concatenated over
the k rounds (``rounds`` = k, ``iterations`` = T per round, ``samples_used`` = k·T·B); diagnostics
(not private) ``n_clipped``, ``n_gradients_clipped``, ``n``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._base import (
    MechanismOutput,
    PrivacyGuarantee,
    check_data,
    check_delta,
    check_flag,
    check_k,
)
from .calibration import zcdp_budget
from .dp_pca import (  # noqa: F401  (the noise-scale names are looked up here at call time)
    center_noise_scale,
    mean_noise_scale,
    mechanism_scales,
    private_oja,
    range_laplace_scale,
    run_release,
)

RELATION = "replace-one-row"
PAPER = (
    'Düngler & Sanyal, "An iterative algorithm for differentially private k-PCA with adaptive '
    'noise", NeurIPS 2025'
)


def k_dp_pca(
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
    """k-DP-PCA (Düngler & Sanyal 2025): k deflation rounds of the private minibatch Oja pass of
    :mod:`mechanisms.dp_pca`, each on its own n/k rows (module docstring).

    Parameters
    ----------
    X : array-like of shape (n, d)
        The data; every row must have L2 norm at most 1 (refused above unless ``clip=True``).
    k : int
        Dimension of the released subspace, 1 <= k < d.
    rng : numpy.random.Generator
        Source of the row order, the starting vectors and all noise.
    epsilon : float
        Privacy parameter ε > 0 (the run is ρ-zCDP at the largest ρ certifying (ε, δ)).
    delta : float, default 1e-6
        Privacy parameter δ in (0, 1).
    rho : float, optional
        Run at this ρ-zCDP instead; the recorded ε is then the one ρ certifies at δ.
    batch_size : int, optional
        B rows per minibatch; default (n // k) // T.
    iterations : int, optional
        T minibatches per round; default (n // k) // B, or ⌈log2(n/k)⌉ when B is not given either.
    shuffle : bool, default True
        Read the rows in the order ``rng.permutation(n)`` (the first draw from ``rng``).
    clip : bool, default False
        Scale rows above the unit norm back onto the unit ball instead of refusing them.
    return_trace : bool, default False
        Put every private minibatch mean into ``release["trace"]``.

    Returns
    -------
    MechanismOutput
        ``components`` (d × k, orthonormal; column j from round j), the ρ-zCDP / (ε, δ) guarantee
        (replace-one-row) and the ``release`` and ``diagnostics`` (not private) fields of the
        module docstring.

    References
    ----------
    Düngler and Sanyal, "An iterative algorithm for differentially private k-PCA with adaptive
    noise", NeurIPS 2025 (arXiv 2508.10879); Liu, Kong, Jain and Oh, "DP-PCA", NeurIPS 2022.
    """
    X, n_clipped = check_data(X, clip=clip)
    n, d = X.shape
    k = check_k(k, d)
    shuffle = check_flag(shuffle, "shuffle")
    check_delta(delta)
    rho_run, eps, dl = zcdp_budget(epsilon, delta, rho)
    run = private_oja(
        X,
        k,
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
            "k-DP-PCA (Dungler & Sanyal 2025) as k deflation rounds of DP-PCA's private Oja pass "
            "on disjoint rows: rho-zCDP per disjoint minibatch, parallel composition; privacy for "
            "every input with rows in the unit ball, utility for sub-Gaussian data; "
            "reconstructed from the abstract (docs/dp_pca.md)"
        ),
        rho=rho_run,
    )
    return MechanismOutput(
        components=run["basis"],
        guarantee=guarantee,
        release=run_release(run, rho_run, shuffle, rounds=k),
        diagnostics={
            "n_clipped": n_clipped,
            "n_gradients_clipped": run["log"]["n_clipped"],
            "n": n,
        },
    )
