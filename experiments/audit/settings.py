"""The settings of ``experiment=audit``, read from the config and checked once (:class:`AuditSettings`).

conf/experiment/audit.yaml is the one source of their defaults: every key is read from the config,
none has a default here, and a key missing from the config is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from experiments.audit.blackbox import LEARNED_MODELS
from experiments.audit.common import PEER_NAMES
from experiments.audit.designs import AUDIT_PARAMS
from experiments.audit.variants import (
    MECHANISM_VARIANTS,
    PLANTED_VARIANTS,
    SUBSPACE_EXACT_VARIANTS,
)

#: the audits ``experiment.mode`` picks from
MODES = ("design", "search", "whitebox")
#: revision of the search and white-box audits in their records' keys: 2 adds the bit-level and release
#: statistics and the heavy-axis designs to the search, and the exact-ε(δ) verdict and the 32-row
#: online stream to the white-box audit, so that a stored record of revision 1 is not shown as theirs;
#: 3 adds the trade-off curve's μ-GDP fit and the Bayesian intervals to both, and the learned
#: (classifier and kernel) statistics to the search
AUDIT_REVISION = 3
#: the search's black-box testers by default (``search_audit``'s ``learned``)
DEFAULT_LEARNED = ("logistic", "mmd")


def _mechanism(cfg) -> tuple[str, dict[str, Any]]:
    """The audited registry name and its configured keyword arguments: ``experiment.mechanism`` (any
    registry name, with the run's ε and δ) if set, else the ``mechanism`` group (its ``fn``
    parameters)."""
    from experiments.store.records import mechanism_params

    e = cfg.experiment
    if e.mechanism:
        name = str(e.mechanism)
        params = {"epsilon": float(cfg.epsilon), "delta": float(cfg.delta)}
    else:
        name = str(cfg.mechanism.name)
        params = mechanism_params(cfg)
    return name, params


def _params(cfg, name: str, params: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """``params`` with the audit's settings (``AUDIT_PARAMS``, over the group's defaults), then
    ``experiment.mechanism_params`` (over both), and ε lowered to ``experiment.epsilon_cap`` for the
    mechanisms whose theorem needs a smaller one; and whether it was."""
    from omegaconf import OmegaConf

    e = cfg.experiment
    params.update(AUDIT_PARAMS.get(name, {}))
    if e.mechanism_params is not None:
        params.update(OmegaConf.to_container(e.mechanism_params, resolve=True))
    params.pop("progress", None)
    cap = None if e.epsilon_cap is None else e.epsilon_cap.get(name)
    if cap is not None and params.get("epsilon") is not None and params["epsilon"] > cap:
        params["epsilon"] = float(cap)
        return params, True
    return params, False


def _check_variant(variant: Any, name: str) -> None:
    """Refuse a variant the audit does not know, a subspace_exact one asked of another mechanism, or
    a mechanism's own variant (:data:`.variants.MECHANISM_VARIANTS`) asked of another (a planted
    defect's mechanism is checked where the defect is made, :func:`.variants.planted_variant`)."""
    if variant in SUBSPACE_EXACT_VARIANTS:
        if name != "subspace_exact":
            raise ValueError(
                f"experiment.variant={variant} is a known-broken subspace_exact (mechanism subspace_exact)"
            )
    elif variant is not None and variant != "noise_cut" and variant not in PLANTED_VARIANTS:
        own = MECHANISM_VARIANTS.get(name, ((), None))[0]
        if variant not in own:
            raise ValueError(
                "experiment.variant must be null, noise_cut or one of "
                f"{sorted(SUBSPACE_EXACT_VARIANTS) + sorted(PLANTED_VARIANTS) + list(own)}"
                f"{f' (the last for {name})' if own else ''}, got {variant!r}"
            )


