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

# hmac.compare_digest without hmac's import (it loads hashlib and OpenSSL's _hashlib, a start-up
# cost): the constant-time comparison hmac itself falls back to.
from _operator import _compare_digest as compare_digest
from collections import deque
from contextvars import ContextVar
from itertools import repeat, starmap
from typing import Any

from cryptography.exceptions import InvalidTag

from cryptoffload.engines._extensions import load_extension

__all__ = [
    "COMPILED",
    "CURRENT",
    "DEFAULT_BOX",
    "FOLD_AT",
    "GATHER_LIMIT",
    "ORDINARY",
    "RETAIN_LIMIT",
    "TAIL",
    "AeadCore",
    "AeadStreamCore",
    "CcmCheck",
    "ChainedCore",
    "CipherCore",
    "DigestCore",
    "DirectStreamCore",
    "EngineGcmCore",
    "Gathered",
    "HkdfCore",
    "LaneCore",
    "PureAeadCore",
    "PureAeadStreamCore",
    "PureCcmCheck",
    "PureChainedCore",
    "PureCipherCore",
    "PureDigestCore",
    "PureDirectStreamCore",
    "PureEngineGcmCore",
    "PureGathered",
    "PureHkdfCore",
    "PureLaneCore",
    "PureSizeLog",
    "SizeLog",
    "compiled_module",
    "direct_construction",
    "note_using",
    "own_methods",
]

#: The ``using`` blocks' Provider (a context variable: each thread and task has its own). Typed
#: Any: this module is below cryptoffload.provider, which it must not import.
CURRENT: ContextVar[Any] = ContextVar("cryptoffload_provider", default=None)
#: ``[the default Provider]``, kept by ``cryptoffload.lane`` (one subscript, no call).
DEFAULT_BOX: list[Any] = [None]

_using = CURRENT.get  # bound once: no method lookup per op

#: The compiled module's API this module expects (``_directpath.API``): bumped with each
#: change of what the two share, so that a build left from older sources is not used.
API = 12

#: Pending sizes a counters' record holds before it is folded into the totals (the compiled
#: twin has its own copy, ``_directpath.FOLD_AT``; a test checks that both agree).
FOLD_AT = 4096

#: The longest data or associated data an AEAD op takes (``validate.AEAD_MAX``; this module
#: is below validate, and the compiled twin has its own copy).
_AEAD_MAX = 2**31 - 1

#: What the engine route gives when the ordinary path must run.
ORDINARY = object()

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
        "engine_ceiling",
        "engine_floor",
        "engine_pending",
        "engine_route",
        "hold_above",
        "hold_below",
        "provider",
        "tally",
        "tally_q",
        "watch_misses",
    )


class PureAeadCore:
    """An AEAD primitive's direct path (``AESGCM``, ``AESCCM``): see the module's docstring.

    The subclass sets ``_lane``, ``_provider``, ``_sw``, ``_tag_length`` and the nonce lengths
    its mode takes (``_nonce_min``, ``_nonce_max``: no engine route while ``_nonce_max`` < 1;
    ``_ccm_rule``: CCM's limit of the payload by the nonce's length) and defines ``_encrypt``,
    ``_decrypt``, ``_encrypt_into``, ``_decrypt_into``, ``_open_session`` and
    ``_engine_failed`` (the engine route: see :meth:`_engine_route`).
    """

    __slots__ = (
        "_ccm_rule",
        "_lane",
        "_nonce_max",
        "_nonce_min",
        "_provider",
        "_session",
        "_session_route",
        "_sw",
        "_tag_length",
    )

    def _engine_route(self, kind: str, nonce: Any, data: bytes, aad: Any, n: int) -> Any:
        """``encrypt`` or ``decrypt`` (``kind``) of a payload of ``n`` bytes through the engine
        route, or :data:`ORDINARY` when the ordinary path must run.

        The route is the lane's ``engine_route``: its first engine, when that engine keeps
        sessions (``session(op)``) and nothing per op needs the lane's Python (``Lane.
        set_engine_route``). It takes an op the policy offers that engine (``engine_floor <= n
        <= engine_ceiling``) whose fields ``validate_op`` would pass as they stand: the key and
        tag length were checked when the object was made; the nonce is bytes of a length the
        mode takes, the data and associated data bytes (or None) of at most AEAD_MAX bytes.
        The session kept for this key (made once per route, ``_open_session``) does the op;
        its answer is counted as ``Lane.settle`` counts one (``Lane.answered``); anything it
        raises goes to ``_engine_failed``, which settles it by the lane's rules and goes on.
        """
        lane = self._lane
        route = getattr(lane, "engine_route", None)
        if (
            route is None
            or self._nonce_max < 1
            or not lane.engine_floor <= n <= lane.engine_ceiling
            or nonce.__class__ is not bytes
            or not self._nonce_min <= (nonce_len := len(nonce)) <= self._nonce_max
            or len(data) > _AEAD_MAX
            or (aad is not None and (aad.__class__ is not bytes or len(aad) > _AEAD_MAX))
            or (self._ccm_rule and nonce_len > 7 and n >= 1 << (8 * (15 - nonce_len)))
            or (self._provider or _using() or DEFAULT_BOX[0]) is not lane.provider
        ):
            return ORDINARY
        if getattr(self, "_session_route", None) is not route:
            self._session = self._open_session(route)
            self._session_route = route
        call = getattr(self._session, kind, None)
        if call is None or lane.engine_route is not route:
            return ORDINARY
        try:
            out = call(nonce, data, aad)
        except Exception as exc:
            return self._engine_failed(lane, route, kind, exc, nonce, data, aad)
        lane.answered(route, n)
        return out

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
        if data.__class__ is bytes:
            out = self._engine_route("encrypt", nonce, data, associated_data, len(data))
            if out is not ORDINARY:
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
        if data.__class__ is bytes and (n := len(data) - self._tag_length) >= 0:
            out = self._engine_route("decrypt", nonce, data, associated_data, n)
            if out is not ORDINARY:
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
        "_done",
        "_lane",
        "_sw",
        "_sw_in",
        "_sw_out",
        "_sw_route",
        "_sw_total",
        "_whole_blocks",
    )

    def _held_size(self, n: int) -> int:
        """The op an engine would get for ``n`` more bytes; -1 unless the kept context takes
        it (``held_lane`` in the compiled twin): software's (``_sw_route`` None) when the
        policy holds it back from every engine, the engine route's session (``_sw_route``: the
        lane's ``engine_route``) when its size (not 0) is one that route takes."""
        block = self._block
        size = self._sw_total % block + n
        if self._whole_blocks:
            size -= size % block
        lane = self._lane
        route = getattr(self, "_sw_route", None)  # unset: software's
        if route is None:
            return size if size < lane.hold_below or size > lane.hold_above else -1
        if route is lane.engine_route and size and lane.engine_floor <= size <= lane.engine_ceiling:
            return size
        return -1

    def _note_held(self, data: bytes, size: int, route: Any) -> None:
        """After an op on the kept context: the bytes count, the input tail, and the op
        (size 0: none) recorded: ``~size`` tallied for software's, the engine's answer
        (``Lane.answered``) for the engine route's session, the lane folding a long record
        (``note_held`` in the compiled twin)."""
        n = len(data)
        self._sw_total += n
        self._sw_in = data if n >= TAIL else (bytes(self._sw_in) + data)[-TAIL:]
        if size:
            lane = self._lane
            if route is not None:
                lane.answered(route, size)
                return
            lane.tally(~size)
            if len(lane.tally_q) > FOLD_AT:  # a long stream: keep the record short
                lane.fold_due()

    def update(self, data: bytes) -> bytes:
        """The output for ``data`` (ECB and CBC hold a partial block back)."""
        sw = self._sw
        if sw is not None and data.__class__ is bytes and data:
            size = self._held_size(len(data))
            if size >= 0:
                route = getattr(self, "_sw_route", None)  # unset: software's
                try:
                    out = sw.update(data)
                except Exception as exc:
                    if route is None:
                        raise
                    return self._session_failed(route, exc, data, None)  # type: ignore[attr-defined]
                if out and self._cbc_encrypt:
                    self._sw_out = out if len(out) >= 16 else (self._sw_out + out)[-16:]
                self._note_held(data, size, route)
                return out
        return self._update_slow(data)  # type: ignore[attr-defined]

    def update_into(self, data: bytes, buf: Any) -> int:
        """Write the output for ``data`` into ``buf``; return its length."""
        sw = self._sw
        if sw is not None and data.__class__ is bytes and buf.__class__ is bytearray:
            size = self._held_size(len(data))
            if size >= 0 and len(buf) >= len(data) + self._block - 1:
                route = getattr(self, "_sw_route", None)  # unset: software's
                try:
                    k = sw.update_into(data, buf)
                except Exception as exc:
                    if route is None:
                        raise
                    return self._session_failed(route, exc, data, buf)  # type: ignore[attr-defined]
                if k and self._cbc_encrypt:
                    self._sw_out = buf[max(0, k - 16) : k]  # a copy: the caller owns buf
                self._note_held(data, size, route)
                return k
        return self._update_into_slow(data, buf)  # type: ignore[attr-defined]

    def finalize(self) -> bytes:
        """``b""`` when the kept context ``_sw`` is set and ECB or CBC (``_whole_blocks``) has
        no partial block left: ``_sw`` and ``_sw_route`` go to None and ``_done`` to True.
        Anything else: ``_finalize_slow()``."""
        if (
            not getattr(self, "_done", False)
            and getattr(self, "_sw", None) is not None
            and (not self._whole_blocks or not self._sw_total % self._block)
        ):
            self._sw = None
            self._sw_route = None
            self._done = True
            return b""
        return self._finalize_slow()  # type: ignore[attr-defined]


