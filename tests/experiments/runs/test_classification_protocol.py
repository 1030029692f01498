"""Table 2's protocol options (SVM loss, feature scaling, reading of the random projection) and footnote 1."""

from pathlib import Path

import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

from experiments.runs.classification import run_classification
from experiments.runs.classifiers import linear_svm_search, majority_label_accuracy
from experiments.store.store import ResultStore
from mechanisms.linalg import random_orthonormal
from mechanisms.random_projection import random_projection_matrix, random_subspace
from tests.experiments.runs.test_jmlr_runners import _kddcup_like_dir
from tests.hydra_helpers import compose_cfg

REPO = Path(__file__).resolve().parents[3]


# --- the random mechanism's two readings -------------------------------------------------------------


def test_gaussian_reading_is_the_former_haar_draw():
    """entries='gaussian' must reproduce the earlier Haar draw bit for bit (old records stay valid)."""
    X = np.full((4, 7), 0.1)
    a = random_subspace(X, 3, rng=np.random.default_rng(5)).components
    b = random_orthonormal(7, 3, np.random.default_rng(5))
    assert np.array_equal(a, b)


@pytest.mark.parametrize("entries", ["gaussian", "uniform"])
def test_random_readings_are_orthonormal_and_data_independent(entries):
    X1, X2 = np.zeros((3, 9)), np.full((30, 9), 0.3)
    o1 = random_subspace(X1, 4, rng=np.random.default_rng(1), entries=entries, return_matrix=True)
    o2 = random_subspace(X2, 4, rng=np.random.default_rng(1), entries=entries)
    assert np.array_equal(o1.components, o2.components)  # the data are never looked at
    assert np.allclose(o1.components.T @ o1.components, np.eye(4), atol=1e-12)
    assert o1.guarantee.epsilon == 0.0 and o1.guarantee.delta == 0.0
    assert (
        "projection_matrix" not in random_subspace(X1, 4, rng=np.random.default_rng(1)).release
    )  # records stay small
    R = o1.release["projection_matrix"]
    # components span exactly the raw matrix's columns: projecting R onto them changes nothing
    assert np.allclose(o1.components @ (o1.components.T @ R), R, atol=1e-12)


def test_uniform_entries_are_uniform_and_not_haar():
    """Uniform(0,1) entries: mean 1/2, variance 1/12 (40,000 entries: s.e. 0.0014 and 0.0004; tol 0.01).
    The span is pulled toward the all-ones direction: for d = 50, k = 1, |<v, 1/sqrt(d)>|² averages
    about 3/4 (mean²/(mean² + var) = 0.25/0.333), against k/d = 0.02 under the Haar law."""
    rng = np.random.default_rng(0)
    R = random_projection_matrix(200, 200, rng, "uniform")
    assert R.min() >= 0 and R.max() <= 1
    assert R.mean() == pytest.approx(0.5, abs=0.01) and R.var() == pytest.approx(1 / 12, abs=0.01)
    ones = np.ones(50) / np.sqrt(50)
    X = np.zeros((2, 50))
    align = {
        e: np.mean(
            [
                (random_subspace(X, 1, rng=rng, entries=e).components[:, 0] @ ones) ** 2
                for _ in range(500)
            ]
        )
        for e in ("uniform", "gaussian")
    }
    assert align["uniform"] == pytest.approx(0.75, abs=0.05)
    assert align["gaussian"] < 0.06


def test_bad_reading_is_refused():
    with pytest.raises(ValueError, match="entries"):
        random_subspace(np.zeros((2, 3)), 1, rng=np.random.default_rng(0), entries="beta")


# --- the classifier ----------------------------------------------------------------------------------


def test_linear_svm_search_options():
    s = linear_svm_search("hinge", "standard", [0.1, 1.0])
    svm = s.estimator.named_steps["svm"]
    assert svm.loss == "hinge" and svm.dual is True
    assert isinstance(s.estimator.named_steps["scale"], StandardScaler) and s.cv == 3
    s = linear_svm_search("squared_hinge", "minmax", [1.0], cv=4)
    assert s.estimator.named_steps["svm"].loss == "squared_hinge"
    assert s.estimator.named_steps["scale"].feature_range == (-1.0, 1.0) and s.cv == 4
    assert linear_svm_search("hinge", "none", [1.0]).estimator.named_steps["scale"] == "passthrough"
    with pytest.raises(ValueError, match="loss"):
        linear_svm_search("log", "none", [1.0])
    with pytest.raises(ValueError, match="scaling"):
        linear_svm_search("hinge", "robust", [1.0])


