"""AES block cipher modes (ECB, CBC, CTR, CFB, OFB, GCM), shaped like `cryptography`'s `Cipher`."""

from __future__ import annotations

from typing import Any

from cryptography.exceptions import AlreadyFinalized, UnsupportedAlgorithm, _Reasons
from cryptography.hazmat.primitives.ciphers import Cipher as _Cipher
from cryptography.hazmat.primitives.ciphers import algorithms

from cryptoffload import modes, validate
from cryptoffload.names import aes_name
from cryptoffload.ops import CipherOp
from cryptoffload.provider import Lane, Provider, resolve

__all__ = ["Cipher", "algorithms", "modes"]

_AES = (algorithms.AES, algorithms.AES128, algorithms.AES256)
_MODE_NAMES: dict[type, str] = {
    modes.ECB: "ecb",
    modes.CBC: "cbc",
    modes.CTR: "ctr",
    modes.CFB: "cfb",
    modes.OFB: "ofb",
    modes.GCM: "gcm",
}
_MASK128 = (1 << 128) - 1


class Cipher:
    """``Cipher(algorithms.AES(key), modes.CBC(iv))``: make an ``encryptor()`` or ``decryptor()``.

    ECB and CBC add no padding: the data must come to whole 16-byte blocks by ``finalize``.
    """

    def __init__(
        self,
        algorithm: Any,
        mode: Any,
        backend: object = None,
        *,
        provider: Provider | None = None,
    ) -> None:
        if not isinstance(algorithm, _AES):
            raise UnsupportedAlgorithm(
                f"cryptoffload ciphers offer AES only, got {type(algorithm).__name__}",
                _Reasons.UNSUPPORTED_CIPHER,
            )
        mode_name = _MODE_NAMES.get(type(mode))
        if mode_name is None:
            raise UnsupportedAlgorithm(
                f"mode {getattr(mode, 'name', mode)!r} is not offered; use ECB, CBC, CTR, "
                f"CFB (128-bit), OFB or GCM",
                _Reasons.UNSUPPORTED_CIPHER,
            )
        validate.aes_key(algorithm.key)
        if mode_name == "gcm":
            validate.gcm_nonce(mode.initialization_vector)
            if mode.tag is not None:
                validate.gcm_tag_length(len(mode.tag))
        elif mode_name != "ecb":
            iv = mode.nonce if mode_name == "ctr" else mode.initialization_vector
            validate.block_iv(mode_name, iv)
        self.algorithm = algorithm
        self.mode = mode
        self._mode_name = mode_name
        self._alg = aes_name(len(algorithm.key), mode_name)
        self._provider = provider

    def encryptor(self) -> Any:
        """A context that encrypts what is passed to ``update``."""
        return self._context(encrypt=True)

    def decryptor(self) -> Any:
        """A context that decrypts what is passed to ``update``."""
        return self._context(encrypt=False)

    def _context(self, encrypt: bool) -> Any:
        lane = resolve(self._provider).lane(self._alg)
        if self._mode_name == "gcm":
            # No engine carries GHASH across calls: streaming GCM is software's, counted as a
            # `streaming` decline of each engine; a policy that requires offload refuses it now.
            lane.allow_software(lane.declines_for("streaming"))
            return _GcmContext(self, lane, encrypt)
        if lane.software_only:
            return _DirectContext(self, lane, encrypt)
        return _ChainedContext(self, lane, encrypt)


def _software_context(cipher: Cipher, encrypt: bool) -> Any:
    sw = _Cipher(cipher.algorithm, cipher.mode)
    return sw.encryptor() if encrypt else sw.decryptor()


class _DirectContext:
    """Only software takes this algorithm: stream through one OpenSSL context, count each update."""

    __slots__ = ("_ctx", "_lane")

    def __init__(self, cipher: Cipher, lane: Lane, encrypt: bool) -> None:
        self._ctx = _software_context(cipher, encrypt)
        self._lane = lane

    def update(self, data: bytes) -> bytes:
        out = self._ctx.update(data)
        self._lane.count(len(data))
        return out

    def update_into(self, data: bytes, buf: Any) -> int:
        n = self._ctx.update_into(data, buf)
        self._lane.count(len(data))
        return n

    def finalize(self) -> bytes:
        return self._ctx.finalize()


class _GcmContext:
    """Streaming GCM: no engine can carry GHASH across calls, so OpenSSL does it.

    The op is counted when it ends; engines that claim the algorithm are counted as declining it
    for ``streaming`` (one-shot AEAD through ``aead.AESGCM`` is what engines take).
    """

    __slots__ = ("_counted", "_ctx", "_lane", "_total")

    def __init__(self, cipher: Cipher, lane: Lane, encrypt: bool) -> None:
        self._ctx = _software_context(cipher, encrypt)
        self._lane = lane
        self._total = 0
        self._counted = False

    def authenticate_additional_data(self, data: bytes) -> None:
        self._ctx.authenticate_additional_data(data)

    def update(self, data: bytes) -> bytes:
        out = self._ctx.update(data)
        self._total += len(data)
        return out

    def update_into(self, data: bytes, buf: Any) -> int:
        n = self._ctx.update_into(data, buf)
        self._total += len(data)
        return n

    def _done(self) -> None:
        if self._counted:
            return
        self._counted = True
        lane = self._lane
        lane.finish_in_software(self._total, lane.declines_for("streaming"))

    def finalize(self) -> bytes:
        try:
            return self._ctx.finalize()
        finally:
            self._done()

    def finalize_with_tag(self, tag: bytes) -> bytes:
        validate.byteslike("tag", tag)
        validate.gcm_tag_length(len(tag))
        try:
            return self._ctx.finalize_with_tag(tag)
        finally:
            self._done()

    @property
    def tag(self) -> bytes:
        return self._ctx.tag


