"""Black-box testers that need no hand-made statistic: a classifier and a kernel (MMD) witness.

Both learn, from training runs of a mechanism on two neighbouring datasets, a function of the release
that tends to be larger under D than under D′; the audit then thresholds it like any other statistic
(the threshold chosen on runs the function was not trained on, the event certified by Clopper–Pearson
on fresh runs), as DP-Sniper (Bichsel et al., S&P 2021) does with its classifier.

* **Features** (:func:`release_features`), invariant to the sign and the rotation of the released
  basis within its span and defined for every mechanism: the ⊥ indicator; the upper triangle of the
  projector V̂V̂ᵀ; the cos² of the principal angles between span(V̂) and the span of the first k axes
  (a fixed frame); and, for a mechanism that releases a covariance (``MechanismOutput.covariance``),
  the upper triangle of that matrix.  Nothing in them names a mechanism.
* **Classifier** (``logistic``; ``mlp``): scikit-learn's standardised logistic regression, or a
  one-hidden-layer perceptron, trained to tell D's releases (label 1) from D′'s; the statistic is its
  log-odds.  For an exponential mechanism with score uᵀAu the log-likelihood ratio is linear in the
  projector, and for a Gaussian release of a matrix it is linear in that matrix, so the logistic
  regression contains the optimal test of both.
* **Kernel witness** (``mmd``): the witness function of the maximum mean discrepancy with a Gaussian
  kernel (bandwidth: the median distance of the standardised training features),
  f(x) = mean_i k(x, a_i) − mean_j k(x, b_j) over training releases a_i of D and b_j of D′.  The MMD
  tester of DP-Auditorium (Kong et al. 2024) compares two mechanisms by this distance; here its witness
  is the statistic, so that the result is a certified bound like the others.

:class:`LearnedStatistics` holds the trained functions; :func:`.search.search_audit` trains one per
candidate design on part of its calibration runs, and chooses among them and the hand-made statistics
on the rest.
"""

from __future__ import annotations

import warnings

import numpy as np

#: the learned statistics the search may train (``experiment.learned``)
LEARNED_MODELS = ("logistic", "mlp", "mmd")


def release_features(
    V: np.ndarray | None, covariance: np.ndarray | None, d: int, k: int, with_covariance: bool
) -> np.ndarray:
    """The sign- and rotation-invariant features of one release (module docstring); zeros for ⊥."""
    iu = np.triu_indices(d)
    if V is None:
        P = np.zeros((d, d))
        cos2 = np.zeros(k)
    else:
        V = np.asarray(V, float).reshape(d, -1)
        P = V @ V.T
        sv = np.linalg.svd(V[:k, :], compute_uv=False) if V.shape[1] else np.zeros(0)
        cos2 = np.zeros(k)
        cos2[: sv.size] = np.sort(sv**2)[::-1][:k]
    parts = [[1.0 if V is None else 0.0], P[iu], cos2]
    if with_covariance:
        C = np.zeros((d, d)) if covariance is None else np.asarray(covariance, float).reshape(d, d)
        parts.append(C[iu])
    return np.concatenate([np.asarray(p, float).ravel() for p in parts])


def _features(runs: list, d: int, k: int, with_covariance: bool) -> np.ndarray:
    rows = [
        release_features(V, getattr(run, "covariance", None), d, k, with_covariance)
        for run in runs
        for V in (run[0],)
    ]
    X = np.array(rows, dtype=float).reshape(len(runs), -1)
    return np.nan_to_num(X, nan=0.0, posinf=1e300, neginf=-1e300)


