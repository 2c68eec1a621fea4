"""SHA-1/2 and HMAC on the MDHA, one-shot and streaming, as the kernel's caamhash runs them:
four shared descriptors per algorithm (and key); the running class-2 context saved between jobs."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.recipes.base import (
    Buffers,
    DriverLike,
    Prepared,
    append_key,
    execute,
    first_output,
    key_id,
)
from cryptoffload.caam.recipes.templates import seq_job, shared

__all__ = [
    "CHUNK",
    "HASHES",
    "HashStream",
    "digest",
    "digest_at",
    "open_stream",
    "prepare_digest",
]


@dataclass(frozen=True)
class HashInfo:
    """The MDHA's ALGSEL name, the running context (state + 8-byte count), digest and block."""

    alg: str
    ctx_len: int
    digest_size: int
    block_size: int


HASHES = {
    "sha1": HashInfo("SHA1", 28, 20, 64),
    "sha224": HashInfo("SHA224", 40, 28, 64),
    "sha256": HashInfo("SHA256", 40, 32, 64),
    "sha384": HashInfo("SHA384", 72, 48, 128),
    "sha512": HashInfo("SHA512", 72, 64, 128),
}
#: caamhash's shared descriptors: (algorithm state, context in first, whole context out).
KINDS = {
    "digest": ("initfinal", False, False),
    "first": ("init", False, True),
    "update": ("update", True, True),
    "final": ("finalize", True, False),
}
#: A message longer than this is hashed in several jobs through the saved context.
CHUNK = 1 << 20

Bytes = bytes | bytearray | memoryview


def _info(name: str) -> HashInfo:
    try:
        return HASHES[name]
    except KeyError:
        raise ValueError(f"hash must be one of {', '.join(HASHES)}, got {name!r}") from None


def hmac_key(name: str, key: Bytes) -> bytes:
    """The key the MDHA takes: hashed first when longer than a block (RFC 2104); an empty key
    as one zero byte (the same HMAC: keys are zero-padded to a block)."""
    info = _info(name)
    if len(key) > info.block_size:
        return hashlib.new(name, key).digest()
    return bytes(key) or b"\0"


def _build(b: DescriptorBuilder, info: HashInfo, kind: str, key: bytes | None) -> None:
    """cnstr_shdsc_ahash, with the raw HMAC key in the class-2 key register (AAI HMAC)."""
    state, ctx_in, ctx_out = KINDS[kind]
    b.header(kind="shared", share="serial")
    if key is not None:
        append_key(b, 2, key)
    if ctx_in:
        b.load(2, "context", length=info.ctx_len, seq=True)
    b.operation(2, info.alg, aai="HASH" if key is None else "HMAC", state=state, encrypt=True)
    b.math("ADD", "SEQINLEN", "MATH0", "VARSEQINLEN")
    b.fifo_load(2, "MSG", seq=True, vlf=True, last2=True)
    b.store(2, "context", length=info.ctx_len if ctx_out else info.digest_size, seq=True)


def _prepare(
    driver: DriverLike,
    name: str,
    kind: str,
    key: bytes | None,
    ident: bytes | None,
    context: bytes,
    data: Bytes,
) -> Prepared[bytes]:
    """One job over ``context ‖ data``, in place: the result (context or digest) at the start."""
    info = _info(name)
    sh, shlen = shared(
        driver, ("hash", name, kind, None if key is None else len(key)), ident,
        lambda b: _build(b, info, kind, key),
    )  # fmt: skip
    ctx_out = KINDS[kind][2]
    out_len = info.ctx_len if ctx_out else info.digest_size
    in_len = len(context) + len(data)
    with Buffers(driver) as bufs:
        buf = bufs.put(context, data, extra=max(0, out_len - in_len))
        bufs.want(buf, out_len)
    if in_len:
        words = seq_job(driver, shlen, seq_in=False, seq_out=False).fill(
            sh, buf, in_len, buf, out_len
        )
    else:  # nothing to hash: the kernel leaves the SEQ IN PTR out
        words = seq_job(driver, shlen, seq_in=None, seq_out=False).fill(sh, buf, out_len)
    return Prepared(words, bufs, first_output)


