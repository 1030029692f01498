#!/usr/bin/env python
"""Draw every JMLR figure and table from a results store or a summary (experiments.figures.paper).

``--help`` lists the options."""

from experiments.figures.paper import main

if __name__ == "__main__":
    raise SystemExit(main())
