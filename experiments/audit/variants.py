"""Known-broken variants of the mechanisms: the audit must catch every one of them.

* :func:`miscalibrated` — the noise multiplied by a factor, the claim unchanged;
* :func:`noise_cut` — for a Gaussian mechanism, the noise cut until the exact ε(δ) of the Gaussian
  it then is exceeds the claim by a given factor (25 % by default), the factor found from the σ
  and shift the white-box tap measures on the code actually run (:mod:`.whitebox`);
* :func:`bypass_norm_check` — the row-norm check removed;
* :func:`subspace_exact_variant` — known-broken versions of Singhal–Steinke's exact-case estimator:
  Algorithm 1 as published (not (ε, δ)-DP when a real subspace's score ties with NULL's), and three
  releases whose bits carry individual rows (tolerance membership, first-rows frame, rounded
  de-duplication);
* :func:`planted_variant` — three planted defects (:data:`PLANTED_VARIANTS`), each for the audit mode
  that must catch it: MOD-SULQ with the first row's signs in the lowest mantissa bits of its output
  (the search, through its bit-level statistics), online PCA's tree noise without its √(1 + H) (the
  white-box audit, through the exact ε(δ) of the tree it measures), PPCA (k = 1) with ε doubled in the
  exponent (the search, through its heavy-axis designs);
* :func:`wishart_mechanism_variant` — a published mechanism, not a planted defect, selected the same way
  (``experiment.variant=wishart`` with ``mod_sulq``, whose audit settings it borrows): the Wishart
  mechanism of Jiang, Xie & Zhang (2016) and Imtiaz & Sarwate (2016), claimed (ε, 0)-DP, not DP for any ε
  (:mod:`mechanisms._wishart_known_broken`); the search catches it through its released noisy matrix.

None is reachable from a default configuration: each is selected explicitly
(``experiment.variant=...``, or by calling these functions).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import math
from typing import Callable, Sequence

import numpy as np
from scipy.optimize import brentq

from experiments.audit.whitebox import exact_epsilon, measure_mu
from mechanisms import MECHANISMS, MechanismOutput, get_mechanism
from mechanisms.toolkit import PreparedData

#: mechanism -> (module, noise-scale function looked up by the mechanism at call time)
NOISE_FUNCTIONS = {  # every noise-scale function a call may use, for each calibration (paper, tight, ...)
    "mod_sulq": ("mechanisms.mod_sulq", ("mod_sulq_noise_scale", "mod_sulq_noise_scale_tight")),
    "analyze_gauss": (
        "mechanisms.analyze_gauss",
        ("analyze_gauss_noise_scale", "analyze_gauss_noise_scale_tight"),
    ),
    "noisy_power": (
        "mechanisms.noisy_power",
        (
            "noisy_power_noise_scale",
            "noisy_power_row_noise_scale",
            "noisy_power_zcdp_noise_scale",
            "noisy_power_tight_noise_scale",
            "noisy_power_laplace_scale",
        ),
    ),
    "online_pca": (
        "mechanisms.online_pca",
        ("tree_node_noise_scale", "algorithm1_noise_scale", "algorithm2_noise_scale_tight"),
    ),
    # streaming_power_noise_scale covers both calibrations (it calls gaussian_sigma_tight itself)
    "streaming_power": ("mechanisms.streaming_power", "streaming_power_noise_scale"),
    # the singular-value lift w plays the noise: Z = Φ[X; wI] has rows N(0, XᵀX + w²I)
    "private_sketch": ("mechanisms.private_sketch", ("private_sketch_lift", "sketch_lift_tight")),
    # Dong, Liang & Yi's covariance mechanisms and CoinPress (docs/covariance.md)
    "gauss_cov": ("mechanisms.dong_cov", "gauss_cov_noise_scale"),
    "separate_cov": ("mechanisms.dong_cov", ("gauss_cov_noise_scale", "eigenvalue_noise_scale")),
    "adaptive_cov": (
        "mechanisms.dong_cov",
        (
            "gauss_cov_noise_scale",
            "eigenvalue_noise_scale",
            "trace_noise_scale",
            "svt_threshold_scale",
        ),
    ),
    "lap_cov": ("mechanisms.dong_cov", "lap_cov_noise_scale"),
    "separate_lap_cov": (
        "mechanisms.dong_cov",
        ("lap_cov_noise_scale", "lap_eigenvalue_noise_scale"),
    ),
    "coinpress_cov": ("mechanisms.coinpress", "coinpress_noise_scale"),
    # DP-PCA / k-DP-PCA: the range histogram's Laplace scale, the centre's and the clipped mean's σ
    "dp_pca": (
        "mechanisms.dp_pca",
        ("range_laplace_scale", "center_noise_scale", "mean_noise_scale"),
    ),
    "k_dp_pca": (
        "mechanisms.k_dp_pca",
        ("range_laplace_scale", "center_noise_scale", "mean_noise_scale"),
    ),
}


@contextlib.contextmanager
def _patched(module: str, names: Sequence[str], wrap: Callable[[Callable], Callable]):
    mod = importlib.import_module(module)
    saved = {nm: getattr(mod, nm) for nm in names if hasattr(mod, nm)}
    if not saved:
        raise AttributeError(
            f"none of {list(names)} exists in {module}: the mechanism changed how it "
            "computes its noise; update experiments/audit/variants.py:NOISE_FUNCTIONS"
        )
    try:
        for nm, f in saved.items():
            setattr(mod, nm, wrap(f))
        yield
    finally:
        for nm, f in saved.items():
            setattr(mod, nm, f)


def miscalibrated(name: str, noise_factor: float = 0.5) -> Callable[..., MechanismOutput]:
    """Mechanism ``name`` with its noise multiplied by ``noise_factor`` but its claim unchanged.

    Gaussian/Laplace mechanisms: the module's noise-scale function is patched for the duration of
    each call.  Exponential mechanisms (ppca, ppca_iterative), which have no noise scale: they are
    run at ε / noise_factor (the temperature scaled by the same factor) and the output's guarantee
    is rewritten to the requested ε.
    """
    fn = get_mechanism(name)
    f = float(noise_factor)
    if name in NOISE_FUNCTIONS:
        module, names = NOISE_FUNCTIONS[name]
        names = (names,) if isinstance(names, str) else names

        def wrap(g):
            @functools.wraps(g)
            def scaled(*a, **kw):
                return f * g(*a, **kw)

            return scaled

        @functools.wraps(fn)
        def broken(X, k, **params):
            with _patched(module, names, wrap):
                return fn(X, k, **params)
    elif name in ("ppca", "ppca_iterative", "amin_cov"):

        @functools.wraps(fn)
        def broken(X, k, *, epsilon, **params):
            out = fn(X, k, epsilon=epsilon / f, **params)
            g = out.guarantee
            out.guarantee = type(g)(
                float(epsilon),
                g.delta,
                g.neighbouring,
                g.exact,
                f"MISCALIBRATED (run at epsilon/{f:g}): " + g.note,
            )
            return out
    else:
        raise ValueError(f"no miscalibration recipe for {name!r}")
    broken.audit_name = f"{name}[noise x{f:g}]"
    broken.audit_design = name
    return broken


def bypass_norm_check(name: str) -> Callable[..., MechanismOutput]:
    """Mechanism ``name`` with its row-norm check removed (rows of any length accepted, unclipped).

    Patches the module's ``check_data`` to ``row_norm_bound=inf`` for each call; the claimed
    guarantee is unchanged, so auditing with ``row_norm > 1`` must find a violation.
    """
    fn = get_mechanism(name)
    module = MECHANISMS[name].split(":")[0]

    def wrap(g):
        @functools.wraps(g)
        def lax(X, **kw):
            kw["row_norm_bound"] = math.inf
            kw["clip"] = False
            return g(X, **kw)

        return lax

    @functools.wraps(fn)
    def broken(X, k, **params):
        with _patched(module, ["check_data"], wrap):
            return fn(X, k, **params)

    broken.audit_name = f"{name}[no norm check]"
    broken.audit_design = name
    return broken


def noise_cut(
    name: str,
    *,
    epsilon: float,
    delta: float,
    overshoot: float = 1.25,
    trials_probe: int = 2,
    **params,
) -> Callable[..., MechanismOutput]:
    """Gaussian mechanism ``name`` with its noise cut until its exact ε(δ) = ``overshoot`` · claimed ε.

    The white-box tap (:func:`.whitebox.measure_mu`) runs the real mechanism, with its real noise
    scale, on its full-sensitivity design and measures μ = ‖shift‖/σ of the noisy statistic it
    computes (composed in quadrature over the noisy releases); the factor f solves
    ε_exact(μ/f, δ) = overshoot · ε (Balle–Wang for Gaussians; the χ² profile for the sketch,
    :func:`.whitebox.exact_epsilon`), and the variant is :func:`miscalibrated` (name, f).  Its
    ``audit_exact_epsilon`` attribute records the target.
    """
    target = float(overshoot) * float(epsilon)
    m = measure_mu(name, epsilon=epsilon, delta=delta, **params)
    g = lambda f: exact_epsilon(m, delta, noise_factor=f) - target  # noqa: E731
    if g(1.0) >= 0:
        raise ValueError(
            f"{name}: the exact epsilon at full noise ({exact_epsilon(m, delta):.4g}) already "
            f"reaches {target:.4g}"
        )
    lo = 1.0
    while g(lo) < 0:
        lo /= 2.0
        if lo < 1e-8:
            raise ValueError(f"{name}: no noise factor reaches exact epsilon {target:.4g}")
    f = float(brentq(g, lo, 1.0, xtol=1e-12, rtol=1e-10))
    broken = miscalibrated(name, f)
    broken.audit_name = f"{name}[noise cut to exact eps {overshoot:g} x claim]"
    broken.audit_noise_factor = f
    broken.audit_exact_epsilon = exact_epsilon(m, delta, noise_factor=f)
    return broken


#: experiment.variant -> (module, function, audit name): the known-broken exact-case estimators
SUBSPACE_EXACT_VARIANTS = {
    "unfixed": (
        "mechanisms.subspace._known_broken",
        "_subspace_exact_paper_unfixed",
        "subspace_exact[paper, unfixed]",
    ),
    "tolerance": (
        "mechanisms.subspace._known_broken",
        "subspace_exact_tolerance",
        "subspace_exact[tolerance membership]",
    ),
    "first_rows_frame": (
        "mechanisms.subspace._known_broken",
        "subspace_exact_first_rows_frame",
        "subspace_exact[first-rows frame]",
    ),
    "rounded_dedup": (
        "mechanisms.subspace._known_broken",
        "subspace_exact_rounded_dedup",
        "subspace_exact[rounded de-duplication]",
    ),
}


def subspace_exact_variant(kind: str) -> Callable[..., MechanismOutput]:
    """A known-broken version of Singhal–Steinke's exact-case estimator (:data:`SUBSPACE_EXACT_VARIANTS`).

    ``unfixed``: Algorithm 1 as published (GAP-MAX with NULL over a data-dependent candidate set);
    ``tolerance``: propose-test-release with floating-point membership, a rounded de-duplication key, the
    first rows' frame and the noisy gap released; ``first_rows_frame``: exact scores with the frame of the
    first rows spanning the subspace; ``rounded_dedup``: the tolerance scores releasing only ⊥ or a fixed
    frame.  None is (ε, δ)-DP; the search (:mod:`.search`) must catch each without being told the design.
    """
    if kind not in SUBSPACE_EXACT_VARIANTS:
        raise ValueError(
            f"unknown subspace_exact variant {kind!r}; valid: {sorted(SUBSPACE_EXACT_VARIANTS)}"
        )
    module, attr, label = SUBSPACE_EXACT_VARIANTS[kind]
    fn = getattr(importlib.import_module(module), attr, None)
    if fn is None:
        raise ImportError(f"{module} has no {attr} (a known-broken audit variant)")

    @functools.wraps(fn)
    def broken(X, k, **params):
        return fn(X, k, **params)

    broken.audit_name = label
    broken.audit_design = "subspace_exact"
    return broken


def unfixed_subspace_exact() -> Callable[..., MechanismOutput]:
    """Singhal–Steinke Algorithm 1 as published (:func:`subspace_exact_variant` ``("unfixed")``)."""
    return subspace_exact_variant("unfixed")


# ---------------------------------------------------------------------------------------------
# Planted defects: each must be caught by the audit mode named in PLANTED_VARIANTS
# ---------------------------------------------------------------------------------------------


def sign_bit_mod_sulq() -> Callable[..., MechanismOutput]:
    """MOD-SULQ whose output carries the first row's signs in its lowest mantissa bits.

    The released components are MOD-SULQ's, except that the lowest mantissa bit of entry (i, j) is
    set to 1 when the first row's i-th coordinate is positive and to 0 otherwise: a change of at most
    one unit in the last place, invisible to every statistic of the subspace, yet the true ε is ∞ on
    any pair whose first rows differ in the sign pattern (e₁ vs e₂, for example).  The claim is
    MOD-SULQ's, unchanged.
    """
    fn = get_mechanism("mod_sulq")

    @functools.wraps(fn)
    def broken(X, k, **params):
        out = fn(X, k, **params)
        rows = X.X if isinstance(X, PreparedData) else np.asarray(X, dtype=np.float64)
        if out.components is not None:
            V = np.array(out.components, dtype=np.float64, order="C")
            bits = (rows[0] > 0).astype(np.uint64)[:, None] * np.ones(V.shape[1], np.uint64)
            u = V.view(np.uint64)
            u &= ~np.uint64(1)
            u |= bits
            out.components = V
        return out

    return broken


def tree_without_height_online_pca() -> Callable[..., MechanismOutput]:
    """Online PCA whose tree nodes get the noise of a single Gaussian release: √(1 + H) left out.

    Each element of an m-row stream enters 1 + H = 1 + ⌈log₂ m⌉ released tree nodes, so the
    calibration scales the per-node noise by √(1 + H) (``tree_node_noise_scale``); this variant
    computes it as for a one-row stream (H = 0, one node per element, for both calibrations) and keeps
    the claim.  Its tree is then a Gaussian mechanism of ratio √(1 + H) times the calibrated one: on a
    32-row stream the exact ε(δ) is 4.28 against the claimed ε = 2 (δ = 10⁻⁵).
    """
    fn = get_mechanism("online_pca")

    def wrap(g):
        @functools.wraps(g)
        def one_level(epsilon, delta, m, *args, **kw):
            return g(epsilon, delta, 1, *args, **kw)

        return one_level

    @functools.wraps(fn)
    def broken(X, k, **params):
        with _patched("mechanisms.online_pca", ["tree_node_noise_scale"], wrap):
            return fn(X, k, **params)

    return broken


def doubled_exponent_ppca() -> Callable[..., MechanismOutput]:
    """PPCA (exact sampler, k = 1) drawing from BMF(n·ε·A) instead of BMF(n·ε/2·A), claim unchanged.

    The exponent of the exponential mechanism is doubled, so the draw is 2ε-DP (true ε = 4 against a
    claim of 2): :func:`miscalibrated` ``("ppca", 0.5)``.
    """
    return miscalibrated("ppca", 0.5)


def wishart_mechanism_variant() -> Callable[..., MechanismOutput]:
    """The Wishart mechanism as published (JXZ16 / IS16): Â = A + Wishart_d(d + 1, 3/(2nε)·I), released
    with its top-k eigenvectors, claimed (ε, 0)-DP under replace-one-row.  Not DP for any ε: the noise
    is positive definite, so {Â₁₁ ≤ A₁₁(X)} is impossible under X = {e₁, 0, …} and has probability
    F_{χ²_{d+1}}(2ε/3) under X′ = {e₂, 0, …} (:mod:`mechanisms._wishart_known_broken`).  Not
    registered: a known-broken audit variant only.  It has no parameter but ε (δ and the others the
    audit passes are dropped by its signature)."""
    fn = getattr(importlib.import_module("mechanisms._wishart_known_broken"), "wishart_mechanism")

    @functools.wraps(fn)
    def broken(X, k, **params):
        return fn(X, k, **params)

    return broken


#: experiment.variant -> (mechanism, factory, audit name, the audit mode that must catch it); the
#: planted defects, and the published Wishart mechanism, which borrows MOD-SULQ's audit settings (the
#: same release: top-k eigenvectors of A = XᵀX/n plus symmetric noise, replace-one-row)
PLANTED_VARIANTS = {
    "sign_bit": (
        "mod_sulq",
        sign_bit_mod_sulq,
        "mod_sulq[first row's signs in the lowest mantissa bits]",
        "search",
    ),
    "tree_without_height": (
        "online_pca",
        tree_without_height_online_pca,
        "online_pca[tree noise without sqrt(1 + H)]",
        "whitebox",
    ),
    "doubled_exponent": (
        "ppca",
        doubled_exponent_ppca,
        "ppca[epsilon doubled in the exponent]",
        "search",
    ),
    "wishart": (
        "mod_sulq",
        wishart_mechanism_variant,
        "wishart[JXZ16/IS16: A + Wishart(d+1, 3/(2 n eps) I), claimed (eps, 0)-DP]",
        "search",
    ),
}


def planted_variant(kind: str, mechanism: str | None = None) -> Callable[..., MechanismOutput]:
    """A planted defect of :data:`PLANTED_VARIANTS`, labelled for the audit.

    Parameters
    ----------
    kind : {"sign_bit", "tree_without_height", "doubled_exponent", "wishart"}
        The defect (``wishart``: the published Wishart mechanism, :func:`wishart_mechanism_variant`).
    mechanism : str, optional
        The registry name it is asked for; refused unless it is the defect's mechanism.

    Returns
    -------
    callable
        ``f(X, k, *, rng, **params) -> MechanismOutput`` with ``audit_name`` (a label naming the
        defect) and ``audit_design`` (the mechanism whose designs and parameters the audit uses).
    """
    if kind not in PLANTED_VARIANTS:
        raise ValueError(f"unknown planted variant {kind!r}; valid: {sorted(PLANTED_VARIANTS)}")
    name, factory, label, _mode = PLANTED_VARIANTS[kind]
    if mechanism is not None and mechanism != name:
        raise ValueError(f"experiment.variant={kind} is a known-broken {name} (mechanism {name})")
    broken = factory()
    broken.audit_name = label
    broken.audit_design = name
    return broken


# ---------------------------------------------------------------------------------------------
# Known-broken calibrations of amin_cov (Amin et al. 2019), each with its claim unchanged
# ---------------------------------------------------------------------------------------------


def amin_cov_variant(kind: str) -> Callable[..., MechanismOutput]:
    """A known-broken ``amin_cov`` (:data:`AMIN_COV_VARIANTS`), labelled for the audit.

    ``no_eigenvalue_noise``: the eigenvalues released without their Laplace noise (true ε = ∞ on any
    pair whose eigenvalues differ).  ``reference_constants``: the constants of Google's reference code
    (docs/amin_cov.md): exponent 2ε_i·uᵀXᵀXu (8 times the paper's ε_i/4) and Laplace noise of scale
    1/ε_0 on XᵀX's eigenvalues (the add/remove sensitivity) under the replace-one claim; with k = 1
    and the half split its eigenvector alone is 4ε_1 = 2ε-DP.  ``add_remove_laplace``: only the
    Laplace scale of add/remove (sensitivity 1, not 2); broken for two or more released eigenvalues
    (the pair of tests/mechanisms/test_amin_cov.py moves two eigenvalues by 1 each), which the search's
    one-coordinate statistics do not combine.  The white-box audit catches it
    (:mod:`.whitebox`, tap ``amin_cov``: the Laplace likelihood ratio of both eigenvalues on
    :func:`.designs.eigenvalue_swap_design`, against the eigenvalues' share ε_0 of the claim); it
    catches ``reference_constants`` (the same Laplace scale) and ``no_eigenvalue_noise`` there too:
    docs/amin_cov.md, "Audit".
    """
    if kind not in AMIN_COV_VARIANTS:
        raise ValueError(f"unknown amin_cov variant {kind!r}; valid: {sorted(AMIN_COV_VARIANTS)}")
    sens, coef, label = AMIN_COV_VARIANTS[kind]
    fn = get_mechanism("amin_cov")

    @functools.wraps(fn)
    def broken(X, k, **params):
        with _patched("mechanisms.amin_cov", ["eigenvalue_sensitivity"], sens):
            with _patched("mechanisms.amin_cov", ["exponent_coefficient"], coef):
                return fn(X, k, **params)

    broken.audit_name = label
    broken.audit_design = "amin_cov"
    return broken


def _keep(g):
    return g


#: experiment.variant -> (wrapper of eigenvalue_sensitivity, wrapper of exponent_coefficient, label)
AMIN_COV_VARIANTS = {
    "no_eigenvalue_noise": (
        lambda g: lambda r, calibration="paper": 0.0,
        _keep,
        "amin_cov[eigenvalues without noise]",
    ),
    "reference_constants": (
        lambda g: lambda r, calibration="paper": 1.0,
        lambda g: lambda epsilon_i, calibration="paper": 2.0 * epsilon_i,
        "amin_cov[reference code's constants: exponent 2 eps_i, Laplace 1/eps_0]",
    ),
    "add_remove_laplace": (
        lambda g: lambda r, calibration="paper": g(r, calibration) / 2.0,
        _keep,
        "amin_cov[add/remove Laplace scale under replace-one]",
    ),
}


# ---------------------------------------------------------------------------------------------
# Known-broken DP-PCA / k-DP-PCA (mechanisms/dp_pca.py), each with its claim unchanged
# ---------------------------------------------------------------------------------------------


def dp_pca_variant(kind: str, mechanism: str = "dp_pca") -> Callable[..., MechanismOutput]:
    """A known-broken ``dp_pca`` or ``k_dp_pca``, labelled for the audit.

    ``unclipped``: the clipped mean without its projection onto the ball of radius R around the
    private centre (:func:`mechanisms.dp_pca.clip_around` made the identity): the noise is still
    calibrated to the sensitivity min(2R, 2)/B, which the unclipped mean exceeds whenever one gradient
    lies far from the others (true ε = ∞ as R → 0).  ``noise_halved``: every noise scale of the
    private mean halved (:func:`miscalibrated` with factor 0.5).  Oja's gradients of rows in the
    unit ball are at most 1 apart, so halving the centre's noise stays within its step's budget;
    the halved noise shows where the clipped mean attains its sensitivity 2R/B, which the white-box
    audit's design does (:func:`.whitebox.oja_gradient_design`; docs/dp_pca.md, "Audit").
    """
    if mechanism not in ("dp_pca", "k_dp_pca"):
        raise ValueError(f"no DP-PCA variant for mechanism {mechanism!r}")
    if kind == "noise_halved":
        return miscalibrated(mechanism, 0.5)
    if kind != "unclipped":
        raise ValueError(f"unknown dp_pca variant {kind!r}; valid: ['noise_halved', 'unclipped']")
    fn = get_mechanism(mechanism)

    def wrap(g):
        @functools.wraps(g)
        def identity(rows, c, radius):
            return rows - c, 0

        return identity

    @functools.wraps(fn)
    def broken(X, k, **params):
        with _patched("mechanisms.dp_pca", ["clip_around"], wrap):
            return fn(X, k, **params)

    broken.audit_name = f"{mechanism}[mean not clipped]"
    broken.audit_design = mechanism
    return broken


#: mechanism -> (the names ``experiment.variant`` may give its known-broken variants, the maker
#: ``(kind, mechanism) -> callable``): the variants of one registered mechanism, selected with it
MECHANISM_VARIANTS = {
    "amin_cov": (tuple(sorted(AMIN_COV_VARIANTS)), lambda kind, mechanism: amin_cov_variant(kind)),
    "dp_pca": (("noise_halved", "unclipped"), dp_pca_variant),
    "k_dp_pca": (("noise_halved", "unclipped"), dp_pca_variant),
}


def mechanism_variant(kind: str, mechanism: str) -> Callable[..., MechanismOutput]:
    """The known-broken variant ``kind`` of ``mechanism`` (:data:`MECHANISM_VARIANTS`), labelled for
    the audit; ``ValueError`` naming the valid ones."""
    names, make = MECHANISM_VARIANTS.get(mechanism, ((), None))
    if kind not in names:
        raise ValueError(f"no variant {kind!r} of {mechanism}; valid: {list(names)}")
    return make(kind, mechanism)
