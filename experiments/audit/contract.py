"""The contract every mechanism of the harness keeps, as a check anyone can run on their own mechanism.

    from experiments.audit.contract import check_mechanism
    report = check_mechanism(my_mechanism, epsilon=1.0, delta=1e-5)
    print(report); report.raise_if_failed()

or from the shell: ``python -m experiments.audit.contract my_module:my_function --epsilon 1 --delta 1e-5``.

A mechanism is a function ``f(X, k, *, rng, clip=False, **params) -> MechanismOutput`` (see
the types :mod:`mechanisms` exports).  The contract (docs/own_mechanism.md):

1. **Declared guarantee** — the output carries a :class:`~mechanisms.PrivacyGuarantee` with ε ≥ 0,
   0 ≤ δ < 1 and a neighbouring relation the harness knows (``NEIGHBOURING_RELATIONS``); the
   guarantee does not depend on the data (two datasets of the same shape get the same one: a
   data-dependent ε would itself leak).
2. **Refusal of bad input** — ε ≤ 0 / NaN / ∞, δ outside (0, 1), k outside 1 ≤ k < d or not an
   integer, NaN or ∞ in X, empty or 1-D X and rows above the norm bound (with ``clip=False``) each
   raise a ``ValueError`` (``PrivacyInputError`` is one).  Rows of norm exactly 1 are accepted;
   ``clip=True`` is the projection onto the unit ball (same output as on the pre-clipped data).
3. **Reproducible** — the same seed gives the same output, bit for bit; a private mechanism
   (finite ε) whose output varies with the data but not with the seed is deterministic, hence not
   differentially private, and fails.
4. **Orthonormal output** — a finite ``d x k`` matrix with orthonormal columns, or ``None`` (⊥) with
   status ``"bottom"``.
5. **Audit** — a statistical lower bound on ε from many runs on neighbouring datasets must not
   exceed the claim.  The search audit of ``experiments.audit`` is used
   when it is importable, with a small trial budget; otherwise the fixed-design audit
   (:func:`experiments.audit.audit_mechanism`); if neither imports, this part is reported as
   skipped with the reason.  A small budget only catches gross violations (the bound cannot exceed
   about log(trials / 2 / log(2/α))); run the full audit (``python run.py experiment=audit``) for more.

Randomness: every run uses ``numpy.random.default_rng([seed, j])`` for a fixed ``j`` per check.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import math
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from mechanisms import NEIGHBOURING_RELATIONS, MechanismOutput, PrivacyGuarantee, get_mechanism

#: names under which ``experiments.audit`` may expose its search audit (tried in order)
SEARCH_AUDIT_NAMES = ("search_audit", "audit_by_search", "audit_search", "run_search_audit")
#: tolerance on ``VᵀV = I`` (eigen-solvers give ~1e-14; 1e-8 leaves room for iterative methods)
ORTHONORMAL_ATOL = 1e-8


@dataclass
class CheckResult:
    name: str
    status: str  # "passed" | "failed" | "skipped"
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.status.upper():7s} {self.name}" + (f": {self.detail}" if self.detail else "")


@dataclass
class ContractReport:
    mechanism: str
    results: list[CheckResult] = field(default_factory=list)
    audit: dict[str, Any] | None = None

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def ok(self) -> bool:
        return not self.failures

    def status_of(self, name: str) -> str:
        return next(r.status for r in self.results if r.name == name)

    def __str__(self) -> str:
        head = (
            f"contract of {self.mechanism}: {'OK' if self.ok else f'{len(self.failures)} FAILED'}"
        )
        return "\n".join([head, *("  " + str(r) for r in self.results)])

    def raise_if_failed(self) -> None:
        if not self.ok:
            raise AssertionError(str(self))


def _resolve(mechanism: str | Callable) -> tuple[str, Callable[..., MechanismOutput]]:
    if isinstance(mechanism, str):
        if ":" in mechanism:  # "package.module:function"
            module, func = mechanism.split(":", 1)
            return mechanism, getattr(importlib.import_module(module), func)
        return mechanism, get_mechanism(mechanism)
    return getattr(mechanism, "__name__", type(mechanism).__name__), mechanism


def _accepts(fn: Callable, name: str) -> bool:
    params = inspect.signature(fn).parameters
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def unit_rows(
    n: int, d: int, rng: np.random.Generator, spectrum: np.ndarray | None = None
) -> np.ndarray:
    """``n x d`` Gaussian rows with a decaying spectrum, scaled so that the largest row norm is exactly 1."""
    scales = np.sqrt(spectrum if spectrum is not None else 1.0 / np.arange(1, d + 1))
    X = rng.standard_normal((n, d)) * scales
    return X / np.linalg.norm(X, axis=1).max()


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and np.array_equal(a, b)


def _check_output(out: Any, d: int, k: int) -> str | None:
    """``None`` if ``out`` is a valid output for (d, k), else what is wrong."""
    if not isinstance(out, MechanismOutput):
        return f"returned {type(out).__name__}, not a MechanismOutput"
    V = out.components
    if V is None:
        status = out.status
        return (
            None
            if status == "bottom"
            else f"components is None (⊥) but status is {status!r}, not 'bottom'"
        )
    V = np.asarray(V)
    if V.shape != (d, k):
        return f"components have shape {V.shape}, expected (d, k) = {(d, k)}"
    if not np.all(np.isfinite(V)):
        return "components contain NaN or infinity"
    err = float(np.abs(V.T @ V - np.eye(k)).max())
    if err > ORTHONORMAL_ATOL:
        return f"columns are not orthonormal: max |VᵀV − I| = {err:.3g} > {ORTHONORMAL_ATOL:g}"
    return None


def _check_guarantee(g: Any) -> str | None:
    if not isinstance(g, PrivacyGuarantee):
        return f"guarantee is {type(g).__name__}, not a PrivacyGuarantee"
    if g.neighbouring not in NEIGHBOURING_RELATIONS:
        return f"unknown neighbouring relation {g.neighbouring!r}"
    eps, delta = float(g.epsilon), float(g.delta)
    if math.isnan(eps) or eps < 0:
        return f"declared epsilon {g.epsilon!r} is not >= 0"
    if math.isnan(delta) or not 0 <= delta < 1:
        return f"declared delta {g.delta!r} is not in [0, 1)"
    if g.neighbouring != "none" and not math.isfinite(eps):
        return (
            f"relation {g.neighbouring!r} declared with epsilon = inf (use 'none' for no privacy)"
        )
    return None


def check_mechanism(
    mechanism: str | Callable[..., MechanismOutput],
    *,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    params: dict | None = None,
    n: int = 60,
    d: int = 5,
    k: int = 2,
    seed: int = 0,
    audit: bool = True,
    audit_trials: int = 2000,
    audit_confidence: float = 0.95,
    audit_time_budget: float = 30.0,
) -> ContractReport:
    """Run the contract (module docstring) on ``mechanism`` and return a :class:`ContractReport`.

    ``mechanism``: a callable, a registry name, or ``"module:function"``.  ``epsilon``/``delta`` are
    passed when the function takes them; ``params`` are further keyword arguments.  The functional
    checks use ``n x d`` Gaussian data with a decaying spectrum and largest row norm 1, rank ``k``.
    ``audit_trials`` runs per dataset
    for the audit (``audit=False`` leaves it out; it is then reported as skipped); a search audit also
    gets ``trials // 10`` calibration runs per candidate, 4 random designs and ``audit_time_budget``
    seconds of calibration.
    """
    name, fn = _resolve(mechanism)
    report = ContractReport(name)
    add = report.results.append
    kwargs = dict(params or {})
    takes_eps, takes_delta = _accepts(fn, "epsilon"), _accepts(fn, "delta")
    if takes_eps:
        kwargs.setdefault("epsilon", epsilon)
    if takes_delta:
        kwargs.setdefault("delta", delta)

    def run(X, kk=k, j=0, **over):
        return fn(X, kk, rng=np.random.default_rng([seed, j]), **{**kwargs, **over})

    # 0. interface
    missing = [p for p in ("rng", "clip") if not _accepts(fn, p)]
    if missing:
        add(
            CheckResult(
                "interface",
                "failed",
                f"f(X, k, *, rng, clip=False, **params) expected; missing {missing}",
            )
        )
        return report
    add(CheckResult("interface", "passed"))

    rng = np.random.default_rng([seed, 1000])
    X = unit_rows(n, d, rng)
    X_other = unit_rows(n, d, rng)
    try:
        first = run(X)
    except Exception as exc:  # noqa: BLE001 - reported, not hidden
        add(CheckResult("runs on valid input", "failed", f"{type(exc).__name__}: {exc}"))
        return report
    add(CheckResult("runs on valid input", "passed"))

    # 1. declared guarantee, independent of the data
    problem = _check_guarantee(getattr(first, "guarantee", None))
    g = getattr(first, "guarantee", None)
    detail = problem or (
        f"epsilon={g.epsilon:g}, delta={g.delta:g}, {g.neighbouring}"
        + (
            ""
            if not takes_eps or g.epsilon == epsilon
            else f" (requested epsilon={epsilon:g}: the declared one is what the harness records)"
        )
    )
    add(CheckResult("declared guarantee", "failed" if problem else "passed", detail))
    if not problem:
        other = run(X_other)
        same_g = getattr(other, "guarantee", None) == g
        add(
            CheckResult(
                "guarantee independent of the data",
                "passed" if same_g else "failed",
                ""
                if same_g
                else f"{g} on one dataset, {getattr(other, 'guarantee', None)} on another",
            )
        )

    # 4. orthonormal output (checked before reproducibility, which compares outputs)
    problem = _check_output(first, d, k)
    add(
        CheckResult(
            "orthonormal d x k output (or ⊥ with status 'bottom')",
            "failed" if problem else "passed",
            problem or "",
        )
    )
    k1 = run(X, kk=1, j=2)
    problem = _check_output(k1, d, 1)
    add(
        CheckResult(
            "orthonormal output for k = 1", "failed" if problem else "passed", problem or ""
        )
    )

    # 3. reproducibility
    again = run(X)
    add(
        CheckResult(
            "same seed, same output",
            "passed" if _same(first.components, again.components) else "failed",
            ""
            if _same(first.components, again.components)
            else "two runs with the same seed differ",
        )
    )
    if (
        g is not None
        and isinstance(g, PrivacyGuarantee)
        and math.isfinite(g.epsilon)
        and g.epsilon > 0
    ):
        outs = [run(X, j=j).components for j in (3, 4, 5)]
        seed_free = all(_same(outs[0], o) for o in outs[1:])
        data_dependent = not _same(outs[0], run(X_other, j=3).components)
        if seed_free and data_dependent and outs[0] is not None:
            add(
                CheckResult(
                    "output depends on the seed",
                    "failed",
                    "three seeds give the same output, which changes with the data: a deterministic "
                    "function of the data is not differentially private",
                )
            )
        else:
            add(CheckResult("output depends on the seed", "passed"))

    # 2. refusal of bad input
    bad: list[tuple[str, Callable[[], Any]]] = []
    if takes_eps:
        for e in (0.0, -1.0, float("nan"), float("inf")):
            bad.append((f"epsilon={e}", lambda e=e: run(X, epsilon=e)))
    if takes_delta:
        for dl in (0.0, 1.0, -0.1, float("nan")):
            bad.append((f"delta={dl}", lambda dl=dl: run(X, delta=dl)))
    for kk in (0, d, d + 1, 1.5):
        bad.append((f"k={kk} (d={d})", lambda kk=kk: run(X, kk=kk)))
    X_nan, X_inf = X.copy(), X.copy()
    X_nan[3, 1] = np.nan
    X_inf[5, 0] = np.inf
    X_big = X.copy()
    X_big[7] *= 1.5 / np.linalg.norm(X_big[7])
    bad += [
        ("NaN in X", lambda: run(X_nan)),
        ("inf in X", lambda: run(X_inf)),
        ("a row of norm 1.5 > 1 (clip=False)", lambda: run(X_big, clip=False)),
        ("empty X (0 rows)", lambda: run(np.zeros((0, d)))),
        ("1-D X", lambda: run(X[0])),
    ]
    for label, call in bad:
        try:
            call()
        except ValueError as exc:
            add(CheckResult(f"refuses {label}", "passed", f"{type(exc).__name__}: {exc}"))
        except Exception as exc:  # noqa: BLE001
            add(
                CheckResult(
                    f"refuses {label}",
                    "failed",
                    f"raised {type(exc).__name__} ({exc}), expected a ValueError such as PrivacyInputError",
                )
            )
        else:
            add(CheckResult(f"refuses {label}", "failed", "accepted (no exception)"))
    # boundary and clipping
    X_unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    try:
        problem = _check_output(run(X_unit), d, k)
    except Exception as exc:  # noqa: BLE001
        problem = f"{type(exc).__name__}: {exc}"
    add(
        CheckResult(
            "accepts rows of norm exactly 1", "failed" if problem else "passed", problem or ""
        )
    )
    try:
        clipped = run(X_big, clip=True, j=6)
        projected = X_big / np.maximum(1.0, np.linalg.norm(X_big, axis=1, keepdims=True))
        ref = run(projected, j=6)
        problem = _check_output(clipped, d, k)
        if (
            problem is None
            and not (clipped.components is None and ref.components is None)
            and (
                clipped.components is None
                or ref.components is None
                or not np.allclose(clipped.components, ref.components, atol=1e-10)
            )
        ):
            problem = "output with clip=True differs from the output on the rows projected onto the unit ball"
    except Exception as exc:  # noqa: BLE001
        problem = f"{type(exc).__name__}: {exc}"
    add(
        CheckResult(
            "clip=True projects rows onto the unit ball",
            "failed" if problem else "passed",
            problem or "",
        )
    )

    # 5. audit
    if not audit:
        add(CheckResult("audit", "skipped", "audit=False"))
    else:
        _audit(report, fn, kwargs, audit_trials, audit_confidence, seed, audit_time_budget)
    return report


def _audit(
    report: ContractReport,
    fn: Callable,
    kwargs: dict,
    trials: int,
    confidence: float,
    seed: int,
    time_budget: float,
) -> None:
    try:
        audit_module = importlib.import_module("experiments.audit")
    except Exception as exc:  # noqa: BLE001 - a missing or broken audit package is reported
        report.results.append(
            CheckResult(
                "audit",
                "skipped",
                f"experiments.audit does not import ({type(exc).__name__}: {exc})",
            )
        )
        return
    search = next(
        (getattr(audit_module, a) for a in SEARCH_AUDIT_NAMES if hasattr(audit_module, a)), None
    )
    if search is not None:
        kind, audit_fn = f"search audit (experiments.audit.{search.__name__})", search
    elif hasattr(audit_module, "audit_mechanism"):
        kind, audit_fn = (
            (
                "fixed-design audit (experiments.audit.audit_mechanism; no search audit found under "
                f"{', '.join(SEARCH_AUDIT_NAMES)})"
            ),
            audit_module.audit_mechanism,
        )
    else:
        report.results.append(
            CheckResult(
                "audit",
                "skipped",
                "experiments.audit has neither a search audit "
                f"({', '.join(SEARCH_AUDIT_NAMES)}) nor audit_mechanism",
            )
        )
        return
    sig = inspect.signature(audit_fn).parameters
    # a small budget: the search's calibration phase and random designs are cut down too, and it
    # stops calibrating after ``time_budget`` seconds (passed only to audits that take them)
    options = {
        "trials": int(trials),
        "seed": int(seed),
        "confidence": float(confidence),
        "calibration_trials": max(100, int(trials) // 10),
        "n_random": 4,
        "time_budget": float(time_budget),
    }
    call = {key: value for key, value in options.items() if key in sig}
    for key in ("epsilon", "delta"):
        if key in kwargs:
            call[key] = kwargs[key]
    extra = {key: value for key, value in kwargs.items() if key not in ("epsilon", "delta")}
    try:
        result = audit_fn(fn, **call, **extra)
    except Exception as exc:  # noqa: BLE001
        report.results.append(
            CheckResult("audit", "failed", f"{kind} raised {type(exc).__name__}: {exc}")
        )
        return
    report.audit = dict(result)
    lower = float(result.get("audited_epsilon_lower", result.get("epsilon_lower", float("nan"))))
    claimed = float(result.get("claimed_epsilon", float("nan")))
    violation = bool(result.get("violation", lower > claimed))
    detail = (
        f"{kind}, {trials} trials per dataset: audited epsilon >= {lower:.3g} at confidence "
        f"{result.get('confidence', confidence):g}, claimed {claimed:g}"
    )
    report.results.append(
        CheckResult(
            "audit",
            "failed" if violation else "passed",
            ("VIOLATION: " if violation else "") + detail,
        )
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Check a mechanism against the harness's contract "
        "(experiments/audit/contract.py, docs/own_mechanism.md)."
    )
    ap.add_argument(
        "mechanism", help="registry name or module:function (the module must be importable)"
    )
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--audit-trials", type=int, default=2000)
    ap.add_argument("--no-audit", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        _resolve(args.mechanism)
    except (ImportError, AttributeError, ValueError) as exc:
        # a module not on PYTHONPATH, a misspelt function or registry name: one line, exit 2
        print(
            f"Error: cannot find mechanism {args.mechanism!r}: {exc} (a registry name, or "
            "module:function with the module importable, e.g. on PYTHONPATH)",
            file=sys.stderr,
        )
        return 2
    report = check_mechanism(
        args.mechanism,
        epsilon=args.epsilon,
        delta=args.delta,
        seed=args.seed,
        audit=not args.no_audit,
        audit_trials=args.audit_trials,
    )
    print(report)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
