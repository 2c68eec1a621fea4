"""Board transports: the CAAM block by /dev/mem or UIO, DMA memory from mem= or u-dma-buf."""

from __future__ import annotations

import errno
import mmap
import os
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cryptoffload.caam import regs
from cryptoffload.caam.model.memory import Arena, Bytes, as_bytes

__all__ = [
    "BoardError",
    "BoardTransport",
    "DmaPool",
    "Paths",
    "RegisterMap",
    "devmem_registers",
    "open_board",
    "reserved_pool",
    "svr_from_ccsr",
    "svr_from_sysfs",
    "udmabuf_pool",
    "uio_registers",
]

#: The SVR in the QorIQ global utilities block, from CCSR (big-endian on every QorIQ part).
GUTS_SVR = 0xE00A4
#: Every DMA region starts on its own cache line (64 bytes on e5500/e6500 and Cortex-A).
CACHE_LINE = 64
#: u-dma-buf sync directions (the kernel's enum dma_data_direction).
TO_DEVICE, FROM_DEVICE = 1, 2

_UNBIND = (
    "unbind the job ring from the kernel (echo <ring node> > "
    "/sys/bus/platform/drivers/caam_jr/unbind)"
)


class BoardError(RuntimeError):
    """A board resource that cannot be reached; the message says what was wrong and what to do."""


@dataclass(frozen=True)
class Paths:
    """Where the board's device files and sysfs nodes are (tests point them at files)."""

    dev_mem: str = "/dev/mem"
    mem_origin: int = 0  # the physical address of dev_mem's first byte (0 for /dev/mem)
    dev: str = "/dev"
    soc_id: str = "/sys/devices/soc0/soc_id"
    uio_class: str = "/sys/class/uio"
    udmabuf_classes: tuple[str, ...] = ("/sys/class/u-dma-buf", "/sys/class/udmabuf")
    page_size: int = mmap.ALLOCATIONGRANULARITY

    def under(self, root: str | os.PathLike[str], **changes: object) -> Paths:
        """These paths moved under ``root`` (a directory standing for /), with other ``changes``."""

        def moved(path: str) -> str:
            return str(Path(root) / path.lstrip("/"))

        return replace(
            self,
            dev_mem=moved(self.dev_mem),
            dev=moved(self.dev),
            soc_id=moved(self.soc_id),
            uio_class=moved(self.uio_class),
            udmabuf_classes=tuple(moved(p) for p in self.udmabuf_classes),
            **changes,  # type: ignore[arg-type]
        )


DEFAULT_PATHS = Paths()


def _open_failed(path: str, exc: OSError, missing: str) -> BoardError:
    if isinstance(exc, FileNotFoundError):
        return BoardError(f"{path} does not exist: {missing}")
    if isinstance(exc, PermissionError):
        return BoardError(
            f"{path}: permission denied: run as root (or let this user read and write it)"
        )
    return BoardError(f"{path}: {exc.strerror or exc}")


