"""Authenticated encryption (AES-GCM, -CCM, -OCB3, -SIV, -GCM-SIV, ChaCha20-Poly1305), as
`cryptography`'s `aead` module."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import aead as _aead

from cryptoffload._buffers import disjoint_input, refuse_overlap
from cryptoffload.blocks._lazy import LazyModule
from cryptoffload.core import validate
from cryptoffload.core.directpath import AeadCore, CcmCheck, own_methods
from cryptoffload.core.lane import SAMPLE_NOW
from cryptoffload.core.names import aes_name
from cryptoffload.core.ops import AeadIntoOp, AeadOp
from cryptoffload.core.provider import Lane, Provider, checked_provider, unbound_lane
from cryptoffload.devicekey import DeviceKey
from cryptoffload.dmabuffer import as_plain, claimed, involved

if TYPE_CHECKING:
    from cryptoffload.core.adaptive import Adaptive

#: The asyncio helpers: loaded by the first ``*_async`` call (their import is a start-up cost).
asyncio_lane = LazyModule("cryptoffload.core.asyncio_lane")

_AEAD_MAX = validate.AEAD_MAX

__all__ = ["AESCCM", "AESGCM", "AESGCMSIV", "AESOCB3", "AESSIV", "ChaCha20Poly1305"]


class _AeadBase(AeadCore):
    """Shared by AESGCM and AESCCM.

    ``encrypt``, ``decrypt``, ``encrypt_into`` and ``decrypt_into`` are AeadCore's: the direct
    path (see :mod:`cryptoffload.core.directpath`), which hands every op it cannot take to the
    methods below of the same name with a leading underscore.

    The object keeps the lane of the provider it last ran on. When only software takes the
    algorithm, the calls below go straight to OpenSSL (``_fast``, a `cryptography` object) and
    `cryptography`'s own checks stand in for ours (on failure ours run to give the clearer
    message; both raise the same class). Otherwise each call is one AeadOp, checked once by the
    provider before any engine sees it.
    """

    __slots__ = ("_alg", "_fast", "_key")

    _MODE = ""
    #: The nonce lengths the mode takes, and whether CCM's limit of the payload by the nonce's
    #: length applies: the engine route's checks (see ``directpath.PureAeadCore``). (0, 0): no
    #: engine route.
    _NONCES = (0, 0, False)

    def __init__(self, key: bytes, tag_length: int, provider: Provider | None) -> None:
        validate.aes_key(key)
        # A DeviceKey stays what it is: only the engine it is bound to can use it.
        self._key = key if isinstance(key, DeviceKey) else bytes(key)
        self._tag_length = tag_length
        self._alg = aes_name(len(key), self._MODE)
        self._provider = checked_provider(provider)
        self._lane = unbound_lane(self._alg)
        self._fast: Any = None
        self._sw: Any = None
        self._nonce_min, self._nonce_max, self._ccm_rule = self._NONCES

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._alg} tag_length={self._tag_length}>"

    @classmethod
    def generate_key(cls, bit_length: int) -> bytes:
        """A fresh random key of 128, 192 or 256 bits."""
        if not isinstance(bit_length, int):
            raise TypeError("bit_length must be an integer")
        if bit_length not in (128, 192, 256):
            raise ValueError(f"bit_length must be 128, 192, or 256, got {bit_length}")
        return os.urandom(bit_length // 8)

    def _bind(self, lane: Lane) -> None:
        self._lane = lane
        if self._sw is None and not lane.required:
            # The direct path's object (False: none can serve, e.g. a 12-byte tag).
            self._sw = self._software() or False
        self._fast = (self._sw or None) if lane.software_only else None

    def _op(self, kind: str, nonce: Any, data: Any, aad: Any) -> AeadOp:
        return AeadOp(self._alg, kind, self._key, nonce, data, aad, self._tag_length)

    def _open_session(self, route: Any) -> Any:
        """The session ``route``'s engine keeps for this object's key (its ``session`` of an
        AeadOp with the algorithm, key and tag length, nonce and data None), or None: the
        engine route then hands this object's ops to the ordinary path. A session the engine
        declines or fails to make is not counted: the ordinary path's ops are."""
        return route.session(
            AeadOp(self._alg, "encrypt", self._key, None, None, None, self._tag_length)
        )

    def _engine_failed(
        self, lane: Lane, route: Any, kind: str, exc: Exception, nonce: Any, data: Any, aad: Any
    ) -> Any:
        """The engine route's op that ``route``'s session raised ``exc`` on: settled by the
        lane (see ``Lane.engine_failed``)."""
        op = AeadOp(self._alg, kind, self._key, nonce, data, aad, self._tag_length)
        return lane.engine_failed(route, op, exc)

    def _plain(self, nonce: Any, data: Any, aad: Any, tag_length: int) -> bool:
        """Whether an op's fields need no check beyond this one (bytes of lengths the mode
        takes; key and tag length were checked when the object was made): the lane then skips
        ``validate_op``, which would run the same checks again. False: it runs them all."""
        return False

    def _software(self) -> Any:
        """The `cryptography` object for the direct path, or None where it cannot serve."""
        raise NotImplementedError

    def _explain(self, nonce: Any, data: Any, aad: Any, tag_length: int) -> None:
        """Our named checks, for a clear message when `cryptography` refused the input."""
        raise NotImplementedError

    def _encrypt(self, nonce: Any, data: Any, associated_data: Any) -> bytes:
        """:meth:`encrypt` off the direct path."""
        lane = self._lane.in_force(self._provider)
        if lane is not self._lane:
            self._bind(lane)
        fast = self._fast
        held = fast is None
        if held:
            fast = self._held(lane, data, 0)
            if fast is None:
                op = AeadOp(
                    self._alg, "encrypt", self._key, nonce, data, associated_data, self._tag_length
                )
                return lane.run(op, self._plain(nonce, data, associated_data, 0))
        try:
            out = fast.encrypt(nonce, data, associated_data)
        except (TypeError, ValueError):
            if involved(data, associated_data):  # `cryptography` takes format "B" only
                return self._encrypt(nonce, as_plain(data), as_plain(associated_data))
            self._explain(nonce, data, associated_data, 0)
            raise
        n = len(data)
        lane.tally(~n if held else n)
        return out

    def _held(self, lane: Lane, data: Any, tag_length: int) -> Any:
        """The direct `cryptography` object when the policy keeps this op (its payload:
        ``data`` less ``tag_length``) from every engine, else None: software then runs it as
        on a software-only lane, recorded as ``tally(~payload)`` (see Lane.holds_back)."""
        if data.__class__ is not bytes:
            return None
        n = len(data) - tag_length
        if n < 0 or lane.hold_below <= n <= lane.hold_above:
            return None
        sw = self._sw or None
        if lane._sample_due:  # adaptive routing: this op is due to be measured
            adaptive = lane.adaptive
            if not adaptive.take(n):
                lane._sample_due = False  # its class is settled: skipped, run directly
            elif adaptive.flip():
                lane._sample_due = SAMPLE_NOW  # the engines' turn: through the lane
                return None
            else:
                lane._sample_due = False  # software's turn: the direct call itself, timed
                return _Timed(sw, adaptive, n) if sw is not None else None
        return sw

    def _encrypt_into(self, nonce: Any, data: Any, associated_data: Any, buf: Any) -> int:
        """:meth:`encrypt_into` off the direct path."""
        if (data.__class__ is not bytes or buf.__class__ is not bytearray) and involved(data, buf):
            return self._dma_into("encrypt", nonce, data, associated_data, buf)
        lane = self._lane.in_force(self._provider)
        if lane is not self._lane:
            self._bind(lane)
        fast = self._fast
        held = fast is None
        if held:
            fast = self._held(lane, data, 0)
            if fast is None:
                op = self._op("encrypt", nonce, data, associated_data)
                validate.validate_op(op)
                need = _nbytes(data) + self._tag_length
                if memoryview(buf).nbytes != need:
                    raise ValueError(f"buffer must be {need} bytes")
                refuse_overlap(data, buf)
                sealed = lane.run(op, True)
                memoryview(buf).cast("B")[:] = sealed
                return need
        try:
            k = fast.encrypt_into(nonce, data, associated_data, buf)
        except (TypeError, ValueError):
            self._explain(nonce, data, associated_data, 0)
            raise
        n = len(data)
        lane.tally(~n if held else n)
        return k

    def _decrypt(self, nonce: Any, data: Any, associated_data: Any) -> bytes:
        """:meth:`decrypt` off the direct path."""
        lane = self._lane.in_force(self._provider)
        if lane is not self._lane:
            self._bind(lane)
        fast = self._fast
        held = fast is None
        if held:
            tag_length = self._tag_length
            fast = self._held(lane, data, tag_length)
            if fast is None:
                op = AeadOp(
                    self._alg, "decrypt", self._key, nonce, data, associated_data, tag_length
                )
                return lane.run(op, self._plain(nonce, data, associated_data, tag_length))
        try:
            out = fast.decrypt(nonce, data, associated_data)
        except TypeError:
            if involved(data, associated_data):  # `cryptography` takes format "B" only
                return self._decrypt(nonce, as_plain(data), as_plain(associated_data))
            self._explain(nonce, data, associated_data, self._tag_length)
            raise
        except InvalidTag:
            n = len(data) - self._tag_length
            if n >= 0:  # shorter holds no tag: refused before any engine, uncounted
                lane.tally(~n if held else n)
            raise
        except ValueError:
            self._explain(nonce, data, associated_data, self._tag_length)
            raise
        n = len(out)
        lane.tally(~n if held else n)
        return out

    async def encrypt_async(
        self, nonce: bytes, data: bytes, associated_data: bytes | None
    ) -> bytes:
        """:meth:`encrypt`, awaited (see :mod:`cryptoffload.core.asyncio_lane`): the same result,
        errors and counts."""
        lane = self._async_lane()
        return await asyncio_lane.offload(
            lane,
            lambda: self._op("encrypt", nonce, data, associated_data),
            self.encrypt,
            nonce,
            data,
            associated_data,
        )

    async def decrypt_async(
        self, nonce: bytes, data: bytes, associated_data: bytes | None
    ) -> bytes:
        """:meth:`decrypt`, awaited: the plaintext, or InvalidTag (and nothing else)."""
        lane = self._async_lane()
        return await asyncio_lane.offload(
            lane,
            lambda: self._op("decrypt", nonce, data, associated_data),
            self.decrypt,
            nonce,
            data,
            associated_data,
        )

    def _async_lane(self) -> Lane:
        lane = self._lane.in_force(self._provider)
        if lane is not self._lane:
            self._bind(lane)
        return lane

    def encrypt_many(self, items: Iterable[tuple[bytes, bytes, bytes | None]]) -> list[Any]:
        """Encrypt many (nonce, data, associated_data) items as one batch.

        Returns, in order, each item's ciphertext and tag, or the exception that is its answer
        (an invalid nonce: ValueError...): one bad item does not stop the others. An engine that
        takes batches gets them all at once (the CAAM puts them on its ring together).
        """
        return self._many("encrypt", items)

    def decrypt_many(self, items: Iterable[tuple[bytes, bytes, bytes | None]]) -> list[Any]:
        """Decrypt many (nonce, data, associated_data) items as one batch: in order, each item's
        plaintext, or the exception that is its answer (InvalidTag for an altered item)."""
        return self._many("decrypt", items)

    def _many(self, kind: str, items: Iterable[tuple[bytes, bytes, bytes | None]]) -> list[Any]:
        items = validate.batch(f"{kind}_many", items, "(nonce, data, associated_data) tuple", 3)
        lane = self._lane.in_force(self._provider)
        if lane is not self._lane:
            self._bind(lane)
        if self._fast is not None:
            one = self.encrypt if kind == "encrypt" else self.decrypt
            return [_outcome(one, item) for item in items]
        return lane.run_batch([self._op(kind, *item) for item in items])

    def _decrypt_into(self, nonce: Any, data: Any, associated_data: Any, buf: Any) -> int:
        """:meth:`decrypt_into` off the direct path."""
        if (data.__class__ is not bytes or buf.__class__ is not bytearray) and involved(data, buf):
            return self._dma_into("decrypt", nonce, data, associated_data, buf)
        lane = self._lane.in_force(self._provider)
        if lane is not self._lane:
            self._bind(lane)
        fast = self._fast
        held = fast is None
        if held:
            fast = self._held(lane, data, self._tag_length)
            if fast is None:
                # As `cryptography`: the inputs (nonce, a ciphertext shorter than a tag) before
                # the buffer; the plaintext is written only once the tag holds.
                op = self._op("decrypt", nonce, data, associated_data)
                validate.validate_op(op)
                need = _nbytes(data) - self._tag_length
                if memoryview(buf).nbytes != need:
                    raise ValueError(f"buffer must be {need} bytes")
                refuse_overlap(data, buf)
                try:
                    plaintext = lane.run(op, True)
                except InvalidTag:
                    _zero(buf)  # as `cryptography` 51 leaves it, whichever path ran
                    raise
                memoryview(buf).cast("B")[:] = plaintext
                return need
        try:
            k = fast.decrypt_into(nonce, data, associated_data, buf)
        except InvalidTag:
            # OpenSSL's GCM has written the plaintext before the tag failed: none is released.
            _zero(buf)
            n = len(data) - self._tag_length
            if n >= 0:  # shorter: no tag, refused uncounted
                lane.tally(~n if held else n)
            raise
        except (TypeError, ValueError):
            self._explain(nonce, data, associated_data, self._tag_length)
            raise
        lane.tally(~k if held else k)
        return k

    def _dma_into(self, kind: str, nonce: Any, data: Any, aad: Any, buf: Any) -> int:
        """``*_into`` with a DmaBuffer among data and buf: both in use until the op is done
        (BufferError now if an op in flight uses one); on an engine path the op carries ``buf``
        (``into``) so that the engine that lent it writes the result there."""
        data, buf = as_plain(data), as_plain(buf)
        with claimed(data, buf):
            lane = self._lane.in_force(self._provider)
            if lane is not self._lane:
                self._bind(lane)
            if self._fast is not None:  # software only: OpenSSL reads and writes the memory
                call = _AeadBase.encrypt_into if kind == "encrypt" else _AeadBase.decrypt_into
                return call(self, nonce, data, aad, buf)
            into = memoryview(buf)
            if into.format != "B":
                into = into.cast("B")
            op = AeadIntoOp(self._alg, kind, self._key, nonce, data, aad, self._tag_length, into)
            validate.validate_op(op)
            need = _nbytes(data) + (self._tag_length if kind == "encrypt" else -self._tag_length)
            if into.nbytes != need:
                raise ValueError(f"buffer must be {need} bytes")
            own = disjoint_input(data, into)  # the engine writes into ``into`` as it reads
            if own is not data:
                op = AeadIntoOp(self._alg, kind, self._key, nonce, own, aad, self._tag_length, into)
            result = lane.run(op, True)
            if result.__class__ is not int:
                into[:] = result
            return need