class PureDirectStreamCore:
    """A ``Cipher`` context on a lane no engine claims (``_DirectContext``): each update runs on
    the OpenSSL context ``_ctx`` and, when it gives output, ``lane.count(len(data))`` counts it
    (the compiled twin appends to the lane's record itself and folds past :data:`FOLD_AT`).

    ``update(data)`` takes this path when ``data`` is ``bytes``; ``update_into(data, buf)``
    when ``buf`` is also a ``bytearray``. Anything else (a DmaBuffer, a memoryview) goes to
    ``_update_slow(data)`` / ``_update_into_slow(data, buf)``. An error from OpenSSL goes on with
    nothing counted. ``finalize()`` is the context's own (nothing counted).
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

    def finalize(self) -> bytes:
        """OpenSSL's context's last output (a partial block left: its ValueError)."""
        return self._ctx.finalize()


class PureDigestCore:
    """A hash or MAC context (``Hash``, ``HMAC``, ``CMAC``) whose algorithm no engine claims: a
    software object (``_ctx``: Python's hashlib or hmac object, or `cryptography`'s) does the
    work, and the message is recorded as one op of its lane when it ends.

    The subclass describes its direct path in ``_direct_path``: ``(lanes, want, pass, final,
    mismatch, message)``. ``want`` (1 or 2) is how many arguments the constructor takes before
    an optional ``backend`` (``provider=`` and ``backend=`` may be keywords); the last of them
    is the algorithm and, with 2, the first is a key. ``lanes`` maps an algorithm's class to an
    entry ``(lane, maker, *fixed)``, or to a dict of entries by ``len(algorithm.key)``; the
    subclass fills it as its slow path makes contexts. The lane must be a :class:`LaneCore` on
    which every size is software's (``direct_below == direct_above == -1``). ``pass`` (0 or 1)
    is how many of the constructor's arguments the maker takes first. An entry of two items
    makes the software object at construction, ``maker(*args[:pass])`` (an exception from it
    goes to the slow path, which says what was wrong in our words). An entry with ``fixed``
    defers it to the first update, ``maker(*args[:pass], data, *fixed[1:])``: ``fixed[0]``
    holds the data's place (``b""``) when something else makes it first (``finalize``,
    ``copy``, reading ``_ctx``; a copy made before then is deferred too). The software
    object's method named ``final`` gives the digest; ``mismatch`` is the exception (raised
    with ``message``) of a failed ``verify``, None where there is no ``verify``.

    Construction takes this path when the key (if any) is ``bytes`` and ``lanes`` has an entry
    for the algorithm whose lane's provider is the one in force (``provider=``, else the
    innermost ``using`` block's, else the default); else ``_init_slow(*args, **kwargs)``. On
    such a context, until its message ends (``_done``): ``update(data)`` with ``bytes`` adds
    ``len(data)`` to ``_total``; ``finalize()`` returns the digest, sets ``_done`` and records
    ``_total`` with ``lane.tally`` (folding past :data:`FOLD_AT`); ``verify(signature)`` with
    ``bytes`` does the same and compares in constant time (a failed ``verify`` is recorded
    too: the op was done); ``copy()`` gives a new context of the same class with a copy of the
    object. Anything else goes to ``_update_slow``, ``_finalize_slow``, ``_verify_slow`` or
    ``_copy_slow`` (which raise AlreadyFinalized once ``_done``). Errors from the software
    object go on with nothing recorded.
    """

    __slots__ = ("_algorithm", "_deferred", "_done", "_lane", "_made", "_spec", "_total")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._spec = None
        self._made = None
        self._deferred = None
        if not self._init_direct(_digest_spec(type(self)), args, kwargs):
            self._init_slow(*args, **kwargs)  # type: ignore[attr-defined]

    def _init_direct(self, spec: tuple | None, args: tuple, kwargs: dict) -> bool:
        if spec is None:
            return False
        lanes, want, pass_ = spec[0], spec[1], spec[2]
        if len(args) not in (want, want + 1):
            return False
        allowed = {"provider", "backend"} if len(args) == want else {"provider"}
        if not kwargs.keys() <= allowed:
            return False
        algorithm = args[want - 1]
        if want == 2 and args[0].__class__ is not bytes:
            return False
        entry = _digest_entry(lanes, algorithm)
        if entry is None:
            return False
        provider = kwargs.get("provider") or _using() or DEFAULT_BOX[0]
        if provider is None or provider is not entry[0].provider:
            return False
        if len(entry) == 2:
            try:
                ctx = entry[1](*args[:pass_])
            except Exception:  # the slow path says why, in our words
                return False
            self._made, self._deferred = ctx, None
        else:
            self._made, self._deferred = None, (entry, args[:pass_])
        self._spec = spec
        self._lane, self._algorithm = entry[0], algorithm
        self._total = 0
        self._done = False
        return True

    def _make(self, data: bytes | None = None) -> Any:
        """The deferred software object, made fed ``data`` (None: its placeholder)."""
        (_, maker, placeholder, *rest), first = self._deferred
        self._made = maker(*first, placeholder if data is None else data, *rest)
        self._deferred = None
        return self._made

    @property
    def _ctx(self) -> Any:
        """The software object (made when first asked for), or None off the direct path."""
        if self._made is None and self._deferred is not None:
            self._make()
        return self._made

    @_ctx.setter
    def _ctx(self, value: Any) -> None:
        self._spec = _digest_spec(type(self)) if value is not None else None
        self._made, self._deferred = value, None

    def _direct_spec(self) -> tuple | None:
        """The spec when the context is on the direct path, else None."""
        if (
            self._spec is None
            or getattr(self, "_done", True)
            or (self._made is None and self._deferred is None)
            or not isinstance(getattr(self, "_lane", None), PureLaneCore)
        ):
            return None
        return self._spec

    def update(self, data: bytes) -> None:
        """Add ``data`` to the message."""
        if data.__class__ is bytes and self._direct_spec() is not None:
            if self._deferred is not None:
                self._make(data)
            else:
                self._made.update(data)
            self._total += len(data)
            return
        self._update_slow(data)  # type: ignore[attr-defined]

    def _end(self, spec: tuple) -> Any:
        out = getattr(self._ctx, spec[3])()
        self._done = True
        if self._made.__class__ is Gathered:  # counted where it went
            return out
        lane = self._lane
        lane.tally(self._total)
        if len(lane.tally_q) > FOLD_AT:
            lane.fold_due()
        return out

    def finalize(self) -> Any:
        """The digest or tag; the context cannot be used afterwards."""
        spec = self._direct_spec()
        if spec is not None:
            return self._end(spec)
        return self._finalize_slow()  # type: ignore[attr-defined]

    def verify(self, signature: bytes) -> None:
        """An error (``mismatch``) unless ``signature`` is the message's tag (constant time)."""
        spec = self._direct_spec()
        if signature.__class__ is bytes and spec is not None and isinstance(spec[4], type):
            tag = self._end(spec)
            if not compare_digest(tag, signature):
                raise spec[4](spec[5])
            return None
        return self._verify_slow(signature)  # type: ignore[attr-defined]

    def copy(self) -> Any:
        """An independent context with the same data fed so far."""
        if self._direct_spec() is None:
            return self._copy_slow()  # type: ignore[attr-defined]
        twin = type(self).__new__(type(self))
        twin._spec = self._spec
        twin._made = self._made.copy() if self._deferred is None else None
        twin._deferred = self._deferred
        twin._lane, twin._algorithm = self._lane, self._algorithm
        twin._total = self._total
        twin._done = False
        return twin


