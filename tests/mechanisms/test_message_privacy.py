"""No warning or error message of any mechanism carries a number computed from the data.

A message is an output too: if its text differs between two neighbouring datasets, it tells them
apart outside every guarantee.  For every registered mechanism (``mechanisms.MECHANISMS``) and for
``PrivatePCA``, each scenario below triggers the warnings or errors on several datasets that
differ in one row — by replacing it (every relation) or, where the mechanism's relation is
add/remove-one-row (or none), by adding one — and asserts that the message texts are equal
strings.  The rows differ in position and magnitude (an over-bound row at the first, a middle or
the last position, of norm 1.5 or 1000; NaN at one place or two; strings of different lengths), so
a message naming a count, an index, a norm, a shape that holds n, a dtype that holds a length, or a
statistic of the chain (split-R̂, ESS) fails the test.
"""

from __future__ import annotations

import re
import warnings
from typing import Any, Callable

import numpy as np
import pytest

from mechanisms import MECHANISMS, ChainConvergenceWarning, PrivatePCA, get_mechanism
from mechanisms.ppca import ppca_restarts

N, D = 40, 4
EPS, DELTA = 0.5, 0.01

#: label -> (registered name, k, keyword arguments); the relation compared is read from the guarantee.
#: Neighbours: "replace" (same n, one row replaced) and "add" (one row added: n is not public).
CONFIGS: dict[str, tuple[str, int, dict[str, Any]]] = {
    "pca": ("pca", 1, {}),
    "random": ("random", 1, {}),
    "mod_sulq": ("mod_sulq", 1, {"epsilon": EPS, "delta": DELTA}),
    "analyze_gauss": ("analyze_gauss", 1, {"epsilon": EPS, "delta": DELTA}),
    "ppca": ("ppca", 2, {"epsilon": EPS, "iterations": 8, "n_chains": 2, "progress": False}),
    "ppca_exact": ("ppca", 1, {"epsilon": EPS}),
    "ppca_iterative": ("ppca_iterative", 1, {"epsilon": EPS}),
    "amin_cov": ("amin_cov", 1, {"epsilon": EPS, "rank": 4}),
    "noisy_power": ("noisy_power", 1, {"epsilon": EPS, "delta": DELTA}),
    "noisy_power_add_remove": (
        "noisy_power",
        1,
        {"epsilon": EPS, "delta": DELTA, "neighbouring": "add-remove-one-row"},
    ),
    "streaming_power": ("streaming_power", 1, {"epsilon": EPS, "delta": DELTA, "block_size": 10}),
    "online_pca": ("online_pca", 1, {"epsilon": EPS, "delta": DELTA}),
    "private_sketch": ("private_sketch", 1, {"epsilon": EPS, "delta": DELTA}),
    # the same mechanisms fed a stream (an iterator of rows): every row passes the check on its own
    "streaming_power_stream": (
        "streaming_power",
        1,
        {"epsilon": EPS, "delta": DELTA, "block_size": 10, "_stream": True},
    ),
    "online_pca_stream": (
        "online_pca",
        1,
        {"epsilon": EPS, "delta": DELTA, "tree": False, "_stream": True},
    ),
    "private_sketch_stream": (
        "private_sketch",
        1,
        {"epsilon": EPS, "delta": DELTA, "_stream": True},
    ),
    "subspace_exact": ("subspace_exact", 1, {"epsilon": EPS, "delta": DELTA}),
    "subspace_approx": ("subspace_approx", 1, {"epsilon": EPS, "delta": DELTA}),
    "dp_pca": ("dp_pca", 1, {"epsilon": EPS, "delta": DELTA, "batch_size": 10}),
    "k_dp_pca": ("k_dp_pca", 2, {"epsilon": EPS, "delta": DELTA, "batch_size": 10}),
    "gauss_cov": ("gauss_cov", 1, {"epsilon": EPS, "delta": DELTA}),
    "separate_cov": ("separate_cov", 2, {"epsilon": EPS, "delta": DELTA}),
    "adaptive_cov": ("adaptive_cov", 1, {"epsilon": EPS, "delta": DELTA, "beta": 0.1}),
    "lap_cov": ("lap_cov", 1, {"epsilon": EPS}),
    "separate_lap_cov": ("separate_lap_cov", 2, {"epsilon": EPS}),
    "coinpress_cov": ("coinpress_cov", 1, {"epsilon": EPS, "delta": DELTA, "iterations": 3}),
}


def test_every_registered_mechanism_is_scanned():
    assert {name for name, _, _ in CONFIGS.values()} == set(MECHANISMS)