class _Mapping:
    """``size`` bytes at ``offset`` of a device file, mapped shared from the page below."""

    def __init__(
        self,
        path: str,
        offset: int,
        size: int,
        *,
        page_size: int,
        uncached: bool,
        missing: str,
        refused: str,
    ) -> None:
        if offset < 0 or size <= 0:
            raise BoardError(f"{path}: nothing to map at offset {offset:#x}, size {size:#x}")
        low = offset - offset % page_size
        delta = offset - low
        length = -(-(delta + size) // page_size) * page_size
        try:
            fd = os.open(path, os.O_RDWR | (os.O_SYNC if uncached else 0))
        except OSError as exc:
            raise _open_failed(path, exc, missing) from None
        try:
            self.mm = mmap.mmap(
                fd, length, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, 0, low
            )
        except ValueError as exc:  # a regular file (a stand-in) shorter than the mapping
            raise BoardError(f"{path}: cannot map {length:#x} bytes at {low:#x}: {exc}") from None
        except OverflowError:
            raise BoardError(
                f"{path}: offset {low:#x} does not fit this Python's off_t: use a 64-bit Python "
                "(or one built with large-file support) for bases above 4 GiB"
            ) from None
        except OSError as exc:
            why = "refused" if exc.errno in (errno.EPERM, errno.EACCES) else exc.strerror
            raise BoardError(
                f"{path}: mapping {length:#x} bytes at {low:#x} {why}: {refused}"
            ) from None
        finally:
            os.close(fd)
        self.file_offset, self.delta, self.length = low, delta, length
        self.view = memoryview(self.mm)[delta : delta + size]
        self.closed = False

    def close(self, *views: memoryview) -> None:
        """Release ``views`` (taken from ``view``) and the view, then unmap; twice is harmless."""
        if self.closed:
            return
        self.closed = True
        for view in (*views, self.view):
            view.release()
        self.mm.close()


def _bswap32(value: int) -> int:
    return int.from_bytes(value.to_bytes(4, "little"), "big")


class RegisterMap:
    """A block's 32-bit registers through a mapping: each access one aligned 32-bit load or store.

    Values are in the CPU's byte order (``byteorder="native"``); "big" or "little" names the
    registers' order where it differs from the CPU's (Layerscape: big-endian block, little-endian
    cores), and each access is then swapped. ``start`` is the block offset where the mapping
    begins (0: the whole block; a ring page's offset when only that page is mapped).
    """

    def __init__(
        self, mapping: _Mapping, *, name: str, start: int = 0, byteorder: str = "native"
    ) -> None:
        if mapping.delta % 4:
            raise BoardError(f"{name}: the block must start on a 4-byte boundary")
        if byteorder not in ("native", "big", "little"):
            raise ValueError(f"byteorder must be 'native', 'big' or 'little', got {byteorder!r}")
        self.name, self.start, self.size = name, start, len(mapping.view) & ~3
        self._mapping = mapping
        self.words = mapping.view[: self.size].cast("I")
        if self.words.itemsize != 4:
            raise BoardError(f"{name}: this platform's unsigned int is not 32 bits")
        if byteorder not in ("native", sys.byteorder):
            self.read32 = self._read_swapped  # type: ignore[method-assign]
            self.write32 = self._write_swapped  # type: ignore[method-assign]

    def _bad(self, offset: int) -> ValueError:
        part = " (the map holds only part of the block)" if self.size < regs.BLOCK_SIZE else ""
        return ValueError(
            f"{self.name}: register offset {offset:#x} must be a multiple of 4 inside "
            f"{self.start:#x}..{self.start + self.size:#x}{part}"
        )

    def read32(self, offset: int) -> int:
        """The 32-bit register at ``offset`` from the block base."""
        rel = offset - self.start
        if rel & 3 or not 0 <= rel < self.size:
            raise self._bad(offset)
        return self.words[rel >> 2]

    def write32(self, offset: int, value: int) -> None:
        """Write the 32-bit register at ``offset`` from the block base."""
        rel = offset - self.start
        if rel & 3 or not 0 <= rel < self.size:
            raise self._bad(offset)
        if not 0 <= value <= 0xFFFFFFFF:
            raise ValueError(f"register value must fit in 32 bits, got {value:#x}")
        self.words[rel >> 2] = value

    def _read_swapped(self, offset: int) -> int:
        return _bswap32(RegisterMap.read32(self, offset))

    def _write_swapped(self, offset: int, value: int) -> None:
        if not 0 <= value <= 0xFFFFFFFF:
            raise ValueError(f"register value must fit in 32 bits, got {value:#x}")
        RegisterMap.write32(self, offset, _bswap32(value))

    def close(self) -> None:
        """Unmap the registers."""
        self._mapping.close(self.words)


def devmem_registers(
    base: int,
    *,
    size: int = regs.BLOCK_SIZE,
    byteorder: str = "native",
    paths: Paths = DEFAULT_PATHS,
) -> RegisterMap:
    """The block at physical ``base`` (64-bit bases for 36-bit parts) through /dev/mem, uncached."""
    if base % 4:
        raise BoardError(f"block base {base:#x} is not 4-byte aligned")
    mapping = _Mapping(
        paths.dev_mem,
        base - paths.mem_origin,
        size,
        page_size=paths.page_size,
        uncached=True,
        missing="the kernel needs CONFIG_DEVMEM=y, or use a UIO device (uio_registers)",
        refused=f"run as root; the kernel maps no range a driver holds: {_UNBIND}, "
        "or boot with iomem=relaxed (CONFIG_IO_STRICT_DEVMEM)",
    )
    return RegisterMap(mapping, name=f"devmem:{base:#x}", byteorder=byteorder)


def _read_text(path: Path, missing: str) -> str:
    try:
        return path.read_text().strip()
    except OSError as exc:
        raise _open_failed(str(path), exc, missing) from None


def _read_int(path: Path, missing: str) -> int:
    text = _read_text(path, missing)
    try:
        return int(text, 0)
    except ValueError:
        raise BoardError(f"{path} holds {text!r}, not a number") from None


def _uio_name(device: str | int) -> str:
    return f"uio{device}" if isinstance(device, int) else device.removeprefix("/dev/")


def uio_registers(
    device: str | int = 0,
    *,
    map_index: int = 0,
    start: int = 0,
    byteorder: str = "native",
    paths: Paths = DEFAULT_PATHS,
) -> RegisterMap:
    """The block through a UIO device's map (``/dev/uioN``; address and size from its sysfs)."""
    name = _uio_name(device)
    missing = (
        f"no UIO device {name}: {_UNBIND}, then bind it to uio_pdrv_genirq (modprobe "
        "uio_pdrv_genirq of_id=<compatible>; echo uio_pdrv_genirq > <node>/driver_override)"
    )
    node = Path(paths.uio_class) / name / "maps" / f"map{map_index}"
    addr = _read_int(node / "addr", missing)
    size = _read_int(node / "size", missing)
    page = paths.page_size
    sub = _read_int(node / "offset", missing) if (node / "offset").exists() else addr % page
    mapping = _Mapping(
        str(Path(paths.dev) / name),
        map_index * page + sub,
        size,
        page_size=page,
        uncached=True,
        missing=missing,
        refused="check the map's size in sysfs",
    )
    return RegisterMap(mapping, name=f"{name}:{addr:#x}", start=start, byteorder=byteorder)


_SVR_TEXT = re.compile(r"svr:\s*(0x[0-9a-fA-F]+)")


def svr_from_sysfs(paths: Paths = DEFAULT_PATHS) -> int | None:
    """The SVR from soc0's soc_id ("svr:0x85380011" on QorIQ); None where it is no SVR (i.MX)."""
    text = _read_text(
        Path(paths.soc_id),
        "no SoC driver published the SVR: pass svr= yourself, or read it from CCSR "
        "(svr_from_ccsr(ccsr_base))",
    )
    found = _SVR_TEXT.fullmatch(text)
    return int(found.group(1), 16) if found else None


def svr_from_ccsr(
    ccsr_base: int, *, offset: int = GUTS_SVR, byteorder: str = "big", paths: Paths = DEFAULT_PATHS
) -> int:
    """The SVR read from CCSR through /dev/mem: one 32-bit load at ``ccsr_base + offset``."""
    registers = RegisterMap(
        _Mapping(
            paths.dev_mem,
            ccsr_base + offset - paths.mem_origin,
            4,
            page_size=paths.page_size,
            uncached=True,
            missing="the kernel needs CONFIG_DEVMEM=y; pass svr= yourself",
            refused="run as root",
        ),
        name=f"ccsr:{ccsr_base:#x}",
        byteorder=byteorder,
    )
    try:
        return registers.read32(0)
    finally:
        registers.close()


class DmaPool:
    """DMA memory in a mapped physical range: allocation by an ``Arena``, copies counted.

    Every access must lie inside one allocated region (DmaError otherwise, as on the model).
    ``sync(offset, size, direction)``, where given, runs after each write (TO_DEVICE) and before
    each read (FROM_DEVICE): cache maintenance for a cached mapping on a non-coherent part.
    """

    def __init__(
        self,
        mapping: _Mapping,
        phys: int,
        *,
        name: str,
        sync: Callable[[int, int, int], None] | None = None,
    ) -> None:
        self.name, self.phys, self.size = name, phys, len(mapping.view)
        self.arena = Arena(phys, phys + self.size, granule=CACHE_LINE, name=name)
        self._mapping, self._view, self._sync = mapping, mapping.view, sync
        self._count = threading.Lock()
        self.bounce_bytes = 0
        self.alloc = self.arena.alloc
        self.free = self.arena.free

    def write(self, phys: int, data: Bytes) -> None:
        """Copy ``data`` into the pool at ``phys``."""
        data = as_bytes(data)
        n = len(data)
        self.arena.locate(phys, n)
        offset = phys - self.phys
        self._view[offset : offset + n] = data
        if self._sync is not None:
            self._sync(offset, n, TO_DEVICE)
        self._count.acquire()  # cheaper than with, and += cannot fail
        self.bounce_bytes += n
        self._count.release()

    def _source(self, phys: int, n: int) -> memoryview:
        self.arena.locate(phys, n)
        offset = phys - self.phys
        if self._sync is not None:
            self._sync(offset, n, FROM_DEVICE)
        self._count.acquire()
        self.bounce_bytes += n
        self._count.release()
        return self._view[offset : offset + n]

    def read(self, phys: int, n: int) -> bytes:
        """``n`` bytes of the pool at ``phys``."""
        return self._source(phys, n).tobytes()

    def read_into(self, phys: int, out: bytearray | memoryview) -> None:
        """Fill ``out`` with the pool's bytes at ``phys``."""
        view = out if type(out) is bytearray else memoryview(out).cast("B")
        view[:] = self._source(phys, len(view))

    def view(self, phys: int, n: int) -> memoryview:
        """A writable view of ``n`` bytes of the pool at ``phys`` (the mapping itself: no copy,
        not counted in ``bounce_bytes``). On a cached mapping of a non-coherent part the caller
        of the view owns cache maintenance; u-dma-buf's default here is uncached."""
        self.arena.locate(phys, n)
        offset = phys - self.phys
        return self._view[offset : offset + n]

    def close(self) -> None:
        """Unmap the pool (and close the sync hook's files). A view a caller still holds (a
        DmaBuffer) keeps the mapping alive: it is unmapped when the last one goes."""
        if not self._mapping.closed:
            try:
                self._mapping.close()
            except BufferError:  # views still exported: the mmap stays until they go
                self._mapping.closed = True
            close = getattr(self._sync, "close", None)
            if close is not None:
                close()


def reserved_pool(phys: int, size: int, *, paths: Paths = DEFAULT_PATHS) -> DmaPool:
    """DMA memory in a physical range Linux leaves alone (``mem=``), through /dev/mem, uncached."""
    mapping = _Mapping(
        paths.dev_mem,
        phys - paths.mem_origin,
        size,
        page_size=paths.page_size,
        uncached=True,
        missing="the kernel needs CONFIG_DEVMEM=y, or use u-dma-buf (udmabuf_pool)",
        refused="run as root; the range must be outside System RAM: boot with mem= below it "
        "(or a no-map reserved-memory node), and check /proc/iomem",
    )
    return DmaPool(mapping, phys, name=f"pool:{phys:#x}")


class _UdmabufSync:
    """u-dma-buf cache maintenance: one write of offset, size and direction to its sysfs node."""

    def __init__(self, node: Path) -> None:
        self._fds = {
            TO_DEVICE: os.open(node / "sync_for_device", os.O_WRONLY),
            FROM_DEVICE: os.open(node / "sync_for_cpu", os.O_WRONLY),
        }

    def __call__(self, offset: int, size: int, direction: int) -> None:
        low = offset & ~(CACHE_LINE - 1)
        high = (offset + size + CACHE_LINE - 1) & ~(CACHE_LINE - 1)
        command = low << 32 | (high - low) | direction << 2 | 1
        os.pwrite(self._fds[direction], b"0x%016x\n" % command, 0)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)


