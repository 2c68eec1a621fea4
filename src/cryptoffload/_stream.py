"""Hash and MAC contexts' shared machinery: software, one gathered op, or an engine's stream."""

from __future__ import annotations

import contextlib
import hmac
from typing import Any

from cryptography.exceptions import AlreadyFinalized, InvalidSignature

from cryptoffload.core import validate
from cryptoffload.core.ops import Op
from cryptoffload.core.provider import Lane, Provider, checked_provider, resolve

#: Bytes a context gathers for one engine op. A longer message goes to an engine that keeps a
#: running state (``open_stream``), else to software, each engine counted with its reason (a
#: ``streaming`` decline for one that keeps no running state).
GATHER_LIMIT = 4 * 1024 * 1024
#: Bytes an engine stream may hold. The context keeps everything it sent, so software can redo
#: the message if the engine faults; past this much (or past the policy's max_size for that
#: engine) it stops the engine and software takes over, counted as a ``too-large`` decline.
RETAIN_LIMIT = 256 * 1024 * 1024


def engine_gathering(
    lane: Lane,
    template: Op,
    call_name: str,
    software: Any,
    make_op: Any,
    spill: Any,
) -> tuple[Any, ...] | None:
    """What a hash or MAC context's message needs to be gathered for ``lane``'s engine route
    (``how`` of :class:`cryptoffload.core.directpath.PureGathered`), or None: no engine route,
    or its engine keeps no session for ``template`` (the algorithm; key and data None) with a
    method ``call_name`` (``digest(data)`` for a hash, ``mac(key, data)`` for a MAC).

    A message the route does not finish goes the way :class:`StreamContext` sends one:
    ``software(key, data)`` directly when the policy keeps its size from every engine (counted
    ``~size``), else the op ``make_op(key, data)`` through the lane; after a session's failure,
    that op is settled by the lane with it (``Lane.engine_failed``). A message longer than
    :data:`GATHER_LIMIT` goes on in ``spill(key)``'s context."""
    route = lane.engine_route
    if route is None:
        return None
    session = route.session(template)
    call = getattr(session, call_name, None) if session is not None else None
    if call is None:
        return None

    def fallback(key: Any, data: bytes, failed: Any, exc: Exception | None) -> bytes:
        if failed is not None:
            return lane.engine_failed(failed, make_op(key, data), exc)  # type: ignore[arg-type]
        n = len(data)
        if n < lane.hold_below or n > lane.hold_above:
            out = software(key, data)
            lane.count(~n)
            return out
        return lane.run(make_op(key, data), True)

    return (lane, route, call, fallback, spill)


class _EngineStream:
    """An engine's running state for one context, and the input kept in case it faults."""

    __slots__ = ("high", "kept", "kept_size", "name", "stream")

    def __init__(self, name: str, stream: Any, high: int | None) -> None:
        self.name = name
        self.stream = stream
        self.high = high  # the policy's max_size for this engine and algorithm
        self.kept: list[Any] = []
        self.kept_size = 0


