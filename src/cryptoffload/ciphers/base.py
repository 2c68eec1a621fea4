"""``Cipher`` and its contexts: AES, Triple DES, Camellia, SM4, ChaCha20, the decrepit ciphers."""

from __future__ import annotations

from typing import Any

from cryptography.exceptions import AlreadyFinalized, UnsupportedAlgorithm, _Reasons
from cryptography.hazmat.primitives.ciphers import (
    AEADCipherContext,
    AEADDecryptionContext,
    AEADEncryptionContext,
    BlockCipherAlgorithm,
    CipherAlgorithm,
    CipherContext,
    algorithms,
)
from cryptography.hazmat.primitives.ciphers import Cipher as _Cipher

from cryptoffload import modes
from cryptoffload._buffers import disjoint_input
from cryptoffload.blocks import ivs
from cryptoffload.ciphers._gcm import (
    EngineGcmDecryptor,
    EngineGcmEncryptor,
    GcmDirectDecryptor,
    GcmDirectEncryptor,
    gcm_context,
    gcm_open_failed,
)
from cryptoffload.ciphers._software import MAKE_CONTEXT, SoftwareStream, software_context
from cryptoffload.core import validate
from cryptoffload.core._log import log
from cryptoffload.core.directpath import (
    TAIL,
    ChainedCore,
    CipherCore,
    DirectStreamCore,
    own_methods,
)
from cryptoffload.core.names import CIPHER_CLASSES, CIPHER_FAMILIES, aes_name
from cryptoffload.core.ops import AeadOp, CipherOp
from cryptoffload.core.provider import Lane, Provider, checked_provider, resolve
from cryptoffload.dmabuffer import as_plain, claimed, involved, lease_of

__all__ = [
    "AEADCipherContext",
    "AEADDecryptionContext",
    "AEADEncryptionContext",
    "Cipher",
    "CipherAlgorithm",
    "CipherContext",
]

_AES = (algorithms.AES, algorithms.AES128, algorithms.AES256)
_MODE_NAMES: dict[type, str] = {
    modes.ECB: "ecb",
    modes.CBC: "cbc",
    modes.CTR: "ctr",
    modes.CFB: "cfb",
    modes.CFB8: "cfb8",
    modes.OFB: "ofb",
    modes.GCM: "gcm",
    modes.XTS: "xts",
}
#: Our family name (names.CIPHER_FAMILIES) of each `cryptography` cipher class but AES's.
_FAMILIES: dict[type, str] = {cls: family for family, cls in CIPHER_CLASSES.items()}
#: Algorithm classes found to be CipherAlgorithms. An ABC's isinstance costs a few hundred ns,
#: and its answer for a class never changes from yes (registering only adds), so each class is
#: asked once.
_ALGORITHM_CLASSES: set[type] = set()
_IV_MODES = frozenset({"cbc", "ctr", "cfb", "cfb8", "ofb"})
#: Modes whose chained context runs ops the policy keeps from every engine on a kept OpenSSL
#: context (the chaining value is recovered from the stream's tail when an engine takes over).
_HOLDABLE = frozenset({"ecb", "cbc", "ctr"})
#: Input bytes a held-back stream keeps: a block before a partial block (CBC decryption's
#: chaining value) and the partial block itself (the compiled ChainedCore has its own copy).
_TAIL = TAIL
_NO_RESET = "This algorithm or mode does not support resetting the nonce."
#: The modes whose AES contexts CipherCore's direct path makes (not XTS: its encryption checks
#: the two keys differ; the others' checks are the mode's own).
_DIRECT_MODES = frozenset({"ecb", "cbc", "ctr", "cfb", "cfb8", "ofb", "gcm"})
#: CipherCore's tables (see PureCipherCore): mode class -> (mode name, algorithm class -> key
#: length -> our name), filled as ciphers are made; our name -> the software-only lane its
#: contexts were last made on.
_DIRECT_TABLE: dict[type, tuple[str, dict[type, dict[int, str]]]] = {}
_DIRECT_LANES: dict[str, Lane] = {}
#: Our name of an AES ECB/CBC/CTR cipher -> the lane with an engine route its chained contexts
#: were last made on: CipherCore makes them there too, as _ChainedContext's __init__ does; of an
#: AES-GCM cipher -> the lane whose engine route's engine streams GCM (open_aead_stream), where
#: CipherCore opens the stream and makes the EngineGcm context itself.
_ROUTED_LANES: dict[str, Lane] = {}


