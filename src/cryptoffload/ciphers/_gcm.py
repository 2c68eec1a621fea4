"""``Cipher(AES(key), GCM(iv))`` contexts: on an engine that keeps GHASH across calls, else OpenSSL.

An engine's stream (``open_aead_stream``, engines/base.py) answers every ``update`` at once; the
context keeps the AAD and data it sent, so that if the engine faults (or the policy's max_size or
RETAIN_LIMIT is passed) software redoes them and finishes with the same outputs and tag. The
calls keep `cryptography`'s rules, in its order: AlreadyFinalized, AlreadyUpdated, the byte
limits of the mode (``_MAX_ENCRYPTED_BYTES``, ``_MAX_AAD_BYTES``), NotYetFinalized for an early
``tag``, the tag rules of ``finalize`` / ``finalize_with_tag``, and the plaintext released
before the tag is checked. After a failed tag the context is `cryptography`'s own (replayed), so
what follows behaves as it would there.

Counting, as for streamed hashes and MACs: one op when the stream ends, of the data bytes fed to
``update`` (AAD not counted), under the engine that finished it (a failed tag included: the
engine answered); after a fault or a ``too-large`` drop, under software, the engine's fault or
decline counted. Engines passed over when the stream opened are counted then, with their reason
(``streaming`` for one without ``open_aead_stream``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from cryptography.exceptions import AlreadyFinalized, AlreadyUpdated, InvalidTag, NotYetFinalized
from cryptography.hazmat.primitives.ciphers import AEADDecryptionContext, AEADEncryptionContext

from cryptoffload._buffers import refuse_overlap
from cryptoffload._stream import RETAIN_LIMIT
from cryptoffload.ciphers._software import SoftwareStream, software_context
from cryptoffload.core import validate
from cryptoffload.core._log import log
from cryptoffload.core.directpath import AeadStreamCore, EngineGcmCore, own_methods
from cryptoffload.core.ops import AeadOp
from cryptoffload.core.provider import Lane

__all__ = ["GcmDirectDecryptor", "GcmDirectEncryptor", "gcm_context", "gcm_open_failed"]

_FINALIZED = "Context was already finalized."


def gcm_context(cipher: Any, lane: Lane, encrypt: bool) -> Any:
    """The encryptor or decryptor for a ``Cipher`` in GCM: an engine's stream if one opens."""
    if encrypt and cipher.mode.tag is not None:  # `cryptography`'s check, before any engine
        raise ValueError("Authentication tag must be None when encrypting.")
    if not lane.aead_streams:  # as before engines could stream: each declines `streaming`
        declines: Mapping[str, str] = lane.declines_for("streaming")
    else:
        key, iv = cipher.algorithm.key, cipher.mode.initialization_vector
        op = AeadOp(
            cipher._alg,
            "encrypt" if encrypt else "decrypt",
            key if key.__class__ is bytes else bytes(key),
            iv if iv.__class__ is bytes else bytes(iv),
            b"",
            b"",
            16,
        )
        return _opened(cipher, lane, encrypt, lane.open_aead_stream(op))
    return _opened(cipher, lane, encrypt, declines)


def gcm_open_failed(cipher: Any, lane: Lane, encrypt: bool, op: AeadOp, exc: Exception) -> Any:
    """The context when the compiled path asked the engine route's engine for ``op``'s stream
    and it raised ``exc``: that engine's answer counted as :func:`gcm_context` would count it,
    the engines after it asked, then software."""
    return _opened(cipher, lane, encrypt, lane.open_aead_stream(op, exc))


def _opened(cipher: Any, lane: Lane, encrypt: bool, opened: Any) -> Any:
    """The context for what opening the stream gave: an engine's ``(name, stream, high)``, or
    why each engine did not take it (then software's context)."""
    if type(opened) is not dict:
        return (EngineGcmEncryptor if encrypt else EngineGcmDecryptor)(cipher, lane, *opened)
    declines: Mapping[str, str] = opened
    lane.allow_software(declines)  # a policy that requires offload refuses it now
    if lane.software_only:  # no engine on the route: OpenSSL's context, counted when it ends
        return (GcmDirectEncryptor if encrypt else GcmDirectDecryptor)(cipher, lane, encrypt)
    return (GcmEncryptor if encrypt else GcmDecryptor)(cipher, lane, encrypt, declines)