class StreamContext:
    """A context fed with update(); subclasses give the software context and the engine op.

    When only software can take the algorithm, data streams straight into the software context
    (no copies). Otherwise it is gathered and sent as one op at the end, so an engine that cannot
    carry state across calls still gets the whole message.
    """

    __slots__ = (
        "_alg",
        "_buf",
        "_done",
        "_es",
        "_fallback",
        "_lane",
        "_spilled",
        "_sw",
        "_total",
    )

    def _start(self, alg: str, provider: Provider | None, lane: Lane | None = None) -> None:
        """Begin a message of ``alg`` on ``lane`` (None: ``provider``'s lane, or the one in
        force's: a caller that resolved it already passes it)."""
        self._alg = alg
        if lane is None:
            lane = resolve(checked_provider(provider)).lane(alg)
        self._lane = lane
        self._total = 0
        self._done = False
        self._spilled = False
        self._es = None
        if lane.software_only:
            self._sw = self._first_software()
            self._buf = None
        else:
            self._sw = None
            self._buf = bytearray()

    def _first_software(self) -> Any:
        """The software context a direct stream starts with (a subclass may defer making it)."""
        return self._software()

    # Subclasses provide these three.
    def _software(self) -> Any:
        raise NotImplementedError

    def _software_final(self, ctx: Any) -> bytes:
        raise NotImplementedError

    def _op(self, data: bytes) -> Op:
        raise NotImplementedError

    def update(self, data: bytes) -> None:
        """Add ``data`` to the message."""
        sw = self._sw
        if sw is not None and not self._spilled:
            try:
                sw.update(data)
            except TypeError:
                validate.byteslike("data", data)
                raise
            self._total += len(data)
            return
        if self._done:
            raise AlreadyFinalized("Context was already finalized.")
        if data.__class__ is not bytes:
            validate.byteslike("data", data)
        self._total += len(data)
        if sw is not None:
            sw.update(data)
            return
        if self._es is not None:
            self._send(data if type(data) is bytes else bytes(data))
            return
        self._buf += data
        if len(self._buf) > GATHER_LIMIT:
            buf, self._buf = self._buf, None
            opened = self._lane.open_stream(self._op(b""), len(buf))
            if type(opened) is dict:
                self._to_software([buf], opened)
            else:
                self._es = _EngineStream(*opened)
                self._send(buf)

    def _send(self, chunk: Any) -> None:
        """Feed the engine stream, keeping the chunk; a fault or too much kept goes to software."""
        es = self._es
        es.kept.append(chunk)
        es.kept_size += len(chunk)
        if es.kept_size > RETAIN_LIMIT or (es.high is not None and es.kept_size > es.high):
            self._drop_stream(es, "too-large", None)
            return
        try:
            es.stream.update(chunk)
        except Exception as exc:
            self._drop_stream(es, "fault", exc)

    def _drop_stream(self, es: _EngineStream, reason: str, exc: Exception | None) -> None:
        if exc is not None:
            self._lane.stream_fault(es.name, exc)
        with contextlib.suppress(Exception):  # abandoned either way; software has the message
            es.stream.close()
        self._es = None
        self._to_software(es.kept, {es.name: reason})

    def _to_software(self, chunks: list[Any], fallback: dict[str, str]) -> None:
        sw = self._software()
        for chunk in chunks:
            sw.update(chunk)
        self._sw = sw
        self._spilled = True
        self._fallback = fallback

    def _finish(self) -> bytes:
        sw = self._sw
        if sw is not None and not self._spilled:
            self._sw = None
            self._done = True
            out = self._software_final(sw)
            self._lane.count(self._total)
            return out
        if self._done:
            raise AlreadyFinalized("Context was already finalized.")
        lane = self._lane
        es = self._es
        if es is not None:
            try:
                out = es.stream.finalize()
            except Exception as exc:
                self._drop_stream(es, "fault", exc)
                sw = self._sw
            else:
                self._done = True
                self._es = None
                lane.stream_done(es.name, self._total)
                return out
        self._done = True
        if sw is not None:
            self._sw = None
            lane.finish_in_software(self._total, self._fallback)
            return self._software_final(sw)
        data = bytes(self._buf)
        self._buf = None
        n = len(data)
        if n < lane.hold_below or n > lane.hold_above:
            # The policy keeps this size from every engine: software directly, the engines'
            # declines counted from count(~n) (see Lane.holds_back).
            sw = self._software()
            sw.update(data)
            out = self._software_final(sw)
            lane.count(~n)
            return out
        return lane.run(self._op(data), self._CHECKED)

    #: True where the op at the end needs no check by the lane: every field but the data was
    #: checked when the context was made, and the data is the bytes gathered here.
    _CHECKED = False

    #: The subclass's own slots (key, algorithm) that a copy shares with its original.
    _OWN_FIELDS: tuple[str, ...] = ()

    def _fork(self) -> Any:
        """An independent context of the same class with the same input so far."""
        other = type(self).__new__(type(self))
        for name in self._OWN_FIELDS:
            setattr(other, name, getattr(self, name))
        return self._copy_into(other)

    def _copy_into(self, other: StreamContext) -> StreamContext:
        if self._done:
            raise AlreadyFinalized("Context was already finalized.")
        other._alg = self._alg
        other._lane = self._lane
        other._total = self._total
        other._done = False
        other._spilled = self._spilled
        other._fallback = getattr(self, "_fallback", None)
        other._sw = self._sw.copy() if self._sw is not None else None
        other._buf = bytearray(self._buf) if self._buf is not None else None
        other._es = None
        es = self._es
        if es is not None:
            try:
                twin = _EngineStream(es.name, es.stream.copy(), es.high)
            except Exception as exc:
                self._lane.stream_fault(es.name, exc)
                other._to_software(es.kept, {es.name: "fault"})
            else:
                twin.kept = list(es.kept)
                twin.kept_size = es.kept_size
                other._es = twin
        return other


class MacContext(StreamContext):
    """A streaming MAC: ``finalize`` gives the tag, ``verify`` compares one in constant time."""

    __slots__ = ()
    #: How ``verify`` names its argument and words a mismatch (as `cryptography` does).
    _VERIFY_ARG = "signature"
    _MISMATCH = "Signature did not match digest."

    def finalize(self) -> bytes:
        """The tag; the context cannot be used afterwards."""
        return self._finish()

    def verify(self, signature: bytes) -> None:
        """Raise InvalidSignature unless ``signature`` is this message's tag (constant-time)."""
        validate.byteslike(self._VERIFY_ARG, signature)
        if not hmac.compare_digest(self._finish(), bytes(signature)):
            raise InvalidSignature(self._MISMATCH)