def _family(algorithm: Any) -> str | None:
    family = _FAMILIES.get(type(algorithm))
    if family is None:
        family = next((f for cls, f in _FAMILIES.items() if isinstance(algorithm, cls)), None)
    return family


def _algorithm_name(algorithm: Any, mode: Any, mode_name: str | None) -> str | None:
    """Our name for an algorithm and mode we offer (``aes-128-cbc``, ``3des-cbc``,
    ``chacha20``), or None."""
    if isinstance(algorithm, _AES):
        if mode_name is None:
            return None
        if mode_name == "xts":  # two keys: AES-128-XTS takes 32 bytes
            return f"aes-{len(algorithm.key) * 4}-xts"
        return aes_name(len(algorithm.key), mode_name)
    family = _family(algorithm)
    if family is None:
        return None
    spec = CIPHER_FAMILIES[family]
    if not spec.modes:  # a stream cipher: no mode
        return family if mode is None else None
    if mode_name not in spec.modes:
        return None
    stem = f"{family}-{len(algorithm.key) * 8}" if spec.sized else family
    return f"{stem}-{mode_name}"


class Cipher(CipherCore):
    """``Cipher(algorithm, mode)``: make an ``encryptor()`` or ``decryptor()``.

    ECB and CBC add no padding: the data must come to whole blocks by ``finalize``. The
    algorithm and mode are `cryptography`'s objects, checked with its own rules; an algorithm or
    mode cryptoffload does not offer raises UnsupportedAlgorithm when a context is asked for.

    AES in the modes of ``_DIRECT_MODES`` construct on CipherCore's direct path once a first
    cipher of the same classes and key length has been made here (see
    :class:`cryptoffload.core.directpath.PureCipherCore`), and their contexts on a lane no engine
    claims come from it too: the mode's own check, OpenSSL's context, no Python in between.
    """

    __slots__ = ()

    def _init_slow(
        self,
        algorithm: Any,
        mode: Any,
        backend: object = None,
        *,
        provider: Provider | None = None,
    ) -> None:
        if algorithm.__class__ not in _ALGORITHM_CLASSES:
            if not isinstance(algorithm, CipherAlgorithm):
                raise TypeError("Expected interface of CipherAlgorithm.")
            _ALGORITHM_CLASSES.add(algorithm.__class__)
        mode_name = _MODE_NAMES.get(type(mode))
        if mode is not None:
            # A mode we name is one of `cryptography`'s Mode classes: no ABC check for it.
            if mode_name is None and not isinstance(mode, modes.Mode):
                raise TypeError("Expected interface of Mode.")
            _explain(algorithm, mode, mode_name)
            mode.validate_for_algorithm(algorithm)
        self.algorithm = algorithm
        self.mode = mode
        self._alg = _algorithm_name(algorithm, mode, mode_name)
        # A stream cipher's "mode" is its own name (chacha20, arc4): what the contexts go by.
        self._mode_name = self._alg if mode is None and self._alg is not None else mode_name
        self._provider = checked_provider(provider)
        if (
            mode_name in _DIRECT_MODES
            and algorithm.__class__ in _AES
            and algorithm.key.__class__ is bytes
            and self._alg is not None
        ):  # the classes and key length checked: CipherCore's construction takes them now
            by_alg = _DIRECT_TABLE.setdefault(mode.__class__, (mode_name, {}))[1]
            by_alg.setdefault(algorithm.__class__, {})[len(algorithm.key)] = self._alg

    def _context(self, encrypt: bool) -> Any:
        """:meth:`encryptor` / :meth:`decryptor` off CipherCore's direct path."""
        if self._alg is None:
            raise UnsupportedAlgorithm(
                f"cipher {getattr(self.algorithm, 'name', self.algorithm)!r} in mode "
                f"{getattr(self.mode, 'name', self.mode)!r} is not offered; cryptoffload offers "
                f"AES (ECB, CBC, CTR, CFB, CFB8, OFB, GCM, XTS), Triple DES (ECB, CBC, CFB, "
                f"CFB8, OFB), SM4 (ECB, CBC, CTR, CFB, OFB, GCM), Camellia, Blowfish, CAST5, "
                f"IDEA, SEED (ECB, CBC, CFB, OFB), RC2 (CBC), ChaCha20 and ARC4 (no mode)",
                _Reasons.UNSUPPORTED_CIPHER,
            )
        if self._mode_name == "xts" and encrypt:
            validate.xts_keys(self.algorithm.key)
        lane = resolve(self._provider).lane(self._alg)
        # Held-back updates are recorded with tally, which does not fold: fold here, or the
        # record of a program that makes context after context would grow without bound.
        lane.fold_due()
        if lane.software_only and self._mode_name in _DIRECT_MODES:
            _DIRECT_LANES[self._alg] = lane  # CipherCore's contexts come from this lane now
        elif lane.engine_route is not None and (
            self._mode_name in _HOLDABLE
            or (
                self._mode_name == "gcm"
                and getattr(lane.engine_route.engine, "open_aead_stream", None) is not None
            )
        ):
            _ROUTED_LANES[self._alg] = lane  # CipherCore's chained or engine GCM contexts
        if self._mode_name == "gcm":
            # GHASH runs across calls: an engine that keeps it (open_aead_stream) or software.
            return gcm_context(self, lane, encrypt)
        if self._mode_name == "arc4":
            # No engine carries an RC4 state across calls: the stream is software's, counted as
            # a `streaming` decline of each engine; a policy that requires offload refuses it now.
            declines = lane.declines_for("streaming")
            lane.allow_software(declines)
            return SoftwareStream(self, lane, encrypt, declines)
        if lane.software_only:
            return _DirectContext(self, lane, encrypt)
        return _ChainedContext(self, lane, encrypt)


