"""Keys on the token: caller keys imported as session objects (an LRU cache), and token keys
(made or stored on the token) as objects the API takes like any key of their type."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec as _ec
from cryptography.hazmat.primitives.asymmetric import rsa as _rsa

from cryptoffload.devicekey import DeviceKey, DeviceKeyError
from cryptoffload.engines.pkcs11 import ck
from cryptoffload.engines.pkcs11.sessions import Token

#: A secret of this process: cache entries are found by a keyed hash of the key, which cannot
#: be reversed or compared with another process's.
_PEPPER = os.urandom(32)


def fingerprint(kind: str, material: bytes) -> bytes:
    """A non-reversible name for key ``material`` of ``kind`` (the cache's index)."""
    return hashlib.blake2b(material, key=_PEPPER, person=kind.encode()[:16]).digest()


class _Entry:
    __slots__ = ("dropped", "handle", "users")

    def __init__(self, handle: int) -> None:
        self.handle = handle
        self.users = 0
        self.dropped = False


class KeyCache:
    """Caller keys imported once as session objects (CKA_TOKEN false) and kept, at most
    ``size`` of them; the least recently used is destroyed when another comes, or when in use
    as soon as its last user is done; all of them on ``clear``."""

    def __init__(self, token: Token, size: int = 64) -> None:
        self._token = token
        self._size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()
        self._generation = token.generation
        self.imports = 0

    def __len__(self) -> int:
        return len(self._entries)

    @contextlib.contextmanager
    def use(self, name: bytes, template: Callable[[], list[tuple[int, Any]]]) -> Iterator[int]:
        """The handle of the key called ``name`` (a fingerprint), importing ``template()`` if
        it is not cached; held from eviction until the block ends."""
        with self._lock:
            if self._generation != self._token.generation:  # fork or re-open: handles are gone
                self._entries.clear()
                self._generation = self._token.generation
            entry = self._entries.get(name)
            if entry is not None:
                self._entries.move_to_end(name)
                entry.users += 1
        if entry is None:
            entry = self._import(name, template)
        try:
            yield entry.handle
        finally:
            with self._lock:
                entry.users -= 1
                destroy = entry.dropped and entry.users == 0
            if destroy:
                self._destroy(entry.handle)

    def _import(self, name: bytes, template: Callable[[], list[tuple[int, Any]]]) -> _Entry:
        with self._token.keeper() as keeper:
            module = self._token.module
            assert module is not None
            handle = module.create(keeper, [(ck.CKA_TOKEN, False), *template()])
        evicted: list[_Entry] = []
        with self._lock:
            entry = self._entries.get(name)
            if entry is not None:  # another thread imported it meanwhile: keep one
                evicted.append(_Entry(handle))
            else:
                entry = _Entry(handle)
                self._entries[name] = entry
                self.imports += 1
            entry.users += 1
            while len(self._entries) > self._size:
                _, old = self._entries.popitem(last=False)
                old.dropped = True
                if old.users == 0:
                    evicted.append(old)
        for old in evicted:
            self._destroy(old.handle)
        return entry

    def _destroy(self, handle: int) -> None:
        with contextlib.suppress(Exception), self._token.keeper() as keeper:
            assert self._token.module is not None
            self._token.module.destroy(keeper, handle)

    def clear(self) -> None:
        """Destroy every cached key not in use (the rest go when their users finish)."""
        with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
            for e in entries:
                e.dropped = True
        for e in entries:
            if e.users == 0:
                self._destroy(e.handle)

    def forget(self) -> None:
        """After fork: the handles were the parent's; drop them without touching the token."""
        self._lock = threading.Lock()
        self._entries = OrderedDict()


class TokenKeyRef:
    """Where a token key lives: its engine, its object class and how it is found (label or
    id), and the handle found for the current generation of the token's sessions."""

    __slots__ = ("_generation", "_handle", "cls", "engine", "id", "label", "token")

    def __init__(self, token: Token, engine: str, cls: int, label: str | None, id: bytes | None):
        self.token = token
        self.engine = engine
        self.cls = cls
        self.label = label
        self.id = id
        self._handle = -1
        self._generation = -1

    def where(self) -> str:
        return f"label={self.label!r}" if self.label is not None else f"id={self.id.hex()}"  # type: ignore[union-attr]

    def handle(self) -> int:
        """The object's handle now (found again after fork or re-open)."""
        if self._generation != self.token.generation or self._handle < 0:
            self._handle = find(self.token, self.cls, self.label, self.id)
            self._generation = self.token.generation
        return self._handle


def find(token: Token, cls: int, label: str | None, id: bytes | None) -> int:
    """The one object of class ``cls`` with that label or id; LookupError for none or many."""
    pairs: list[tuple[int, Any]] = [(ck.CKA_CLASS, cls)]
    if label is not None:
        pairs.append((ck.CKA_LABEL, label.encode()))
    if id is not None:
        pairs.append((ck.CKA_ID, bytes(id)))
    with token.session() as session:
        assert token.module is not None
        found = token.module.find(session, pairs, limit=2)
    what = f"label={label!r}" if label is not None else f"id={bytes(id or b'').hex()}"
    if not found:
        raise LookupError(f"no key with {what} on token {token.spec.token!r}")
    if len(found) > 1:
        raise LookupError(f"more than one key with {what} on token {token.spec.token!r}")
    return found[0]


class TokenAesKey(DeviceKey):
    """An AES key that lives on a PKCS#11 token: AESGCM and the AES ciphers take it like key
    bytes; only its engine runs it, software and other engines refuse it (DeviceKeyError)."""

    __slots__ = ("ref",)

    def __init__(self, ref: TokenKeyRef, bits: int) -> None:
        ident = ref.id.hex() if ref.id else f"label={ref.label}"
        super().__init__(f"pkcs11:{ident}".encode(), b"", bits, ref.engine)
        self.ref = ref

    def __repr__(self) -> str:
        return f"<TokenAesKey aes-{self.bits} {self.ref.where()} on {self.engine}>"

    def refuse(self, who: str) -> DeviceKeyError:
        return DeviceKeyError(
            f"this AES-{self.bits} key lives on the token of {self.engine} ({self.ref.where()}): "
            f"{who} cannot use it; run it through a provider holding {self.engine}, which must "
            "take the operation (it did not: see the provider's counters for its reason)"
        )


def _refuse(ref: TokenKeyRef, what: str, who: str = "software") -> DeviceKeyError:
    return DeviceKeyError(
        f"this {what} key lives on the token of {ref.engine} ({ref.where()}): {who} cannot use "
        "it, only that engine can, and its private value cannot be read out"
    )


class TokenEcPrivateKey(_ec.EllipticCurvePrivateKey):
    """An EC private key on a token, as `cryptography`'s interface: its public half is an
    ordinary key; signing, agreeing and reading it out refuse (DeviceKeyError): wrap it in
    ``cryptoffload.ec.EllipticCurvePrivateKey`` with a provider holding its engine."""

    def __init__(self, ref: TokenKeyRef, public: _ec.EllipticCurvePublicKey) -> None:
        self.ref = ref
        self._public = public

    @property
    def curve(self) -> _ec.EllipticCurve:
        return self._public.curve

    @property
    def key_size(self) -> int:
        return self._public.key_size

    def public_key(self) -> _ec.EllipticCurvePublicKey:
        return self._public

    def sign(self, data: Any, signature_algorithm: Any) -> bytes:
        raise _refuse(self.ref, "EC")

    def exchange(self, algorithm: Any, peer_public_key: Any) -> bytes:
        raise _refuse(self.ref, "EC")

    def private_numbers(self) -> Any:
        raise _refuse(self.ref, "EC")

    def private_bytes(self, *args: Any, **kwargs: Any) -> bytes:
        raise _refuse(self.ref, "EC")

    def __copy__(self) -> TokenEcPrivateKey:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> TokenEcPrivateKey:
        return self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TokenEcPrivateKey) and other._public == self._public

    def __hash__(self) -> int:
        return hash(self._public)

    def __repr__(self) -> str:
        return f"<TokenEcPrivateKey {self.curve.name} {self.ref.where()} on {self.ref.engine}>"

    def refuse(self, who: str) -> DeviceKeyError:
        """The error for ``who`` (another engine) being handed this key."""
        return _refuse(self.ref, "EC", who)


