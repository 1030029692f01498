"""Fixed-seed chains on which ``tests/mechanisms/test_diagnostics.py`` checks the bulk-ESS and split-R̂ against
ArviZ's values.

This module needs NumPy only.  Run as a script in an environment that holds ArviZ (not the project's:
ArviZ is not one of its dependencies), it prints the reference values for the test::

    python3 -m venv /tmp/arviz-env && /tmp/arviz-env/bin/pip install arviz numpy
    /tmp/arviz-env/bin/python tests/ess_reference.py

Each case names the step of the estimator it exercises (Vehtari et al. 2021, section 3.2, as ArviZ's
``arviz.stats.diagnostics._ess`` computes it).
"""

from __future__ import annotations

import numpy as np

#: name -> (seed, chains, draws per chain, AR(1) coefficient, rounding step or 0 for none)
CASES = {
    # the even lag of the first non-positive pair is positive: the improved truncation adds it
    "iid 4 x 1000": (11, 4, 1000, 0.0, 0.0),
    "AR(1) 0.5, 4 x 1000": (32, 4, 1000, 0.5, 0.0),
    # a long positive sequence whose pairs the initial monotone sequence lowers
    "AR(1) 0.9, 2 x 500": (13, 2, 500, 0.9, 0.0),
    # antithetic chains: tau reaches the floor 1/log10(S)
    "AR(1) -0.9, 4 x 1000": (14, 4, 1000, -0.9, 0.0),
    # every pair positive up to the last lags: the sequence stops at lag n - 2 of the split chains
    "AR(1) 0.99, 4 x 40": (15, 4, 40, 0.99, 0.0),
    # one chain of odd length: the split drops the middle draw
    "AR(1) 0.3, 1 x 1001": (76, 1, 1001, 0.3, 0.0),
    # ties: average ranks
    "iid rounded to 0.5, 3 x 400": (17, 3, 400, 0.0, 0.5),
    # the shape of a paper-scale group of Figures 3-4 (10 restarts, 10,000 draws after burn-in)
    "AR(1) 0.2, 10 x 10000": (178, 10, 10000, 0.2, 0.0),
}


def reference_chains(name: str) -> np.ndarray:
    """The (chains x draws) array of case ``name``: AR(1) chains x_t = ρ x_{t-1} + √(1 − ρ²) e_t with
    stationary starts, e and the starts standard normal from ``numpy.random.default_rng(seed)``,
    optionally rounded to a multiple of the rounding step."""
    seed, m, n, rho, step = CASES[name]
    rng = np.random.default_rng(seed)
    x = np.empty((m, n))
    x[:, 0] = rng.standard_normal(m)
    e = rng.standard_normal((m, n)) * np.sqrt(1.0 - rho**2)
    for t in range(1, n):
        x[:, t] = rho * x[:, t - 1] + e[:, t]
    return np.round(x / step) * step if step else x


if __name__ == "__main__":
    import logging
    import warnings

    import arviz as az
    import scipy

    warnings.filterwarnings("ignore")  # ArviZ's notice of its coming refactor
    logging.disable(logging.WARNING)  # and ArviZ's log line: R-hat wants two chains
    print(f"# ArviZ {az.__version__}, numpy {np.__version__}, scipy {scipy.__version__}")
    for name in CASES:
        x = reference_chains(name)
        bulk = float(az.ess(x, method="bulk"))
        rhat = float(az.rhat(x, method="rank"))  # NaN for one chain: ArviZ wants two
        print(f'    "{name}": ({bulk!r}, {None if np.isnan(rhat) else rhat!r}),')
