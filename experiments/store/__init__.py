"""The record store: the append-only store (:mod:`experiments.store.store`), what a record is and
how it is written (:mod:`experiments.store.records`), its provenance stamp
(:mod:`experiments.store.provenance`), the rules for reading records of earlier versions
(:mod:`experiments.store.compat`) and the curated summaries (:mod:`experiments.store.summary`)."""