class _Timed:
    """The direct path's `cryptography` object for one op that adaptive routing measures:
    software's time there (no Op), as the direct path pays it, goes into the running cost."""

    __slots__ = ("_adaptive", "_n", "_sw")

    def __init__(self, sw: Any, adaptive: Adaptive, n: int) -> None:
        self._sw, self._adaptive, self._n = sw, adaptive, n

    def _timed(self, call: Any, *args: Any) -> Any:
        clock = self._adaptive.clock
        start = clock()
        out = call(*args)
        self._adaptive.record(self._n, self._adaptive.SOFTWARE, clock() - start, False)
        return out

    def encrypt(self, *args: Any) -> Any:
        return self._timed(self._sw.encrypt, *args)

    def decrypt(self, *args: Any) -> Any:
        return self._timed(self._sw.decrypt, *args)

    def encrypt_into(self, *args: Any) -> Any:
        return self._timed(self._sw.encrypt_into, *args)

    def decrypt_into(self, *args: Any) -> Any:
        return self._timed(self._sw.decrypt_into, *args)


def _zero(buf: Any) -> None:
    """Zeros over a decryption's buffer after a failed tag (`cryptography` 51's rule)."""
    view = memoryview(buf).cast("B")
    view[:] = bytes(len(view))


def _outcome(call: Any, item: tuple[Any, ...]) -> Any:
    """``call(*item)``, or the exception it raised."""
    try:
        return call(*item)
    except Exception as exc:
        return exc