def udmabuf_pool(
    device: str | int = 0, *, cached: bool = False, paths: Paths = DEFAULT_PATHS
) -> DmaPool:
    """DMA memory of a u-dma-buf device (``/dev/udmabufN``; address and size from its sysfs).

    Uncached (O_SYNC) by default, as non-coherent parts such as i.MX need; ``cached=True`` maps it
    cached and, unless the node says ``dma_coherent``, syncs each copy through its sysfs node.
    """
    name = f"udmabuf{device}" if isinstance(device, int) else device.removeprefix("/dev/")
    missing = (
        f"no u-dma-buf device {name}: load the module with a buffer "
        f"(modprobe u-dma-buf {name}=0x1000000, or a u-dma-buf device-tree node)"
    )
    nodes = [Path(c) / name for c in paths.udmabuf_classes]
    node = next((n for n in nodes if n.is_dir()), nodes[0])
    phys = _read_int(node / "phys_addr", missing)
    size = _read_int(node / "size", missing)
    coherent = (node / "dma_coherent").exists() and _read_int(node / "dma_coherent", missing) == 1
    sync = None
    if cached and not coherent:
        if size > 0xFFFF_FFF0:
            raise BoardError(
                f"{name}: {size:#x} bytes are too many to sync by offset; use cached=False"
            )
        try:
            sync = _UdmabufSync(node)
        except OSError as exc:
            raise BoardError(
                f"{node}: cannot open sync_for_cpu/sync_for_device ({exc.strerror}): use "
                "cached=False (uncached), or a u-dma-buf that has them, as root"
            ) from None
    mapping = _Mapping(
        str(Path(paths.dev) / name),
        0,
        size,
        page_size=paths.page_size,
        uncached=not cached,
        missing=missing,
        refused="check the buffer's size in sysfs",
    )
    return DmaPool(mapping, phys, name=f"{name}:{phys:#x}", sync=sync)


