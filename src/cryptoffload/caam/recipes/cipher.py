"""AES ECB, CBC, CTR, CFB and OFB as the kernel's skcipher runs them: IV in, data, next IV out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.jr.jobs import Out
from cryptoffload.caam.recipes.base import (
    AesKey,
    Buffers,
    Bytes,
    Data,
    DriverLike,
    Piece,
    Prepared,
    Region,
    append_key,
    check,
    execute,
    key_ident,
    key_shape,
    piece_entries,
    split,
)
from cryptoffload.caam.recipes.templates import seq_job, shared
from cryptoffload.errors import Unavailable

__all__ = ["CHUNK", "MODES", "append_aes_pass", "cipher", "prepare_cipher"]

BLOCK = 16
#: Where each mode keeps its IV in the class-1 context (CTR: "CONTEXT1[255:128] = IV").
IV_OFFSET = {"ECB": None, "CBC": 0, "CTR": 16, "CFB": 0, "OFB": 0}
MODES = tuple(IV_OFFSET)
#: Modes that take whole blocks only (the AESA reports a data size error otherwise).
ALIGNED = frozenset({"ECB", "CBC"})
#: A flat input longer than this runs as chained jobs, each carrying the IV or counter on, so
#: that a board's DMA pool need not hold all of it; up to here it is one job (EXT lengths).
CHUNK = 1 << 20

Into = bytearray | memoryview | Sequence[Region] | None
Result = tuple[bytes | int, bytes | None]


def _build_shared(b: DescriptorBuilder, key: AesKey, mode: str, encrypt: bool) -> None:
    """cnstr_shdsc_skcipher_{encap,decap}: SEQ LOAD the IV, INIT (the context keeps the chaining
    value), the data through VLF lengths, SEQ STORE the next IV; decrypt of ECB/CBC with the DK
    variant for a shared (still loaded) descriptor."""
    b.header(kind="shared", share="serial", savectx=True)
    append_key(b, 1, key)
    off = IV_OFFSET[mode]
    if off is not None:
        b.load(1, "context", offset=off, length=BLOCK, seq=True)
    append_aes_pass(b, mode, encrypt)
    if off is not None:
        b.store(1, "context", offset=off, length=BLOCK, seq=True)


def append_aes_pass(b: DescriptorBuilder, mode: str, encrypt: bool) -> None:
    """The AES pass over the whole input sequence, the key and IV already loaded: INIT
    (decryption of ECB/CBC: the DK variant once the shared descriptor is loaded), both
    variable lengths from SEQINLEN, the message in and out through VLF."""
    if not encrypt and mode in ALIGNED:
        b.jump(jsl=True, condition=["SHRD"], offset=3)
        b.operation(1, "AES", aai=mode, state="init")
        b.jump(offset=2)
        b.operation(1, "AES", aai=mode, state="init", dk=True)
    else:
        b.operation(1, "AES", aai=mode, state="init", encrypt=encrypt)
    b.math("ADD", "SEQINLEN", "MATH0", "VARSEQOUTLEN")
    b.math("ADD", "SEQINLEN", "MATH0", "VARSEQINLEN")
    b.fifo_load(1, "MSG", seq=True, vlf=True, last1=True)
    b.fifo_store(0, "MESSAGE_DATA", seq=True, vlf=True)


def _flat(bufs: Buffers, iv: bytes, data: Bytes, target: Out) -> tuple[int, int, bool, bool]:
    """In place, as the kernel does: in [IV | data], out [data | next IV] one IV further on."""
    n, ivlen = len(data), len(iv)
    buf = bufs.put(iv, data, extra=ivlen)
    bufs.want(buf + ivlen, target)
    if ivlen:
        bufs.want(buf + ivlen + n, ivlen)
    return buf, buf + ivlen, False, False


def _scattered(
    bufs: Buffers,
    order: str,
    iv: bytes,
    pieces: Sequence[Piece],
    n: int,
    regions: Sequence[Region] | None,
    target: Out,
) -> tuple[int, int, bool, bool]:
    """Input table [IV, pieces...]; output table [regions..., IV], or flat [out | next IV]."""
    ivlen = len(iv)
    iv_buf = bufs.put(iv)
    head = [(iv_buf, ivlen)] if ivlen else []
    src = bufs.table(head + piece_entries(bufs, pieces), order)
    if regions is None:
        dst = bufs.room(n + ivlen)
        bufs.want(dst, target)
        if ivlen:
            bufs.want(dst + n, ivlen)
        return src, dst, True, False
    if sum(r.length for r in regions) != n:
        raise ValueError(f"the output regions must hold {n} bytes")
    dst = bufs.table([(r.phys, r.length) for r in regions] + head, order)
    if ivlen:
        bufs.want(iv_buf, ivlen)
    return src, dst, True, True


def prepare_cipher(
    driver: DriverLike,
    key: AesKey,
    mode: str,
    iv: bytes | None,
    data: Data,
    *,
    encrypt: bool,
    into: Into = None,
) -> Prepared[Result]:
    """One job: ``data`` (bytes, or a list of bytes/Region pieces: an S/G table) through AES in
    ``mode``; the result is (output, next IV or counter; None for ECB).

    Output: bytes, or written to ``into`` (a writable buffer, or a list of Regions: an S/G
    table) and its length returned. Unavailable("misaligned") for ECB/CBC input that is not
    whole blocks.
    """
    if mode not in IV_OFFSET:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    ivlen = 0 if IV_OFFSET[mode] is None else BLOCK
    if ivlen != (0 if iv is None else len(iv)):
        raise ValueError(f"AES-{mode} takes {'a 16-byte IV' if ivlen else 'no IV'}")
    flat, pieces, n = split(data)
    if mode in ALIGNED and n % BLOCK:
        raise Unavailable("misaligned", f"AES-{mode} takes whole blocks, got {n} bytes")
    regions = into if isinstance(into, (list, tuple)) else None
    target: Out = n
    if into is not None and regions is None:
        target = memoryview(into).cast("B")[:n]
    sh, shlen = shared(
        driver,
        ("cipher", mode, encrypt, *key_shape(key)),
        key_ident(key),
        lambda b: _build_shared(b, key, mode, encrypt),
    )
    with Buffers(driver) as bufs:
        if flat is not None and regions is None:
            src, dst, sgf_in, sgf_out = _flat(bufs, iv or b"", flat, target)
        else:
            src, dst, sgf_in, sgf_out = _scattered(
                bufs, driver.byteorder, iv or b"", pieces, n, regions, target
            )
    words = seq_job(driver, shlen, seq_in=sgf_in, seq_out=sgf_out).fill(
        sh, src, ivlen + n, dst, n + ivlen
    )

    def finish(word: int, outs: list[Any]) -> Result:
        check(word)
        return (outs[0] if into is None else n), (outs[-1] if ivlen else None)

    return Prepared(words, bufs, finish)


def cipher(
    driver: DriverLike,
    key: AesKey,
    mode: str,
    iv: bytes | None,
    data: Data,
    *,
    encrypt: bool,
    into: Into = None,
    chunk: int = CHUNK,
) -> Result:
    """AES in ``mode``: (output or its length when ``into`` is given, next IV or counter).

    A flat input over ``chunk`` bytes (a multiple of 16) runs as chained jobs carrying the IV.
    """
    flat, _, n = split(data)
    if flat is None or isinstance(into, (list, tuple)) or n <= chunk:
        job = prepare_cipher(driver, key, mode, iv, data, encrypt=encrypt, into=into)
        return execute(driver, job)
    if chunk <= 0 or chunk % BLOCK:
        raise ValueError(f"chunk must be a positive multiple of 16, got {chunk}")
    view = memoryview(flat).cast("B")
    target = None if into is None else memoryview(into).cast("B")
    outs: list[bytes] = []
    for at in range(0, len(view), chunk):
        part = view[at : at + chunk]
        dest = None if target is None else target[at : at + len(part)]
        out, iv = execute(
            driver, prepare_cipher(driver, key, mode, iv, part, encrypt=encrypt, into=dest)
        )
        if isinstance(out, bytes):
            outs.append(out)
    return (b"".join(outs) if target is None else len(view)), iv
