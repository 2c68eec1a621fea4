"""The direct paths: the per-operation tests that let software's ops skip the Op (AEAD ops, and
``Cipher`` contexts' held-back updates, :class:`PureChainedCore`, and their updates on a lane no
engine claims, :class:`PureDirectStreamCore`), compiled where the build
could, else the pure-Python twins below.

An AES-GCM or AES-CCM operation takes the direct path when all of these hold (else the
primitive's ordinary method of the same name with a leading underscore runs, e.g. ``_encrypt``,
which decides everything the slow way):

- the primitive's lane is a :class:`LaneCore` (a ``Lane``) whose ``provider`` is the provider in
  force (the primitive's own, else the innermost ``using`` block's, else the default);
- the data is ``bytes`` (and the ``*_into`` buffer a ``bytearray``), all passed positionally
  (the compiled twin hands a call with keywords to the ordinary path, which counts it the same);
- its payload size ``n`` (less the tag when decrypting, and not negative) is software's:
  ``n < direct_below or n > direct_above``;
- the lane's record has room: ``len(direct_q) < direct_room``;
- the primitive has a `cryptography` object (``_sw``) that can do the op.

Then OpenSSL's object runs the op and ``lane.direct(n)`` records it (also when decryption fails
its tag; a TypeError or ValueError from OpenSSL goes to the ordinary path, which says why).
A failed ``decrypt_into`` zeroes the buffer: no plaintext is released.

The compiled twin (``cryptoffload._directpath``, built from ``_directpath.c`` at install time
where a C compiler is found) does exactly this, a C call instead of a Python frame and a
ContextVar lookup (``benchmarks/overhead.py`` says which twin it measured). Setting the variable
``CRYPTOFFLOAD_PURE_PYTHON=1`` before the import keeps the pure-Python twin.
"""

from __future__ import annotations

import os
import warnings
from collections import deque
from contextvars import ContextVar
from itertools import repeat, starmap
from typing import Any

from cryptography.exceptions import InvalidTag

__all__ = [
    "COMPILED",
    "CURRENT",
    "DEFAULT_BOX",
    "FOLD_AT",
    "TAIL",
    "AeadCore",
    "ChainedCore",
    "DirectStreamCore",
    "LaneCore",
    "PureAeadCore",
    "PureChainedCore",
    "PureDirectStreamCore",
    "PureLaneCore",
    "PureSizeLog",
    "SizeLog",
    "compiled_module",
    "note_using",
]

#: The ``using`` blocks' Provider (a context variable: each thread and task has its own). Typed
#: Any: this module is below cryptoffload.provider, which it must not import.
CURRENT: ContextVar[Any] = ContextVar("cryptoffload_provider", default=None)
#: ``[the default Provider]``, kept by ``cryptoffload.lane`` (one subscript, no call).
DEFAULT_BOX: list[Any] = [None]

_using = CURRENT.get  # bound once: no method lookup per op

#: The compiled module's API this module expects (``_directpath.API``): bumped with each
#: change of what the two share, so that a build left from older sources is not used.
API = 6

#: Pending sizes a counters' record holds before it is folded into the totals (the compiled
#: twin has its own copy, ``_directpath.FOLD_AT``; a test checks that both agree).
FOLD_AT = 4096

#: Input bytes a held-back ``Cipher`` stream keeps: a block before a partial block (CBC
#: decryption's chaining value) and the partial block itself. The compiled twin has its own
#: copy (``_directpath.TAIL``); a test checks that both agree.
TAIL = 31