def _digest_spec(cls: type) -> tuple | None:
    """``cls._direct_path`` when it has the shape the direct path reads, else None."""
    spec = getattr(cls, "_direct_path", None)
    if (
        spec.__class__ is not tuple
        or len(spec) != 6
        or spec[0].__class__ is not dict
        or spec[1] not in (1, 2)
        or spec[2] not in (0, 1)
        or spec[2] > spec[1]
        or spec[3].__class__ is not str
    ):
        return None
    return spec


def _digest_entry(lanes: dict[Any, Any], algorithm: Any) -> tuple | None:
    """The entry ``lanes`` holds for ``algorithm`` whose lane is software's, or None."""
    entry = lanes.get(algorithm.__class__)
    if entry.__class__ is dict:
        key = getattr(algorithm, "key", None)
        entry = entry.get(len(key)) if key.__class__ is bytes else None
    if entry.__class__ is not tuple or not 2 <= len(entry) <= 5:
        return None
    lane = entry[0]
    if not isinstance(lane, PureLaneCore):
        return None
    if entry[1] is Gathered:  # the engine route's entry (lane, Gathered, b"", how)
        return entry if len(entry) == 4 else None
    if lane.direct_below != -1 or lane.direct_above != -1:
        return None
    return entry


#: Bytes a gathered message holds before it goes on in its spill's context (the compiled twin
#: has its own copy, ``_directpath.GATHER_LIMIT``; ``_stream.GATHER_LIMIT`` is the same).
GATHER_LIMIT = 4 * 1024 * 1024

_HASH = object()  # a PureGathered's key for a hash: none


