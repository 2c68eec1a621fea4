"""``python -m cryptoffload.caam.device``: run the CAAM model as a device over a shared file.

    python -m cryptoffload.caam.device --part t2080 --memory FILE --irq FD|PATH
        [--latency SECONDS] [--throughput BYTES_PER_S] [--pool SIZE] [--fault hang|noirq]

FILE is made (sparse) when it does not exist. --irq FD: an inherited AF_UNIX SOCK_SEQPACKET
socket; --irq PATH: a socket path the device listens on for one driver. The device runs until
that socket closes, its parent changes (SIGTERM from PDEATHSIG; it then removes the temporary
directory its parent made, wiped first when nobody else holds it: see ``workdir``), or SIGTERM.
A path given to --irq is removed once the driver connected (or the device stopped waiting).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import os
import signal
import socket
import stat
import sys
import time
from collections.abc import Iterator

from cryptoffload.caam.device import workdir
from cryptoffload.caam.device.layout import LAYOUTS, Layout, create, layout_for
from cryptoffload.caam.device.loop import FAULTS, Device
from cryptoffload.caam.device.timing import DEFAULT_LATENCY, DEFAULT_THROUGHPUT, Timing

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """SIGTERM when the parent exits (Linux prctl), where the C library has prctl."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _size(text: str) -> int:
    """Bytes from ``4096``, ``0x100000``, ``32m``, ``64k``, ``1g``."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower()
    try:
        if text and text[-1] in units:
            return int(text[:-1], 0) * units[text[-1]]
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 32m)") from None


class _Terminated(Exception):
    """SIGTERM before the device serves (waiting for a driver on --irq PATH)."""


class _Refused(Exception):
    """A --memory or --irq the device cannot use; the message says which and why."""


def _device_file(path: str, layout: Layout) -> bool:
    """Make the device file when it is missing (True: made now); _Refused for a path that
    cannot be one."""
    need = layout.end - layout.origin
    try:
        st = os.stat(path)
    except FileNotFoundError:
        try:
            create(path, layout)
        except OSError as exc:
            raise _Refused(
                f"--memory {path}: cannot make the device file: {exc.strerror}"
            ) from None
        return True
    except OSError as exc:
        raise _Refused(f"--memory {path}: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise _Refused(
            f"--memory {path} is a directory: give the device file's path (made when missing)"
        )
    if not stat.S_ISREG(st.st_mode):
        raise _Refused(f"--memory {path} is not a regular file")
    if st.st_size < need:
        raise _Refused(
            f"--memory {path} holds {st.st_size} bytes; a {layout.part} device with a "
            f"{layout.pool_size:#x}-byte pool needs {need:#x}: name a new file, it is made"
        )
    return False


@contextlib.contextmanager
def _sigterm_held() -> Iterator[None]:
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _irq_socket(text: str) -> socket.socket:
    """The inherited socket ``text`` names, or the first driver to connect at path ``text``
    (the socket file is removed once it connected, or when the wait ends otherwise)."""
    if text.isdigit():
        try:
            return socket.socket(fileno=int(text))
        except OSError as exc:
            raise _Refused(f"--irq {text}: not an open socket ({exc.strerror})") from None
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    bound = False
    try:
        with _sigterm_held():  # bound and known to be ours together, or neither
            try:
                listener.bind(text)
            except OSError as exc:
                raise _Refused(f"--irq {text}: cannot listen there: {exc.strerror}") from None
            bound = True
        listener.listen(1)
        conn, _ = listener.accept()
    finally:
        if bound:  # for one driver only: nobody else may connect
            with contextlib.suppress(FileNotFoundError):
                os.unlink(text)
        listener.close()
    return conn


def _device(args: argparse.Namespace, layout: Layout, irq: socket.socket) -> Device:
    try:
        return Device(
            args.memory,
            layout,
            irq,
            timing=Timing(args.latency, args.throughput),
            faults=args.fault,
            parent=args.parent,
        )
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        raise _Refused(f"--memory {args.memory}: cannot map the device file: {why}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cryptoffload.caam.device")
    parser.add_argument("--part", required=True, choices=sorted(LAYOUTS))
    parser.add_argument("--memory", required=True, help="the device file")
    parser.add_argument("--irq", required=True, help="socket fd, or a socket path to listen on")
    parser.add_argument("--latency", type=float, default=DEFAULT_LATENCY)
    parser.add_argument("--throughput", type=float, default=DEFAULT_THROUGHPUT)
    parser.add_argument("--pool", type=_size, default=None, help="pool size, 64 KiB steps (32m)")
    parser.add_argument("--parent", type=int, default=None, help="exit when the parent changes")
    parser.add_argument("--fault", action="append", default=[], choices=FAULTS)
    args = parser.parse_args(argv)
    if args.latency < 0 or args.throughput <= 0:
        parser.error("--latency must be 0 or more and --throughput above 0")
    _die_with_parent()
    if args.parent is not None and os.getppid() != args.parent:
        return 0  # the parent is already gone
    try:
        layout = layout_for(args.part, args.pool) if args.pool else layout_for(args.part)
        made = _device_file(args.memory, layout)
    except (ValueError, _Refused) as exc:
        parser.error(str(exc))
    held = workdir.hold(args.memory)
    terminated: list[int] = []
    device: Device | None = None
    irq: socket.socket | None = None
    refused = ""

    def stop(signum: int, frame: object) -> None:
        terminated.append(signum)
        if device is None:
            raise _Terminated
        device.stop = True

    try:
        signal.signal(signal.SIGTERM, stop)
        irq = _irq_socket(args.irq)
        device = _device(args, layout, irq)
        try:
            device.serve()
        finally:
            device.close()
    except _Refused as exc:
        refused = str(exc)
    except (_Terminated, KeyboardInterrupt):
        pass
    finally:
        signal.signal(signal.SIGTERM, lambda signum, frame: terminated.append(signum))
        if irq is not None:
            irq.close()
        if not refused and args.parent is not None and _orphaned(args.parent, terminated):
            workdir.leave(args.memory, held)
    if refused:
        if made:
            os.unlink(args.memory)
        parser.error(refused)
    return 0


def _orphaned(parent: int, terminated: list[int], wait: float = 2.0) -> bool:
    """Whether the parent died. A dying parent closes our socket before the kernel hands us to
    a new parent, so after the socket's end the parent id may still be the old one for a while:
    wait for it to change, unless the parent itself asked us to stop (SIGTERM while it is still
    our parent: it removes the directory)."""
    deadline = time.monotonic() + wait
    while os.getppid() == parent:
        if terminated or time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


if __name__ == "__main__":
    sys.exit(main())
