"""Build step that pyproject.toml cannot declare: the checkout's ``conf/`` shipped in the wheel.

The Hydra configs live in the top-level ``conf/`` of the checkout (their one source).  A wheel
(``pip install .``) carries a copy of them as ``experiments/conf/``, where an installed copy finds
them (:func:`experiments.paths.config_dir`); an editable install reads the checkout's ``conf/``.
Everything else about the distribution is in pyproject.toml.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CONF = Path(__file__).resolve().parent / "conf"
#: where the wheel holds the configs (:data:`experiments.paths.SHIPPED_CONFIG_DIR`)
SHIPPED = Path("experiments") / "conf"


class BuildPyWithConf(build_py):
    """``build_py``, then every ``conf/**/*.yaml`` copied to ``experiments/conf/`` of the build."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install runs from the checkout, which has conf/
        for source in sorted(p for p in CONF.rglob("*.yaml") if p.is_file()):
            target = Path(self.build_lib) / SHIPPED / source.relative_to(CONF)
            self.mkpath(str(target.parent))
            self.copy_file(str(source), str(target))


setup(cmdclass={"build_py": BuildPyWithConf})
