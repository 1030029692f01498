"""Bayesian credible intervals for ε from an audit's counts (Zanella-Béguelin et al., ICML 2023).

An audit's certified event E is a test between the neighbours D and D′ with false-positive rate
α = P[E | D′] and false-negative rate β = P[E^c | D].  Given the counts, α and β get independent
Beta posteriors under a stated prior — **Jeffreys** Beta(½, ½) (default) or **uniform** Beta(1, 1):

    α | data ~ Beta(a + k_α, b + n_α − k_α),    β | data ~ Beta(a + k_β, b + n_β − k_β).

The ε a test (α, β) forces at δ is ε(α, β) = max(0, log((1 − δ − α)/β), log((1 − δ − β)/α)) (an
(ε, δ)-DP mechanism has α + e^ε β ≥ 1 − δ and β + e^ε α ≥ 1 − δ); under the μ-GDP reading of the same
point, μ(α, β) = Φ⁻¹(1 − α) − Φ⁻¹(β) and ε = ε_μ(δ) (:mod:`.tradeoff`).  The posterior of ε is that
of ε(α, β), drawn by Monte Carlo with a fixed seed.  The result is a *credible* interval: a statement
about the posterior under the stated prior, not a frequentist confidence bound (the Clopper–Pearson
bounds of the same counts are that).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

#: the priors, Beta(a, b) on each rate
PRIORS = {"jeffreys": (0.5, 0.5), "uniform": (1.0, 1.0)}


def _gdp_epsilon_vector(mu: np.ndarray, delta: float) -> np.ndarray:
    """ε_μ(δ) for many μ, interpolated on a grid of exact inversions (relative error ≪ 10⁻³)."""
    from experiments.audit.tradeoff import gdp_epsilon

    mu = np.asarray(mu, float)
    if delta <= 0:
        return np.where(mu > 0, np.inf, 0.0)
    top = float(np.nanmax(mu[np.isfinite(mu)], initial=0.0))
    if top <= 0:
        return np.zeros_like(mu)
    grid = np.linspace(0.0, top * 1.0001, 400)
    table = np.array([gdp_epsilon(m, delta) for m in grid])
    out = np.interp(np.clip(mu, 0.0, None), grid, table)
    return np.where(np.isposinf(mu), np.inf, out)


def posterior_epsilon(
    false_positives: int,
    n_negative: int,
    false_negatives: int,
    n_positive: int,
    delta: float,
    *,
    prior: str = "jeffreys",
    credibility: float = 0.95,
    draws: int = 20000,
    seed: int = 0,
    gdp: bool = False,
) -> dict:
    """Posterior summaries of ε at δ from a test's error counts (module docstring).

    ``false_positives`` of ``n_negative`` runs on D′ fell in the event, ``false_negatives`` of
    ``n_positive`` runs on D fell outside it.  ``gdp``: read the point through μ-GDP.  Returns the
    prior, the posterior median, the one-sided lower credible bound (the 1 − ``credibility``
    quantile) and the equal-tailed interval."""
    if prior not in PRIORS:
        raise ValueError(f"prior must be one of {sorted(PRIORS)}, got {prior!r}")
    a, b = PRIORS[prior]
    rng = np.random.default_rng([seed, 41])
    alpha = rng.beta(a + false_positives, b + n_negative - false_positives, int(draws))
    beta = rng.beta(a + false_negatives, b + n_positive - false_negatives, int(draws))
    if gdp:
        with np.errstate(invalid="ignore", divide="ignore"):
            mu = stats.norm.isf(alpha) - stats.norm.ppf(beta)
        eps = _gdp_epsilon_vector(np.maximum(np.nan_to_num(mu, nan=0.0), 0.0), delta)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            e1 = np.log(np.maximum(1.0 - delta - alpha, 1e-300) / beta)
            e2 = np.log(np.maximum(1.0 - delta - beta, 1e-300) / alpha)
        eps = np.maximum(np.maximum(e1, e2), 0.0)
    q = 1.0 - float(credibility)
    lo, med, hi, one = np.quantile(eps, [q / 2, 0.5, 1 - q / 2, q], method="inverted_cdf")
    return {
        "prior": f"{prior} Beta({a:g}, {b:g})",
        "credibility": float(credibility),
        "posterior_median": float(med),
        "credible_lower": float(one),
        "credible_interval": [float(lo), float(hi)],
        "draws": int(draws),
    }


def record_counts(record: dict) -> tuple[int, int, int, int] | None:
    """(false positives, runs on D′, false negatives, runs on D) of a record's certified event, read
    from ``count_D``/``count_Dprime`` and the certifying runs per side (``audit_trials`` or
    ``trials``); ``None`` when the record has no counts."""
    if "count_D" not in record or "count_Dprime" not in record:
        return None
    sizes = record.get("audit_trials") or [record.get("trials"), record.get("trials")]
    n_hi, n_lo = int(sizes[0]), int(sizes[1])
    if n_hi != n_lo and record.get("orientation") == "D0>D1" and "method" in record:
        n_hi, n_lo = n_lo, n_hi  # audit_scores lists D1's size first
    k_hi, k_lo = int(record["count_D"]), int(record["count_Dprime"])
    return k_lo, n_lo, n_hi - k_hi, n_hi


def bayes_fields(record: dict, *, credibility: float | None = None, seed: int = 0) -> dict:
    """The record's Bayesian intervals for ε (Jeffreys and uniform priors) at its certified event,
    and, when it carries the μ-GDP counts of :mod:`.tradeoff`, for the GDP reading of those."""
    out: dict = {}
    cred = float(record.get("confidence", 0.95) if credibility is None else credibility)
    delta = float(record["delta"])
    counts = record_counts(record)
    if counts is not None and all(c is not None for c in counts):
        for prior in PRIORS:
            out[f"bayes_{prior}"] = posterior_epsilon(
                *counts, delta, prior=prior, credibility=cred, seed=seed
            )
    if "gdp_false_positives" in record:
        n1, n0 = record["gdp_certify_trials"]
        out["bayes_gdp_jeffreys"] = posterior_epsilon(
            int(record["gdp_false_positives"]),
            int(n0),
            int(record["gdp_false_negatives"]),
            int(n1),
            delta,
            prior="jeffreys",
            credibility=cred,
            seed=seed,
            gdp=True,
        )
    return out
