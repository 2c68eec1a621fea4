"""CPU accounting of a row: wall, user and sys seconds, and what their shares say."""

from __future__ import annotations

from typing import Any


def reading(wall: float, user: float, sys: float) -> str:
    """The i.MX article's reading of a real/user/sys line.

    user close to wall: the core did the crypto; sys close to wall: the kernel did it in
    software; user + sys far below wall: the thread waited while a device worked.
    """
    if wall <= 0:
        return "no time measured"
    busy = (user + sys) / wall
    if busy < 0.5:
        return "offloaded, core mostly idle"
    if sys >= 0.5 * wall:
        return "kernel software"
    if user >= 0.5 * wall:
        return "core busy"
    return "mixed"


def accounting(wall: float, user: float, sys: float) -> dict[str, Any]:
    """The numbers of a row's CPU use, for the report."""
    return {
        "wall": round(wall, 4),
        "user": round(user, 4),
        "sys": round(sys, 4),
        "cpu_share": round((user + sys) / wall, 3) if wall > 0 else None,
        "reading": reading(wall, user, sys),
    }
