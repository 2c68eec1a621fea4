"""Descriptors shaped as the Linux CAAM driver builds them (caamalg_desc.c, caamalg.c, caamhash.c),
written from the word listings in /work/shared/notes/linux-caam-descriptors.md with the builder's
named fields, plus sec4 S/G tables and a job ring on the model through the one driver."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.desc.words import to_bytes
from cryptoffload.caam.jr.driver import Driver
from cryptoffload.caam.jr.transport import ModelTransport
from cryptoffload.caam.model import CaamModel

# ---------------------------------------------------------------------- skcipher (§2.1)

#: The IV's place in the class-1 context: CBC at 0, CTR at 16 ("CONTEXT1[255:128] = IV").
IV_OFFSET = {"CBC": 0, "CTR": 16}
IVSIZE = 16


def _shared(order: str, *, savectx: bool = False) -> DescriptorBuilder:
    return DescriptorBuilder(byteorder=order).header(kind="shared", share="serial", savectx=savectx)


def _skip_key(b: DescriptorBuilder, key: bytes) -> None:
    """JUMP over the inline key when the descriptor is still loaded (SHRD), then the KEY."""
    key_words = 1 + (len(key) + 3) // 4
    b.jump(jsl=True, condition=["SHRD"], offset=1 + key_words)
    b.key(1, data=key)


def shdsc_skcipher_encap(key: bytes, mode: str, order: str = "big") -> list[int]:
    """cnstr_shdsc_skcipher_encap: AES-CBC or AES-CTR encryption, the IV in the input."""
    off = IV_OFFSET[mode]
    b = _shared(order, savectx=True)
    _skip_key(b, key)
    b.load(1, "context", offset=off, length=IVSIZE, seq=True)
    b.operation(1, "AES", aai=mode, state="init", encrypt=True)
    _skcipher_body(b, off)
    return b.words()


def shdsc_skcipher_decap(key: bytes, mode: str, order: str = "big") -> list[int]:
    """cnstr_shdsc_skcipher_decap: with the DK variant when the IV sits at offset 0 (CBC)."""
    off = IV_OFFSET[mode]
    b = _shared(order, savectx=True)
    _skip_key(b, key)
    b.load(1, "context", offset=off, length=IVSIZE, seq=True)
    if off == 0:
        b.jump(jsl=True, condition=["SHRD"], offset=3)
        b.operation(1, "AES", aai=mode, state="init")
        b.jump(offset=2)
        b.operation(1, "AES", aai=mode, state="init", dk=True)
    else:
        b.operation(1, "AES", aai=mode, state="init")
    _skcipher_body(b, off)
    return b.words()


def _skcipher_body(b: DescriptorBuilder, off: int) -> None:
    b.math("ADD", "SEQINLEN", "MATH0", "VARSEQOUTLEN")
    b.math("ADD", "SEQINLEN", "MATH0", "VARSEQINLEN")
    b.fifo_load(1, "MSG", seq=True, vlf=True, last1=True)
    b.fifo_store(0, "MESSAGE_DATA", seq=True, vlf=True)
    b.store(1, "context", offset=off, length=IVSIZE, seq=True)


def job_with_shared(
    shared: int, shared_length: int, *, long_pointers: bool, order: str
) -> DescriptorBuilder:
    """init_job_desc_shared(desc, ptr, len, HDR_SHARE_DEFER | HDR_REVERSE)."""
    b = DescriptorBuilder(long_pointers=long_pointers, byteorder=order)
    return b.header(shared_pointer=shared, shared_length=shared_length, reverse=True, share="defer")


def seq_flags(sgf: bool) -> tuple[str, ...]:
    """append_seq_{in,out}_ptr take a u32 length: always the EXT form."""
    return ("SGF", "EXT") if sgf else ("EXT",)


def skcipher_job(
    shared: int, shared_length: int, src: int, dst: int, cryptlen: int, *, long: bool, order: str
) -> list[int]:
    """init_skcipher_job: both sequences are S/G tables (IV entry first in, last out)."""
    b = job_with_shared(shared, shared_length, long_pointers=long, order=order)
    b.seq_in_ptr(pointer=src, length=cryptlen + IVSIZE, flags=seq_flags(True))
    b.seq_out_ptr(pointer=dst, length=cryptlen + IVSIZE, flags=seq_flags(True))
    return b.words()


# ---------------------------------------------------------------------- GCM (§2.2)


def shdsc_gcm_encap(key: bytes, authsize: int, order: str = "big") -> list[int]:
    """cnstr_shdsc_gcm_encap: the branches for no input, no AAD and no payload."""
    b = _shared(order)
    _skip_key(b, key)
    b.operation(1, "AES", aai="GCM", state="initfinal", encrypt=True)
    b.math("SUB", "SEQINLEN", "MATH0", "VARSEQOUTLEN")  # 8: assoclen + cryptlen
    b.jump(condition=["MATH_Z"], offset=13)  # 9 -> 22: no input at all
    b.math("ADD", "ZERO", "MATH3", "VARSEQINLEN")  # 10: assoclen
    b.jump(condition=["MATH_Z"], offset=6)  # 11 -> 17: no AAD
    b.math("ADD", "ZERO", "MATH3", "VARSEQOUTLEN")  # 12
    b.fifo_store(0, "SKIP", seq=True, vlf=True)  # 13: step over the AAD area
    b.math("SUB", "SEQINLEN", "MATH3", "VARSEQOUTLEN")  # 14: cryptlen
    b.jump(condition=["MATH_Z"], offset=6)  # 15 -> 21: no payload
    b.fifo_load(1, "AAD", seq=True, vlf=True, flush1=True)  # 16
    b.math("SUB", "SEQINLEN", "MATH0", "VARSEQINLEN")  # 17
    b.fifo_store(0, "MESSAGE_DATA", seq=True, vlf=True)  # 18
    b.fifo_load(1, "MSG", seq=True, vlf=True, last1=True)  # 19
    b.jump(offset=2)  # 20 -> 22
    b.fifo_load(1, "AAD", seq=True, vlf=True, last1=True)  # 21: the zero-payload branch
    b.store(1, "context", length=authsize, seq=True)  # 22: the tag
    return b.words()


def shdsc_gcm_decap(key: bytes, authsize: int, order: str = "big") -> list[int]:
    """cnstr_shdsc_gcm_decap: the ICV checked by the engine."""
    b = _shared(order)
    _skip_key(b, key)
    b.operation(1, "AES", aai="GCM", state="initfinal", icv=True)
    b.math("ADD", "ZERO", "MATH3", "VARSEQINLEN")  # 8
    b.jump(condition=["MATH_Z"], offset=4)  # 9 -> 13: no AAD
    b.math("ADD", "ZERO", "MATH3", "VARSEQOUTLEN")  # 10
    b.fifo_store(0, "SKIP", seq=True, vlf=True)  # 11
    b.fifo_load(1, "AAD", seq=True, vlf=True, flush1=True)  # 12
    b.math("SUB", "SEQOUTLEN", "MATH0", "VARSEQINLEN")  # 13: the plaintext length
    b.jump(condition=["MATH_Z"], offset=4)  # 14 -> 18: no payload
    b.math("SUB", "SEQOUTLEN", "MATH0", "VARSEQOUTLEN")  # 15
    b.fifo_store(0, "MESSAGE_DATA", seq=True, vlf=True)  # 16
    b.fifo_load(1, "MSG", seq=True, vlf=True, flush1=True)  # 17
    b.fifo_load(1, "ICV", seq=True, length=authsize, last1=True)  # 18
    return b.words()


@dataclass(frozen=True)
class Pointer:
    """A sequence pointer: a flat buffer, or an S/G table (``sgf``)."""

    address: int
    sgf: bool = False


def gcm_job(
    shared: int,
    shared_length: int,
    src: Pointer,
    dst: Pointer,
    *,
    assoclen: int,
    cryptlen: int,
    authsize: int,
    iv: bytes,
    encrypt: bool,
    long: bool,
    order: str,
) -> list[int]:
    """init_aead_job + init_gcm_job. ``cryptlen`` counts the tag when decrypting."""
    out_len = assoclen + cryptlen + authsize if encrypt else assoclen + cryptlen - authsize
    b = job_with_shared(shared, shared_length, long_pointers=long, order=order)
    b.seq_in_ptr(pointer=src.address, length=assoclen + cryptlen, flags=seq_flags(src.sgf))
    b.seq_out_ptr(pointer=dst.address, length=out_len, flags=seq_flags(dst.sgf))
    b.math("ADD", "ZERO", "IMM", "MATH3", imm=assoclen)
    empty = encrypt and assoclen + cryptlen == 0  # the IV alone ends the stream
    b.fifo_load(1, "IV", data=iv, flush1=True, last1=empty)
    return b.words()


# ---------------------------------------------------------------------- ahash (§2.3)

HASHES = {  # name: (ALGSEL name, ctx_len, digest size, block size)
    "md5": ("MD5", 24, 16, 64),
    "sha1": ("SHA1", 28, 20, 64),
    "sha224": ("SHA224", 40, 28, 64),
    "sha256": ("SHA256", 40, 32, 64),
    "sha384": ("SHA384", 72, 48, 128),
    "sha512": ("SHA512", 72, 64, 128),
}
#: The four shared descriptors caamhash builds: the algorithm state, whether the running
#: context comes in first, and whether the full context (else the digest) goes out.
AHASH_SHARED = {
    "update": ("update", True, True),
    "update_first": ("init", False, True),
    "final": ("finalize", True, False),
    "digest": ("initfinal", False, False),
}


def shdsc_ahash(name: str, kind: str, order: str = "big") -> list[int]:
    """cnstr_shdsc_ahash (no key) for ``kind`` update, update_first, final or digest."""
    alg, ctx_len, digestsize, _ = HASHES[name]
    state, ctx_in, ctx_out = AHASH_SHARED[kind]
    b = _shared(order)
    if ctx_in:
        b.load(2, "context", length=ctx_len, seq=True)
    b.operation(2, alg, state=state, encrypt=True)
    b.math("ADD", "SEQINLEN", "MATH0", "VARSEQINLEN")
    b.fifo_load(2, "MSG", seq=True, vlf=True, last2=True)
    b.store(2, "context", length=ctx_len if ctx_out else digestsize, seq=True)
    return b.words()


def ahash_job(
    shared: int,
    shared_length: int,
    src: Pointer | None,
    src_len: int,
    dst: int,
    dst_len: int,
    *,
    long: bool,
    order: str,
) -> list[int]:
    """The caamhash job: SEQ IN PTR (left out when there is nothing to hash), SEQ OUT PTR."""
    b = job_with_shared(shared, shared_length, long_pointers=long, order=order)
    if src is not None:
        b.seq_in_ptr(pointer=src.address, length=src_len, flags=seq_flags(src.sgf))
    b.seq_out_ptr(pointer=dst, length=dst_len, flags=seq_flags(False))
    return b.words()


# ---------------------------------------------------------------------- sec4 S/G tables (§1.11)

SG_FIN = 0x4000_0000
SG_EXT = 0x8000_0000


def sg_entry(
    address: int, length: int, order: str, *, fin: bool = False, ext: bool = False, offset: int = 0
) -> bytes:
    """One 16-byte entry: the 64-bit address most significant word first (big-endian parts and
    i.MX), each word in the part's byte order; length with FIN/EXT; offset."""
    words = (
        address >> 32,
        address & 0xFFFF_FFFF,
        length | (SG_FIN if fin else 0) | (SG_EXT if ext else 0),
        offset,
    )
    return b"".join(w.to_bytes(4, order) for w in words)


