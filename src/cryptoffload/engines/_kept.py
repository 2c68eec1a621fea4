"""What the software engine keeps between ops: key-scheduled AEAD objects, and AES CTR/CBC/ECB
contexts carried on from where one op ended to the op that starts there."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from cryptoffload.blocks.cipher_contexts import MAKE_CONTEXT  # (the op is validated already)
from cryptoffload.blocks.ivs import ctr_after

#: Most entries each store keeps; a full store is emptied (old streams' entries go with it).
LIMIT = 64

_CARRIED_MODES = {"ctr": modes.CTR, "cbc": modes.CBC, "ecb": None}


class KeyedObjects:
    """`cryptography` objects made from a key (``AESGCM(key)``...), kept per class, key and
    options so that ops under one key pay its key schedule once. Bytes keys only; at most
    :data:`LIMIT` kept."""

    __slots__ = ("_kept", "peek")

    def __init__(self) -> None:
        self._kept: dict[tuple[Any, ...], Any] = {}
        #: ``peek((make, key, *options))``: the object kept, or None (no Python frame: for a
        #: caller that asks per op and makes it with :meth:`get` when none is kept).
        self.peek: Callable[[tuple[Any, ...]], Any] = self._kept.get

    def get(self, make: Callable[..., Any], key: Any, *options: Any) -> Any:
        """``make(key, *options)``, the one kept if made before."""
        if key.__class__ is not bytes:
            return make(key, *options)
        slot = (make, key, *options)
        kept = self._kept.get(slot)
        if kept is None:
            kept = make(key, *options)
            if len(self._kept) >= LIMIT:
                self._kept.clear()
            self._kept[slot] = kept
        return kept

    def clear(self) -> None:
        """Forget every object (and so every key) kept."""
        self._kept.clear()


def carries(op: Any) -> bool:
    """Whether :meth:`CarriedContexts.run` takes ``op``: AES CTR, CBC or ECB under a bytes key,
    CBC and ECB in whole blocks."""
    alg = op.alg
    if not alg.startswith("aes-") or op.key.__class__ is not bytes:
        return False
    mode = alg[alg.rfind("-") + 1 :]
    if mode == "ctr":
        return op.iv.__class__ is bytes
    if mode == "cbc":
        return op.iv.__class__ is bytes and not len(op.data) % 16
    return mode == "ecb" and not len(op.data) % 16


class CarriedContexts:
    """OpenSSL contexts kept at the point where an op left them, keyed by where that is
    (algorithm, kind, key, and the IV an op starting there carries: CBC's last ciphertext
    block, CTR's counter block). A chained ``Cipher`` context's next op starts there, and
    goes on in that context instead of a new one (its key schedule and set-up).

    A CTR op may end mid-block: the entry then keeps that block's first bytes in and out, and
    the next op re-sends them from the block's start (as a chained context does): their output
    is the one kept (other bytes there: XORed with the keystream that in and out give). An
    entry is taken out while an op runs (one thread has it) and put back at the op's end point;
    at most :data:`LIMIT` kept."""

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: dict[tuple[Any, ...], tuple[Any, bytes, bytes]] = {}

    def run(self, op: Any) -> bytes | int:
        """``op``'s result (see :func:`carries` for which ops), as the software engine gives it."""
        alg, kind, key, iv, data, out = op.alg, op.kind, op.key, op.iv, op.data, op.out
        mode = alg[alg.rfind("-") + 1 :]
        n = len(data)
        # The input's tail, read before any output is written (``out`` may share its memory).
        rem = n % 16 if mode == "ctr" else 0
        tail = bytes(data[n - rem : n]) if rem else b""
        if mode == "cbc" and kind == "decrypt":
            next_iv: Any = bytes(data[n - 16 : n]) if n else iv
        entry = self._kept.pop((alg, kind, key, iv), None)
        ctx, was_in, was_out = entry if entry is not None else (None, b"", b"")
        k = len(was_in)
        if ctx is None or n < k:
            ctx, k = _context(kind, key, mode, iv), 0
        if k:
            head = bytes(data[:k])
            if head != was_in:  # not the bytes re-sent: the keystream is in XOR out
                was_out = _xor(head, _xor(was_in, was_out))
            result: Any = was_out + ctx.update(data[k:])
        elif out is not None and len(out) >= n + 15:  # cryptography's room rule
            ctx.update_into(data, out)
            result = None
        else:
            result = ctx.update(data)
        if result is None:
            produced: Any = out
        elif out is not None:
            out[:n] = result
            produced = result
        else:
            produced = result
        tail_out = bytes(produced[n - rem : n]) if rem else b""
        if mode == "ctr":
            next_iv = ctr_after(iv, n // 16)
        elif mode == "cbc":
            if kind == "encrypt":
                next_iv = bytes(produced[n - 16 : n]) if n else iv
        else:
            next_iv = iv
        kept = self._kept
        if len(kept) >= LIMIT:
            kept.clear()
        kept[(alg, kind, key, next_iv)] = (ctx, tail, tail_out)
        return n if out is not None else result

    def clear(self) -> None:
        """Forget every context (and so every key) kept."""
        self._kept.clear()


def _context(kind: str, key: bytes, mode: str, iv: bytes | None) -> Any:
    """A new OpenSSL context for AES in ``mode`` from ``iv`` (the op was validated above)."""
    make = _CARRIED_MODES[mode]
    mode_object = modes.ECB() if make is None else make(iv)
    algorithm = algorithms.AES(key)
    if MAKE_CONTEXT is not None:
        return MAKE_CONTEXT[kind != "encrypt"](algorithm, mode_object)
    cipher = Cipher(algorithm, mode_object)
    return cipher.encryptor() if kind == "encrypt" else cipher.decryptor()


def _xor(a: bytes, b: bytes) -> bytes:
    """``a`` XOR ``b`` (equal lengths, under a block)."""
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).to_bytes(len(a), "big")
