"""The whole trade-off curve of an audit statistic, its μ-GDP fit, and a certified bound from it.

A test between the two neighbours D (positive) and D′ (negative) that rejects D′ when a statistic
S ≥ t has a false-positive rate FPR(t) = P[S ≥ t | D′] and a false-negative rate FNR(t) = P[S < t | D].
Over all thresholds these points trace the statistic's **trade-off curve**.  A mechanism is μ-GDP
(Dong, Roth & Su 2022) when every test's curve lies above G_μ(α) = Φ(Φ⁻¹(1 − α) − μ); then every
point satisfies

    μ ≥ Φ⁻¹(1 − FPR) − Φ⁻¹(FNR),                                                    (1)

and the μ-GDP mechanism's exact privacy profile is δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2).
Nasr et al. ("Tight auditing of differentially private machine learning", USENIX Security 2023)
audit by fitting μ to the empirical curve and reading ε at the target δ off that profile.  This module
gives two numbers (:func:`tradeoff_audit`):

* **the fit** (an *estimate*, not a bound): μ̂ is the μ whose curve G_μ has the same area as the
  empirical one: for G_μ the area under the ROC is Φ(μ/√2), so μ̂ = √2 Φ⁻¹(AUC), with AUC the
  Mann–Whitney statistic of all the samples.  ε̂ = ε_μ̂(δ).  ``gdp_fit_max_deviation`` is the largest
  vertical distance between the empirical curve and G_μ̂ (how Gaussian the curve looks);
* **the certified μ** (a *bound*): the threshold is chosen on the calibration split (the largest
  lower bound (1) there), and on the disjoint rest one-sided Clopper–Pearson upper bounds on FPR and
  FNR at α/2 each give μ_lower by (1).  With probability ≥ 1 − α every μ-GDP mechanism has μ ≥
  μ_lower: a statistical lower bound on the mechanism's GDP parameter with no other assumption.
  ε_{μ_lower}(δ) (``gdp_epsilon_lower``) is a lower bound on ε at δ **if the mechanism's trade-off
  curve is a Gaussian one** (true of the likelihood-ratio statistic of a Gaussian mechanism, which is
  exactly N(±μ²/2, μ²)); for other mechanisms it is an estimate.  The single-event (ε, δ) bound of the
  same counts (``single_event_epsilon_lower``) needs no assumption and is printed beside it.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from experiments.audit.bounds import clopper_pearson_upper, epsilon_lower_bound
from mechanisms.calibration import gaussian_delta_for_epsilon, gaussian_epsilon_for_delta

# ---------------------------------------------------------------------------------------------
# μ-GDP
# ---------------------------------------------------------------------------------------------


def gdp_delta(mu: float, epsilon: float) -> float:
    """δ(ε) of μ-GDP: Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (0 for μ ≤ 0)."""
    if mu <= 0:
        return 0.0
    return float(gaussian_delta_for_epsilon(float(mu), float(epsilon)))


def gdp_epsilon(mu: float, delta: float) -> float:
    """The exact ε(δ) of μ-GDP (0 for μ ≤ 0; ∞ for μ = ∞, and for δ = 0, which no μ > 0 meets)."""
    if not mu > 0:
        return 0.0
    if math.isinf(mu) or delta <= 0:
        return math.inf
    return float(gaussian_epsilon_for_delta(float(mu), float(delta)))


def gdp_tradeoff(mu: float, fpr):
    """G_μ(α) = Φ(Φ⁻¹(1 − α) − μ): the smallest false-negative rate of a test with false-positive
    rate α against a μ-GDP mechanism."""
    return stats.norm.cdf(stats.norm.isf(np.asarray(fpr, float)) - mu)


def mu_of_point(fpr, fnr):
    """Φ⁻¹(1 − FPR) − Φ⁻¹(FNR): the smallest μ whose G_μ lies below the point (FPR, FNR), by (1)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return stats.norm.isf(np.asarray(fpr, float)) - stats.norm.ppf(np.asarray(fnr, float))


# ---------------------------------------------------------------------------------------------
# The empirical curve and its fit
# ---------------------------------------------------------------------------------------------