class LearnedStatistics:
    """Statistics learned from training runs on D (``runs1``) and D′ (``runs0``): the classifiers'
    log-odds and the kernel witness (module docstring).  Runs are (components or None, release)
    pairs, optionally with a ``covariance`` attribute.

    Parameters
    ----------
    d, k : int
        The design's dimension and rank.
    models : tuple of str
        Which of :data:`LEARNED_MODELS` to train.
    seed : int
        Seeds the perceptron's initialisation and the kernel's subsample.
    max_kernel_points : int
        Training releases per side the witness averages over.
    """

    def __init__(
        self,
        d: int,
        k: int,
        models: tuple[str, ...] = ("logistic", "mmd"),
        seed: int = 0,
        max_kernel_points: int = 300,
    ) -> None:
        unknown = set(models) - set(LEARNED_MODELS)
        if unknown:
            raise ValueError(
                f"unknown learned statistics {sorted(unknown)}; valid: {LEARNED_MODELS}"
            )
        self.d, self.k, self.models, self.seed = int(d), int(k), tuple(models), int(seed)
        self.max_kernel_points = int(max_kernel_points)
        self.with_covariance = False
        self._fitted: dict = {}

    @property
    def names(self) -> list[str]:
        return [f"classifier[{m}]" if m != "mmd" else "mmd_witness" for m in self.models]

    def fit(self, runs1: list, runs0: list) -> LearnedStatistics:
        """Train every model on these runs (D labelled 1)."""
        from sklearn.preprocessing import StandardScaler

        self.with_covariance = any(
            getattr(r, "covariance", None) is not None for r in list(runs1) + list(runs0)
        )
        F1 = _features(runs1, self.d, self.k, self.with_covariance)
        F0 = _features(runs0, self.d, self.k, self.with_covariance)
        X = np.vstack([F1, F0])
        y = np.r_[np.ones(len(F1)), np.zeros(len(F0))]
        self.scaler = StandardScaler().fit(X)
        Z = self.scaler.transform(X)
        for m in self.models:
            if m == "mmd":
                rng = np.random.default_rng([self.seed, 43])
                Z1, Z0 = Z[y == 1], Z[y == 0]
                take = self.max_kernel_points
                A = Z1[rng.permutation(len(Z1))[:take]]
                B = Z0[rng.permutation(len(Z0))[:take]]
                pool = np.vstack([A, B])
                dist = np.sqrt(((pool[:, None, :] - pool[None, :, :]) ** 2).sum(-1))
                med = (
                    float(np.median(dist[np.triu_indices(len(pool), 1)])) if len(pool) > 1 else 1.0
                )
                self._fitted[m] = (A, B, med if med > 0 else 1.0)
            elif len(set(y)) < 2:
                self._fitted[m] = None
            else:
                # an unconverged perceptron is still a statistic
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self._fitted[m] = self._classifier(m).fit(Z, y)
        return self

    def _classifier(self, m: str):
        if m == "logistic":
            from sklearn.linear_model import LogisticRegression

            return LogisticRegression(C=1.0, max_iter=1000)
        from sklearn.neural_network import MLPClassifier

        return MLPClassifier(
            hidden_layer_sizes=(16,), alpha=1e-3, max_iter=400, random_state=self.seed
        )

    def __call__(self, runs: list) -> np.ndarray:
        """The learned statistics of ``runs``: one column per model."""
        F = _features(runs, self.d, self.k, self.with_covariance)
        Z = self.scaler.transform(F)
        cols = []
        for m in self.models:
            fitted = self._fitted[m]
            if m == "mmd":
                A, B, h = fitted
                col = _kernel_mean(Z, A, h) - _kernel_mean(Z, B, h)
            elif fitted is None:
                col = np.zeros(len(Z))
            elif m == "logistic":
                col = fitted.decision_function(Z)
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    p = np.clip(fitted.predict_proba(Z)[:, 1], 1e-15, 1 - 1e-15)
                col = np.log(p) - np.log1p(-p)
            cols.append(col)
        return np.column_stack(cols) if cols else np.zeros((len(Z), 0))


def _kernel_mean(Z: np.ndarray, A: np.ndarray, h: float) -> np.ndarray:
    """mean_i exp(−‖z − a_i‖² / (2h²)) for every row z of Z."""
    sq = (Z**2).sum(1)[:, None] + (A**2).sum(1)[None, :] - 2.0 * Z @ A.T
    return np.exp(-np.maximum(sq, 0.0) / (2.0 * h * h)).mean(1)
