"""Hydra entry point: ``python run.py [experiment=...] [mechanism=...] [dataset=...] [key=value ...]``.

All logic lives in :mod:`experiments`; this file only hands the composed config over
(:func:`experiments.app.lifecycle.run_task`).  ``--help`` lists the config groups and the top-level
keys.  Wrongly typed values (schema: :class:`experiments.app.schema.RunConfig`), unknown top-level
keys or group options, and other user errors print one line and exit with status 2; Ctrl-C prints
one line and exits with status 130 (:mod:`experiments.app.lifecycle`).  The ``privpca`` console
command runs the same app.
"""

import sys

import hydra
from omegaconf import DictConfig

from experiments.app.lifecycle import CONFIG_NAME, VERSION_BASE, run_command_line, run_task


@hydra.main(version_base=VERSION_BASE, config_path="conf", config_name=CONFIG_NAME)
def main(cfg: DictConfig):
    return run_task(cfg)


if __name__ == "__main__":
    sys.exit(run_command_line(main))
