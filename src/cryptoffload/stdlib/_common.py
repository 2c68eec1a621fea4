"""What the `hashlib` and `hmac` views share: the hashes by Python's names, its spellings, and
its checks of data."""

from __future__ import annotations

import functools
import hashlib
import types
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import hashes

from cryptoffload.core.names import HASH_CLASSES, HASH_NAMES, XOF_NAMES, pbkdf2_name

#: Python's names of the hashes cryptoffload offers, by ours. SHAKE is left to Python: its
#: ``digest(length)`` takes the output length per call, where an op fixes it.
PYTHON_NAMES: dict[str, str] = {
    ours: python for ours, python in HASH_NAMES.items() if ours not in XOF_NAMES
}
#: Every algorithm whose lane decides what the views route: the hashes, their HMACs, PBKDF2s.
CANDIDATES: tuple[str, ...] = (
    *PYTHON_NAMES,
    *(f"hmac-{ours}" for ours in PYTHON_NAMES),
    *(pbkdf2_name(ours) for ours in PYTHON_NAMES),
)

_ALGORITHMS: dict[str, Any] = {
    **HASH_CLASSES,
    "sha3-224": hashes.SHA3_224,
    "sha3-256": hashes.SHA3_256,
    "sha3-384": hashes.SHA3_384,
    "sha3-512": hashes.SHA3_512,
    "blake2b": functools.partial(hashes.BLAKE2b, 64),  # Python's default sizes
    "blake2s": functools.partial(hashes.BLAKE2s, 32),
    "sm3": hashes.SM3,
    "md5": hashes.MD5,
}


@dataclass(frozen=True)
class Spec:
    """One algorithm as Python shows it (``name``, sizes) and as the provider runs it."""

    #: Python's name of the object: ``sha3_256``, ``hmac-sha256``.
    name: str
    #: Our name of the hash (``sha3-256``): the lane is this, ``hmac-`` it, or ``pbkdf2-hmac-`` it.
    hash: str
    #: The `cryptography` hash algorithm the provider's APIs take.
    algorithm: hashes.HashAlgorithm
    digest_size: int
    block_size: int


def hash_specs(claimed: Iterable[str], prefix: str = "") -> dict[str, Spec]:
    """Python's name -> Spec of each hash whose ``prefix + our name`` is in ``claimed`` and that
    this Python's hashlib makes (an OpenSSL without SM3 has no ``sm3``: it stays Python's)."""
    claimed = frozenset(claimed)
    out = {}
    for ours, python in PYTHON_NAMES.items():
        if prefix + ours not in claimed:
            continue
        try:
            model = hashlib.new(python)
        except ValueError:
            continue
        out[python] = Spec(python, ours, _ALGORITHMS[ours](), model.digest_size, model.block_size)
    return out


@functools.lru_cache(maxsize=256)
def python_name(spelling: str) -> str | None:
    """Python's name of a hash spelled as hashlib takes it (``SHA256``, ``sha-256``,
    ``blake2b512``), or None for one it refuses."""
    try:
        return hashlib.new(spelling).name
    except (TypeError, ValueError):
        return None


def find(specs: dict[str, Spec], name: Any) -> Spec | None:
    """The spec of the hash named ``name`` (any spelling Python takes), or None."""
    spec = specs.get(name)
    if spec is None and name.__class__ is str:
        python = python_name(name)
        if python is not None:
            spec = specs.get(python)
    return spec


def flat(data: Any) -> Any:
    """``data`` as a flat byte buffer (bytes, bytearray, or a byte view of a one-dimensional
    contiguous buffer), or None for anything else (Python's own function then answers)."""
    cls = data.__class__
    if cls is bytes or cls is bytearray:
        return data
    try:
        view = memoryview(data)
    except TypeError:
        return None
    if view.ndim != 1 or not view.c_contiguous:
        return None
    return view if view.format == "B" else view.cast("B")


def plain(data: Any) -> Any:
    """:func:`flat` ``data``, or the error Python's hashlib gives for it (its own check)."""
    out = flat(data)
    if out is None:
        hashlib.sha256().update(data)  # TypeError or BufferError, Python's words
        out = memoryview(data).tobytes()  # a 0-dimensional buffer, which hashlib takes
    return out


class Unbound:
    """``function`` standing for one of Python's builtin functions (``hashlib.sha256``,
    ``pbkdf2_hmac``): like them it stays itself when kept as a class attribute and read through
    an instance (paramiko's ``self.hash_algo(data)``), where a function would bind as a method."""

    __slots__ = ("__wrapped__",)

    def __init__(self, function: Any) -> None:
        self.__wrapped__ = function

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__wrapped__(*args, **kwargs)

    @property
    def __name__(self) -> str:
        return self.__wrapped__.__name__

    def __repr__(self) -> str:
        return f"<built-in function {self.__name__} (cryptoffload's, through the provider)>"


class View(types.ModuleType):
    """Python's module with the routed names replaced: a copy of its namespace, so that every
    other name is the very object Python's module has."""

    def __init__(self, real: types.ModuleType, routed: dict[str, Any]) -> None:
        super().__init__(real.__name__)
        self.__dict__.update(vars(real))
        self.__dict__.update(routed)
        self.__dict__["__cryptoffload_routed__"] = tuple(sorted(routed))

    def __repr__(self) -> str:
        routed = ", ".join(self.__dict__["__cryptoffload_routed__"])
        return f"<module {self.__name__!r} (cryptoffload's view: {routed} through the provider)>"