def _explain(algorithm: Any, mode: Any, mode_name: str | None) -> None:
    """Our named checks, ahead of `cryptography`'s own (same classes, the sizes spelled out):
    the IV against the block, an XTS-sized AES key outside XTS, a GCM tag SP 800-38D allows."""
    if mode_name is None:
        return
    if isinstance(algorithm, _AES) and mode_name != "xts":
        validate.aes_key(algorithm.key)
    if mode_name in _IV_MODES and isinstance(algorithm, BlockCipherAlgorithm):
        iv = mode.nonce if mode_name == "ctr" else mode.initialization_vector
        validate.block_iv(mode_name, iv, algorithm.block_size // 8)
    elif mode_name == "gcm" and mode.tag is not None:
        validate.gcm_tag_length(len(mode.tag))


class _DirectContext(DirectStreamCore):
    """Only software takes this algorithm: stream through one OpenSSL context; count each update
    that gives output. ``update`` and ``update_into`` with ``bytes`` (and a ``bytearray``), and
    ``finalize``, are DirectStreamCore's (compiled where built, see cryptoffload.core.directpath);
    other buffers come here."""

    # _ctx, _lane: DirectStreamCore's.
    __slots__ = ()

    def __init__(self, cipher: Cipher, lane: Lane, encrypt: bool) -> None:
        self._ctx = software_context(cipher, encrypt)
        self._lane = lane

    # An update counts as an op when it gives output, as on the engine path (where an empty
    # update, or one that only fills a held-back ECB/CBC block, sends nothing).
    def _update_slow(self, data: Any) -> bytes:
        if data.__class__ is not bytes and lease_of(data) is not None:
            data = as_plain(data)  # OpenSSL takes format "B" only
            with claimed(data):
                out = self._ctx.update(data)
        else:
            out = self._ctx.update(data)
        if out:
            self._lane.count(len(data))
        return out

    def _update_into_slow(self, data: Any, buf: Any) -> int:
        if (data.__class__ is not bytes or buf.__class__ is not bytearray) and involved(data, buf):
            data, buf = as_plain(data), as_plain(buf)
            with claimed(data, buf):
                n = self._ctx.update_into(data, buf)
        else:
            n = self._ctx.update_into(data, buf)
        if n:
            self._lane.count(len(data))
        return n

    def reset_nonce(self, nonce: bytes) -> None:
        self._ctx.reset_nonce(nonce)


def _as_buffer(data: Any) -> Any:
    """``data`` itself if bytes, else a byte view of it; TypeError if it is not bytes-like."""
    if data.__class__ is bytes:
        return data
    validate.byteslike("data", data)
    return memoryview(data).cast("B")


class _ChainedContext(ChainedCore):
    """An engine claims this algorithm: every ``update`` is one op, chained by the IV it carries.

    The context keeps the chaining value at the start of the current block and, for the stream
    modes (CTR, CFB, OFB), the input of that block so far; an op starting mid-block re-sends
    those bytes and drops their output, so each op is complete in itself and any engine (or
    software) can take it. ECB and CBC hold back a partial block until more data comes, as
    OpenSSL does. CFB8 chains byte by byte (the IV is the last block of ciphertext); XTS takes
    each update as a data unit of its own under the same tweak, as OpenSSL does.
    """

    # _block, _cbc_encrypt, _lane, _sw, _sw_in, _sw_out, _sw_route, _sw_total, _whole_blocks:
    # ChainedCore's.
    __slots__ = (
        "_alg",
        "_algorithm",
        "_chain",
        "_encrypt",
        "_failed",
        "_held",
        "_key",
        "_kind",
        "_mode",
        "_slack",
        "_spent",
        "_sw_base",
        "_unkept",
    )

    def __init__(self, cipher: Cipher, lane: Lane, encrypt: bool) -> None:
        mode = cipher._mode_name
        self._alg = cipher._alg
        self._mode = mode
        self._key = bytes(cipher.algorithm.key)
        if mode == "chacha20":  # a stream cipher: its keystream comes in 64-byte blocks
            self._block = CIPHER_FAMILIES[mode].block
        else:
            self._block = cipher.algorithm.block_size // 8
        self._lane = lane
        self._encrypt = encrypt
        self._kind = "encrypt" if encrypt else "decrypt"
        # ECB and CBC take whole blocks only and hold a partial one back: `cryptography` asks
        # update_into's buffer for room for it.
        self._whole_blocks = mode in ("ecb", "cbc")
        self._slack = self._block - 1 if self._whole_blocks else 0
        if mode == "ecb":
            self._chain = None
        elif mode == "ctr":
            self._chain = bytes(cipher.mode.nonce)
        elif mode == "xts":
            self._chain = bytes(cipher.mode.tweak)
        elif mode == "chacha20":  # the 16-byte nonce: block counter (little-endian) and nonce
            self._chain = bytes(cipher.algorithm.nonce)
        else:
            self._chain = bytes(cipher.mode.initialization_vector)
        self._held = b""
        self._done = False
        #: ChaCha20 only: the counter has passed its last block (any more data is refused).
        self._spent = False
        self._algorithm = cipher.algorithm
        self._cbc_encrypt = mode == "cbc" and encrypt  # the output tail is its chaining value
        #: A kept context (see _run_held): OpenSSL's while ops are held back from every engine
        #: by the policy, or the engine route's session (``_sw_route``: its route) while the
        #: policy offers that engine the ops; None while the chaining value and held bytes are
        #: ours.
        self._sw: Any = None
        self._sw_route: Any = None
        #: (route, exception) of an engine route's session that failed the update being redone:
        #: the op built for it is settled with that (``Lane.engine_failed``), not offered again.
        self._failed: Any = None
        #: The engine route whose engine kept no session for this stream when asked (not
        #: asked again: its ops go the ordinary way).
        self._unkept: Any = None
        route = lane.engine_route
        if route is not None and mode in _HOLDABLE:
            # The engine's session from the start: the first update takes the compiled path
            # too (a context made per message pays no second way in).
            self._enter_held(route)

    def _update_slow(self, data: Any) -> bytes:
        """``update`` past the held-back path (ChainedCore's, see cryptoffload.core.directpath)."""
        if data.__class__ is not bytes and lease_of(data) is not None:
            data = as_plain(data)  # a DmaBuffer: in use by this op, read in place
            with claimed(data):
                return self._update(data, None)
        return self._update(data if data.__class__ is bytes else _as_buffer(data), None)

    def _update_into_slow(self, data: Any, buf: Any) -> int:
        """``update_into`` past the held-back path (ChainedCore's)."""
        if (data.__class__ is not bytes or buf.__class__ is not bytearray) and involved(data, buf):
            data, buf = as_plain(data), as_plain(buf)  # DmaBuffers: in use by this op
            with claimed(data, buf):
                return self._update_into(data, buf)
        return self._update_into(data, buf)

    def _update_into(self, data: Any, buf: Any) -> int:
        if data.__class__ is not bytes:
            data = _as_buffer(data)
        n = len(data)
        if buf.__class__ is bytearray and self._whole_blocks and n and not n % self._block:
            # The common case, kept short (its cost shows in benchmarks/afalg_vs_c.py): whole
            # blocks of ECB or CBC into a bytearray; the engine writes into it.
            need = n + self._slack
            if len(buf) < need:
                raise ValueError(f"buffer must be at least {need} bytes for this payload")
            data = disjoint_input(data, buf)  # the engine writes into ``buf`` as it reads
            lane = self._lane
            if (
                not self._held
                and not self._done
                and self._sw is None
                and lane.hold_below <= n <= lane.hold_above
                and (lane.engine_route is None or self._failed is not None)
            ):
                self._run_op(CipherOp(self._alg, self._kind, self._key, self._chain, data, buf))
                if self._mode == "cbc":
                    b = self._block
                    # A copy either way: the caller may refill its buffers for the next update.
                    last = buf[n - b : n] if self._encrypt else data[n - b : n]
                    self._chain = bytes(last)
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
        data = disjoint_input(data, view)  # an engine may write into ``view`` as it reads
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
        if mode == "xts" or mode == "cfb8":
            return self._update_whole(data, into)
        block = self._block
        n = len(data)
        if not n:
            return b""  # nothing new: a stream mode would only re-send what it holds
        if mode in _HOLDABLE:
            # The op an engine would get: the held bytes and these, whole blocks for ECB/CBC.
            size = (self._sw_total % block if self._sw is not None else len(self._held)) + n
            if mode != "ctr":
                size -= size % block
            lane = self._lane
            kept, on = self._sw, self._sw_route
            if (
                size < lane.hold_below
                or size > lane.hold_above
                or (not size and kept is not None and on is None)
            ):
                if on is not None:  # from the engine's session to software's context
                    self._leave_held()
                return self._run_held(data, size, into)
            route = lane.engine_route
            if (
                route is not None
                and self._failed is None
                and self._unkept is not route
                and (lane.engine_floor <= size <= lane.engine_ceiling or (not size and on is route))
            ):
                if on is not route:
                    if kept is not None:
                        self._leave_held()
                    self._enter_held(route)
                if self._sw_route is route:  # the engine keeps a session for this stream
                    return self._run_held(data, size, into)
            if self._sw is not None:
                self._leave_held()
        held = self._held
        if held or (n % block and mode in ("ecb", "cbc")):
            buf = held + bytes(data)
            into = None
        else:
            buf = data  # the usual case: the caller's buffer goes to the engine as it is
        size = len(buf)
        full = size - size % block
        if mode in ("ecb", "cbc"):
            if full == 0:
                self._held = bytes(buf)
                return b""
            send = buf if full == size else buf[:full]
        elif size:
            send = buf
        else:
            return b""
        if mode == "chacha20":
            self._chacha20_room(size)
        # Written in place (into over data), the last input block would be gone: keep it now.
        last_in = bytes(buf[full - block : full]) if into is not None and full else None
        out = self._run_op(CipherOp(self._alg, self._kind, self._key, self._chain, send, into))
        if full and mode == "ctr":  # _advance's commonest case, without its frame
            self._chain = ivs.ctr_after(self._chain, full // 16)
        elif full and mode != "ecb":
            self._advance(
                last_in if last_in is not None else buf[full - block : full],
                (into if into is not None else out)[full - block : full],
                full,
            )
        self._held = bytes(buf[full:]) if full != size else b""
        if into is not None or not held or mode in ("ecb", "cbc"):
            return out
        # A stream mode re-sent the partial block it had seen: its output went out last time.
        return out[len(held) :]

    def _run_op(self, op: CipherOp) -> Any:
        """``op`` through the lane; settled with the engine route's failure when it is the
        redo of an update that the engine's session failed (see :meth:`_session_failed`)."""
        failed = self._failed
        if failed is None:
            return self._lane.run(op, True)
        self._failed = None
        return self._lane.engine_failed(failed[0], op, failed[1])

    def _session_failed(
        self, route: Any, exc: Exception, data: Any, buf: Any = None, into: memoryview | None = None
    ) -> Any:
        """The engine route's session raised ``exc`` on an update of ``data`` (into ``buf``,
        update_into's buffer, or ``into``): its state is lost. The chaining value and held
        bytes come back from the tails kept before this update, and the update is redone the
        ordinary way, its op settled with ``exc`` by the lane's rules (a decline or a fault
        counted, then the engines after this one, then software)."""
        self._leave_held()
        self._failed = (route, exc)
        try:
            return self._update_into(data, buf) if buf is not None else self._update(data, into)
        finally:
            if self._failed is not None:  # no op was due (a partial block held back)
                self._failed = None
                op = CipherOp(self._alg, self._kind, self._key, self._chain, b"", None)
                self._lane.settle(route, op, {}, False, exc)

    def _run_held(self, data: Any, size: int, into: memoryview | None = None) -> Any:
        """An update on the kept context, its tail kept for another engine (or software) to
        take over from. The kept context is OpenSSL's for an op the policy keeps from every
        engine (made from the chaining value and held bytes on the first), counted as
        software's op and each engine's decline (``~size``); or the engine route's session
        (``_sw_route``), counted as that engine's op of ``size`` bytes. With ``into`` (room
        for OpenSSL's rule: the data and a block less one) the output goes there and its
        length is returned."""
        sw = self._sw
        if sw is None:
            sw = self._enter_held()
        route = self._sw_route
        n = len(data)
        try:
            if into is not None and len(into) >= n + self._block - 1:
                k = sw.update_into(data, into)
                out: Any = bytes(into[max(0, k - 16) : k]) if k and self._mode == "cbc" else b""
                result: Any = k
            else:
                out = result = sw.update(data)
        except Exception as exc:
            if route is None:
                raise
            return self._session_failed(route, exc, data, None, into)
        self._sw_total += n
        if n >= _TAIL:
            self._sw_in = data if data.__class__ is bytes else bytes(data[-_TAIL:])
        else:
            self._sw_in = (bytes(self._sw_in[-_TAIL:]) + bytes(data))[-_TAIL:]
        if out:
            self._sw_out = out if len(out) >= 16 else (bytes(self._sw_out) + out)[-16:]
        if size:
            if route is None:
                self._lane.count(~size)  # folds when due: a long stream's record stays short
            else:
                self._lane.answered(route, size)
        return result

    def _enter_held(self, route: Any = None) -> Any:
        """A kept context at this context's chaining value, fed the held bytes: OpenSSL's, or
        with ``route`` the session its engine keeps for this stream (``session`` of a CipherOp
        with the algorithm, kind, key and chaining value, data None: an object with
        ``update`` and ``update_into`` as `cryptography`'s contexts have), None when the
        engine keeps none (or fails making it: the ordinary path's ops count that)."""
        mode = self._mode
        chain = self._chain
        held = self._held
        if route is not None:
            sw = route.session(CipherOp(self._alg, self._kind, self._key, chain, None, None))
            if sw is None:
                self._unkept = route
                return None
            if held:
                try:
                    sw.update(held)  # as below
                except Exception as exc:
                    return self._no_session(route, exc)
        else:
            if mode == "ecb":
                sw_mode: Any = modes.ECB()
            elif mode == "cbc":
                sw_mode = modes.CBC(chain)
            else:
                sw_mode = modes.CTR(chain)
            cipher = _Cipher(self._algorithm, sw_mode)
            sw = cipher.encryptor() if self._encrypt else cipher.decryptor()
            if held:
                sw.update(held)  # ECB/CBC: held inside; CTR: that output went out already
        self._sw = sw
        self._sw_route = route
        self._sw_base = chain
        self._sw_total = len(held)
        # The input tail starts with what came before: CBC decryption's chaining value is the
        # last ciphertext block; the output tail with CBC encryption's.
        self._sw_in = (chain or b"") + held if mode == "cbc" and not self._encrypt else held
        self._sw_out = chain or b""
        return sw

    def _no_session(self, route: Any, exc: Exception) -> None:
        """``route``'s engine failed this stream's session as it was made (``exc``: feeding it
        the held bytes, or, in CipherCore's compiled twin, making it): none is asked for again,
        and its ops go the ordinary way (which counts them)."""
        log.debug("engine %s keeps no session for %s: %s", route.name, self._alg, exc)
        self._unkept = route

    def _leave_held(self) -> None:
        """An engine may take the next op: the chaining value and held bytes from the tail."""
        total = self._sw_total
        block = self._block
        pending = total % block
        tail = self._sw_in
        end = len(tail) - pending
        self._held = bytes(tail[end:]) if pending else b""
        mode = self._mode
        if mode == "cbc":
            last = self._sw_out[-block:] if self._encrypt else tail[end - block : end]
            self._chain = bytes(last)
        elif mode == "ctr":
            self._chain = ivs.ctr_after(self._sw_base, total // 16)
        self._sw = None
        self._sw_route = None

    def _update_whole(self, data: Any, into: memoryview | None) -> Any:
        """XTS and CFB8: every update is complete in itself (nothing held back)."""
        n = len(data)
        if n == 0:
            return b""
        if self._mode == "xts" and n < 16:
            raise ValueError(
                "In XTS mode you must supply at least a full block in each update call. "
                "For AES this is 16 bytes."
            )
        out = self._run_op(CipherOp(self._alg, self._kind, self._key, self._chain, data, into))
        if self._mode == "cfb8":  # the next IV: the last block of ciphertext so far
            ciphertext = (into[:n] if into is not None else out) if self._encrypt else data
            block = self._block
            self._chain = (self._chain + bytes(ciphertext[-block:]))[-block:]
        return out

    def _advance(self, last_in: Any, last_out: Any, full: int) -> None:
        """The chaining value after ``full`` bytes whose last block went ``last_in`` -> out."""
        mode = self._mode
        if mode == "cbc" or mode == "cfb":
            self._chain = bytes(last_out if self._encrypt else last_in)
        elif mode == "ctr":
            self._chain = ivs.ctr_after(self._chain, full // 16)
        elif mode == "chacha20":
            counter = ivs.chacha20_counter(self._chain) + full // 64
            self._spent = counter >= ivs.CHACHA20_BLOCKS
            self._chain = ivs.chacha20_at(self._chain, counter)
        else:  # ofb: the keystream block is what was XORed in
            self._chain = bytes(a ^ b for a, b in zip(bytes(last_in), bytes(last_out), strict=True))

    def _chacha20_room(self, size: int) -> None:
        """ValueError (as `cryptography` raises) if ``size`` bytes from here run past the
        32-bit block counter; nothing is sent then."""
        if self._spent:
            raise ValueError("ChaCha20 counter overflow: the 2**32 blocks of this nonce are used")
        validate.chacha20_room(self._chain, size)

    def reset_nonce(self, nonce: bytes) -> None:
        """CTR and ChaCha20: start again from counter block ``nonce``, as `cryptography` does."""
        if self._done:
            raise AlreadyFinalized("Context was already finalized.")
        if self._mode not in ("ctr", "chacha20"):
            raise UnsupportedAlgorithm(_NO_RESET, _Reasons.UNSUPPORTED_CIPHER)
        validate.byteslike("nonce", nonce)
        if len(nonce) != 16:
            raise ValueError("Nonce must be 16 bytes long")
        self._chain = bytes(nonce)
        self._held = b""
        self._spent = False
        self._sw = None
        self._sw_route = None

    def _finalize_slow(self) -> bytes:
        """``finalize`` past ChainedCore's (see cryptoffload.core.directpath)."""
        if self._done:
            raise AlreadyFinalized("Context was already finalized.")
        self._done = True
        left = self._sw_total % self._block if self._sw is not None else len(self._held)
        self._sw = None
        self._sw_route = None
        if self._mode in ("ecb", "cbc") and left:
            raise ValueError(
                f"{self._mode.upper()} data must come to a multiple of {self._block} bytes "
                f"({left} bytes left over; no padding is applied)"
            )
        return b""


CipherContext.register(_DirectContext)
CipherContext.register(_ChainedContext)
for _cls in (Cipher, _DirectContext, _ChainedContext):
    own_methods(_cls)  # calls of the compiled methods specialize for these classes' objects
if MAKE_CONTEXT is not None:  # another layout of `cryptography`: every Cipher the slow way
    Cipher._direct_path = (
        _DIRECT_TABLE,
        _DIRECT_LANES,
        *MAKE_CONTEXT,
        _DirectContext,
        GcmDirectEncryptor,
        GcmDirectDecryptor,
        _ROUTED_LANES,
        _ChainedContext,
        CipherOp,
        EngineGcmEncryptor,
        EngineGcmDecryptor,
        AeadOp,
        gcm_open_failed,
    )
