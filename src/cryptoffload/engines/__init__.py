"""Engine registry: build engines from spec strings, and find the ones this machine has."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cryptoffload.engines import presence

#: `typing` is for type checkers only: `run` may need this module at start-up (see
#: may_discover_any), and typing's import loads re.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Builds an engine from a spec's options (the text after ``kind:``).
Factory = Callable[[str], object]


def _software(arg: str) -> Any:
    from cryptoffload.engines.software import SoftwareEngine
    from cryptoffload.errors import UnknownEngine

    if arg:
        raise UnknownEngine(f"the software engine takes no options, got 'software:{arg}'")
    return SoftwareEngine()


def _afalg(arg: str) -> Any:
    from cryptoffload.engines.afalg import from_spec as afalg_from_spec

    return afalg_from_spec(arg)


def _cryptodev(arg: str) -> Any:
    from cryptoffload.engines.cryptodev import from_spec as cryptodev_from_spec

    return cryptodev_from_spec(arg)


def _passthrough(arg: str) -> Any:
    from cryptoffload.engines.passthrough import from_spec as passthrough_from_spec

    return passthrough_from_spec(arg)


def _pkcs11(arg: str) -> Any:
    from cryptoffload.engines.pkcs11 import from_spec as pkcs11_from_spec

    return pkcs11_from_spec(arg)


def _synthetic(arg: str) -> Any:
    from cryptoffload.engines.synthetic import from_spec as synthetic_from_spec

    return synthetic_from_spec(arg)


def _caam(arg: str) -> Any:
    from cryptoffload.engines.caam import from_spec as caam_from_spec

    return caam_from_spec(arg)


#: Engine kinds this package has, by the name used in spec strings.
FACTORIES: dict[str, Factory] = {
    "software": _software,
    "afalg": _afalg,
    "cryptodev": _cryptodev,
    "caam": _caam,
    "passthrough": _passthrough,
    "synthetic": _synthetic,
    "pkcs11": _pkcs11,
}
#: Kinds named explicitly, never found by ``discover``: not hardware of this machine, or (pkcs11)
#: a token that needs a module path, a label and a PIN.
NOT_DISCOVERED = frozenset({"software", "passthrough", "synthetic", "pkcs11"})


def register(kind: str, factory: Factory) -> None:
    """Make ``kind`` usable in spec strings (``kind`` or ``kind:options``)."""
    FACTORIES[kind] = factory


def from_spec(spec: str) -> Any:
    """Build an engine from a spec: ``software``, ``afalg:cbc-aes-caam``, ``caam:model=t2080``."""
    if not isinstance(spec, str):
        raise TypeError(f"engine spec must be a string or an engine object, got {spec!r}")
    kind, _, arg = spec.partition(":")
    factory = FACTORIES.get(kind)
    if factory is None:
        from cryptoffload.errors import UnknownEngine

        raise UnknownEngine(
            f"unknown engine {kind!r} in spec {spec!r}; this version has: {', '.join(FACTORIES)}"
        )
    return factory(arg)


def discover() -> list[Any]:
    """One engine of every kind this package has, other than software, to probe on this machine.

    A kind of this package whose device is certainly absent (:data:`WHY_ABSENT`) is given as an
    :class:`~cryptoffload.engines.presence.AbsentEngine` whose probe says why in the kind's own
    words: its module is not imported (a program's start-up pays for none of them on a machine
    without the devices)."""
    found = []
    for kind, factory in FACTORIES.items():
        if kind in NOT_DISCOVERED:
            continue
        why_absent = WHY_ABSENT.get(kind) if factory is _BUILT_IN.get(kind) else None
        reason = why_absent() if why_absent is not None else None
        found.append(presence.AbsentEngine(kind, reason) if reason else from_spec(kind))
    return found


#: The engines the default provider is to be built from at its first use instead of the ones
#: found (:func:`choose`), or None.
_chosen: list[Any] | None = None


def choose(specs: Sequence[Any]) -> list[Any]:
    """Build the engines ``specs`` name now (a bad spec, or an engine named twice, is an error
    here), for the default provider to be built from at its first use instead of the engines
    found: the list it will get. A ``software`` spec stays a spec (the provider makes its
    software engine), so that nothing of the software engine is loaded before it is needed."""
    global _chosen
    chosen: list[Any] = []
    names: set[str] = set()
    for spec in specs:
        if spec == "software":
            chosen.append(spec)
            continue
        engine = from_spec(spec) if isinstance(spec, str) else spec
        name = getattr(engine, "name", None)
        if isinstance(name, str) and name != "software":
            if name in names:
                raise ValueError(f"engine {name!r} is listed twice")
            names.add(name)
        chosen.append(engine)
    _chosen = chosen
    return chosen


def take_chosen() -> list[Any] | None:
    """The engines :func:`choose` chose, once (None after, and when none were chosen)."""
    global _chosen
    chosen, _chosen = _chosen, None
    return chosen


#: The factories this package registers, to tell them from one a caller put in their place.
_BUILT_IN = dict(FACTORIES)

#: Per kind ``discover`` builds: why its device (with no options) is certainly not on this
#: machine, by the kind's probe's own first check, or None where it may be (the engine's module
#: and probe then decide). A kind without an entry, such as one given to :func:`register`, may
#: always be here.
WHY_ABSENT: dict[str, Callable[[], str | None]] = {
    "afalg": presence.afalg_refused,
    "cryptodev": presence.cryptodev_absent,
    "caam": presence.caam_no_device_tree,
}


def _may_be_here(why_absent: Callable[[], str | None]) -> Callable[[], bool]:
    return lambda: why_absent() is None


#: Per kind ``discover`` builds: whether its device may be on this machine (:data:`WHY_ABSENT`).
MAY_BE_HERE: dict[str, Callable[[], bool]] = {
    kind: _may_be_here(why) for kind, why in WHY_ABSENT.items()
}


def may_discover_any() -> bool:
    """Whether :func:`discover`'s engines may include an available one: False only when the
    device of every kind is certainly absent, found out without importing any engine module
    (what deciding that a program's ``hashlib`` stays Python's needs, at start-up cost)."""
    return any(
        MAY_BE_HERE.get(kind, lambda: True)() for kind in FACTORIES if kind not in NOT_DISCOVERED
    )
