"""What a direct-path test looks at: the Python functions of cryptoffload an operation runs, and
software's counters."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import cryptoffload
from cryptoffload import Provider

OURS = os.path.dirname(cryptoffload.__file__)


def ours_run(fn: Callable[[], Any]) -> list[str]:
    """The Python functions of cryptoffload that ``fn()`` runs (qualified names, in order)."""
    seen: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(OURS):
            seen.append(frame.f_code.co_qualname)

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen


def software(provider: Provider, alg: str) -> dict:
    """Software's counter cell for ``alg`` in ``provider`` ({} if it did none)."""
    return provider.counters.snapshot()["software"].get(alg, {})
