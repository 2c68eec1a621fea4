"""Zero-copy input for AF_ALG: vmsplice the caller's pages into a pipe, splice them to the socket.

The standard library has ``os.splice`` but not ``vmsplice``; that one call goes through ctypes.
Without it (not Linux, no libc symbol) :data:`AVAILABLE` is False and callers send with
``sendmsg`` as before.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import os
from typing import Any

SPLICE_F_MORE = getattr(os, "SPLICE_F_MORE", 4)
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


@functools.cache
def _vmsplice() -> Any:
    """libc's vmsplice, or None; looked up at first need: finding libc (ctypes.util, which runs
    ldconfig) is not for every program that builds an engine list."""
    if not hasattr(os, "splice"):
        return None
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.vmsplice
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.POINTER(_IoVec), ctypes.c_ulong, ctypes.c_uint]
    fn.restype = ctypes.c_ssize_t
    return fn


def __getattr__(name: str) -> Any:
    if name == "AVAILABLE":  # whether vmsplice can be called here
        return _vmsplice() is not None
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def address_of(data: Any) -> int:
    """The address of a bytes object's or a writable buffer's first byte (kept alive by the
    caller); TypeError for other read-only buffers, which need a copy to be spliced."""
    if isinstance(data, bytes):
        return ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0
    view = memoryview(data)
    if view.readonly or not view.c_contiguous:
        raise TypeError("only bytes and writable contiguous buffers can be spliced")
    if view.nbytes == 0:
        return 0
    return ctypes.addressof(ctypes.c_char.from_buffer(view.cast("B")))


class SplicePipe:
    """One pipe sized to hold a whole request; used by one thread at a time."""

    def __init__(self, size: int) -> None:
        self.read_fd, self.write_fd = os.pipe()
        try:
            fcntl.fcntl(self.write_fd, _F_SETPIPE_SZ, size)
        except OSError:
            self.close()
            raise
        self.size = size

    def send(self, sock_fd: int, data: Any, start: int = 0, stop: int | None = None) -> None:
        """Move ``data[start:stop]`` into ``sock_fd`` without copying it; the last piece ends
        the request (no SPLICE_F_MORE)."""
        base = address_of(data)
        vmsplice = _vmsplice()
        stop = len(data) if stop is None else stop
        done = start
        while done < stop:
            iov = _IoVec(base + done, min(stop - done, self.size))
            moved = vmsplice(self.write_fd, ctypes.byref(iov), 1, 0)
            if moved <= 0:
                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err) if err else "vmsplice moved nothing")
            done += moved
            left = moved
            while left:
                flags = SPLICE_F_MORE if done < stop else 0
                sent = os.splice(self.read_fd, sock_fd, left, flags=flags)
                if sent <= 0:
                    raise OSError(0, "splice to the socket moved nothing")
                left -= sent

    def close(self) -> None:
        """Close both ends."""
        for fd in (self.read_fd, self.write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
