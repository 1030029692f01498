"""The settings of ``experiment=peers``, read from the config once (:class:`PeersSettings`).

conf/experiment/peers.yaml is the one source of their defaults: every key is read from the config,
none has a default here, and a key missing from the config is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from experiments.peers.environment import PEERS


@dataclass(frozen=True)
class PeersSettings:
    """The grid of the peers experiment and its two checks (conf/experiment/peers.yaml explains each key).

    Attributes
    ----------
    datasets, mechanisms : tuple of str
        The data sets and the mechanisms (privpca's and the peers) compared.
    epsilons : tuple of float
        The requested ε of each cell.
    n_min, n_points : int
        The log grid of n from ``n_min`` to the full set, unless ``n_grid`` is given.
    n_grid : tuple of int or None
        An explicit list of n (used for every data set).
    restarts : int
        Runs per cell.
    timeout : float
        Wall-clock cap per peer run, seconds.
    skip_after_timeout : bool
        No further restarts in a cell whose run timed out.
    mechanism_params : dict
        Per mechanism, extra ``fn`` parameters.
    check_kappa, check_draws, check_seed, check_timeout
        The d = 2 sampler check (``sampler_check``).
    check_peers : tuple of str
        The implementations checked besides privpca (``sampler_check.peers``; null: the peers among
        ``mechanisms``).
    accounting_epsilon : float or None
        ε of the accounting check (None: no accounting check).
    """

    datasets: tuple[str, ...]
    mechanisms: tuple[str, ...]
    epsilons: tuple[float, ...]
    n_min: int
    n_points: int
    n_grid: tuple[int, ...] | None
    restarts: int
    timeout: float
    skip_after_timeout: bool
    mechanism_params: dict[str, dict[str, Any]]
    check_kappa: float
    check_draws: int
    check_seed: int
    check_timeout: float
    check_peers: tuple[str, ...]
    accounting_epsilon: float | None

    @classmethod
    def from_config(cls, cfg) -> PeersSettings:
        """Read the settings of ``cfg`` (composed with ``experiment=peers``)."""
        from omegaconf import OmegaConf

        e = cfg.experiment
        sc = e.sampler_check
        mechanisms = tuple(str(m) for m in e.mechanisms)
        params = (
            OmegaConf.to_container(e.mechanism_params, resolve=True) if e.mechanism_params else {}
        )
        return cls(
            datasets=tuple(str(d) for d in e.datasets),
            mechanisms=mechanisms,
            epsilons=tuple(float(eps) for eps in e.epsilons),
            n_min=int(e.n_min),
            n_points=int(e.n_points),
            n_grid=tuple(int(n) for n in e.n_grid) if e.n_grid else None,
            restarts=int(e.restarts),
            timeout=float(e.timeout),
            skip_after_timeout=bool(e.skip_after_timeout),
            mechanism_params=params,
            check_kappa=float(sc.kappa),
            check_draws=int(sc.draws),
            check_seed=int(sc.seed),
            check_timeout=float(sc.timeout),
            check_peers=(
                tuple(m for m in mechanisms if m in PEERS)
                if sc.peers is None
                else tuple(str(p) for p in sc.peers)
            ),
            accounting_epsilon=float(e.accounting_check.epsilon) if e.accounting_check else None,
        )

    def grid(self, total: int) -> list[int]:
        """The sizes n of a data set of ``total`` rows."""
        from experiments.runs.sweep import n_grid

        return list(self.n_grid) if self.n_grid else n_grid(total, self.n_min, self.n_points)
