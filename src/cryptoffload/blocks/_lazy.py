"""A module imported at the first read of one of its names (the bottom layer's, so that any may
use it): for modules that only some operations need, whose import a start-up would pay."""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class LazyModule:
    """Stands for the module ``name``: imports it at the first attribute read, and keeps each
    name read (later reads are plain attribute reads, as of the module itself)."""

    def __init__(self, name: str) -> None:
        self.__dict__["_lazy_name"] = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        value = getattr(importlib.import_module(self.__dict__["_lazy_name"]), attr)
        self.__dict__[attr] = value
        return value

    def __repr__(self) -> str:
        return f"<module {self.__dict__['_lazy_name']!r}, imported at first use>"
