"""The command line: the schema of the top-level keys (``schema``), the checks made before Hydra
composes a config (``preflight``), the one-line error reports (``report``), ``--help`` (``help``),
the process lifecycle and the ``privpca`` console command (``lifecycle``), and the dispatch of a
composed config to its experiment (``dispatch``)."""