class PureSizeLog(deque):
    """The counters' record of operation sizes not yet folded into the totals: ``append`` is
    atomic and takes no lock; ``drain`` takes exactly what is there."""

    __slots__ = ()

    def drain(self) -> list[int]:
        """The sizes recorded, in order, and an empty record."""
        return list(starmap(self.popleft, repeat((), len(self))))

    def drain_total(self) -> tuple[int, int]:
        """(how many, their sum), and an empty record."""
        sizes = self.drain()
        return len(sizes), sum(sizes)

    def drain_marked(self, edges: list[int]) -> tuple[int, int, int, list[int]]:
        """For a record of plain sizes and held-back ones marked ``~size``: (how many, the sum
        of their sizes, how many were marked, [how many marked sizes are below each edge]),
        and an empty record."""
        sizes = self.drain()
        held = [~n for n in sizes if n < 0]
        total = sum(n for n in sizes if n >= 0) + sum(held)
        return len(sizes), total, len(held), [sum(map(edge.__gt__, held)) for edge in edges]

    def drain_below(self, edges: list[int]) -> tuple[int, int, list[int]]:
        """(how many, their sum, [how many are below each edge]), and an empty record."""
        sizes = self.drain()
        return len(sizes), sum(sizes), [sum(map(edge.__gt__, sizes)) for edge in edges]


def pure_note_using() -> None:
    """A ``using`` block is about to set :data:`CURRENT`: from now on the compiled direct path
    looks it up (until then every context holds its default, None)."""


class PureLaneCore:
    """The fields of a ``Lane`` that the direct path reads on every operation."""

    __slots__ = (
        "direct",
        "direct_above",
        "direct_below",
        "direct_q",
        "direct_room",
        "hold_above",
        "hold_below",
        "provider",
        "tally",
        "tally_q",
    )


class PureAeadCore:
    """An AEAD primitive's direct path (``AESGCM``, ``AESCCM``): see the module's docstring.

    The subclass sets ``_lane``, ``_provider``, ``_sw`` and ``_tag_length`` and defines
    ``_encrypt``, ``_decrypt``, ``_encrypt_into`` and ``_decrypt_into``.
    """

    __slots__ = ("_lane", "_provider", "_sw", "_tag_length")

    def encrypt(self, nonce: bytes, data: bytes, associated_data: bytes | None) -> bytes:
        """Ciphertext followed by the tag."""
        lane = self._lane
        if (
            (self._provider or _using() or DEFAULT_BOX[0]) is lane.provider
            and data.__class__ is bytes
            and ((n := len(data)) < lane.direct_below or n > lane.direct_above)
            and len(lane.direct_q) < lane.direct_room
            and (sw := self._sw)
        ):
            try:
                out = sw.encrypt(nonce, data, associated_data)
            except (TypeError, ValueError):  # the ordinary path says why (or takes a DmaBuffer)
                return self._encrypt(nonce, data, associated_data)
            lane.direct(n)
            return out
        return self._encrypt(nonce, data, associated_data)

    def decrypt(self, nonce: bytes, data: bytes, associated_data: bytes | None) -> bytes:
        """The plaintext, or InvalidTag (and nothing else) when the data was altered."""
        lane = self._lane
        if (
            (self._provider or _using() or DEFAULT_BOX[0]) is lane.provider
            and data.__class__ is bytes
            and ((n := len(data) - self._tag_length) < lane.direct_below or n > lane.direct_above)
            and n >= 0
            and len(lane.direct_q) < lane.direct_room
            and (sw := self._sw)
        ):
            try:
                out = sw.decrypt(nonce, data, associated_data)
            except InvalidTag:
                lane.direct(n)
                raise
            except (TypeError, ValueError):  # the ordinary path says why (or takes a DmaBuffer)
                return self._decrypt(nonce, data, associated_data)
            lane.direct(n)
            return out
        return self._decrypt(nonce, data, associated_data)

    def encrypt_into(
        self, nonce: bytes, data: bytes, associated_data: bytes | None, buf: Any
    ) -> int:
        """Write ciphertext and tag into ``buf`` (exactly len(data) + tag bytes); return that.

        ``data`` and ``buf`` may be DmaBuffers (``engine.buffer(n)``): the engine that lent
        them runs the op on them in place; BufferError while another op in flight uses one."""
        lane = self._lane
        if (
            (self._provider or _using() or DEFAULT_BOX[0]) is lane.provider
            and data.__class__ is bytes
            and buf.__class__ is bytearray
            and ((n := len(data)) < lane.direct_below or n > lane.direct_above)
            and len(lane.direct_q) < lane.direct_room
            and (sw := self._sw)
        ):
            try:
                k = sw.encrypt_into(nonce, data, associated_data, buf)
            except (TypeError, ValueError):  # the ordinary path says why
                return self._encrypt_into(nonce, data, associated_data, buf)
            lane.direct(n)
            return k
        return self._encrypt_into(nonce, data, associated_data, buf)

    def decrypt_into(
        self, nonce: bytes, data: bytes, associated_data: bytes | None, buf: Any
    ) -> int:
        """Write the plaintext into ``buf`` (len(data) - tag bytes), only once the tag holds:
        on InvalidTag ``buf`` holds zeros. DmaBuffers: see ``encrypt_into``."""
        lane = self._lane
        if (
            (self._provider or _using() or DEFAULT_BOX[0]) is lane.provider
            and data.__class__ is bytes
            and buf.__class__ is bytearray
            and ((n := len(data) - self._tag_length) < lane.direct_below or n > lane.direct_above)
            and n >= 0
            and len(lane.direct_q) < lane.direct_room
            and (sw := self._sw)
        ):
            try:
                k = sw.decrypt_into(nonce, data, associated_data, buf)
            except InvalidTag:
                # OpenSSL's GCM has written the plaintext before the tag failed: none released.
                buf[:] = bytes(len(buf))
                lane.direct(n)
                raise
            except (TypeError, ValueError):  # the ordinary path says why
                return self._decrypt_into(nonce, data, associated_data, buf)
            lane.direct(n)
            return k
        return self._decrypt_into(nonce, data, associated_data, buf)


