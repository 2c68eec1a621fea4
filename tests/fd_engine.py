"""A test engine with a real completion fd: started ops done by a worker thread, which signals a
pipe; ``service`` settles them on the loop's thread. Proves the asyncio layer without a CAAM."""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections import deque
from typing import Any

from doubles import TakeAllEngine

from cryptoffload.engines.pending import Pending
from cryptoffload.errors import Unavailable


class FdEngine(TakeAllEngine):
    """Takes every op it claims (software's answers), by ``run`` or ``start``.

    ``decline``: op kinds it declines at once (``start``/``run`` raise Unavailable);
    ``busy``: kinds it declines after starting (the Pending ends with Unavailable "busy");
    ``fault``: kinds it fails (RuntimeError). ``gate`` held closed keeps started ops in flight.
    """

    def __init__(
        self,
        name: str = "fdengine",
        algorithms: Any = None,
        *,
        decline: tuple[str, ...] = (),
        busy: tuple[str, ...] = (),
        fault: tuple[str, ...] = (),
    ) -> None:
        super().__init__(name, algorithms)
        self.decline, self.busy, self.fault = decline, busy, fault
        self.gate = threading.Event()
        self.gate.set()
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        self._todo: queue.Queue[Any] = queue.Queue()
        self._done: deque[tuple[Pending, bool, Any]] = deque()
        self._lock = threading.Lock()
        self.started = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.services = 0
        self.service_threads: set[int] = set()
        self._worker = threading.Thread(target=self._work, daemon=True)
        self._worker.start()

    def _outcome(self, op: Any) -> Any:
        if op.kind in self.fault:
            raise RuntimeError("device fault")
        if op.kind in self.busy:
            raise Unavailable("busy", "the queue filled")
        return super().run(op)

    def run(self, op: Any) -> Any:
        if op.kind in self.decline:
            raise Unavailable("unsupported", op.kind)
        return self._outcome(op)

    def start(self, op: Any) -> Pending:
        if op.kind in self.decline:
            raise Unavailable("unsupported", op.kind)
        pending = Pending()
        with self._lock:
            self.started += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self._todo.put((op, pending))
        return pending

    def completion_fd(self) -> int:
        return self._read

    def service(self) -> None:
        self.services += 1
        self.service_threads.add(threading.get_ident())
        with contextlib.suppress(BlockingIOError):
            os.read(self._read, 4096)
        while self._done:
            pending, ok, value = self._done.popleft()
            with self._lock:
                self.in_flight -= 1
            if ok:
                pending.set_result(value)
            else:
                pending.set_exception(value)

    def _work(self) -> None:
        while True:
            item = self._todo.get()
            if item is None:
                return
            op, pending = item
            self.gate.wait()
            try:
                outcome = (pending, True, self._outcome(op))
            except Exception as exc:
                outcome = (pending, False, exc)
            self._done.append(outcome)
            del item, op, pending, outcome  # hold no op or Pending while idle
            os.write(self._write, b"x")

    def close(self) -> None:
        self._todo.put(None)
        self.gate.set()
        self._worker.join(5)
        os.close(self._read)
        os.close(self._write)
