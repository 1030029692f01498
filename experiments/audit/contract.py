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
   exceed the claim: the search audit (:func:`experiments.audit.search.search_audit`) with a small
   trial budget.  A small budget only catches gross violations (the bound cannot exceed about
   log(trials / 2 / log(2/α))); run the full audit (``python run.py experiment=audit``) for more.

Each clause is a function of the mechanism under test (:class:`MechanismUnderTest`) that returns the
:class:`CheckResult` of each of its cases: :func:`check_interface`, :func:`check_runs_on_valid_input`,
:func:`check_declared_guarantee`, :func:`check_orthonormal_output` (before reproducibility, which
compares outputs), :func:`check_reproducible`, :func:`check_refuses_bad_input` and
:func:`check_audit`; :func:`check_mechanism` runs them in that order (:data:`CONTRACT_CHECKS`), and
stops after the first two when they fail (nothing else can run).

Randomness: every run uses ``numpy.random.default_rng([seed, j])`` for a fixed ``j`` per check.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import inspect
import math
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from experiments.audit.search import search_audit
from mechanisms import NEIGHBOURING_RELATIONS, MechanismOutput, PrivacyGuarantee, get_mechanism

#: tolerance on ``VᵀV = I`` (eigen-solvers give ~1e-14; 1e-8 leaves room for iterative methods)
ORTHONORMAL_ATOL = 1e-8
#: how the audit clause names the audit it runs
AUDIT_KIND = "search audit (experiments.audit.search_audit)"


@dataclass
class CheckResult:
    """The outcome of one case of a clause.

    Attributes
    ----------
    name : str
        The case, as the report shows it (e.g. ``"refuses NaN in X"``).
    status : str
        ``"passed"``, ``"failed"`` or ``"skipped"``.
    detail : str
        What was seen (the exception, the declared guarantee, what is wrong); may be empty.
    """

    name: str
    status: str  # "passed" | "failed" | "skipped"
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.status.upper():7s} {self.name}" + (f": {self.detail}" if self.detail else "")


def _result(name: str, problem: str | None, detail: str = "") -> CheckResult:
    """``failed`` with ``problem`` as the detail when there is one, else ``passed`` with ``detail``."""
    return CheckResult(name, "failed" if problem else "passed", problem or detail)


@dataclass
class ContractReport:
    """The results of :func:`check_mechanism`, in the order the clauses ran.

    Attributes
    ----------
    mechanism : str
        The mechanism's name.
    results : list of CheckResult
        One per case.
    audit : dict or None
        The audit's full result when the audit ran.
    """

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


class MechanismUnderTest:
    """A mechanism with the data and parameters the clauses run it on.

    Parameters
    ----------
    mechanism : str or callable
        A callable, a registry name, or ``"module:function"``.
    epsilon, delta : float
        Passed when the function takes them (``params`` may override them).
    params : dict, optional
        Further keyword arguments.
    n, d, k : int
        The clauses' data: ``n x d`` Gaussian rows with a decaying spectrum and largest row norm 1
        (:func:`unit_rows`, two datasets from ``default_rng([seed, 1000])``), rank ``k``.
    seed : int
        Every run draws from ``default_rng([seed, j])`` for the clause's ``j``.

    Attributes
    ----------
    name : str
    fn : callable
    kwargs : dict
        The keyword arguments of every run (``params``, with ε and δ where ``fn`` takes them).
    takes_epsilon, takes_delta : bool
    X, X_other : ndarray
        Two datasets of the same shape.
    audit : dict or None
        The audit's full result, once :func:`check_audit` ran it.
    """

    def __init__(
        self,
        mechanism: str | Callable[..., MechanismOutput],
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        params: dict | None = None,
        n: int = 60,
        d: int = 5,
        k: int = 2,
        seed: int = 0,
    ) -> None:
        self.name, self.fn = _resolve(mechanism)
        self.epsilon, self.n, self.d, self.k, self.seed = epsilon, n, d, k, seed
        self.kwargs = dict(params or {})
        self.takes_epsilon, self.takes_delta = (
            _accepts(self.fn, "epsilon"),
            _accepts(self.fn, "delta"),
        )
        if self.takes_epsilon:
            self.kwargs.setdefault("epsilon", epsilon)
        if self.takes_delta:
            self.kwargs.setdefault("delta", delta)
        rng = np.random.default_rng([seed, 1000])
        self.X = unit_rows(n, d, rng)
        self.X_other = unit_rows(n, d, rng)
        self.audit: dict[str, Any] | None = None

    def run(self, X, k: Any = None, j: int = 0, **over) -> Any:
        """``fn(X, k, rng=default_rng([seed, j]), **kwargs)`` with ``over`` replacing keyword arguments."""
        k = self.k if k is None else k
        return self.fn(X, k, rng=np.random.default_rng([self.seed, j]), **{**self.kwargs, **over})

    @functools.cached_property
    def first(self) -> Any:
        """The output on ``X`` with ``j = 0``: run once, compared by several clauses."""
        return self.run(self.X)

    @property
    def guarantee(self) -> Any:
        return getattr(self.first, "guarantee", None)


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


