"""The Wishart mechanism (Jiang, Xie & Zhang, AAAI 2016; Imtiaz & Sarwate, ICASSP 2016): published as
(ε, 0)-differentially private, and not differentially private for any ε.  A known-broken audit variant
only (``experiments/audit/variants.py``, ``experiment.variant=wishart``): not registered, never
reachable from a default configuration.

The release is Â = A + W, A = XᵀX/n, W ~ Wishart_d(d + 1, C) with C = 3/(2nε)·I (the parameters the
variant uses: see :data:`WISHART_SCALE_NUMERATOR`), and the top-k eigenvectors of Â.  W is positive
definite almost surely, so the support of Â given the data is {Â : Â − A ≻ 0}: it moves with the
data.  For neighbouring data sets X, X′ (one row x replaced by x′) and a unit vector u with
(uᵀx)² > (uᵀx′)², the event E = {uᵀÂu ≤ uᵀAu} has probability 0 under X (uᵀÂu = uᵀAu + uᵀWu and
uᵀWu > 0 almost surely) and probability

    P[uᵀWu < (uᵀx)²/n − (uᵀx′)²/n] = F_{χ²_{d+1}}(((uᵀx)² − (uᵀx′)²) / (n·c)) > 0

under X′ (uᵀWu ~ c·χ²_{d+1} for C = c·I), so P[E | X′] ≤ e^ε P[E | X] + δ fails for every ε and every
δ below that probability.  With c = 3/(2nε), x = e₁, x′ = e₂ and u = e₁ it is F_{χ²_{d+1}}(2ε/3),
whatever n: 0.279 for d = 2, ε = 2 (:func:`wishart_counterexample_probability`).  The density ratio of
Â under X and X′ is exp(tr(C⁻¹(A − A′))/2) where both densities are positive (bounded: the two
second moments differ by (xxᵀ − x′x′ᵀ)/n), but the two supports differ, and on their difference the
ratio is 0 or ∞.  Any positive definite C fails the same way: the defect is the one-sided support of
the noise, not its scale.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import chi2

from ._base import (
    MechanismOutput,
    PrivacyGuarantee,
    check_data,
    check_epsilon,
    check_k,
)
from .linalg import top_k_eigenvectors

#: C = WISHART_SCALE_NUMERATOR / (n ε) · I: the scale matrix 3/(2nε)·I of the Wishart noise as this
#: harness was asked to use it for Jiang, Xie & Zhang (2016); the paper's text was not available here
#: to check it against.  Implementations differ: diffprivlib's deprecated one (after Imtiaz & Sarwate)
#: drew a d × (d + 1) Gaussian G with entries of standard deviation s/(2ε), s its sensitivity
#: argument, and added W = G Gᵀ, i.e. C = (s/(2ε))²·I on the matrix it was given.  The
#: counterexample does not depend on C (any positive definite C fails).
WISHART_SCALE_NUMERATOR = 1.5


def wishart_scale(n: int, epsilon: float) -> float:
    """c of the Wishart scale matrix C = c·I: 3/(2nε) (:data:`WISHART_SCALE_NUMERATOR`)."""
    return WISHART_SCALE_NUMERATOR / (n * epsilon)


def wishart_counterexample_probability(d: int, epsilon: float) -> float:
    """P[Â₁₁ ≤ A₁₁(X) | X′] for the pair X = {e₁, 0, …}, X′ = {e₂, 0, …} of n rows in R^d: the
    probability, under X′, of an event impossible under X.  Â₁₁ = W₁₁ ~ c·χ²_{d+1} under X′ and
    A₁₁(X) = 1/n, so it is F_{χ²_{d+1}}(1/(n·c)) = F_{χ²_{d+1}}(2ε/3), for every n."""
    return float(chi2.cdf(1.0 / WISHART_SCALE_NUMERATOR * epsilon, d + 1))


def wishart_noise(d: int, scale: float, rng: np.random.Generator) -> np.ndarray:
    """W = G Gᵀ with G a d × (d + 1) matrix of i.i.d. N(0, scale) entries: W ~ Wishart_d(d + 1, scale·I)."""
    G = rng.standard_normal((d, d + 1)) * np.sqrt(scale)
    W = G @ G.T
    return (W + W.T) / 2


def _second_moment(X: np.ndarray) -> np.ndarray:
    """A = XᵀX/n summed over the rows sorted by their bytes: the same bits for any order of the rows."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    keys = X.view(np.dtype((np.void, X.dtype.itemsize * X.shape[1]))).ravel()
    Xs = X[np.argsort(keys, kind="stable")]
    A = Xs.T @ Xs / X.shape[0]
    return (A + A.T) / 2


def wishart_mechanism(
    X,
    k: int,
    *,
    epsilon: float,
    rng: np.random.Generator,
    clip: bool = False,
) -> MechanismOutput:
    """The Wishart mechanism as published: Â = A + W, W ~ Wishart_d(d + 1, 3/(2nε)·I), and its top-k
    eigenvectors.  **Not differentially private** (module docstring): its guarantee records the
    published (ε, 0) claim with status ``"known false"``.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Rows of L2 norm at most 1 (see ``clip``).
    k : int
        1 <= k < d.
    epsilon : float
        The claimed ε > 0.
    rng : numpy.random.Generator
        Source of the Wishart noise.
    clip : bool, default False
        Scale rows above the unit norm back onto the unit ball instead of refusing them.

    Returns
    -------
    MechanismOutput
        ``components`` (top-k eigenvectors of Â); ``release`` with ``status``, ``noisy_second_moment``
        (Â itself, d × d, which the published mechanism releases and its claim is about) and
        ``wishart_scale`` (c, a function of the public n and ε under replace-one-row);
        ``diagnostics`` with ``n_clipped``.

    References
    ----------
    Jiang, Xie and Zhang, "Wishart mechanism for differentially private principal components
    analysis", AAAI 2016 (arXiv:1511.05680).  Imtiaz and Sarwate, "Symmetric matrix perturbation for
    differentially-private principal component analysis", ICASSP 2016.  Shown not private by Sheffet,
    "Old techniques in differentially private linear regression", ALT 2019 (footnote 4), and by Amin,
    Dick, Kulesza, Muñoz Medina and Vassilvitskii, "Differentially private covariance estimation",
    NeurIPS 2019 (§1.2); diffprivlib (IBM) deprecated, then removed, its implementation as not
    private.
    """
    epsilon = check_epsilon(epsilon)
    X, n_clipped = check_data(X, clip=clip)
    n, d = X.shape
    k = check_k(k, d)
    c = wishart_scale(n, epsilon)
    noisy = _second_moment(X) + wishart_noise(d, c, rng)
    V = top_k_eigenvectors(noisy, k)
    guarantee = PrivacyGuarantee(
        epsilon,
        0.0,
        "replace-one-row",
        note=(
            "KNOWN FALSE: Wishart mechanism (JXZ16, IS16), claimed (epsilon, 0)-DP; the noise's "
            "support is the positive definite cone shifted by the data, so an event of positive "
            "probability under one data set has probability 0 under its neighbour"
        ),
        status="known false",
    )
    return MechanismOutput(
        V,
        guarantee,
        release={"status": "ok", "noisy_second_moment": noisy, "wishart_scale": c},
        diagnostics={"n_clipped": n_clipped},
    )