@dataclass(frozen=True)
class AuditSettings:
    """What one ``experiment=audit`` run audits, and how (conf/experiment/audit.yaml explains each key).

    Attributes
    ----------
    name : str
        ``experiment.name``.
    mechanism : str
        The audited registry name (``experiment.mechanism``, else the ``mechanism`` group's).
    mechanism_params : dict
        Its keyword arguments, before they are restricted to those the mechanism takes.
    epsilon_capped : bool
        Whether ``experiment.epsilon_cap`` lowered ε.
    mode : str
        ``design``, ``search`` or ``whitebox``.
    variant : str or None
        A known-broken variant to audit instead.
    overshoot : float
        ``noise_cut``: exact ε(δ) of the cut variant over the claim.
    noise_factor : float or None
        Audit the mechanism with its noise scaled by this factor.
    row_norm : float
        Length of the differing row (> 1: the norm check bypassed).
    trials, confidence, calibration_fraction
        Runs per dataset, overall confidence, share of the runs that choose the event.
    calibration_trials, n_random, use_catalogue, time_budget
        The search's budget (``time_budget`` as configured: seconds or None).
    learned : tuple of str
        The search's black-box testers (:data:`.blackbox.LEARNED_MODELS`; empty for none).
    handmade : bool
        Whether the search's hand-made statistics compete (False: the black-box testers alone).
    d, n, k : int
        The audit datasets' dimension and rows (None: the design's default), the rank audited.
    design_epsilon : float or None
        ε the ε-dependent designs are tuned for (None: the claim), as configured.
    seed : int
        The run's seed.
    jobs : int or None
        Worker processes (None: every core of the CPU set; 1: the serial code path). Not in the run
        key: the result is the same for any number (with ``time_budget``, the designs tried depend
        on the speed, hence on ``jobs`` as on the load).
    """

    name: str
    mechanism: str
    mechanism_params: dict[str, Any]
    epsilon_capped: bool
    mode: str
    variant: str | None
    overshoot: float
    noise_factor: float | None
    row_norm: float
    trials: int
    confidence: float
    calibration_fraction: float
    calibration_trials: int
    n_random: int
    use_catalogue: bool
    time_budget: float | None
    learned: tuple[str, ...]
    handmade: bool
    d: int
    n: int | None
    k: int
    design_epsilon: float | None
    seed: int
    jobs: int | None

    @classmethod
    def from_config(cls, cfg) -> AuditSettings:
        """Read and check the settings of ``cfg`` (composed with ``experiment=audit``).

        Raises
        ------
        ValueError
            One line naming the setting: an unknown mode or variant, a peer asked for anything but
            the design audit, fewer than 2 trials, a subspace_exact variant of another mechanism.
        """
        e = cfg.experiment
        name, params = _mechanism(cfg)
        mode = str(e.mode)
        if mode not in MODES:
            raise ValueError(f"experiment.mode must be design, search or whitebox, got {mode!r}")
        variant, noise_factor = e.variant, e.noise_factor
        if name in PEER_NAMES and (
            mode != "design"
            or variant is not None
            or noise_factor is not None
            or float(e.row_norm) > 1.0
        ):
            raise ValueError(
                f"{name} is a peer (run in its own process): it is audited with experiment.mode=design "
                "and no variant, noise_factor or row_norm"
            )
        if (
            int(e.trials) < 2
        ):  # each dataset's runs are split between choosing the event and the bound
            raise ValueError(f"experiment.trials must be an integer >= 2, got {e.trials!r}")
        params, capped = _params(cfg, name, params)
        _check_variant(variant, name)
        learned = tuple(str(m) for m in (e.learned or ()))
        unknown = sorted(set(learned) - set(LEARNED_MODELS))
        if unknown:
            raise ValueError(
                f"experiment.learned must name testers among {list(LEARNED_MODELS)}, got {unknown}"
            )
        jobs = None if e.jobs is None else int(e.jobs)
        if jobs is not None and jobs < 1:
            raise ValueError(
                f"experiment.jobs must be null (every core) or an integer >= 1, got {e.jobs!r}"
            )
        handmade = bool(e.handmade)
        if mode == "search" and not handmade and not learned:
            raise ValueError(
                "experiment.handmade=false needs at least one experiment.learned tester"
            )
        return cls(
            name=str(e.name),
            mechanism=name,
            mechanism_params=params,
            epsilon_capped=capped,
            mode=mode,
            variant=variant,
            overshoot=float(e.overshoot),
            noise_factor=None if noise_factor is None else float(noise_factor),
            row_norm=float(e.row_norm),
            trials=int(e.trials),
            confidence=float(e.confidence),
            calibration_fraction=float(e.calibration_fraction),
            calibration_trials=int(e.calibration_trials),
            n_random=int(e.n_random),
            use_catalogue=bool(e.use_catalogue),
            time_budget=e.time_budget,
            learned=learned,
            handmade=handmade,
            d=int(e.d),
            n=None if e.n is None else int(e.n),
            k=int(e.k),
            design_epsilon=e.design_epsilon,
            seed=int(cfg.seed),
            jobs=jobs,
        )

    def run_key(self, mechanism_params: dict[str, Any]) -> dict[str, Any]:
        """The record's run key, with the keyword arguments the mechanism takes.

        The design audit of the mechanism itself keeps the key it had before the other modes and
        variants existed (its records keep their ids); the others add theirs.  ``jobs`` is never in
        the key: a record is the same for any number of workers.
        """
        key = {
            "experiment": self.name,
            "mechanism": self.mechanism,
            "mechanism_params": dict(mechanism_params),
            "trials": self.trials,
            "confidence": self.confidence,
            "seed": self.seed,
            "d": self.d,
            "n": self.n,
            "k": self.k,
            "row_norm": self.row_norm,
            "noise_factor": self.noise_factor,
            "calibration_fraction": self.calibration_fraction,
            "design_epsilon": self.design_epsilon,
        }
        if self.mode != "design" or self.variant is not None:
            key.update(
                mode=self.mode,
                variant=self.variant,
                overshoot=self.overshoot,
                calibration_trials=self.calibration_trials,
                n_random=self.n_random,
                use_catalogue=self.use_catalogue,
                time_budget=self.time_budget,
            )
            if self.mode != "design":
                key["audit_revision"] = AUDIT_REVISION
            if self.mode == "search" and (
                not self.handmade or self.learned != DEFAULT_LEARNED
            ):  # the default testers keep the key the search had before these settings existed
                key.update(learned=list(self.learned), handmade=self.handmade)
        return key
