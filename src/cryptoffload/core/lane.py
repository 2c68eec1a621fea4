"""An algorithm's lane through a provider: routing, fallback, counting; and which provider is
in force (an explicit one, the innermost ``using`` block's, or the process default)."""

from __future__ import annotations

import _thread  # its allocate_lock is threading.Lock, without threading's import
import contextlib
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from cryptoffload.core._log import log
from cryptoffload.core.counters import FOLD_AT, Cell
from cryptoffload.core.directpath import CURRENT, DEFAULT_BOX, LaneCore, note_using
from cryptoffload.core.ops import CHECK_FAILURES, Op, is_answer
from cryptoffload.core.validate import validate_op
from cryptoffload.devicekey import DeviceKeyError
from cryptoffload.engines.base import Engine
from cryptoffload.engines.software import SoftwareEngine
from cryptoffload.errors import OffloadRequired, Unavailable

if TYPE_CHECKING:
    from cryptoffload.core.adaptive import Adaptive
    from cryptoffload.core.counters import Counters
    from cryptoffload.core.crosscheck import Check, Sampled
    from cryptoffload.core.policy import Policy
    from cryptoffload.engines.base import Capabilities


SOFTWARE = "software"


class Provider(Protocol):
    """What a lane reads of its provider (:class:`cryptoffload.provider.Provider` is the one)."""

    policy: Policy
    counters: Counters
    capabilities: dict[str, Capabilities]
    cross_check: float
    watch: FallbackWatch
    software: Engine
    _routed: tuple[Engine, ...]
    adaptive_clock: Callable[[], int] | None
    adaptive_sampler: Callable[[], bool] | None

    def lane(self, alg: str) -> Lane: ...


class FallbackWatch:
    """Logs one warning when an engine has offloaded none of the last ``window`` operations it
    claimed (declined, held back or failed them all), naming the reasons; an answer resets it."""

    def __init__(self, window: int) -> None:
        self.window = window
        self._lock = _thread.allocate_lock()
        #: Engine -> reasons since its last answer (empty when every engine is answering).
        self.misses: dict[str, dict[str, int]] = {}
        self._warned: set[str] = set()

    def hit(self, name: str) -> None:
        """Engine ``name`` answered an operation."""
        if name in self.misses:
            with self._lock:
                self.misses.pop(name, None)
                self._warned.discard(name)

    def miss(self, name: str, reason: str, count: int = 1) -> None:
        """Engine ``name`` did not take ``count`` operations it claims, for ``reason``."""
        with self._lock:
            reasons = self.misses.setdefault(name, {})
            reasons[reason] = reasons.get(reason, 0) + count
            if sum(reasons.values()) < self.window or name in self._warned:
                return
            self._warned.add(name)
            summary = ", ".join(
                f"{r} x{n}" for r, n in sorted(reasons.items(), key=lambda i: -i[1])
            )
        log.warning(
            "engine %s has offloaded none of the last %d operations it claimed (%s); "
            "software did them all",
            name,
            self.window,
            summary,
        )


class _Route:
    """One engine's place on an algorithm's route: its size window and its counter cell."""

    __slots__ = (
        "ceiling",
        "cell",
        "denied",
        "disabled",
        "engine",
        "floor",
        "high",
        "low",
        "name",
        "pending",
    )

    def __init__(self, engine: Engine, low: int, high: int | None, denied: bool, cell: Cell):
        self.engine = engine
        self.name = engine.name
        self.low = low
        self.high = high
        self.denied = denied
        self.disabled = False
        self.cell = cell
        self.pending = cell.pending
        # One chained comparison admits an op: floor <= size <= ceiling (denied: never).
        self.floor = _NEVER if denied else low
        self.ceiling = high if high is not None else sys.maxsize

    def disable(self) -> None:
        """Take no more ops (a cross-check found a wrong result); they are declined "disabled"."""
        self.disabled = True
        self.floor = _NEVER

    def session(self, op: Op) -> Any:
        """The session this route's engine keeps for ``op`` (``session(op)``, see
        :mod:`cryptoffload.engines.base`), or None: it keeps none, or failed making one (logged;
        not an op, so not counted: the ops then go the ordinary way, which counts them)."""
        try:
            return self.engine.session(op)
        except Exception as exc:
            log.debug("engine %s keeps no session for %s: %s", self.name, op.alg, exc)
            return None

    def admits(self, size: int) -> bool:
        """Whether the policy lets this engine be offered an op of ``size`` bytes (``Lane.run``
        inlines the test)."""
        return self.floor <= size <= self.ceiling

    def refusal(self, size: int) -> str | None:
        """Why the policy holds an op of ``size`` bytes back from this engine, or None."""
        if self.disabled:
            return "disabled"
        if self.denied:
            return "denied"
        if size < self.low:
            return "below-threshold"
        if self.high is not None and size > self.high:
            return "too-large"
        return None