class PureChainedCore:
    """A ``Cipher`` context's held-back path (``_ChainedContext``): an update the policy keeps
    from every engine runs on the kept OpenSSL context without the Op.

    ``update(data)`` takes it when the kept context ``_sw`` is set (not None), ``data`` is
    ``bytes``, the op an engine would get (``_sw_total % _block + len(data)``, whole blocks
    when ``_whole_blocks``) is held back (``size < lane.hold_below or size > lane.hold_above``)
    and ``data`` is not empty; ``update_into(data, buf)`` when ``buf`` is also a ``bytearray``
    with room for OpenSSL's rule (``len(data) + _block - 1``), empty data included. Then it
    keeps the input tail (``_sw_in``, :data:`TAIL` bytes), CBC encryption's output tail
    (``_sw_out``, 16 bytes, when ``_cbc_encrypt``), adds to ``_sw_total`` and records
    ``lane.tally(~size)`` (a size of 0 is not recorded). Anything else goes to
    ``_update_slow(data)`` / ``_update_into_slow(data, buf)``; an error from OpenSSL goes on
    with nothing recorded. (The compiled twin keeps ``update_into``'s output tail inside until
    ``_sw_out`` is read, then gives it as ``bytes`` where this twin keeps a ``bytearray`` copy:
    the same bytes, which is all ``_leave_held`` reads.)
    """

    __slots__ = (
        "_block",
        "_cbc_encrypt",
        "_lane",
        "_sw",
        "_sw_in",
        "_sw_out",
        "_sw_total",
        "_whole_blocks",
    )

    def _held_size(self, n: int) -> int:
        """The op an engine would get for ``n`` more bytes; -1 unless the policy holds it back
        (``held_lane`` in the compiled twin)."""
        block = self._block
        size = self._sw_total % block + n
        if self._whole_blocks:
            size -= size % block
        lane = self._lane
        return size if size < lane.hold_below or size > lane.hold_above else -1

    def _note_held(self, data: bytes, size: int) -> None:
        """After a held-back op: the bytes count, the input tail, ``~size`` tallied (0: none),
        the lane folding a long record (``note_held`` in the compiled twin)."""
        n = len(data)
        self._sw_total += n
        self._sw_in = data if n >= TAIL else (bytes(self._sw_in) + data)[-TAIL:]
        if size:
            lane = self._lane
            lane.tally(~size)
            if len(lane.tally_q) > FOLD_AT:  # a long stream: keep the record short
                lane.fold_due()

    def update(self, data: bytes) -> bytes:
        """The output for ``data`` (ECB and CBC hold a partial block back)."""
        sw = self._sw
        if sw is not None and data.__class__ is bytes and data:
            size = self._held_size(len(data))
            if size >= 0:
                out = sw.update(data)
                if out and self._cbc_encrypt:
                    self._sw_out = out if len(out) >= 16 else (self._sw_out + out)[-16:]
                self._note_held(data, size)
                return out
        return self._update_slow(data)  # type: ignore[attr-defined]

    def update_into(self, data: bytes, buf: Any) -> int:
        """Write the output for ``data`` into ``buf``; return its length."""
        sw = self._sw
        if sw is not None and data.__class__ is bytes and buf.__class__ is bytearray:
            size = self._held_size(len(data))
            if size >= 0 and len(buf) >= len(data) + self._block - 1:
                k = sw.update_into(data, buf)
                if k and self._cbc_encrypt:
                    self._sw_out = buf[max(0, k - 16) : k]  # a copy: the caller owns buf
                self._note_held(data, size)
                return k
        return self._update_into_slow(data, buf)  # type: ignore[attr-defined]