class PureGathered:
    """A hash or MAC message gathered for the engine route: the software object of a
    :class:`PureDigestCore` (its entry ``(lane, Gathered, b"", how)``) whose lane's engine
    route keeps a session for the algorithm.

    ``Gathered(data, how)`` for a hash, ``Gathered(key, data, how)`` for a MAC; ``how`` is
    ``(lane, route, call, fallback, spill)``: ``call`` is the session's ``digest(data)`` or
    ``mac(key, data)``; ``fallback(key, data, route, exc)`` finishes a message the route does
    not (``key`` None for a hash; ``route`` None when the route's window does not take its size
    or the lane's engine route is no longer ``route``, else the exception the session raised);
    ``spill(key)`` gives the context (``update``, ``_finish``, ``_fork``) the message goes on
    in once it passes :data:`GATHER_LIMIT` bytes. ``update`` gathers (the first piece kept as
    given), ``copy`` forks, ``digest`` / ``finalize`` end the message: ``call``'s answer,
    counted as the route's op (``Lane.answered``),
    or ``fallback``'s.
    """

    __slots__ = ("_data", "_ended", "_how", "_key", "_spilled", "total")

    def __init__(self, *args: Any) -> None:
        if len(args) not in (2, 3) or args[-2].__class__ is not bytes:
            raise TypeError("Gathered([key,] data, how)")
        self._key = args[0] if len(args) == 3 else _HASH
        self._how = args[-1]
        self._ended = False
        self._spilled = None
        self._data: Any = None
        self.total = 0
        self.update(args[-2])

    def _spill(self) -> Any:
        return self._how[4](None if self._key is _HASH else self._key)

    def update(self, data: bytes) -> None:
        """Gather ``data``."""
        if self._ended:
            raise RuntimeError("the message has ended")
        if self._spilled is not None:
            self._spilled.update(data)
            return
        if data.__class__ is not bytes:  # a buffer (the context checked it is one): its bytes
            view = memoryview(data)
            if not view.c_contiguous:  # as OpenSSL's contexts refuse it
                raise BufferError("data must be a contiguous buffer")
            data = view.tobytes()
        if not data:
            return
        if self.total + len(data) > GATHER_LIMIT:
            inner = self._spill()
            if self._data is not None:
                inner.update(bytes(self._data))
            inner.update(data)
            self._data = None
            self._spilled = inner
            return
        if self._data is None:
            self._data = data
        else:
            if self._data.__class__ is bytes:
                self._data = bytearray(self._data)
            self._data += data
        self.total += len(data)

    def copy(self) -> PureGathered:
        """An independent message with the same data so far."""
        if self._ended:
            raise RuntimeError("the message has ended")
        twin = PureGathered.__new__(PureGathered)
        twin._key, twin._how, twin._ended, twin.total = self._key, self._how, False, self.total
        twin._spilled = self._spilled._fork() if self._spilled is not None else None
        data = self._data
        twin._data = bytearray(data) if data.__class__ is bytearray else data
        return twin

    def digest(self) -> bytes:
        """The digest or tag: the message's end."""
        if self._ended:
            raise RuntimeError("the message has ended")
        self._ended = True
        if self._spilled is not None:
            return self._spilled._finish()
        data = bytes(self._data) if self._data is not None else b""
        self._data = None
        lane, route, call, fallback, _ = self._how
        key = None if self._key is _HASH else self._key
        n = len(data)
        if route is not lane.engine_route or not lane.engine_floor <= n <= lane.engine_ceiling:
            return fallback(key, data, None, None)
        try:
            out = call(data) if self._key is _HASH else call(key, data)
        except Exception as exc:
            return fallback(key, data, route, exc)
        lane.answered(route, n)
        return out

    finalize = digest


class PureAeadStreamCore:
    """A ``Cipher`` GCM context on a lane no engine claims: OpenSSL's context (``_ctx``) does the
    work; the data bytes fed to ``update`` (``_total``) count as one op of the lane when the
    stream ends (its ``finalize`` or ``finalize_with_tag`` ran, whatever came of it: a failed
    tag is an op done), once (``_counted``): ``lane.tally(_total)``, folding past
    :data:`FOLD_AT`.

    ``update(data)`` with ``bytes``, ``update_into(data, buf)`` with ``bytes`` and a
    ``bytearray``, ``authenticate_additional_data(data)`` with ``bytes``, ``finalize()`` and
    ``_finalize_with_tag(tag)`` (a decryption's, when ``tag`` is ``bytes`` of 4, 8 or 12 to 16)
    call the context's method of the same name; ``tag`` is the context's (an encryption's:
    ``_encrypt``; a decryption has none). Anything else, and any context whose ``_ctx`` is
    None or whose ``_lane`` is not a :class:`LaneCore`, goes to ``_update_slow``,
    ``_update_into_slow``, ``_aad_slow``, ``_finalize_slow`` or ``_finalize_with_tag_slow``.
    """

    __slots__ = ("_counted", "_ctx", "_encrypt", "_lane", "_total")

    def _direct_ready(self) -> bool:
        return getattr(self, "_ctx", None) is not None and isinstance(
            getattr(self, "_lane", None), PureLaneCore
        )

    @property
    def tag(self) -> bytes:
        """The tag, once an encryption is finalized (NotYetFinalized before)."""
        if not self._encrypt:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute 'tag'")
        return self._ctx.tag

    def _count(self) -> None:
        if not self._counted:
            self._counted = True
            lane = self._lane
            lane.tally(self._total)
            if len(lane.tally_q) > FOLD_AT:
                lane.fold_due()

    def update(self, data: bytes) -> bytes:
        """The output for ``data``."""
        if data.__class__ is bytes and self._direct_ready():
            out = self._ctx.update(data)
            self._total += len(data)
            return out
        return self._update_slow(data)  # type: ignore[attr-defined]

    def update_into(self, data: bytes, buf: Any) -> int:
        """Write the output for ``data`` into ``buf``; return its length."""
        if data.__class__ is bytes and buf.__class__ is bytearray and self._direct_ready():
            n = self._ctx.update_into(data, buf)
            self._total += len(data)
            return n
        return self._update_into_slow(data, buf)  # type: ignore[attr-defined]

    def authenticate_additional_data(self, data: bytes) -> None:
        """Associated data, before any update."""
        if data.__class__ is bytes and self._direct_ready():
            return self._ctx.authenticate_additional_data(data)
        return self._aad_slow(data)  # type: ignore[attr-defined]

    def finalize(self) -> bytes:
        """The rest of the output; the stream counts as one op."""
        if not self._direct_ready():
            return self._finalize_slow()  # type: ignore[attr-defined]
        try:
            return self._ctx.finalize()
        finally:
            self._count()

    def _finalize_with_tag(self, tag: bytes) -> bytes:
        """A decryption's ``finalize_with_tag`` (the subclass names it)."""
        if (
            not self._encrypt
            and tag.__class__ is bytes
            and len(tag) in (4, 8, 12, 13, 14, 15, 16)
            and self._direct_ready()
        ):
            try:
                return self._ctx.finalize_with_tag(tag)
            finally:
                self._count()
        return self._finalize_with_tag_slow(tag)  # type: ignore[attr-defined]


#: Bytes a ``Cipher`` GCM context on an engine keeps to redo in software (``_stream.
#: RETAIN_LIMIT``; this module is below it, and the compiled twin has its own copy).
RETAIN_LIMIT = 256 * 1024 * 1024

#: The tag lengths a GCM decryption's ``finalize_with_tag`` takes (SP 800-38D's).
_GCM_TAG_LENGTHS = frozenset({4, 8, 12, 13, 14, 15, 16})