def test_scaling_matters_when_it_should():
    """A feature 1000x smaller than the other: unscaled, an SVM with small C cannot use it (it would need
    a weight 1000x larger), scaled it can.  The label depends on the small feature only."""
    rng = np.random.default_rng(0)
    Z = np.column_stack([rng.standard_normal(600), 1e-3 * rng.standard_normal(600)])
    y = (Z[:, 1] > 0).astype(int)
    unscaled = (
        linear_svm_search("hinge", "none", [0.01]).fit(Z[:300], y[:300]).score(Z[300:], y[300:])
    )
    scaled = (
        linear_svm_search("hinge", "standard", [0.01]).fit(Z[:300], y[:300]).score(Z[300:], y[300:])
    )
    assert scaled > 0.95 and unscaled < 0.7


def test_majority_label_accuracy_by_hand():
    assert majority_label_accuracy(np.array([0, 0, 1]), np.array([0, 1, 1, 0, 0])) == pytest.approx(
        3 / 5
    )
    assert majority_label_accuracy(np.array([1, 1, 0]), np.array([0, 1, 1, 0, 0])) == pytest.approx(
        2 / 5
    )


# --- the runner --------------------------------------------------------------------------------------


def _base(tmp_path, data, mech="random"):
    return [
        "experiment=classification",
        f"mechanism={mech}",
        "scale=smoke",
        f"data_dir={data}",
        f"results_dir={tmp_path / 'res'}",
        "quiet=true",
        "scale.classification.max_rows=null",
        "experiment.svm_C_grid=[0.1,10.0]",
        "experiment.svm_log2_C=[-1,3,4]",
        "experiment.svm_log2_gamma=[-3,1,4]",
    ]


LINEAR = [
    "experiment.classifier=linear",
    "experiment.svm_loss=hinge",
    "experiment.feature_scaling=standard",
]
LINEAR_FIELDS = (
    "classifier",
    "svm_C_grid",
    "svm_loss",
    "feature_scaling",
    "random_entries",
    "random_projection",
    "svm_max_iter",
    "svm_cv_folds",
    "drop_feature_prefixes",
    "d_classified",
)


@pytest.mark.slow
def test_every_protocol_field_is_in_the_run_key(tmp_path):
    data = _kddcup_like_dir(tmp_path)
    base = _base(tmp_path, data) + LINEAR
    assert run_classification(compose_cfg(base))["records_written"] == 1
    assert run_classification(compose_cfg(base))["records_written"] == 0  # resumed
    for extra in (
        ["experiment.svm_loss=squared_hinge"],
        ["experiment.feature_scaling=none"],
        ["experiment.random_entries=uniform"],
        ["experiment.random_projection=raw"],
        ["experiment.svm_max_iter=50"],
        ["experiment.svm_cv_folds=2"],
    ):
        assert run_classification(compose_cfg(base + extra))["records_written"] == 1, extra
    store = ResultStore(tmp_path / "res")
    df = store.load()
    assert len(df) == 7 and df.record_id.nunique() == 7
    first = df[
        (df.svm_loss == "hinge")
        & (df.feature_scaling == "standard")
        & (df.random_entries == "gaussian")
        & (df.random_projection == "orthonormal")
        & (df.svm_max_iter == 1000)
        & (df.svm_cv_folds == 3)
    ]
    assert len(first) == 1 and first.classifier.item() == "linear"
    assert set(df.svm_loss) == {"hinge", "squared_hinge"} and set(df.random_entries) == {
        "uniform",
        "gaussian",
    }
    # an old record (written before these fields existed) has another key, so it is not reused
    key = store.get(first.record_id.item())["run_key"]
    for name in LINEAR_FIELDS:
        assert name in key
    old_key = {k: v for k, v in key.items() if k not in LINEAR_FIELDS}
    assert store.has(key) and not store.has(old_key)


