"""After fork: tell every live engine that holds kernel or device state that it is in a child.

A child process inherits its parent's descriptors (AF_ALG sockets, /dev/crypto sessions) and
mappings (a CAAM job ring). Reusing them would mix the two processes' requests on one context,
and closing them the ordinary way could tear down what the parent still uses (a ring reset, a
freed session). Engines that hold such state call :func:`watch` once; in the child, each gets
``_after_fork_in_child()`` called before any other code runs, and decides there whether to
re-open lazily or to decline from then on. Nothing runs on the operation path.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from typing import Protocol


class ForkAware(Protocol):
    def _after_fork_in_child(self) -> None: ...


_watched: weakref.WeakSet[ForkAware] = weakref.WeakSet()


def watch(engine: ForkAware) -> None:
    """Call ``engine._after_fork_in_child()`` in every child forked while it is alive."""
    _watched.add(engine)


def _after_fork_in_child() -> None:
    for engine in list(_watched):
        # One engine's trouble must not stop the child; each hook is written not to raise.
        with contextlib.suppress(Exception):
            engine._after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)