# -- the clauses, in the order check_mechanism runs them ----------------------------------------------


def check_interface(m: MechanismUnderTest) -> list[CheckResult]:
    """The signature ``f(X, k, *, rng, clip=False, **params)``: ``rng`` and ``clip`` are accepted."""
    missing = [p for p in ("rng", "clip") if not _accepts(m.fn, p)]
    problem = (
        f"f(X, k, *, rng, clip=False, **params) expected; missing {missing}" if missing else None
    )
    return [_result("interface", problem)]


def check_runs_on_valid_input(m: MechanismUnderTest) -> list[CheckResult]:
    """The mechanism returns on valid data (its output is :attr:`MechanismUnderTest.first`)."""
    try:
        m.first
    except Exception as exc:  # noqa: BLE001 - reported, not hidden
        return [CheckResult("runs on valid input", "failed", f"{type(exc).__name__}: {exc}")]
    return [CheckResult("runs on valid input", "passed")]


def check_declared_guarantee(m: MechanismUnderTest) -> list[CheckResult]:
    """Clause 1: a valid declared guarantee and, when it is valid, the same one on other data."""
    g = m.guarantee
    problem = _check_guarantee(g)
    requested = (
        ""
        if problem or not m.takes_epsilon or g.epsilon == m.epsilon
        else f" (requested epsilon={m.epsilon:g}: the declared one is what the harness records)"
    )
    detail = "" if problem else f"epsilon={g.epsilon:g}, delta={g.delta:g}, {g.neighbouring}"
    results = [_result("declared guarantee", problem, detail + requested)]
    if not problem:
        other = getattr(m.run(m.X_other), "guarantee", None)
        results.append(
            _result(
                "guarantee independent of the data",
                None if other == g else f"{g} on one dataset, {other} on another",
            )
        )
    return results


def check_orthonormal_output(m: MechanismUnderTest) -> list[CheckResult]:
    """Clause 4: an orthonormal ``d x k`` output (or ⊥ with status ``"bottom"``), and for ``k = 1``."""
    return [
        _result(
            "orthonormal d x k output (or ⊥ with status 'bottom')", _check_output(m.first, m.d, m.k)
        ),
        _result("orthonormal output for k = 1", _check_output(m.run(m.X, k=1, j=2), m.d, 1)),
    ]


def check_reproducible(m: MechanismUnderTest) -> list[CheckResult]:
    """Clause 3: the same seed gives the same output; a private mechanism's output depends on the seed."""
    same = _same(m.first.components, m.run(m.X).components)
    results = [
        _result("same seed, same output", None if same else "two runs with the same seed differ")
    ]
    g = m.guarantee
    if isinstance(g, PrivacyGuarantee) and math.isfinite(g.epsilon) and g.epsilon > 0:
        outs = [m.run(m.X, j=j).components for j in (3, 4, 5)]
        seed_free = all(_same(outs[0], o) for o in outs[1:])
        data_dependent = not _same(outs[0], m.run(m.X_other, j=3).components)
        deterministic = seed_free and data_dependent and outs[0] is not None
        results.append(
            _result(
                "output depends on the seed",
                "three seeds give the same output, which changes with the data: a deterministic "
                "function of the data is not differentially private"
                if deterministic
                else None,
            )
        )
    return results