class PureDirectStreamCore:
    """A ``Cipher`` context on a lane no engine claims (``_DirectContext``): each update runs on
    the OpenSSL context ``_ctx`` and, when it gives output, ``lane.count(len(data))`` counts it
    (the compiled twin appends to the lane's record itself and folds past :data:`FOLD_AT`).

    ``update(data)`` takes this path when ``data`` is ``bytes``; ``update_into(data, buf)``
    when ``buf`` is also a ``bytearray``. Anything else (a DmaBuffer, a memoryview) goes to
    ``_update_slow(data)`` / ``_update_into_slow(data, buf)``. An error from OpenSSL goes on with
    nothing counted.
    """

    __slots__ = ("_ctx", "_lane")

    def update(self, data: bytes) -> bytes:
        """The output for ``data`` (ECB and CBC hold a partial block back)."""
        if data.__class__ is bytes:
            out = self._ctx.update(data)
            if out:
                self._lane.count(len(data))
            return out
        return self._update_slow(data)  # type: ignore[attr-defined]

    def update_into(self, data: bytes, buf: Any) -> int:
        """Write the output for ``data`` into ``buf``; return its length."""
        if data.__class__ is bytes and buf.__class__ is bytearray:
            k = self._ctx.update_into(data, buf)
            if k:
                self._lane.count(len(data))
            return k
        return self._update_into_slow(data, buf)  # type: ignore[attr-defined]


def compiled_module() -> Any:
    """The compiled module, configured, or None (not built here, or not wanted)."""
    if os.environ.get("CRYPTOFFLOAD_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from cryptoffload import _directpath
    except ImportError:  # no compiler at install time, or built for another Python
        return None
    if getattr(_directpath, "API", None) != API:
        warnings.warn(
            f"cryptoffload._directpath ({getattr(_directpath, '__file__', '?')}) was built "
            "from other sources than this cryptoffload's: the pure-Python direct path runs; "
            "reinstall to rebuild it",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    _directpath.configure(CURRENT, DEFAULT_BOX, InvalidTag)
    return _directpath


_module = compiled_module()
#: Whether the compiled direct path is in use (``cryptoffload engines`` says which).
COMPILED = _module is not None
SizeLog: Any = _module.SizeLog if _module is not None else PureSizeLog
LaneCore: Any = _module.LaneCore if _module is not None else PureLaneCore
AeadCore: Any = _module.AeadCore if _module is not None else PureAeadCore
ChainedCore: Any = _module.ChainedCore if _module is not None else PureChainedCore
DirectStreamCore: Any = _module.DirectStreamCore if _module is not None else PureDirectStreamCore
note_using: Any = _module.note_using if _module is not None else pure_note_using