def sg_table(pieces: Sequence[tuple[int, int]], order: str, *, fin: bool = True) -> bytes:
    """Entries for ``pieces`` (FIN on the last when ``fin``), padded with zeroed entries to a
    multiple of 4 (pad_sg_nents)."""
    raw = b"".join(
        sg_entry(a, n, order, fin=fin and i == len(pieces) - 1) for i, (a, n) in enumerate(pieces)
    )
    return raw + bytes(16 * (-len(pieces) % 4))


def fragments(n: int, rng: random.Random, most: int = 6) -> list[int]:
    """A random split of ``n`` bytes into 1..``most`` lengths (zero-length pieces allowed)."""
    if n == 0:
        return [0]
    cuts = sorted(rng.randint(0, n) for _ in range(rng.randint(0, most - 1)))
    return [b - a for a, b in zip([0, *cuts], [*cuts, n], strict=True)]


# ---------------------------------------------------------------------- the job ring

#: The part families the kernel paths run on: (part, long pointers).
PARTS = [("imx7d", False), ("t2080", False), ("t2080", True)]
PART_IDS = ["imx7d", "t2080-ptr32", "t2080-ptr64"]


class Ring:
    """Job ring 0 of a fresh model through the project's one driver (one job at a time); DMA
    buffers from the driver."""

    def __init__(self, part: str, long: bool) -> None:
        self.model = CaamModel(part, seed=b"linux")
        self.driver = Driver(ModelTransport(self.model), long_pointers=long, depth=4)
        self.order = self.driver.byteorder
        self.long = self.driver.long_pointers
        assert self.long == long
        self.ptr = self.driver.pointer_size

    def buf(self, data: bytes | int) -> int:
        return self.driver.alloc(data) if isinstance(data, int) else self.driver.put(data)

    def read(self, addr: int, n: int) -> bytes:
        return self.driver.read(addr, n) if n else b""

    def descriptor(self, words: list[int]) -> int:
        """A (shared) descriptor in DMA memory, in the part's byte order."""
        return self.buf(to_bytes(words, self.order))

    def run(self, words: list[int]) -> int:
        """Run one job descriptor through the ring; its status word."""
        return self.driver.run(words)

    def scatter(self, data: bytes, lengths: Sequence[int]) -> list[tuple[int, int]]:
        """``data`` cut into separate buffers of ``lengths``: the pieces (address, length)."""
        pieces, pos = [], 0
        for n in lengths:
            pieces.append((self.buf(data[pos : pos + n]) if n else self.buf(16), n))
            pos += n
        return pieces

    def gather(self, pieces: Sequence[tuple[int, int]]) -> bytes:
        return b"".join(self.read(a, n) for a, n in pieces)

    def table(self, pieces: Sequence[tuple[int, int]], *, fin: bool = True) -> int:
        return self.buf(sg_table(pieces, self.order, fin=fin))
