"""The settings of the runs' experiments, each read from the config and checked once: a frozen
dataclass per experiment, made by ``from_config(cfg)``.

Where the defaults live: the experiment's yaml (``conf/experiment/<name>.yaml``) gives every key,
and ``from_config`` reads each one from the config with no default of its own (a key missing from
the config is an error).  Where a yaml key says ``null`` means "the default", the default is named
here and the yaml says so: the classifier's own cross-validation folds and C grid
(:data:`CV_FOLDS_DEFAULT`, :data:`LOG2_C_DEFAULT`), the paper's positive class
(:data:`POSITIVE_LABEL`), the scale's grid of the experiments beyond the paper
(``experiment.grids[scale.name]``, :func:`scale_grid`) and the Gibbs chain's sweeps per iteration
(:func:`mechanisms.ppca.gibbs_convergence_traces`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from experiments.errors import UserError
from experiments.runs.classifiers import CLASSIFIERS, FEATURE_SCALINGS, SVM_LOSSES, log2_grid
from experiments.runs.sweep import n_grid, restarts_for

# ---------------------------------------------------------------------------------------------
# The JMLR paper's runners (experiments.runs.jmlr)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UtilityVsNSettings:
    """Figures 3-4 (``experiment=utility_vs_n``).

    Attributes
    ----------
    n_grid : tuple of int or None
        ``experiment.n_grid``: the sizes n (None: a log grid of ``scale.n_points`` sizes from
        ``scale.n_min`` to the full set).
    n_min, n_points : int
        ``scale.n_min``, ``scale.n_points``.
    subsets : int
        ``scale.subsets``: random subsets per n.
    restarts : int
        Restarts per subset for the configured mechanism (``scale.restarts``).
    only : dict
        ``experiment.only`` (:func:`plan_selector`): ``n_index`` (the index of n in the grid) and
        ``subset`` restrict the run to part of its grid; ``{}``: all of it.
    """

    n_grid: tuple[int, ...] | None
    n_min: int
    n_points: int
    subsets: int
    restarts: int
    only: dict

    @classmethod
    def from_config(cls, cfg: DictConfig) -> UtilityVsNSettings:
        e = cfg.experiment
        return cls(
            n_grid=tuple(int(n) for n in e.n_grid) if e.n_grid else None,
            n_min=int(cfg.scale.n_min),
            n_points=int(cfg.scale.n_points),
            subsets=int(cfg.scale.subsets),
            restarts=restarts_for(cfg),
            only=plan_selector(cfg, ("n_index", "subset")),
        )

    def grid(self, total: int) -> list[int]:
        """The sizes n of a data set of ``total`` rows."""
        return list(self.n_grid) if self.n_grid else n_grid(total, self.n_min, self.n_points)

    def selected_grid(self, total: int) -> list[int]:
        """The sizes n this run computes (:attr:`only`'s ``n_index``; an index past the grid: none)."""
        return selected_part(self.grid(total), self.only, "n_index")

    def selected_subsets(self) -> list[int]:
        """The subsets this run computes (:attr:`only`'s ``subset``)."""
        return selected_part(range(self.subsets), self.only, "subset")


@dataclass(frozen=True)
class UtilityVsEpsilonSettings:
    """Figure 5 (``experiment=utility_vs_epsilon``).

    Attributes
    ----------
    epsilons : tuple of float
        ``experiment.epsilons``.
    samples : int
        Draws per ε: ``scale.epsilon_samples`` (1 for ``pca``, which draws nothing).
    only : dict
        ``experiment.only`` (:func:`plan_selector`): ``epsilon_index``, the index of the one ε of
        :attr:`epsilons` this run computes; empty: every ε.
    """

    epsilons: tuple[float, ...]
    samples: int
    only: dict

    @classmethod
    def from_config(cls, cfg: DictConfig) -> UtilityVsEpsilonSettings:
        return cls(
            epsilons=tuple(float(eps) for eps in cfg.experiment.epsilons),
            samples=1 if cfg.mechanism.name == "pca" else int(cfg.scale.epsilon_samples),
            only=plan_selector(cfg, ("epsilon_index",)),
        )

    def selected(self) -> list[tuple[int, float]]:
        """(index, ε) of the points this run computes (an index past the grid: none)."""
        return selected_part(list(enumerate(self.epsilons)), self.only, "epsilon_index")


@dataclass(frozen=True)
class SulqBoundSettings:
    """Figure 1 (``experiment=sulq_bound``).

    Attributes
    ----------
    dims : tuple of int
        ``experiment.dims``.
    epsilons : tuple of float
        ``experiment.epsilons``.
    log10_n : ndarray
        ``np.linspace`` of ``experiment.log10_n`` (start, stop, num).
    delta : float
        The run's δ.
    """

    dims: tuple[int, ...]
    epsilons: tuple[float, ...]
    log10_n: np.ndarray
    delta: float

    @classmethod
    def from_config(cls, cfg: DictConfig) -> SulqBoundSettings:
        e = cfg.experiment
        return cls(
            dims=tuple(int(d) for d in e.dims),
            epsilons=tuple(float(eps) for eps in e.epsilons),
            log10_n=np.linspace(e.log10_n.start, e.log10_n.stop, int(e.log10_n.num)),
            delta=float(cfg.delta),
        )


@dataclass(frozen=True)
class GibbsConvergenceSettings:
    """Figure 2 (``experiment=gibbs_convergence``).

    Attributes
    ----------
    sampler : str
        ``experiment.sampler``.
    sweeps_per_iteration : int or None
        ``experiment.sweeps_per_iteration`` (None: the chain's default); gibbs only.
    chains, iterations, record_every : int
        ``scale.gibbs``.
    only_chain : int or None
        ``experiment.only``'s ``chain`` (:func:`plan_selector`): run only this chain and keep its
        traces as a part (:func:`experiments.runs.jmlr.run_gibbs_convergence`); None: the record.
    """

    sampler: str
    sweeps_per_iteration: int | None
    chains: int
    iterations: int
    record_every: int
    only_chain: int | None

    @classmethod
    def from_config(cls, cfg: DictConfig) -> GibbsConvergenceSettings:
        """Raises ``ValueError`` for sweeps per iteration below 1 or with another sampler than gibbs."""
        e, g = cfg.experiment, cfg.scale.gibbs
        sweeps = None if e.sweeps_per_iteration is None else int(e.sweeps_per_iteration)
        if sweeps is not None and (sweeps < 1 or str(e.sampler) != "gibbs"):
            raise ValueError(
                "experiment.sweeps_per_iteration must be a positive integer, for experiment.sampler=gibbs"
            )
        return cls(
            sampler=str(e.sampler),
            sweeps_per_iteration=sweeps,
            chains=int(g.chains),
            iterations=int(g.iterations),
            record_every=int(g.record_every),
            only_chain=plan_selector(cfg, ("chain",)).get("chain"),
        )


# ---------------------------------------------------------------------------------------------
# Table 2 (experiments.runs.classification)
# ---------------------------------------------------------------------------------------------

#: the paper's positive class for Table 2
POSITIVE_LABEL = {
    "kddcup": "normal.",
    "localization": "falling",
    # footnote 1's data sets: the income label (census) and caravan-policy owner (insurance)
    "census": "50000+",
    "insurance": "1",
}

#: Cross-validation folds when ``experiment.svm_cv_folds`` is null: ``grid.py``'s default (5) for the
#: paper's linear C-SVC; 3 for the alternatives (their measured cost, docs/table2_protocol.md)
CV_FOLDS_DEFAULT = {"linear_csvc": 5, "rbf_default": 3, "rbf": 3, "linear": 3}

#: Base-2 exponents of the C grid when ``experiment.svm_log2_C`` is null: ``grid.py``'s default range
#: and step (-log2c -5,15,2) for the linear C-SVC; every 2^4 over the same range for ``rbf``
LOG2_C_DEFAULT = {"linear_csvc": [-5, 15, 2], "rbf": [-5, 15, 4]}


def plan_selector(cfg: DictConfig, keys: tuple[str, ...]) -> dict[str, int]:
    """``experiment.only``: which part of the experiment this run computes (a job of the plan,
    :mod:`experiments.plan`), as ``{key: int}`` over ``keys``; ``{}`` (null): all of it.  A
    selector never enters a run key: a record made by a part is the record the whole run makes."""
    only = cfg.experiment.only
    if only is None:
        return {}
    sel = OmegaConf.to_container(only, resolve=True) if OmegaConf.is_config(only) else only
    sel = dict(sel)
    unknown = sorted(set(sel) - set(keys))
    if unknown:
        raise ValueError(f"experiment.only: unknown key(s) {unknown}; valid: {list(keys)}")
    return {k: int(v) for k, v in sel.items() if v is not None}


def selected_part(values, only: dict[str, int], key: str) -> list:
    """The items of ``values`` a run computes: all of them when ``only`` (:func:`plan_selector`)
    has no ``key``, else the one at index ``only[key]`` (an index past the end: none)."""
    values = list(values)
    if key not in only:
        return values
    i = only[key]
    return values[i : i + 1] if 0 <= i < len(values) else []


def _ints(values) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _listed(values: tuple | None) -> list | None:
    return None if values is None else list(values)


@dataclass(frozen=True)
class ClassificationSettings:
    """Table 2 (``experiment=classification``): the protocol and the rounds.

    The protocol fields (:meth:`protocol`) all go into the run key.  ``classifier``:
    ``linear_csvc`` (the paper's "linear SVM ... implemented by libSVM": the linear C-SVC with C by
    cross-validation; the configured default), ``rbf_default`` (libSVM's defaults), ``rbf``
    (libSVM's tuning workflow) or ``linear`` (liblinear; :mod:`experiments.runs.classifiers`).
    ``svm_cv_folds`` and ``svm_log2_C`` left null take the classifier's own default
    (:data:`CV_FOLDS_DEFAULT`, :data:`LOG2_C_DEFAULT`); the record holds the values used.  The grid
    fields of the classifiers not chosen are None (they do not act); the C-SVC classifiers are
    libSVM's, hinge loss solved to tolerance (``svm_max_iter = -1``).  ``random_entries`` /
    ``random_projection`` only act on the ``random`` mechanism and are None for the others.

    Attributes
    ----------
    classifier, svm_loss, feature_scaling : str
    svm_max_iter, svm_cv_folds : int
    svm_C_grid : tuple of float or None
        ``linear`` only.
    svm_log2_C : tuple of int or None
        ``linear_csvc`` and ``rbf`` only.
    svm_log2_gamma : tuple of int or None
        ``rbf`` only.
    svm_cv_rows : int or None
        ``rbf`` only (None: every training row).
    random_entries, random_projection : str or None
        The ``random`` mechanism only.
    drop_feature_prefixes : tuple of str
    positive_label : str or None
        ``experiment.positive_label`` (None: the paper's, :data:`POSITIVE_LABEL`).
    permutations, projections : int
        ``scale.classification``: the rounds are permutations x projections.
    max_rows : int or None
        ``scale.classification.max_rows``: each permutation cut to this many rows (None: all).
    only : dict
        ``experiment.only`` (:func:`plan_selector`): ``permutation`` and ``projection`` restrict the
        run to some of its rounds; ``{}``: all of them.
    """

    classifier: str
    svm_loss: str
    feature_scaling: str
    svm_max_iter: int
    svm_cv_folds: int
    svm_C_grid: tuple[float, ...] | None
    svm_log2_C: tuple[int, ...] | None
    svm_log2_gamma: tuple[int, ...] | None
    svm_cv_rows: int | None
    random_entries: str | None
    random_projection: str | None
    drop_feature_prefixes: tuple[str, ...]
    positive_label: str | None
    permutations: int
    projections: int
    max_rows: int | None
    only: dict

    @classmethod
    def from_config(cls, cfg: DictConfig) -> ClassificationSettings:
        """Raises ``ValueError`` naming the setting for an unknown classifier, loss, scaling or
        reading of the random projection, and for a malformed log2 grid."""
        e = cfg.experiment
        classifier = str(e.classifier)
        if classifier not in CLASSIFIERS:
            raise ValueError(
                f"experiment.classifier must be one of {CLASSIFIERS}, got {classifier!r}"
            )
        loss, scaling = str(e.svm_loss), str(e.feature_scaling)
        if loss not in SVM_LOSSES:
            raise ValueError(f"experiment.svm_loss must be one of {SVM_LOSSES}, got {loss!r}")
        if scaling not in FEATURE_SCALINGS:
            raise ValueError(
                f"experiment.feature_scaling must be one of {FEATURE_SCALINGS}, got {scaling!r}"
            )
        max_iter = int(e.svm_max_iter)
        folds = int(e.svm_cv_folds if e.svm_cv_folds is not None else CV_FOLDS_DEFAULT[classifier])
        C_grid = log2_C = log2_gamma = cv_rows = None
        if classifier == "linear":
            C_grid = tuple(float(c) for c in e.svm_C_grid)
        else:  # the C-SVC: the hinge loss, solved to its tolerance (no iteration limit)
            loss, max_iter = "hinge", -1
        if classifier in ("linear_csvc", "rbf"):
            log2_C = _ints(e.svm_log2_C or LOG2_C_DEFAULT[classifier])
        if classifier == "rbf":
            log2_gamma = _ints(e.svm_log2_gamma)
            cv_rows = None if e.svm_cv_rows is None else int(e.svm_cv_rows)
        for grid in (log2_C, log2_gamma):
            if grid is not None:
                log2_grid(grid)  # a malformed grid fails here
        entries = projection = None
        if cfg.mechanism.name == "random":
            entries, projection = _random_reading(str(e.random_entries), str(e.random_projection))
        classification = cfg.scale.classification
        return cls(
            classifier=classifier,
            svm_loss=loss,
            feature_scaling=scaling,
            svm_max_iter=max_iter,
            svm_cv_folds=folds,
            svm_C_grid=C_grid,
            svm_log2_C=log2_C,
            svm_log2_gamma=log2_gamma,
            svm_cv_rows=cv_rows,
            random_entries=entries,
            random_projection=projection,
            drop_feature_prefixes=tuple(str(x) for x in (e.drop_feature_prefixes or [])),
            positive_label=e.positive_label,
            permutations=int(classification.permutations),
            projections=int(classification.projections),
            max_rows=int(classification.max_rows) if classification.max_rows else None,
            only=plan_selector(cfg, ("permutation", "projection")),
        )

    def selected(self, key: str, count: int) -> list[int]:
        """The permutations (``key="permutation"``) or projections this run computes, of ``count``."""
        return selected_part(range(count), self.only, key)

    def protocol(self) -> dict[str, Any]:
        """The protocol fields, as the records and run keys hold them (lists, not tuples)."""
        return {
            "classifier": self.classifier,
            "svm_loss": self.svm_loss,
            "feature_scaling": self.feature_scaling,
            "svm_max_iter": self.svm_max_iter,
            "svm_cv_folds": self.svm_cv_folds,
            "svm_C_grid": _listed(self.svm_C_grid),
            "svm_log2_C": _listed(self.svm_log2_C),
            "svm_log2_gamma": _listed(self.svm_log2_gamma),
            "svm_cv_rows": self.svm_cv_rows,
            "random_entries": self.random_entries,
            "random_projection": self.random_projection,
            "drop_feature_prefixes": list(self.drop_feature_prefixes),
        }

    def positive(self, dataset: str) -> str | None:
        """The positive class on ``dataset``: the configured one, else the paper's."""
        return self.positive_label or POSITIVE_LABEL.get(dataset)


def _random_reading(entries: str, projection: str) -> tuple[str, str]:
    """The ``random`` mechanism's reading of "uniformly generated random projection", checked."""
    from mechanisms.random_projection import RANDOM_ENTRIES

    if entries not in RANDOM_ENTRIES:
        raise ValueError(
            f"experiment.random_entries must be one of {RANDOM_ENTRIES}, got {entries!r}"
        )
    if projection not in ("orthonormal", "raw"):
        raise ValueError(
            f"experiment.random_projection must be 'orthonormal' or 'raw', got {projection!r}"
        )
    return entries, projection


# ---------------------------------------------------------------------------------------------
# The experiments beyond the paper (experiments.runs.extra)
# ---------------------------------------------------------------------------------------------

#: spiked-model parameters taken from the dataset config (``d`` is the swept variable)
SPIKED_KEYS = ("spike", "sigma", "lambdas", "basis", "row_scaling")


def scale_grid(cfg: DictConfig) -> dict[str, Any]:
    """The experiment's settings for the current scale (``experiment.grids[scale.name]``), with any
    explicit top-level ``experiment.<key>`` (not null) taking precedence."""
    e = cfg.experiment
    grids = OmegaConf.to_container(e.grids, resolve=True)
    name = str(cfg.scale.name)
    if name not in grids:
        raise ValueError(f"experiment {e.name}: no grid for scale {name!r} (have {sorted(grids)})")
    g = dict(grids[name])
    for key in list(g):
        if key in e and e[key] is not None:
            g[key] = (
                OmegaConf.to_container(e[key], resolve=True)
                if OmegaConf.is_config(e[key])
                else e[key]
            )
    return g


def spiked_params(cfg: DictConfig) -> dict[str, Any]:
    """The spiked model's parameters of the dataset config (:data:`SPIKED_KEYS`, those set); raises
    ``ValueError`` when the data set is not the spiked model."""
    if cfg.dataset.name != "spiked":
        raise ValueError(
            f"experiment {cfg.experiment.name} runs on the spiked model: use dataset=spiked "
            f"(got {cfg.dataset.name})"
        )
    params = OmegaConf.to_container(cfg.dataset.params, resolve=True) or {}
    return {k: v for k, v in params.items() if k in SPIKED_KEYS and v is not None}


def doubling_grid(n_min: int, n_max: int) -> list[int]:
    """n_min, 2 n_min, 4 n_min, ... up to n_max (inclusive when it falls on the grid)."""
    out, n = [], int(n_min)
    while n <= int(n_max):
        out.append(n)
        n *= 2
    return out


@dataclass(frozen=True)
class DimensionScalingSettings:
    """Sample complexity versus dimension (``experiment=dimension_scaling``).

    Attributes
    ----------
    scale : str
        ``scale.name``.
    dims : tuple of int
        The dimensions d.
    n_grid : tuple of int
        The doubling grid of n from ``n_min`` to ``n_max``.
    restarts : int
        Runs per (d, n).
    max_cells : float
        n with n d above this are skipped (inf: no cap).
    target : float
        n* is the first n with mean q_F / q_F(V_k) at least this.
    spiked : dict
        The spiked model's parameters (:func:`spiked_params`).
    only : dict
        ``experiment.only`` (:func:`plan_selector`): ``d_index``, the index of the one d of
        :attr:`dims` this run searches (a job of the plan); empty: every d.
    """

    scale: str
    dims: tuple[int, ...]
    n_grid: tuple[int, ...]
    restarts: int
    max_cells: float
    target: float
    spiked: dict[str, Any]
    only: dict

    @classmethod
    def from_config(cls, cfg: DictConfig) -> DimensionScalingSettings:
        g = scale_grid(cfg)
        return cls(
            scale=str(cfg.scale.name),
            dims=tuple(int(x) for x in g["dims"]),
            n_grid=tuple(doubling_grid(int(g["n_min"]), int(g["n_max"]))),
            restarts=int(g["restarts"]),
            max_cells=float(g.get("max_cells") or math.inf),
            target=float(cfg.experiment.target),
            spiked=spiked_params(cfg),
            only=plan_selector(cfg, ("d_index",)),
        )

    def selected_dims(self) -> list[int]:
        """The dimensions this run searches (:attr:`only`'s ``d_index``; an index past the grid:
        none)."""
        return selected_part(self.dims, self.only, "d_index")


@dataclass(frozen=True)
class OnlineRegretSettings:
    """Regret of DTTZ online PCA versus stream length (``experiment=online_regret``).

    Attributes
    ----------
    scale : str
        ``scale.name``.
    m, d, restarts : int
        Stream length, dimension (null in the grid: the dataset's), runs per variant.
    variants : tuple of bool
        The ``tree`` values run.
    curve_points : int
        Regret curves stored at this many log-spaced t at most.
    spiked : dict
        The spiked model's parameters (:func:`spiked_params`).
    only : dict
        ``experiment.only`` (:func:`plan_selector`): ``variant_index`` (the index of the one
        variant of :attr:`variants`) and ``restart`` (the one restart) this run computes (a job of
        the plan); empty: every variant and restart.
    """

    scale: str
    m: int
    d: int
    restarts: int
    variants: tuple[bool, ...]
    curve_points: int
    spiked: dict[str, Any]
    only: dict

    @classmethod
    def from_config(cls, cfg: DictConfig) -> OnlineRegretSettings:
        """Raises ``ValueError`` for another mechanism than online_pca, and :class:`UserError` for a
        ``mechanism.fn.tree`` override (the variants run are ``experiment.variants``)."""
        if cfg.mechanism.name != "online_pca":
            raise ValueError("experiment=online_regret needs mechanism=online_pca")
        if cfg.mechanism.fn.get("tree", True) is not True:
            # a tree value here would run nothing different yet enter every record's key
            raise UserError(
                "experiment=online_regret takes its tree values from experiment.variants, not from "
                "mechanism.fn.tree: drop that override (one variant only: experiment.variants=[true])"
            )
        g = scale_grid(cfg)
        return cls(
            scale=str(cfg.scale.name),
            m=int(g["m"]),
            d=int(g.get("d") or cfg.dataset.params.d),
            restarts=int(g["restarts"]),
            variants=tuple(bool(v) for v in cfg.experiment.variants),
            curve_points=int(cfg.experiment.curve_points),
            spiked=spiked_params(cfg),
            only=plan_selector(cfg, ("variant_index", "restart")),
        )

    def selected_runs(self) -> list[tuple[bool, int]]:
        """The (variant, restart) pairs this run computes (:attr:`only`; an index past the end:
        none)."""
        return [
            (tree, r)
            for tree in selected_part(self.variants, self.only, "variant_index")
            for r in selected_part(range(self.restarts), self.only, "restart")
        ]
