"""The Provider: the engines it was given, probed once, their lanes, counters and policy.

Which provider is in force, and how one algorithm's operations go through it, are in
:mod:`cryptoffload.lane`; the names are re-exported here, the public path."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from cryptoffload import engines as _engines
from cryptoffload.core.counters import Counters
from cryptoffload.core.lane import (
    SOFTWARE,
    FallbackWatch,
    Lane,
    current,
    default_provider,
    in_force_within,
    install_default_builder,
    replace_default,
    resolve,
    unbound_lane,
)
from cryptoffload.core.ops import Op
from cryptoffload.core.policy import Policy
from cryptoffload.engines.base import Capabilities, Engine
from cryptoffload.engines.software import SoftwareEngine

#: Consecutive operations an engine claimed but did not offload before one warning is logged.
SILENT_FALLBACK_WINDOW = 100


class Provider:
    """Routes operations to ``engines`` in the order given; software is always the last resort.

    ``engines`` are spec strings (``"afalg:cbc-aes-caam"``) or engine objects. Each is probed once
    here; one that is not available (or whose probe raised) is kept in :attr:`unavailable` with
    its reason and never routed to. An engine named ``"software"`` is not routed: it answers in
    OpenSSL's place (a stand-in, e.g. a synthetic engine in a benchmark), and every op software
    would answer then goes to it (the primitives' direct calls to OpenSSL are off). An object
    without a str ``name``, ``probe()`` or ``run(op)``, or whose probe returns anything but a
    :class:`Capabilities`, is refused with TypeError.

    ``cross_check`` (a fraction, 0 by default: off) is the share of engine results recomputed in
    software, sampled at random intervals (``1/1000``: about one in a thousand). A result that
    disagrees is replaced by software's answer, counted (``mismatches`` in the counters, and a
    fault) and logged as an error, and that engine gets no more operations of that algorithm
    from this provider (declined ``disabled``; see :meth:`disabled`). Off, it costs nothing.

    ``clock`` and ``sampler`` are for adaptive routing (a policy with ``adaptive`` on; see
    :mod:`cryptoffload.adaptive`): ``clock()`` gives nanoseconds (default
    ``time.perf_counter_ns``), ``sampler()`` says whether an op is due to be measured, asked every
    op (default: none; a countdown over random gaps gives the policy's ``sample`` share); tests
    pass their own to be deterministic.
    """

    def __init__(
        self,
        engines: Iterable[Engine | str] = (),
        policy: Policy | None = None,
        cross_check: float = 0.0,
        clock: Callable[[], int] | None = None,
        sampler: Callable[[], bool] | None = None,
    ) -> None:
        if isinstance(engines, (str, bytes)):
            engines = [engines]
        if isinstance(cross_check, bool) or not isinstance(cross_check, (int, float)):
            raise TypeError(
                f"cross_check must be a fraction of results to check, e.g. 1/1000; "
                f"got {cross_check!r}"
            )
        if not 0 <= cross_check <= 1:
            raise ValueError(
                f"cross_check must be between 0 (off) and 1 (every result), got {cross_check}"
            )
        #: The share of engine results recomputed in software (0: none).
        self.cross_check = float(cross_check)
        self.policy = policy if policy is not None else Policy()
        self.adaptive_clock = clock
        self.adaptive_sampler = sampler
        self.software: Engine | None = None
        routed: list[Engine] = []
        self.capabilities: dict[str, Capabilities] = {}
        self.unavailable: dict[str, str] = {}
        for item in engines:
            engine = _engines.from_spec(item) if isinstance(item, str) else item
            name = _engine_name(engine)
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
        self.counters = Counters(tuple(e.name for e in self.engines), checks=self.cross_check > 0)
        self._lanes: dict[str, Lane] = {}
        #: Engines that claimed operations and offloaded none of them lately.
        self.watch = FallbackWatch(SILENT_FALLBACK_WINDOW)

    def __repr__(self) -> str:
        checks = f" cross_check={self.cross_check:g}" if self.cross_check else ""
        return f"<Provider engines={[e.name for e in self.engines]}{checks}>"

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

    def disabled(self) -> dict[str, list[str]]:
        """Engine -> algorithms it gets no more operations of: a cross-check found it wrong."""
        out: dict[str, list[str]] = {}
        for alg, lane in list(self._lanes.items()):
            for route in lane.routes:
                if route.disabled:
                    out.setdefault(route.name, []).append(alg)
        return {name: sorted(algs) for name, algs in out.items()}

    def close(self) -> None:
        """Release every engine's devices and sockets."""
        for engine in self.engines:
            close = getattr(engine, "close", None)
            if callable(close):
                close()


def _engine_name(engine: Any) -> str:
    """The engine's ``name``, once its members are checked: TypeError naming what is missing
    (see :mod:`cryptoffload.engines.base` for the protocol)."""
    name = getattr(engine, "name", None)
    missing = [] if isinstance(name, str) else ["a str `name`"]
    missing += [
        call
        for member, call in (("probe", "probe()"), ("run", "run(op)"))
        if not callable(getattr(engine, member, None))
    ]
    if missing:
        what = repr(name) if isinstance(name, str) else type(engine).__name__
        raise TypeError(
            f"engine {what} is missing {', '.join(missing)}: an engine needs a str `name`, "
            f"probe() and run(op) (see cryptoffload.engines.base); got {engine!r}"
        )
    return name


def _probe(engine: Any) -> Capabilities:
    try:
        caps = engine.probe()
    except Exception as exc:  # an engine's probe must not take the provider down
        return Capabilities(available=False, reason=f"probe failed: {type(exc).__name__}: {exc}")
    if not isinstance(caps, Capabilities):
        raise TypeError(
            f"engine {engine.name!r}: probe() must return a "
            f"cryptoffload.engines.base.Capabilities, got {type(caps).__name__}"
        )
    return Capabilities(
        available=bool(caps.available),
        reason=str(getattr(caps, "reason", "")),
        algorithms=frozenset(getattr(caps, "algorithms", ())),
        min_size=dict(getattr(caps, "min_size", {}) or {}),
        detail=dict(getattr(caps, "detail", {}) or {}),
    )


# -- which provider is in force (the state is cryptoffload.lane's) -----------------------------


def _build_default() -> Provider:
    chosen = _engines.take_chosen()  # `run --engines`: checked at start-up, built at first use
    if chosen is not None:
        return Provider(chosen)
    return Provider(_engines.discover(), Policy.from_env())


install_default_builder(_build_default)


def set_default_provider(provider: Provider | None) -> None:
    """Replace the process-wide provider (None: build it again from the machine on next use)."""
    if provider is not None and not isinstance(provider, Provider):
        raise TypeError(f"expected a Provider or None, got {type(provider).__name__}")
    if provider is None:
        _engines.take_chosen()  # from the machine, as it says
    replace_default(provider)


def checked_provider(provider: Any) -> Provider | None:
    """``provider`` as a primitive or key was given it: None or a Provider, else TypeError.

    Constructors call it once, so that a wrong value is refused where it is given rather than
    at the first operation (:func:`resolve` and :meth:`Lane.in_force`, on every operation, do
    not check)."""
    if provider is None:
        return None
    if not isinstance(provider, Provider):
        raise TypeError(
            f"provider must be a cryptoffload Provider or None, got {type(provider).__name__}"
        )
    return provider


@contextlib.contextmanager
def using(provider: Provider) -> Iterator[Provider]:
    """Run a block (and the tasks it starts) with ``provider`` in force; context-local."""
    if not isinstance(provider, Provider):
        raise TypeError(f"using() takes a Provider, got {type(provider).__name__}")
    with in_force_within(provider):
        yield provider


__all__ = [
    "SILENT_FALLBACK_WINDOW",
    "SOFTWARE",
    "Lane",
    "Provider",
    "checked_provider",
    "current",
    "default_provider",
    "resolve",
    "set_default_provider",
    "unbound_lane",
    "using",
]