def _as_buffer(data: Any) -> Any:
    """``data`` itself if bytes, else a byte view of it; TypeError if it is not bytes-like."""
    if data.__class__ is bytes:
        return data
    validate.byteslike("data", data)
    return memoryview(data).cast("B")


class _ChainedContext:
    """An engine claims this algorithm: every ``update`` is one op, chained by the IV it carries.

    The context keeps the chaining value at the start of the current block and, for the stream
    modes, the input of that block so far; an op starting mid-block re-sends those bytes and
    drops their output, so each op is complete in itself and any engine (or software) can take
    it. ECB and CBC hold back a partial block until more data comes, as OpenSSL does.
    """

    __slots__ = (
        "_alg",
        "_chain",
        "_done",
        "_encrypt",
        "_held",
        "_key",
        "_kind",
        "_lane",
        "_mode",
        "_slack",
        "_whole_blocks",
    )

    def __init__(self, cipher: Cipher, lane: Lane, encrypt: bool) -> None:
        mode = cipher._mode_name
        self._alg = cipher._alg
        self._mode = mode
        self._key = bytes(cipher.algorithm.key)
        self._lane = lane
        self._encrypt = encrypt
        self._kind = "encrypt" if encrypt else "decrypt"
        # ECB and CBC take whole blocks only and hold a partial one back: `cryptography` asks
        # update_into's buffer for room for it.
        self._whole_blocks = mode in ("ecb", "cbc")
        self._slack = 15 if self._whole_blocks else 0
        if mode == "ecb":
            self._chain = None
        elif mode == "ctr":
            self._chain = bytes(cipher.mode.nonce)
        else:
            self._chain = bytes(cipher.mode.initialization_vector)
        self._held = b""
        self._done = False

    def update(self, data: bytes) -> bytes:
        return self._update(_as_buffer(data), None)

    def update_into(self, data: bytes, buf: Any) -> int:
        if data.__class__ is not bytes:
            data = _as_buffer(data)
        n = len(data)
        if buf.__class__ is bytearray and self._whole_blocks and n and not n % 16:
            # The common case, kept short (its cost shows in benchmarks/afalg_vs_c.py): whole
            # blocks of ECB or CBC into a bytearray; the engine writes into it.
            if len(buf) < n + 15:
                raise ValueError(f"buffer must be at least {n + 15} bytes for this payload")
            if not self._held and not self._done:
                self._lane.run(
                    CipherOp(self._alg, self._kind, self._key, self._chain, data, buf), True
                )
                if self._mode == "cbc":
                    self._chain = bytes(buf[n - 16 : n]) if self._encrypt else data[n - 16 : n]
                return n
        # The buffer is checked before anything runs, with `cryptography`'s rule (room for the
        # data plus a held-back partial block for ECB and CBC) so that both paths agree.
        view = memoryview(buf)
        if not view.c_contiguous:
            raise BufferError("Buffer is not contiguous.")  # as `cryptography` says it
        if view.format != "B":
            view = view.cast("B")
        if len(view) < n + self._slack:
            raise ValueError(f"buffer must be at least {n + self._slack} bytes for this payload")
        out = self._update(data, None if view.readonly else view)
        if out.__class__ is int:  # the engine wrote into the caller's buffer
            return out
        view[: len(out)] = out
        return len(out)

    def _update(self, data: Any, into: memoryview | None) -> Any:
        """One op over the held bytes and ``data``: the output, or with ``into`` (room enough)
        and nothing held back, the output written there and its length."""
        if self._done:
            raise AlreadyFinalized("Context was already finalized.")
        mode = self._mode
        held = self._held
        n = len(data)
        if held or (n % 16 and mode in ("ecb", "cbc")):
            buf = held + bytes(data)
            into = None
        else:
            buf = data  # the usual case: the caller's buffer goes to the engine as it is
        size = len(buf)
        full = size - size % 16
        if mode in ("ecb", "cbc"):
            if full == 0:
                self._held = bytes(buf)
                return b""
            send = buf if full == size else buf[:full]
        elif size:
            send = buf
        else:
            return b""
        out = self._lane.run(
            CipherOp(self._alg, self._kind, self._key, self._chain, send, into), True
        )
        if full and mode != "ecb":
            self._advance(
                buf[full - 16 : full], (into if into is not None else out)[full - 16 : full], full
            )
        self._held = bytes(buf[full:]) if full != size else b""
        if into is not None or not held or mode in ("ecb", "cbc"):
            return out
        # A stream mode re-sent the partial block it had seen: its output went out last time.
        return out[len(held) :]

    def _advance(self, last_in: Any, last_out: Any, full: int) -> None:
        """The chaining value after ``full`` bytes whose last block went ``last_in`` -> out."""
        mode = self._mode
        if mode == "cbc":
            self._chain = bytes(last_out if self._encrypt else last_in)
        elif mode == "ctr":
            counter = (int.from_bytes(self._chain, "big") + full // 16) & _MASK128
            self._chain = counter.to_bytes(16, "big")
        elif mode == "cfb":
            self._chain = bytes(last_out if self._encrypt else last_in)
        else:  # ofb: the keystream block is what was XORed in
            self._chain = bytes(a ^ b for a, b in zip(bytes(last_in), bytes(last_out), strict=True))

    def finalize(self) -> bytes:
        if self._done:
            raise AlreadyFinalized("Context was already finalized.")
        self._done = True
        if self._mode in ("ecb", "cbc") and self._held:
            raise ValueError(
                f"{self._mode.upper()} data must come to a multiple of 16 bytes "
                f"({len(self._held)} bytes left over; no padding is applied)"
            )
        return b""
