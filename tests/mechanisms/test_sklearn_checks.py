"""scikit-learn's own conformance suite on PrivatePCA, for every mechanism that releases a subspace.

The checks' data are generic (Gaussian entries of scale up to ~10, so rows of norm > 1), which a
private estimator refuses by default (its proof needs rows of norm <= row_norm_bound).  The suite
therefore runs with ``clip=True``: rows above the bound are scaled onto the ball, which keeps every
guarantee (row-wise 1-Lipschitz) and is recorded (the parameter is public; the count is in
``diagnostics_["n_clipped"]``, a not-private diagnostic).  The refusal itself is tested below.

Every check of ``parametrize_with_checks`` runs and passes; none is declared as an expected failure
(``expected_failed_checks`` is not used) and the tags only state what is true of the estimator.
``check_array_api_input`` is skipped *by scikit-learn itself* unless ``SCIPY_ARRAY_API=1`` was set
before SciPy was imported; ``test_whole_suite_without_skips`` runs the whole suite in a fresh
interpreter with that variable set and asserts that all 47 checks pass and none is skipped.

``subspace_exact`` and ``subspace_approx`` (Singhal & Steinke 2021) are not in the suite: on the
checks' generic data their correct private answer is ⊥ (no subspace; they are meant for data lying
in, or very near, a k-dimensional subspace), and a transformer cannot transform with ⊥.  What the
estimator does then is tested in ``test_bottom_answer_is_a_clear_error``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from mechanisms import PrivacyInputError, get_mechanism
from mechanisms.estimator import PrivatePCA

REPO = Path(__file__).resolve().parents[2]

#: one configuration per mechanism that releases a subspace; small parameters keep the suite fast.
#: streaming_power reads blocks of block_size rows: block_size=1 so that one-row data are valid.
SUITE = {
    "pca": {},
    "random": {},
    "mod_sulq": {"epsilon": 0.5, "delta": 0.01},
    "analyze_gauss": {"epsilon": 0.5, "delta": 0.01},
    "ppca": {"epsilon": 0.5, "mechanism_params": {"iterations": 50, "n_chains": 1, "warn": False}},
    "ppca_iterative": {"epsilon": 0.5},
    "noisy_power": {"epsilon": 0.5, "delta": 0.01},
    "private_sketch": {"epsilon": 0.5, "delta": 0.01},
    "streaming_power": {"epsilon": 0.5, "delta": 0.01, "mechanism_params": {"block_size": 1}},
    "online_pca": {"epsilon": 0.5, "delta": 0.01},
}


def suite_estimator(name: str) -> PrivatePCA:
    return PrivatePCA(mechanism=name, n_components=1, clip=True, random_state=0, **SUITE[name])


@parametrize_with_checks([suite_estimator(name) for name in SUITE])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


_WHOLE_SUITE = """
import json, sys, warnings
from sklearn.utils.estimator_checks import check_estimator
sys.path.insert(0, {tests!r})
from test_sklearn_checks import suite_estimator
out = {{}}
for name in {names!r}:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(suite_estimator(name), on_fail=None, on_skip=None)
    out[name] = [(r["check_name"], r["status"]) for r in results]
print(json.dumps(out))
"""


@pytest.mark.slow
def test_whole_suite_without_skips():
    """With SCIPY_ARRAY_API=1 nothing is skipped: all 47 checks run and pass (for the four main mechanisms)."""
    names = ["pca", "mod_sulq", "ppca", "analyze_gauss"]
    env = dict(os.environ, SCIPY_ARRAY_API="1", PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _WHOLE_SUITE.format(tests=str(REPO / "tests" / "mechanisms"), names=names),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for name in names:
        statuses = dict(results[name])
        assert len(results[name]) >= 47, (name, len(results[name]))
        assert "check_array_api_input" in statuses
        not_passed = [(c, s) for c, s in results[name] if s != "passed"]
        assert not not_passed, (name, not_passed)


def test_refuses_rows_above_bound_without_clip():
    """clip=False (the default): the checks' kind of data is refused with the privacy message."""
    X = np.random.default_rng(0).standard_normal((20, 3)) * 3
    with pytest.raises(PrivacyInputError, match=r"some row has L2 norm above the bound 1"):
        PrivatePCA(mechanism="mod_sulq", n_components=1, delta=0.01, random_state=0).fit(X)


@pytest.mark.parametrize("name", ["subspace_exact", "subspace_approx"])
def test_bottom_answer_is_a_clear_error(name):
    """⊥ on generic data: a RuntimeError naming the released status and reason only (no diagnostics)."""
    X = np.random.default_rng(0).standard_normal((40, 4)) / 3
    est = PrivatePCA(
        mechanism=name, n_components=1, epsilon=0.5, delta=0.01, clip=True, random_state=0
    )
    with pytest.raises(RuntimeError) as err:
        est.fit(X)
    out = get_mechanism(name)(
        X, 1, rng=np.random.default_rng(0), epsilon=0.5, delta=0.01, clip=True
    )
    assert str(err.value) == (
        f"mechanism {name!r} returned no subspace (status 'bottom': "
        f"{out.release['reason']}); the answer ⊥ cannot be used to transform data"
    )
    for key in out.diagnostics:  # no diagnostic printed as a field
        assert f"'{key}'" not in str(err.value) and f"{key}=" not in str(err.value)
