"""AES ECB/CBC/CTR/CFB/OFB jobs pointed straight at callers' DMA memory, in 64 KiB pieces."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from cryptoffload.blocks import ivs
from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.recipes.base import (
    AesKey,
    BlackKey,
    Buffers,
    Bytes,
    DriverLike,
    Prepared,
    append_key,
    check,
    execute,
    execute_many,
    key_ident,
    key_shape,
)
from cryptoffload.caam.recipes.cipher import ALIGNED, BLOCK, IV_OFFSET, append_aes_pass
from cryptoffload.caam.recipes.templates import job_header, seq_flags, shared, template
from cryptoffload.errors import Unavailable

__all__ = [
    "PIECE",
    "cipher_direct",
    "direct_words",
    "parallel",
    "prepare_direct",
    "shared_direct",
]

#: Bytes per job. The SEC's SEQ IN/OUT PTR length field is 16 bits (65,535 bytes at most)
#: unless EXT adds a 32-bit length word (the form the kernel, and these jobs, write); the
#: article's "64 KB per-descriptor limit" is that field. A transfer above it is cut into jobs
#: of 64 KiB (whole AES blocks), kept in flight together where the mode allows.
PIECE = 64 * 1024


def parallel(mode: str, encrypt: bool) -> bool:
    """Whether every piece's IV is known before any piece runs (ECB, CTR: the counter moved on;
    CBC and CFB decryption: the last ciphertext block of the piece before), so the pieces can
    be in flight together. CBC and CFB encryption and OFB chain through an output: one piece
    after another."""
    return mode in ("ECB", "CTR") or (not encrypt and mode in ("CBC", "CFB"))


def _build_shared(b: DescriptorBuilder, key: AesKey, mode: str, encrypt: bool) -> None:
    """The skcipher shared descriptor without the IV in the sequences: the job loads it into
    the class-1 context itself, and the next IV is not stored (the caller's context works it
    out from the data), so input and output are the caller's bytes and nothing else."""
    b.header(kind="shared", share="serial")
    append_key(b, 1, key)
    append_aes_pass(b, mode, encrypt)


def _job(driver: DriverLike, shlen: int, offset: int | None) -> Callable[..., list[int]]:
    """The job's words as ``fill(shared, in, out, n, iv words)``: header + shared pointer, SEQ
    IN PTR and SEQ OUT PTR (flat, EXT, ``n`` bytes each), the IV loaded into the class-1
    context at ``offset`` (none for ECB). Made once per shape from a template, then a copy
    and a few stores per job (the per-job cost the driver-cost goals count)."""
    ptr = driver.pointer_size
    shape = (ptr, shlen, offset)
    fill = _FILLERS.get(shape)
    if fill is None:
        fill = _FILLERS.setdefault(shape, _filler(driver, shlen, offset))
    return fill


_FILLERS: dict[tuple[int, int, int | None], Callable[..., list[int]]] = {}