def _nbytes(data: Any) -> int:
    """Bytes in ``data``; TypeError with a clear message when it is not bytes-like."""
    try:
        return memoryview(data).nbytes
    except TypeError:
        validate.byteslike("data", data)
        raise


class AESGCM(_AeadBase):
    """AES-GCM with a 16-byte tag by default; ``tag_length`` 4, 8 or 12-16 as SP 800-38D allows."""

    __slots__ = ()
    _MODE = "gcm"
    _NONCES = (8, 128, False)

    def __init__(
        self, key: bytes, tag_length: int = 16, *, provider: Provider | None = None
    ) -> None:
        validate.gcm_tag_length(tag_length)
        super().__init__(key, tag_length, provider)

    def _software(self) -> _aead.AESGCM | None:
        # cryptography's AESGCM makes 16-byte tags only: shorter ones go through an Op, and so
        # does a device key (software cannot use it: the lane says so).
        if self._tag_length != 16 or isinstance(self._key, DeviceKey):
            return None
        return _aead.AESGCM(self._key)

    def _plain(self, nonce: Any, data: Any, aad: Any, tag_length: int) -> bool:
        return (
            nonce.__class__ is bytes
            and 8 <= len(nonce) <= 128
            and data.__class__ is bytes
            and tag_length <= len(data) <= _AEAD_MAX
            and (aad is None or (aad.__class__ is bytes and len(aad) <= _AEAD_MAX))
        )

    def _explain(self, nonce: Any, data: Any, aad: Any, tag_length: int) -> None:
        validate.gcm_nonce(nonce)
        validate.byteslike("data", data)
        if aad is not None:
            validate.byteslike("associated_data", aad)


