"""The BLOB protocol: data sealed to this device under a key modifier (blob_gen.c), and key
blobs: an AES key sealed as a black blob, opened later into a BlackKey that recipes use without
software ever holding the key again."""

from __future__ import annotations

from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.recipes.base import (
    BlackKey,
    Buffers,
    DriverLike,
    Prepared,
    check,
    execute,
    first_output,
    key_id,
)
from cryptoffload.caam.recipes.templates import seq_job, shared

__all__ = [
    "OVERHEAD",
    "black_size",
    "decapsulate",
    "encapsulate",
    "prepare_blob",
    "release_key",
    "unwrap_key",
    "wrap_key",
]

#: A blob is its payload plus the covered blob key (32 bytes) and the MAC (16 bytes).
OVERHEAD = 48
MAX_KEY_MODIFIER = 16
AES_KEYS = frozenset({16, 24, 32})


def _keymod(keymod: bytes) -> bytes:
    if len(keymod) > MAX_KEY_MODIFIER:
        raise ValueError(f"a key modifier is at most 16 bytes, got {len(keymod)}")
    return bytes(keymod)


def black_size(length: int, *, ccm: bool) -> int:
    """Bytes of a key's black form: ECB pads to 16; CCM pads to 8, plus nonce and ICV (12)."""
    if ccm:
        return -(-length // 8) * 8 + 12
    return -(-length // 16) * 16


def _build(b: DescriptorBuilder, keymod: bytes, encap: bool) -> None:
    """The key modifier in the class-2 key register, then the BLOB OPERATION (no PDB)."""
    b.header(kind="shared", share="serial")
    b.key(2, data=keymod)
    b.protocol("BLOB", kind="encap" if encap else "decap")


def prepare_blob(driver: DriverLike, data: bytes, keymod: bytes, *, encap: bool) -> Prepared[bytes]:
    """One job: ``data`` sealed (len + 48 bytes out) or a blob opened (IcvError: another device,
    key modifier or a changed blob; nothing released). Flat buffers: the protocol takes no S/G."""
    keymod = _keymod(keymod)
    n = len(data)
    if not encap and n < OVERHEAD:
        raise ValueError(f"a blob is at least {OVERHEAD} bytes, got {n}")
    driver.ensure_rng()  # the secure keys (blob key cover) come with RNG4's instantiation
    out_len = n + OVERHEAD if encap else n - OVERHEAD
    sh, shlen = shared(
        driver, ("blob", encap, len(keymod)), key_id(keymod), lambda b: _build(b, keymod, encap)
    )
    with Buffers(driver) as bufs:
        src, dst = bufs.put(data), bufs.room(out_len)
        bufs.want(dst, out_len)
    words = seq_job(driver, shlen, seq_in=False, seq_out=False).fill(sh, src, n, dst, out_len)
    return Prepared(words, bufs, first_output)  # a failed job's output: wiped by the driver


def encapsulate(driver: DriverLike, data: bytes, keymod: bytes) -> bytes:
    """``data`` sealed to this device under ``keymod``: len(data) + 48 bytes."""
    return execute(driver, prepare_blob(driver, data, keymod, encap=True))


def decapsulate(driver: DriverLike, blob: bytes, keymod: bytes) -> bytes:
    """The data a blob of this device holds under ``keymod``; IcvError otherwise."""
    return execute(driver, prepare_blob(driver, blob, keymod, encap=False))


def wrap_key(driver: DriverLike, key: bytes, keymod: bytes, *, ccm: bool = True) -> bytes:
    """An AES key sealed as a black blob (len(key) + 48 bytes): the key goes into the class-1
    key register, leaves it only covered by the JDKEK (over its own input buffer, so the red key
    is gone from DMA memory), and that black form is sealed (BLOB with BLACK, EKT for a CCM
    cover). After a failure the driver wipes the buffer."""
    keymod = _keymod(keymod)
    n = len(key)
    if n not in AES_KEYS:
        raise ValueError(f"an AES key is 16, 24 or 32 bytes, got {n}")
    driver.ensure_rng()
    b = driver.builder()
    with Buffers(driver) as bufs:
        src, dst = bufs.put(key, extra=black_size(n, ccm=ccm) - n), bufs.room(n + OVERHEAD)
        bufs.want(dst, n + OVERHEAD)
    b.key(1, pointer=src, length=n)
    b.fifo_store(1, "KEY_CCM_JKEK" if ccm else "KEY_KEK", pointer=src, length=n)
    b.jump(jsl=True, condition=["NOP"], offset=1)  # the black key is out before it is read
    b.key(2, data=keymod)
    b.seq_in_ptr(pointer=src, length=n, flags=["EXT"])
    b.seq_out_ptr(pointer=dst, length=n + OVERHEAD, flags=["EXT"])
    b.protocol("BLOB", kind="encap", flags=["BLACK", *(["EKT"] if ccm else [])])
    return execute(driver, Prepared(b.words(), bufs, first_output))


def unwrap_key(driver: DriverLike, blob: bytes, keymod: bytes, *, ccm: bool = True) -> BlackKey:
    """The key of a black blob, as a BlackKey in DMA memory (covered by this boot's JDKEK);
    IcvError for another device, key modifier, cover or a changed blob. Free it with
    release_key."""
    keymod = _keymod(keymod)
    n = len(blob) - OVERHEAD
    if n not in AES_KEYS:
        raise ValueError(f"a key blob is 64, 72 or 80 bytes, got {len(blob)}")
    driver.ensure_rng()
    phys = driver.alloc(black_size(n, ccm=ccm))
    b = driver.builder()
    b.key(2, data=keymod)
    with Buffers(driver) as bufs:
        b.seq_in_ptr(pointer=bufs.put(blob), length=len(blob), flags=["EXT"])
    b.seq_out_ptr(pointer=phys, length=n, flags=["EXT"])
    b.protocol("BLOB", kind="decap", flags=["BLACK", *(["EKT"] if ccm else [])])

    def finish(word: int, outs: list) -> BlackKey:
        if word:
            release_key(driver, BlackKey(phys, n, ccm))
        check(word)
        return BlackKey(phys, n, ccm)

    return execute(driver, Prepared(b.words(), bufs, finish))


def release_key(driver: DriverLike, key: BlackKey) -> None:
    """Wipe and free a BlackKey's DMA memory (shared descriptors that named it are not used
    again: their cache key holds the BlackKey's own token)."""
    driver.write(key.phys, bytes(black_size(key.length, ccm=key.ccm)))
    driver.free(key.phys)
