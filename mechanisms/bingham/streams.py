"""Per-chain random streams for the Numba kernels: one xoshiro256** state per chain.

The Givens kernel runs several chains in lockstep, so each chain needs a generator of its own
inside the kernel: chain c draws only from column c of a ``(4, n_chains)`` array of uint64 states,
and its draws are the same whether it runs alone or beside other chains.  The generator is xoshiro256**
(Blackman & Vigna, "Scrambled linear pseudorandom number generators", ACM TOMS 47(4), 2021), and a
uniform double is its top 53 bits × 2⁻⁵³, as in NumPy.  The states are a ``(4, n_chains)`` array (word
by chain, so that the kernels advance many chains with one vector instruction); chain c's four words
are drawn from its own ``numpy.random.Generator`` (:func:`kernel_states`), so a run is a function of
the chains' generators alone, and reproducible from their seeds.  :func:`uniform_if` advances a
chain only where asked, so a chain's stream never depends on the other chains of a call.
:func:`standard_normal` draws a normal deviate from a chain's stream (for the Givens angles'
Gaussian envelope).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ._numba import njit

__all__ = [
    "CHAIN_STREAMS",
    "chain_generators",
    "kernel_states",
    "standard_normal",
    "uniform",
    "uniform_if",
]

#: how the chains draw, as PPCA releases state it: a stored release whose chains drew otherwise does
#: not re-run bit for bit (every draw differs), and a rerun names this as the cause
CHAIN_STREAMS = (
    "xoshiro256** per chain, seeded from the chain's numpy Generator; "
    "Givens angles by Best-Fisher for kappa < 25, else by a Gaussian envelope on sin(X/2)"
)

_TWO_M53 = 1.0 / 9007199254740992.0  # 2⁻⁵³


def chain_generators(
    rng: np.random.Generator | Sequence[np.random.Generator], n_chains: int
) -> list[np.random.Generator]:
    """One generator per chain: the given sequence (length ``n_chains``) as it is, or, for a single
    generator, ``n_chains`` children seeded with 256 bits each drawn from it in chain order.

    Chain c of a run is driven by its generator alone (its start, its kernel stream and, for the
    reduced Givens chain, its null-space completion), so the same generator gives the same chain
    whether it runs alone or in lockstep with others.
    """
    if isinstance(rng, np.random.Generator):
        seeds = rng.integers(0, 2**63, size=(int(n_chains), 4), dtype=np.int64)
        return [np.random.default_rng(np.random.SeedSequence(s.tolist())) for s in seeds]
    gens = list(rng)
    if len(gens) != int(n_chains) or not all(isinstance(g, np.random.Generator) for g in gens):
        raise ValueError("rng must be a numpy Generator or a sequence of n_chains Generators")
    return gens


def kernel_states(gens: Sequence[np.random.Generator]) -> np.ndarray:
    """``(4, len(gens))`` uint64 xoshiro256** states, column c drawn from ``gens[c]`` (never all zero)."""
    states = np.empty((4, len(gens)), dtype=np.uint64)
    for c, g in enumerate(gens):
        s = g.integers(0, 2**64, size=4, dtype=np.uint64, endpoint=False)
        while not s.any():  # the one state xoshiro cannot leave (probability 2⁻²⁵⁶)
            s = g.integers(0, 2**64, size=4, dtype=np.uint64, endpoint=False)
        states[:, c] = s
    return states


@njit(cache=True, inline="always")
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@njit(cache=True, inline="always")
def uniform_if(state, c, advance):
    """Next uniform double in [0, 1) of chain c's stream (column c of ``state``) if ``advance``; else
    the state is left as it is (the value returned is then meaningless).  Written with selects, not
    a branch, so that a loop over chains compiles to vector instructions."""
    s0 = state[0, c]
    s1 = state[1, c]
    s2 = state[2, c]
    s3 = state[3, c]
    result = _rotl(s1 * np.uint64(5), 7) * np.uint64(9)
    t = s1 << np.uint64(17)
    n2 = s2 ^ s0
    n3 = s3 ^ s1
    n1 = s1 ^ n2
    n0 = s0 ^ n3
    n2 ^= t
    n3 = _rotl(n3, 45)
    state[0, c] = n0 if advance else s0
    state[1, c] = n1 if advance else s1
    state[2, c] = n2 if advance else s2
    state[3, c] = n3 if advance else s3
    return float(result >> np.uint64(11)) * _TWO_M53


@njit(cache=True, inline="always")
def uniform(state, c):
    """Next uniform double in [0, 1) of chain c's stream (column c of ``state``, advanced in place)."""
    return uniform_if(state, c, True)


@njit(cache=True, inline="always")
def standard_normal(state, c):
    """A standard normal draw from chain c's stream: Marsaglia's polar method (two uniforms on the
    square, kept when inside the unit disc, probability π/4), one of the pair it makes (the other is
    dropped, so that a draw depends on nothing but the stream)."""
    while True:
        x = 2.0 * uniform(state, c) - 1.0
        y = 2.0 * uniform(state, c) - 1.0
        s = x * x + y * y
        if 0.0 < s < 1.0:
            return x * math.sqrt(-2.0 * math.log(s) / s)
