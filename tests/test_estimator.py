import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC

from mechanisms.estimator import PrivatePCA


def test_estimator_api(small_data):
    est = PrivatePCA("mod_sulq", n_components=3, epsilon=1.0, delta=0.01, random_state=0).fit(small_data)
    assert est.components_.shape == (3, 8)
    assert np.allclose(est.components_ @ est.components_.T, np.eye(3), atol=1e-10)
    Z = est.transform(small_data)
    assert Z.shape == (small_data.shape[0], 3)
    assert est.guarantee_.epsilon == 1.0 and est.guarantee_.neighbouring == "replace-one-row"
    again = PrivatePCA("mod_sulq", n_components=3, epsilon=1.0, delta=0.01, random_state=0).fit(small_data)
    assert np.array_equal(est.components_, again.components_)


def test_estimator_in_pipeline(small_data):
    y = (small_data[:, 0] > 0).astype(int)
    pipe = make_pipeline(PrivatePCA("pca", n_components=2), LinearSVC())
    pipe.fit(small_data, y)
    assert pipe.score(small_data, y) > 0.9


def test_estimator_needs_delta_for_mod_sulq(small_data):
    with pytest.raises(ValueError, match="delta"):
        PrivatePCA("mod_sulq", n_components=2, epsilon=1.0).fit(small_data)


def test_estimator_unknown_mechanism(small_data):
    with pytest.raises(ValueError, match="unknown mechanism"):
        PrivatePCA("nope").fit(small_data)


def test_estimator_get_params_clone(small_data):
    from sklearn.base import clone
    est = PrivatePCA("random", n_components=2, random_state=3)
    assert clone(est).get_params()["random_state"] == 3