_NEVER = sys.maxsize + 1


def _aead_stream_refusal(route: _Route, opener: Any) -> str | None:
    """Why an AEAD stream is not asked of ``route``'s engine (``opener``: its
    ``open_aead_stream``, or None), judged at size 0; None: ask it. A floor of 0 or less (no
    min_size, not denied or disabled) admits it with no more tests."""
    if opener is None:
        return "streaming"
    return None if route.floor <= 0 else route.refusal(0)


_MISSED = object()  # no engine took the op
#: ``Lane._sample_due`` set by a direct path that hands the lane an op to sample the engines on.
SAMPLE_NOW = 2


class Lane(LaneCore):
    """One algorithm's way through one provider: what a primitive keeps between operations.

    ``software_only`` is true when no engine claims the algorithm and the policy does not
    require offload: the primitive may then call OpenSSL itself, skip building an Op, and
    record the operation with :meth:`count`. Otherwise it builds an Op and calls :meth:`run`.
    Every fallback decision (policy windows, declines, faults, ``require``) is taken here.

    The direct path (the hottest primitives, see ``AESGCM.encrypt``): an op of ``n`` bytes with
    ``n < direct_below or n > direct_above`` (every size on a software-only lane; the sizes
    the policy holds back from every engine otherwise; none when offload is required) may run
    in OpenSSL directly and be recorded with ``direct(n)``, as long as
    ``len(direct_q) < direct_room``; otherwise the primitive takes its ordinary path, whose
    :meth:`in_force` folds the record (and, with adaptive routing, takes that op as a sample).
    """

    __slots__ = (
        "_cell",
        "_pending",
        "_reopen",
        "_sample_due",
        "adaptive",
        "aead_streams",
        "alg",
        "keep_above",
        "keep_below",
        "native",
        "required",
        "routes",
        "software_only",
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
            if alg in caps.algorithms and not policy.excludes(alg, engine.name):
                low, high = policy.limits(alg, caps.min_size, engine.name)
                cell = counters.cell(engine.name, alg)
                route = _Route(engine, low, high, denied, cell)
                if provider.cross_check:
                    route.engine = _sampled(provider, route, alg)
                routes.append(route)
        self.routes: tuple[_Route, ...] = tuple(routes)
        self.required = policy.requires(alg)
        #: Software is OpenSSL (the default software engine): primitives may then call
        #: `cryptography` themselves. False when an engine named "software" stands in for it
        #: (``Provider([..., stand_in])``): every op it answers then goes through :meth:`run`.
        self.native = type(provider.software) is SoftwareEngine
        self.software_only = not routes and not self.required and self.native
        #: Some engine on the route can keep an AEAD stream (``open_aead_stream``): without one,
        #: ``Cipher``'s GCM contexts skip building the Op to offer.
        self.aead_streams = any(
            callable(getattr(route.engine, "open_aead_stream", None)) for route in routes
        )
        self._cell = counters.cell(SOFTWARE, alg)
        self._pending = self._cell.pending
        #: Record one software op of n bytes, nothing more (a C call): for a primitive that
        #: passes through :meth:`in_force` on every operation, which keeps the record short.
        #: ``tally(~n)`` records an op of n bytes that the policy kept from every engine (see
        #: :meth:`holds_back`): the engines' declines are counted when the cell folds.
        self.tally_q = self._pending  # the compiled Cipher path appends here itself
        self.tally = self.tally_q.append
        #: The direct path's record: a software-only lane's plain sizes; otherwise the sizes
        #: held back from every engine, whose declines are counted when the cell folds.
        self.direct_q = self._pending if self.software_only else self._cell.held
        self.direct = self.direct_q.append
        self._sample_due = False
        self._reopen = False
        self.adaptive: Adaptive | None = None
        settings = policy.adaptive
        open_routes = [r for r in routes if not r.denied]
        if settings is not None and open_routes and not self.required:
            from cryptoffload.core.adaptive import Adaptive  # here: off unless a policy asks

            self.adaptive = Adaptive(
                settings,
                min(r.low for r in open_routes),
                self._move,
                clock=getattr(provider, "adaptive_clock", None),
                sampler=getattr(provider, "adaptive_sampler", None),
            )
            open_routes[0].cell.adaptive = self.adaptive.as_dict
            self._move(self.adaptive.threshold)
        self.direct_room = self.adaptive.step() if self.adaptive is not None else FOLD_AT
        self.set_holds()
        if routes:
            self._cell.on_held_log = self._count_held_log
            self._cell.on_marked_log = self._count_marked_log

    def __repr__(self) -> str:
        return f"<Lane {self.alg} engines={[r.name for r in self.routes]}>"

    def set_holds(self) -> None:
        """Work out the sizes the policy keeps from every engine on the route (after a route's
        window changes, e.g. one disabled by the cross-check)."""
        routes = self.routes
        if self.required or not routes:
            # Nothing is held back: offload is required, or no engine claims the algorithm
            # (software_only, which primitives check first).
            self.keep_below, self.keep_above = -1, _NEVER
        else:
            self.keep_below = min(route.floor for route in routes)
            self.keep_above = max(route.ceiling for route in routes)
        if not self.native:
            # A stand-in answers for software: no primitive calls OpenSSL itself (no held
            # sizes, no direct path); run() still sends the kept sizes straight to software.
            self.hold_below = self.direct_below = -1
            self.hold_above = self.direct_above = _NEVER
        elif self.required or not routes:
            self.hold_below, self.hold_above = -1, _NEVER
            # The direct path: none when offload is required, else every size (n > -1: both
            # bounds small ints, which CPython 3.11 compares on its fastest path).
            self.direct_below = -1
            self.direct_above = _NEVER if self.required else -1
        else:
            self.hold_below = self.direct_below = self.keep_below
            self.hold_above = self.direct_above = self.keep_above
        self.set_engine_route()

    def set_engine_route(self) -> None:
        """Work out the engine route: the first route, when its engine keeps sessions (an
        optional ``session(op)``, see :mod:`cryptoffload.engines.base`) and nothing per op needs
        this lane's Python: no adaptive routing (its samples and timings), no cross-check (its
        wrapper). The compiled paths then hand an op the policy offers that engine straight
        to its session (an AEAD object's per key, a ``Cipher`` stream's, a hash's or HMAC's per
        algorithm), count the answer in the route's record, and call :meth:`engine_after` or
        :meth:`engine_failed` for the rest; every decision stays this lane's."""
        route = self.routes[0] if self.routes else None
        provider = self.provider
        if (
            route is None
            or self.adaptive is not None
            or getattr(provider, "cross_check", 0)
            or not callable(getattr(route.engine, "session", None))
        ):
            self.engine_route = None
            self.engine_floor, self.engine_ceiling = _NEVER, -1
            self.engine_pending = None
        else:
            self.engine_route = route
            self.engine_floor, self.engine_ceiling = route.floor, route.ceiling
            self.engine_pending = route.pending
        watch = getattr(provider, "watch", None)
        self.watch_misses = watch.misses if watch is not None else {}

    def engine_after(self, route: _Route) -> None:
        """After the engine route counted an answer in ``route``'s record: fold the record if
        it is due, and end the watch's run of misses for its engine."""
        if len(route.pending) > FOLD_AT:
            route.cell.fold()
        watch = self.provider.watch
        if watch.misses:
            watch.hit(route.name)

    def engine_failed(self, route: _Route, op: Op, exc: BaseException) -> Any:
        """``op``, which ``route``'s engine raised ``exc`` on by the engine route: settled as
        :meth:`run` settles it (an answer or a device key's refusal raised; a decline or a fault
        counted), then offered to the engines after it, then software."""
        declines: dict[str, str] = {}
        if self.settle(route, op, declines, False, exc):
            raise exc
        routes = self.routes
        after = routes[routes.index(route) + 1 :] if route in routes else routes
        result = self._offer(op, op.size, declines, False, after)
        if result is _MISSED:
            return self.software_answer(op, declines)
        return result

    def _move(self, threshold: int) -> None:
        """Adaptive routing moved the threshold: the engines open to the algorithm (not
        denied, not disabled) take sizes from ``threshold`` up."""
        for route in self.routes:
            if not route.denied and not route.disabled:
                route.low = route.floor = threshold
        self.set_holds()

    def holds_back(self, size: int) -> bool:
        """Whether the policy keeps an op of ``size`` bytes from every engine on the route.

        A primitive may then run the op in software itself, as on a software-only lane, and
        record it with ``tally(~size)``: each engine's decline (below-threshold, too-large,
        denied, disabled) is counted from that record, as :meth:`run` counts it, without the
        Op, the validation and the software engine's per-op set-up. The hot paths inline the
        test: ``size < lane.hold_below or size > lane.hold_above``.
        """
        return size < self.hold_below or size > self.hold_above

    def _count_held_log(self, log: Any) -> tuple[int, int]:
        """Count the declines of ops held back from every engine (the software cell's fold of
        the direct path's record, every size in it such an op): per route, the reason
        :meth:`_Route.refusal` gives, from one pass over the sizes (``drain_below``) with no
        int object made per size. Drains ``log``; returns (ops, bytes) for the software cell."""
        n, total, below = log.drain_below(self._held_edges())
        self._declined_at_edges(n, below)
        return n, total

    def _count_marked_log(self, log: Any) -> tuple[int, int]:
        """:meth:`_count_held_log` for the software cell's own record, where held-back ops are
        marked ``~size`` among plain ones (``tally``)."""
        n, total, held, below = log.drain_marked(self._held_edges())
        if held:
            self._declined_at_edges(held, below)
        return n, total

    def _held_edges(self) -> list[int]:
        """Per route, its window's edges: the sizes below ``low``, and up to ``high`` + 1."""
        edges: list[int] = []
        for route in self.routes:
            edges.append(route.low)
            edges.append(route.high + 1 if route.high is not None else _NEVER)
        return edges

    def _declined_at_edges(self, n: int, below: list[int]) -> None:
        """Add the declines of ``n`` held-back ops to each route's cell; ``below`` has, per
        edge of :meth:`_held_edges`, how many of them were below it."""
        if self.adaptive is not None and self.native and not self._reopen:
            self._hand_held_sample()
        watch = self.provider.watch
        for i, route in enumerate(self.routes):
            if route.disabled:
                reasons = {"disabled": n}
            elif route.denied:
                reasons = {"denied": n}
            else:
                under, above = below[2 * i], n - below[2 * i + 1]
                # An op recorded before the window moved may now fit it: "unsupported".
                reasons = {"below-threshold": under, "too-large": above}
                reasons["unsupported"] = n - under - above
            cell = route.cell
            with cell.lock:
                for reason, k in reasons.items():
                    if k:
                        cell.declined[reason] = cell.declined.get(reason, 0) + k
            for reason, k in reasons.items():
                if k:
                    watch.miss(route.name, reason, k)

    def _hand_held_sample(self) -> None:
        """Adaptive routing, at a fold that found held-back ops: close the hold window until
        the lane's next op, so that it comes to :meth:`run` as a due op whatever primitive
        runs it (hashes, MACs and ``Cipher`` keep no countdown of their own: without this
        their held-back sizes would never be measured, and the threshold could never move
        down). One due op per fold (every ``FOLD_AT`` ops at most)."""
        self._reopen = True
        if not self._sample_due:
            self._sample_due = True
        self.hold_below, self.hold_above = -1, _NEVER

    def in_force(self, explicit: Provider | None) -> Lane:
        """This lane if its provider is the one in force (``explicit``, else the innermost
        ``using`` block's, else the default), otherwise that provider's lane for the algorithm.

        The hottest primitives call it before every operation and then :attr:`tally`; it keeps
        the tally's record short (see :mod:`cryptoffload.counters`).
        """
        provider = explicit or _current.get() or _default_box[0] or default_provider()
        if provider is not self.provider:
            return provider.lane(self.alg)
        queued = len(self.direct_q)
        if len(self._pending) > FOLD_AT or queued >= self.direct_room:
            adaptive = self.adaptive
            if adaptive is not None:
                if queued >= self.direct_room:
                    self._sample_due = True  # this op is due: the direct ops before it were not
                if queued < FOLD_AT and len(self._pending) <= FOLD_AT:
                    self.direct_room = queued + adaptive.step()  # the next due op; no fold
                    return self
                self.direct_room = adaptive.step()
            self._cell.fold()
        return self

    def fold_due(self) -> None:
        """Fold the record if it is long: for a primitive that records with :attr:`tally` and
        does not pass through :meth:`in_force` per op (``Cipher``'s contexts, at creation)."""
        if len(self._pending) > FOLD_AT:
            self._cell.fold()

    def count(self, nbytes: int) -> None:
        """One operation of ``nbytes`` that the primitive ran in software itself (``~size``:
        one the policy held back from every engine, as for :attr:`tally`); folds when due."""
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
        if self.adaptive is not None:
            return self._run_adaptive(op)
        size = op.size
        if size < self.keep_below or size > self.keep_above:
            return self._kept(op, size)
        declines: dict[str, str] = {}
        result = self._offer(op, size, declines, False)
        if result is _MISSED:
            return self.software_answer(op, declines)
        return result

    def _offer(
        self,
        op: Op,
        size: int,
        declines: dict[str, str],
        sample: bool,
        routes: Sequence[_Route] | None = None,
    ) -> Any:
        """``op``'s result from the first engine on the route (or on ``routes``, a part of it)
        that takes it, or _MISSED (each engine's reason in ``declines``, counted). ``sample``:
        adaptive routing measures the engines on an op below the threshold; only their hard
        limits hold (max_size, deny, a cross-check's disable)."""
        for route in self.routes if routes is None else routes:
            if (route.floor <= size or (sample and not route.disabled and not route.denied)) and (
                size <= route.ceiling
            ):
                try:
                    result = route.engine.run(op)
                except Exception as exc:
                    if self.settle(route, op, declines, False, exc):
                        raise
                    continue
                else:
                    # answered(), inline: this is every offloaded op's way back.
                    pending = route.pending
                    pending.append(size)
                    if len(pending) > FOLD_AT:
                        route.cell.fold()
                    if self.provider.watch.misses:
                        self.provider.watch.hit(route.name)
                    return result
            else:
                self.refuse(route, size, declines)
        return _MISSED

    # -- the routing core: every way an op is run (run, run_batch, the asyncio lane) takes its
    # decisions here, so that a decline rule or a counter is changed in one place -------------

    def admits(self, route: _Route, size: int, declines: dict[str, str]) -> bool:
        """Whether ``route``'s engine is to be offered an op of ``size`` bytes; if not, its
        decline is counted and its reason put in ``declines`` (by engine name)."""
        if route.floor <= size <= route.ceiling:  # _Route.admits, inline: once per op and route
            return True
        self.refuse(route, size, declines)
        return False

    def refuse(self, route: _Route, size: int, declines: dict[str, str]) -> None:
        """Count the policy's decline, on ``route``'s behalf, of an op of ``size`` bytes."""
        self.declined(route, declines, route.refusal(size) or "unsupported")

    def declined(self, route: _Route, declines: dict[str, str], reason: str) -> None:
        """Count ``route``'s engine not taking an op, for ``reason`` (also put in ``declines``)."""
        route.cell.decline(reason)
        declines[route.name] = reason
        self.provider.watch.miss(route.name, reason)

    def answered(self, route: _Route, size: int) -> None:
        """Count ``route``'s engine answering an op of ``size`` bytes."""
        route.cell.add(size)
        provider = self.provider
        if provider.watch.misses:
            provider.watch.hit(route.name)

    def settle(self, route: _Route, op: Op, declines: dict[str, str], ok: bool, value: Any) -> bool:
        """Count ``route``'s engine's outcome for ``op``: ``value`` is its result (``ok``) or
        the exception it raised. True: that is ``op``'s answer (a result, a failed check, a
        device key no one else can use); False: the next engine or software goes on (a decline,
        its reason in ``declines``; a fault)."""
        if ok:
            self.answered(route, op.size)
            return True
        if isinstance(value, Unavailable):
            self.declined(route, declines, value.reason)
            return False
        if isinstance(value, CHECK_FAILURES):
            # A failed check is the engine's answer, not a reason to ask software.
            self.answered(route, op.size)
            return True
        if isinstance(value, DeviceKeyError):
            return True  # the device key's own engine cannot open it: nobody else can
        if is_answer(op, value):  # e.g. an RSA ciphertext that does not decrypt
            self.answered(route, op.size)
            return True
        route.cell.fault()
        log.debug("engine %s faulted on %s: %s", route.name, op.alg, type(value).__name__)
        declines[route.name] = "fault"
        self.provider.watch.miss(route.name, "fault")
        return False

    def software_answer(self, op: Op, declines: dict[str, str]) -> Any:
        """Software's answer to ``op``, which no engine took (``declines`` says why, by engine):
        OffloadRequired if the policy requires offload; counted whether a result or a
        rejection (bad tag, bad signature, undecryptable ciphertext: the op was done)."""
        if self.required:
            raise OffloadRequired(self.alg, declines)
        try:
            result = self.provider.software.run(op)
        except DeviceKeyError:
            raise  # a key only its device can use: nothing was done
        except BaseException:
            self._cell.add(op.size)
            raise
        self._cell.add(op.size)
        return result

    def _kept(self, op: Op, size: int) -> Any:
        """Software's answer to ``op``, whose size the policy keeps from every engine on the
        route: no engine is asked; the record ``~size`` has their declines counted when the
        cell folds (see :meth:`holds_back`), so a kept op costs what software alone does."""
        try:
            result = self.provider.software.run(op)
        except DeviceKeyError:
            raise
        except BaseException:
            self.count(~size)
            raise
        self.count(~size)
        return result

    def _run_adaptive(self, op: Op) -> Any:
        """:meth:`run` with adaptive routing. A due op (the sampler's, or one the direct path
        handed over) is timed: alternately down the other path (a sample) and down its own;
        other ops take their path untimed. Ops below the threshold are recorded as the
        direct path records them (``tally(~size)``: the engines' declines counted at the fold).
        """
        adaptive = self.adaptive
        assert adaptive is not None
        size = op.size
        if self._reopen:  # a fold closed the hold window for this op: open it again
            self._reopen = False
            self.set_holds()
        # Due: handed over by the direct path (which asked take() already) or a fold, or the
        # countdown's (or an injected sampler's).
        handed = self._sample_due
        if handed:
            self._sample_due = False
            due = True
        elif adaptive.sampler is None:  # the countdown: one decrement an op, a draw when due
            adaptive.countdown -= 1
            if adaptive.countdown > 0:  # most ops: their own path, untimed, as run() does
                if size < self.keep_below or size > self.keep_above:
                    return self._kept(op, size)
                why: dict[str, str] = {}
                result = self._offer(op, size, why, False)
                return self.software_answer(op, why) if result is _MISSED else result
            due = adaptive.due_now() and adaptive.take(size)
        else:
            due = adaptive.sampler() and adaptive.take(size)
        held = size < self.keep_below or size > self.keep_above
        # Above every engine's max_size no sample can be taken: its own path is timed.
        # SAMPLE_NOW: the direct path has flipped already (it times software's turns itself).
        sample = due and (handed is SAMPLE_NOW or adaptive.flip()) and size <= self.keep_above
        declines: dict[str, str] = {}
        clock = adaptive.clock
        if held == sample:  # the engines: their sizes, or a sample of a class below them
            start = clock() if due else 0
            result = self._offer(op, size, declines, sample)
            if result is not _MISSED:
                if due:
                    adaptive.record(size, adaptive.ENGINE, clock() - start, sample)
                return result
            due = sample = False  # no engine measured: software answers, untimed
        elif sample:  # software, measured on an op of the engines' sizes
            for route in self.routes:
                route.cell.decline("adaptive-sample")
                declines[route.name] = "adaptive-sample"
        elif held:  # software, as on the direct path
            start = clock() if due else 0
            result = self._kept(op, size)
            if due:
                adaptive.record(size, adaptive.SOFTWARE, clock() - start, False)
            return result
        start = clock() if due else 0
        result = self.software_answer(op, declines)
        if due:
            adaptive.record(size, adaptive.SOFTWARE, clock() - start, sample)
        return result

    def run_batch(self, ops: Sequence[Op]) -> list[Any]:
        """Run ``ops`` (all of this lane's algorithm) as one batch: per item, in order, its
        result or the exception that is its answer (a failed tag or signature, an invalid
        input, OffloadRequired).

        An engine with ``run_batch`` is handed every item its size window admits in one call;
        an engine without it is offered them one by one. Items an engine declines or fails go on
        to the next engine, then to software, as :meth:`run` would take each alone, and every
        item is counted as :meth:`run` counts it.
        """
        results: list[Any] = [None] * len(ops)
        waiting: list[int] = []
        for i, op in enumerate(ops):
            try:
                validate_op(op)
            except Exception as exc:  # the item's own answer: no engine sees it
                results[i] = exc
            else:
                waiting.append(i)
        declines: dict[int, dict[str, str]] = {i: {} for i in waiting}
        for route in self.routes:
            if not waiting:
                break
            admitted = [i for i in waiting if self.admits(route, ops[i].size, declines[i])]
            answers = _attempt_all(route.engine, [ops[i] for i in admitted])
            for i, answer in zip(admitted, answers, strict=True):
                if not isinstance(answer, Exception):
                    self.answered(route, ops[i].size)
                elif not self.settle(route, ops[i], declines[i], False, answer):
                    continue
                results[i] = answer
                declines.pop(i)
            waiting = [i for i in waiting if i in declines]
        for i in waiting:
            try:
                results[i] = self.software_answer(ops[i], declines[i])
            except Exception as exc:  # software's rejection (or OffloadRequired) is its answer
                results[i] = exc
        return results

    # -- work that software finishes outside run(): streaming contexts ------------------------

    def allow_software(self, declines: Mapping[str, str]) -> None:
        """Raise OffloadRequired if the policy requires offload (``declines``: why, by engine)."""
        if self.required:
            raise OffloadRequired(self.alg, dict(declines))

    def declines_for(self, reason: str) -> dict[str, str]:
        """Every engine on the route declining for one ``reason`` (e.g. ``streaming``)."""
        routes = self.routes
        if not routes:  # a software-only lane: no comprehension to run (a new dict all the same)
            return {}
        return {route.name: reason for route in routes}

    def finish_in_software(self, size: int, declines: Mapping[str, str]) -> None:
        """Count an op of ``size`` that software did outside :meth:`run`; ``declines`` says why
        each engine did not (a fault was counted when it happened; other reasons are counted
        here). A policy that requires offload raises OffloadRequired instead."""
        if declines:
            provider = self.provider
            cells = {route.name: route.cell for route in self.routes}
            for name, reason in declines.items():
                if reason != "fault":
                    (cells.get(name) or provider.counters.cell(name, self.alg)).decline(reason)
                    provider.watch.miss(name, reason)
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

        def why(route: _Route, opener: Any) -> str | None:
            return route.refusal(size) or ("streaming" if opener is None else None)

        return self._open("open_stream", op, why)

    def open_aead_stream(
        self, op: Op, raised: BaseException | None = None
    ) -> tuple[str, Any, int | None] | dict[str, str]:
        """An AEAD state (``Cipher``'s GCM) held by the first engine on the route that keeps
        one (``open_aead_stream`` in engines/base.py); returns as :meth:`open_stream` does.

        An engine without the member declines ``streaming`` whatever the policy says (as before
        engines could keep this state). A stream's size is unknown when it opens: the policy's
        window is judged at 0 bytes (a min_size keeps streams from that engine); its max_size
        is the most the context sends the engine before software takes over. ``raised``: what
        the first engine asked already raised (the compiled path asked it), taken as its answer.
        """
        return self._open("open_aead_stream", op, _aead_stream_refusal, raised)

    def _open(
        self, member: str, op: Op, why: Any, raised: BaseException | None = None
    ) -> tuple[str, Any, int | None] | dict[str, str]:
        """The first route whose engine's ``member`` opens a stream for ``op``; ``why(route,
        opener)`` is the reason to pass a route over before asking it (None: ask); ``raised``,
        if given, is the first asked engine's answer (it is not asked again)."""
        passed: dict[str, str] = {}
        for route in self.routes:
            opener = getattr(route.engine, member, None)
            reason = why(route, opener)
            if reason is None:
                try:
                    if raised is not None:
                        exc, raised = raised, None
                        raise exc
                    stream = opener(op)
                except Unavailable as exc:
                    reason = exc.reason
                except Exception as exc:
                    self.stream_fault(route.name, exc)
                    reason = "fault"
                else:
                    for name, passed_why in passed.items():
                        if passed_why != "fault":
                            self.provider.counters.cell(name, self.alg).decline(passed_why)
                            self.provider.watch.miss(name, passed_why)
                    return route.name, stream, route.high
            passed[route.name] = reason
        return passed

    def stream_done(self, name: str, size: int) -> None:
        """Count a stream that engine ``name`` finished: one op of ``size`` bytes."""
        self.provider.counters.cell(name, self.alg).add(size)
        if self.provider.watch.misses:
            self.provider.watch.hit(name)

    def stream_fault(self, name: str, exc: BaseException) -> None:
        """Count a fault of engine ``name`` while it held a stream (software then redoes it)."""
        self.provider.counters.cell(name, self.alg).fault()
        log.debug("engine %s faulted on a %s stream: %s", name, self.alg, type(exc).__name__)
        self.provider.watch.miss(name, "fault")


def _sampled(provider: Provider, route: _Route, alg: str) -> Sampled:
    """``route``'s engine with one result in 1 / ``provider.cross_check`` redone in software; a
    mismatch disables the route (the engine for ``alg``), is counted and logged, and software
    (or the next engine) answers that op."""
    from cryptoffload.core.crosscheck import Sampled  # here: cross-checking is off by default

    engine = route.engine

    def on_mismatch(op: Op, check: Check) -> None:
        route.disable()
        provider.lane(alg).set_holds()
        log.error(
            "cross-check: engine %s returned a wrong %s result (%d-byte payload: %s); "
            "software answered it, and %s gets no more %s operations from this provider",
            route.name,
            alg,
            op.size,
            check.detail,
            route.name,
            alg,
        )

    return Sampled(
        engine, provider.cross_check, provider.software, route.cell.crosschecked, on_mismatch
    )


def _attempt_all(engine: Engine, ops: list[Op]) -> list[Any]:
    """Each op's outcome on ``engine``: a result, or the exception it raised (a decline, an
    answer or a fault), through the engine's ``run_batch`` when it has one."""
    if not ops:
        return []
    batch = getattr(engine, "run_batch", None)
    if batch is not None:
        try:
            answers = list(batch(ops))
        except Exception as exc:  # the whole batch declined or failed
            return [exc] * len(ops)
        if len(answers) == len(ops):
            return answers
        fault = RuntimeError(f"run_batch gave {len(answers)} answers for {len(ops)} ops")
        return [fault] * len(ops)
    outcomes: list[Any] = []
    for op in ops:
        try:
            outcomes.append(engine.run(op))
        except Exception as exc:
            outcomes.append(exc)
    return outcomes


class _Unbound:
    """What a primitive holds before its first operation: a lane of no provider yet."""

    __slots__ = ("alg",)
    provider = _NO_PROVIDER = object()  # no provider's: the direct path's check never passes

    def __init__(self, alg: str) -> None:
        self.alg = alg

    def in_force(self, explicit: Provider | None) -> Lane:
        return resolve(explicit).lane(self.alg)


def unbound_lane(alg: str) -> Any:
    """A stand-in lane for ``alg`` whose :meth:`Lane.in_force` gives the real one: a primitive
    holds it until its first operation, so that no provider is built before it is needed."""
    return _Unbound(alg)


# -- which provider is in force -----------------------------------------------------------------
# The state lives here, where the hottest path reads it (Lane.in_force); the functions that
# build or check a Provider are cryptoffload.provider's, which installs the builder below.

# CURRENT (the ``using`` blocks' provider) and DEFAULT_BOX (``[the default provider]``, the one
# place it is kept) are defined with the direct path that reads them on every operation
# (cryptoffload.directpath).
_current: ContextVar[Provider | None] = CURRENT
_default_box: list[Provider | None] = DEFAULT_BOX
_default_lock = _thread.allocate_lock()
_build_default: Callable[[], Provider] | None = None


def install_default_builder(build: Callable[[], Provider]) -> None:
    """Set how the process-wide provider is built on first use (cryptoffload.provider does)."""
    global _build_default
    _build_default = build


def default_provider() -> Provider:
    """The process-wide provider: built on first use from the engines found and the policy file."""
    provider = _default_box[0]
    if provider is None:
        with _default_lock:
            provider = _default_box[0]
            if provider is None:
                if _build_default is None:
                    raise RuntimeError("no provider builder installed: import cryptoffload first")
                provider = _default_box[0] = _build_default()
    return provider


def replace_default(provider: Provider | None) -> None:
    """Make ``provider`` the process-wide one (None: build it again on next use); unchecked."""
    with _default_lock:
        _default_box[0] = provider


def resolve(provider: Provider | None = None) -> Provider:
    """The provider in force: ``provider`` if given, else the innermost ``using`` block's, else
    the default. Primitives call it on every operation, so it is kept to one expression."""
    return provider or _current.get() or _default_box[0] or default_provider()


def current() -> Provider:
    """The provider in force here: the innermost ``using`` block's, else the default."""
    return _current.get() or _default_box[0] or default_provider()


@contextlib.contextmanager
def in_force_within(provider: Provider) -> Iterator[Provider]:
    """Run a block with ``provider`` in force (context-local); unchecked: ``using`` checks."""
    note_using()
    token = _current.set(provider)
    try:
        yield provider
    finally:
        _current.reset(token)
