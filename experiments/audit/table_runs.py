"""The runs of the audit table of docs/audit.md ("Targets: measured"): one ``run.py experiment=audit``
command line each, with what its row is expected to show.

:data:`TABLE_RUNS` is the one list of them: the plan runs one job per run
(:func:`experiments.plan.audit_plan.build_audit_plan`), and the drawing finds each run's record by
the run key of its composed config (:mod:`.report`).  A run's ``name`` is stable: the committed
summary (``results/audit/summary.csv``) and the plan's cost table are keyed by it.  A run's
``overrides`` come after ``experiment=audit``; changing them changes the run key, so the record
is computed anew.
"""

from __future__ import annotations

from dataclasses import dataclass

#: what a row is expected to show: whether its outcome must be a caught violation, and in words
EXPECTATIONS = {
    "caught": (True, "a known-broken control: its audit must catch it"),
    "ok": (False, "an honest mechanism: no violation"),
    "not_its_mode": (False, "a planted defect audited in a mode shown not to catch it"),
    "too_few_trials": (False, "a planted defect audited with fewer runs than catching it takes"),
}
#: the sections of the table, in the order of its rows
SECTIONS = (
    "white-box, δ = 0.1",
    "white-box, claimed δ",
    "search, exact-case estimators",
    "search, every mechanism",
    "planted defects",
    "published, not DP",
    "controls since 2019",
)


@dataclass(frozen=True)
class TableRun:
    """One run of the audit table.

    Attributes
    ----------
    name : str
        Stable and unique (``whitebox-d0.1/mod_sulq/noise_cut``).
    section : str
        One of :data:`SECTIONS`.
    overrides : tuple of str
        Its ``run.py`` overrides after ``experiment=audit``.
    expect : str
        One of :data:`EXPECTATIONS`.
    """

    name: str
    section: str
    overrides: tuple[str, ...]
    expect: str

    def __post_init__(self) -> None:
        if self.expect not in EXPECTATIONS:
            raise ValueError(f"{self.name}: expect must be one of {list(EXPECTATIONS)}")
        if self.section not in SECTIONS:
            raise ValueError(f"{self.name}: section must be one of {list(SECTIONS)}")


def expects_caught(expect: str) -> bool:
    """Whether a row expecting ``expect`` must show a caught violation."""
    return EXPECTATIONS[expect][0]


#: shorthands in :data:`_TABLE`'s overrides: the search's settings of the table (2,000 certifying
#: runs, 200 calibration runs, a 90 s budget) and the search on the exact-case estimators (ε = 1,
#: δ = 10⁻⁶, 100 calibration runs)
_SHORTHANDS = {
    "$S": "experiment.mode=search experiment.trials=2000 experiment.calibration_trials=200 "
    "experiment.time_budget=90",
    "$X": "experiment.mechanism=subspace_exact experiment.mode=search epsilon=1 delta=1e-6 "
    "experiment.trials=2000 experiment.calibration_trials=100",
}
_WB = "experiment.mode=whitebox"
_M = "experiment.mechanism="
_V = "experiment.variant="

