"""The driver's bookkeeping: its errors, jobs in flight, requests, the shared-descriptor cache."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Sequence
from itertools import repeat, starmap
from typing import NamedTuple, Protocol

from cryptoffload.caam import status
from cryptoffload.caam.status import Status

__all__ = [
    "FLUSHED",
    "CaamError",
    "CaamUnavailable",
    "DeviceLost",
    "Job",
    "Request",
    "RingFull",
    "RingTimeout",
    "SharedCache",
    "SharedEntry",
    "Tally",
    "check",
]

#: The status of a job the ring's reset released: what every job caught in a reset ends with.
FLUSHED = status.deco(status.DECO_JRRESET)

Out = int | bytearray | memoryview


class CaamError(Exception):
    """A job, or the ring under it, failed; ``status`` is the job's status word."""

    def __init__(self, word: int, message: str | None = None) -> None:
        self.status = word
        text = str(Status(word))
        super().__init__(text if message is None else f"{message}: {text}")


class RingTimeout(CaamError):
    """The job did not complete in time: the ring was taken as stalled, reset and re-armed."""


class RingFull(RuntimeError):
    """No slot on the ring, and none freed in time: the job was never submitted (busy)."""


class CaamUnavailable(RuntimeError):
    """The block cannot be driven: no SEC (non-E part), no such ring, a ring stuck in reset."""


class DeviceLost(CaamUnavailable):
    """The block stopped answering while in use (the device process died, its fd closed)."""


def check(word: int) -> int:
    """``word`` when it is 0, else CaamError."""
    if word:
        raise CaamError(word)
    return word


class Request(NamedTuple):
    """One job for ``submit_many``: its words, regions freed when it is reaped, regions read back
    at completion (``(phys, n)`` gives bytes, ``(phys, buffer)`` fills the buffer)."""

    words: Sequence[int]
    owned: Sequence[int] = ()
    collect: Sequence[tuple[int, Out]] = ()


class Waiter(Protocol):
    """What a job needs of its driver: a wait for the job's completion (the driver's lock held),
    and that lock (under which jobs complete), for ``add_done_callback``."""

    _lock: threading.Lock

    def _wait(self, job: Job, timeout: float | None) -> None: ...


class Job:
    """A submitted job; ``wait()`` gives its status word once the driver has reaped it.

    ``outputs``: the ``collect`` regions read at completion when the status is 0 (empty
    otherwise: nothing a failed job wrote is handed on). ``add_done_callback(fn)`` has
    ``fn(job)`` called once the job is done (reaped, failed by a reset, or the ring broken).
    """

    __slots__ = (
        "callbacks",
        "collect",
        "desc",
        "driver",
        "error",
        "outputs",
        "owned",
        "shared",
        "status",
    )

    def __init__(
        self, driver: Waiter, owned: Sequence[int] = (), collect: Sequence[tuple[int, Out]] = ()
    ) -> None:
        self.driver = driver
        self.owned = owned
        self.collect = collect
        self.desc = 0  # its descriptor's address, the key its completion comes back with
        self.status: int | None = None
        self.error: BaseException | None = None
        self.outputs: list[bytes | bytearray | memoryview] = []
        self.shared: SharedEntry | None = None
        #: What ``add_done_callback`` was given, until the job is done (then None again).
        self.callbacks: list[Callable[[Job], object]] | None = None

    def __repr__(self) -> str:
        state = "pending" if not self.done else f"status=0x{self.status or 0:08x}"
        if self.error is not None:
            state = f"error={self.error!r}"
        return f"<Job desc=0x{self.desc:x} {state}>"

    @property
    def done(self) -> bool:
        return self.status is not None or self.error is not None

    def add_done_callback(self, fn: Callable[[Job], object]) -> None:
        """Call ``fn(job)`` once the job is done: at once (on this thread) if it already is,
        else on the thread that reaps or fails it, after that thread released the driver's
        lock (``poll``, a ``wait``, a submit that waited for room, ``close``). Each callback
        runs once and is dropped then: a job keeps no reference to it after it is done."""
        with self.driver._lock:
            if self.status is None and self.error is None:
                if self.callbacks is None:
                    self.callbacks = [fn]
                else:
                    self.callbacks.append(fn)
                return
        fn(self)

    def wait(self, timeout: float | None = None) -> int:
        """The status word; CaamError (RingTimeout...) when the ring, not the job, failed."""
        if self.status is None and self.error is None:
            self.driver._wait(self, timeout)
        if self.error is not None:
            raise self.error
        return self.status  # type: ignore[return-value]

    def result(self, timeout: float | None = None) -> list[bytes | bytearray | memoryview]:
        """The collected outputs; CaamError for any status but 0."""
        check(self.wait(timeout))
        return self.outputs


