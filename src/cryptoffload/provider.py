"""The Provider: validates an op, offers it to engines in priority order, lets software finish."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import Any

from cryptography.exceptions import InvalidSignature, InvalidTag

from cryptoffload import engines as _engines
from cryptoffload.counters import FOLD_AT, Cell, Counters
from cryptoffload.engines.base import Capabilities
from cryptoffload.engines.software import SoftwareEngine
from cryptoffload.errors import OffloadRequired, Unavailable
from cryptoffload.policy import Policy
from cryptoffload.validate import validate_op

log = logging.getLogger("cryptoffload")

SOFTWARE = "software"

#: Consecutive operations an engine claimed but did not offload before one warning is logged.
SILENT_FALLBACK_WINDOW = 100


class _Route:
    """One engine's place on an algorithm's route, with its size window for that algorithm."""

    __slots__ = ("denied", "engine", "high", "low", "name")

    def __init__(self, engine: Any, low: int, high: int | None, denied: bool) -> None:
        self.engine = engine
        self.name = engine.name
        self.low = low
        self.high = high
        self.denied = denied


class Provider:
    """Routes operations to ``engines`` in the order given; software is always the last resort.

    ``engines`` are spec strings (``"afalg:cbc-aes-caam"``) or engine objects. Each is probed once
    here; one that is not available is kept in :attr:`unavailable` with its reason and never
    routed to.
    """

    def __init__(self, engines: Iterable[Any] = (), policy: Policy | None = None) -> None:
        if isinstance(engines, (str, bytes)):
            engines = [engines]
        self.policy = policy if policy is not None else Policy()
        self.software: Any = None
        routed: list[Any] = []
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
        self.engines: tuple[Any, ...] = (*routed, self.software)
        self._routed = tuple(routed)
        self.counters = Counters(tuple(e.name for e in self.engines))
        self._claimed = frozenset(
            alg for e in routed for alg in self.capabilities[e.name].algorithms
        )
        self._routes: dict[str, tuple[_Route, ...]] = {}
        self._sw_cells: dict[str, Cell] = {}
        self._direct: dict[str, bool] = {}
        self._required: dict[str, bool] = {}
        self._miss_lock = threading.Lock()
        self._misses: dict[str, dict[str, int]] = {}
        self._warned: set[str] = set()

    def __repr__(self) -> str:
        return f"<Provider engines={[e.name for e in self.engines]}>"

    # -- routing ---------------------------------------------------------------------------------

    def direct(self, alg: str) -> bool:
        """True when only software can take ``alg``: primitives may then skip building an Op."""
        try:
            return self._direct[alg]
        except KeyError:
            pass
        direct = alg not in self._claimed and not self.policy.requires(alg)
        self._direct[alg] = direct
        return direct

    def software_cell(self, alg: str) -> Cell:
        """Software's counter cell for ``alg``, kept at hand for the primitives' fast paths."""
        cell = self._sw_cells[alg] = self.counters.cell(SOFTWARE, alg)
        return cell

    def count_software(self, alg: str, nbytes: int) -> None:
        """One op of ``nbytes`` that a primitive's fast path ran in software."""
        cell = self._sw_cells.get(alg) or self.software_cell(alg)
        pending = cell.pending
        pending.append(nbytes)
        if len(pending) > FOLD_AT:
            cell.fold()

    def route(self, alg: str) -> tuple[_Route, ...]:
        """The engines that claim ``alg``, in priority order, with their size limits."""
        try:
            return self._routes[alg]
        except KeyError:
            pass
        denied = self.policy.denies(alg)
        routes = []
        for engine in self._routed:
            caps = self.capabilities[engine.name]
            if alg in caps.algorithms:
                low, high = self.policy.limits(alg, caps.min_size)
                routes.append(_Route(engine, low, high, denied))
        result = self._routes[alg] = tuple(routes)
        return result

    def run(self, op: Any) -> Any:
        """Validate ``op``, run it on the first engine that takes it, else on software."""
        validate_op(op)
        alg = op.alg
        counters = self.counters
        declines: dict[str, str] = {}
        size = op.size
        routes = self._routes.get(alg)
        if routes is None:
            routes = self.route(alg)
        for route in routes:
            name = route.name
            if route.denied:
                reason = "denied"
            elif size < route.low:
                reason = "below-threshold"
            elif route.high is not None and size > route.high:
                reason = "too-large"
            else:
                try:
                    result = route.engine.run(op)
                except Unavailable as exc:
                    reason = exc.reason
                except (InvalidTag, InvalidSignature):
                    # A failed check is the engine's answer, not a reason to ask software.
                    counters.count(name, alg, size)
                    if self._misses:
                        self._hit(name)
                    raise
                except Exception as exc:
                    counters.fault(name, alg)
                    log.debug("engine %s faulted on %s: %s", name, alg, type(exc).__name__)
                    declines[name] = "fault"
                    self._miss(name, "fault")
                    continue
                else:
                    counters.count(name, alg, size)
                    if self._misses:
                        self._hit(name)
                    return result
            counters.decline(name, alg, reason)
            declines[name] = reason
            self._miss(name, reason)
        required = self._required.get(alg)
        if required is None:
            required = self._required[alg] = self.policy.requires(alg)
        if required:
            raise OffloadRequired(alg, declines)
        try:
            return self.software.run(op)
        finally:
            # Software's answer counts whether it is a result or a rejection (bad tag, bad
            # signature, undecryptable ciphertext): the op was done either way.
            counters.count(SOFTWARE, alg, size)

    def software_finished(self, alg: str, size: int, reason: str) -> None:
        """Account for an op that software did outside :meth:`run` although engines claim ``alg``.

        Used by streaming contexts that could not be expressed as one engine op: each engine on
        the route gets a decline for ``reason``, and a policy that requires offload still raises.
        """
        for route in self.route(alg):
            self.counters.decline(route.name, alg, reason)
            self._miss(route.name, reason)
        if self.policy.requires(alg):
            raise OffloadRequired(alg, {route.name: reason for route in self.route(alg)})
        self.counters.count(SOFTWARE, alg, size)

    # -- running hashes and MACs held by an engine --------------------------------------------

    def open_stream(self, op: Any, size: int) -> tuple[str, Any, int | None] | dict[str, str]:
        """A hash or MAC state held by the first engine on ``op.alg``'s route that keeps one.

        ``op`` carries the algorithm and key (its data is ignored); ``size`` is what the stream
        holds so far. Returns ``(engine name, stream, the engine's max_size for the algorithm or
        None)`` (see ``open_stream`` in engines/base.py); the declines of engines passed over are
        counted. When no engine takes it, returns why each engine on the route did not (a fault
        is counted here, a decline is not): the caller finishes in software through
        :meth:`stream_software` with that mapping.
        """
        passed: dict[str, str] = {}
        for route in self.route(op.alg):
            opener = getattr(route.engine, "open_stream", None)
            if route.denied:
                reason = "denied"
            elif opener is None:
                reason = "streaming"
            elif size < route.low:
                reason = "below-threshold"
            elif route.high is not None and size > route.high:
                reason = "too-large"
            else:
                try:
                    stream = opener(op)
                except Unavailable as exc:
                    reason = exc.reason
                except Exception as exc:
                    self.stream_fault(route.name, op.alg, exc)
                    reason = "fault"
                else:
                    for name, why in passed.items():
                        if why != "fault":
                            self.counters.decline(name, op.alg, why)
                            self._miss(name, why)
                    return route.name, stream, route.high
            passed[route.name] = reason
        return passed

    def stream_done(self, name: str, alg: str, size: int) -> None:
        """Count a stream that engine ``name`` finished: one op of ``size`` bytes."""
        self.counters.count(name, alg, size)
        if self._misses:
            self._hit(name)

    def stream_fault(self, name: str, alg: str, exc: BaseException) -> None:
        """Count a fault of engine ``name`` while it held a stream (software then redoes it)."""
        self.counters.fault(name, alg)
        log.debug("engine %s faulted on a %s stream: %s", name, alg, type(exc).__name__)
        self._miss(name, "fault")

    def stream_software(self, alg: str, size: int, declines: dict[str, str]) -> None:
        """Count the software op that finished a stream no engine kept (``declines``: why, by
        engine: from :meth:`open_stream`, or the one engine that gave the stream up).

        A fault was counted when it happened; any other reason is counted here as a decline.
        A policy that requires offload raises instead.
        """
        for name, reason in declines.items():
            if reason != "fault":
                self.counters.decline(name, alg, reason)
                self._miss(name, reason)
        if self.policy.requires(alg):
            raise OffloadRequired(alg, dict(declines))
        self.counters.count(SOFTWARE, alg, size)

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


def current() -> Provider:
    """The provider in force here: the innermost ``using`` block's, else the default."""
    return _current.get() or default_provider()


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
