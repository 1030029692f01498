"""Bad input at every entry point, and property-based invariants over random shapes and scales."""

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mechanisms import PrivacyInputError, get_mechanism
from mechanisms.estimator import PrivatePCA

REPO = Path(__file__).resolve().parents[2]

#: mechanisms with the plain (X, k) -> d x k interface, and parameters that keep them fast
GENERIC = {
    "pca": {},
    "random": {},
    "mod_sulq": {"epsilon": 0.5, "delta": 0.01},
    "analyze_gauss": {"epsilon": 0.5, "delta": 0.01},
    "ppca": {"epsilon": 0.5, "mechanism_params": {"iterations": 60, "warn": False, "n_chains": 2}},
    "ppca_iterative": {"epsilon": 0.5},
    "noisy_power": {"epsilon": 0.5, "delta": 0.01},
    "private_sketch": {"epsilon": 0.5, "delta": 0.01},
}


def estimator(name, k, seed):
    params = dict(GENERIC[name])
    return PrivatePCA(mechanism=name, n_components=k, random_state=seed, **params)


@st.composite
def datasets(draw):
    n = draw(st.integers(1, 40))
    d = draw(st.integers(2, 7))
    k = draw(st.integers(1, d - 1))
    scale = draw(st.sampled_from([1e-8, 1e-3, 0.5, 1.0]))
    seed = draw(st.integers(0, 2**16))
    X = np.random.default_rng(seed).standard_normal((n, d))
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    X = X / np.maximum(norms, 1e-300) * scale * draw(st.floats(0.0, 1.0))
    if draw(st.booleans()) and n > 1:
        X[-1] = X[0]  # duplicate rows are valid input
    return X, k, seed


@pytest.mark.parametrize("name", sorted(GENERIC))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=datasets())
def test_invariants_on_valid_input(name, data):
    """Orthonormal d x k output, determinism per seed, no exception, on any valid input."""
    X, k, seed = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        a = estimator(name, k, seed).fit(X)
        b = estimator(name, k, seed).fit(X)
    V = a.components_
    assert V.shape == (k, X.shape[1])
    assert np.allclose(V @ V.T, np.eye(k), atol=1e-10)
    assert np.linalg.matrix_rank(V) == k
    assert np.array_equal(V, b.components_)


BAD = [
    (np.array([[np.nan, 0.1], [0.1, 0.1]]), 1, "NaN"),
    (np.array([[np.inf, 0.1], [0.1, 0.1]]), 1, "NaN or infinite"),
    (np.array([[3.0, 0.0], [0.1, 0.1]]), 1, "norm above"),
    (np.zeros((0, 3)), 1, "empty"),
    (np.zeros((3, 0)), 1, "empty"),
    (np.array([0.1, 0.2]), 1, "2-D"),
    (np.array([["a", "b"]], dtype=object), 1, "numeric"),
    (np.array([[1 + 1j, 0.0]]), 1, "numeric"),
    (np.full((4, 3), 0.1), 0, "k must"),
    (np.full((4, 3), 0.1), 3, "k must"),
    (np.full((4, 3), 0.1), 1.5, "k must be an integer"),
]


@pytest.mark.parametrize("name", sorted(GENERIC))
@pytest.mark.parametrize("X,k,message", BAD)
def test_bad_data_refused_by_every_mechanism(name, X, k, message):
    """The mechanism functions themselves refuse bad input (PrivatePCA validates first with
    scikit-learn's own messages: tests/mechanisms/test_estimator.py)."""
    params = dict(GENERIC[name])
    params.update(params.pop("mechanism_params", {}))
    with pytest.raises(PrivacyInputError, match=message):
        get_mechanism(name)(X, k, rng=np.random.default_rng(0), **params)


@pytest.mark.parametrize("name", sorted(GENERIC))
@pytest.mark.parametrize("clip", ["false", "maybe", 1, None])
def test_clip_must_be_a_bool(name, clip):
    """``clip="false"`` is truthy: it would clip silently instead of refusing rows above the bound."""
    params = dict(GENERIC[name])
    params.update(params.pop("mechanism_params", {}))
    X = np.array([[3.0, 0.0], [0.1, 0.1], [0.2, 0.0]])
    with pytest.raises(PrivacyInputError, match="clip must be true or false"):
        get_mechanism(name)(X, 1, rng=np.random.default_rng(0), clip=clip, **params)


@pytest.mark.parametrize("name", sorted(set(GENERIC) - {"pca", "random"}))
@pytest.mark.parametrize("eps", [0.0, -0.1, float("nan"), float("inf"), "abc"])
def test_bad_epsilon_refused(name, eps):
    est = estimator(name, 1, 0).set_params(epsilon=eps)
    with pytest.raises(PrivacyInputError, match="epsilon"):
        est.fit(np.full((4, 3), 0.1))


@pytest.mark.parametrize("name", [n for n, p in GENERIC.items() if "delta" in p])
@pytest.mark.parametrize("delta", [0.0, 1.0, -0.5, 2.0, float("nan")])
def test_bad_delta_refused(name, delta):
    est = estimator(name, 1, 0).set_params(delta=delta)
    with pytest.raises(PrivacyInputError, match="delta"):
        est.fit(np.full((4, 3), 0.1))


def test_sparse_input_refused_by_estimator():
    sp = pytest.importorskip("scipy.sparse")
    with pytest.raises(TypeError, match="Sparse data was passed"):  # scikit-learn's check_array
        estimator("mod_sulq", 1, 0).fit(sp.csr_matrix(np.eye(3) * 0.5))
    with pytest.raises(PrivacyInputError, match="sparse"):
        get_mechanism("mod_sulq")(
            sp.csr_matrix(np.eye(3) * 0.5), 1, epsilon=0.5, delta=0.01, rng=np.random.default_rng(0)
        )


def test_one_row_and_integer_input_accepted():
    V = estimator("mod_sulq", 1, 0).fit(np.array([[0, 1, 0]], dtype=np.int64)).components_
    assert V.shape == (1, 3)


def _run(args, tmp_path):
    return subprocess.run(
        [sys.executable, str(REPO / "run.py"), f"results_dir={tmp_path}", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_unknown_config_key_is_refused(tmp_path):
    proc = _run(["epsilonn=0.1"], tmp_path)
    assert proc.returncode != 0 and "epsilonn" in proc.stderr
    assert not (tmp_path / "records").exists()


@pytest.mark.slow
def test_corrupt_data_file_fails_clearly_and_writes_nothing(tmp_path):
    data = tmp_path / "data" / "insurance"
    data.mkdir(parents=True)
    good = REPO / "tests" / "fixtures" / "uci" / "insurance"
    for f in good.iterdir():
        (data / f.name).write_bytes(f.read_bytes())
    gz = next(p for p in data.iterdir() if p.name.startswith("ticdata2000"))
    raw = gz.read_bytes()
    if gz.suffix == ".gz":
        gz.write_bytes(raw[: len(raw) // 2])  # truncated gzip
    else:
        gz.write_text("1\t2\t3\n")  # wrong column count
    proc = _run(["mechanism=pca", "dataset=insurance", f"data_dir={tmp_path / 'data'}"], tmp_path)
    assert proc.returncode != 0
    assert "ticdata2000" in proc.stderr
    assert not (tmp_path / "records").exists()