@pytest.mark.slow
def test_rbf_fields_are_in_the_key_and_linear_fields_do_not_split_it(tmp_path):
    """libSVM's RBF tuning workflow: its grid, CV subset, folds and scaling split records; the linear
    SVM's C grid, loss and iteration limit do not act and do not split them."""
    data = _kddcup_like_dir(tmp_path)
    base = _base(tmp_path, data) + ["experiment.classifier=rbf"]
    assert run_classification(compose_cfg(base))["records_written"] == 1
    for extra in (
        ["experiment.svm_C_grid=[1.0]"],
        ["experiment.svm_loss=hinge"],
        ["experiment.svm_max_iter=5"],
    ):
        assert run_classification(compose_cfg(base + extra))["records_written"] == 0, extra
    for extra in (
        ["experiment.svm_log2_C=[-1,3,2]"],
        ["experiment.svm_log2_gamma=[-3,-3,1]"],
        ["experiment.svm_cv_rows=20"],
        ["experiment.svm_cv_folds=2"],
        ["experiment.feature_scaling=standard"],
        ["experiment.classifier=rbf_default"],
    ):
        assert run_classification(compose_cfg(base + extra))["records_written"] == 1, extra
    df = ResultStore(tmp_path / "res").load()
    rbf = df[df.classifier == "rbf"]
    assert len(rbf) == 6 and set(rbf.svm_loss) == {"hinge"} and set(rbf.svm_max_iter) == {-1}
    assert rbf.svm_C_grid.isna().all() and rbf.svm_converged.all()
    default = df[df.classifier == "rbf_default"]
    assert default.svm_C.item() == 1.0 and default.svm_gamma.item() == pytest.approx(
        1 / 4
    )  # k = 4 features
    assert default.svm_fits.item() == 1 and default.feature_scaling.item() == "minmax"
    # C and gamma are chosen from the configured log2 grids (C in {2^-1, 2^3}, gamma in {2^-3, 2^1})
    first = rbf[
        (rbf.svm_cv_rows == 2000)
        & (rbf.svm_cv_folds == 3)
        & (rbf.feature_scaling == "minmax")
        & (rbf.svm_log2_C.map(tuple) == (-1, 3, 4))
        & (rbf.svm_log2_gamma.map(tuple) == (-3, 1, 4))
    ].squeeze()
    assert (
        first.svm_C in (0.5, 8.0)
        and first.svm_gamma in (0.125, 2.0)
        and first.svm_fits == 2 * 2 * 3 + 1
    )


def test_random_options_do_not_split_other_mechanisms(tmp_path):
    data = _kddcup_like_dir(tmp_path)
    base = _base(tmp_path, data, mech="pca")
    assert run_classification(compose_cfg(base))["records_written"] == 1
    assert (
        run_classification(compose_cfg(base + ["experiment.random_entries=uniform"]))[
            "records_written"
        ]
        == 0
    )
    rec = ResultStore(tmp_path / "res").load()
    assert rec.random_entries.isna().all() and rec.q_F.item() == pytest.approx(rec.q_F_opt.item())


def test_bad_protocol_values_are_refused(tmp_path):
    data = _kddcup_like_dir(tmp_path)
    for extra, msg in (
        (["experiment.svm_loss=log"], "svm_loss"),
        (["experiment.feature_scaling=l2"], "feature_scaling"),
        (["experiment.classifier=knn"], "classifier"),
        (["experiment.classifier=rbf", "experiment.svm_log2_C=[3,1,1]"], "log2 grid"),
        (["experiment.random_entries=beta"], "random_entries"),
        (["experiment.random_projection=skew"], "random_projection"),
    ):
        with pytest.raises(ValueError, match=msg):
            run_classification(compose_cfg(_base(tmp_path, data) + extra))


def _census_like_dir(tmp_path: Path) -> Path:
    """The census fixture's test-split rows, each repeated 20 times (500 rows, 24% '50000+')."""
    rows = [
        r
        for r in (REPO / "tests/fixtures/uci/census/census-income.test").read_text().splitlines()
        if r.strip()
    ]
    d = tmp_path / "cdata" / "census"
    d.mkdir(parents=True)
    (d / "census-income.test").write_text("\n".join(r for r in rows for _ in range(20)) + "\n")
    return tmp_path / "cdata"


