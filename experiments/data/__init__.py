"""The data: the UCI data sets with the JMLR paper's preprocessing (:mod:`experiments.data.uci`:
sources, parsers, cache), synthetic data (:mod:`experiments.data.synthetic`), a data set as a
config names it (:mod:`experiments.data.configured`) and Table 1 (:mod:`experiments.data.table1`)."""
