"""The command line: the schema of the top-level keys, the checks made before Hydra composes a
config, the one-line error reports, the process lifecycle, and the dispatch of a composed config
to its experiment."""