def _check_buffer(data: Any) -> None:
    """TypeError, in `cryptography`'s words (code may match them), unless ``data`` is a buffer."""
    try:
        memoryview(data)
    except TypeError:
        text = f'Cannot convert "{type(data)!r}" instance to a buffer.'
        if isinstance(data, str):
            text += "\nDid you mean to pass a bytestring instead?"
        raise TypeError(text) from None


# ---------------------------------------------------------------------- in software


class _GcmContext(SoftwareStream):
    """Streaming GCM on OpenSSL: associated data, then the stream (see SoftwareStream)."""

    __slots__ = ()

    def authenticate_additional_data(self, data: bytes) -> None:
        self._ctx.authenticate_additional_data(data)


class GcmEncryptor(_GcmContext):
    """A streaming GCM encryption on OpenSSL; ``tag`` once finalized."""

    __slots__ = ()

    @property
    def tag(self) -> bytes:
        return self._ctx.tag


class GcmDecryptor(_GcmContext):
    """A streaming GCM decryption on OpenSSL; the tag in the mode, or to ``finalize_with_tag``."""

    __slots__ = ()

    def finalize_with_tag(self, tag: bytes) -> bytes:
        validate.byteslike("tag", tag)
        validate.gcm_tag_length(len(tag))
        try:
            return self._ctx.finalize_with_tag(tag)
        finally:
            self._done()


class _GcmDirect(AeadStreamCore):
    """Streaming GCM on OpenSSL where no engine claims it: AeadStreamCore's calls (compiled
    where built, see :class:`cryptoffload.core.directpath.PureAeadStreamCore`), counted when the
    stream ends; the calls it does not take come here, and behave as SoftwareStream's."""

    __slots__ = ()

    def __init__(self, cipher: Any, lane: Lane, encrypt: bool) -> None:
        self._ctx = software_context(cipher, encrypt)
        self._lane = lane
        self._total = 0
        self._counted = False
        self._encrypt = encrypt

    def _count(self) -> None:
        if not self._counted:
            self._counted = True
            self._lane.count(self._total)

    def _update_slow(self, data: Any) -> bytes:
        out = self._ctx.update(data)
        self._total += len(data)
        return out

    def _update_into_slow(self, data: Any, buf: Any) -> int:
        n = self._ctx.update_into(data, buf)
        self._total += len(data)
        return n

    def _aad_slow(self, data: Any) -> None:
        self._ctx.authenticate_additional_data(data)

    def _finalize_slow(self) -> bytes:
        try:
            return self._ctx.finalize()
        finally:
            self._count()

    def reset_nonce(self, nonce: bytes) -> None:
        self._ctx.reset_nonce(nonce)


class GcmDirectEncryptor(_GcmDirect):
    """A streaming GCM encryption on OpenSSL where no engine claims it; ``tag`` once finalized
    (AeadStreamCore's)."""

    __slots__ = ()


class GcmDirectDecryptor(_GcmDirect):
    """A streaming GCM decryption on OpenSSL where no engine claims it: the tag in the mode, or
    to ``finalize_with_tag``."""

    __slots__ = ()
    finalize_with_tag = AeadStreamCore._finalize_with_tag

    def _finalize_with_tag_slow(self, tag: bytes) -> bytes:
        validate.byteslike("tag", tag)
        validate.gcm_tag_length(len(tag))
        try:
            return self._ctx.finalize_with_tag(tag)
        finally:
            self._count()


# ---------------------------------------------------------------------- on an engine


