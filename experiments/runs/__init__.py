"""The runs: random streams, evaluating a mechanism into a record's fields, printing results,
single runs and reruns, the sweep, the PPCA chain groups, the JMLR paper's runners, Table 2's
protocol and classifiers, and the experiments beyond the paper."""
