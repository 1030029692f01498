"""The white-box trade-off table of docs/audit.md: exact ε(δ), single-event bound, μ-GDP fit and
certified bound, Bayesian intervals, for each mechanism with a white-box tap.

One row (:func:`tradeoff_row`) draws the white-box statistic once per dataset
(:func:`.tradeoff.whitebox_scores`, the random streams of :func:`.whitebox.whitebox_audit`, so the
same samples that audit certifies) and computes from those samples:

* the single-event Clopper–Pearson bound of the model-chosen event (:func:`.whitebox.model_event`),
  the number ``whitebox_audit`` records as ``audited_epsilon_lower``;
* the exact ε(δ) of the measured noisy statistic (:func:`.whitebox.exact_epsilon`);
* the μ-GDP fit of the whole trade-off curve and the certified μ (:func:`.tradeoff.tradeoff_audit`,
  after Nasr et al., USENIX Security 2023), with ε read off the μ-GDP profile at δ;
* the Bayesian credible intervals of the certified event (:func:`.bayes.bayes_fields`).

The certified GDP ε is a **bound** only where the statistic's law is Gaussian (the likelihood-ratio
statistic of a Gaussian mechanism, N(±μ²/2, μ²)); for the sketch's χ² statistic the trade-off curve is
not Gaussian, and the same number is an **estimate** (``gdp_epsilon_reading`` says which).
:func:`markdown_table` and :func:`bayes_table` print the rows; :func:`mechanism_rates` measures audit
trials per second.
"""

from __future__ import annotations

import math
import statistics as _stats
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

from experiments.audit.bayes import bayes_fields, record_counts
from experiments.audit.tradeoff import tradeoff_audit, whitebox_scores

#: the mechanisms of the white-box table (every white-box tap but GaussCov, which docs/covariance.md
#: audits)
TABLE_MECHANISMS = (
    "mod_sulq",
    "analyze_gauss",
    "noisy_power",
    "streaming_power",
    "online_pca",
    "private_sketch",
)
#: the δ of the table: the claimed 10⁻⁵ and 0.1, where 2·10⁴ runs see the relevant events
TABLE_DELTAS = (1e-5, 0.1)

_AUDIT_YAML = Path(__file__).resolve().parents[2] / "conf" / "experiment" / "audit.yaml"


def epsilon_caps() -> dict[str, float]:
    """``experiment.epsilon_cap`` of conf/experiment/audit.yaml (the one source of the caps)."""
    from omegaconf import OmegaConf

    caps = OmegaConf.load(_AUDIT_YAML).experiment.epsilon_cap
    return {} if caps is None else {str(k): float(v) for k, v in caps.items()}


def claimed_epsilon(name: str, epsilon: float = 2.0) -> float:
    """The ε a table row audits ``name`` at: ``epsilon``, lowered to the mechanism's cap."""
    cap = epsilon_caps().get(name)
    return float(epsilon) if cap is None else min(float(epsilon), cap)


