"""DmaBuffer: an engine's DMA memory handed to the caller, used by the engine in place."""

from __future__ import annotations

import _thread  # its allocate_lock is threading.Lock, without threading's import
from typing import Any, Protocol

__all__ = ["DmaBuffer", "Lease", "as_plain", "claimed", "involved", "lease_of", "locate"]


class Owner(Protocol):
    """What a lease needs of the engine that lent the memory."""

    name: str

    def _give_back(self, lease: Lease) -> None: ...


class Lease:
    """One allocation of DMA memory lent to a caller: where it is, and whether a job uses it.

    ``claim()`` marks it in use by one operation (BufferError if another holds it) and
    ``release()`` ends that; ``pin()`` keeps it in use for good (the block may still write it
    after a ring that would not reset). ``detach()``: the engine closed; the memory stays the
    caller's, an ordinary buffer from then on.
    """

    __slots__ = ("_lock", "busy", "closed", "owner", "phys", "pinned", "size")

    def __init__(self, owner: Owner | None, phys: int, size: int) -> None:
        self.owner = owner
        self.phys = phys
        self.size = size
        self.busy = False
        self.pinned = False
        self.closed = False
        self._lock = _thread.allocate_lock()

    def claim(self) -> None:
        """Mark the buffer in use by one operation; BufferError if a job in flight uses it."""
        with self._lock:
            if self.closed:
                raise ValueError("the DmaBuffer is closed")
            if self.busy:
                raise BufferError(
                    "the DmaBuffer is busy: a job still in flight reads or writes it; reuse it "
                    "once that operation has returned"
                )
            self.busy = True

    def release(self) -> None:
        """The operation that claimed it is over (unless the block may still write it)."""
        with self._lock:
            if not self.pinned:
                self.busy = False

    def pin(self) -> None:
        """The block may still write it: busy for good, never given back to the pool."""
        with self._lock:
            self.pinned = self.busy = True

    def detach(self) -> None:
        """The lending engine closed: no engine uses the memory any more."""
        self.owner = None


class DmaBuffer:
    """Memory from an engine's DMA pool, handed to the caller (``engine.buffer(n)``).

    A writable bytes-like object (``memoryview(buf)``, ``len``, ``bytes(buf)``, ``buf[i]``,
    slice reads and writes): the engine that lent it points its jobs straight at it when an
    ``*_into`` call gets it as input or output, with no copy in or out. ``memoryview(buf)`` has
    ctypes' format ``<B``; ``.cast("B")`` gives plain bytes (what `cryptography` takes; the
    view still names the buffer as its ``obj``, so the engine still recognises it). A slice
    ``buf[a:b]`` is a DmaBuffer too: a window on the same memory, busy when any part is.

    ``close()`` (or leaving ``with``) gives the memory back to the pool, not wiped: the caller
    owns what is in it and wipes it if it must. A buffer that a job in flight uses refuses to
    close (BufferError), as it refuses a second job: nothing lets the device write into memory
    the pool handed to someone else. A buffer of an engine that was closed stays an ordinary
    buffer (the memory stays mapped while the buffer lives). Views taken with ``memoryview``
    outlive ``close()``: do not use them after it.
    """

    __slots__ = ()
    _lease: Lease
    _offset: int
    _window: bool

    def __init__(self) -> None:
        raise TypeError("DmaBuffers come from an engine: engine.buffer(n)")

    @staticmethod
    def _make(view: memoryview, lease: Lease, offset: int, window: bool) -> DmaBuffer:
        cls = _classes.get(len(view))
        if cls is None:
            import ctypes  # here: only an engine's buffers need it

            base: Any = ctypes.c_ubyte * len(view)
            cls = _classes.setdefault(
                len(view), type("DmaBuffer", (DmaBuffer, base), {"__slots__": ()})
            )
        buf = cls.from_buffer(view)
        buf._lease, buf._offset, buf._window = lease, offset, window
        return buf

    # -- what it is ----------------------------------------------------------------------------

    @property
    def phys(self) -> int:
        """The bus address of its first byte."""
        return self._lease.phys + self._offset

    @property
    def engine(self) -> str | None:
        """The name of the engine that lent it; None once that engine is closed."""
        owner = self._lease.owner
        return None if owner is None else owner.name

    @property
    def closed(self) -> bool:
        return self._lease.closed

    @property
    def busy(self) -> bool:
        """Whether a job in flight reads or writes it."""
        return self._lease.busy

    def __repr__(self) -> str:
        lease = self._lease
        owner = lease.owner
        state = " closed" if lease.closed else (" busy" if lease.busy else "")
        kind = "window of " if self._window else ""
        on = f"{owner.name}" if owner is not None else "a closed engine"
        return f"<DmaBuffer {kind}{len(self)} bytes on {on}{state}>"

    # -- bytes-like -----------------------------------------------------------------------------

    def _open(self) -> None:
        if self._lease.closed:
            raise ValueError("the DmaBuffer is closed")

    def __bytes__(self) -> bytes:
        self._open()
        return memoryview(self).tobytes()

    def __getitem__(self, key: int | slice) -> Any:
        self._open()
        if isinstance(key, slice):
            start, _, step = key.indices(len(self))
            view = memoryview(self).cast("B")[key]
            if step != 1:
                return view.tobytes()
            return DmaBuffer._make(view, self._lease, self._offset + start, True)
        return memoryview(self).cast("B")[key]

    def __setitem__(self, key: int | slice, value: Any) -> None:
        self._open()
        memoryview(self).cast("B")[key] = value

    # -- giving it back -------------------------------------------------------------------------

    def close(self) -> None:
        """Give the memory back to the pool (not wiped); BufferError while a job uses it. A
        window's close does nothing: the buffer it was cut from owns the memory."""
        if self._window:
            return
        lease = self._lease
        with lease._lock:
            if lease.closed:
                return
            if lease.busy:
                raise BufferError(
                    "the DmaBuffer is busy: a job in flight uses it; close it once that "
                    "operation has returned"
                )
            lease.closed = True
        owner = lease.owner
        if owner is not None:
            owner._give_back(lease)

    def __enter__(self) -> DmaBuffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_classes: dict[int, type] = {}


