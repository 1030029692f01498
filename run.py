"""Hydra entry point: ``python run.py [experiment=...] [mechanism=...] [dataset=...] [key=value ...]``.

All logic lives in :mod:`experiments`; this file only hands the composed config over.
Wrongly typed values (schema: :class:`experiments.app.cli.RunConfig`), unknown top-level keys or group
options, and other user errors print one line and exit with status 2; Ctrl-C prints one line
and exits with status 130 (:mod:`experiments.app.cli`).
"""

import sys

import hydra
from omegaconf import DictConfig

from experiments.app.cli import register_schema, report_user_errors, run_command_line

register_schema()


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
@report_user_errors
def main(cfg: DictConfig):
    from experiments.app.dispatch import run_experiment

    return run_experiment(cfg)


if __name__ == "__main__":
    sys.exit(run_command_line(main))