def test_footnote_records_majority_accuracy_beside_the_classifier(tmp_path):
    data = _census_like_dir(tmp_path)
    base = [
        "experiment=classification",
        "dataset=census",
        "mechanism=pca",
        "scale=smoke",
        f"data_dir={data}",
        f"results_dir={tmp_path / 'res'}",
        "quiet=true",
        "scale.classification.max_rows=null",
    ]
    run_classification(compose_cfg(base))
    run_classification(compose_cfg(base + ["experiment.drop_feature_prefixes=['income=']"]))
    df = ResultStore(tmp_path / "res").load().sort_values("d_classified")
    assert list(df.positive_label) == ["50000+", "50000+"]
    # majority accuracy = share of the test rows carrying the training split's majority label ('- 50000')
    for _, r in df.iterrows():
        assert r.majority_accuracy == pytest.approx(1 - r.positive_rate_test)
        assert 0.5 < r.majority_accuracy < 1
    assert df.d_classified.iloc[1] - df.d_classified.iloc[0] == 2  # the two income= columns dropped
    with pytest.raises(ValueError, match="no feature starts with"):
        run_classification(
            compose_cfg(base + ["experiment.drop_feature_prefixes=['nosuchcolumn=']"])
        )


# --- Table 2's PPCA releases as the chains of one call (paper scale) ---------------------------------


@pytest.mark.slow
def test_ppca_projections_of_a_permutation_run_as_chains_and_resume(tmp_path):
    """With ``scale.ppca_restarts_as_chains`` the PPCA releases of one permutation (same hold-out data)
    are the chains of one ppca_restarts call: each record is bit for bit the single-chain release of its
    own stream (the stream the ungrouped runner uses for that projection), its key says n_chains = 1
    and restarts_as_chains, the group's chains are diagnosed together, and a deleted record is
    recomputed alone, identically."""
    import warnings

    from experiments.data.configured import load_configured
    from experiments.runs.streams import mechanism_rng, subset_rng
    from experiments.store.records import components_digest
    from experiments.store.store import record_id
    from mechanisms.ppca import ppca

    data = _kddcup_like_dir(tmp_path)
    base = _base(tmp_path, data, mech="ppca") + [
        "k=2",
        "+scale.ppca_restarts_as_chains=true",
        "scale.classification.projections=3",
        "ppca_iterations=60",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", RuntimeWarning
        )  # 60 iterations: diagnostics may fail, recorded
        assert run_classification(compose_cfg(base))["records_written"] == 3
        assert run_classification(compose_cfg(base))["records_written"] == 0  # resumed
    store = ResultStore(tmp_path / "res")
    df = store.load().sort_values("restart")
    assert set(df.restarts_as_chains) == {True} and df.components_sha256.nunique() == 3
    assert set(df["diagnostics_not_private.diagnosed_chains"]) == {3} and set(
        df["release.n_chains"]
    ) == {1}
    assert set(df["run_key.mechanism_params.n_chains"]) == {1}
    # record j is the single-chain release of mechanism_rng(seed, permutation, j) on the hold-out half
    cfg = compose_cfg(base)
    ds = load_configured(cfg.dataset, cfg.data_dir)
    order = subset_rng(cfg.seed, 0).permutation(ds.X.shape[0])
    hold = ds.X[order[: len(order) // 2]]
    for j in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            single = ppca(
                hold,
                2,
                epsilon=0.1,
                rng=mechanism_rng(cfg.seed, 0, j),
                sampler="auto",
                iterations=60,
                n_chains=1,
                progress=False,
            )
        assert components_digest(single.components) == df.components_sha256.iloc[j]
    row = df.iloc[1]
    rid = next(
        record_id(r["run_key"])
        for r in store.iter_records()
        if r["components_sha256"] == row.components_sha256
    )
    store.path(rid).unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert run_classification(compose_cfg(base))["records_written"] == 1
    redone = store.get(rid)
    assert redone["components_sha256"] == row.components_sha256 and redone["group_restarts"] == [1]
    assert redone["accuracy"] == pytest.approx(row.accuracy)
