import os
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(REPO))
# the shared helpers (hydra_helpers, faulty, ess_reference) for the tests in every folder below
sys.path.insert(0, str(TESTS))


@pytest.fixture(scope="session", autouse=True)
def private_data_cache(tmp_path_factory):
    """Keep the tests out of the project's data/cache: every load_dataset in the session (and in the
    subprocesses it starts) caches under a temporary directory, or under $PRIVPCA_TEST_CACHE_DIR
    when set (a persistent cache for the real data sets, outside the project)."""
    old = os.environ.get("PRIVPCA_CACHE_DIR")
    chosen = os.environ.get("PRIVPCA_TEST_CACHE_DIR") or str(tmp_path_factory.mktemp("data_cache"))
    os.environ["PRIVPCA_CACHE_DIR"] = chosen
    yield Path(chosen)
    if old is None:
        os.environ.pop("PRIVPCA_CACHE_DIR", None)
    else:
        os.environ["PRIVPCA_CACHE_DIR"] = old


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def unit_ball_data(n: int, d: int, rng: np.random.Generator, spectrum=None) -> np.ndarray:
    """n x d Gaussian rows with the given covariance spectrum, scaled so the largest row norm is 1."""
    scales = np.ones(d) if spectrum is None else np.sqrt(np.asarray(spectrum, dtype=float))
    X = rng.standard_normal((n, d)) * scales
    return X / np.linalg.norm(X, axis=1).max()


@pytest.fixture
def small_data(rng):
    return unit_ball_data(400, 8, rng, spectrum=[5, 3, 1, 0.5, 0.2, 0.1, 0.05, 0.01])


def require_real_data() -> Path:
    """PRIVPCA_DATA_DIR, or skip -- except in CI (CI=true), where missing data is a failure."""
    value = os.environ.get("PRIVPCA_DATA_DIR")
    if value and Path(value).is_dir():
        return Path(value)
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(
            "CI=true but PRIVPCA_DATA_DIR is unset or not a directory: real-data tests must run in CI"
        )
    pytest.skip("PRIVPCA_DATA_DIR not set")
