"""The Provider: the engines it was given, probed once, their lanes, counters and policy.

Which provider is in force, and how one algorithm's operations go through it, are in
:mod:`cryptoffload.lane`; the names are re-exported here, the public path."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from cryptoffload import engines as _engines
from cryptoffload.counters import Counters
from cryptoffload.engines.base import Capabilities, Engine
from cryptoffload.engines.software import SoftwareEngine
from cryptoffload.lane import (
    SOFTWARE,
    FallbackWatch,
    Lane,
    current,
    default_provider,
    resolve,
    set_default_provider,
    unbound_lane,
    using,
)
from cryptoffload.ops import Op
from cryptoffload.policy import Policy

log = logging.getLogger("cryptoffload")

#: Consecutive operations an engine claimed but did not offload before one warning is logged.
SILENT_FALLBACK_WINDOW = 100


class Provider:
    """Routes operations to ``engines`` in the order given; software is always the last resort.

    ``engines`` are spec strings (``"afalg:cbc-aes-caam"``) or engine objects. Each is probed once
    here; one that is not available is kept in :attr:`unavailable` with its reason and never
    routed to.
    """

    def __init__(self, engines: Iterable[Engine | str] = (), policy: Policy | None = None) -> None:
        if isinstance(engines, (str, bytes)):
            engines = [engines]
        self.policy = policy if policy is not None else Policy()
        self.software: Engine | None = None
        routed: list[Engine] = []
        self.capabilities: dict[str, Capabilities] = {}
        self.unavailable: dict[str, str] = {}
        for item in engines:
            engine = _engines.from_spec(item) if isinstance(item, str) else item
            name = getattr(engine, "name", None)
            if not isinstance(name, str) or not callable(getattr(engine, "run", None)):
                raise TypeError(
                    f"an engine needs a str `name`, probe() and run(op); got {engine!r}"
                )
            if name == SOFTWARE:
                self.software = engine
                continue
            if name in self.capabilities or name in self.unavailable:
                raise ValueError(f"engine {name!r} is listed twice")
            caps = _probe(engine)
            self.capabilities[name] = caps
            if caps.available:
                routed.append(engine)
            else:
                self.unavailable[name] = caps.reason or "not available"
        if self.software is None:
            self.software = SoftwareEngine()
        self.capabilities[SOFTWARE] = _probe(self.software)
        self.engines: tuple[Engine, ...] = (*routed, self.software)
        self._routed = tuple(routed)
        self.counters = Counters(tuple(e.name for e in self.engines))
        self._lanes: dict[str, Lane] = {}
        #: Engines that claimed operations and offloaded none of them lately.
        self.watch = FallbackWatch(SILENT_FALLBACK_WINDOW)

    def __repr__(self) -> str:
        return f"<Provider engines={[e.name for e in self.engines]}>"

    def lane(self, alg: str) -> Lane:
        """The way ``alg`` goes through this provider (built on first use, then kept)."""
        lane = self._lanes.get(alg)
        if lane is None:
            lane = self._lanes.setdefault(alg, Lane(self, alg))
        return lane

    def run(self, op: Op) -> Any:
        """Validate ``op``, run it on the first engine that takes it, else on software."""
        lane = self._lanes.get(op.alg)
        if lane is None:
            lane = self.lane(op.alg)
        return lane.run(op)

    def close(self) -> None:
        """Release every engine's devices and sockets."""
        for engine in self.engines:
            close = getattr(engine, "close", None)
            if callable(close):
                close()


def _probe(engine: Any) -> Capabilities:
    try:
        caps = engine.probe()
    except Exception as exc:  # an engine's probe must not take the provider down
        return Capabilities(available=False, reason=f"probe failed: {type(exc).__name__}: {exc}")
    return Capabilities(
        available=bool(caps.available),
        reason=str(getattr(caps, "reason", "")),
        algorithms=frozenset(getattr(caps, "algorithms", ())),
        min_size=dict(getattr(caps, "min_size", {}) or {}),
        detail=dict(getattr(caps, "detail", {}) or {}),
    )


__all__ = [
    "SILENT_FALLBACK_WINDOW",
    "SOFTWARE",
    "Lane",
    "Provider",
    "current",
    "default_provider",
    "resolve",
    "set_default_provider",
    "unbound_lane",
    "using",
]
