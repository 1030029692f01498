# The typed schema of run.py's top-level config must be known to Hydra wherever a config is composed
# (run.py, the compose API in tests and notebooks).
from experiments.app.cli import register_schema as _register_schema  # noqa: E402

_register_schema()
