"""What every recipe shares: DMA buffers, status checks, job templates, shared descriptors."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from cryptoffload.caam import status
from cryptoffload.caam.desc import sgtable
from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.jr.jobs import CaamError, Job, Out, Request

__all__ = [
    "AesKey",
    "BlackKey",
    "Buffers",
    "CaamError",
    "Data",
    "DriverLike",
    "IcvError",
    "Piece",
    "Prepared",
    "Region",
    "append_key",
    "check",
    "execute",
    "execute_many",
    "first_output",
    "key_id",
    "key_ident",
    "key_shape",
    "piece_entries",
    "split",
]

T = TypeVar("T")
Bytes = bytes | bytearray | memoryview


class DriverLike(Protocol):
    """The members of caam.driver.Driver that recipes use."""

    pointer_size: int
    byteorder: str

    def builder(self) -> DescriptorBuilder: ...
    def alloc(self, size: int) -> int: ...
    def write(self, phys: int, data: Bytes) -> None: ...
    def free(self, phys: int) -> None: ...
    def shared(self, key: Hashable, build: Callable[[], Sequence[int]]) -> int: ...
    def submit(
        self, words: Sequence[int], *, owned: Sequence[int] = (),
        collect: Sequence[tuple[int, Out]] = (),
    ) -> Job: ...  # fmt: skip
    def submit_many(self, requests: Sequence[Request | Sequence[int]]) -> list[Job]: ...
    def ensure_rng(self) -> None: ...


class IcvError(CaamError):
    """The engine's integrity check failed (CCB error 0xA: GCM/CCM tag, HMAC ICV, blob MAC)."""


@dataclass(frozen=True)
class Region:
    """``length`` bytes of DMA memory at bus address ``phys`` (the caller's: from driver.alloc)."""

    phys: int
    length: int


Piece = Bytes | Region
#: A payload: one buffer, or pieces (bytes copied into DMA memory, Regions used in place)
#: that go to the engine as one sec4 scatter/gather table.
Data = Bytes | Sequence[Piece]


def split(data: Data) -> tuple[Bytes | None, Sequence[Piece], int]:
    """(the data when it is one buffer, its pieces, its length)."""
    if isinstance(data, (list, tuple)):
        return None, data, sum(p.length if isinstance(p, Region) else len(p) for p in data)
    return data, [data], len(data)


def piece_entries(bufs: Buffers, pieces: Sequence[Piece]) -> list[tuple[int, int]]:
    """S/G entries for pieces: a Region in place, bytes copied into a region of their own."""
    out = []
    for piece in pieces:
        if isinstance(piece, Region):
            out.append((piece.phys, piece.length))
        else:
            out.append((bufs.put(piece), len(piece)))
    return out


def check(word: int) -> None:
    """Nothing for status 0; IcvError for an ICV failure; CaamError for any other status."""
    if word == status.OK:
        return
    if word >> 28 == status.SRC_CCB and word & 0xF == status.ERR_ICVCHK:
        raise IcvError(word)
    raise CaamError(word)


_KEY_ID_SECRET = os.urandom(32)


def key_id(key: Bytes) -> bytes:
    """A 16-byte name of a key for cache keys: a MAC under a per-process secret (keyed BLAKE2b),
    so a cache key seen in a log or repr says nothing about the key, not even which of two
    guesses it is."""
    return hashlib.blake2b(key, key=_KEY_ID_SECRET, digest_size=16).digest()


class Buffers:
    """The DMA regions of one job (freed by the driver when it is reaped, wiped first if the job
    failed) and what it reads back at completion (``collect``: only when the status is 0)."""

    __slots__ = ("_driver", "collect", "owned")

    def __init__(self, driver: DriverLike) -> None:
        self._driver = driver
        self.owned: list[int] = []
        self.collect: list[tuple[int, Out]] = []

    def room(self, size: int) -> int:
        """A new region of ``size`` bytes (at least 1)."""
        phys = self._driver.alloc(size)
        self.owned.append(phys)
        return phys

    def put(self, *parts: Bytes, extra: int = 0) -> int:
        """A new region holding ``parts`` one after the other, then ``extra`` bytes of room."""
        size = sum(len(p) for p in parts)
        phys = self.room(size + extra)
        if len(parts) > 1 and size <= 4096:  # one copy into DMA memory rather than several
            parts = (b"".join(parts),)
        at = phys
        for part in parts:
            if len(part):
                self._driver.write(at, part)
                at += len(part)
        return phys

    def want(self, phys: int, out: Out) -> int:
        """Read ``out`` bytes (or fill the buffer ``out``) at completion; the output's index."""
        self.collect.append((phys, out))
        return len(self.collect) - 1

    def table(self, entries: Sequence[tuple[int, int]], byteorder: str) -> int:
        """A sec4 S/G table over (address, length) pieces, FIN on the last, padded to 4."""
        last = len(entries) - 1
        raw = sgtable.table_bytes(
            [sgtable.SgEntry(a, n, final=i == last) for i, (a, n) in enumerate(entries)],
            byteorder,
        )
        return self.put(raw)

    def release(self) -> None:
        """Free the regions of a job that never reached the ring."""
        owned, self.owned = self.owned, []
        for phys in owned:
            self._driver.free(phys)

    def __enter__(self) -> Buffers:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        """Preparing the job failed: nothing will free the regions but this."""
        if kind is not None:
            self.release()


Finish = Callable[[int, list[Any]], T]


class Prepared(Generic[T]):
    """A job ready for the ring: its descriptor ``words``, its buffers, and ``finish(status,
    outputs)`` that turns the status and the collected outputs into the result (raising
    CaamError / IcvError)."""

    __slots__ = ("buffers", "finish", "words")

    def __init__(self, words: list[int], buffers: Buffers, finish: Finish[T]) -> None:
        self.words = words
        self.buffers = buffers
        self.finish = finish

    def request(self) -> Request:
        """The job as the driver's submit_many takes it."""
        return Request(self.words, self.buffers.owned, self.buffers.collect)


def first_output(word: int, outs: list[Any]) -> Any:
    """The finish of a job whose result is its one collected output."""
    check(word)
    return outs[0]


def execute(driver: DriverLike, job: Prepared[T]) -> T:
    """Run one prepared job and return its result."""
    b = job.buffers
    done = driver.submit(job.words, owned=b.owned, collect=b.collect)
    return job.finish(done.wait(), done.outputs)


def execute_many(driver: DriverLike, jobs: Sequence[Prepared[Any]]) -> list[Any]:
    """Every job on the ring at once (as many as fit, the rest as slots free); each one's
    result, or the exception it ended with (CaamError, IcvError, RingFull...), in order."""
    done = driver.submit_many([job.request() for job in jobs])
    results: list[Any] = []
    for job, ran in zip(jobs, done, strict=True):
        try:
            results.append(job.finish(ran.wait(), ran.outputs))
        except Exception as err:
            results.append(err)
    return results


# ---------------------------------------------------------------------- keys


@dataclass(frozen=True, repr=False)
class BlackKey:
    """A key the engine holds covered by its JDKEK (``recipes.blob.unwrap_key``): ``length``
    key bytes whose black form (ECB, or CCM with ``ccm``) sits in DMA memory at ``phys``.
    Recipes take it wherever they take an AES key; software never sees the key itself."""

    phys: int
    length: int
    ccm: bool
    token: bytes = field(default_factory=lambda: os.urandom(16))

    def __repr__(self) -> str:
        cover = "ccm" if self.ccm else "ecb"
        return f"BlackKey(length={self.length}, cover={cover}, phys=0x{self.phys:x})"


AesKey = bytes | bytearray | memoryview | BlackKey


def key_shape(key: AesKey) -> tuple[Hashable, ...]:
    """What of a key fixes a shared descriptor's layout (never the key's bytes)."""
    if isinstance(key, BlackKey):
        return ("black", key.length, key.ccm)
    return ("red", len(key))


def key_ident(key: AesKey) -> bytes:
    """The key's name in a cache key: key_id of a red key, a black key's random token."""
    return key.token if isinstance(key, BlackKey) else key_id(key)


def append_key(b: DescriptorBuilder, cls: int, key: AesKey) -> None:
    """JUMP over the key when the descriptor is still loaded (SHRD), then the KEY: inline for a
    red key, ENC (EKT for a CCM cover) from DMA memory for a black one."""
    if isinstance(key, BlackKey):
        b.jump(jsl=True, condition=["SHRD"], offset=2 + (2 if b.long_pointers else 1))
        b.key(cls, pointer=key.phys, length=key.length, enc=True, ekt=key.ccm)
        return
    b.jump(jsl=True, condition=["SHRD"], offset=2 + (len(key) + 3) // 4)
    b.key(cls, data=bytes(key))
