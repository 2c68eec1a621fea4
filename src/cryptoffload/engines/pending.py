"""Pending: an operation an engine started (``start(op)``) and completes later, from any thread."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Pending"]

log = logging.getLogger("cryptoffload")


class Pending:
    """The outcome of a started operation: ``done()``, ``result()`` and ``add_done_callback``.

    The engine settles it once with :meth:`set_result` or :meth:`set_exception`, from any thread
    (the outcome as ``run`` would give it: a result, ``Unavailable`` to decline, ``InvalidTag``
    and the like as answers, anything else a fault). ``wait``, when given, is what makes the
    operation progress for a caller that blocks in :meth:`result` where nothing else would (a
    driver polled rather than serviced from a completion fd): it is called before blocking.
    """

    __slots__ = (
        "__weakref__",
        "_callbacks",
        "_error",
        "_event",
        "_lock",
        "_result",
        "_settled",
        "_wait",
    )

    def __init__(self, wait: Callable[[], object] | None = None) -> None:
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._settled = False
        self._result: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Pending], object]] | None = None
        self._wait = wait

    def __repr__(self) -> str:
        if not self._settled:
            return "<Pending running>"
        if self._error is not None:
            return f"<Pending failed {type(self._error).__name__}>"
        return "<Pending done>"

    @classmethod
    def completed(cls, value: Any) -> Pending:
        """A Pending already settled with ``value``."""
        pending = cls()
        pending.set_result(value)
        return pending

    @classmethod
    def failed(cls, error: BaseException) -> Pending:
        """A Pending already settled with ``error``."""
        pending = cls()
        pending.set_exception(error)
        return pending

    def done(self) -> bool:
        """Whether the outcome is known."""
        return self._settled

    def result(self, timeout: float | None = None) -> Any:
        """The result, raising what ``run`` would have raised; blocks until it is settled
        (TimeoutError after ``timeout`` seconds, if given)."""
        if not self._settled and self._wait is not None:
            try:
                self._wait()
            except Exception:
                if not self._settled:  # the wait failed without settling: that is the outcome
                    raise
        if not self._event.wait(timeout):
            raise TimeoutError("the operation is still running")
        if self._error is not None:
            raise self._error
        return self._result

    def add_done_callback(self, fn: Callable[[Pending], object]) -> None:
        """Call ``fn(pending)`` once settled: at once if it is, else on the settling thread.
        Each callback runs once and is dropped then."""
        with self._lock:
            if not self._settled:
                if self._callbacks is None:
                    self._callbacks = [fn]
                else:
                    self._callbacks.append(fn)
                return
        fn(self)

    def set_result(self, value: Any) -> None:
        """Settle with a result (RuntimeError if already settled)."""
        self._settle(value, None)

    def set_exception(self, error: BaseException) -> None:
        """Settle with the exception the operation ended with (RuntimeError if settled)."""
        self._settle(None, error)

    def _settle(self, value: Any, error: BaseException | None) -> None:
        with self._lock:
            if self._settled:
                raise RuntimeError("a Pending is settled once")
            self._result, self._error = value, error
            self._settled = True
            callbacks, self._callbacks = self._callbacks, None
            self._wait = None
        self._event.set()
        for fn in callbacks or ():
            try:
                fn(self)
            except Exception:
                log.exception("a Pending's done callback raised")
