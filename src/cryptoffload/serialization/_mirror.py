"""Re-exporting a `cryptography` module's public names, for the serialization submodules that
mirror one and replace only what takes or gives keys."""

from __future__ import annotations

import types
from typing import Any


def public_names(module: types.ModuleType) -> dict[str, Any]:
    """Every public name of ``module`` (the submodules it imports aside)."""
    return {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }


def native(key: Any) -> Any:
    """``key`` as `cryptography`'s own object where it goes to `cryptography`'s code (ours have
    ``to_cryptography``); anything else as it is."""
    to_cryptography = getattr(type(key), "to_cryptography", None)
    return key.to_cryptography() if to_cryptography is not None else key


def fallback(module: types.ModuleType) -> Any:
    """A module ``__getattr__`` that answers, from `cryptography`'s ``module``, every name the
    mirror does not define (its private helpers, names a newer `cryptography` adds)."""

    def __getattr__(name: str) -> Any:
        try:
            return getattr(module, name)
        except AttributeError:
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None

    return __getattr__
