"""Board transports against file stand-ins: mapping arithmetic, byte order, 64-bit bases, errors."""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from pathlib import Path

import pytest

from cryptoffload.caam import regs
from cryptoffload.caam.jr import boards
from cryptoffload.caam.jr.boards import (
    BoardError,
    Paths,
    devmem_registers,
    open_board,
    reserved_pool,
    svr_from_ccsr,
    svr_from_sysfs,
    udmabuf_pool,
    uio_registers,
)
from cryptoffload.caam.jr.transport import ModelTransport, Transport
from cryptoffload.caam.model.memory import DmaError
from cryptoffload.caam.model.parts import PARTS

#: A 36-bit T-series CCSR, the SEC at CCSR + 0x300000.
CCSR = 0xF_FE00_0000
SEC = CCSR + 0x30_0000
T2080E_SVR = 0x8538_0011


def stand_in(path: Path, size: int) -> Path:
    """A zero-filled (sparse) file of ``size`` bytes standing for a device."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def poke(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def peek(path: Path, offset: int, n: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(n)


def native(value: int) -> bytes:
    return value.to_bytes(4, sys.byteorder)


@pytest.fixture
def ccsr(tmp_path: Path) -> tuple[Paths, Path]:
    """/dev/mem standing for the CCSR window of a 36-bit part: its first byte is CCSR."""
    paths = Paths().under(tmp_path, mem_origin=CCSR)
    return paths, stand_in(Path(paths.dev_mem), 0x40_0000)


# /dev/mem registers ------------------------------------------------------------------------


def test_registers_at_a_64_bit_base(ccsr):
    paths, mem = ccsr
    block = devmem_registers(SEC, paths=paths)
    assert block.name == "devmem:0xffe300000"
    block.write32(regs.jr_base(1) + regs.IRSR, 0x11223344)
    assert peek(mem, 0x30_0000 + 0x2000 + regs.IRSR, 4) == native(0x11223344)
    poke(mem, 0x30_0000 + regs.CCBVID, native(0x0600_0000))
    assert regs.era(block.read32(regs.CCBVID)) == 6
    block.close()
    block.close()  # twice is harmless


def test_registers_are_32_bit_words_in_the_cpus_byte_order(ccsr):
    paths, mem = ccsr
    block = devmem_registers(SEC, paths=paths)
    assert block.words.format == "I" and block.words.itemsize == 4  # one load or store each
    poke(mem, 0x30_0000 + 0x20, b"\x01\x02\x03\x04")
    assert block.read32(0x20) == int.from_bytes(b"\x01\x02\x03\x04", sys.byteorder)
    other = "big" if sys.byteorder == "little" else "little"
    swapped = devmem_registers(SEC, byteorder=other, paths=paths)
    assert swapped.read32(0x20) == int.from_bytes(b"\x01\x02\x03\x04", other)
    swapped.write32(0x24, 0xA1B2C3D4)
    assert peek(mem, 0x30_0000 + 0x24, 4) == (0xA1B2C3D4).to_bytes(4, other)
    assert devmem_registers(SEC, byteorder=sys.byteorder, paths=paths).read32(0x20) == (
        block.read32(0x20)
    )


@pytest.mark.parametrize("page", [0x1000, 0x1_0000])
def test_a_base_off_the_page_boundary_maps_from_the_page_below(tmp_path, page):
    paths = Paths().under(tmp_path, mem_origin=CCSR, page_size=page)
    mem = stand_in(Path(paths.dev_mem), 0x40_0000)
    block = devmem_registers(CCSR + 0x2_1800, paths=paths)
    mapping = block._mapping
    assert mapping.file_offset == 0x2_1800 - 0x2_1800 % page
    assert mapping.delta == 0x2_1800 % page
    assert mapping.length % page == 0 and mapping.length >= mapping.delta + regs.BLOCK_SIZE
    block.write32(0, 0xCAFEF00D)
    block.write32(regs.BLOCK_SIZE - 4, 0x0BADBEEF)
    assert peek(mem, 0x2_1800, 4) == native(0xCAFEF00D)
    assert peek(mem, 0x2_1800 + regs.BLOCK_SIZE - 4, 4) == native(0x0BADBEEF)


def test_a_64_bit_offset_into_the_file_itself(tmp_path):
    """No origin trick: the stand-in is as large as the 36-bit address (a sparse file)."""
    paths = Paths().under(tmp_path)
    try:
        mem = stand_in(Path(paths.dev_mem), SEC + regs.BLOCK_SIZE)
    except OSError as exc:  # pragma: no cover - a filesystem without large sparse files
        pytest.skip(f"no 64 GiB sparse file here: {exc}")
    block = devmem_registers(SEC, paths=paths)
    block.write32(regs.CSTA, 0x400)
    assert peek(mem, SEC + regs.CSTA, 4) == native(0x400)
    block.close()


@pytest.mark.parametrize("offset", [-4, 2, 0x1_0000, 0x1_0002, 0x10_0000])
def test_offsets_outside_the_block_are_refused(ccsr, offset):
    block = devmem_registers(SEC, paths=ccsr[0])
    with pytest.raises(ValueError, match=f"register offset {offset:#x}"):
        block.read32(offset)
    with pytest.raises(ValueError, match="register offset"):
        block.write32(offset, 0)


def test_register_values_must_fit_32_bits(ccsr):
    block = devmem_registers(SEC, paths=ccsr[0])
    for value in (-1, 1 << 32):
        with pytest.raises(ValueError, match="32 bits"):
            block.write32(0, value)


def test_devmem_errors_name_the_device_and_what_to_do(tmp_path, ccsr, monkeypatch):
    paths, _ = ccsr
    with pytest.raises(BoardError, match="4-byte aligned"):
        devmem_registers(SEC + 2, paths=paths)
    with pytest.raises(BoardError, match=r"dev/mem: cannot map"):
        devmem_registers(CCSR + 0x3F_8000, paths=paths)  # past the stand-in's end
    with pytest.raises(BoardError, match="nothing to map"):
        devmem_registers(CCSR - 0x1_0000, paths=paths)  # below the stand-in's origin
    with pytest.raises(BoardError, match="does not exist: the kernel needs CONFIG_DEVMEM"):
        devmem_registers(SEC, paths=Paths().under(tmp_path / "none"))

    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(boards.os, "open", denied)
    with pytest.raises(BoardError, match="permission denied: run as root"):
        devmem_registers(SEC, paths=paths)
    monkeypatch.undo()

    def refused(*args, **kwargs):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(boards.mmap, "mmap", refused)
    with pytest.raises(BoardError, match=r"refused: run as root.*caam_jr/unbind.*iomem=relaxed"):
        devmem_registers(SEC, paths=paths)


def test_the_block_is_opened_uncached(ccsr, monkeypatch):
    flags = []
    real = os.open

    def recording(path, flag, *args):
        flags.append(flag)
        return real(path, flag, *args)

    monkeypatch.setattr(boards.os, "open", recording)
    devmem_registers(SEC, paths=ccsr[0]).close()
    assert flags and flags[0] & os.O_SYNC


def test_discovery_reads_the_same_capabilities_as_on_the_model(ccsr):
    paths, mem = ccsr
    for offset, value in PARTS["t2080"].id_registers.items():
        poke(mem, 0x30_0000 + offset, native(value))
    block = devmem_registers(SEC, paths=paths)
    model = ModelTransport.for_part("t2080")
    assert regs.discover(block.read32) == regs.discover(model.read32)


# UIO ---------------------------------------------------------------------------------------


def uio_tree(root: Path, name: str, maps: list[tuple[int, int]], offset_file: bool = True) -> Path:
    page = Paths().page_size
    for i, (addr, size) in enumerate(maps):
        node = root / "sys/class/uio" / name / "maps" / f"map{i}"
        node.mkdir(parents=True)
        (node / "addr").write_text(f"0x{addr:016x}\n")
        (node / "size").write_text(f"0x{size:016x}\n")
        if offset_file:
            (node / "offset").write_text(f"0x{addr % page:x}\n")
    return stand_in(root / "dev" / name, len(maps) * page + max(s for _, s in maps) + page)


def test_uio_maps_the_block_from_its_sysfs_map(tmp_path):
    dev = uio_tree(tmp_path, "uio3", [(0x3090_0000, regs.BLOCK_SIZE)])
    block = uio_registers(3, paths=Paths().under(tmp_path))
    assert block.name == "uio3:0x30900000"
    block.write32(regs.MCFGR, 0x1_0000)
    assert peek(dev, regs.MCFGR, 4) == native(0x1_0000)


def test_uio_map_index_and_sub_page_offset(tmp_path):
    page = Paths().page_size
    dev = uio_tree(tmp_path, "uio0", [(0x1000_0000, 0x1000), (0x2000_0800, 0x1000)], False)
    block = uio_registers("uio0", map_index=1, start=0x1000, paths=Paths().under(tmp_path))
    block.write32(0x1000 + regs.IRSR, 4)
    assert peek(dev, page + 0x800 + regs.IRSR, 4) == native(4)


def test_a_map_of_one_ring_page_refuses_offsets_outside_it(tmp_path):
    uio_tree(tmp_path, "uio0", [(0x3090_1000, 0x1000)])
    block = uio_registers(0, start=regs.jr_base(0), paths=Paths().under(tmp_path))
    block.write32(regs.jr_base(0) + regs.JRCR, 1)
    with pytest.raises(ValueError, match=r"0x4 must be a multiple of 4 inside 0x1000\.\.0x2000"):
        block.read32(regs.MCFGR)
    whole = uio_registers(0, paths=Paths().under(tmp_path))
    with pytest.raises(ValueError, match=r"0x1000 .*holds only part of the block"):
        whole.read32(regs.jr_base(0))


def test_a_missing_uio_device_says_how_to_make_one(tmp_path):
    with pytest.raises(BoardError, match=r"no UIO device uio0: unbind .*caam_jr.*uio_pdrv_genirq"):
        uio_registers(0, paths=Paths().under(tmp_path))


# The SVR -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "svr"),
    [("svr:0x85380011", T2080E_SVR), ("svr:0x85300011\n", 0x8530_0011), ("i.MX7D", None)],
)
def test_svr_from_sysfs(tmp_path, text, svr):
    paths = Paths().under(tmp_path)
    Path(paths.soc_id).parent.mkdir(parents=True)
    Path(paths.soc_id).write_text(text)
    assert svr_from_sysfs(paths) == svr
    if svr is not None:
        assert regs.sec_present(svr) == (svr == T2080E_SVR)


def test_a_missing_soc_id_says_what_else_to_do(tmp_path):
    with pytest.raises(BoardError, match=r"soc_id does not exist: .*svr_from_ccsr"):
        svr_from_sysfs(Paths().under(tmp_path))


def test_svr_from_ccsr_is_big_endian_on_any_cpu(ccsr):
    paths, mem = ccsr
    poke(mem, boards.GUTS_SVR, T2080E_SVR.to_bytes(4, "big"))
    assert svr_from_ccsr(CCSR, paths=paths) == T2080E_SVR


# DMA memory: the reserved pool -------------------------------------------------------------

POOL = 0x7F00_0000


@pytest.fixture
def pool_mem(tmp_path: Path) -> tuple[Paths, Path]:
    """/dev/mem standing for a range reserved with mem=, its first byte at POOL."""
    paths = Paths().under(tmp_path, mem_origin=POOL)
    return paths, stand_in(Path(paths.dev_mem), 0x20_0000)


def test_reserved_pool_allocates_copies_and_counts(pool_mem):
    paths, mem = pool_mem
    pool = reserved_pool(POOL + 0x1000, 0x10_0000, paths=paths)
    assert pool.name == "pool:0x7f001000"
    a = pool.alloc(100)
    b = pool.alloc(100, 4096)
    assert a == POOL + 0x1000 and b % 4096 == 0 and b >= a + 100 + boards.CACHE_LINE - 100
    pool.write(a, b"hello")
    assert peek(mem, a - POOL, 5) == b"hello"
    poke(mem, b - POOL, b"from the device")
    assert pool.read(b, 15) == b"from the device"
    out = bytearray(4)
    pool.read_into(b + 5, out)
    assert out == b"the "
    assert pool.bounce_bytes == 5 + 15 + 4
    with pytest.raises(DmaError):
        pool.write(a + 98, b"xyz")  # runs off the region
    with pytest.raises(DmaError):
        pool.read(POOL + 0x1000 + 0x10_0000, 1)  # past the pool
    pool.free(a)
    with pytest.raises(DmaError):
        pool.read(a, 1)
    assert pool.alloc(80) == a  # reused
    pool.close()
    pool.close()


def test_a_pool_view_is_the_mapped_memory_itself_and_keeps_the_mapping_alive(pool_mem):
    paths, mem = pool_mem
    pool = reserved_pool(POOL, 0x10_0000, paths=paths)
    a = pool.alloc(64)
    view = pool.view(a, 64)
    view[:5] = b"owned"
    assert peek(mem, a - POOL, 5) == b"owned" and pool.bounce_bytes == 0  # no copy counted
    poke(mem, a - POOL + 8, b"device")
    assert bytes(view[8:14]) == b"device"
    with pytest.raises(DmaError):
        pool.view(a, 65)  # runs off the region
    held = (ctypes.c_ubyte * 64).from_buffer(view)  # what a DmaBuffer holds
    pool.close()  # the caller's buffer still maps it: no error, unmapped when it goes
    held[0] = 0x41
    assert peek(mem, a - POOL, 1) == b"A"
    del held, view


def test_reserved_pool_exhaustion_names_the_pool(pool_mem):
    pool = reserved_pool(POOL, 0x1000, paths=pool_mem[0])
    with pytest.raises(MemoryError, match=r"pool:0x7f000000 memory exhausted"):
        pool.alloc(0x1000)


def test_reserved_pool_refused_says_how_to_reserve(pool_mem, monkeypatch):
    def refused(*args, **kwargs):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(boards.mmap, "mmap", refused)
    with pytest.raises(BoardError, match=r"outside System RAM: boot with mem="):
        reserved_pool(POOL, 0x1000, paths=pool_mem[0])


# DMA memory: u-dma-buf ---------------------------------------------------------------------

UDMA = 0xF000_0000


def udmabuf_tree(
    root: Path, name: str = "udmabuf0", cls: str = "u-dma-buf", coherent: str | None = "0"
) -> tuple[Path, Path]:
    node = root / "sys/class" / cls / name
    node.mkdir(parents=True)
    (node / "phys_addr").write_text(f"0x{UDMA:016x}\n")
    (node / "size").write_text("1048576\n")
    if coherent is not None:
        (node / "dma_coherent").write_text(coherent + "\n")
    for hook in ("sync_for_cpu", "sync_for_device"):
        (node / hook).write_text("0\n")
    return node, stand_in(root / "dev" / name, 1 << 20)


def last_sync(node: Path, hook: str) -> tuple[int, int, int] | None:
    text = (node / hook).read_text().strip()
    if text == "0":
        return None
    command = int(text, 0)
    assert command & 1
    return command >> 32, command & 0xFFFF_FFF0, (command >> 2) & 3


def test_udmabuf_uncached_by_default(tmp_path, monkeypatch):
    node, dev = udmabuf_tree(tmp_path)
    flags = []
    real = os.open
    monkeypatch.setattr(boards.os, "open", lambda p, f, *a: flags.append(f) or real(p, f, *a))
    pool = udmabuf_pool(0, paths=Paths().under(tmp_path))
    assert flags[-1] & os.O_SYNC
    assert pool.name == "udmabuf0:0xf0000000"
    a = pool.alloc(10)
    assert a == UDMA
    pool.write(a, b"0123456789")
    assert peek(dev, 0, 10) == b"0123456789"
    assert pool.read(a + 2, 3) == b"234"
    assert last_sync(node, "sync_for_device") is None and last_sync(node, "sync_for_cpu") is None
    assert pool.bounce_bytes == 13


def test_udmabuf_cached_syncs_each_copy_through_sysfs(tmp_path, monkeypatch):
    node, _ = udmabuf_tree(tmp_path)
    flags = []
    real = os.open
    monkeypatch.setattr(boards.os, "open", lambda p, f, *a: flags.append(f) or real(p, f, *a))
    pool = udmabuf_pool("udmabuf0", cached=True, paths=Paths().under(tmp_path))
    assert not flags[-1] & os.O_SYNC
    pool.alloc(100)
    b = pool.alloc(100)
    pool.write(b + 10, b"x" * 60)  # bytes 10..70 of region b: its first two cache lines
    assert last_sync(node, "sync_for_device") == (b - UDMA, 0x80, boards.TO_DEVICE)
    pool.write(b + 70, b"y")
    assert last_sync(node, "sync_for_device") == (b - UDMA + 0x40, 0x40, boards.TO_DEVICE)
    pool.read(b, 1)
    assert last_sync(node, "sync_for_cpu") == (b - UDMA, 0x40, boards.FROM_DEVICE)
    pool.close()


def test_udmabuf_coherent_needs_no_sync(tmp_path):
    node, _ = udmabuf_tree(tmp_path, coherent="1")
    pool = udmabuf_pool(0, cached=True, paths=Paths().under(tmp_path))
    pool.write(pool.alloc(4), b"abcd")
    assert last_sync(node, "sync_for_device") is None


def test_udmabuf_under_its_old_class_name(tmp_path):
    udmabuf_tree(tmp_path, "udmabuf2", cls="udmabuf", coherent=None)
    assert udmabuf_pool(2, paths=Paths().under(tmp_path)).size == 1 << 20


def test_a_missing_udmabuf_says_to_load_the_module(tmp_path):
    with pytest.raises(BoardError, match=r"no u-dma-buf device udmabuf0: .*modprobe u-dma-buf"):
        udmabuf_pool(0, paths=Paths().under(tmp_path))


# open_board --------------------------------------------------------------------------------


def test_open_board_over_devmem_and_a_reserved_pool(tmp_path):
    paths = Paths().under(tmp_path, mem_origin=POOL)
    mem = stand_in(Path(paths.dev_mem), 0x40_0000)
    Path(paths.soc_id).parent.mkdir(parents=True)
    Path(paths.soc_id).write_text(f"svr:0x{T2080E_SVR:08x}\n")
    with open_board(base=POOL + 0x30_0000, pool=(POOL, 0x10_0000), paths=paths) as board:
        assert isinstance(board, Transport)
        assert board.name == "devmem:0x7f300000+pool:0x7f000000"
        assert board.svr == T2080E_SVR
        board.write32(regs.jr_base(0) + regs.IRSR, 8)
        assert peek(mem, 0x30_0000 + 0x1000 + regs.IRSR, 4) == native(8)
        phys = board.alloc(64)
        board.write(phys, b"descriptor")
        assert board.read(phys, 10) == b"descriptor"
        assert board.bounce_bytes == 20
        board.free(phys)


def test_open_board_over_uio_and_udmabuf_with_the_svr_from_ccsr(tmp_path):
    uio_tree(tmp_path, "uio0", [(0x3090_0000, regs.BLOCK_SIZE)])
    udmabuf_tree(tmp_path)
    paths = Paths().under(tmp_path, mem_origin=CCSR)
    poke(stand_in(Path(paths.dev_mem), 0x10_0000), boards.GUTS_SVR, T2080E_SVR.to_bytes(4, "big"))
    board = open_board(uio=0, udmabuf=0, ccsr=CCSR, paths=paths)
    assert board.svr == T2080E_SVR and board.name == "uio0:0x30900000+udmabuf0:0xf0000000"
    assert open_board(uio=0, udmabuf=0, svr=None, paths=paths).svr is None
    board.close()


def test_open_board_wants_one_of_each(tmp_path):
    with pytest.raises(ValueError, match="one of base="):
        open_board(base=SEC, uio=0, pool=(POOL, 4096), svr=None)
    with pytest.raises(ValueError, match="one of pool="):
        open_board(base=SEC, svr=None)
    with pytest.raises(ValueError, match="svr must be"):
        open_board(base=SEC, pool=(POOL, 4096), svr="ccsr")