def auc(s_pos: np.ndarray, s_neg: np.ndarray) -> float:
    """P[S_pos > S_neg] + ½ P[S_pos = S_neg] (Mann–Whitney, by ranks)."""
    s_pos, s_neg = np.asarray(s_pos, float), np.asarray(s_neg, float)
    ranks = stats.rankdata(np.concatenate([s_pos, s_neg]))
    n1, n0 = s_pos.size, s_neg.size
    return float((ranks[:n1].sum() - n1 * (n1 + 1) / 2.0) / (n1 * n0))


def orientation_sign(s1: np.ndarray, s0: np.ndarray) -> float:
    """+1 when S tends to be larger under D (s1) than under D′ (s0), else −1."""
    return 1.0 if auc(s1, s0) >= 0.5 else -1.0


def tradeoff_curve(s_pos: np.ndarray, s_neg: np.ndarray, thresholds: np.ndarray | None = None):
    """(thresholds, FPR, FNR) of the tests "S ≥ t" (S larger under the positive side)."""
    a1, a0 = np.sort(np.asarray(s_pos, float)), np.sort(np.asarray(s_neg, float))
    if thresholds is None:
        thresholds = np.unique(np.concatenate([a1, a0]))
    t = np.asarray(thresholds, float)
    fpr = (a0.size - np.searchsorted(a0, t, side="left")) / a0.size
    fnr = np.searchsorted(a1, t, side="left") / a1.size
    return t, fpr, fnr


def fit_gdp(s1: np.ndarray, s0: np.ndarray) -> dict:
    """μ̂ = √2 Φ⁻¹(AUC) of the statistic (oriented so that AUC ≥ ½) and the fit's largest deviation."""
    sign = orientation_sign(s1, s0)
    pos, neg = sign * np.asarray(s1, float), sign * np.asarray(s0, float)
    a = auc(pos, neg)
    mu = math.sqrt(2.0) * float(stats.norm.ppf(a)) if a < 1.0 else math.inf
    mu = max(mu, 0.0)
    _, fpr, fnr = tradeoff_curve(pos, neg)
    dev = float(np.max(np.abs(fnr - gdp_tradeoff(mu, fpr)))) if math.isfinite(mu) else math.nan
    return {"auc": a, "mu": mu, "sign": sign, "max_deviation": dev}


# ---------------------------------------------------------------------------------------------
# The certified μ: threshold from the calibration split, Clopper–Pearson on the rest
# ---------------------------------------------------------------------------------------------


def _mu_lower(fp: np.ndarray, n_neg: int, fn: np.ndarray, n_pos: int, level: float) -> np.ndarray:
    """μ_lower by (1) from Clopper–Pearson upper bounds on FPR and FNR, each at ``level``."""
    fpr_u = np.asarray(clopper_pearson_upper(fp, n_neg, level), float)
    fnr_u = np.asarray(clopper_pearson_upper(fn, n_pos, level), float)
    return np.maximum(np.nan_to_num(mu_of_point(fpr_u, fnr_u), nan=0.0, neginf=0.0), 0.0)


def choose_gdp_threshold(
    s_pos: np.ndarray, s_neg: np.ndarray, alpha: float, max_candidates: int = 2048
) -> float:
    """The threshold whose μ_lower (Clopper–Pearson at α/2 per rate) is largest on these samples."""
    pooled = np.unique(np.concatenate([s_pos, s_neg]))
    if pooled.size > max_candidates:
        idx = np.unique(np.linspace(0, pooled.size - 1, max_candidates).round().astype(int))
        pooled = pooled[idx]
    t, fpr, fnr = tradeoff_curve(s_pos, s_neg, pooled)
    n1, n0 = len(s_pos), len(s_neg)
    fp, fn = np.rint(fpr * n0).astype(int), np.rint(fnr * n1).astype(int)
    lo = _mu_lower(fp, n0, fn, n1, alpha / 2.0)
    # tie-break: the empirical μ of the point
    emp = np.nan_to_num(mu_of_point(np.clip(fpr, 0.5 / n0, 1), np.clip(fnr, 0.5 / n1, 1)))
    return float(t[int(np.argmax(lo + 1e-9 * emp))])


