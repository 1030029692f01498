"""The peers, run by the harness: IBM diffprivlib's and OpenDP's private PCA as optional mechanisms.

Why here and not in :mod:`mechanisms`: the peers run in a *subprocess* (``experiments/peers/worker.py``)
so that every run has a wall-clock cap -- both peers ship a vector-Bingham rejection sampler that can
stall (docs/peers.md) -- and so that a peer may live in an environment of its own: diffprivlib 0.6.6
(and its fork diffprivlib-fix 0.6.7) fails to import with scikit-learn >= 1.9, which privpca's own
environment may use.  That is process and file I/O, which the library code does not do.

Mechanism contract (as every privpca mechanism): ``mechanism(X, k, *, rng, epsilon, ...) ->
MechanismOutput``.  Here ``epsilon`` is the ε the **peer certifies by its own accounting** for the
release (diffprivlib's ``BudgetAccountant``; OpenDP's privacy map at one changed row), so that runs
are compared at equal certified privacy; the guarantee records that certified ε, the neighbouring
relation the peer's accounting uses, and ``exact=False``: both peers' vector-Bingham samplers draw
from another law than the one their proofs assume (the d = 2 check, :func:`bingham_d2_check`).

Which interpreter runs a peer (:func:`peer_python`): ``python=`` if given (or ``$PRIVPCA_PEERS_PYTHON``),
else the current interpreter if the peer imports there (``pip install -e '.[peers]'``), else the
harness's own environment ``<repo>/.venv-peers``, created on first use with
:data:`PEER_VENV_REQUIREMENTS` (disable with ``install=False`` or ``$PRIVPCA_PEERS_INSTALL=0``).
A peer that cannot be made available raises :class:`PeerUnavailableError`, which ends a
``run.py`` job with one line (it is a ``SystemExit``).
"""

from __future__ import annotations

from experiments.peers.adapters import diffprivlib_pca, opendp_pca, run_peer_pca
from experiments.peers.checks import (
    ACCOUNTING_CALLS,
    accounting_check,
    bingham_d2_check,
    bingham_d2_target,
)
from experiments.peers.environment import (
    PEER_VENV,
    PEER_VENV_REQUIREMENTS,
    PEERS,
    WORKER,
    WORKER_ENV,
    PeerError,
    PeerSpec,
    PeerUnavailableError,
    call_worker,
    create_peer_venv,
    peer_python,
    peer_spec,
)
from experiments.peers.runner import peers_tables, run_peers

__all__ = [
    "ACCOUNTING_CALLS",
    "PEERS",
    "PEER_VENV",
    "PEER_VENV_REQUIREMENTS",
    "PeerError",
    "PeerSpec",
    "PeerUnavailableError",
    "WORKER",
    "WORKER_ENV",
    "accounting_check",
    "bingham_d2_check",
    "bingham_d2_target",
    "call_worker",
    "create_peer_venv",
    "diffprivlib_pca",
    "opendp_pca",
    "peer_python",
    "peer_spec",
    "peers_tables",
    "run_peer_pca",
    "run_peers",
]
