"""Start and stop the device process, and reach it: the board transport over its file.

``DeviceProcess.start(part)`` makes a temporary directory with the device file, starts
``python -m cryptoffload.caam.device`` on it with one end of a socket pair as its interrupt
line, and waits until it serves. ``transport()`` is the board's transport pointed at the file
(``Paths(dev_mem=FILE, mem_origin=...)``: ``reserved_pool``, the RegisterMap with posted
writes) with the interrupt as ``transport.irq``. ``stop()`` ends the process by its pid
(SIGTERM, then SIGKILL) and removes the directory; it also runs at interpreter exit, never in a
forked child (the device is the parent's). The child dies with its parent: PDEATHSIG, a check
of its parent pid, and the socket's end. A start first sweeps the directories that a caller
and its device killed together left (``workdir``: their lock is held by nobody).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import weakref
from pathlib import Path
from typing import Any

import cryptoffload
from cryptoffload.caam.device import workdir
from cryptoffload.caam.device.layout import CONTROL_SIZE, Control, Layout, create, layout_for
from cryptoffload.caam.device.posted import DeviceGone, PostedRegisterMap
from cryptoffload.caam.device.timing import DEFAULT_TIMING, Timing
from cryptoffload.caam.jr.boards import BoardTransport, Paths, _Mapping, reserved_pool
from cryptoffload.caam.jr.irq import Irq
from cryptoffload.caam.model.parts import PARTS

__all__ = ["DeviceProcess", "DeviceTransport"]

_DOORBELL = b"\0\0\0\0"
START_TIMEOUT = 30.0


def _shm_dir() -> str | None:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def _remove(directory: str, lock: int) -> None:
    shutil.rmtree(directory, ignore_errors=True)
    os.close(lock)


def _stop(pid: int, owner: int, proc: subprocess.Popen[bytes], directory: str, lock: int) -> None:
    if os.getpid() != owner:  # a forked child: the device is its parent's
        return
    if proc.poll() is None:
        try:
            os.kill(pid, signal.SIGTERM)
            proc.wait(2.0)
        except subprocess.TimeoutExpired:
            os.kill(pid, signal.SIGKILL)
            proc.wait(2.0)
        except ProcessLookupError:
            pass
    _remove(directory, lock)


class DeviceProcess:
    """A running device process of ``layout.part``; see the module docstring."""

    def __init__(
        self,
        layout: Layout,
        *,
        timing: Timing = DEFAULT_TIMING,
        faults: tuple[str, ...] = (),
        directory: str | None = None,
    ) -> None:
        self.layout, self.timing, self.faults = layout, timing, faults
        base = directory or _shm_dir()
        workdir.sweep(base)  # what devices killed with their callers left, keys and all
        self.directory, lock = workdir.make(base)
        self.path = str(Path(self.directory) / workdir.MEMORY)
        try:
            create(self.path, layout)
        except BaseException:
            _remove(self.directory, lock)
            raise
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.socket = ours
        src = str(Path(cryptoffload.__file__).resolve().parents[1])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
        argv = [
            sys.executable,
            "-m",
            "cryptoffload.caam.device",
            "--part",
            layout.part,
            "--memory",
            self.path,
            "--irq",
            str(theirs.fileno()),
            "--pool",
            str(layout.pool_size),
            "--latency",
            repr(timing.latency),
            "--throughput",
            repr(timing.throughput),
            "--parent",
            str(os.getpid()),
        ]
        for fault in faults:
            argv += ["--fault", fault]
        try:
            self.proc = subprocess.Popen(argv, pass_fds=(theirs.fileno(),), env=env)
        except BaseException:
            ours.close()
            _remove(self.directory, lock)
            raise
        finally:
            theirs.close()
        self.pid = self.proc.pid
        self._finalizer = weakref.finalize(
            self, _stop, self.pid, os.getpid(), self.proc, self.directory, lock
        )
        atexit.register(self._finalizer)

    @classmethod
    def start(
        cls,
        part: str,
        *,
        latency: float | None = None,
        throughput: float | None = None,
        pool: int | None = None,
        faults: tuple[str, ...] = (),
    ) -> DeviceProcess:
        """A device process of ``part`` with the given timing (defaults: the T2080's), serving."""
        if part not in PARTS:
            raise ValueError(f"unknown CAAM part {part!r}; parts: {', '.join(PARTS)}")
        layout = layout_for(part, pool) if pool is not None else layout_for(part)
        base = Timing()
        timing = Timing(
            base.latency if latency is None else latency,
            base.throughput if throughput is None else throughput,
        )
        device = cls(layout, timing=timing, faults=faults)
        try:
            device.wait_ready()
        except BaseException:
            device.stop()
            raise
        return device

    def __repr__(self) -> str:
        return f"<DeviceProcess {self.layout.part} pid {self.pid}>"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _control(self) -> tuple[_Mapping, Control]:
        mapping = _Mapping(
            self.path,
            self.layout.control - self.layout.origin,
            CONTROL_SIZE,
            page_size=Paths().page_size,
            uncached=False,
            missing="the device file is gone",
            refused="check the device file",
        )
        return mapping, Control(mapping.view)

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """Return once the device serves; DeviceGone if it exits or takes over ``timeout``."""
        mapping, control = self._control()
        try:
            deadline = time.monotonic() + timeout
            while not control.words[Control.READY]:
                if not self.alive():
                    raise DeviceGone(
                        f"the {self.layout.part} device process exited at start "
                        f"(status {self.proc.returncode})"
                    )
                if time.monotonic() > deadline:
                    raise DeviceGone(f"the {self.layout.part} device did not start in {timeout} s")
                time.sleep(0.005)
        finally:
            control.release()
            mapping.close()

    def figures(self) -> dict[str, Any]:
        """The device's own figures: jobs, bytes read, modelled/compute/busy seconds, interrupts."""
        mapping, control = self._control()
        try:
            raw = control.figures()
        finally:
            control.release()
            mapping.close()
        out: dict[str, Any] = {k: v for k, v in raw.items() if not k.endswith("_ns")}
        for key in ("modelled_ns", "compute_ns", "busy_ns", "work_ns"):
            out[key[:-3] + "_s"] = raw[key] / 1e9
        span = raw["last_done_ns"] - raw["first_start_ns"]
        out["span_s"] = span / 1e9 if span > 0 else 0.0
        return out

    def bell(self) -> None:
        """Wake the device (it sleeps on its socket)."""
        # Full: it wakes on what is queued; closed: the next read says so.
        with contextlib.suppress(OSError):
            self.socket.send(_DOORBELL, socket.MSG_DONTWAIT)

    def transport(self) -> DeviceTransport:
        """The board transport over the device file, with the interrupt as ``irq``."""
        layout = self.layout
        paths = Paths(dev_mem=self.path, mem_origin=layout.origin)
        control_map, control = self._control()
        registers_map = _Mapping(
            self.path,
            layout.registers - layout.origin,
            0x10000,
            page_size=paths.page_size,
            uncached=True,
            missing="the device file is gone",
            refused="check the device file",
        )
        registers = PostedRegisterMap(
            registers_map,
            control,
            name=f"device:{layout.registers:#x}",
            byteorder=layout.byteorder,
            bell=self.bell,
            alive=self.alive,
        )
        control_map.view.release()  # the Control holds its own casts of the mapping
        memory = reserved_pool(layout.pool, layout.pool_size, paths=paths)
        svr = PARTS[layout.part].svr
        irq = Irq(os.dup(self.socket.fileno()), name=f"device pid {self.pid}")
        return DeviceTransport(registers, memory, svr=svr, irq=irq, device=self, keep=control_map)

    def stop(self) -> None:
        """End the process (SIGTERM, then SIGKILL) and remove its directory."""
        self.socket.close()
        self._finalizer()
        atexit.unregister(self._finalizer)


class DeviceTransport(BoardTransport):
    """The board transport over a device process, its interrupt as ``irq``; closing it stops
    the process when ``owns_device``."""

    def __init__(
        self,
        registers: PostedRegisterMap,
        memory: Any,
        *,
        svr: int | None,
        irq: Irq,
        device: DeviceProcess,
        keep: _Mapping,
        owns_device: bool = False,
    ) -> None:
        super().__init__(registers, memory, svr=svr, name=f"device:{device.layout.part}")
        self.irq, self.device, self._keep = irq, device, keep
        self.owns_device = owns_device

    def close(self) -> None:
        """Unmap, close the interrupt's fd, and stop the device when this transport owns it."""
        if self._keep.closed:
            return
        super().close()  # the registers, the pool, the interrupt's fd
        self._keep.closed = True
        self._keep.mm.close()
        if self.owns_device:
            self.device.stop()
