"""What a UCI data set is here: the four names, the paper's Table 1, the :class:`Dataset` type and
the errors for a raw file that is missing or unreadable."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

DATASETS = ("kddcup", "census", "localization", "insurance")


#: Table 1 of the paper: n, d, k, q_F(V_k), and the last column (which is q_F(V_k)/tr(A)).
PAPER_TABLE1: dict[str, dict[str, float]] = {
    "kddcup": {"n": 494_021, "d": 116, "k": 4, "q_F": 0.6587, "ratio": 0.96},
    "census": {"n": 199_523, "d": 513, "k": 8, "q_F": 0.7321, "ratio": 0.81},
    "localization": {"n": 164_860, "d": 44, "k": 10, "q_F": 0.5672, "ratio": 0.81},
    "insurance": {"n": 9_822, "d": 150, "k": 11, "q_F": 0.5118, "ratio": 0.81},
}


PAPER_K: dict[str, int] = {name: int(v["k"]) for name, v in PAPER_TABLE1.items()}


@dataclass
class Dataset:
    name: str
    X: np.ndarray  # float64, n x d, every row L2 norm <= 1
    y: np.ndarray | None  # raw labels, same n
    split: str
    feature_names: list[str]
    files: dict[str, str] = field(default_factory=dict)  # raw file name -> sha256 (uncompressed)
    preprocessing: str = ""

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])


class DataUnavailableError(FileNotFoundError):
    """A raw data file is missing (and could not be downloaded)."""


class DataCorruptError(ValueError):
    """A raw data file exists but cannot be read (truncated gzip, wrong format...)."""
