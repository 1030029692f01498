#!/usr/bin/env python
"""Draw the peers comparison from its tables (experiments.figures.peers).

``--help`` lists the options."""

from experiments.figures.peers import main

if __name__ == "__main__":
    raise SystemExit(main())
