"""``python -m cryptoffload.caam.device``: run the CAAM model as a device over a shared file.

    python -m cryptoffload.caam.device --part t2080 --memory FILE --irq FD|PATH
        [--latency SECONDS] [--throughput BYTES_PER_S] [--pool SIZE] [--fault hang|noirq]

FILE is made (sparse) when it does not exist. --irq FD: an inherited AF_UNIX SOCK_SEQPACKET
socket; --irq PATH: a socket path the device listens on for one driver. The device runs until
that socket closes, its parent changes (SIGTERM from PDEATHSIG; it then removes the temporary
directory its parent made), or SIGTERM.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import shutil
import signal
import socket
import sys
import time

from cryptoffload.caam.device.layout import LAYOUTS, create, layout_for
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


def _orphan_cleanup(memory: str) -> None:
    """The parent died before it could stop us: remove the temporary directory it made for
    the device file (only one named as DeviceProcess names them)."""
    directory = os.path.dirname(os.path.abspath(memory))
    if os.path.basename(directory).startswith("caam-device-"):
        shutil.rmtree(directory, ignore_errors=True)


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


def _irq_socket(text: str) -> socket.socket:
    if text.isdigit():
        return socket.socket(fileno=int(text))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(text)
    listener.listen(1)
    conn, _ = listener.accept()
    listener.close()
    return conn


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
    except ValueError as exc:
        parser.error(str(exc))
    if not os.path.exists(args.memory):
        create(args.memory, layout)
    irq = _irq_socket(args.irq)
    device = Device(
        args.memory,
        layout,
        irq,
        timing=Timing(args.latency, args.throughput),
        faults=args.fault,
        parent=args.parent,
    )

    terminated = []

    def stop(signum: int, frame: object) -> None:
        terminated.append(signum)
        device.stop = True

    signal.signal(signal.SIGTERM, stop)
    try:
        device.serve()
    except KeyboardInterrupt:
        pass
    finally:
        irq.close()
        device.close()
        if args.parent is not None and _orphaned(args.parent, terminated):
            _orphan_cleanup(args.memory)
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
