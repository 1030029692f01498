"""tqdm progress bars that stay quiet in CI and in logs."""

from __future__ import annotations

import os
import sys

from tqdm.auto import tqdm


def progress_enabled(enable: bool | None = None) -> bool:
    """``enable=None`` (auto): on for an interactive terminal, off when ``CI`` is set or stderr is not a TTY."""
    if enable is not None:
        return bool(enable)
    if os.environ.get("CI"):
        return False
    return sys.stderr.isatty()


def progress_bar(
    total: int | None = None, desc: str = "", enable: bool | None = None, **kwargs
) -> tqdm:
    return tqdm(
        total=total,
        desc=desc,
        disable=not progress_enabled(enable),
        dynamic_ncols=True,
        unit="run",
        **kwargs,
    )