def _filler(driver: DriverLike, shlen: int, offset: int | None) -> Callable[..., list[int]]:
    fields = [("shared", "ptr"), ("in", "ptr"), ("in_len", "word"), ("out", "ptr"),
              ("out_len", "word")]  # fmt: skip
    if offset is not None:
        fields += [(f"iv{i}", "word") for i in range(4)]

    def build(v: dict[str, int]) -> list[int]:
        b = job_header(driver.pointer_size, shlen, v["shared"])
        b.seq_in_ptr(pointer=v["in"], length=v["in_len"], flags=seq_flags(False))
        b.seq_out_ptr(pointer=v["out"], length=v["out_len"], flags=seq_flags(False))
        if offset is not None:
            iv = b"".join(v[f"iv{i}"].to_bytes(4, "big") for i in range(4))
            b.load(1, "context", offset=offset, data=iv)
        return b.words()

    key = ("direct-cipher", driver.pointer_size, shlen, offset)
    t = template(key, driver.pointer_size, fields, build)
    base = t.fill(*[0] * len(fields))
    at = [slots[-1][0] for slots in t.slots]  # each field's low word
    if offset is not None and at[5:] != list(range(at[5], at[5] + 4)):
        raise RuntimeError("the IV words of the direct job template are not contiguous")
    sh, src, n_in, dst, n_out = at[:5]
    iv = at[5] if offset is not None else 0
    if driver.pointer_size == 4:

        def fill(shared: int, p_in: int, p_out: int, n: int, ivw: Sequence[int] = ()) -> list[int]:
            w = base.copy()
            w[sh], w[src], w[n_in], w[dst], w[n_out] = shared, p_in, n, p_out, n
            if ivw:
                w[iv : iv + 4] = ivw
            return w

        return fill

    def fill_long(shared: int, p_in: int, p_out: int, n: int, ivw: Sequence[int] = ()) -> list[int]:
        w = base.copy()
        w[sh - 1], w[sh] = shared >> 32, shared & _WORD
        w[src - 1], w[src] = p_in >> 32, p_in & _WORD
        w[dst - 1], w[dst] = p_out >> 32, p_out & _WORD
        w[n_in] = w[n_out] = n
        if ivw:
            w[iv : iv + 4] = ivw
        return w

    return fill_long


_WORD = 0xFFFF_FFFF
_IV_WORDS = {"big": struct.Struct(">4I").unpack, "little": struct.Struct("<4I").unpack}


class _InPlace:
    """The buffers of a job that copies nothing: no region of its own, nothing collected."""

    __slots__ = ()
    owned: tuple[int, ...] = ()
    collect: tuple[tuple[int, Any], ...] = ()

    def release(self) -> None:
        """Nothing to free."""


_IN_PLACE: Any = _InPlace()


def _checked(word: int, outs: list[Any]) -> None:
    check(word)


def shared_direct(driver: DriverLike, key: AesKey, mode: str, encrypt: bool) -> tuple[int, int]:
    """(address, words) of the shared descriptor of these jobs for ``key`` (cached by the
    driver under the key's id; the per-shape part of the cache key and the length are kept
    here, so a hit costs the key's id and the driver's lookup)."""
    ptr = driver.pointer_size
    shape = (mode, encrypt, key.length if isinstance(key, BlackKey) else len(key), ptr)
    known = _SHAPES.get(shape)
    if known is None:
        sh = shared(
            driver,
            ("direct-cipher", mode, encrypt, *key_shape(key)),
            key_ident(key),
            lambda b: _build_shared(b, key, mode, encrypt),
        )
        if not isinstance(key, BlackKey):
            _SHAPES[shape] = (
                ("recipe", "direct-cipher", mode, encrypt, *key_shape(key), ptr),
                sh[1],
            )
        return sh
    full, length = known

    def words() -> list[int]:
        b = driver.builder()
        _build_shared(b, key, mode, encrypt)
        return b.words()

    return driver.shared((*full, key_ident(key)), words), length


#: (mode, encrypt, key bytes, pointer size) of a red key -> (cache key less the key's id,
#: shared descriptor length in words).
_SHAPES: dict[tuple[str, bool, int, int], tuple[tuple[Any, ...], int]] = {}


def direct_words(
    driver: DriverLike,
    sh: tuple[int, int],
    mode: str,
    iv: bytes | None,
    src: int,
    dst: int,
    n: int,
) -> list[int]:
    """The words of one job over ``n`` bytes at ``src`` into ``dst`` (``sh`` from
    :func:`shared_direct`; whole blocks for ECB/CBC): a job that needs no memory of its own."""
    ivw = () if iv is None else _IV_WORDS[driver.byteorder](iv)
    return _job(driver, sh[1], IV_OFFSET[mode])(sh[0], src, dst, n, ivw)


