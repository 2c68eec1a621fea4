"""Engine registry: build engines from spec strings, and find the ones this machine has."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cryptoffload.errors import UnknownEngine

Factory = Callable[[str], Any]


def _software(arg: str) -> Any:
    from cryptoffload.engines.software import SoftwareEngine

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
}
#: Kinds that are not hardware of this machine: named explicitly, never found by ``discover``.
NOT_DISCOVERED = frozenset({"software", "passthrough", "synthetic"})


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
        raise UnknownEngine(
            f"unknown engine {kind!r} in spec {spec!r}; this version has: {', '.join(FACTORIES)}"
        )
    return factory(arg)


def discover() -> list[Any]:
    """One engine of every kind this package has, other than software, to probe on this machine."""
    return [from_spec(kind) for kind in FACTORIES if kind not in NOT_DISCOVERED]
