"""The engines `verify` and `calibrate` work on: those named, or those found, plus the hardware
drivers any of them lists as pinnable but does not use (``afalg:virtio_crypto_aes_cbc``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptoffload import engines as registry
from cryptoffload.core.provider import SOFTWARE
from cryptoffload.engines.base import Capabilities


class Probed:
    """An engine whose probe already ran: ``probe()`` gives that answer again (probing a CAAM
    brings its RNG up, an AF_ALG probe binds every template), everything else is the engine's."""

    def __init__(self, engine: Any, caps: Capabilities) -> None:
        self.name = engine.name
        self.engine = engine
        self.caps = caps
        self.run = engine.run

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)

    def probe(self) -> Capabilities:
        """The answer the engine gave when it was probed."""
        return self.caps


@dataclass
class Target:
    """One engine to work on. ``required``: it was named (or a driver the kernel lists), so not
    being available here is a failure; ``origin`` says where it came from when not named."""

    engine: Probed
    required: bool = True
    origin: str = ""

    @property
    def name(self) -> str:
        return self.engine.name

    @property
    def caps(self) -> Capabilities:
        return self.engine.caps


@dataclass
class Targets:
    """The engines to work on, and those looked for and not found here (name -> reason)."""

    engines: list[Target] = field(default_factory=list)
    absent: dict[str, str] = field(default_factory=dict)


def probed(engine: Any) -> Probed:
    """``engine`` probed once (a probe that raises is an unavailable engine, as in Provider)."""
    try:
        caps = engine.probe()
    except Exception as exc:  # an engine's probe must not take the command down
        caps = Capabilities(False, f"probe failed: {type(exc).__name__}: {exc}")
    return Probed(engine, caps)


def resolve(specs: Sequence[str] | None) -> Targets:
    """The engines named by ``specs`` (each must be available), or when None the engines this
    machine has (those not found are listed with their reason); either way, for each engine
    probed, the drivers its probe lists under ``alternatives`` join as pinned engines.

    Naming ``software`` is a ValueError: software is what engines are held to.
    """
    out = Targets()
    if specs is not None:
        if SOFTWARE in specs:
            raise ValueError(
                "software is the reference engines are held to, not an engine to verify or "
                "calibrate; name an engine (e.g. caam:model=t2080, afalg:any)"
            )
        first = [Target(probed(registry.from_spec(spec))) for spec in specs]
    else:
        first = []
        for engine in registry.discover():
            target = Target(probed(engine), required=False, origin="found")
            if target.caps.available:
                first.append(target)
            else:
                out.absent[target.name] = target.caps.reason or "not available"
                first.append(target)  # its probe may list drivers to pin all the same
    seen: set[str] = set()
    for target in first:
        if target.name in seen:
            continue
        seen.add(target.name)
        if target.required or target.caps.available:
            out.engines.append(target)
        for spec in alternatives(target.caps):
            name = registry.from_spec(spec).name
            if name in seen:
                continue
            seen.add(name)
            pinned = Target(
                probed(registry.from_spec(spec)),
                origin=f"a hardware driver {target.name} lists but the kernel does not choose",
            )
            out.engines.append(pinned)
    return out


def alternatives(caps: Capabilities) -> list[str]:
    """The specs of the drivers an engine's probe lists as pinnable (``detail["alternatives"]``),
    each once, in the order listed."""
    found = caps.detail.get("alternatives")
    specs: list[str] = []
    if isinstance(found, Mapping):
        for entries in found.values():
            for entry in entries or ():
                spec = entry.get("spec") if isinstance(entry, Mapping) else None
                if isinstance(spec, str) and spec not in specs:
                    specs.append(spec)
    return specs