def model_gdp_threshold(mu: float, n1: int, n0: int, alpha: float) -> float:
    """For a statistic known to be N(+μ/2, 1) under D and N(−μ/2, 1) under D′ (the white-box
    likelihood-ratio statistic divided by μ), the threshold c whose *expected* μ_lower with ``n1`` and
    ``n0`` certifying runs is largest.  Fixed before any run, it needs no calibration split."""
    c = np.linspace(-4.0, 4.0, 801)
    fpr, fnr = stats.norm.sf(c + mu / 2.0), stats.norm.cdf(c - mu / 2.0)
    lo = _mu_lower(np.rint(fpr * n0), n0, np.rint(fnr * n1), n1, alpha / 2.0)
    return float(c[int(np.argmax(lo))])


def count_gdp(
    f1: np.ndarray, f0: np.ndarray, threshold: float, delta: float, confidence: float
) -> dict:
    """μ_lower, ε_{μ_lower}(δ) and the single-event bound of the test "S ≥ ``threshold``" (S larger
    under D) on the certifying samples ``f1`` (D) and ``f0`` (D′)."""
    alpha = 1.0 - float(confidence)
    n1, n0 = f1.size, f0.size
    fn, fp = int(np.sum(f1 < threshold)), int(np.sum(f0 >= threshold))
    mu_lo = float(_mu_lower(np.array(fp), n0, np.array(fn), n1, alpha / 2.0))
    single = max(
        float(epsilon_lower_bound(n1 - fn, n1, fp, n0, delta, alpha)),
        float(epsilon_lower_bound(n0 - fp, n0, fn, n1, delta, alpha)),
    )
    return {
        "gdp_false_positives": fp,
        "gdp_false_negatives": fn,
        "gdp_certify_trials": [int(n1), int(n0)],
        "gdp_fpr": fp / n0,
        "gdp_fnr": fn / n1,
        "gdp_mu_lower": mu_lo,
        "gdp_epsilon_lower": gdp_epsilon(mu_lo, delta),
        "single_event_epsilon_lower": single,
    }


def certify_gdp(
    cal1: np.ndarray,
    cal0: np.ndarray,
    fresh1: np.ndarray,
    fresh0: np.ndarray,
    delta: float,
    confidence: float = 0.95,
) -> dict:
    """Orientation and threshold from the calibration samples (``cal1`` on D, ``cal0`` on D′), the
    certified μ_lower and ε_{μ_lower}(δ) from the fresh ones, with the single-event (ε, δ) bound of the
    same counts (the better of the event and its complement)."""
    alpha = 1.0 - float(confidence)
    sign = orientation_sign(cal1, cal0)
    t = choose_gdp_threshold(sign * np.asarray(cal1, float), sign * np.asarray(cal0, float), alpha)
    f1, f0 = sign * np.asarray(fresh1, float), sign * np.asarray(fresh0, float)
    return {
        "gdp_threshold": sign * t,
        "gdp_tail": "upper" if sign > 0 else "lower",
        **count_gdp(f1, f0, t, delta, confidence),
    }