#: (section, ((name, expect, overrides), ...)) in the order of the table's rows
_TABLE = (
    # each Gaussian mechanism (Analyze Gauss at its cap 0.9) and its 25%-cut variant, δ = 0.1; MOD-SULQ's
    # exact ε(δ) is small (0.098): more trials to come within 1.5 of it
    (SECTIONS[0], (
        ("whitebox-d0.1/mod_sulq", "ok", f"{_M}mod_sulq {_WB} delta=0.1 experiment.trials=20000"),
        ("whitebox-d0.1/mod_sulq/noise_cut", "caught",
         f"{_M}mod_sulq {_WB} delta=0.1 experiment.trials=20000 {_V}noise_cut"),
        ("whitebox-d0.1/analyze_gauss", "ok",
         f"{_M}analyze_gauss {_WB} delta=0.1 experiment.trials=20000"),
        ("whitebox-d0.1/analyze_gauss/noise_cut", "caught",
         f"{_M}analyze_gauss {_WB} delta=0.1 experiment.trials=20000 {_V}noise_cut"),
        ("whitebox-d0.1/noisy_power", "ok",
         f"{_M}noisy_power {_WB} delta=0.1 experiment.trials=20000"),
        ("whitebox-d0.1/noisy_power/noise_cut", "caught",
         f"{_M}noisy_power {_WB} delta=0.1 experiment.trials=20000 {_V}noise_cut"),
        ("whitebox-d0.1/streaming_power", "ok",
         f"{_M}streaming_power {_WB} delta=0.1 experiment.trials=20000"),
        ("whitebox-d0.1/streaming_power/noise_cut", "caught",
         f"{_M}streaming_power {_WB} delta=0.1 experiment.trials=20000 {_V}noise_cut"),
        ("whitebox-d0.1/online_pca", "ok",
         f"{_M}online_pca {_WB} delta=0.1 experiment.trials=20000"),
        ("whitebox-d0.1/online_pca/noise_cut", "caught",
         f"{_M}online_pca {_WB} delta=0.1 experiment.trials=20000 {_V}noise_cut"),
        ("whitebox-d0.1/private_sketch", "ok",
         f"{_M}private_sketch {_WB} delta=0.1 experiment.trials=20000"),
        ("whitebox-d0.1/private_sketch/noise_cut", "caught",
         f"{_M}private_sketch {_WB} delta=0.1 experiment.trials=20000 {_V}noise_cut"),
        ("whitebox-d0.1/mod_sulq/trials100000", "ok",
         f"{_M}mod_sulq {_WB} delta=0.1 experiment.trials=100000"),
    )),
    # white-box at the claimed δ (the experiment's 10⁻⁵): exact ε(δ) and bound of each
    (SECTIONS[1], (
        ("whitebox/mod_sulq", "ok", f"{_M}mod_sulq {_WB} experiment.trials=20000"),
        ("whitebox/analyze_gauss", "ok", f"{_M}analyze_gauss {_WB} experiment.trials=20000"),
        ("whitebox/noisy_power", "ok", f"{_M}noisy_power {_WB} experiment.trials=20000"),
        ("whitebox/streaming_power", "ok", f"{_M}streaming_power {_WB} experiment.trials=20000"),
        ("whitebox/online_pca", "ok", f"{_M}online_pca {_WB} experiment.trials=20000"),
        ("whitebox/private_sketch", "ok", f"{_M}private_sketch {_WB} experiment.trials=20000"),
    )),
    # the published Algorithm 1 and the three releases whose bits carry individual rows, catalogue and
    # random designs; the registry subspace_exact, which must stay at or below its claim; the same
    # with random designs only; the hand-made design of the registry subspace_exact, default claim
    (SECTIONS[2], (
        ("search-exact/subspace_exact/unfixed", "caught", f"$X experiment.n_random=12 {_V}unfixed"),
        ("search-exact/subspace_exact/tolerance", "caught",
         f"$X experiment.n_random=12 {_V}tolerance"),
        ("search-exact/subspace_exact/first_rows_frame", "caught",
         f"$X experiment.n_random=12 {_V}first_rows_frame"),
        ("search-exact/subspace_exact/rounded_dedup", "caught",
         f"$X experiment.n_random=12 {_V}rounded_dedup"),
        ("search-exact/subspace_exact", "ok", "$X experiment.n_random=12"),
        ("search-exact/subspace_exact/unfixed/random_designs", "caught",
         f"$X experiment.n_random=30 experiment.use_catalogue=false {_V}unfixed"),
        ("search-exact/subspace_exact/random_designs", "ok",
         "$X experiment.n_random=30 experiment.use_catalogue=false"),
        ("design/subspace_exact", "ok", f"{_M}subspace_exact experiment.trials=20000"),
    )),
    # every registry mechanism at the audit's default claim (ε = 2, δ = 10⁻⁵; a test checks that
    # this list is the registry)
    (SECTIONS[3], tuple(
        (f"search/{m}", "ok", f"{_M}{m} $S")
        for m in ("pca", "random", "mod_sulq", "analyze_gauss", "ppca", "ppca_iterative",
                  "noisy_power", "streaming_power", "private_sketch", "online_pca",
                  "subspace_approx", "subspace_exact", "amin_cov", "gauss_cov", "separate_cov",
                  "adaptive_cov", "lap_cov", "separate_lap_cov", "coinpress_cov", "dp_pca",
                  "k_dp_pca")
    )),
    # each planted defect with the mode that must catch it, and the modes that need not
    (SECTIONS[4], (
        ("search/mod_sulq/sign_bit", "caught", f"{_M}mod_sulq $S {_V}sign_bit"),
        ("design/mod_sulq/sign_bit", "not_its_mode",
         f"{_M}mod_sulq {_V}sign_bit experiment.trials=20000"),
        ("whitebox/online_pca/tree_without_height", "caught",
         f"{_M}online_pca {_WB} {_V}tree_without_height experiment.trials=20000 delta=1e-5"),
        ("whitebox-d0.1/online_pca/tree_without_height", "caught",
         f"{_M}online_pca {_WB} {_V}tree_without_height experiment.trials=20000 delta=0.1"),
        ("search/online_pca/tree_without_height", "not_its_mode",
         f"{_M}online_pca $S {_V}tree_without_height"),
        ("search/ppca/doubled_exponent", "too_few_trials", f"{_M}ppca $S {_V}doubled_exponent"),
        ("search-10k/ppca/doubled_exponent", "caught",
         f"{_M}ppca experiment.mode=search experiment.trials=10000 "
         f"experiment.calibration_trials=300 experiment.time_budget=90 {_V}doubled_exponent"),
        ("search-10k/ppca", "ok",
         f"{_M}ppca experiment.mode=search experiment.trials=10000 "
         "experiment.calibration_trials=300 experiment.time_budget=90"),
        ("design/ppca/doubled_exponent", "caught",
         f"{_M}ppca {_V}doubled_exponent experiment.trials=20000"),
    )),
    # the Wishart mechanism of JXZ16 / IS16, published as (ε, 0)-DP: the search catches it through
    # the noisy matrix it releases
    (SECTIONS[5], (("search/mod_sulq/wishart", "caught", f"{_M}mod_sulq $S {_V}wishart"),)),
    # the known-broken controls of the mechanisms since 2019, beside the real mechanisms
    (SECTIONS[6], (
        ("whitebox/amin_cov", "ok", f"{_M}amin_cov {_WB} experiment.trials=20000"),
        ("whitebox/amin_cov/add_remove_laplace", "caught",
         f"{_M}amin_cov {_WB} experiment.trials=20000 {_V}add_remove_laplace"),
        ("whitebox-d0.1/dp_pca/noise0.5", "caught",
         f"{_M}dp_pca {_WB} epsilon=2 delta=0.1 experiment.trials=2000 experiment.noise_factor=0.5"),
        ("whitebox-d0.1/dp_pca", "ok", f"{_M}dp_pca {_WB} epsilon=2 delta=0.1 experiment.trials=2000"),
        ("whitebox-d0.1/dp_pca/unclipped", "caught",
         f"{_M}dp_pca {_WB} epsilon=2 delta=0.1 experiment.trials=2000 {_V}unclipped"),
        ("search/dp_pca/unclipped", "caught", f"{_M}dp_pca $S {_V}unclipped"),
        ("search/k_dp_pca/unclipped", "caught", f"{_M}k_dp_pca $S {_V}unclipped"),
        ("design/gauss_cov/noise0.1", "caught",
         f"{_M}gauss_cov experiment.noise_factor=0.1 experiment.trials=2000"),
        ("design/coinpress_cov/noise0.005", "caught",
         f"{_M}coinpress_cov experiment.noise_factor=0.005 experiment.trials=2000"),
        ("design/lap_cov/noise0.25", "caught",
         f"{_M}lap_cov experiment.noise_factor=0.25 experiment.trials=2000"),
        ("design/separate_lap_cov/noise0.1", "caught",
         f"{_M}separate_lap_cov experiment.noise_factor=0.1 experiment.trials=2000"),
        ("design/separate_cov/noise0.1", "caught",
         f"{_M}separate_cov experiment.noise_factor=0.1 experiment.trials=2000"),
        ("design/adaptive_cov/noise0.1", "caught",
         f"{_M}adaptive_cov experiment.noise_factor=0.1 experiment.trials=2000"),
        ("design/analyze_gauss/projection/noise0.05", "caught",
         f"{_M}analyze_gauss experiment.noise_factor=0.05 "
         "+experiment.mechanism_params.postprocess=projection experiment.trials=2000"),
    )),
)  # fmt: skip


def _overrides(text: str) -> tuple[str, ...]:
    for short, long in _SHORTHANDS.items():
        text = text.replace(short, long)
    return tuple(text.split())


#: the runs of the audit table, in the order of its rows
TABLE_RUNS: tuple[TableRun, ...] = tuple(
    TableRun(name, section, _overrides(overrides), expect)
    for section, rows in _TABLE
    for name, expect, overrides in rows
)
