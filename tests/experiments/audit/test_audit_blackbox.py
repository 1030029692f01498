"""The black-box testers: invariant features, the learned statistics, and the search with them alone."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.audit.blackbox import LearnedStatistics, release_features
from experiments.audit.search import search_audit
from experiments.audit.variants import amin_cov_variant, miscalibrated
from mechanisms import MECHANISMS


def test_features_invariant_to_sign_and_rotation():
    rng = np.random.default_rng(0)
    V, _ = np.linalg.qr(rng.normal(size=(5, 2)))
    c, s = np.cos(0.7), np.sin(0.7)
    R = np.array([[c, -s], [s, c]])
    C = rng.normal(size=(5, 5))
    f = release_features(V, C, 5, 2, True)
    for W in (-V, V @ R, V * np.array([1.0, -1.0])):
        assert np.allclose(release_features(W, C, 5, 2, True), f, atol=1e-12)
    # 1 (⊥) + 15 (projector) + 2 (cos²) + 15 (covariance); ⊥ gives the indicator and zeros
    assert f.size == 33
    b = release_features(None, None, 5, 2, True)
    assert b[0] == 1.0 and not b[1:].any()


def _runs(rng, n, shift):
    out = []
    for _ in range(n):
        v = np.array([1.0, shift]) + rng.normal(0, 0.3, 2)
        out.append((v[:, None] / np.linalg.norm(v), {}))
    return out


def test_learned_statistics_separate_what_differs():
    # released directions near (1, 0.6) under D and (1, −0.6) under D′: the classifier and the witness
    # score D's held-out releases above D′'s in most pairs (AUC > 0.9; the directions' angles are
    # about 62° apart with a spread of about 15° each)
    rng = np.random.default_rng(1)
    ls = LearnedStatistics(2, 1, ("logistic", "mlp", "mmd"), seed=0)
    ls.fit(_runs(rng, 200, 0.6), _runs(rng, 200, -0.6))
    G1, G0 = ls(_runs(rng, 300, 0.6)), ls(_runs(rng, 300, -0.6))
    assert ls.names == ["classifier[logistic]", "classifier[mlp]", "mmd_witness"]
    for j in range(3):
        auc = np.mean(G1[:, j][:, None] > G0[:, j][None, :])
        assert auc > 0.9, (ls.names[j], auc)
    with pytest.raises(ValueError, match="unknown learned"):
        LearnedStatistics(2, 1, ("forest",))


@pytest.mark.slow
@pytest.mark.parametrize(
    "variant",
    [
        lambda: miscalibrated("gauss_cov", 0.1),
        lambda: amin_cov_variant("no_eigenvalue_noise"),
    ],
    ids=["gauss_cov noise x0.1", "amin_cov eigenvalues without noise"],
)
def test_blackbox_testers_alone_catch_known_broken_variants(variant):
    # the learned statistics alone (no hand-made statistic), the generic catalogue and random
    # designs, a small budget: the certified bound (95%, 400 fresh runs per side) exceeds the claim
    r = search_audit(
        variant(),
        epsilon=2.0,
        delta=1e-5,
        calibration_trials=100,
        trials=400,
        n_random=2,
        time_budget=5,
        handmade=False,
    )
    assert r["statistic_learned"] and r["statistic"] in ("classifier[logistic]", "mmd_witness")
    assert r["violation"], r


@pytest.mark.slow
def test_search_with_blackbox_testers_runs_on_every_registered_mechanism():
    # the same call for every registry name (ε = 0.9 so that Analyze Gauss's theorem applies), a
    # budget of seconds: it runs, records the learned statistics and the μ-GDP fit, and no
    # correctly calibrated mechanism is audited above its claim (pca claims ∞)
    for name in MECHANISMS:
        r = search_audit(
            name,
            epsilon=0.9,
            delta=1e-5,
            calibration_trials=30,
            trials=60,
            n_random=1,
            time_budget=1.0,
        )
        assert r["learned_statistics"] == ["logistic", "mmd"], name
        assert r["designs_tried"] >= 1 and "gdp_mu_fit" in r, name
        assert not r["violation"], (name, r["statistic"], r["audited_epsilon_lower"])
