"""Compare a re-run with its stored record, and name why they differ (``python run.py +rerun=<id>``).

A record made by the harness on this machine re-runs bit for bit: the experiment and its re-run both
compute with :data:`experiments.threads.PINNED_BLAS_THREADS` BLAS threads.  When the values differ,
:func:`known_causes` lists what the record says was different when it was made (BLAS thread count,
BLAS library, machine, package versions, code), or that the record does not state its thread count.
"""

from __future__ import annotations

import json
import math

from experiments.errors import NotReproduced
from experiments.store.store import to_json

__all__ = ["NotReproduced", "differences", "known_causes", "not_reproduced_line"]

#: fields a re-run recomputes but that are not a function of the seed (timings)
_TIMING = ("seconds",)
#: (section, field, what): fields that name how a record was computed; a rerun that computes another way
#: cannot reproduce the record's values, and the line names the change
_SCHEMES = (
    ("release", "chain_streams", "the MCMC chains' random streams"),
    (None, "svm_duplicates", "the SVM fit's handling of repeated rows"),
    ("diagnostics_not_private", "ess_estimator", "the bulk-ESS estimators"),
)
#: record parts whose differences are named without amounts (exact statistics of the raw data)
_NO_AMOUNTS = ("diagnostics_not_private",)


def _field(record: dict, section: str | None, key: str):
    part = record if section is None else (record.get(section) or {})
    return part.get(key)


def _plain(value):
    """The value as it would be stored (JSON round trip), with timings left out."""
    return _drop_timings(json.loads(to_json({"v": value}))["v"])


def _drop_timings(value):
    if isinstance(value, dict):
        return {k: _drop_timings(v) for k, v in value.items() if not any(t in k for t in _TIMING)}
    if isinstance(value, list):
        return [_drop_timings(v) for v in value]
    return value


def _diff(path: str, old, new, out: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            _diff(f"{path}.{key}" if path else key, old.get(key), new.get(key), out)
    elif (
        isinstance(old, (int, float))
        and isinstance(new, (int, float))
        and not isinstance(old, bool)
        and not isinstance(new, bool)
    ):
        if old != new:
            gap = abs(float(old) - float(new))
            quiet = path.split(".")[0] in _NO_AMOUNTS or not math.isfinite(gap)
            out.append(path if quiet else f"{path} (by {gap:.3g})")
    elif old != new:
        out.append(path)


def differences(record: dict, fields: dict) -> list[str]:
    """The fields of a re-run (``fields``, as :func:`experiments.runs.evaluate.evaluate_mechanism` returns
    them) whose values differ from the record's, each as ``"name"`` or ``"name (by <|difference|>)"``
    for numbers (no amount for the non-private diagnostics); timings are not compared."""
    out: list[str] = []
    for key in sorted(fields):
        if any(t in key for t in _TIMING):
            continue
        _diff(key, _plain(record.get(key)), _plain(fields[key]), out)
    return out


def _threads(count) -> str:
    return f"{count} BLAS thread" + ("" if count == 1 else "s")


def known_causes(
    record: dict, now: dict, versions: dict, commit: str, fields: dict | None = None
) -> list[str]:
    """What the record says differed when it was made, against this re-run.

    Parameters
    ----------
    record : dict
        The stored record.
    now : dict
        :func:`experiments.threads.blas_provenance` during the re-run.
    versions, commit : dict, str
        This re-run's package versions and git commit.
    fields : dict, optional
        The re-run's record fields; used to name a change of how the record is computed
        (:data:`_SCHEMES`: the MCMC chains' random streams, the SVM fit's handling of repeated
        rows, the estimator of the PPCA diagnostics' bulk-ESS), which the record's values cannot
        survive.
    """
    prov = record.get("provenance") or {}
    causes = []
    for section, key, what in _SCHEMES:
        new_value = _field(fields or {}, section, key)
        old_value = _field(record, section, key)
        if new_value is not None and old_value != new_value:
            causes.append(
                f"{what} differ (record: {old_value or 'not stated, an earlier scheme'}; "
                f"this rerun: {new_value})"
            )
    if prov.get("blas_threads") is None:
        causes.append(
            f"the record does not state its BLAS thread count (this rerun used "
            f"{_threads(now['blas_threads'])})"
        )
    elif prov["blas_threads"] != now["blas_threads"]:
        causes.append(
            f"the record was made with {_threads(prov['blas_threads'])}, this rerun with "
            f"{_threads(now['blas_threads'])}"
        )
    for key, what in (("blas", "BLAS library"), ("machine", "machine")):
        if key in prov and prov[key] != now.get(key):
            causes.append(f"{what} differs (record: {prov[key]}; now: {now.get(key)})")
    old_versions = record.get("versions") or {}
    changed = [
        f"{name} {old_versions.get(name)} -> {versions.get(name)}"
        for name in sorted(set(old_versions) | set(versions))
        if old_versions.get(name) != versions.get(name)
    ]
    if changed:
        causes.append("package versions differ (" + ", ".join(changed) + ")")
    old_commit = record.get("git_commit")
    if old_commit != commit:
        causes.append(
            f"the code may differ (record made at commit {old_commit}, rerun at {commit})"
        )
    elif (commit or "").endswith("+dirty"):
        causes.append(f"the code may differ (uncommitted changes at commit {commit})")
    return causes


def not_reproduced_line(record_id: str, diffs: list[str], causes: list[str]) -> str:
    """One line: which fields differ and by how much, and the known causes (or that none is known)."""
    what = ", ".join(diffs)
    why = (
        "; ".join(causes)
        if causes
        else (
            "no known cause (same BLAS threads, BLAS library, machine, package versions and commit)"
        )
    )
    return f"record {record_id}: the rerun differs in {what}; cause: {why}"
