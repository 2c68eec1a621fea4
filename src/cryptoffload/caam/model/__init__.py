"""A functional model of the CAAM / QorIQ SEC block: registers, job rings, DMA memory, DECOs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cryptoffload.caam.model.core import CaamModel

__all__ = ["CaamModel"]


def __getattr__(name: str) -> Any:
    # Loaded on first use, so that importing one piece of the model (memory, parts, deco ...)
    # does not pull in the whole register file and its job interpreter.
    if name == "CaamModel":
        from cryptoffload.caam.model.core import CaamModel

        return CaamModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
