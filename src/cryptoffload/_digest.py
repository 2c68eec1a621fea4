"""Hash and MAC contexts on the direct path: their slow methods, shared by Hash, HMAC and CMAC.

The direct path itself is DigestCore's (see :class:`cryptoffload.core.directpath.PureDigestCore`):
where no engine claims the algorithm, the context is a software object (``_ctx``) and the
message is one op of the lane when it ends. A context off that path (an engine claims the
algorithm, or the software object cannot serve it) holds the gathering or streaming context of
``cryptoffload._stream`` in ``_inner`` and hands it every call.
"""

from __future__ import annotations

from hmac import compare_digest
from typing import Any

from cryptography.exceptions import AlreadyFinalized

from cryptoffload.core import validate
from cryptoffload.core.directpath import DigestCore
from cryptoffload.dmabuffer import as_plain


class DirectDigest(DigestCore):
    """DigestCore's slow methods: a call the direct path does not take (data other than bytes,
    a context whose message has ended, one off the direct path)."""

    __slots__ = ("_inner",)
    #: The subclass's (see PureDigestCore): (lanes, want, pass, final, mismatch, message).
    _direct_path: tuple[Any, ...] = ()

    def _set_direct(self, ctx: Any, lane: Any, algorithm: Any) -> None:
        """Start on the direct path with the software object ``ctx``."""
        self._algorithm = algorithm
        self._total = 0
        self._done = False
        self._lane = lane
        self._ctx = ctx

    def _set_inner(self, inner: Any, lane: Any, algorithm: Any) -> None:
        """Start off the direct path: ``inner`` takes every call."""
        self._set_direct(None, lane, algorithm)
        self._inner = inner

    def _ended(self) -> None:
        if self._done:
            raise AlreadyFinalized("Context was already finalized.")

    def _update_slow(self, data: Any) -> None:
        ctx = self._ctx
        if ctx is None:
            self._inner.update(data)
            return
        self._ended()
        if data.__class__ is not bytes:
            validate.byteslike("data", data)
            data = as_plain(data)
        ctx.update(data)
        self._total += len(data)

    def _finalize_slow(self) -> Any:
        ctx = self._ctx
        if ctx is None:
            return self._inner.finalize()
        self._ended()
        out = getattr(ctx, self._direct_path[3])()
        self._done = True
        self._lane.count(self._total)
        return out

    def _verify_slow(self, signature: Any) -> None:
        if self._ctx is None:
            self._inner.verify(signature)
            return
        mismatch, message = self._direct_path[4], self._direct_path[5]
        validate.byteslike("signature", signature)
        if not compare_digest(self._finalize_slow(), bytes(signature)):
            raise mismatch(message)

    def _copy_slow(self) -> Any:
        other = type(self).__new__(type(self))
        ctx = self._ctx
        if ctx is None:
            other._set_inner(self._inner.copy(), self._lane, self._algorithm)
        else:
            self._ended()
            other._set_direct(ctx.copy(), self._lane, self._algorithm)
        other._total = self._total
        return other
