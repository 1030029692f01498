#!/usr/bin/env python
"""Draw the calibration comparison from a results store (experiments.figures.calibration).

``--help`` lists the options."""

from experiments.figures.calibration import main

if __name__ == "__main__":
    raise SystemExit(main())