class Tally(deque[int]):
    """A byte count any thread adds to without a lock: ``append(n)`` is deque's own (atomic, no
    Python call); ``total()`` folds what is pending under a lock. Whoever appends calls
    ``total()`` now and then (past ``FOLD_AT`` pending) to keep the deque short."""

    FOLD_AT = 4096

    def __init__(self) -> None:
        super().__init__()
        self._total = 0
        self._lock = threading.Lock()

    def total(self) -> int:
        with self._lock:
            self._total += sum(starmap(self.popleft, repeat((), len(self))))
            return self._total


class SharedEntry:
    """A shared descriptor in DMA memory; freed once evicted and no job can still use it."""

    __slots__ = ("handed", "phys", "pins", "refs", "retired", "size")

    def __init__(self, phys: int, size: int) -> None:
        self.phys = phys
        self.size = size
        self.pins = 0  # handed out by shared() and not yet seen in a submitted job's header
        self.refs = 0  # jobs in flight whose header points at it
        self.handed = 0.0  # when shared() last handed it out (monotonic seconds)
        self.retired = False

    @property
    def idle(self) -> bool:
        return not self.pins and not self.refs


class SharedCache:
    """Shared descriptors by key, least recently used evicted past ``capacity``.

    An evicted descriptor stays in memory while a job in flight points at it (a job uses it
    through its header's SHARED pointer), and while a caller holds its address from ``shared()``
    without having submitted the job that uses it; a caller that never does (it failed between
    the two) holds it for ``grace`` seconds at most after its last hand-out. Not thread-safe:
    the driver's lock covers it.
    """

    def __init__(
        self,
        capacity: int,
        *,
        grace: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"shared descriptor capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self.grace = grace
        self.clock = clock
        self.by_key: OrderedDict[Hashable, SharedEntry] = OrderedDict()
        self.by_phys: dict[int, SharedEntry] = {}
        self.retired: list[SharedEntry] = []
        self.builds = 0
        self.hits = 0

    def get(self, key: Hashable) -> SharedEntry | None:
        """The entry under ``key``, handed out (pinned) to the caller; None on a miss."""
        entry = self.by_key.get(key)
        if entry is not None:
            self.by_key.move_to_end(key)
            self.hits += 1
            entry.pins += 1
            entry.handed = self.clock()
        return entry

    def add(self, key: Hashable, entry: SharedEntry) -> list[SharedEntry]:
        """Insert, handed out; returns the entries that can be freed now (evicted ones no job
        and no caller needs, and retired ones whose callers' grace ran out)."""
        self.builds += 1
        entry.pins = 1
        entry.handed = now = self.clock()
        self.by_key[key] = entry
        self.by_phys[entry.phys] = entry
        while len(self.by_key) > self.capacity:
            _, old = self.by_key.popitem(last=False)
            old.retired = True
            self.retired.append(old)
        freeable = [
            e for e in self.retired if not e.refs and (not e.pins or now - e.handed > self.grace)
        ]
        for e in freeable:
            self.forget(e)
        return freeable

    def forget(self, entry: SharedEntry) -> None:
        """Drop a retired entry about to be freed."""
        del self.by_phys[entry.phys]
        self.retired.remove(entry)

    def all(self) -> list[SharedEntry]:
        """Every entry still in memory, cached or retired."""
        return list(self.by_phys.values())

    def clear(self) -> None:
        self.by_key.clear()
        self.by_phys.clear()
        self.retired.clear()