class BoardTransport:
    """A Transport over a board: registers from a RegisterMap, DMA memory from a DmaPool;
    ``irq``, where set, the ring's interrupt (an ``Irq``: a UIO device's fd), closed with it."""

    irq: Any = None

    def __init__(
        self, registers: RegisterMap, memory: DmaPool, *, svr: int | None, name: str | None = None
    ) -> None:
        self.registers, self.memory, self.svr = registers, memory, svr
        self.name = name or f"{registers.name}+{memory.name}"
        self.read32 = registers.read32
        self.write32 = registers.write32
        self.alloc = memory.alloc
        self.free = memory.free
        self.write = memory.write
        self.read = memory.read
        self.read_into = memory.read_into
        self.view = memory.view

    @property
    def bounce_bytes(self) -> int:
        """Bytes copied into and out of the pool."""
        return self.memory.bounce_bytes

    def __repr__(self) -> str:
        return (
            f"BoardTransport({self.name!r}, svr={self.svr if self.svr is None else hex(self.svr)})"
        )

    def __enter__(self) -> BoardTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Unmap the registers and the pool; close the interrupt's fd."""
        self.memory.close()
        self.registers.close()
        if self.irq is not None:
            self.irq.close()


def open_board(
    *,
    base: int | None = None,
    uio: str | int | None = None,
    start: int = 0,
    pool: tuple[int, int] | None = None,
    udmabuf: str | int | None = None,
    cached: bool = False,
    svr: int | str | None = "sysfs",
    ccsr: int | None = None,
    byteorder: str = "native",
    paths: Paths = DEFAULT_PATHS,
) -> BoardTransport:
    """A board transport: registers at ``base`` (/dev/mem) or ``uio``, memory from ``pool``
    (phys, size) or ``udmabuf``; the SVR as given, from CCSR at ``ccsr``, or from sysfs."""
    if (base is None) == (uio is None):
        raise ValueError("give one of base= (/dev/mem) or uio= (a UIO device) for the registers")
    if (pool is None) == (udmabuf is None):
        raise ValueError("give one of pool=(phys, size) or udmabuf= for the DMA memory")
    if ccsr is not None:
        svr = svr_from_ccsr(ccsr, paths=paths)
    elif svr == "sysfs":
        svr = svr_from_sysfs(paths)
    elif isinstance(svr, str):
        raise ValueError(f"svr must be an int, None or 'sysfs', got {svr!r}")
    if base is not None:
        registers = devmem_registers(base, byteorder=byteorder, paths=paths)
    else:
        assert uio is not None
        registers = uio_registers(uio, start=start, byteorder=byteorder, paths=paths)
    try:
        memory = (
            reserved_pool(pool[0], pool[1], paths=paths)
            if pool is not None
            else udmabuf_pool(udmabuf if udmabuf is not None else 0, cached=cached, paths=paths)
        )
    except BaseException:
        registers.close()
        raise
    return BoardTransport(registers, memory, svr=svr)
