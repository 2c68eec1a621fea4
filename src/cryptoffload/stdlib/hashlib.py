"""Python's `hashlib` as an application sees it: the claimed hashes' constructors, ``new``,
``file_digest`` and ``pbkdf2_hmac`` go through the provider, with Python's objects' behaviour."""

from __future__ import annotations

import functools
import hashlib as _python
import types
from collections.abc import Iterable
from typing import Any

from cryptoffload.hashes import Hash
from cryptoffload.kdf.pbkdf2 import PBKDF2HMAC
from cryptoffload.stdlib._common import Spec, Unbound, View, find, flat, hash_specs, plain

#: Python's bound on iterations, dklen and the lengths of password and salt (a C int).
_INT_MAX = 2**31 - 1


class HashObject:
    """A hash object as hashlib's: ``update``, ``digest`` and ``hexdigest`` (any number of times:
    each digest is one op of the message so far), ``copy``, ``name``, ``digest_size``,
    ``block_size``."""

    __slots__ = ("_ctx", "_spec")

    def __init__(self, spec: Spec, data: Any = b"") -> None:
        self._spec = spec
        self._ctx = Hash(spec.algorithm)
        if data.__class__ is not bytes or data:
            self.update(data)

    def __repr__(self) -> str:
        return f"<{self._spec.name} hash object (cryptoffload) @ {id(self):#x}>"

    def __reduce__(self) -> Any:
        # As Python's: copy.copy or pickle would otherwise share one running state.
        raise TypeError(f"cannot pickle {type(self).__name__!r} object")

    @property
    def name(self) -> str:
        return self._spec.name

    @property
    def digest_size(self) -> int:
        return self._spec.digest_size

    @property
    def block_size(self) -> int:
        return self._spec.block_size

    def update(self, data: Any) -> None:
        """Add ``data`` (a bytes-like object) to the message."""
        self._ctx.update(data if data.__class__ is bytes else plain(data))

    def digest(self) -> bytes:
        """The digest of the message so far (the object goes on taking data)."""
        return self._ctx.copy().finalize()

    def hexdigest(self) -> str:
        return self.digest().hex()

    def copy(self) -> HashObject:
        """An independent object with the same message so far."""
        twin = HashObject.__new__(HashObject)
        twin._spec = self._spec
        twin._ctx = self._ctx.copy()
        return twin


def view(claimed: Iterable[str]) -> types.ModuleType | None:
    """Python's hashlib with the hashes (and PBKDF2s) in ``claimed`` routed, or None when no
    name of it is."""
    claimed = frozenset(claimed)
    specs = hash_specs(claimed)
    kdfs = hash_specs(claimed, "pbkdf2-hmac-")
    if not specs and not kdfs:
        return None
    routed: dict[str, Any] = {}
    if specs:
        for name, spec in specs.items():
            real = getattr(_python, name, None)
            if isinstance(real, types.BuiltinFunctionType):  # not blake2b's class and its options
                routed[name] = _constructor(spec, real)
        routed["new"] = _new(specs)
        routed["file_digest"] = _file_digest(routed["new"])
    if kdfs:
        routed["pbkdf2_hmac"] = Unbound(_pbkdf2_hmac(kdfs))
    return View(_python, routed)


def _constructor(spec: Spec, real: Any) -> Unbound:
    def constructor(*args: Any, **kwargs: Any) -> HashObject:
        if len(args) > 1 or (kwargs and kwargs.keys() != {"usedforsecurity"}):
            real(*args, **kwargs)  # Python's error for a call it refuses; else the data is:
            args = args or (kwargs.get("string", kwargs.get("data", b"")),)
        return HashObject(spec, args[0] if args else b"")

    constructor.__name__ = constructor.__qualname__ = spec.name
    constructor.__doc__ = real.__doc__
    return Unbound(constructor)


def _new(specs: dict[str, Spec]) -> Any:
    def new(name: str, data: Any = b"", **kwargs: Any) -> Any:
        """Python's hashlib.new: a hash object for the hash ``name``."""
        spec = find(specs, name)
        if spec is None or (kwargs and kwargs.keys() != {"usedforsecurity"}):
            return _python.new(name, data, **kwargs)
        return HashObject(spec, data)

    return new


def _file_digest(new: Any) -> Any:
    def file_digest(fileobj: Any, digest: Any, /, **kwargs: Any) -> Any:
        """Python's hashlib.file_digest, a name given meaning this hashlib's ``new``."""
        if isinstance(digest, str):
            digest = functools.partial(new, digest)
        return _python.file_digest(fileobj, digest, **kwargs)

    return file_digest


def _pbkdf2_hmac(specs: dict[str, Spec]) -> Any:
    def pbkdf2_hmac(
        hash_name: str, password: Any, salt: Any, iterations: int, dklen: int | None = None
    ) -> bytes:
        """Python's hashlib.pbkdf2_hmac: ``dklen`` bytes (the hash's size by default)."""
        spec = find(specs, hash_name)
        secret, salted = flat(password), flat(salt)
        if (
            spec is None
            or secret is None
            or salted is None
            or iterations.__class__ is not int
            or not 0 < iterations <= _INT_MAX
            or not (dklen is None or (dklen.__class__ is int and 0 < dklen <= _INT_MAX))
            or len(secret) > _INT_MAX
            or len(salted) > _INT_MAX
        ):
            return _python.pbkdf2_hmac(hash_name, password, salt, iterations, dklen)
        kdf = PBKDF2HMAC(spec.algorithm, dklen or spec.digest_size, bytes(salted), iterations)
        return kdf.derive(bytes(secret))

    return pbkdf2_hmac
