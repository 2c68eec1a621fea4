"""The package's logger ("cryptoffload"), with logging imported at the first message: its import
is a tenth of a short program's start-up under `run`, and most programs log nothing."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The logger's name: configure it with ``logging.getLogger("cryptoffload")``.
NAME = "cryptoffload"


class _Logger:
    """Stands for ``logging.getLogger(NAME)``: every attribute is the logger's, looked up then."""

    __slots__ = ()

    def __getattr__(self, attr: str) -> Any:
        import logging

        return getattr(logging.getLogger(NAME), attr)

    def __repr__(self) -> str:
        return f"<the {NAME!r} logger, loaded at first use>"


log: Any = _Logger()
