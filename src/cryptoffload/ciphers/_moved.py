"""Names `cryptography` still keeps at a path with a deprecation warning, handed over as it does."""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable, Iterable
from typing import Any


def forwarder(theirs: types.ModuleType, moved: Iterable[str], module: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` that gives ``moved`` names from ``theirs`` and repeats the
    warning `cryptography` gives for them at the caller's line (not at this module's)."""
    names = frozenset(moved)

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = getattr(theirs, name)
        for warning in caught:
            warnings.warn(warning.message, warning.category, stacklevel=2)
        return value

    return __getattr__
