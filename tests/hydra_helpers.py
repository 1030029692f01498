"""Compose the project's Hydra config in-process (no subprocess) for fast runner tests."""

from pathlib import Path

from hydra import compose, initialize_config_dir

from experiments.app.schema import register_schema

CONF = str(Path(__file__).resolve().parent.parent / "conf")


def compose_cfg(overrides):
    register_schema()  # conf/config.yaml's defaults list names the typed schema
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))
