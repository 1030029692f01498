"""Empirical privacy audit: statistically valid LOWER bounds on a mechanism's ε.

One module per concern:

* :mod:`.bounds` — Clopper–Pearson bounds, the ε lower bound, the choice of an event;
* :mod:`.designs` — neighbouring-pair designs (hand-made, a catalogue, random) and the check that a
  pair is neighbouring under the declared relation;
* :mod:`.statistics` — reducing an output to the numbers events test;
* :mod:`.search` — the automatic search over designs and statistics, certified on fresh trials;
* :mod:`.whitebox` — the likelihood-ratio test on a mechanism's noisy intermediate, with the exact
  ε(δ) of that statistic;
* :mod:`.variants` — known-broken variants the audit must catch;
* :mod:`.runner` — many runs of a mechanism, :func:`audit_mechanism` and the Hydra entry point
  :func:`run_audit`.

See docs/audit.md.
"""

from experiments.audit.bounds import (
    audit_scores,
    choose_event,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_lower_bound,
    max_certifiable_epsilon,
)
from experiments.audit.designs import (
    AUDIT_PARAMS,
    DESIGN_OF,
    GAUSSIAN_OPTIONS,
    AuditDesign,
    NotNeighbours,
    bingham_design,
    bingham_expected_bound,
    catalogue,
    check_neighbours,
    design_for,
    gaussian_design,
    random_designs,
    subspace_approx_design,
    subspace_exact_design,
)
from experiments.audit.runner import audit_mechanism, available_mechanisms, run_audit, run_trials
from experiments.audit.search import search_audit
from experiments.audit.statistics import STATISTICS, FeatureSet, design_features
from experiments.audit.variants import (
    NOISE_FUNCTIONS,
    PLANTED_VARIANTS,
    SUBSPACE_EXACT_VARIANTS,
    bypass_norm_check,
    miscalibrated,
    noise_cut,
    planted_variant,
    subspace_exact_variant,
    unfixed_subspace_exact,
)
from experiments.audit.whitebox import TAPS, exact_epsilon, measure_mu, whitebox_audit

__all__ = [
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
    "max_certifiable_epsilon",
    "choose_event",
    "audit_scores",
    "AuditDesign",
    "gaussian_design",
    "bingham_design",
    "bingham_expected_bound",
    "subspace_exact_design",
    "subspace_approx_design",
    "design_for",
    "catalogue",
    "random_designs",
    "check_neighbours",
    "NotNeighbours",
    "STATISTICS",
    "FeatureSet",
    "design_features",
    "run_trials",
    "audit_mechanism",
    "miscalibrated",
    "bypass_norm_check",
    "noise_cut",
    "unfixed_subspace_exact",
    "subspace_exact_variant",
    "SUBSPACE_EXACT_VARIANTS",
    "planted_variant",
    "PLANTED_VARIANTS",
    "available_mechanisms",
    "run_audit",
    "search_audit",
    "whitebox_audit",
    "measure_mu",
    "exact_epsilon",
    "TAPS",
    "AUDIT_PARAMS",
    "DESIGN_OF",
    "GAUSSIAN_OPTIONS",
    "NOISE_FUNCTIONS",
]