def tradeoff_audit(
    s1: np.ndarray,
    s0: np.ndarray,
    *,
    delta: float,
    confidence: float = 0.95,
    calibration_fraction: float = 0.5,
    fresh: tuple[np.ndarray, np.ndarray] | None = None,
    model_mu: float | None = None,
) -> dict:
    """The μ-GDP fit of the statistic's whole trade-off curve and the certified μ (module docstring).

    ``s1``, ``s0``: the statistic on runs on D and on D′.  Without ``fresh``, the first
    ``calibration_fraction`` of each sample chooses the threshold and the rest certifies; with
    ``fresh=(f1, f0)``, ``s1``/``s0`` are the calibration samples and ``f1``/``f0`` certify.  The fit
    uses every sample given.  Returns ``gdp_mu_fit``, ``gdp_epsilon_fit`` (estimates),
    ``gdp_mu_lower``, ``gdp_epsilon_lower`` (bounds, see the module docstring), the threshold, the
    counts and ``single_event_epsilon_lower``.  ``model_mu``: the statistic is known to be
    N(±μ²/2, μ²) under D / D′ (the white-box likelihood-ratio statistic); the threshold is then fixed
    by :func:`model_gdp_threshold` before the runs and every run certifies.

    ``gdp_epsilon_reading`` says what ``gdp_epsilon_lower`` is: ``"bound"`` with ``model_mu`` (the
    statistic's law is Gaussian, so its trade-off curve is G_μ and ε_{μ_lower}(δ) lower-bounds ε at δ
    with the stated confidence), ``"estimate"`` otherwise (ε_{μ_lower}(δ) assumes a Gaussian curve;
    ``gdp_mu_lower`` and ``single_event_epsilon_lower`` remain bounds), ``"none at delta = 0"`` for
    a pure-ε claim (no μ-GDP curve with μ > 0 meets δ = 0, so its ε there is ∞ whatever the data)."""
    s1, s0 = np.asarray(s1, float), np.asarray(s0, float)
    if model_mu is not None and model_mu > 0:
        fit = fit_gdp(s1, s0)
        c = model_gdp_threshold(model_mu, s1.size, s0.size, 1.0 - float(confidence))
        t = c * model_mu
        return {
            "gdp_auc": fit["auc"],
            "gdp_mu_fit": fit["mu"],
            "gdp_epsilon_fit": gdp_epsilon(fit["mu"], delta),
            "gdp_fit_max_deviation": fit["max_deviation"],
            "gdp_threshold": t,
            "gdp_tail": "upper",
            "gdp_threshold_from": "model",
            "gdp_epsilon_reading": "bound",
            **count_gdp(s1, s0, t, delta, confidence),
        }
    if fresh is None:
        m1, m0 = (
            int(round(s1.size * calibration_fraction)),
            int(round(s0.size * calibration_fraction)),
        )
        cal1, cal0, f1, f0 = s1[:m1], s0[:m0], s1[m1:], s0[m0:]
    else:
        cal1, cal0 = s1, s0
        f1, f0 = np.asarray(fresh[0], float), np.asarray(fresh[1], float)
    fit = fit_gdp(np.concatenate([cal1, f1]), np.concatenate([cal0, f0]))
    cert = certify_gdp(cal1, cal0, f1, f0, delta, confidence)
    return {
        "gdp_auc": fit["auc"],
        "gdp_mu_fit": fit["mu"],
        "gdp_epsilon_fit": gdp_epsilon(fit["mu"], delta),
        "gdp_fit_max_deviation": fit["max_deviation"],
        "gdp_threshold_from": "calibration split",
        # at δ = 0 no μ-GDP curve with μ > 0 meets (ε, 0): its ε is ∞ and says nothing of the claim
        "gdp_epsilon_reading": "estimate" if delta > 0 else "none at delta = 0",
        **cert,
    }


# ---------------------------------------------------------------------------------------------
# The white-box statistic's samples
# ---------------------------------------------------------------------------------------------


def whitebox_scores(
    mechanism,
    *,
    epsilon: float,
    delta: float,
    trials: int = 20000,
    k: int = 1,
    d: int = 2,
    n: int | None = None,
    seed: int = 0,
    **params,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """The likelihood-ratio statistic of :func:`.whitebox.whitebox_audit` on ``trials`` runs per
    dataset, from the same random streams (so the same samples), and the measured statistic model
    (the sketch's χ² taps: the released energy along the differing row)."""
    from experiments.audit.whitebox import TapRunner, _prepare, measure_mu

    _, base, fn, p = _prepare(mechanism, epsilon, delta, params)
    m = measure_mu(mechanism, epsilon=epsilon, delta=delta, k=k, d=d, seed=seed, n=n, **params)
    des = m["design"]
    tap = TapRunner(base, fn, k, p)
    out = {1: np.empty(int(trials)), 0: np.empty(int(trials))}
    x = des.X1[0] / np.linalg.norm(des.X1[0])
    with tap.active():
        for side, X in ((1, des.X1), (0, des.X0)):
            rng = np.random.default_rng([seed, 13, side])
            for i in range(int(trials)):
                rel = tap.run(X, rng)
                if m["kind"] in ("gaussian", "laplace"):  # the tap's likelihood-ratio statistic
                    out[side][i] = m["lrt"](rel)[0]
                else:
                    out[side][i] = float(np.sum((rel[0].Y @ x) ** 2))
    return out[1], out[0], m
