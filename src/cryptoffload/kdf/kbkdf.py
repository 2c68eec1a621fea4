"""SP 800-108 counter-mode KDF, as `cryptography`'s ``kdf.kbkdf``: an HMAC or CMAC op a block."""

from __future__ import annotations

from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm, _Reasons
from cryptography.hazmat.primitives.ciphers import BlockCipherAlgorithm
from cryptography.hazmat.primitives.hashes import HashAlgorithm
from cryptography.hazmat.primitives.kdf import KeyDerivationFunction
from cryptography.hazmat.primitives.kdf.kbkdf import CounterLocation, Mode

from cryptoffload.cmac import CMAC
from cryptoffload.core.names import hash_name
from cryptoffload.core.provider import Provider, checked_provider
from cryptoffload.hmac import HMAC
from cryptoffload.kdf._base import OneShotKDF, counter_blocks, optional_bytes, size

__all__ = ["KBKDFCMAC", "KBKDFHMAC", "CounterLocation", "Mode"]


class _KBKDF(OneShotKDF):
    """Block i is PRF(key_material, before | i as rlen bytes | after), where before | after is
    the fixed input (``fixed``, or label | 0x00 | context | length in bits as llen bytes), cut
    at the counter's place."""

    __slots__ = ("_break", "_context", "_fixed", "_label", "_llen", "_location", "_rlen")

    def _params(
        self,
        mode: Any,
        length: Any,
        rlen: Any,
        llen: Any,
        location: Any,
        label: Any,
        context: Any,
        fixed: Any,
        break_location: Any,
        provider: Provider | None,
    ) -> None:
        """Check and keep the parameters as `cryptography` does, in its order."""
        self._length = size(length)
        rlen = size(rlen)
        llen = None if llen is None else size(llen)
        label = optional_bytes("label", label)
        context = optional_bytes("context", context)
        fixed = optional_bytes("fixed", fixed)
        break_location = None if break_location is None else size(break_location)
        if not isinstance(mode, Mode):
            raise TypeError("mode must be of type Mode")
        if not isinstance(location, CounterLocation):
            raise TypeError("location must be of type CounterLocation")
        if location == CounterLocation.MiddleFixed:
            if break_location is None:
                raise ValueError("Please specify a break_location")
        elif break_location is not None:
            raise ValueError(
                "break_location is ignored when location is not CounterLocation.MiddleFixed"
            )
        if (label is not None or context is not None) and fixed is not None:
            raise ValueError("When supplying fixed data, label and context are ignored.")
        if not 1 <= rlen <= 4:
            raise ValueError("rlen must be between 1 and 4")
        if fixed is None and llen is None:
            raise ValueError("Please specify an llen")
        if llen == 0:
            raise ValueError("llen must be non-zero")
        self._rlen = rlen
        self._llen = llen
        self._location = location
        self._break = break_location
        self._label = label or b""
        self._context = context or b""
        self._fixed = fixed
        self._provider = checked_provider(provider)
        self._used = False

    def _check_rounds(self, block: int) -> None:
        if -(-self._length // block) > (1 << (self._rlen * 8)) - 1:
            raise ValueError("There are too many iterations.")

    def _derive(self, state: Any) -> bytes:
        """The output from ``state``, a MAC context keyed with the key material to copy."""
        fixed = self._fixed
        if fixed is None:
            bits = _be_bytes(self._length * 8, self._llen)
            fixed = self._label + b"\x00" + self._context + bits
        if self._location == CounterLocation.BeforeFixed:
            before, after = b"", fixed
        elif self._location == CounterLocation.AfterFixed:
            before, after = fixed, b""
        else:
            if self._break > len(fixed):
                raise ValueError("break_location offset > len(fixed)")
            before, after = fixed[: self._break], fixed[self._break :]
        rlen = self._rlen

        def block(i: int) -> bytes:
            mac = state.copy()
            mac.update(before + _be_bytes(i, rlen) + after)
            return mac.finalize()

        return counter_blocks(self._length, block)


class KBKDFHMAC(_KBKDF):
    """SP 800-108 in counter mode with HMAC as the PRF."""

    __slots__ = ("_algorithm",)

    def __init__(
        self,
        algorithm: HashAlgorithm,
        mode: Mode,
        length: int,
        rlen: int,
        llen: int | None,
        location: CounterLocation,
        label: bytes | None,
        context: bytes | None,
        fixed: bytes | None,
        backend: object = None,
        *,
        break_location: int | None = None,
        provider: Provider | None = None,
    ) -> None:
        self._params(
            mode, length, rlen, llen, location, label, context, fixed, break_location, provider
        )
        hash_name(algorithm)  # TypeError, or UnsupportedAlgorithm for a hash we do not offer
        self._check_rounds(size(algorithm.digest_size))
        self._algorithm = algorithm

    def _begin(self, key: bytes) -> HMAC:
        return HMAC(key, self._algorithm, provider=self._provider)


class KBKDFCMAC(_KBKDF):
    """SP 800-108 in counter mode with CMAC as the PRF: ``algorithm`` is the block cipher's
    class (``algorithms.AES``), keyed with the key material."""

    __slots__ = ("_algorithm",)

    def __init__(
        self,
        algorithm: type[BlockCipherAlgorithm],
        mode: Mode,
        length: int,
        rlen: int,
        llen: int | None,
        location: CounterLocation,
        label: bytes | None,
        context: bytes | None,
        fixed: bytes | None,
        backend: object = None,
        *,
        break_location: int | None = None,
        provider: Provider | None = None,
    ) -> None:
        self._params(
            mode, length, rlen, llen, location, label, context, fixed, break_location, provider
        )
        if not isinstance(algorithm, type):
            raise TypeError(f"{type(algorithm).__name__!r} object is not an instance of 'type'")
        if not issubclass(algorithm, BlockCipherAlgorithm):
            raise UnsupportedAlgorithm(
                "Algorithm must be a block cipher.", _Reasons.UNSUPPORTED_CIPHER
            )
        self._check_rounds(size(algorithm.block_size) // 8)
        self._algorithm = algorithm

    def _begin(self, key: bytes) -> CMAC:
        return CMAC(self._algorithm(key), provider=self._provider)


KeyDerivationFunction.register(KBKDFHMAC)
KeyDerivationFunction.register(KBKDFCMAC)


def _be_bytes(value: int, length: int) -> bytes:
    """``value`` big-endian in ``length`` bytes: OverflowError if it does not fit."""
    try:
        return value.to_bytes(length, "big")
    except OverflowError:
        raise OverflowError("int too big to convert") from None
