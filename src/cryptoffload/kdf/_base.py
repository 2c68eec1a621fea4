"""What the KDFs share: argument checks as `cryptography` makes them, and the single-use rule."""

from __future__ import annotations

import hmac
import operator
from collections.abc import Callable
from typing import Any

from cryptography.exceptions import AlreadyFinalized, InvalidKey

from cryptoffload._buffers import refuse_overlap
from cryptoffload.core import validate
from cryptoffload.core.ops import KdfOp
from cryptoffload.core.provider import Provider, checked_provider, resolve
from cryptoffload.hashes import digest

#: The largest size `cryptography` takes for a length (a Rust ``usize``).
USIZE_MAX = 2**64 - 1


def size(value: Any) -> int:
    """``value`` as a size: TypeError unless an integer, OverflowError if negative or too big."""
    n = operator.index(value)
    if n < 0:
        raise OverflowError("can't convert negative int to unsigned")
    if n > USIZE_MAX:
        raise OverflowError("int too big to convert")
    return n


def u32(value: Any) -> int:
    """``value`` as a 32-bit unsigned size (Argon2's costs), OverflowError beyond it."""
    n = size(value)
    if n >= 1 << 32:
        raise OverflowError("int too big to convert")
    return n


def required_bytes(name: str, value: Any) -> bytes:
    """``value`` if it is bytes (a salt): TypeError otherwise, as `cryptography`."""
    if isinstance(value, bytes):
        return value
    raise TypeError(f"{name}: {type(value).__name__!r} object is not an instance of 'bytes'")


def optional_bytes(name: str, value: Any) -> bytes | None:
    """``value`` unless it is neither None nor bytes (TypeError, as `cryptography`)."""
    if value is None or isinstance(value, bytes):
        return value
    raise TypeError(f"{name}: {type(value).__name__!r} object is not an instance of 'bytes'")


def material(name: str, value: Any) -> bytes:
    """A bytes-like argument (key material, an expected key) as bytes: TypeError otherwise."""
    if value.__class__ is bytes:
        return value
    validate.byteslike(name, value)
    return memoryview(value).tobytes()


def writable(buffer: Any) -> memoryview:
    """The caller's output buffer as a byte view: TypeError unless a writable buffer."""
    try:
        view = memoryview(buffer)
    except TypeError:
        raise TypeError(f"buffer must be bytes-like, got {type(buffer).__name__}") from None
    if view.readonly:
        raise TypeError("Buffer is not writable.")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


class OneShotKDF:
    """A KDF object: ``derive``, ``derive_into`` or ``verify``, once (AlreadyFinalized after).

    Subclasses set ``_length`` and ``_provider`` and give ``_derive``; ``_begin`` may check
    the key material before the output buffer is (KBKDF does, as `cryptography`)."""

    __slots__ = ("_length", "_provider", "_used")

    _length: int
    _provider: Provider | None

    def _begin(self, key: bytes) -> Any:
        return key

    def _derive(self, state: Any) -> bytes:
        raise NotImplementedError

    def derive(self, key_material: bytes) -> bytes:
        """The derived key (``length`` bytes)."""
        key = material("key_material", key_material)
        self._claim()
        return self._derive(self._begin(key))

    def derive_into(self, key_material: bytes, buffer: Any) -> int:
        """Write the derived key into ``buffer`` (exactly ``length`` bytes); its length."""
        key = material("key_material", key_material)
        out = writable(buffer)
        refuse_overlap(key_material, out)
        self._claim()
        state = self._begin(key)
        if len(out) != self._length:
            raise ValueError(f"buffer must be {self._length} bytes")
        out[:] = self._derive(state)
        return self._length

    def verify(self, key_material: bytes, expected_key: bytes) -> None:
        """Raise InvalidKey unless ``key_material`` derives ``expected_key`` (constant-time)."""
        key = material("key_material", key_material)
        expected = material("expected_key", expected_key)
        if not hmac.compare_digest(self.derive(key), expected):
            raise InvalidKey("Keys do not match.")

    def _claim(self) -> None:
        if self._used:
            raise AlreadyFinalized("Context was already finalized.")
        self._used = True

    def __repr__(self) -> str:
        return f"<{type(self).__name__} length={self._length}>"


def run_kdf(
    provider: Provider | None,
    alg: str,
    key: bytes,
    salt: bytes,
    length: int,
    params: tuple[int, ...],
    aad: bytes | None = None,
    secret: bytes | None = None,
) -> bytes:
    """One KDF op (PBKDF2, scrypt, Argon2) through the lane of ``alg``: engines may take it.

    The KDF object checked every field when it was made (and the key material as it came), as
    `cryptography` does, so the lane does not check them again."""
    lane = resolve(provider).lane(alg)
    return lane.run(KdfOp(alg, "derive", key, salt, length, params, aad, secret), checked=True)


def counter_blocks(length: int, block: Callable[[int], bytes]) -> bytes:
    """``block(1) | block(2) | ...`` cut to ``length`` bytes: the loop every counter KDF runs
    (each block one hash or MAC op)."""
    out = bytearray()
    counter = 0
    while len(out) < length:
        counter += 1
        out += block(counter)
    return bytes(out[:length])


def counter_max_length(algorithm: Any, length: int) -> None:
    """ValueError past 2**32 - 1 blocks of the hash (a 32-bit counter: X9.63, ConcatKDF)."""
    max_len = min(size(algorithm.digest_size) * (2**32 - 1), USIZE_MAX)
    if length > max_len:
        raise ValueError(f"Cannot derive keys larger than {max_len} bits.")


class HashCounterKDF(OneShotKDF):
    """A KDF whose block i is one digest over the key material, i as 4 bytes and shared
    information (X9.63, ConcatKDFHash): ``_message`` says in which order."""

    __slots__ = ("_algorithm", "_info")

    def _setup(
        self, algorithm: Any, length: Any, name: str, info: Any, provider: Provider | None
    ) -> None:
        """Check and keep the arguments as `cryptography` does (``name``: the info's)."""
        length = size(length)
        self._info = optional_bytes(name, info) or b""
        counter_max_length(algorithm, length)
        self._algorithm = algorithm
        self._length = length
        self._provider = checked_provider(provider)
        self._used = False

    def _message(self, key: bytes, counter: bytes) -> bytes:
        raise NotImplementedError

    def _derive(self, state: Any) -> bytes:
        algorithm, provider, message = self._algorithm, self._provider, self._message
        return counter_blocks(
            self._length,
            lambda i: digest(message(state, i.to_bytes(4, "big")), algorithm, provider=provider),
        )
