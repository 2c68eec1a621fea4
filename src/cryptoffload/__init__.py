"""cryptoffload: one crypto API over the machine's crypto engines, with software finishing the rest.

Every operation is offered to the engines a :class:`Provider` holds, in priority order; software
(OpenSSL through `cryptography`) completes whatever they decline or fail, with the same answer.
Counters on the provider say what was offloaded and why the rest was not.
"""

from __future__ import annotations

import importlib
import sys

#: `typing` is for type checkers only: importing it loads `re`, a cost `run` pays at start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from cryptoffload.core.policy import Policy
    from cryptoffload.core.provider import (
        Provider,
        current,
        default_provider,
        set_default_provider,
        using,
    )
    from cryptoffload.dmabuffer import DmaBuffer
    from cryptoffload.errors import (
        CryptoffloadError,
        EngineError,
        InvalidSignature,
        InvalidTag,
        OffloadRequired,
        Unavailable,
        UnknownEngine,
    )

#: The package's names and the modules that define them, loaded at first use: `run` and the
#: processes it starts import this package first, and must start without the provider, its
#: engines and `cryptography` until the program asks for crypto.
_LAZY = {
    "DmaBuffer": "cryptoffload.dmabuffer",
    **dict.fromkeys(
        (
            "CryptoffloadError",
            "EngineError",
            "InvalidSignature",
            "InvalidTag",
            "OffloadRequired",
            "Unavailable",
            "UnknownEngine",
        ),
        "cryptoffload.errors",
    ),
    "Policy": "cryptoffload.core.policy",
    **dict.fromkeys(
        ("Provider", "current", "default_provider", "set_default_provider", "using"),
        "cryptoffload.core.provider",
    ),
}


#: The machinery's old paths (``cryptoffload.ops``, ``cryptoffload.provider``, ...) and where each
#: module lives now, under ``cryptoffload.core``: third-party engines and programs import the old
#: ones, which give the very same module, so isinstance checks and module state hold.
_MOVED_TO_CORE = {
    f"{__name__}.{name}": f"{__name__}.core.{name}"
    for name in (
        "_log",
        "adaptive",
        "asyncio_lane",
        "counters",
        "crosscheck",
        "directpath",
        "lane",
        "names",
        "ops",
        "policy",
        "provider",
        "validate",
    )
}

#: A moved module's own spec, kept while the import system sets the old path's on it.
_OWN_SPECS: dict[str, Any] = {}


class _MovedModuleFinder:
    """On ``sys.meta_path``: imports an old path of ``_MOVED_TO_CORE`` as its core module."""

    @staticmethod
    def find_spec(fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in _MOVED_TO_CORE:
            return None
        from importlib.machinery import ModuleSpec

        return ModuleSpec(fullname, _MovedModuleFinder)

    @staticmethod
    def create_module(spec: Any) -> Any:
        module = importlib.import_module(_MOVED_TO_CORE[spec.name])
        _OWN_SPECS[spec.name] = module.__spec__
        return module

    @staticmethod
    def exec_module(module: Any) -> None:
        # The import system has just set the old path's spec on the module: it keeps its own.
        module.__spec__ = _OWN_SPECS.pop(module.__spec__.name)


# Last, so that it is asked only for names no other finder has (first, each import of the
# process would pay a call); no file at an old path may be left to be found before it (a test
# checks). A reload of the package replaces the finder.
sys.meta_path[:] = [
    f for f in sys.meta_path if getattr(f, "__qualname__", "") != "_MovedModuleFinder"
]
sys.meta_path.append(_MovedModuleFinder)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    elif name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    else:  # a submodule, as `cryptoffload.provider` was once `import cryptoffload` had run
        try:
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__version__ = "0.1.0"


def install(engines=None, *, only=None, policy=None, tls=False):  # type: ignore[no-untyped-def]
    """Offload this process's `cryptography` imports, and with ``tls`` its ``ssl`` records to
    the kernel (``cryptoffload.tools.install.install``)."""
    from cryptoffload.tools.install import install as _install

    return _install(engines, only=only, policy=policy, tls=tls)


def uninstall() -> None:
    """Undo :func:`install` for imports made from now on."""
    from cryptoffload.tools.install import uninstall as _uninstall

    _uninstall()


__all__ = [
    "CryptoffloadError",
    "DmaBuffer",
    "EngineError",
    "InvalidSignature",
    "InvalidTag",
    "OffloadRequired",
    "Policy",
    "Provider",
    "Unavailable",
    "UnknownEngine",
    "__version__",
    "current",
    "default_provider",
    "install",
    "set_default_provider",
    "uninstall",
    "using",
]
