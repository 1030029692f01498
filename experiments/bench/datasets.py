"""The benchmark's data sets, each with its k and the rule that put its rows in the unit ball.

* ``kddcup``, ``census``, ``insurance``, ``localization``: the UCI data sets preprocessed as in the
  JMLR paper (experiments.data.uci), at the paper's k (``PAPER_K``: 4, 8, 11, 10); ε treats the
  preprocessed matrix as the database.  A data set whose raw files are not found is skipped (listed).
* ``gaussian10``: the paper's d = 10 Gaussian (eq. (27)), n = 5,000, k = 2.
* ``digits``: scikit-learn's handwritten digits (n = 1,797, d = 64; bundled, no download), k = 5.
  Pixel values lie in [0, 16], so a row's norm is at most 16·√64 = 128: every row is divided by
  that **public** bound (not by the largest row norm, a statistic of the data).
* ``spiked-d<d>-n<n>``: Hardt & Price's spiked covariance model (experiments.data.synthetic.spiked:
  k = 2 spikes of 1.0, noise σ = 0.01, a Haar-random subspace), rows clipped onto the unit ball one
  by one (``row_scaling="clip"``: x / max(1, ‖x‖), a public map); drawn from the stream
  ``[0, d, n]``.  ``spiked`` alone means every (d, n) of the scale's grid.
* ``spiked-d<d>-n<n>-k<k>``: the same model with k spikes and the benchmark's k = k, drawn from the
  stream ``[0, d, n, k]``; ``k1`` is where the k = 1 mechanisms (``dp_pca``) enter.
* ``kddcup-table2`` and ``kddcup-table2-r<rows>``: Table 2's protocol (JMLR 2013 section 6.4;
  :func:`experiments.runs.classifiers.classification_split`, seed 0, permutation 0): the database is
  the hold-out half of kddcup's permutation (``-r<rows>``: of its first ``rows`` rows, the
  protocol's ``max_rows``), k = 4; the other half's training and test rows, with the label
  ``normal.`` as the positive class, come along (``Dataset.table2``) for the classification
  accuracy (:mod:`experiments.bench.accuracy`).  They are never part of the database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from experiments.data.uci import DATASETS as UCI
from experiments.data.uci import PAPER_K, PAPER_TABLE1, Dataset

#: the k of each non-UCI data set (module docstring)
K = {"gaussian10": 2, "digits": 5, "spiked": 2}
#: the Table 2 cells' seed and permutation (classification_split's), and their source data set
TABLE2_SEED, TABLE2_PERMUTATION, TABLE2_SOURCE = 0, 0, "kddcup"
TABLE2 = re.compile(r"kddcup-table2(?:-r(\d+))?$")
#: the public bound on a digits row's L2 norm: 16 (largest pixel value) x sqrt(64)
DIGITS_ROW_BOUND = 128.0
SPIKED = re.compile(r"spiked-d(\d+)-n(\d+)(?:-k(\d+))?$")
#: every data-set name the benchmark knows (``spiked`` expands to its grid)
NAMES = (
    *UCI,
    "gaussian10",
    "digits",
    "spiked",
    "spiked-d<d>-n<n>[-k<k>]",
    "kddcup-table2[-r<rows>]",
)


@dataclass(frozen=True)
class Cell:
    """One data set of the benchmark: its name (a spiked cell names its d and n), family and k."""

    name: str
    family: str
    k: int
    d: int | None = None
    n: int | None = None
    rows: int | None = None  # a Table 2 cell: the permutation's first rows (None: all)


@dataclass(frozen=True)
class Table2Rows:
    """The rows Table 2 classifies (never in the database): training and test rows, labels 0/1."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    positive: str


def expand(names, spiked_dims, spiked_ns) -> list[Cell]:
    """The cells ``names`` stand for (``spiked``: every (d, n) of the grid; a spiked cell name: itself)."""
    cells: list[Cell] = []
    for name in names:
        name = str(name)
        m, t2 = SPIKED.match(name), TABLE2.match(name)
        if m:
            k = K["spiked"] if m.group(3) is None else int(m.group(3))
            cells.append(Cell(name, "spiked", k, int(m.group(1)), int(m.group(2))))
        elif t2:
            rows = None if t2.group(1) is None else int(t2.group(1))
            size = PAPER_TABLE1[TABLE2_SOURCE]  # the hold-out half of the permutation's rows
            n = min(rows or size["n"], size["n"]) // 2
            cells.append(Cell(name, "table2", PAPER_K[TABLE2_SOURCE], size["d"], n, rows))
        elif name == "spiked":
            for d in spiked_dims:
                for n in spiked_ns:
                    cells.append(Cell(f"spiked-d{d}-n{n}", "spiked", K["spiked"], int(d), int(n)))
        elif name in UCI:
            cells.append(Cell(name, name, PAPER_K[name]))
        elif name in K:
            cells.append(Cell(name, name, K[name]))
        else:
            raise ValueError(f"unknown benchmark data set {name!r}; valid: {', '.join(NAMES)}")
    return cells


def load(cell: Cell, data_dir: str | None = None) -> Dataset:
    """The rows of ``cell`` (UCI raw files from ``data_dir`` or ``PRIVPCA_DATA_DIR``)."""
    if cell.family == "spiked":
        from experiments.data.synthetic import spiked

        stream = [0, cell.d, cell.n] if cell.k == K["spiked"] else [0, cell.d, cell.n, cell.k]
        rng = np.random.default_rng(stream)
        ds = spiked(cell.n, cell.d, cell.k, spike=1.0, sigma=0.01, rng=rng, row_scaling="clip")
        ds.name = cell.name
        return ds
    if cell.family == "gaussian10":
        from experiments.data.synthetic import load_synthetic

        return load_synthetic("gaussian10", n=5000, seed=0)
    if cell.family == "digits":
        from sklearn.datasets import load_digits

        X = load_digits().data.astype(np.float64) / DIGITS_ROW_BOUND
        return Dataset(
            name="digits",
            X=X,
            y=None,
            split="all",
            feature_names=[f"pixel{i}" for i in range(X.shape[1])],
            preprocessing="scikit-learn digits; rows / 128 (public bound 16 * sqrt(64))",
        )
    from experiments.data.uci import load_dataset

    if cell.family == "table2":
        return _table2(cell, load_dataset(TABLE2_SOURCE, data_dir=data_dir, download=False))
    return load_dataset(cell.family, data_dir=data_dir, download=False)


def _table2(cell: Cell, full: Dataset) -> Dataset:
    """Table 2's permutation of ``full``: the hold-out half as the database, the rest attached."""
    from experiments.runs.classifiers import classification_split
    from experiments.runs.settings import POSITIVE_LABEL

    positive = POSITIVE_LABEL[TABLE2_SOURCE]
    hold, train, test = classification_split(full.n, TABLE2_SEED, TABLE2_PERMUTATION, cell.rows)
    y = (np.asarray(full.y).astype(str) == positive).astype(int)
    ds = Dataset(
        name=cell.name,
        X=np.ascontiguousarray(full.X[hold]),
        y=None,
        split=full.split,
        feature_names=full.feature_names,
        files=full.files,
        preprocessing=f"{full.preprocessing}; Table 2 permutation {TABLE2_PERMUTATION} (seed "
        f"{TABLE2_SEED}), its hold-out half",
    )
    rows = Table2Rows(full.X[train], y[train], full.X[test], y[test], positive)
    object.__setattr__(ds, "table2", rows)
    return ds