class AESCCM(_AeadBase):
    """AES-CCM with a tag of 4 to 16 bytes (even) and a nonce of 7 to 13 bytes."""

    __slots__ = ()
    _MODE = "ccm"
    _NONCES = (7, 13, True)

    def __init__(
        self, key: bytes, tag_length: int = 16, *, provider: Provider | None = None
    ) -> None:
        if not isinstance(tag_length, int):
            raise TypeError("tag_length must be an integer")
        validate.ccm_tag_length(tag_length)
        super().__init__(key, tag_length, provider)

    def _software(self) -> Any:
        # OpenSSL fails a CCM payload too long for its nonce with an internal error rather
        # than a ValueError: cryptography's AESCCM behind the checks (CcmCheck, compiled).
        if isinstance(self._key, DeviceKey):
            return None
        ccm = _aead.AESCCM(self._key, tag_length=self._tag_length)
        return CcmCheck(self, ccm, self._tag_length)

    def _explain(self, nonce: Any, data: Any, aad: Any, tag_length: int) -> None:
        validate.byteslike("data", data)
        if aad is not None:
            validate.byteslike("associated_data", aad)
        validate.aead_lengths(data, aad)
        validate.ccm_nonce(nonce, max(len(data) - tag_length, 0))


class _FixedTagAead(_AeadBase):
    """An AEAD with 16-byte tags whose key `cryptography`'s own class checks when it is made
    (same errors); the direct path is that object."""

    __slots__ = ()
    _CLS: Any = None

    def __init__(self, key: bytes, *, provider: Provider | None = None) -> None:
        sw = self._CLS(key)  # `cryptography`'s checks of the key, with its errors
        self._key = bytes(key)
        self._tag_length = 16
        self._alg = self._name(len(key))
        self._provider = checked_provider(provider)
        self._lane = unbound_lane(self._alg)
        self._fast = None
        self._sw = sw
        self._nonce_min, self._nonce_max, self._ccm_rule = self._NONCES

    @classmethod
    def _name(cls, key_len: int) -> str:
        return aes_name(key_len, cls._MODE)

    @classmethod
    def generate_key(cls, bit_length: int) -> bytes:
        """A fresh random key (the sizes `cryptography`'s class takes)."""
        return cls._CLS.generate_key(bit_length)

    def _software(self) -> Any:
        return self._sw

    def _explain(self, nonce: Any, data: Any, aad: Any, tag_length: int) -> None:
        validate.aead_nonce(self._alg, nonce)
        validate.byteslike("data", data)
        if aad is not None:
            validate.byteslike("associated_data", aad)