class PureEngineGcmCore:
    """A ``Cipher`` GCM context an engine's AEAD stream holds (``_stream``, see
    ``open_aead_stream`` in engines/base.py), with what it sent kept (``_kept``: ``(is AAD,
    bytes)`` in order, ``_kept_size`` bytes) for software to redo if the engine fails.

    The subclass sets every field: ``_cipher`` (the ``Cipher``), ``_fallback`` (why software
    took over: a dict), ``_lane``, ``_name`` (the engine's), ``_route`` (the lane's
    ``engine_route`` when that is the engine's route, else None), ``_high`` (the policy's
    max_size for the engine, or None), ``_data_left`` / ``_aad_left`` (the mode's byte limits),
    ``_encrypt``, ``_mode_tag`` (a decryption's tag in the mode, or None), ``_min_tag`` (the
    mode's least tag length), ``_sw`` (None while the engine holds the stream), and False, 0
    or None for the rest.

    While ``_sw`` is None and the stream is not ``_done``:

    - ``authenticate_additional_data(data)`` with ``bytes``, before any update, within
      ``_aad_left`` and :data:`RETAIN_LIMIT`, keeps the data and sends it (``update_aad``);
    - ``update(data)`` with ``bytes`` within ``_data_left``, :data:`RETAIN_LIMIT` and ``_high``
      (``_total`` with the data) keeps the data, counts it in ``_total`` and sends it; an output
      that is not ``bytes`` of the data's length goes to ``_engine_output(out, data)``;
    - an encryption's ``finalize()`` asks the stream for the tag: ``bytes`` of 16 is ``_tag``;
      anything else goes to ``_engine_finalized(out, exc)``;
    - a decryption's ``finalize()`` with the mode's tag, and ``_finalize_with_tag(tag)`` (the
      subclass names it) with ``bytes`` of an SP 800-38D length of at least ``_min_tag`` and
      no tag in the mode, ask the stream to check it; an exception goes to
      ``_check_failed(tag, exc)``;
    - an ``Exception`` from sending goes to ``_resend(is_aad, data, exc)`` (the data kept last).

    A stream the engine finished is ended by ``_finish_on_engine``: ``_done``, nothing kept,
    one op of ``_total`` bytes counted for the engine (``Lane.answered`` on ``_route`` while it
    is the lane's engine route, else ``Lane.stream_done``). ``tag`` is an encryption's
    ``_tag``, or ``_tag_missing()`` before it is set; a decryption has none. Any other call goes
    to ``_aad_slow``, ``_update_slow``, ``_finalize_slow`` or ``_finalize_with_tag_slow``.
    """

    __slots__ = (
        "_aad_left",
        "_cipher",
        "_data_left",
        "_done",
        "_encrypt",
        "_failed",
        "_fallback",
        "_high",
        "_kept",
        "_kept_size",
        "_lane",
        "_min_tag",
        "_mode_tag",
        "_name",
        "_route",
        "_stream",
        "_sw",
        "_tag",
        "_total",
        "_updated",
    )

    @property
    def tag(self) -> bytes:
        """The tag, once an encryption is finalized (``_tag_missing()`` before)."""
        if not self._encrypt:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute 'tag'")
        tag = self._tag
        return tag if tag is not None else self._tag_missing()  # type: ignore[attr-defined]

    def _keeps(self, n: int, total: int) -> bool:
        """Whether ``n`` more bytes can be kept, ``total`` data bytes sent with them."""
        high = self._high
        return self._kept_size + n <= RETAIN_LIMIT and (high is None or total <= high)

    def authenticate_additional_data(self, data: bytes) -> None:
        """Associated data, before any update."""
        if (
            data.__class__ is bytes
            and self._sw is None
            and not self._done
            and not self._updated
            and (n := len(data)) <= self._aad_left
            and self._keeps(n, self._total)
        ):
            self._aad_left -= n
            self._kept.append((True, data))
            self._kept_size += n
            try:
                self._stream.update_aad(data)
            except Exception as exc:
                self._resend(True, data, exc)  # type: ignore[attr-defined]
            return None
        return self._aad_slow(data)  # type: ignore[attr-defined]

    def update(self, data: bytes) -> bytes:
        """The output for ``data``."""
        if (
            data.__class__ is bytes
            and self._sw is None
            and not self._done
            and (n := len(data)) <= self._data_left
            and self._keeps(n, total := self._total + n)
        ):
            self._updated = True
            self._data_left -= n
            self._total = total
            self._kept.append((False, data))
            self._kept_size += n
            try:
                out = self._stream.update(data)
            except Exception as exc:
                return self._resend(False, data, exc)  # type: ignore[attr-defined]
            if out.__class__ is bytes and len(out) == n:
                return out
            return self._engine_output(out, data)  # type: ignore[attr-defined]
        return self._update_slow(data)  # type: ignore[attr-defined]

    def finalize(self) -> bytes:
        """The rest of the output (none: the engine answered each update)."""
        if self._sw is None and not self._done:
            if self._encrypt:
                try:
                    out = self._stream.finalize()
                except Exception as exc:
                    return self._engine_finalized(None, exc)  # type: ignore[attr-defined]
                if out.__class__ is bytes and len(out) == 16:
                    self._tag = out
                    self._finish_on_engine()
                    return b""
                return self._engine_finalized(out, None)  # type: ignore[attr-defined]
            tag = self._mode_tag
            if tag is not None:
                return self._engine_check(tag)
        return self._finalize_slow()  # type: ignore[attr-defined]

    def _finalize_with_tag(self, tag: bytes) -> bytes:
        """A decryption's ``finalize_with_tag`` (the subclass names it)."""
        if (
            not self._encrypt
            and tag.__class__ is bytes
            and len(tag) in _GCM_TAG_LENGTHS
            and len(tag) >= self._min_tag
            and self._mode_tag is None
            and self._sw is None
            and not self._done
        ):
            return self._engine_check(tag)
        return self._finalize_with_tag_slow(tag)  # type: ignore[attr-defined]

    def _engine_check(self, tag: bytes) -> bytes:
        """The engine checks ``tag``: b"" when it passes."""
        try:
            self._stream.finalize(tag)
        except Exception as exc:
            return self._check_failed(tag, exc)  # type: ignore[attr-defined]
        self._finish_on_engine()
        return b""

    def _finish_on_engine(self) -> None:
        """The engine finished the stream: one op of ``_total`` bytes, counted for it."""
        self._done = True
        self._kept = []
        lane, route = self._lane, self._route
        if route is not None and getattr(lane, "engine_route", None) is route:
            lane.answered(route, self._total)
        else:
            lane.stream_done(self._name, self._total)


#: PureCipherCore's kinds of direct path (CipherCore's K_*): none, a stream mode's, GCM's with
#: no tag in the mode, GCM's with one (a decryption only).
_K_NONE, _K_STREAM, _K_GCM, _K_GCM_TAG = 0, 1, 2, 3


class PureCipherCore:
    """``Cipher(algorithm, mode)`` and its contexts on a lane no engine claims.

    The subclass describes its direct path in ``_direct_path``: ``(modes, lanes, make_encryptor,
    make_decryptor, stream_class, gcm_encryptor_class, gcm_decryptor_class, routed_lanes,
    chained_class, cipher_op, engine_gcm_encryptor, engine_gcm_decryptor, aead_op,
    gcm_open_failed)``. ``modes`` maps a mode's class to (our name of the mode, a dict
    from an algorithm's class to a dict from its key's length to our name of the pair),
    ``lanes`` our names to lanes, ``routed_lanes`` our names of ECB, CBC and CTR ciphers to
    lanes with an engine route; the subclass fills the three as its slow path makes ciphers and
    contexts.

    Construction takes this path for ``(algorithm, mode[, backend])`` with no keywords when
    ``modes`` names the pair for the key (``bytes``) and the mode's own check
    (``mode.validate_for_algorithm(algorithm)``) passes; for GCM the mode's tag is read once:
    None, or ``bytes`` of 4, 8 or 12 to 16 (then only a decryption takes the direct path). It
    sets ``algorithm``, ``mode``, ``_alg``, ``_mode_name``, ``_provider`` (None) and ``_kind``.
    Anything else (an exception from the check included: the slow path says what was wrong in
    our words) goes to ``_init_slow(*args, **kwargs)``, with ``_kind`` 0.

    ``encryptor()`` / ``decryptor()`` take it when ``_kind`` allows, ``lanes`` has a
    :class:`LaneCore` for ``_alg`` on which every size is software's
    (``direct_below == direct_above == -1``) whose provider is the one in force (the innermost
    ``using`` block's, else the default), and the maker gives OpenSSL's context for
    ``(algorithm, mode)``: first the lane folds a record past :data:`FOLD_AT`, then the context
    is a new ``stream_class`` (a :class:`DirectStreamCore`) or GCM's class (an
    :class:`AeadStreamCore`), with ``_ctx`` and ``_lane`` set (no ``__init__``).

    Else, for ECB, CBC or CTR with a ``bytes`` key, when ``routed_lanes`` has a lane for
    ``_alg`` whose provider is the one in force and which has an ``engine_route``: the lane
    folds a long record, and the context is ``chained_class(self, lane, encrypt)`` (a
    :class:`ChainedCore` whose ``__slots__`` hold the state its ``__init__`` sets, which asks the
    route's engine for its session with ``cipher_op``). The compiled twin sets that state and
    asks for the session itself, without ``__init__``'s frames; when the engine raises making the
    session it calls the context's ``_no_session(route, exc)`` (logged, the route noted in
    ``_unkept``: what ``__init__`` ends with then).

    Else, for GCM with a ``bytes`` key and IV, when ``routed_lanes`` has a lane for ``_alg``
    whose provider is the one in force, whose ``engine_route`` engine has ``open_aead_stream``
    and whose route's ``floor`` is 0 or less (the policy gives it streams): the lane folds a long
    record, the engine is asked for the stream with ``aead_op(alg, kind, key, iv, b"", b"",
    16)``, and the context is ``engine_gcm_encryptor`` / ``engine_gcm_decryptor(self, lane,
    route.name, stream, route.high)`` (an :class:`EngineGcmCore`; the compiled twin sets its
    fields without ``__init__``). An ``Exception`` from the engine goes to ``gcm_open_failed(self,
    lane, encrypt, op, exc)``, whose context is the answer.

    Anything else: ``_context(encrypt)``.
    """

    __slots__ = ("_alg", "_kind", "_mode_name", "_provider", "algorithm", "mode")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if not self._make(args, kwargs):
            self._kind = _K_NONE
            self._init_slow(*args, **kwargs)  # type: ignore[attr-defined]

    def _make(self, args: tuple, kwargs: dict) -> bool:
        spec = _cipher_spec(type(self))
        if spec is None or kwargs or len(args) not in (2, 3):
            return False
        algorithm, mode = args[0], args[1]
        entry = spec[0].get(mode.__class__)
        if entry.__class__ is not tuple or len(entry) != 2:
            return False
        mode_name, by_alg = entry
        names = by_alg.get(algorithm.__class__) if by_alg.__class__ is dict else None
        key = getattr(algorithm, "key", None)
        if names.__class__ is not dict or key.__class__ is not bytes:
            return False
        alg = names.get(len(key))
        if alg.__class__ is not str:
            return False
        try:
            mode.validate_for_algorithm(algorithm)
        except Exception:  # the slow path says what is wrong, in our words
            return False
        kind = _K_STREAM
        if mode_name == "gcm":
            tag = getattr(mode, "tag", _NO_TAG)
            if tag is None:
                kind = _K_GCM
            elif tag.__class__ is bytes and len(tag) in (4, 8, 12, 13, 14, 15, 16):
                kind = _K_GCM_TAG
            else:
                return False
        self.algorithm, self.mode = algorithm, mode
        self._alg, self._mode_name, self._provider = alg, mode_name, None
        self._kind = kind
        return True

    def _direct_context(self, encrypt: bool) -> Any:
        kind = self._kind
        if kind == _K_NONE or (kind == _K_GCM_TAG and encrypt):
            return None
        spec = _cipher_spec(type(self))
        if spec is None:
            return None
        lane = spec[1].get(self._alg)
        if (
            not isinstance(lane, PureLaneCore)
            or lane.direct_below != -1
            or lane.direct_above != -1
            or (self._provider or _using() or DEFAULT_BOX[0]) is not lane.provider
        ):
            if kind == _K_STREAM:
                return self._routed_context(spec, encrypt)
            return self._routed_gcm_context(spec, encrypt)
        if len(lane.tally_q) > FOLD_AT:
            lane.fold_due()
        try:
            ctx = spec[2 if encrypt else 3](self.algorithm, self.mode)
        except Exception:  # the slow path says why
            return None
        cls = spec[4] if kind == _K_STREAM else spec[5 if encrypt else 6]
        context = cls.__new__(cls)
        context._ctx, context._lane = ctx, lane
        if kind != _K_STREAM:
            context._total, context._counted, context._encrypt = 0, False, encrypt
        return context

    def _routed_lane(self, spec: tuple) -> Any:
        """The lane ``routed_lanes`` holds for ``_alg``, when it has an engine route and its
        provider is the one in force; else None."""
        lane = spec[7].get(self._alg)
        if (
            not isinstance(lane, PureLaneCore)
            or lane.engine_route is None
            or (self._provider or _using() or DEFAULT_BOX[0]) is not lane.provider
        ):
            return None
        return lane

    def _routed_context(self, spec: tuple, encrypt: bool) -> Any:
        lane = self._routed_lane(spec)
        if (
            lane is None
            or self._mode_name not in ("ecb", "cbc", "ctr")
            or getattr(self.algorithm, "key", None).__class__ is not bytes
        ):
            return None
        if len(lane.tally_q) > FOLD_AT:
            lane.fold_due()
        try:
            return spec[8](self, lane, encrypt)
        except Exception:  # the slow path makes it, and says why
            return None

    def _routed_gcm_context(self, spec: tuple, encrypt: bool) -> Any:
        lane = self._routed_lane(spec)
        if lane is None:
            return None
        route = lane.engine_route
        try:
            opener = route.engine.open_aead_stream
            floor = route.floor
            key = self.algorithm.key
            iv = self.mode.initialization_vector
        except Exception:  # the slow path says why
            return None
        if (
            floor.__class__ is not int
            or floor > 0
            or key.__class__ is not bytes
            or iv.__class__ is not bytes
        ):
            return None
        if len(lane.tally_q) > FOLD_AT:
            lane.fold_due()
        op = spec[12](self._alg, "encrypt" if encrypt else "decrypt", key, iv, b"", b"", 16)
        try:
            stream = opener(op)
        except Exception as exc:
            return spec[13](self, lane, encrypt, op, exc)
        cls = spec[10 if encrypt else 11]
        return cls(self, lane, route.name, stream, route.high)

    def encryptor(self) -> Any:
        """A context that encrypts what is passed to ``update``."""
        context = self._direct_context(True)
        return context if context is not None else self._context(True)  # type: ignore

    def decryptor(self) -> Any:
        """A context that decrypts what is passed to ``update``."""
        context = self._direct_context(False)
        return context if context is not None else self._context(False)  # type: ignore