def tradeoff_row(
    mechanism: str,
    *,
    delta: float,
    trials: int = 20000,
    epsilon: float = 2.0,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict:
    """One row of the white-box trade-off table (module docstring).

    Parameters
    ----------
    mechanism : str
        A registry name with a white-box tap (:data:`.whitebox.TAPS`).
    delta : float
        The δ the mechanism is calibrated for and the bounds are read at.
    trials : int, default 20000
        Runs per dataset; every run certifies (the events are fixed from the statistic's model for
        the single-event bound, and for the GDP threshold of a Gaussian statistic; the χ² statistic
        of the sketch chooses its GDP threshold on the first half).
    epsilon : float, default 2.0
        The claim, lowered to ``experiment.epsilon_cap`` (Analyze Gauss: 0.9).
    seed : int, default 0
        The random streams are those of ``whitebox_audit(..., seed=seed)``.
    confidence : float, default 0.95
        Of the Clopper–Pearson bounds and of the credible intervals.

    Returns
    -------
    dict
        ``exact_epsilon``, ``audited_epsilon_lower`` (single event), ``mu`` (measured, Gaussian
        statistics only), the fields of :func:`.tradeoff.tradeoff_audit` and :func:`.bayes.bayes_fields`,
        ``gdp_epsilon_reading``, ``seconds`` (wall, drawing and computing) and ``cpu_seconds`` (this
        process's CPU time: less sensitive to other jobs on a shared machine).
    """
    from experiments.audit.whitebox import _certify, exact_epsilon, model_event

    eps = claimed_epsilon(mechanism, epsilon)
    t0, c0 = time.perf_counter(), time.process_time()
    s1, s0, model = whitebox_scores(
        mechanism, epsilon=eps, delta=delta, trials=int(trials), seed=seed
    )
    alpha = 1.0 - float(confidence)
    cert = _certify(
        s1, s0, model_event(model, delta, int(trials), alpha), float(delta), float(confidence)
    )
    mu = model.get("mu")
    curve = tradeoff_audit(s1, s0, delta=float(delta), confidence=confidence, model_mu=mu)
    row = {
        "mechanism": mechanism,
        "claimed_epsilon": eps,
        "delta": float(delta),
        "trials": int(trials),
        "seed": int(seed),
        "statistic_model": model["kind"],
        "mu": mu,
        "exact_epsilon": float(exact_epsilon(model, float(delta))),
        **cert,
        **curve,
    }
    if model["kind"] == "chi2":
        row["lift"] = model["w"]
    row.update(bayes_fields(row, seed=seed))
    row["seconds"] = time.perf_counter() - t0
    row["cpu_seconds"] = time.process_time() - c0
    return row


def tradeoff_rows(
    mechanisms: Iterable[str] = TABLE_MECHANISMS,
    deltas: Iterable[float] = TABLE_DELTAS,
    *,
    trials: int | dict[str, int] = 20000,
    seed: int = 0,
    confidence: float = 0.95,
    progress: Callable[[dict], None] | None = None,
) -> list[dict]:
    """:func:`tradeoff_row` for every δ and mechanism (δ outermost, as the table is printed);
    ``trials`` may name a count per mechanism."""
    rows = []
    for delta in deltas:
        for name in mechanisms:
            n = trials.get(name, 20000) if isinstance(trials, dict) else trials
            row = tradeoff_row(name, delta=delta, trials=n, seed=seed, confidence=confidence)
            rows.append(row)
            if progress is not None:
                progress(row)
    return rows


def _num(x: float | None, fmt: str = ".3f") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return "∞" if math.isinf(x) else format(x, fmt)


def _delta(d: float) -> str:
    return f"{d:g}".replace("e-05", "e-5")


def markdown_table(rows: Sequence[dict]) -> str:
    """The trade-off table in markdown: one line per row, the GDP-certified ε in bold where it is a
    bound and marked "(estimate)" where the statistic is not Gaussian."""
    head = (
        "| mechanism | δ | exact ε(δ) | CP bound | fitted ε (estimate) | fit deviation "
        "| μ exact / fitted / certified | GDP-certified ε | trials/side | CPU seconds |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for r in rows:
        gdp = _num(r["gdp_epsilon_lower"])
        reading = r["gdp_epsilon_reading"]
        if reading == "bound":
            gdp = f"**{gdp}**"
        else:
            gdp = "— (none at δ = 0)" if reading.startswith("none") else f"{gdp} (estimate)"
        lines.append(
            f"| {r['mechanism']} | {_delta(r['delta'])} | {_num(r['exact_epsilon'])} "
            f"| {_num(r['audited_epsilon_lower'])} | {_num(r['gdp_epsilon_fit'])} "
            f"| {_num(r['gdp_fit_max_deviation'])} "
            f"| {_num(r['mu'])} / {_num(r['gdp_mu_fit'])} / {_num(r['gdp_mu_lower'])} "
            f"| {gdp} | {r['trials']} | {r.get('cpu_seconds', r['seconds']):.0f} |"
        )
    return head + "\n".join(lines)


def _interval(b: dict) -> str:
    lo, hi = b["credible_interval"]
    return f"{_num(lo)}–{_num(hi)} ({_num(b['credible_lower'])})"


def bayes_table(rows: Sequence[dict]) -> str:
    """The Bayesian intervals of each row: the certified event under the Jeffreys and uniform priors,
    and the μ-GDP reading of the GDP threshold's counts (Jeffreys); equal-tailed interval at the
    confidence, with the one-sided lower credible bound in parentheses."""
    head = (
        "| mechanism | δ | event's false positives / negatives | Jeffreys | uniform "
        "| GDP reading (Jeffreys) |\n|---|---|---|---|---|---|\n"
    )
    lines = []
    for r in rows:
        fp, _, fn, _ = record_counts(r)
        lines.append(
            f"| {r['mechanism']} | {_delta(r['delta'])} | {fp} / {fn} "
            f"| {_interval(r['bayes_jeffreys'])} | {_interval(r['bayes_uniform'])} "
            f"| {_interval(r['bayes_gdp_jeffreys'])} |"
        )
    return head + "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Audit trials per second
# ---------------------------------------------------------------------------------------------


def _median_rate(run: Callable[[], int], repeats: int) -> tuple[float, list[float], float]:
    """Over ``repeats`` calls of ``run()`` (which returns how many releases it made): the median of
    releases per CPU second of this process, those rates, and the median per wall second.  The
    audit runs in one thread (BLAS limited to one), so the CPU rate is the rate of one free core;
    on a shared machine the wall rate also counts the time other jobs held the core."""
    cpu, wall = [], []
    for _ in range(int(repeats)):
        t, c = time.perf_counter(), time.process_time()
        count = run()
        cpu.append(count / max(time.process_time() - c, 1e-9))
        wall.append(count / (time.perf_counter() - t))
    return float(_stats.median(cpu)), cpu, float(_stats.median(wall))


def _design_releases(name: str, trials: int, seed: int) -> Callable[[], int]:
    from experiments.audit.runner import audit_mechanism

    eps = claimed_epsilon(name)

    def run() -> int:
        audit_mechanism(name, epsilon=eps, delta=1e-5, trials=trials, seed=seed)
        return 2 * int(trials)

    return run


def _whitebox_releases(name: str, trials: int, seed: int) -> Callable[[], int]:
    eps = claimed_epsilon(name)

    def run() -> int:
        whitebox_scores(name, epsilon=eps, delta=1e-5, trials=trials, seed=seed)
        return 2 * int(trials)

    return run


def _search_releases(
    name: str, trials: int, seed: int, calibration_trials: int, time_budget: float
) -> Callable[[], int]:
    from experiments.audit.search import search_audit

    eps = claimed_epsilon(name)

    def run() -> int:
        r = search_audit(
            name,
            epsilon=eps,
            delta=1e-5,
            calibration_trials=calibration_trials,
            trials=trials,
            n_random=2,
            seed=seed,
            time_budget=time_budget,
        )
        # the reference runs, the calibration runs of every design tried, the certifying runs
        return int(r["designs_tried"]) * 2 * (calibration_trials + 1) + 2 * int(trials)

    return run


def mechanism_rates(
    names: Iterable[str],
    *,
    modes: Sequence[str] = ("design", "search", "whitebox"),
    target_seconds: float = 1.0,
    repeats: int = 3,
    search_calibration_trials: int = 20,
    search_trials: int = 100,
    search_time_budget: float = 3.0,
    seed: int = 0,
    progress: Callable[[dict], None] | None = None,
) -> list[dict]:
    """Audit trials per second (one release of the mechanism per trial) of each mechanism in each
    mode it runs in, the median of ``repeats`` timed runs, per CPU second of this process
    (``trials_per_second``) and per wall second (``trials_per_wall_second``; :func:`_median_rate`).

    * ``design``: :func:`.runner.audit_mechanism` on the hand-made pair (ε = 2, capped; δ = 10⁻⁵),
      sized from a first run of 20 trials per side to last about ``target_seconds``; the rate counts
      the runs on both datasets and includes the statistic, the bound, the fit and the probe run.
    * ``whitebox`` (mechanisms with a tap): :func:`.tradeoff.whitebox_scores`, sized the same way.
    * ``search``: a whole :func:`.search.search_audit` (catalogue and two random designs,
      ``search_calibration_trials`` per design and dataset, ``search_trials`` certifying runs,
      calibration stopped after ``search_time_budget`` s): the releases it made over its wall time,
      so the rate includes the statistics and the training of the learned testers.
    """
    from experiments.audit.whitebox import TAPS

    out = []
    for name in names:
        for mode in modes:
            if mode == "whitebox" and name not in TAPS:
                continue
            if mode == "search":
                run = _search_releases(
                    name, search_trials, seed, search_calibration_trials, search_time_budget
                )
                sized = search_trials
            else:
                make = _design_releases if mode == "design" else _whitebox_releases
                probe_rate, _, _ = _median_rate(make(name, 20, seed), 1)
                sized = max(20, int(probe_rate * target_seconds / 2))
                run = make(name, sized, seed)
            rate, rates, wall = _median_rate(run, repeats)
            row = {
                "mechanism": name,
                "mode": mode,
                "trials_per_second": rate,
                "repeat_rates": rates,
                "trials_per_wall_second": wall,
                "trials_per_side": sized,
                "repeats": int(repeats),
            }
            out.append(row)
            if progress is not None:
                progress(row)
    return out


def rates_table(
    rows: Sequence[dict], modes: Sequence[str] = ("design", "search", "whitebox")
) -> str:
    """Trials per second, one line per mechanism, one column per mode ("–" where it does not run)."""
    by = {(r["mechanism"], r["mode"]): r["trials_per_second"] for r in rows}
    names = list(dict.fromkeys(r["mechanism"] for r in rows))
    head = "| mechanism | " + " | ".join(modes) + " |\n|---|" + "---|" * len(modes) + "\n"
    lines = []
    for name in names:
        cells = [format(by[(name, m)], ",.0f") if (name, m) in by else "–" for m in modes]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return head + "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The black-box testers alone
# ---------------------------------------------------------------------------------------------


def blackbox_row(
    name: str,
    *,
    epsilon: float = 2.0,
    delta: float = 1e-5,
    trials: int = 1000,
    calibration_trials: int = 100,
    n_random: int = 12,
    time_budget: float | None = 20.0,
    learned: tuple[str, ...] = ("logistic", "mmd"),
    seed: int = 0,
    confidence: float = 0.95,
) -> dict:
    """The search with only the learned testers (``handmade=False``) on one registry mechanism at the
    claim ``epsilon`` (lowered to its cap), ``delta``: the record of :func:`.search.search_audit`
    (the same call as ``run.py experiment=audit experiment.mode=search experiment.handmade=false``)."""
    from experiments.audit.search import search_audit

    return search_audit(
        name,
        epsilon=claimed_epsilon(name, epsilon),
        delta=delta,
        trials=trials,
        calibration_trials=calibration_trials,
        n_random=n_random,
        time_budget=time_budget,
        learned=tuple(learned),
        handmade=False,
        seed=seed,
        confidence=confidence,
    )


def _short_verdict(r: dict) -> str:
    if r["violation"]:
        return "VIOLATION"
    return "not private, as declared" if math.isinf(r["claimed_epsilon"]) else "ok"


def blackbox_table(rows: Sequence[dict]) -> str:
    """One line per mechanism: the claim, the design and learned statistic that won, the certified
    bound, the ceiling of the trials, the designs tried and the seconds."""
    head = (
        "| mechanism | claimed ε | δ | winning design / tester | black-box-only ε lower (95%) "
        "| ceiling | designs tried (skipped) | seconds | verdict |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for r in rows:
        lines.append(
            f"| {r['mechanism']} | {_num(r['claimed_epsilon'], 'g')} | {_delta(r['delta'])} "
            f"| {r['design']} / {r['statistic']} | **{_num(r['audited_epsilon_lower'])}** "
            f"| {_num(r['max_certifiable_epsilon'], '.2f')} "
            f"| {r['designs_tried']} ({r['designs_skipped']}) | {r['seconds']:.0f} "
            f"| {_short_verdict(r)} |"
        )
    return head + "\n".join(lines)