def prepare_digest(
    driver: DriverLike, name: str, data: Bytes, key: Bytes | None = None
) -> Prepared[bytes]:
    """One job: the digest of ``data`` (HMAC with ``key``)."""
    k = None if key is None else hmac_key(name, key)
    return _prepare(driver, name, "digest", k, None if k is None else key_id(k), b"", data)


def digest_at(driver: DriverLike, name: str, phys: int, n: int, key: Bytes | None = None) -> bytes:
    """The digest (HMAC with ``key``) of ``n`` bytes of DMA memory at ``phys`` read in place (a
    caller's DmaBuffer): one job whatever ``n`` (EXT lengths: up to 4 GiB - 1), the message
    never copied; only the digest comes back through a region of its own."""
    info = _info(name)
    k = None if key is None else hmac_key(name, key)
    sh, shlen = shared(
        driver, ("hash", name, "digest", None if k is None else len(k)),
        None if k is None else key_id(k), lambda b: _build(b, info, "digest", k),
    )  # fmt: skip
    with Buffers(driver) as bufs:
        out = bufs.room(info.digest_size)
        bufs.want(out, info.digest_size)
    if n:
        words = seq_job(driver, shlen, seq_in=False, seq_out=False).fill(
            sh, phys, n, out, info.digest_size
        )
    else:  # nothing to hash: the kernel leaves the SEQ IN PTR out
        words = seq_job(driver, shlen, seq_in=None, seq_out=False).fill(sh, out, info.digest_size)
    return execute(driver, Prepared(words, bufs, first_output))


def digest(driver: DriverLike, name: str, data: Bytes, key: Bytes | None = None) -> bytes:
    """The digest (or HMAC) of ``data``: one job, or several through the context past CHUNK."""
    if len(data) <= CHUNK:
        return execute(driver, prepare_digest(driver, name, data, key))
    stream = open_stream(driver, name, key)
    stream.update(data)
    return stream.finalize()


class HashStream:
    """A hash or HMAC fed piece by piece: whole blocks go to the engine at each update, the
    class-2 running context is kept here between jobs, the rest (under a block) waits."""

    def __init__(self, driver: DriverLike, name: str, key: Bytes | None = None) -> None:
        self._driver = driver
        self.name = name
        self._info = _info(name)
        self._key = None if key is None else hmac_key(name, key)
        self._ident = None if self._key is None else key_id(self._key)
        self._context: bytes | None = None  # None until the first whole blocks went through
        self._pending = bytearray()
        self._spent = False

    def __repr__(self) -> str:
        keyed = "HMAC-" if self._key is not None else ""
        return f"<HashStream {keyed}{self.name} pending={len(self._pending)}>"

    def _run(self, kind: str, data: Bytes) -> bytes:
        job = _prepare(self._driver, self.name, kind, self._key, self._ident,
                       self._context or b"", data)  # fmt: skip
        return execute(self._driver, job)

    def update(self, data: Bytes) -> None:
        """Take more message; whole blocks go to the engine now (at most CHUNK per job)."""
        if self._spent:
            raise ValueError("the stream is finalized")
        self._pending += data
        block = self._info.block_size
        while len(self._pending) >= block:
            size = min(len(self._pending) - len(self._pending) % block, CHUNK)
            piece = memoryview(self._pending)[:size]
            try:
                self._context = self._run("first" if self._context is None else "update", piece)
            finally:
                piece.release()
            del self._pending[:size]

    def copy(self) -> HashStream:
        """An independent stream with the same input so far."""
        if self._spent:
            raise ValueError("the stream is finalized")
        twin = object.__new__(HashStream)
        twin.__dict__.update(self.__dict__)
        twin._pending = bytearray(self._pending)
        return twin

    def finalize(self) -> bytes:
        """The digest (or HMAC); the stream is spent."""
        if self._spent:
            raise ValueError("the stream is finalized")
        self._spent = True
        pending, self._pending = bytes(self._pending), bytearray()
        return self._run("digest" if self._context is None else "final", pending)

    def close(self) -> None:
        self._spent = True
        self._pending = bytearray()
        self._context = None


def open_stream(driver: DriverLike, name: str, key: Bytes | None = None) -> HashStream:
    """A streaming hash (HMAC with ``key``) on the engine."""
    return HashStream(driver, name, key)
