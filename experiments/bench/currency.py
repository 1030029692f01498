"""One privacy currency: every mechanism run at the same certified (ε, δ), replace-one-row.

The benchmark takes a target (ε, δ) and calls each mechanism so that its release is
(ε, δ)-DP for **replace-one-row** neighbours (two data sets of the same n differing in one row, rows
of L2 norm <= 1), the relation of most of the library:

``pure``
    ε-DP mechanisms are called at ε; they certify (ε, 0), which implies (ε, δ) for every δ.
``approx``
    (ε, δ) Gaussian mechanisms are called at (ε, δ) with their tight calibration where they have one
    (``calibration=tight``: the smallest noise for the exact privacy profile) and with the
    replace-one-row relation where they offer a choice (``neighbouring=replace-one-row``).
``zcdp``
    ρ-zCDP mechanisms are called with (ε, δ); they run at the largest ρ whose conversion certifies
    (ε, δ) (:func:`mechanisms.calibration.zcdp_rho_tight`) and record ρ.
``group2``
    a mechanism proved only under add/remove-one-row (``private_sketch``) is called at
    (ε₀, δ₀) = (ε/2, δ/(1 + e^{ε/2})): replacing a row is removing it, then adding another, so by
    group privacy over the two steps it is (2ε₀, (1 + e^{ε₀})δ₀) = (ε, δ)-DP under replace-one-row.
``reference`` / ``data-independent``
    ``pca`` (not private, ε = ∞: a reference, never ranked) and ``random`` (ε = 0: its output does not
    depend on the data).

Compositions inside a mechanism (PPCA-iterative's ε/k per vector, ``amin_cov``'s ε₀ + Σεᵢ, the noisy
power method's iterations, the tree of online PCA) are the mechanism's own accounting, as its proof
states it: the benchmark passes the total and records what the release states.

Whatever the plan, the certified level is read back from the guarantee each release states
(:func:`certified`): a guarantee under add/remove- or zero-out-one-row is converted to replace-one-row
by the same group-privacy step, (ε, δ) -> (2ε, (1 + e^ε)δ); an entry-level one cannot be converted.
A release whose certified level exceeds the target is kept in the store but marked ``over target``
and never ranked.  A mechanism outside this table (one's own, ``module:function``) is called at
(ε, δ) with its own defaults and judged by the same read-back.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

#: the neighbouring relation every certified level refers to
COMMON_RELATION = "replace-one-row"
#: relations one group-privacy step of two converts to replace-one-row
GROUP2_RELATIONS = ("add-remove-one-row", "zero-out-one-row")
#: relative slack of the check "certified <= target" (rounding of the calibrations)
TOLERANCE = 1e-6


@dataclass(frozen=True)
class Plan:
    """How the benchmark calls one mechanism at a target (ε, δ).

    ``kind`` is one of ``pure``, ``approx``, ``zcdp``, ``group2``, ``reference``,
    ``data-independent``, ``own`` (module docstring); ``options`` are set on the mechanism's
    configured options (``mechanism.fn``); ``note`` says what was done, for the records."""

    kind: str
    options: dict = field(default_factory=dict)
    note: str = ""

    def call_parameters(self, epsilon: float, delta: float) -> dict[str, float]:
        """The privacy parameters passed to the mechanism for the target (ε, δ)."""
        if self.kind in ("reference", "data-independent"):
            return {}
        if self.kind == "pure":
            return {"epsilon": epsilon}
        if self.kind == "group2":
            e0 = epsilon / 2.0
            return {"epsilon": e0, "delta": delta / (1.0 + math.exp(e0))}
        return {"epsilon": epsilon, "delta": delta}


_TIGHT = {"calibration": "tight"}
_REPLACE = {"neighbouring": COMMON_RELATION}

#: registry name -> how the benchmark calls it (module docstring)
PLANS: dict[str, Plan] = {
    "pca": Plan("reference", note="not private (epsilon = inf): a reference, never ranked"),
    "random": Plan("data-independent", note="a Haar-uniform subspace: 0-DP"),
    "mod_sulq": Plan("approx", _TIGHT, "calibration=tight"),
    "analyze_gauss": Plan(
        "approx", {**_TIGHT, **_REPLACE}, "calibration=tight, neighbouring=replace-one-row"
    ),
    "ppca": Plan("pure", note="pure epsilon; k > 1 is an MCMC draw: nominal"),
    "ppca_iterative": Plan("pure", note="pure epsilon, epsilon/k per vector"),
    "amin_cov": Plan("pure", _TIGHT, "calibration=tight; epsilon_0 + sum epsilon_i = epsilon"),
    "noisy_power": Plan(
        "approx", {**_TIGHT, **_REPLACE}, "calibration=tight, neighbouring=replace-one-row"
    ),
    "streaming_power": Plan("approx", _TIGHT, "calibration=tight"),
    "online_pca": Plan(
        "approx", {**_TIGHT, **_REPLACE}, "calibration=tight, neighbouring=replace-one-row"
    ),
    "private_sketch": Plan(
        "group2",
        _TIGHT,
        "calibration=tight; add/remove-one-row only: run at (eps/2, delta/(1+e^(eps/2))), "
        "replace-one-row (eps, delta) by group privacy",
    ),
    "subspace_exact": Plan("approx", {"too_many": "bottom"}, "too_many=bottom"),
    "subspace_approx": Plan("approx"),
    "gauss_cov": Plan("zcdp", note="largest rho certifying (eps, delta)"),
    "separate_cov": Plan("zcdp", note="largest rho certifying (eps, delta)"),
    "adaptive_cov": Plan("zcdp", note="largest rho certifying (eps, delta)"),
    "coinpress_cov": Plan("zcdp", note="largest rho certifying (eps, delta)"),
    "dp_pca": Plan("zcdp", note="largest rho certifying (eps, delta); k = 1 only"),
    "k_dp_pca": Plan("zcdp", note="largest rho certifying (eps, delta)"),
    "lap_cov": Plan("pure"),
    "separate_lap_cov": Plan("pure"),
    "diffprivlib_pca": Plan("pure", note="peer: the epsilon its own accountant certifies"),
    "opendp_pca": Plan("pure", note="peer: the epsilon its own privacy map certifies"),
}

#: the peers (experiments/peers): their samplers draw another law than their proofs assume
PEERS = ("diffprivlib_pca", "opendp_pca")
#: mechanisms that only estimate the top eigenvector
K1_ONLY = ("dp_pca",)


def plan_for(name: str) -> Plan:
    """The call plan of registry mechanism ``name``, or ``own`` for any other."""
    return PLANS.get(name, Plan("own", note="own mechanism: called at (eps, delta), its defaults"))


def certified(guarantee: dict) -> tuple[float | None, float | None, str]:
    """The (ε, δ) a stated guarantee certifies under replace-one-row, and how it was obtained.

    ``guarantee`` is :meth:`mechanisms.PrivacyGuarantee.as_dict` (ε may be the string ``"inf"``).
    Returns ``(None, None, why)`` where no conversion exists (entry-level)."""
    eps = float(guarantee["epsilon"])
    delta = float(guarantee["delta"])
    rel = guarantee["neighbouring"]
    if rel in (COMMON_RELATION, "none"):
        return eps, delta, "as stated"
    if rel in GROUP2_RELATIONS:
        return (
            2.0 * eps,
            (1.0 + math.exp(eps)) * delta if delta > 0 else 0.0,
            f"{rel} (eps0, delta0) -> replace-one-row (2 eps0, (1+e^eps0) delta0) by group privacy",
        )
    return None, None, f"{rel}: no conversion to replace-one-row"


def tier(name: str, status: str, eps_cert: float | None, delta_cert: float | None,
         epsilon: float, delta: float) -> str:  # fmt: skip
    """How a release counts in the leaderboard: ``proven`` (ranked), ``nominal`` (an MCMC draw),
    ``peer``, ``reference`` (not private), ``over target`` or ``unproven`` (another status)."""
    if name in PEERS or status.startswith("certified by peer"):
        return "peer"
    if eps_cert is not None and math.isinf(eps_cert):
        return "reference"
    if status.startswith("nominal"):
        return "nominal"
    if eps_cert is None or delta_cert is None:
        return "over target"
    if eps_cert > epsilon * (1 + TOLERANCE) or delta_cert > delta * (1 + TOLERANCE):
        return "over target"
    return "proven" if status == "proven" else "unproven"


def own_function(spec: str) -> Callable[..., Any]:
    """The function ``spec`` names: ``module:function`` (an importable module) or
    ``path/to/file.py:function`` (a file, imported by its path: no PYTHONPATH needed)."""
    module, _, func = spec.rpartition(":")
    if not module or not func:
        raise ValueError(f"{spec!r}: expected module:function or path/to/file.py:function")
    if module.endswith(".py"):
        path = Path(module).expanduser().resolve()
        if not path.is_file():
            raise ValueError(f"{spec!r}: no file {module}")
        mod_name = f"_privpca_own_{path.stem}"
        mod = sys.modules.get(mod_name)
        if mod is None:
            mod_spec = importlib.util.spec_from_file_location(mod_name, path)
            mod = importlib.util.module_from_spec(mod_spec)
            sys.modules[mod_name] = mod
            mod_spec.loader.exec_module(mod)
    else:
        mod = importlib.import_module(module)
    try:
        return getattr(mod, func)
    except AttributeError:
        raise ValueError(f"{spec!r}: {module} has no function {func!r}") from None


def own_name(spec: str) -> str:
    """How records name an own mechanism ``spec``: its function's name."""
    return spec.rpartition(":")[2]


def takes(fn: Callable, name: str) -> bool:
    """Whether ``fn`` (a function or a functools.partial) takes keyword ``name``."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