_NO_TAG = object()


def _cipher_spec(cls: type) -> tuple | None:
    """``cls._direct_path`` when it has the shape the direct path reads, else None."""
    spec = getattr(cls, "_direct_path", None)
    if (
        spec.__class__ is not tuple
        or len(spec) != 14
        or spec[0].__class__ is not dict
        or spec[1].__class__ is not dict
        or not (isinstance(spec[4], type) and issubclass(spec[4], PureDirectStreamCore))
        or not (isinstance(spec[5], type) and issubclass(spec[5], PureAeadStreamCore))
        or not (isinstance(spec[6], type) and issubclass(spec[6], PureAeadStreamCore))
        or spec[7].__class__ is not dict
        or not (isinstance(spec[8], type) and issubclass(spec[8], PureChainedCore))
        or not callable(spec[9])
        or not (isinstance(spec[10], type) and issubclass(spec[10], PureEngineGcmCore))
        or not (isinstance(spec[11], type) and issubclass(spec[11], PureEngineGcmCore))
        or not callable(spec[12])
        or not callable(spec[13])
    ):
        return None
    return spec


class PureCcmCheck:
    """``CcmCheck(owner, ccm, tag_length)``: `cryptography`'s AESCCM (``ccm``) behind the
    checks OpenSSL does not make (it fails a payload too long for the nonce's length field with
    an internal error, not a ValueError). ``encrypt``, ``decrypt``, ``encrypt_into`` and
    ``decrypt_into`` take ``(nonce, data, associated_data[, buf])``; unless the nonce, data and
    associated data (or None) are ``bytes``, the nonce is 7 to 13 bytes long, its length field
    counts the payload (data less ``tag_length`` when decrypting) and the lengths are within
    2**31 - 1, ``owner._explain(nonce, data, aad, tag)`` runs first (our named checks, which
    raise for what is wrong); then ``ccm``'s method of the same name."""

    __slots__ = ("_ccm", "_owner", "_tag_length")

    def __init__(self, owner: Any, ccm: Any, tag_length: int) -> None:
        self._owner, self._ccm, self._tag_length = owner, ccm, tag_length

    def _check(self, nonce: Any, data: Any, aad: Any, tag: int) -> None:
        if (
            nonce.__class__ is bytes
            and data.__class__ is bytes
            and (aad is None or aad.__class__ is bytes)
            and 7 <= len(nonce) <= 13
            and len(data) - tag >= 0
            and len(data) <= 0x7FFFFFFF
            and (aad is None or len(aad) <= 0x7FFFFFFF)
            and (len(nonce) <= 7 or len(data) - tag < 1 << (8 * (15 - len(nonce))))
        ):
            return
        self._owner._explain(nonce, data, aad, tag)

    def encrypt(self, nonce: Any, data: Any, aad: Any) -> bytes:
        self._check(nonce, data, aad, 0)
        return self._ccm.encrypt(nonce, data, aad)

    def decrypt(self, nonce: Any, data: Any, aad: Any) -> bytes:
        self._check(nonce, data, aad, self._tag_length)
        return self._ccm.decrypt(nonce, data, aad)

    def encrypt_into(self, nonce: Any, data: Any, aad: Any, buf: Any) -> int:
        self._check(nonce, data, aad, 0)
        return self._ccm.encrypt_into(nonce, data, aad, buf)

    def decrypt_into(self, nonce: Any, data: Any, aad: Any, buf: Any) -> int:
        self._check(nonce, data, aad, self._tag_length)
        return self._ccm.decrypt_into(nonce, data, aad, buf)


def _hkdf_arguments(
    algorithm: Any, length: Any, salt: Any = None, info: Any = None, backend: Any = None
) -> tuple:
    return algorithm, length, salt, info


def _is_python_hmac(python_hmac: Any) -> bool:
    return (
        python_hmac.__class__ is tuple and len(python_hmac) == 2 and python_hmac[1].__class__ is str
    )


