"""Hydra entry point: ``python run.py [experiment=...] [mechanism=...] [dataset=...] [key=value ...]``.

All logic lives in :mod:`experiments`; this file only hands the composed config over.
"""

import hydra
from omegaconf import DictConfig


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig):
    from experiments.runners import run_experiment

    return run_experiment(cfg)


if __name__ == "__main__":
    main()
