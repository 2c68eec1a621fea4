"""An interrupt line as a file descriptor, UIO's protocol: read 4 bytes (the event count) when it
fires, write a 4-byte 1 to enable it again. One class for a board's /dev/uioN and for the
device process's socket."""

from __future__ import annotations

import contextlib
import errno
import os
import select
import struct

from cryptoffload.caam.jr.jobs import DeviceLost

__all__ = ["Irq", "IrqGone", "drain", "nudge"]

_ONE = struct.pack("=I", 1)


class IrqGone(DeviceLost):
    """The interrupt's fd reached its end: the device behind it is gone."""


class Irq:
    """The interrupt line behind ``fd`` (closed by ``close`` when ``owns``)."""

    def __init__(self, fd: int, *, name: str = "irq", owns: bool = True) -> None:
        self.fd, self.name, self._owns = fd, name, owns
        os.set_blocking(fd, False)  # another thread may read the event first
        self.count = 0  # the last event count read

    @classmethod
    def uio(cls, path: str) -> Irq:
        """The interrupt of UIO device ``path`` (/dev/uioN), opened read-write."""
        return cls(os.open(path, os.O_RDWR), name=path)

    def __repr__(self) -> str:
        return f"Irq({self.name!r}, fd={self.fd})"

    def fileno(self) -> int:
        return self.fd

    def wait(self, timeout: float | None, wake: int | None = None) -> bool:
        """Block up to ``timeout`` seconds (None: for ever) for the interrupt; True when it
        fired (the line is then off until ``enable``); IrqGone when the fd ended. ``wake``: a
        fd that ends the wait early when readable (drained, False unless the interrupt fired
        too)."""
        fds = [self.fd] if wake is None else [self.fd, wake]
        try:
            readable, _, _ = select.select(fds, [], [], timeout)
        except InterruptedError:
            return False
        if wake is not None and wake in readable:
            drain(wake)
        if self.fd not in readable:
            return False
        try:
            data = os.read(self.fd, 4)
        except BlockingIOError:
            return False
        except OSError as exc:
            if exc.errno == errno.EINTR:
                return False
            raise IrqGone(f"{self.name}: {exc.strerror}") from None
        if len(data) < 4:
            raise IrqGone(f"{self.name}: the interrupt's fd closed (the device is gone)")
        self.count = struct.unpack("=I", data)[0]
        return True

    def enable(self) -> None:
        """Enable the line again (after it fired)."""
        try:
            os.write(self.fd, _ONE)
        except BlockingIOError:
            pass  # the other side has not read our last ones: it will see this one's effect
        except OSError as exc:
            raise IrqGone(f"{self.name}: {exc.strerror}") from None

    def close(self) -> None:
        if self._owns and self.fd >= 0:
            os.close(self.fd)
        self.fd = -1


def nudge(fd: int) -> None:
    """Make ``fd`` (a non-blocking pipe's write end) readable at its other end."""
    with contextlib.suppress(BlockingIOError):  # full: readable already
        os.write(fd, b"\0")


def drain(fd: int) -> None:
    """Read what is waiting on ``fd`` (a non-blocking pipe's read end)."""
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass
