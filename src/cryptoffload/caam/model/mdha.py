"""Pure-Python MD5, SHA-1, SHA-2 compression with a running state that saves to a context.

``hashlib`` cannot export its internal state, so the MDHA's multi-job states (INIT, UPDATE,
FINALIZE) run on these functions. The saved class-2 context is the running chaining state
(SHA: big-endian words; MD5: its natural little-endian words; SHA-224 keeps the full 8-word
SHA-256 state, SHA-384 the full SHA-512 state) followed by an 8-byte big-endian count of the
message bytes hashed so far: 24 bytes for MD5, 28 SHA-1, 40 SHA-224/256, 72 SHA-384/512, the
sizes the brief gives (and Linux caamhash's running lengths). The sizes are documented; the
count's exact encoding on hardware (bytes or bits, byte order) is not confirmed.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ALGORITHMS", "Algorithm", "RunningHash"]

COUNT_BYTES = 8
_M32 = 0xFFFF_FFFF


def _rol32(x: int, n: int) -> int:
    return ((x << n) | (x >> (32 - n))) & _M32


# ---------------------------------------------------------------------- MD5 (RFC 1321)

_MD5_S = (7, 12, 17, 22) * 4 + (5, 9, 14, 20) * 4 + (4, 11, 16, 23) * 4 + (6, 10, 15, 21) * 4
# T[i] = floor(abs(sin(i + 1)) * 2**32), written out rather than computed with floats.
_MD5_T = (
    0xD76AA478, 0xE8C7B756, 0x242070DB, 0xC1BDCEEE, 0xF57C0FAF, 0x4787C62A, 0xA8304613, 0xFD469501,
    0x698098D8, 0x8B44F7AF, 0xFFFF5BB1, 0x895CD7BE, 0x6B901122, 0xFD987193, 0xA679438E, 0x49B40821,
    0xF61E2562, 0xC040B340, 0x265E5A51, 0xE9B6C7AA, 0xD62F105D, 0x02441453, 0xD8A1E681, 0xE7D3FBC8,
    0x21E1CDE6, 0xC33707D6, 0xF4D50D87, 0x455A14ED, 0xA9E3E905, 0xFCEFA3F8, 0x676F02D9, 0x8D2A4C8A,
    0xFFFA3942, 0x8771F681, 0x6D9D6122, 0xFDE5380C, 0xA4BEEA44, 0x4BDECFA9, 0xF6BB4B60, 0xBEBFBC70,
    0x289B7EC6, 0xEAA127FA, 0xD4EF3085, 0x04881D05, 0xD9D4D039, 0xE6DB99E5, 0x1FA27CF8, 0xC4AC5665,
    0xF4292244, 0x432AFF97, 0xAB9423A7, 0xFC93A039, 0x655B59C3, 0x8F0CCC92, 0xFFEFF47D, 0x85845DD1,
    0x6FA87E4F, 0xFE2CE6E0, 0xA3014314, 0x4E0811A1, 0xF7537E82, 0xBD3AF235, 0x2AD7D2BB, 0xEB86D391,
)  # fmt: skip
_MD5_G = tuple(
    i if i < 16 else (5 * i + 1) % 16 if i < 32 else (3 * i + 5) % 16 if i < 48 else 7 * i % 16
    for i in range(64)
)


def _md5_compress(state: list[int], block: bytes) -> None:
    x = struct.unpack("<16I", block)
    a, b, c, d = state
    for i in range(64):
        if i < 16:
            f = (b & c) | (~b & d)
        elif i < 32:
            f = (d & b) | (~d & c)
        elif i < 48:
            f = b ^ c ^ d
        else:
            f = c ^ (b | (~d & _M32))
        f = (f + a + _MD5_T[i] + x[_MD5_G[i]]) & _M32
        a, d, c = d, c, b
        b = (b + _rol32(f, _MD5_S[i])) & _M32
    for i, v in enumerate((a, b, c, d)):
        state[i] = (state[i] + v) & _M32


# ---------------------------------------------------------------------- SHA-1 (FIPS 180-4)


def _sha1_compress(state: list[int], block: bytes) -> None:
    w = list(struct.unpack(">16I", block))
    for t in range(16, 80):
        w.append(_rol32(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1))
    a, b, c, d, e = state
    for t in range(80):
        if t < 20:
            f, k = (b & c) | (~b & d), 0x5A827999
        elif t < 40:
            f, k = b ^ c ^ d, 0x6ED9EBA1
        elif t < 60:
            f, k = (b & c) | (b & d) | (c & d), 0x8F1BBCDC
        else:
            f, k = b ^ c ^ d, 0xCA62C1D6
        a, b, c, d, e = (_rol32(a, 5) + f + e + k + w[t]) & _M32, a, _rol32(b, 30), c, d
    for i, v in enumerate((a, b, c, d, e)):
        state[i] = (state[i] + v) & _M32


# ---------------------------------------------------------------------- SHA-2 (SHA-224 to SHA-512)


def _primes(n: int) -> list[int]:
    found: list[int] = []
    candidate = 2
    while len(found) < n:
        if all(candidate % p for p in found if p * p <= candidate):
            found.append(candidate)
        candidate += 1
    return found


def _iroot(n: int, k: int) -> int:
    """floor(n ** (1/k)) for a non-negative integer, exactly."""
    lo, hi = 0, 1 << (n.bit_length() // k + 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if mid**k <= n:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _frac_root(p: int, k: int, bits: int) -> int:
    """The first ``bits`` bits of the fractional part of p ** (1/k) (FIPS 180-4 constants)."""
    return _iroot(p << (k * bits), k) & ((1 << bits) - 1)


_PRIMES = _primes(80)
_K256 = tuple(_frac_root(p, 3, 32) for p in _PRIMES[:64])
_K512 = tuple(_frac_root(p, 3, 64) for p in _PRIMES[:80])


@dataclass(frozen=True)
class _Sha2Rounds:
    """What SHA-256 and SHA-512 compression differ in: word size, constants, rotation amounts.

    Both run the same rounds (FIPS 180-4 sections 6.2.2 and 6.4.2) over their own words.
    """

    word_bits: int
    block_format: str  # struct format of the 16 message words
    k: tuple[int, ...]  # one constant per round
    sigma0: tuple[int, int, int]  # of w[t-15] in the schedule: two rotations, then a shift
    sigma1: tuple[int, int, int]  # of w[t-2] in the schedule: two rotations, then a shift
    big_sigma0: tuple[int, int, int]  # of a in each round: three rotations
    big_sigma1: tuple[int, int, int]  # of e in each round: three rotations


_SHA256_ROUNDS = _Sha2Rounds(32, ">16I", _K256, (7, 18, 3), (17, 19, 10), (2, 13, 22), (6, 11, 25))
_SHA512_ROUNDS = _Sha2Rounds(64, ">16Q", _K512, (1, 8, 7), (19, 61, 6), (28, 34, 39), (14, 18, 41))


def _sha2_compress(r: _Sha2Rounds, state: list[int], block: bytes) -> None:
    bits = r.word_bits
    mask = (1 << bits) - 1

    def ror(x: int, n: int) -> int:
        return ((x >> n) | (x << (bits - n))) & mask

    sig0, sig1, big0, big1 = r.sigma0, r.sigma1, r.big_sigma0, r.big_sigma1
    w = list(struct.unpack(r.block_format, block))
    for t in range(16, len(r.k)):
        x, y = w[t - 15], w[t - 2]
        s0 = ror(x, sig0[0]) ^ ror(x, sig0[1]) ^ (x >> sig0[2])
        s1 = ror(y, sig1[0]) ^ ror(y, sig1[1]) ^ (y >> sig1[2])
        w.append((w[t - 16] + s0 + w[t - 7] + s1) & mask)
    a, b, c, d, e, f, g, h = state
    for t, k in enumerate(r.k):
        s1 = ror(e, big1[0]) ^ ror(e, big1[1]) ^ ror(e, big1[2])
        ch = (e & f) ^ (~e & g)
        t1 = h + s1 + ch + k + w[t]
        s0 = ror(a, big0[0]) ^ ror(a, big0[1]) ^ ror(a, big0[2])
        maj = (a & b) ^ (a & c) ^ (b & c)
        h, g, f, e = g, f, e, (d + t1) & mask
        d, c, b, a = c, b, a, (t1 + s0 + maj) & mask
    for i, v in enumerate((a, b, c, d, e, f, g, h)):
        state[i] = (state[i] + v) & mask


def _sha256_compress(state: list[int], block: bytes) -> None:
    _sha2_compress(_SHA256_ROUNDS, state, block)


def _sha512_compress(state: list[int], block: bytes) -> None:
    _sha2_compress(_SHA512_ROUNDS, state, block)


# ---------------------------------------------------------------------- the algorithms


@dataclass(frozen=True)
class Algorithm:
    """One hash: block and digest sizes, word format, initial state and compression."""

    name: str
    block_size: int
    digest_size: int
    word_format: str  # struct format of one state word: "<I" (MD5), ">I", ">Q"
    length_bytes: int  # bytes of the bit length in the final padding
    initial: tuple[int, ...]
    compress: Callable[[list[int], bytes], None]

    @property
    def state_size(self) -> int:
        """Bytes of the chaining state (the full state even for SHA-224 and SHA-384)."""
        return len(self.initial) * struct.calcsize(self.word_format)

    @property
    def context_size(self) -> int:
        """Bytes of the saved class-2 context: chaining state plus the 8-byte count."""
        return self.state_size + COUNT_BYTES


_SHA256_IV = tuple(_frac_root(p, 2, 32) for p in _PRIMES[:8])
_SHA512_IV = tuple(_frac_root(p, 2, 64) for p in _PRIMES[:8])
# SHA-224 and SHA-384 initial values: FIPS 180-4 sections 5.3.2 and 5.3.4.
_SHA224_IV = (
    0xC1059ED8, 0x367CD507, 0x3070DD17, 0xF70E5939, 0xFFC00B31, 0x68581511, 0x64F98FA7, 0xBEFA4FA4,
)  # fmt: skip
_SHA384_IV = tuple(_frac_root(p, 2, 64) for p in _PRIMES[8:16])

ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        Algorithm("md5", 64, 16, "<I", 8, (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476),
                  _md5_compress),
        Algorithm("sha1", 64, 20, ">I", 8,
                  (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0), _sha1_compress),
        Algorithm("sha224", 64, 28, ">I", 8, _SHA224_IV, _sha256_compress),
        Algorithm("sha256", 64, 32, ">I", 8, _SHA256_IV, _sha256_compress),
        Algorithm("sha384", 128, 48, ">Q", 16, _SHA384_IV, _sha512_compress),
        Algorithm("sha512", 128, 64, ">Q", 16, _SHA512_IV, _sha512_compress),
    )
}  # fmt: skip


class RunningHash:
    """A hash in progress: whole blocks are compressed as they arrive, the rest waits."""

    def __init__(self, name: str) -> None:
        self.alg = ALGORITHMS[name]
        self._state = list(self.alg.initial)
        self._count = 0  # message bytes compressed into the state
        self._pending = b""  # bytes short of a block

    def __repr__(self) -> str:
        return f"<RunningHash {self.alg.name} count={self.count}>"

    @property
    def count(self) -> int:
        """Message bytes taken so far (compressed and waiting)."""
        return self._count + len(self._pending)

    @property
    def pending(self) -> int:
        """Bytes waiting for the rest of their block."""
        return len(self._pending)

    def update(self, data: bytes) -> None:
        """Take more message bytes."""
        data = self._pending + bytes(data)
        size = self.alg.block_size
        cut = len(data) - len(data) % size
        compress = self.alg.compress
        for i in range(0, cut, size):
            compress(self._state, data[i : i + size])
        self._count += cut
        self._pending = data[cut:]

    def state_bytes(self) -> bytes:
        """The chaining state as bytes, in the algorithm's word format."""
        fmt = self.alg.word_format
        return struct.pack(fmt[0] + str(len(self._state)) + fmt[1], *self._state)

    def export(self) -> bytes:
        """The saved context: chaining state, then the 8-byte big-endian count of bytes hashed.

        Bytes waiting for the rest of their block are not in it (see ``pending``).
        """
        return self.state_bytes() + self._count.to_bytes(COUNT_BYTES, "big")

    @classmethod
    def load(cls, name: str, context: bytes) -> RunningHash:
        """A running hash resumed from a saved context (at least ``context_size`` bytes)."""
        h = cls(name)
        alg = h.alg
        if len(context) < alg.context_size:
            raise ValueError(f"{alg.name} context needs {alg.context_size} bytes")
        fmt = alg.word_format
        words = struct.unpack(fmt[0] + str(len(alg.initial)) + fmt[1], context[: alg.state_size])
        h._state = list(words)
        count = context[alg.state_size : alg.context_size]
        h._count = int.from_bytes(count, "big")
        return h

    def digest(self) -> bytes:
        """The digest of everything taken so far (the running hash is left as it was)."""
        alg = self.alg
        state = list(self._state)
        bits = (self.count * 8) % (1 << (8 * alg.length_bytes))
        order = "little" if alg.word_format[0] == "<" else "big"
        tail = self._pending + b"\x80"
        tail += bytes(-(len(tail) + alg.length_bytes) % alg.block_size)
        tail += bits.to_bytes(alg.length_bytes, order)
        for i in range(0, len(tail), alg.block_size):
            alg.compress(state, tail[i : i + alg.block_size])
        fmt = alg.word_format
        return struct.pack(fmt[0] + str(len(state)) + fmt[1], *state)[: alg.digest_size]
