"""Names `cryptography` deprecates, mirrored: read quietly inside the package, and warned about,
as `cryptography` warns, each time user code reads them from the mirror module.

`cryptography` (51 and later) wraps a module that has deprecated names in
``cryptography.utils._ModuleWithDeprecations``: every read of such a name warns, importing the
module does not. The mirror follows the installed release name by name, so an older release
that deprecates nothing gives a mirror that warns about nothing.
"""

from __future__ import annotations

import types
import warnings
from typing import Any

from cryptography import utils as _utils

#: `cryptography`'s record of a deprecated value (absent in a release without it: no deprecation).
_DeprecatedValue: Any = getattr(_utils, "_DeprecatedValue", ())


def _inner(module: types.ModuleType) -> types.ModuleType:
    """The module behind `cryptography`'s deprecation wrapper (the module itself when unwrapped)."""
    return module.__dict__.get("_module", module)


def native(module: types.ModuleType, name: str) -> Any:
    """`cryptography`'s ``module.name``, read without the warning a deprecated name gives."""
    value = vars(_inner(module))[name]
    return value.value if isinstance(value, _DeprecatedValue) else value


def deprecated_in(module: types.ModuleType) -> dict[str, tuple[str, type[Warning]]]:
    """The names ``module`` warns about when read: name -> (message, warning class)."""
    return {
        name: (value.message, value.warning_class)
        for name, value in vars(_inner(module)).items()
        if isinstance(value, _DeprecatedValue)
    }


class DeprecatedNames:
    """The names of a mirror module that `cryptography` deprecates in its own module, served to
    readers with its message and warning class, ``stacklevel`` pointing at the reader."""

    def __init__(self, namespace: dict[str, Any], native_module: types.ModuleType) -> None:
        """Take each name ``native_module`` deprecates out of ``namespace`` (the mirror's globals),
        so that reading it reaches the ``__getattr__`` that :meth:`install` puts there."""
        self._moved = {
            name: (namespace.pop(name), message, category)
            for name, (message, category) in deprecated_in(native_module).items()
            if name in namespace
        }

    def install(self, namespace: dict[str, Any]) -> None:
        """Give the module of ``namespace`` these names (it may be a second path to them)."""
        module_name = namespace["__name__"]
        moved = self._moved

        def __getattr__(name: str) -> Any:
            try:
                value, message, category = moved[name]
            except KeyError:
                raise AttributeError(f"module {module_name!r} has no attribute {name!r}") from None
            warnings.warn(message, category, stacklevel=2)
            return value

        def __dir__() -> list[str]:
            return sorted({*namespace, *moved})

        namespace["__getattr__"] = __getattr__
        namespace["__dir__"] = __dir__
