"""Where the harness reads its configs and writes its results and caches, wherever its code sits.

The code runs either from the project's **checkout** (``python run.py``, or an editable install,
``pip install -e .``: the packages sit beside ``pyproject.toml`` and ``conf/``) or from an
**installed copy** (``pip install .``: the packages sit in ``site-packages``, which the harness
never writes to).

=====================  ===========================================  ============================================
what                   checkout                                     installed copy
=====================  ===========================================  ============================================
configs                ``<checkout>/conf/`` (the source of truth)   ``experiments/conf/``, shipped in the wheel
relative results_dir   taken from ``<checkout>``                    taken from the current directory
Hydra's run folders    ``<results_dir>/hydra/`` (same root)         ``<results_dir>/hydra/`` (same root)
raw UCI downloads      ``<checkout>/data/raw/``                     ``<user cache>/data/raw/``
preprocessed cache     ``<checkout>/data/cache/``                   ``<user cache>/data/cache/``
=====================  ===========================================  ============================================

``<user cache>`` is the platform's cache folder for the harness (``platformdirs.user_cache_dir``:
``~/.cache/privpca`` on Linux); ``$PRIVPCA_CACHE_DIR`` names another preprocessed cache in either
case.  A record made from a checkout names its git commit; one made from an installed copy has
``git_commit: null`` and names its code by the installed distribution's version
(``versions.privpca``; :mod:`experiments.store.provenance`).

Importing this module registers the OmegaConf resolver ``privpca.results_root``, with which
``conf/config.yaml`` puts Hydra's run folders under the same root as the records.

This is a base module: it imports nothing from the rest of :mod:`experiments`, so that every room
may import it.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs
from omegaconf import OmegaConf

#: the distribution's name (its version is read with ``importlib.metadata``)
DISTRIBUTION = "privpca"
#: the folder of the ``experiments`` package
PACKAGE_DIR = Path(__file__).resolve().parent
#: the folder holding the packages: the checkout's root, or ``site-packages`` for an installed copy
SOURCE_ROOT = PACKAGE_DIR.parent
#: where a wheel ships the checkout's ``conf/`` (copied there when the wheel is built: setup.py)
SHIPPED_CONFIG_DIR = PACKAGE_DIR / "conf"
#: environment variable naming another preprocessed-data cache (the tests point it at a temporary one)
CACHE_ENV_VAR = "PRIVPCA_CACHE_DIR"
#: the name of the OmegaConf resolver that ``conf/config.yaml``'s Hydra run folders use
RESULTS_ROOT_RESOLVER = "privpca.results_root"


def checkout_root() -> Path | None:
    """The project's checkout the code runs from, or None for an installed copy.

    Returns
    -------
    pathlib.Path or None
        The folder above the ``experiments`` package when it holds the project's ``pyproject.toml``
        and ``conf/config.yaml`` (a clone, or an editable install of one); None otherwise.
    """
    if (SOURCE_ROOT / "pyproject.toml").is_file() and (
        SOURCE_ROOT / "conf" / "config.yaml"
    ).is_file():
        return SOURCE_ROOT
    return None


def is_checkout() -> bool:
    """Whether the code runs from the project's checkout (:func:`checkout_root`)."""
    return checkout_root() is not None


def config_dir() -> Path:
    """The folder of the Hydra configs: the checkout's ``conf/``, else the copy shipped in the wheel.

    Returns
    -------
    pathlib.Path
        ``<checkout>/conf`` when running from a checkout, ``experiments/conf`` of the installed
        copy otherwise.
    """
    root = checkout_root()
    return root / "conf" if root is not None else SHIPPED_CONFIG_DIR


def results_base() -> Path:
    """What a relative ``results_dir`` is taken from: the checkout's root, else the current directory."""
    root = checkout_root()
    return root if root is not None else Path.cwd()


def results_root(results_dir: str | os.PathLike) -> Path:
    """The results store ``results_dir`` names: an absolute path as it is, a relative one taken from
    :func:`results_base`.

    Parameters
    ----------
    results_dir : str or os.PathLike
        The ``results_dir`` setting.

    Returns
    -------
    pathlib.Path
        The folder where records (``records/``), Hydra's run folders (``hydra/``) and the drawn
        outputs go.
    """
    p = Path(results_dir)
    return p if p.is_absolute() else results_base() / p


def user_cache_root() -> Path:
    """The platform's cache folder for the harness (``~/.cache/privpca`` on Linux)."""
    return Path(platformdirs.user_cache_dir(DISTRIBUTION, appauthor=False))


def data_root() -> Path:
    """The folder of downloaded and preprocessed data: ``<checkout>/data``, else ``<user cache>/data``."""
    root = checkout_root()
    return (root if root is not None else user_cache_root()) / "data"


def raw_data_dir() -> Path:
    """Where raw UCI files are downloaded to (and looked up after ``$PRIVPCA_DATA_DIR``)."""
    return data_root() / "raw"


def default_cache_dir() -> Path:
    """The preprocessed-data cache when ``$PRIVPCA_CACHE_DIR`` is not set."""
    return data_root() / "cache"


def cache_dir() -> Path:
    """The preprocessed-data cache: ``$PRIVPCA_CACHE_DIR`` when set, else :func:`default_cache_dir`."""
    value = os.environ.get(CACHE_ENV_VAR)
    return Path(value).expanduser() if value else default_cache_dir()


def register_resolvers() -> None:
    """Register ``${privpca.results_root:<results_dir>}`` (:func:`results_root`, as a string) with
    OmegaConf, once; ``conf/config.yaml`` puts Hydra's run and sweep folders under it."""
    if not OmegaConf.has_resolver(RESULTS_ROOT_RESOLVER):
        OmegaConf.register_new_resolver(
            RESULTS_ROOT_RESOLVER, lambda results_dir: str(results_root(str(results_dir)))
        )


register_resolvers()