def locate(obj: Any, owner: object) -> tuple[Lease, int, int] | None:
    """(lease, bus address, length) when ``obj`` is a DmaBuffer of ``owner`` (or a contiguous
    writable byte view of one), open and still lent; None for anything else (an ordinary
    buffer, copied as any other)."""
    if isinstance(obj, DmaBuffer):
        lease = obj._lease
        if lease.owner is not owner or lease.closed:
            return None
        return lease, lease.phys + obj._offset, len(obj)
    if obj.__class__ is not memoryview:
        return None
    base = obj.obj
    if not isinstance(base, DmaBuffer) or obj.readonly or not obj.c_contiguous:
        return None
    lease = base._lease
    if lease.owner is not owner or lease.closed:
        return None
    n = obj.nbytes
    if not n:
        return lease, lease.phys + base._offset, 0
    import ctypes

    at = ctypes.addressof(ctypes.c_char.from_buffer(obj)) - ctypes.addressof(base)
    return lease, lease.phys + base._offset + at, n


def as_plain(obj: Any) -> Any:
    """``obj``, or a byte view of it when it is a DmaBuffer (`cryptography` and the checks
    want format ``B``; the view still leads back to the buffer)."""
    if isinstance(obj, DmaBuffer):
        if obj._lease.closed:
            raise ValueError("the DmaBuffer is closed")
        return memoryview(obj).cast("B")
    return obj


def lease_of(obj: Any) -> Lease | None:
    """The lease behind ``obj`` when it is a DmaBuffer or a view of one (any engine's)."""
    if isinstance(obj, DmaBuffer):
        return obj._lease
    if obj.__class__ is memoryview and isinstance(obj.obj, DmaBuffer):
        return obj.obj._lease
    return None


class claimed:
    """``with claimed(a, b):`` every DmaBuffer among the arguments (once each) in use by this
    operation until the block ends: BufferError at once if a job in flight uses one."""

    __slots__ = ("_leases",)

    def __init__(self, *objs: Any) -> None:
        leases: list[Lease] = []
        for obj in objs:
            lease = lease_of(obj)
            if lease is not None and lease not in leases:
                leases.append(lease)
        self._leases = leases

    def __enter__(self) -> None:
        done: list[Lease] = []
        try:
            for lease in self._leases:
                lease.claim()
                done.append(lease)
        except BaseException:
            for lease in done:
                lease.release()
            raise

    def __exit__(self, *exc: object) -> None:
        for lease in self._leases:
            lease.release()


def involved(*objs: Any) -> bool:
    """Whether any of ``objs`` is a DmaBuffer or a view of one."""
    return any(lease_of(obj) is not None for obj in objs)
