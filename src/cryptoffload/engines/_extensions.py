"""Loading the optional compiled extensions (``core/_directpath.c``, ``engines/_contexts.c``):
none where the pure-Python twins are asked for, none where one is not built, none with a
warning where one was built from other sources."""

from __future__ import annotations

import importlib
import os
import warnings

#: `typing` is for type checkers only (its import loads `re`, a start-up cost).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def pure_python_wanted() -> bool:
    """Whether ``CRYPTOFFLOAD_PURE_PYTHON`` asks for the pure-Python twins (set, and not 0)."""
    return os.environ.get("CRYPTOFFLOAD_PURE_PYTHON", "") not in ("", "0")


def load_extension(name: str, api: int, instead: str) -> Any:
    """The compiled module ``name`` when its ``API`` is ``api``; else None: the pure-Python twins
    are asked for, it is not built (no compiler at install time, or built for another Python),
    or it was built from other sources (a RuntimeWarning says so, and that ``instead``)."""
    if pure_python_wanted():
        return None
    try:
        module = importlib.import_module(name)
    except ImportError:
        return None
    if getattr(module, "API", None) != api:
        warnings.warn(
            f"{name} ({getattr(module, '__file__', '?')}) was built from other sources than "
            f"this cryptoffload's: {instead}; reinstall to rebuild it",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    return module