def _data(n: int = N, seed: int = 0) -> np.ndarray:
    """n rows in the unit ball (norms in [0.2, 0.9]): valid for every mechanism."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D))
    return X / np.linalg.norm(X, axis=1, keepdims=True) * rng.uniform(0.2, 0.9, size=(n, 1))


def messages(call: Callable[[], Any]) -> tuple[str | None, tuple[str, ...]]:
    """(the error's type and text or None, the sorted warnings' categories and texts) of one call."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
            err = None
        except Exception as exc:  # every exception: its text is a message too
            err = f"{type(exc).__name__}: {exc}"
    return err, tuple(sorted(f"{w.category.__name__}: {w.message}" for w in caught))


def relations(label: str) -> tuple[str, ...]:
    """The neighbour kinds to compare: replace always; add where the mechanism declares
    add/remove-one-row (n not public) or no relation (then no relation may be assumed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ChainConvergenceWarning)
        out = call_with(label, _data())()
    rel = out.guarantee.neighbouring
    return ("replace", "add") if rel in ("add-remove-one-row", "none") else ("replace",)


def neighbours(
    X: np.ndarray, new_row: np.ndarray, position: int, kinds: tuple[str, ...]
) -> list[np.ndarray]:
    """Datasets that differ from X in one row: X with row ``position`` replaced by ``new_row``
    and, for "add", X with ``new_row`` inserted at ``position``."""
    out = []
    if "replace" in kinds:
        Y = X.copy()
        Y[position] = new_row
        out.append(Y)
    if "add" in kinds:
        out.append(np.insert(X, position, new_row, axis=0))
    return out


def call_with(label: str, data: Any) -> Callable[[], Any]:
    name, k, kwargs = CONFIGS[label]
    kwargs = dict(kwargs)
    if kwargs.pop("_stream", False):
        return lambda: get_mechanism(name)(iter(data), k, rng=np.random.default_rng(1), **kwargs)
    return lambda: get_mechanism(name)(data, k, rng=np.random.default_rng(1), **kwargs)


def assert_all_equal(
    results: list[tuple[str | None, tuple[str, ...]]], *, expect_error: bool | None = None
):
    first = results[0]
    for r in results[1:]:
        assert r == first, f"messages differ between neighbouring datasets:\n{first}\n{r}"
    if expect_error is not None:
        assert (first[0] is not None) == expect_error, first


def _over_bound_datasets(kinds: tuple[str, ...]) -> list[np.ndarray]:
    X = _data()
    e = np.ones(D) / np.sqrt(D)
    sets = []
    for position in (0, 17, N - 1):
        for norm in (1.5, 1000.0):
            sets += neighbours(X, norm * e, position, kinds)
    # two rows over the bound: a count in the message would differ
    Y = X.copy()
    Y[[3, 9]] = 2.0 * e
    return sets + [Y]


@pytest.mark.parametrize("label", sorted(CONFIGS))
def test_row_norm_refusal_is_the_same_for_every_offending_row(label):
    """One row above the bound, at different positions and of different norms (and two rows):
    one and the same refusal, naming neither the row, nor the count, nor the norm."""
    results = [messages(call_with(label, Y)) for Y in _over_bound_datasets(relations(label))]
    assert_all_equal(results, expect_error=True)
    for token in ("17", "39", "1000", "1.5"):
        assert token not in results[0][0]


@pytest.mark.parametrize("label", sorted(CONFIGS))
def test_nan_refusal_names_no_count_or_position(label):
    X = _data()
    variants = []
    for cells in ([(0, 0)], [(17, 2)], [(3, 1), (30, 3)]):
        Y = X.copy()
        for i, j in cells:
            Y[i, j] = np.nan
        variants.append(Y)
    Y = X.copy()
    Y[N - 1, 0] = np.inf
    variants.append(Y)
    if "add" in relations(label):
        variants.append(np.insert(X, 5, np.nan, axis=0))
    assert_all_equal([messages(call_with(label, Y)) for Y in variants], expect_error=True)


@pytest.mark.parametrize("label", sorted(CONFIGS))
def test_malformed_input_refusals_name_no_size_or_value(label):
    """Strings of different lengths (a dtype such as <U7 states the longest); 1-D and 3-D arrays of
    n and n + 1 rows (a printed shape states n)."""
    kinds = relations(label)
    strings = [messages(call_with(label, np.full((N, D), "x" * length))) for length in (1, 7)]
    assert_all_equal(strings, expect_error=True)
    sizes = (N, N + 1) if "add" in kinds else (N,)
    for reshape in (lambda X: X.ravel(), lambda X: X[:, :, None]):
        results = [
            messages(call_with(label, reshape(_data(n, seed)))) for n in sizes for seed in (0, 1)
        ]
        # a stream reshapes each item to one row, so online_pca accepts the 3-D stream's (d, 1) items
        assert_all_equal(results, expect_error=None if "_stream" in CONFIGS[label][2] else True)


@pytest.mark.parametrize("label", sorted(CONFIGS))
def test_zero_feature_refusals_name_no_size(label):
    """Data with no columns, of n and n + 1 rows: one refusal, the same text (a printed shape such as
    (40, 0) states n, which is not public under add/remove-one-row)."""
    results = [messages(call_with(label, np.zeros((n, 0)))) for n in (N, N + 1)]
    assert_all_equal(results, expect_error=True)
    assert str(N) not in results[0][0] and str(N + 1) not in results[0][0]


STREAM_LABELS = sorted(label for label, (_, _, kw) in CONFIGS.items() if kw.get("_stream"))


@pytest.mark.parametrize("label", STREAM_LABELS)
def test_a_malformed_stream_row_is_refused_without_its_position_or_length(label):
    """A stream whose row at position 0, 17 or n − 1 is malformed (d − 1 or d + 1 entries, none, a
    scalar, a 1 x (d + 2) chunk): one refusal, the same text for every position and shape (a first
    row sets the stream's length, so a malformed first row must not be named by its length either)."""
    X = _data()
    bad_items = [
        0.1 * np.ones(D - 1),
        0.1 * np.ones(D + 1),
        np.ones(0),
        np.float64(0.1),
        0.1 * np.ones((1, D + 2)),
    ]
    results = []
    for position in (0, 17, N - 1):
        for item in bad_items:
            rows = list(X)
            rows[position] = item
            results.append(messages(call_with(label, rows)))
    assert_all_equal(results, expect_error=True)
    for token in ("17", "39", str(D - 1), str(D + 1), str(D + 2)):
        assert token not in results[0][0], results[0][0]


def test_estimator_zero_features_names_no_size():
    """PrivatePCA.fit on no columns: scikit-learn's message printed shape=(40, 0); the estimator's own
    keeps the words scikit-learn's checks look for and leaves the number of rows out.  transform on
    no columns: the feature-count message, not the shape."""
    for name in ("mod_sulq", "analyze_gauss"):  # replace-one-row and add/remove-one-row
        est = PrivatePCA(mechanism=name, n_components=1, epsilon=EPS, delta=DELTA, random_state=0)
        results = [messages(lambda n=n: est.fit(np.zeros((n, 0)))) for n in (N, N + 1)]
        assert_all_equal(results, expect_error=True)
        assert "0 feature(s)" in results[0][0] and str(N) not in results[0][0]
    fitted = PrivatePCA(mechanism="mod_sulq", n_components=1, delta=DELTA, random_state=0).fit(
        _data()
    )
    results = [messages(lambda n=n: fitted.transform(np.zeros((n, 0)))) for n in (N, N + 1)]
    assert_all_equal(results, expect_error=True)
    assert str(N) not in results[0][0]


@pytest.mark.parametrize("label", sorted(CONFIGS))
def test_warnings_of_valid_neighbours_are_equal(label):
    """Valid neighbouring datasets (a row replaced by another, rescaled, or added): the same
    warnings, word for word.  PPCA with 8 iterations never passes its convergence rule (8 draws
    per chain cannot reach the minimum bulk-ESS of 100 per chain), so its warning is among them;
    its split-R̂ and ESS differ between these datasets."""
    X = _data()
    kinds = relations(label)
    variants = (
        [X]
        + neighbours(X, _data(1, seed=5)[0], 5, kinds)
        + neighbours(X, 0.5 * X[5], 5, ("replace",))
    )
    results = [messages(call_with(label, Y)) for Y in variants]
    assert_all_equal(results, expect_error=False)
    if label == "ppca":
        assert any("ChainConvergenceWarning" in w for w in results[0][1])


def test_ppca_warning_says_where_the_diagnostics_are_without_numbers():
    X = _data()
    with pytest.warns(ChainConvergenceWarning) as record:
        call_with("ppca", X)()
    text = str(record[0].message)
    assert "diagnostics['converged'] is False" in text and "not private" in text
    assert not re.search(r"(Rhat|ESS)\s*=", text)  # names the statistics, never their values


def test_ppca_restarts_warning_is_the_same_on_neighbours():
    X = _data()
    variants = [X] + neighbours(X, 0.3 * X[0], 0, ("replace",))
    results = [
        messages(
            lambda Y=Y: ppca_restarts(
                Y,
                2,
                epsilon=EPS,
                iterations=8,
                progress=False,
                rngs=[np.random.default_rng(r) for r in range(2)],
            )
        )
        for Y in variants
    ]
    assert_all_equal(results, expect_error=False)
    assert any("ChainConvergenceWarning" in w for w in results[0][1])


# -- PrivatePCA ---------------------------------------------------------------------------------


def _estimator(keep: bool) -> PrivatePCA:
    return PrivatePCA(
        mechanism="ppca",
        n_components=2,
        epsilon=EPS,
        keep_diagnostics=keep,
        random_state=0,
        mechanism_params={"iterations": 8, "n_chains": 2, "progress": False},
    )


@pytest.mark.parametrize("keep", [False, True])
def test_estimator_warning_is_one_equal_message_pointing_to_what_the_user_can_see(keep):
    X = _data()
    variants = [X] + neighbours(X, 0.3 * X[2], 2, ("replace",))
    results = [messages(lambda Y=Y: _estimator(keep).fit(Y)) for Y in variants]
    assert_all_equal(results, expect_error=False)
    (warning,) = results[0][1]  # the estimator's own, not the mechanism's as well
    assert warning.startswith("ChainConvergenceWarning:")
    if keep:
        assert "diagnostics_['converged'] is False" in warning
    else:
        assert "keep_diagnostics=True" in warning and "diagnostics_['converged']" not in warning
        assert "output's diagnostics" not in warning


def test_estimator_bad_input_messages_quote_no_data():
    """scikit-learn's own messages for 1-D and complex input print the array, NumPy's for a
    non-numeric string prints the string: the estimator words these itself."""
    est = PrivatePCA(mechanism="mod_sulq", n_components=1, delta=DELTA, random_state=0)
    X = _data()
    cases = [
        [X.ravel(), _data(N + 1).ravel(), X[:, 0]],
        [X.astype(complex) * 1j, (2 * X).astype(complex)],
        [X[:, :1], _data(N + 1)[:, :1]],  # one feature: sklearn printed the shape
        [np.where(X > 0, "abc", "1.0").astype(object), np.where(X > 0.1, "zz", "2").astype(object)],
        [Y for Y in _over_bound_datasets(("replace", "add"))],
    ]
    for variants in cases:
        assert_all_equal([messages(lambda Y=Y: est.fit(Y)) for Y in variants], expect_error=True)
    fitted = PrivatePCA(mechanism="mod_sulq", n_components=1, delta=DELTA, random_state=0).fit(X)
    for method in (fitted.transform, fitted.inverse_transform):
        assert_all_equal(
            [messages(lambda Y=Y: method(Y)) for Y in (X[0], X[1] * 3)], expect_error=True
        )


@pytest.mark.parametrize(
    "name,kwargs",
    [
        (
            "streaming_power",
            {"epsilon": EPS, "delta": DELTA, "block_size": 10, "iterations": 50},
        ),  # runs out of blocks
        ("online_pca", {"epsilon": EPS, "delta": DELTA, "horizon": 30}),  # longer than horizon
    ],
)
def test_a_stream_of_the_wrong_length_is_refused_without_its_length(name, kwargs):
    """Streams of 40 and 51 rows (an added row) are refused with the same text: the number of rows
    or blocks read is a function of the data's length."""
    for as_stream in (iter, np.asarray):  # an iterator of rows, and an array (length known)
        results = [
            messages(
                lambda n=n: get_mechanism(name)(
                    as_stream(_data(n)), 1, rng=np.random.default_rng(1), **kwargs
                )
            )
            for n in (40, 51)
        ]
        assert_all_equal(results, expect_error=True)


def test_subspace_exact_too_many_candidates_names_no_n():
    """C(n, k) > max_candidates: the refusal and the ⊥ reason (part of the release) are the same
    text for n = 300 and n = 301 (k = 2: 44,850 and 45,150 candidate subsets)."""

    def run(n, too_many):
        X = np.zeros((n, 3))
        X[:, 0] = 0.5
        return get_mechanism("subspace_exact")(
            X, 2, rng=np.random.default_rng(1), epsilon=EPS, delta=DELTA, too_many=too_many
        )

    assert_all_equal([messages(lambda n=n: run(n, "raise")) for n in (300, 301)], expect_error=True)
    reasons = {run(n, "bottom").release["reason"] for n in (300, 301)}
    assert len(reasons) == 1
