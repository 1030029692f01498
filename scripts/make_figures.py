#!/usr/bin/env python
"""Draw every JMLR figure and table from a results store or a summary (experiments.figures.cli).

``--help`` lists the options."""

from experiments.figures.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
