"""Samplers for the (matrix) Bingham distribution BMF(B): density ∝ exp(tr(VᵀBV)) on d × k frames.

One module per sampler, each with its derivation in its docstring:

:mod:`.vector`
    ``sample_vector_bingham`` (k = 1, **exact**): ACG-envelope rejection (Kent, Ganeiber & Mardia
    2018).
:mod:`.column`
    ``reference_gibbs_sweep`` / ``column_gibbs_sweeps`` (k ≥ 1, **reference MCMC**): Hoff (2009)'s
    column-wise Gibbs sampler with every column drawn exactly from its conditional
    (``sample_bingham_column``, without a basis of the null space).
:mod:`.rstiefel`
    ``rstiefel_gibbs_sweep``: the paper's own sampler, Hoff's ``rstiefel`` with one inner
    coordinate sweep per column (measured against the others, never used for a release by default).
:mod:`.givens`
    ``givens_sweeps`` (k ≥ 1, **fast MCMC**, the default for k > 1): Gibbs on the orthogonal group by
    Givens rotations, the Numba kernel, several chains in lockstep.
:mod:`.streams`
    per-chain random streams (xoshiro256**) inside the Numba kernels.
:mod:`.chains`
    ``run_bingham_chains``: the multi-chain driver used by ppca and the Figure-2 experiment.

Test oracles, never used for a release: :mod:`.exact` (MACG rejection, k ≥ 1, moderate B),
:mod:`.asymptotics` (the Gaussian-equivalence limit at large d) and :mod:`.condensed` (exact
importance-sampling moments and the limit where the top k eigenvalues condense, PPCA's regime).
"""

from __future__ import annotations

from ._numba import seed_numba
from .chains import NULL_SPACE_TOLERANCE_ULPS, null_space_split, run_bingham_chains
from .column import (
    CHOLESKY_MIN_DIM,
    COLUMN_POWER_ITERATIONS,
    column_gibbs_sweeps,
    complement_basis,
    reference_gibbs_sweep,
    sample_bingham_column,
)
from .givens import GIBBS_SWEEPS_PER_ITERATION, givens_angle, givens_sweeps, vonmises_draw
from .rstiefel import rstiefel_gibbs_sweep
from .streams import CHAIN_STREAMS, chain_generators, kernel_states
from .vector import acg_beta, acg_log_accept, sample_vector_bingham, sample_vector_bingham_cholesky

__all__ = [
    "acg_beta",
    "acg_log_accept",
    "sample_vector_bingham",
    "sample_vector_bingham_cholesky",
    "sample_bingham_column",
    "column_gibbs_sweeps",
    "complement_basis",
    "reference_gibbs_sweep",
    "rstiefel_gibbs_sweep",
    "givens_sweeps",
    "givens_angle",
    "vonmises_draw",
    "chain_generators",
    "CHAIN_STREAMS",
    "kernel_states",
    "seed_numba",
    "null_space_split",
    "run_bingham_chains",
    "CHOLESKY_MIN_DIM",
    "COLUMN_POWER_ITERATIONS",
    "GIBBS_SWEEPS_PER_ITERATION",
    "NULL_SPACE_TOLERANCE_ULPS",
]
