"""The Provider: validates an op, offers it to engines in priority order, lets software finish."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from cryptography.exceptions import InvalidSignature, InvalidTag

from cryptoffload import engines as _engines
from cryptoffload.counters import FOLD_AT, Cell, Counters
from cryptoffload.engines.base import Capabilities, Engine
from cryptoffload.engines.software import SoftwareEngine
from cryptoffload.errors import OffloadRequired, Unavailable
from cryptoffload.ops import Op
from cryptoffload.policy import Policy
from cryptoffload.validate import validate_op

log = logging.getLogger("cryptoffload")

SOFTWARE = "software"

#: Consecutive operations an engine claimed but did not offload before one warning is logged.
SILENT_FALLBACK_WINDOW = 100


class _Route:
    """One engine's place on an algorithm's route: its size window and its counter cell."""

    __slots__ = ("ceiling", "cell", "denied", "engine", "floor", "high", "low", "name", "pending")

    def __init__(self, engine: Engine, low: int, high: int | None, denied: bool, cell: Cell):
        self.engine = engine
        self.name = engine.name
        self.low = low
        self.high = high
        self.denied = denied
        self.cell = cell
        self.pending = cell.pending
        # One chained comparison admits an op: floor <= size <= ceiling (denied: never).
        self.floor = _NEVER if denied else low
        self.ceiling = high if high is not None else sys.maxsize

    def refusal(self, size: int) -> str | None:
        """Why the policy holds an op of ``size`` bytes back from this engine, or None."""
        if self.denied:
            return "denied"
        if size < self.low:
            return "below-threshold"
        if self.high is not None and size > self.high:
            return "too-large"
        return None


_NEVER = sys.maxsize + 1


class Lane:
    """One algorithm's way through one provider: what a primitive keeps between operations.

    ``software_only`` is true when no engine claims the algorithm and the policy does not
    require offload: the primitive may then call OpenSSL itself, skip building an Op, and
    record the operation with :meth:`count`. Otherwise it builds an Op and calls :meth:`run`.
    Every fallback decision (policy windows, declines, faults, ``require``) is taken here.
    """

    __slots__ = (
        "_cell",
        "_pending",
        "alg",
        "provider",
        "required",
        "routes",
        "software_only",
        "tally",
    )

    def __init__(self, provider: Provider, alg: str) -> None:
        self.provider = provider
        self.alg = alg
        policy = provider.policy
        denied = policy.denies(alg)
        counters = provider.counters
        routes = []
        for engine in provider._routed:
            caps = provider.capabilities[engine.name]
            if alg in caps.algorithms:
                low, high = policy.limits(alg, caps.min_size)
                routes.append(_Route(engine, low, high, denied, counters.cell(engine.name, alg)))
        self.routes: tuple[_Route, ...] = tuple(routes)
        self.required = policy.requires(alg)
        self.software_only = not routes and not self.required
        self._cell = counters.cell(SOFTWARE, alg)
        self._pending = self._cell.pending
        #: Record one software op of n bytes, nothing more (a C call): for a primitive that
        #: passes through :meth:`in_force` on every operation, which keeps the record short.
        self.tally = self._pending.append

    def __repr__(self) -> str:
        return f"<Lane {self.alg} engines={[r.name for r in self.routes]}>"

    def in_force(self, explicit: Provider | None) -> Lane:
        """This lane if its provider is the one in force (``explicit``, else the innermost
        ``using`` block's, else the default), otherwise that provider's lane for the algorithm.

        The hottest primitives call it before every operation and then :attr:`tally`; it keeps
        the tally's record short (see :mod:`cryptoffload.counters`).
        """
        provider = explicit or _current.get() or _default or default_provider()
        if provider is not self.provider:
            return provider.lane(self.alg)
        if len(self._pending) > FOLD_AT:
            self._cell.fold()
        return self

    def count(self, nbytes: int) -> None:
        """One operation of ``nbytes`` that the primitive ran in software itself."""
        pending = self._pending
        pending.append(nbytes)
        if len(pending) > FOLD_AT:
            self._cell.fold()

    def run(self, op: Op, checked: bool = False) -> Any:
        """Validate ``op``, run it on the first engine on the route that takes it, else software.

        ``checked=True`` is for a primitive whose every field of ``op`` it has already checked
        or derived itself (a chained Cipher context: key and IV checked when it was made, the
        IV carried on from them, the data checked in ``update``): checking again would run the
        same checks twice per op.
        """
        if not checked:
            validate_op(op)
        size = op.size
        declines: dict[str, str] = {}
        for route in self.routes:
            if route.floor <= size <= route.ceiling:
                try:
                    result = route.engine.run(op)
                except Unavailable as exc:
                    reason = exc.reason
                except (InvalidTag, InvalidSignature):
                    # A failed check is the engine's answer, not a reason to ask software.
                    self._answered(route, size)
                    raise
                except Exception as exc:
                    route.cell.fault()
                    log.debug("engine %s faulted on %s: %s", route.name, op.alg, type(exc).__name__)
                    declines[route.name] = "fault"
                    self.provider._miss(route.name, "fault")
                    continue
                else:
                    # _answered, inline: this is every offloaded op's way back.
                    pending = route.pending
                    pending.append(size)
                    if len(pending) > FOLD_AT:
                        route.cell.fold()
                    if self.provider._misses:
                        self.provider._hit(route.name)
                    return result
            else:
                reason = route.refusal(size) or "unsupported"
            route.cell.decline(reason)
            declines[route.name] = reason
            self.provider._miss(route.name, reason)
        if self.required:
            raise OffloadRequired(self.alg, declines)
        try:
            return self.provider.software.run(op)
        finally:
            # Software's answer counts whether it is a result or a rejection (bad tag, bad
            # signature, undecryptable ciphertext): the op was done either way.
            self._cell.add(size)

    def _answered(self, route: _Route, size: int) -> None:
        route.cell.add(size)
        provider = self.provider
        if provider._misses:
            provider._hit(route.name)

    # -- work that software finishes outside run(): streaming contexts ------------------------

    def allow_software(self, declines: Mapping[str, str]) -> None:
        """Raise OffloadRequired if the policy requires offload (``declines``: why, by engine)."""
        if self.required:
            raise OffloadRequired(self.alg, dict(declines))

    def declines_for(self, reason: str) -> dict[str, str]:
        """Every engine on the route declining for one ``reason`` (e.g. ``streaming``)."""
        return {route.name: reason for route in self.routes}

    def finish_in_software(self, size: int, declines: Mapping[str, str]) -> None:
        """Count an op of ``size`` that software did outside :meth:`run`; ``declines`` says why
        each engine did not (a fault was counted when it happened; other reasons are counted
        here). A policy that requires offload raises OffloadRequired instead."""
        provider = self.provider
        cells = {route.name: route.cell for route in self.routes}
        for name, reason in declines.items():
            if reason != "fault":
                (cells.get(name) or provider.counters.cell(name, self.alg)).decline(reason)
                provider._miss(name, reason)
        self.allow_software(declines)
        self._cell.add(size)

    def open_stream(self, op: Op, size: int) -> tuple[str, Any, int | None] | dict[str, str]:
        """A hash or MAC state held by the first engine on the route that keeps one.

        ``op`` carries the algorithm and key (its data is ignored); ``size`` is what the stream
        holds so far. Returns ``(engine name, stream, the policy's max_size for that engine or
        None)`` (see ``open_stream`` in engines/base.py), with the declines of the engines
        passed over counted. When no engine takes it, returns why each engine did not (a fault
        is counted here, a decline is not): pass that to :meth:`finish_in_software`.
        """
        passed: dict[str, str] = {}
        for route in self.routes:
            opener = getattr(route.engine, "open_stream", None)
            reason = route.refusal(size) or ("streaming" if opener is None else None)
            if reason is None:
                try:
                    stream = opener(op)
                except Unavailable as exc:
                    reason = exc.reason
                except Exception as exc:
                    self.stream_fault(route.name, exc)
                    reason = "fault"
                else:
                    for name, why in passed.items():
                        if why != "fault":
                            self.provider.counters.cell(name, self.alg).decline(why)
                            self.provider._miss(name, why)
                    return route.name, stream, route.high
            passed[route.name] = reason
        return passed

    def stream_done(self, name: str, size: int) -> None:
        """Count a stream that engine ``name`` finished: one op of ``size`` bytes."""
        self.provider.counters.cell(name, self.alg).add(size)
        if self.provider._misses:
            self.provider._hit(name)

    def stream_fault(self, name: str, exc: BaseException) -> None:
        """Count a fault of engine ``name`` while it held a stream (software then redoes it)."""
        self.provider.counters.cell(name, self.alg).fault()
        log.debug("engine %s faulted on a %s stream: %s", name, self.alg, type(exc).__name__)
        self.provider._miss(name, "fault")


class _Unbound:
    """What a primitive holds before its first operation: a lane of no provider yet."""

    __slots__ = ("alg",)
    provider = None

    def __init__(self, alg: str) -> None:
        self.alg = alg

    def in_force(self, explicit: Provider | None) -> Lane:
        return resolve(explicit).lane(self.alg)


def unbound_lane(alg: str) -> Any:
    """A stand-in lane for ``alg`` whose :meth:`Lane.in_force` gives the real one: a primitive
    holds it until its first operation, so that no provider is built before it is needed."""
    return _Unbound(alg)


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
        self._miss_lock = threading.Lock()
        self._misses: dict[str, dict[str, int]] = {}
        self._warned: set[str] = set()

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

    # -- the silent-fallback watch -----------------------------------------------------------------

    def _hit(self, name: str) -> None:
        if name in self._misses:
            with self._miss_lock:
                self._misses.pop(name, None)
                self._warned.discard(name)

    def _miss(self, name: str, reason: str) -> None:
        with self._miss_lock:
            reasons = self._misses.setdefault(name, {})
            reasons[reason] = reasons.get(reason, 0) + 1
            if sum(reasons.values()) < SILENT_FALLBACK_WINDOW or name in self._warned:
                return
            self._warned.add(name)
            summary = ", ".join(
                f"{r} x{n}" for r, n in sorted(reasons.items(), key=lambda i: -i[1])
            )
        log.warning(
            "engine %s has offloaded none of the last %d operations it claimed (%s); "
            "software did them all",
            name,
            SILENT_FALLBACK_WINDOW,
            summary,
        )

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


# -- which provider is in force -----------------------------------------------------------------

_current: ContextVar[Provider | None] = ContextVar("cryptoffload_provider", default=None)
_default: Provider | None = None
_default_lock = threading.Lock()


def default_provider() -> Provider:
    """The process-wide provider: built on first use from the engines found and the policy file."""
    global _default
    provider = _default
    if provider is None:
        with _default_lock:
            provider = _default
            if provider is None:
                provider = _default = Provider(_engines.discover(), Policy.from_env())
    return provider


def set_default_provider(provider: Provider | None) -> None:
    """Replace the process-wide provider (None: build it again from the machine on next use)."""
    global _default
    if provider is not None and not isinstance(provider, Provider):
        raise TypeError(f"expected a Provider or None, got {type(provider).__name__}")
    with _default_lock:
        _default = provider


def resolve(provider: Provider | None = None) -> Provider:
    """The provider in force: ``provider`` if given, else the innermost ``using`` block's, else
    the default. Primitives call it on every operation, so it is kept to one expression."""
    return provider or _current.get() or _default or default_provider()


def current() -> Provider:
    """The provider in force here: the innermost ``using`` block's, else the default."""
    return _current.get() or _default or default_provider()


@contextlib.contextmanager
def using(provider: Provider) -> Iterator[Provider]:
    """Run a block (and the tasks it starts) with ``provider`` in force; context-local."""
    if not isinstance(provider, Provider):
        raise TypeError(f"using() takes a Provider, got {type(provider).__name__}")
    token = _current.set(provider)
    try:
        yield provider
    finally:
        _current.reset(token)
