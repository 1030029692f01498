"""The private PCA benchmark: every mechanism at one certified (ε, δ), on the same data.

* :mod:`experiments.bench.currency` -- the privacy currency: how each mechanism is called so that
  its release certifies the target (ε, δ) under replace-one-row neighbours, and what it certified.
* :mod:`experiments.bench.datasets` -- the benchmark's data sets (UCI, the paper's Gaussian,
  scikit-learn's digits, the spiked (d, n) grid).
* :mod:`experiments.bench.runner` -- ``run.py experiment=benchmark``: trials as store records.
* :mod:`experiments.bench.summary` -- the records compacted into Parquet; the DuckDB leaderboard.
* :mod:`experiments.bench.figures` -- the figures and tables, drawn from the Parquet summary only.

Documentation: ``docs/benchmark.md``; results: ``BENCHMARK.md``.
"""