def _refusal(label: str, call: Callable[[], Any]) -> CheckResult:
    """``passed`` when ``call`` raises a ``ValueError``."""
    try:
        call()
    except ValueError as exc:
        return CheckResult(f"refuses {label}", "passed", f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # noqa: BLE001
        return CheckResult(
            f"refuses {label}",
            "failed",
            f"raised {type(exc).__name__} ({exc}), expected a ValueError such as PrivacyInputError",
        )
    return CheckResult(f"refuses {label}", "failed", "accepted (no exception)")


def _clipping_problem(m: MechanismUnderTest, X_big: np.ndarray) -> str | None:
    """What is wrong with ``clip=True`` on ``X_big``: its output must be the one on the rows
    projected onto the unit ball."""
    clipped = m.run(X_big, clip=True, j=6)
    projected = X_big / np.maximum(1.0, np.linalg.norm(X_big, axis=1, keepdims=True))
    ref = m.run(projected, j=6)
    problem = _check_output(clipped, m.d, m.k)
    if problem is None and not (clipped.components is None and ref.components is None):
        if (
            clipped.components is None
            or ref.components is None
            or not np.allclose(clipped.components, ref.components, atol=1e-10)
        ):
            return "output with clip=True differs from the output on the rows projected onto the unit ball"
    return problem


def check_refuses_bad_input(m: MechanismUnderTest) -> list[CheckResult]:
    """Clause 2: a ``ValueError`` for each bad ε, δ, k and dataset; rows of norm exactly 1 accepted;
    ``clip=True`` the projection onto the unit ball."""
    X, d = m.X, m.d
    bad: list[tuple[str, Callable[[], Any]]] = []
    if m.takes_epsilon:
        for e in (0.0, -1.0, float("nan"), float("inf")):
            bad.append((f"epsilon={e}", lambda e=e: m.run(X, epsilon=e)))
    if m.takes_delta:
        for dl in (0.0, 1.0, -0.1, float("nan")):
            bad.append((f"delta={dl}", lambda dl=dl: m.run(X, delta=dl)))
    for kk in (0, d, d + 1, 1.5):
        bad.append((f"k={kk} (d={d})", lambda kk=kk: m.run(X, k=kk)))
    X_nan, X_inf, X_big = X.copy(), X.copy(), X.copy()
    X_nan[3, 1] = np.nan
    X_inf[5, 0] = np.inf
    X_big[7] *= 1.5 / np.linalg.norm(X_big[7])
    bad += [
        ("NaN in X", lambda: m.run(X_nan)),
        ("inf in X", lambda: m.run(X_inf)),
        ("a row of norm 1.5 > 1 (clip=False)", lambda: m.run(X_big, clip=False)),
        ("empty X (0 rows)", lambda: m.run(np.zeros((0, d)))),
        ("1-D X", lambda: m.run(X[0])),
    ]
    results = [_refusal(label, call) for label, call in bad]
    try:
        problem = _check_output(m.run(X / np.linalg.norm(X, axis=1, keepdims=True)), d, m.k)
    except Exception as exc:  # noqa: BLE001
        problem = f"{type(exc).__name__}: {exc}"
    results.append(_result("accepts rows of norm exactly 1", problem))
    try:
        problem = _clipping_problem(m, X_big)
    except Exception as exc:  # noqa: BLE001
        problem = f"{type(exc).__name__}: {exc}"
    results.append(_result("clip=True projects rows onto the unit ball", problem))
    return results


def check_audit(
    m: MechanismUnderTest,
    *,
    trials: int = 2000,
    confidence: float = 0.95,
    time_budget: float = 30.0,
) -> list[CheckResult]:
    """Clause 5: the search audit's lower bound on ε, at a small budget, does not exceed the claim.

    The search gets ``trials`` certifying runs per dataset, ``max(100, trials // 10)`` calibration
    runs per candidate design, 4 random designs and ``time_budget`` seconds of calibration; its full
    result is kept in ``m.audit`` (None when it raised).
    """
    calls = {key: m.kwargs[key] for key in ("epsilon", "delta") if key in m.kwargs}
    extra = {key: value for key, value in m.kwargs.items() if key not in ("epsilon", "delta")}
    try:
        result = search_audit(
            m.fn,
            trials=int(trials),
            seed=int(m.seed),
            confidence=float(confidence),
            calibration_trials=max(100, int(trials) // 10),
            n_random=4,
            time_budget=float(time_budget),
            **calls,
            **extra,
        )
    except Exception as exc:  # noqa: BLE001
        return [CheckResult("audit", "failed", f"{AUDIT_KIND} raised {type(exc).__name__}: {exc}")]
    m.audit = dict(result)
    lower, claimed = float(result["audited_epsilon_lower"]), float(result["claimed_epsilon"])
    violation = bool(result["violation"])
    detail = (
        f"{AUDIT_KIND}, {trials} trials per dataset: audited epsilon >= {lower:.3g} at confidence "
        f"{result['confidence']:g}, claimed {claimed:g}"
    )
    status = "failed" if violation else "passed"
    return [CheckResult("audit", status, ("VIOLATION: " if violation else "") + detail)]


#: the clauses before the audit, in the order :func:`check_mechanism` runs them
CONTRACT_CHECKS = (
    check_interface,
    check_runs_on_valid_input,
    check_declared_guarantee,
    check_orthonormal_output,
    check_reproducible,
    check_refuses_bad_input,
)
#: the clauses whose failure ends the report (the others need a mechanism that runs)
GATES = (check_interface, check_runs_on_valid_input)


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

    Parameters
    ----------
    mechanism : str or callable
        A callable, a registry name, or ``"module:function"``.
    epsilon, delta : float
        Passed when the function takes them.
    params : dict, optional
        Further keyword arguments.
    n, d, k : int
        The functional checks use ``n x d`` Gaussian data with a decaying spectrum and largest row
        norm 1, rank ``k``.
    seed : int
        The seed of every run (:class:`MechanismUnderTest`).
    audit : bool
        ``False`` leaves the audit out (it is then reported as skipped).
    audit_trials, audit_confidence, audit_time_budget
        The audit's budget (:func:`check_audit`).

    Returns
    -------
    ContractReport
    """
    m = MechanismUnderTest(
        mechanism, epsilon=epsilon, delta=delta, params=params, n=n, d=d, k=k, seed=seed
    )
    report = ContractReport(m.name)
    for check in CONTRACT_CHECKS:
        results = check(m)
        report.results += results
        if check in GATES and any(r.status == "failed" for r in results):
            return report
    if not audit:
        report.results.append(CheckResult("audit", "skipped", "audit=False"))
    else:
        report.results += check_audit(
            m, trials=audit_trials, confidence=audit_confidence, time_budget=audit_time_budget
        )
        report.audit = m.audit
    return report


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
