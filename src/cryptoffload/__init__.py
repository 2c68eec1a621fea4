"""cryptoffload: one crypto API over the machine's crypto engines, with software finishing the rest.

Every operation is offered to the engines a :class:`Provider` holds, in priority order; software
(OpenSSL through `cryptography`) completes whatever they decline or fail, with the same answer.
Counters on the provider say what was offloaded and why the rest was not.
"""

from __future__ import annotations

import importlib

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
