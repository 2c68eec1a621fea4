"""Python's `hmac` as an application sees it: ``new``, ``digest`` and calls of the ``HMAC`` class
(paramiko's form) for a claimed HMAC go through the provider, with Python's objects' behaviour;
``compare_digest`` and everything else are Python's."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac as _python
import types
from collections.abc import Iterable
from typing import Any

from cryptoffload import hmac as routed
from cryptoffload.stdlib._common import Spec, View, find, flat, hash_specs, plain


class HMAC(_python.HMAC):
    """An HMAC object as Python's (an instance of ``hmac.HMAC``): ``update``, ``digest`` and
    ``hexdigest`` (each digest one op of the message so far), ``copy``, ``name``,
    ``digest_size``, ``block_size``. Made by :func:`view`'s ``new``."""

    __slots__ = ("_ctx", "_spec")

    def __init__(self, spec: Spec, ctx: routed.HMAC) -> None:
        self._spec = spec
        self._ctx = ctx

    @property
    def name(self) -> str:
        return self._spec.name

    @property
    def digest_size(self) -> int:  # type: ignore[override]
        return self._spec.digest_size

    @property
    def block_size(self) -> int:  # type: ignore[override]
        return self._spec.block_size

    def update(self, msg: Any) -> None:
        """Add ``msg`` (a bytes-like object) to the message."""
        self._ctx.update(msg if msg.__class__ is bytes else plain(msg))

    def digest(self) -> bytes:
        """The tag of the message so far (the object goes on taking data)."""
        return self._ctx.copy().finalize()

    def hexdigest(self) -> str:
        return self.digest().hex()

    def copy(self) -> HMAC:
        """An independent object with the same key and message so far."""
        return HMAC(self._spec, self._ctx.copy())


def view(claimed: Iterable[str], hashlib_view: types.ModuleType | None) -> types.ModuleType | None:
    """Python's hmac with the HMACs in ``claimed`` routed, or None when none is. A digestmod is
    recognised by name (any spelling Python takes) or as a named constructor of Python's hashlib
    or of ``hashlib_view``; any other is Python's to handle."""
    specs = {
        name: dataclasses.replace(spec, name=f"hmac-{name}")
        for name, spec in hash_specs(claimed, "hmac-").items()
    }
    if not specs:
        return None
    constructors: dict[Any, str] = {}
    for module in (hashlib, hashlib_view):
        for name in specs:
            constructor = getattr(module, name, None)
            if constructor is not None:
                constructors[constructor] = name
    new = _new(specs, constructors)
    return View(
        _python, {"new": new, "digest": _digest(specs, constructors), "HMAC": _hmac_class(new)}
    )


class _CallsNew(type):
    """The metaclass of a view's ``HMAC``: every object of Python's ``hmac.HMAC`` (the routed
    ones are too) is an instance of that class, as it is of Python's."""

    def __instancecheck__(cls, obj: Any) -> bool:
        if "_view_new" in cls.__dict__:
            return isinstance(obj, _python.HMAC)
        return type.__instancecheck__(cls, obj)

    def __subclasscheck__(cls, sub: type) -> bool:
        if "_view_new" in cls.__dict__:
            return issubclass(sub, _python.HMAC)
        return type.__subclasscheck__(cls, sub)


def _hmac_class(new: Any) -> type:
    """A subclass of Python's ``hmac.HMAC`` whose calls are ``new``'s (a routed object, or
    Python's own); a class derived from it is Python's HMAC, unrouted."""

    class HMAC(_python.HMAC, metaclass=_CallsNew):
        __slots__ = ()
        __doc__ = _python.HMAC.__doc__
        _view_new = staticmethod(new)

        def __new__(cls, key: Any, msg: Any = None, digestmod: Any = "") -> Any:
            if cls is HMAC:
                return new(key, msg, digestmod)  # not an instance: __init__ is not called
            return super().__new__(cls)

    HMAC.__module__ = _python.HMAC.__module__
    return HMAC


def _finder(specs: dict[str, Spec], constructors: dict[Any, str]) -> Any:
    def spec_of(digestmod: Any) -> Spec | None:
        if digestmod.__class__ is str:
            return find(specs, digestmod)
        try:
            name = constructors.get(digestmod)
        except TypeError:  # unhashable: not a constructor we know
            return None
        return None if name is None else specs[name]

    return spec_of


def _new(specs: dict[str, Spec], constructors: dict[Any, str]) -> Any:
    spec_of = _finder(specs, constructors)

    def new(key: Any, msg: Any = None, digestmod: Any = "") -> Any:
        """Python's hmac.new: an HMAC object under ``key`` with the hash ``digestmod``."""
        spec = spec_of(digestmod)
        if spec is None or not isinstance(key, (bytes, bytearray)):
            return _python.new(key, msg, digestmod)
        obj = HMAC(spec, routed.HMAC(key, spec.algorithm))
        if msg is not None:
            obj.update(msg)
        return obj

    return new


def _digest(specs: dict[str, Spec], constructors: dict[Any, str]) -> Any:
    spec_of = _finder(specs, constructors)

    def digest(key: Any, msg: Any, digest: Any) -> bytes:
        """Python's hmac.digest: the tag of ``msg`` under ``key`` with the hash ``digest``."""
        spec = spec_of(digest)
        secret, data = flat(key), flat(msg)
        if spec is None or secret is None or data is None:
            return _python.digest(key, msg, digest)
        ctx = routed.HMAC(secret, spec.algorithm)
        ctx.update(data)
        return ctx.finalize()

    return digest
