#!/usr/bin/env python
"""The reproduction as a plan of independent jobs on Dask (experiments/plan/cli.py):
``scripts/plan.py quick --dry-run``, ``scripts/plan.py quick``, ``--engine slurm ...``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from experiments.app.schema import register_schema  # noqa: E402
from experiments.plan.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], register=register_schema))
