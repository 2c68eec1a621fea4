"""Shared machinery of hash and MAC contexts: stream into software, or gather for one engine op."""

from __future__ import annotations

from typing import Any

from cryptography.exceptions import AlreadyFinalized

from cryptoffload import provider as _p
from cryptoffload import validate
from cryptoffload.provider import Provider, _current, default_provider

#: Bytes a context gathers for one engine op; a longer stream moves to software, counted as a
#: ``streaming`` decline. Engines that keep hash state across calls can lift this later.
GATHER_LIMIT = 4 * 1024 * 1024


class StreamContext:
    """A context fed with update(); subclasses give the software context and the engine op.

    When only software can take the algorithm, data streams straight into the software context
    (no copies). Otherwise it is gathered and sent as one op at the end, so an engine that cannot
    carry state across calls still gets the whole message.
    """

    __slots__ = ("_alg", "_buf", "_done", "_provider", "_spilled", "_sw", "_total")

    def _start(self, alg: str, provider: Provider | None) -> None:
        self._alg = alg
        provider = self._provider = provider or _current.get() or _p._default or default_provider()
        self._total = 0
        self._done = False
        self._spilled = False
        direct = provider._direct.get(alg)
        if direct is None:
            direct = provider.direct(alg)
        if direct:
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

    def _op(self, data: bytes) -> Any:
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
        validate.byteslike("data", data)
        self._total += len(data)
        if sw is not None:
            sw.update(data)
            return
        self._buf += data
        if len(self._buf) > GATHER_LIMIT:
            self._sw = self._software()
            self._sw.update(self._buf)
            self._buf = None
            self._spilled = True

    def _finish(self) -> bytes:
        sw = self._sw
        if sw is not None and not self._spilled:
            self._sw = None
            self._done = True
            out = self._software_final(sw)
            self._provider.count_software(self._alg, self._total)
            return out
        if self._done:
            raise AlreadyFinalized("Context was already finalized.")
        self._done = True
        provider = self._provider
        if sw is not None:
            provider.software_finished(self._alg, self._total, "streaming")
            self._sw = None
            return self._software_final(sw)
        data = bytes(self._buf)
        self._buf = None
        return provider.run(self._op(data))

    def _copy_into(self, other: StreamContext) -> StreamContext:
        if self._done:
            raise AlreadyFinalized("Context was already finalized.")
        other._alg = self._alg
        other._provider = self._provider
        other._total = self._total
        other._done = False
        other._spilled = self._spilled
        other._sw = self._sw.copy() if self._sw is not None else None
        other._buf = bytearray(self._buf) if self._buf is not None else None
        return other