class TokenRsaPrivateKey(_rsa.RSAPrivateKey):
    """An RSA private key on a token (see TokenEcPrivateKey): sign and decrypt through its
    engine; read out, nowhere."""

    def __init__(self, ref: TokenKeyRef, public: _rsa.RSAPublicKey) -> None:
        self.ref = ref
        self._public = public

    @property
    def key_size(self) -> int:
        return self._public.key_size

    def public_key(self) -> _rsa.RSAPublicKey:
        return self._public

    def sign(self, data: Any, padding: Any, algorithm: Any) -> bytes:
        raise _refuse(self.ref, "RSA")

    def decrypt(self, ciphertext: bytes, padding: Any) -> bytes:
        raise _refuse(self.ref, "RSA")

    def private_numbers(self) -> Any:
        raise _refuse(self.ref, "RSA")

    def private_bytes(self, *args: Any, **kwargs: Any) -> bytes:
        raise _refuse(self.ref, "RSA")

    def __copy__(self) -> TokenRsaPrivateKey:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> TokenRsaPrivateKey:
        return self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TokenRsaPrivateKey) and other._public == self._public

    def __hash__(self) -> int:
        return hash(self._public)

    def __repr__(self) -> str:
        return f"<TokenRsaPrivateKey {self.key_size} bits {self.ref.where()} on {self.ref.engine}>"

    def refuse(self, who: str) -> DeviceKeyError:
        """The error for ``who`` (another engine) being handed this key."""
        return _refuse(self.ref, "RSA", who)


class Held:
    """A handle that needs no cache entry (a token key), as a context like KeyCache.use."""

    __slots__ = ("handle",)

    def __init__(self, handle: int) -> None:
        self.handle = handle

    def __enter__(self) -> int:
        return self.handle

    def __exit__(self, *exc: object) -> None:
        return None