class _EngineGcm(EngineGcmCore):
    """A GCM stream an engine holds, with what it was sent kept for software to redo: the calls
    that take no Python here are EngineGcmCore's (compiled where built, see
    :class:`cryptoffload.core.directpath.PureEngineGcmCore`); the rest come here."""

    # _aad_left, _cipher, _data_left, _done, _encrypt, _failed, _fallback, _high, _kept,
    # _kept_size, _lane, _min_tag, _mode_tag, _name, _route, _stream, _sw, _tag, _total,
    # _updated: EngineGcmCore's.
    __slots__ = ()

    def __init__(self, cipher: Any, lane: Lane, name: str, stream: Any, high: int | None) -> None:
        mode = cipher.mode
        self._cipher = cipher
        self._lane = lane
        self._name = name
        self._stream = stream
        route = getattr(lane, "engine_route", None)
        # The engine's own route, while it is the lane's engine route: counted in C at the end.
        self._route = route if route is not None and route.name == name else None
        self._high = high  # the policy's max_size for this engine and algorithm
        self._encrypt = isinstance(self, EngineGcmEncryptor)
        self._mode_tag = None if self._encrypt else mode.tag
        self._min_tag = mode._min_tag_length
        self._data_left = mode._MAX_ENCRYPTED_BYTES
        self._aad_left = mode._MAX_AAD_BYTES
        self._kept = []  # (is AAD, bytes) in the order sent
        self._kept_size = 0
        self._total = 0
        self._updated = False
        self._done = False
        self._tag = None
        #: After a fault or too-large: `cryptography`'s context, fed what the engine was sent.
        self._sw = None
        self._fallback: dict[str, str] = {}
        #: After a failed tag: every call goes to `cryptography`'s context in that same state.
        self._failed = False

    # -- the two ways to software -----------------------------------------------------------

    def _replayed(self) -> Any:
        """`cryptography`'s context fed everything the engine was sent (outputs dropped)."""
        sw = software_context(self._cipher, self._encrypt)
        for is_aad, chunk in self._kept:
            if is_aad:
                sw.authenticate_additional_data(chunk)
            else:
                sw.update(chunk)
        return sw

    def _drop(self, reason: str, exc: BaseException | None) -> None:
        """Leave the engine: software takes the stream from here."""
        if exc is not None:
            self._lane.stream_fault(self._name, exc)
        with contextlib.suppress(Exception):  # abandoned either way; software has the input
            self._stream.close()
        self._sw = self._replayed()
        self._kept = []
        self._fallback = {self._name: reason}

    def _keep(self, is_aad: bool, chunk: bytes) -> bool:
        """Keep ``chunk``; False (the engine dropped) once more is kept than RETAIN_LIMIT, or
        more data (``_total``, counted before) than the policy's max_size for the engine."""
        self._kept.append((is_aad, chunk))
        self._kept_size += len(chunk)
        high = self._high
        if self._kept_size > RETAIN_LIMIT or (high is not None and self._total > high):
            self._kept.pop()
            self._drop("too-large", None)
            return False
        return True

    def _resend(self, is_aad: bool, chunk: bytes, exc: BaseException) -> bytes | None:
        """The engine raised ``exc`` on ``chunk`` (kept last): software takes the stream from
        here and does ``chunk``."""
        self._kept.pop()
        self._drop("fault", exc)
        if is_aad:
            self._sw.authenticate_additional_data(chunk)
            return None
        return self._sw.update(chunk)

    # -- associated data and the stream --------------------------------------------------------

    def _aad_slow(self, data: bytes) -> None:
        if self._failed:
            self._sw.authenticate_additional_data(data)
            return
        validate.byteslike("data", data)
        if self._done:
            raise AlreadyFinalized(_FINALIZED)
        if self._updated:
            raise AlreadyUpdated("Update has been called on this context.")
        n = memoryview(data).nbytes
        if n > self._aad_left:
            raise ValueError("Exceeded maximum AAD byte limit")
        self._aad_left -= n
        if self._sw is not None:
            self._sw.authenticate_additional_data(data)
            return
        chunk = bytes(data)
        if not self._keep(True, chunk):
            self._sw.authenticate_additional_data(chunk)
            return
        try:
            self._stream.update_aad(chunk)
        except Exception as exc:
            self._resend(True, chunk, exc)

    def _take(self, data: Any) -> int:
        """`cryptography`'s checks before an update, in its order; the data's length."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            _check_buffer(data)
        self._updated = True
        n = len(data) if type(data) is bytes else memoryview(data).nbytes
        if n > self._data_left:
            raise ValueError("Exceeded maximum encrypted byte limit")
        self._data_left -= n
        if self._done:
            raise AlreadyFinalized(_FINALIZED)
        return n

    def _send(self, chunk: bytes) -> bytes:
        """The output for ``chunk``: the engine's, or software's after a fault."""
        self._total += len(chunk)
        if self._sw is None and self._keep(False, chunk):
            try:
                out = self._stream.update(chunk)
            except Exception as exc:
                return self._resend(False, chunk, exc)  # type: ignore[return-value]
            return self._engine_output(out, chunk)
        return self._sw.update(chunk)

    def _engine_output(self, out: Any, chunk: bytes) -> bytes:
        """The engine's output ``out`` for ``chunk`` as bytes; software's if it is not one of
        the same length (a fault)."""
        try:
            if len(out) != len(chunk):
                raise ValueError(f"{len(out)} bytes out for {len(chunk)} in")
            return bytes(out)
        except Exception as exc:
            return self._resend(False, chunk, exc)  # type: ignore[return-value]

    def _update_slow(self, data: bytes) -> bytes:
        if self._failed:
            return self._sw.update(data)
        self._take(data)
        return self._send(bytes(data))

    def update_into(self, data: bytes, buf: Any) -> int:
        if self._failed:
            return self._sw.update_into(data, buf)
        n = self._take(data)
        view = memoryview(buf)
        if not view.c_contiguous:
            raise BufferError("Buffer is not contiguous.")
        view = view.cast("B")
        if len(view) < n:
            raise ValueError(f"buffer must be at least {n} bytes for this payload")
        refuse_overlap(data, view)
        view[:n] = self._send(bytes(data))
        return n

    def reset_nonce(self, nonce: bytes) -> None:
        if self._failed:
            self._sw.reset_nonce(nonce)
            return
        if self._done:
            raise AlreadyFinalized(_FINALIZED)
        software_context(self._cipher, self._encrypt).reset_nonce(nonce)  # raises as it does

    # -- the end -----------------------------------------------------------------------------

    def _finish_in_software(self) -> None:
        self._done = True
        self._lane.finish_in_software(self._total, self._fallback)


class EngineGcmEncryptor(_EngineGcm):
    """A streaming GCM encryption an engine holds; ``tag`` once finalized (EngineGcmCore's)."""

    __slots__ = ()

    def _finalize_slow(self) -> bytes:
        if self._done:
            raise AlreadyFinalized(_FINALIZED)
        if self._sw is None:
            try:
                out = self._stream.finalize()
            except Exception as exc:
                return self._engine_finalized(None, exc)
            return self._engine_finalized(out, None)
        return self._software_finalize()

    def _engine_finalized(self, out: Any, exc: BaseException | None) -> bytes:
        """The engine's ``finalize`` gave ``out`` (or raised ``exc``): its tag if that is 16
        bytes, else (a fault) software finishes the stream."""
        if exc is None:
            try:
                tag = bytes(out)
                if len(tag) != 16:
                    raise ValueError(f"a {len(tag)}-byte GCM tag")
            except Exception as bad:
                exc = bad
            else:
                self._tag = tag
                self._finish_on_engine()
                return b""
        self._drop("fault", exc)
        return self._software_finalize()

    def _software_finalize(self) -> bytes:
        sw = self._sw
        out = sw.finalize()
        self._tag = sw.tag
        self._finish_in_software()
        return out

    def _tag_missing(self) -> bytes:
        raise NotYetFinalized("You must finalize encryption before getting the tag.")


class EngineGcmDecryptor(_EngineGcm):
    """A streaming GCM decryption an engine holds; the plaintext leaves before the tag is
    checked, as in `cryptography`; the tag in the mode, or given to ``finalize_with_tag``."""

    __slots__ = ()
    finalize_with_tag = EngineGcmCore._finalize_with_tag

    def _finalize_slow(self) -> bytes:
        if self._failed:
            return self._sw.finalize()
        if self._done:
            raise AlreadyFinalized(_FINALIZED)
        tag = self._cipher.mode.tag
        if tag is None:
            raise ValueError("Authentication tag must be provided when decrypting.")
        return self._check(tag)

    def _finalize_with_tag_slow(self, tag: bytes) -> bytes:
        validate.byteslike("tag", tag)
        validate.gcm_tag_length(len(tag))
        if self._failed:
            return self._sw.finalize_with_tag(tag)
        if self._done:
            raise AlreadyFinalized(_FINALIZED)
        mode = self._cipher.mode
        if mode.tag is not None:
            raise ValueError("Authentication tag must be provided only once.")
        if len(tag) < mode._min_tag_length:
            raise ValueError(f"Authentication tag must be {mode._min_tag_length} bytes or longer.")
        return self._check(bytes(tag))

    def _software_check(self, sw: Any, tag: bytes) -> bytes:
        """`cryptography`'s finalize on ``sw`` with ``tag`` (from the mode, or given)."""
        if self._cipher.mode.tag is not None:
            return sw.finalize()
        return sw.finalize_with_tag(tag)

    def _check(self, tag: bytes) -> bytes:
        if self._sw is None:
            return self._engine_check(tag)
        return self._check_in_software(tag)

    def _check_failed(self, tag: bytes, exc: BaseException) -> bytes:
        """The engine raised ``exc`` checking ``tag``: a failed tag is decided again by
        software (:meth:`_refused`); anything else is a fault, and software checks it."""
        if isinstance(exc, InvalidTag):
            return self._refused(tag)
        self._drop("fault", exc)
        return self._check_in_software(tag)

    def _check_in_software(self, tag: bytes) -> bytes:
        try:
            return self._software_check(self._sw, tag)
        except InvalidTag:
            self._failed = True  # later calls see `cryptography`'s context after its failure
            raise
        finally:
            self._finish_in_software()

    def _refused(self, tag: bytes) -> bytes:
        """The engine failed the tag: software, fed the same, takes over the context in the
        state `cryptography` leaves after a failed tag (and decides, should the two differ)."""
        sw = self._replayed()
        try:
            out = self._software_check(sw, tag)
        except InvalidTag:
            self._sw, self._failed = sw, True
            self._finish_on_engine()
            raise
        # Software accepts the tag the engine refused: its answer stands, the engine's is a fault.
        log.error("engine %s refused a GCM tag that software accepts", self._name)
        self._lane.stream_fault(self._name, InvalidTag())
        self._sw, self._fallback = sw, {self._name: "fault"}
        self._kept = []
        self._finish_in_software()
        return out


AEADEncryptionContext.register(GcmEncryptor)
AEADDecryptionContext.register(GcmDecryptor)
AEADEncryptionContext.register(EngineGcmEncryptor)
AEADDecryptionContext.register(EngineGcmDecryptor)
AEADEncryptionContext.register(GcmDirectEncryptor)
AEADDecryptionContext.register(GcmDirectDecryptor)
own_methods(GcmDirectEncryptor)
own_methods(GcmDirectDecryptor)  # calls of the compiled methods specialize for their objects
own_methods(EngineGcmEncryptor)
own_methods(EngineGcmDecryptor)
GcmDirectDecryptor.finalize_with_tag = GcmDirectDecryptor.__dict__.get(
    "_finalize_with_tag", AeadStreamCore._finalize_with_tag
)
EngineGcmDecryptor.finalize_with_tag = EngineGcmDecryptor.__dict__.get(
    "_finalize_with_tag", EngineGcmCore._finalize_with_tag
)