def prepare_direct(
    driver: DriverLike,
    sh: tuple[int, int],
    mode: str,
    iv: bytes | None,
    data: Bytes,
    src: int | None,
    out: Any,
    dst: int | None,
) -> Prepared[None]:
    """One job over one piece (``sh`` from :func:`shared_direct`; at most 4 GiB - 1, whole
    blocks for ECB/CBC): in place where an address is given, else through a region of its own
    (input copied in; output read into ``out`` at completion; wiped when reaped)."""
    n = len(data)
    if src is not None and dst is not None:
        return Prepared(direct_words(driver, sh, mode, iv, src, dst, n), _IN_PLACE, _checked)
    with Buffers(driver) as bufs:
        if src is None:
            src = bufs.put(data)
        if dst is None:
            dst = bufs.room(n)
            bufs.want(dst, out)
    return Prepared(direct_words(driver, sh, mode, iv, src, dst, n), bufs, _checked)


def cipher_direct(
    driver: DriverLike,
    key: AesKey,
    mode: str,
    iv: bytes | None,
    data: Bytes,
    src: int | None,
    out: Any,
    dst: int | None,
    *,
    encrypt: bool,
    piece: int = PIECE,
) -> int:
    """AES in ``mode`` over ``data`` into ``out`` (a writable byte view of room len(data)):
    ``src`` / ``dst``, the bus addresses of ``data`` / ``out`` when they are DMA memory the
    block may use in place (a DmaBuffer of this engine), else None (copied through a region).
    Pieces of ``piece`` bytes, all in flight together where :func:`parallel` says so; the
    length written is returned. Unavailable("misaligned") for ECB/CBC input not whole blocks."""
    if mode not in IV_OFFSET:
        raise ValueError(f"mode must be one of {', '.join(IV_OFFSET)}, got {mode!r}")
    offset = IV_OFFSET[mode]
    if (offset is None) != (iv is None) or (iv is not None and len(iv) != BLOCK):
        raise ValueError(f"AES-{mode} takes {'no IV' if offset is None else 'a 16-byte IV'}")
    n = len(data)
    if mode in ALIGNED and n % BLOCK:
        raise Unavailable("misaligned", f"AES-{mode} takes whole blocks, got {n} bytes")
    if piece <= 0 or piece % BLOCK:
        raise ValueError(f"piece must be a positive multiple of 16, got {piece}")
    if not n:
        return 0
    sh = shared_direct(driver, key, mode, encrypt)
    starts = range(0, n, piece)

    def prepare(at: int, piece_iv: bytes | None) -> Prepared[None]:
        end = min(at + piece, n)
        return prepare_direct(
            driver, sh, mode, piece_iv, data[at:end], None if src is None else src + at,
            out[at:end], None if dst is None else dst + at,
        )  # fmt: skip

    if parallel(mode, encrypt):
        piece_ivs = [_iv_at(mode, iv, data, at) for at in starts]
        jobs = [prepare(at, v) for at, v in zip(starts, piece_ivs, strict=True)]
        for result in execute_many(driver, jobs):
            if isinstance(result, Exception):
                raise result
    else:
        for at in starts:
            end = min(at + piece, n)
            last_in = bytes(data[end - BLOCK : end]) if mode == "OFB" else b""  # in place: now
            execute(driver, prepare(at, iv))
            if end < n:
                iv = _next_iv(mode, last_in, out, end)
    moved = (src is not None) + (dst is not None)
    if moved:
        driver.count_direct(moved * n)  # type: ignore[attr-defined]
    return n


def _iv_at(mode: str, iv: bytes | None, data: Bytes, at: int) -> bytes | None:
    """The IV of the piece starting at ``at`` in a parallel mode (read before any job runs:
    in place, the input is overwritten)."""
    if iv is None or not at:
        return iv
    if mode == "CTR":
        return ivs.ctr_after(iv, at // BLOCK)
    return bytes(data[at - BLOCK : at])  # CBC / CFB decryption: the ciphertext before


def _next_iv(mode: str, last_in: bytes, out: Sequence[int], end: int) -> bytes:
    """The chaining value after a piece ending at ``end`` (whole blocks) of a serial mode."""
    last_out = bytes(out[end - BLOCK : end])
    if mode == "OFB":  # the keystream block: what was XORed in
        return bytes(a ^ b for a, b in zip(last_in, last_out, strict=True))
    return last_out  # CBC / CFB encryption: the last ciphertext block