class ChaCha20Poly1305(_FixedTagAead):
    """ChaCha20-Poly1305 (RFC 8439): a 32-byte key, 12-byte nonces, 16-byte tags."""

    __slots__ = ()
    _CLS = _aead.ChaCha20Poly1305
    _NONCES = (12, 12, False)

    @classmethod
    def _name(cls, key_len: int) -> str:
        return "chacha20-poly1305"

    @classmethod
    def generate_key(cls) -> bytes:  # type: ignore[override]
        """A fresh random 32-byte key."""
        return _aead.ChaCha20Poly1305.generate_key()


class AESOCB3(_FixedTagAead):
    """AES-OCB3 (RFC 7253): 12- to 15-byte nonces, 16-byte tags."""

    __slots__ = ()
    _CLS = _aead.AESOCB3
    _MODE = "ocb"
    _NONCES = (12, 15, False)


class AESGCMSIV(_FixedTagAead):
    """AES-GCM-SIV (RFC 8452): nonce-misuse resistant, 12-byte nonces, 16-byte tags."""

    __slots__ = ()
    _CLS = _aead.AESGCMSIV
    _MODE = "gcm-siv"
    _NONCES = (12, 12, False)


class AESSIV(_FixedTagAead):
    """AES-SIV (RFC 5297): deterministic; the associated data is a list of items (a nonce, if
    any, as the last). Its output is the synthetic IV (the tag) followed by the ciphertext."""

    __slots__ = ()
    _CLS = _aead.AESSIV

    @classmethod
    def _name(cls, key_len: int) -> str:
        return aes_name(key_len // 2, "siv")  # two keys: AES-128-SIV takes 32 bytes

    def _siv_op(self, kind: str, data: Any, associated_data: Any) -> AeadOp:
        return AeadOp(self._alg, kind, self._key, None, data, _items(associated_data), 16)

    def _explain_siv(self, data: Any, associated_data: Any) -> None:
        validate.byteslike("data", data)
        for item in _items(associated_data) or ():
            validate.byteslike("associated_data", item)

    def encrypt(self, data: bytes, associated_data: list[bytes] | None) -> bytes:  # type: ignore[override]
        """The synthetic IV (16 bytes) followed by the ciphertext."""
        return self._siv("encrypt", data, associated_data)

    def decrypt(self, data: bytes, associated_data: list[bytes] | None) -> bytes:  # type: ignore[override]
        """The plaintext, or InvalidTag (and nothing else) when the data was altered."""
        return self._siv("decrypt", data, associated_data)

    def _siv(self, kind: str, data: Any, associated_data: Any) -> bytes:
        lane = self._lane.in_force(self._provider)
        if lane is not self._lane:
            self._bind(lane)
        fast = self._fast
        if fast is None:
            return lane.run(self._siv_op(kind, data, associated_data))
        try:
            out = getattr(fast, kind)(data, associated_data)
        except InvalidTag:
            if len(data) >= 16:  # shorter: no tag, refused uncounted, as on the engine path
                lane.tally(len(data) - 16)
            raise
        except (TypeError, ValueError):
            self._explain_siv(data, associated_data)
            raise
        lane.tally(len(data) if kind == "encrypt" else len(out))
        return out

    async def encrypt_async(  # type: ignore[override]
        self, data: bytes, associated_data: list[bytes] | None
    ) -> bytes:
        """:meth:`encrypt`, awaited: the synthetic IV (16 bytes) followed by the ciphertext."""
        return await asyncio_lane.offload(
            self._async_lane(),
            lambda: self._siv_op("encrypt", data, associated_data),
            self.encrypt,
            data,
            associated_data,
        )

    async def decrypt_async(  # type: ignore[override]
        self, data: bytes, associated_data: list[bytes] | None
    ) -> bytes:
        """:meth:`decrypt`, awaited: the plaintext, or InvalidTag (and nothing else)."""
        return await asyncio_lane.offload(
            self._async_lane(),
            lambda: self._siv_op("decrypt", data, associated_data),
            self.decrypt,
            data,
            associated_data,
        )

    def encrypt_into(self, data: bytes, associated_data: list[bytes] | None, buf: Any) -> int:  # type: ignore[override]
        """Write the synthetic IV and ciphertext into ``buf`` (len(data) + 16 bytes)."""
        return self._siv_into("encrypt", data, associated_data, buf)

    def decrypt_into(self, data: bytes, associated_data: list[bytes] | None, buf: Any) -> int:  # type: ignore[override]
        """Write the plaintext into ``buf`` (len(data) - 16 bytes), only once the tag holds."""
        return self._siv_into("decrypt", data, associated_data, buf)

    def _siv_into(self, kind: str, data: Any, associated_data: Any, buf: Any) -> int:
        lane = self._lane.in_force(self._provider)
        if lane is not self._lane:
            self._bind(lane)
        fast = self._fast
        if fast is not None:
            try:
                n = getattr(fast, f"{kind}_into")(data, associated_data, buf)
            except InvalidTag:
                _zero(buf)  # no plaintext released, whatever OpenSSL wrote first
                if len(data) >= 16:  # shorter: no tag, refused uncounted
                    lane.tally(len(data) - 16)
                raise
            except (TypeError, ValueError):
                self._explain_siv(data, associated_data)
                raise
            lane.tally(len(data) if kind == "encrypt" else n)
            return n
        op = self._siv_op(kind, data, associated_data)
        validate.validate_op(op)
        need = _nbytes(data) + (16 if kind == "encrypt" else -16)
        if memoryview(buf).nbytes != need:
            raise ValueError(f"buffer must be {need} bytes")
        refuse_overlap(data, buf)
        try:
            out = lane.run(op, True)
        except InvalidTag:
            _zero(buf)
            raise
        memoryview(buf).cast("B")[:] = out
        return need

    def encrypt_many(self, items: Iterable[tuple[Any, ...]]) -> list[Any]:
        """Encrypt many (data, associated_data) items as one batch (see AESGCM.encrypt_many)."""
        return self._siv_many("encrypt", items)

    def decrypt_many(self, items: Iterable[tuple[Any, ...]]) -> list[Any]:
        """Decrypt many (data, associated_data) items as one batch (see AESGCM.decrypt_many)."""
        return self._siv_many("decrypt", items)

    def _siv_many(self, kind: str, items: Iterable[tuple[Any, ...]]) -> list[Any]:
        items = validate.batch(f"{kind}_many", items, "(data, associated_data) tuple", 2)
        lane = self._lane.in_force(self._provider)
        if lane is not self._lane:
            self._bind(lane)
        if self._fast is not None:
            one = self.encrypt if kind == "encrypt" else self.decrypt
            return [_outcome(one, item) for item in items]
        ops = []
        for data, associated_data in items:
            try:
                ops.append(self._siv_op(kind, data, associated_data))
            except TypeError as exc:
                ops.append(exc)
        answers = lane.run_batch([op for op in ops if not isinstance(op, Exception)])
        it = iter(answers)
        return [op if isinstance(op, Exception) else next(it) for op in ops]


for _cls in (AESGCM, AESCCM, ChaCha20Poly1305, AESOCB3, AESGCMSIV, AESSIV):
    own_methods(_cls)  # calls of the compiled methods specialize for these classes' objects


def _items(associated_data: Any) -> tuple[Any, ...] | None:
    """AES-SIV's associated data as a tuple of items; TypeError unless a list or tuple."""
    if associated_data is None:
        return None
    if not isinstance(associated_data, (list, tuple)):
        raise TypeError(
            "AES-SIV associated_data must be a list of bytes-like items, got "
            f"{type(associated_data).__name__}"
        )
    return tuple(associated_data)