def python_hkdf(
    python_hmac: tuple,
    key_material: bytes,
    salt: bytes | None,
    info: bytes | None,
    length: int,
    digest_size: int,
) -> bytes:
    """HKDF (RFC 5869) on Python's HMAC, ``python_hmac = (hmac_new, name)``: the extract
    ``HMAC(salt, key_material)`` (no salt: the all-zero key, which HMAC's padding makes the same
    key as ``b""``), then the expand's blocks ``T(i) = HMAC(prk, T(i-1) | info | i)``."""
    hmac_new, name = python_hmac
    prk = hmac_new(b"" if salt is None else salt, key_material, name).digest()
    info = info or b""
    blocks, previous = [], b""
    for i in range(1, -(-length // digest_size) + 1):
        previous = hmac_new(prk, previous + info + bytes((i,)), name).digest()
        blocks.append(previous)
    return b"".join(blocks)[:length]


class PureKeyedCopies:
    """``copies(algorithm)``: what ``make(algorithm)`` gives (a `cryptography` context keyed by
    ``algorithm.key``: CMAC's), as a copy of one made before under the same key and algorithm
    class and never fed. Making a CMAC context sets up its key (the key schedule, the
    subkeys); a copy of a set-up one costs about half as much.

    Only ``bytes`` keys are kept (another key is made each time); at most ``limit`` keys, and a
    full store is emptied (as the software engine's stores are). An exception from ``make``
    goes to the caller, and nothing is kept then. The kept contexts hold their keys until
    ``clear()`` or until the store is emptied."""

    __slots__ = ("_kept", "_limit", "_make")

    def __init__(self, make: Any, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        self._make, self._limit = make, limit
        #: key -> (the algorithm's class, the kept context's ``copy``).
        self._kept: dict[bytes, tuple[type, Any]] = {}

    def __call__(self, algorithm: Any) -> Any:
        key = algorithm.key
        if key.__class__ is not bytes:
            return self._make(algorithm)
        entry = self._kept.get(key)
        if entry is not None and entry[0] is type(algorithm):
            return entry[1]()
        copy = self._make(algorithm).copy
        if len(self._kept) >= self._limit:
            self._kept.clear()
        self._kept[key] = (type(algorithm), copy)
        return copy()

    def clear(self) -> None:
        """Forget every context (and so every key) kept."""
        self._kept.clear()

    def __repr__(self) -> str:
        return f"<KeyedCopies of {getattr(self._make, '__qualname__', None)!r}>"


class PureHkdfCore:
    """HKDF whose HMAC no engine claims: `cryptography`'s HKDF does the work, and the HMAC ops
    the extract-then-expand makes are recorded as the Python path counts them.

    The subclass names in ``_direct_path`` ``(lanes, maker)``: ``lanes`` maps a hash's class to
    ``(lane, digest_size, python_hmac)``: its HMAC's lane, its digest size and None or
    ``(hmac_new, name)``, Python's HMAC (``_hashlib.hmac_new``) and the hash's name there. The
    slow path fills ``lanes`` as it makes HKDFs. ``maker`` is `cryptography`'s HKDF.
    Construction takes this path for ``(algorithm, length, salt=None, info=None,
    backend=None)`` (by position or keyword; no ``provider=``) when ``lanes`` knows
    the algorithm's class, the lane is a :class:`LaneCore` on which every size is software's
    whose provider is the one in force, ``length`` is an int from 0 to 255 digest sizes and
    ``salt`` and ``info`` are ``bytes`` or None; it sets ``_algorithm``, ``_length``, ``_salt``,
    ``_info``, ``_provider`` (None) and ``_used``. Else ``_init_slow(*args, **kwargs)``.

    ``derive(key_material)`` with ``bytes``, once, on such an object: with ``python_hmac`` and a
    ``length`` above 0, :func:`python_hkdf` (each HMAC one ``hmac_new(key, message,
    name).digest()``, which costs less than `cryptography`'s HKDF's own); otherwise
    ``maker(algorithm, length, salt, info).derive(key_material)``. Then
    ``lane.tally`` of each HMAC op (the extract, of the key material; per block i from 1,
    ``T(i-1) | info | i``), folding past :data:`FOLD_AT`. Anything else goes to
    ``_derive_slow(key_material)``.
    """

    __slots__ = (
        "_algorithm",
        "_digest_size",
        "_hmac",
        "_info",
        "_lane",
        "_length",
        "_maker",
        "_provider",
        "_salt",
        "_used",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._lane = None
        if not self._make(args, kwargs):
            self._lane = None
            self._init_slow(*args, **kwargs)  # type: ignore[attr-defined]

    def _make(self, args: tuple, kwargs: dict) -> bool:
        spec = getattr(type(self), "_direct_path", None)
        if spec.__class__ is not tuple or len(spec) != 2 or spec[0].__class__ is not dict:
            return False
        try:
            algorithm, length, salt, info = _hkdf_arguments(*args, **kwargs)
        except TypeError:
            return False
        if (
            length.__class__ is not int
            or (salt is not None and salt.__class__ is not bytes)
            or (info is not None and info.__class__ is not bytes)
        ):
            return False
        entry = spec[0].get(algorithm.__class__)
        if entry.__class__ is not tuple or len(entry) != 3:
            return False
        lane, digest_size, python_hmac = entry
        if (
            not isinstance(lane, PureLaneCore)
            or lane.direct_below != -1
            or lane.direct_above != -1
            or (_using() or DEFAULT_BOX[0]) is not lane.provider
            or digest_size.__class__ is not int
            or not 0 <= length <= 255 * digest_size
        ):
            return False
        self._algorithm, self._length, self._salt, self._info = algorithm, length, salt, info
        self._provider, self._used = None, False
        self._lane, self._digest_size, self._maker = lane, digest_size, spec[1]
        self._hmac = python_hmac if length and _is_python_hmac(python_hmac) else None
        return True

    def derive(self, key_material: bytes) -> bytes:
        """The derived key (``length`` bytes), once."""
        if key_material.__class__ is not bytes or self._lane is None or self._used:
            return self._derive_slow(key_material)  # type: ignore[attr-defined]
        self._used = True
        lane = self._lane
        if self._hmac is not None:
            out = python_hkdf(
                self._hmac, key_material, self._salt, self._info, self._length, self._digest_size
            )
        else:
            out = self._maker(self._algorithm, self._length, self._salt, self._info).derive(
                key_material
            )
        info = len(self._info) if self._info is not None else 0
        blocks = -(-self._length // self._digest_size)
        lane.tally(len(key_material))
        for i in range(blocks):
            lane.tally((self._digest_size if i else 0) + info + 1)
        if len(lane.tally_q) > FOLD_AT:
            lane.fold_due()
        return out


def pure_direct_construction(cls: type) -> bool:
    """Make ``cls(...)`` (a DigestCore or HkdfCore subclass) construct through the compiled
    twin's vectorcall (nothing to do here: the pure twin's ``__init__`` is the direct path's
    construction)."""
    return False


def pure_own_methods(cls: type) -> int:
    """Give ``cls`` the compiled methods it inherits from a core as its own descriptors, so
    that the interpreter specializes calls of them (nothing to do for the pure twin)."""
    return 0


def compiled_module() -> Any:
    """The compiled module, configured, or None (not built here, or not wanted)."""
    module = load_extension(
        "cryptoffload.core._directpath", API, "the pure-Python direct path runs"
    )
    if module is not None:
        module.configure(CURRENT, DEFAULT_BOX, InvalidTag)
    return module


_module = compiled_module()
#: Whether the compiled direct path is in use (``cryptoffload engines`` says which).
COMPILED = _module is not None
SizeLog: Any = _module.SizeLog if _module is not None else PureSizeLog
LaneCore: Any = _module.LaneCore if _module is not None else PureLaneCore
AeadCore: Any = _module.AeadCore if _module is not None else PureAeadCore
ChainedCore: Any = _module.ChainedCore if _module is not None else PureChainedCore
DirectStreamCore: Any = _module.DirectStreamCore if _module is not None else PureDirectStreamCore
DigestCore: Any = _module.DigestCore if _module is not None else PureDigestCore
AeadStreamCore: Any = _module.AeadStreamCore if _module is not None else PureAeadStreamCore
EngineGcmCore: Any = _module.EngineGcmCore if _module is not None else PureEngineGcmCore
CipherCore: Any = _module.CipherCore if _module is not None else PureCipherCore
CcmCheck: Any = _module.CcmCheck if _module is not None else PureCcmCheck
HkdfCore: Any = _module.HkdfCore if _module is not None else PureHkdfCore
KeyedCopies: Any = _module.KeyedCopies if _module is not None else PureKeyedCopies
Gathered: Any = _module.Gathered if _module is not None else PureGathered
note_using: Any = _module.note_using if _module is not None else pure_note_using
direct_construction: Any = (
    _module.direct_construction if _module is not None else pure_direct_construction
)
own_methods: Any = _module.own_methods if _module is not None else pure_own_methods
