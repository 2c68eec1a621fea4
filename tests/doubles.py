"""Test doubles: engines that decline, fault, or take everything, to exercise the provider."""

from __future__ import annotations

import errno
import functools
import random
import threading
from typing import Any

from cryptography.hazmat.primitives.asymmetric import padding

from cryptoffload.blocks import pkcs1
from cryptoffload.core.names import all_algorithms
from cryptoffload.engines.base import Capabilities
from cryptoffload.engines.software import SoftwareEngine
from cryptoffload.errors import Unavailable

_SOFTWARE = SoftwareEngine()
_DECLINES = ("unsupported", "busy", "misaligned", "too-large")


def raw_rsa(op: Any) -> Any:
    """Do an RSA op the way a modexp-only engine does: padding in Python around a raw exponent."""
    key = op.key
    bits = key.key_size
    if op.alg.endswith("-private"):
        numbers = key.private_numbers()
        pub = numbers.public_numbers

        def private(m: int) -> int:
            return pkcs1.rsa_private_raw(
                m, pub.n, numbers.d, numbers.p, numbers.q, numbers.dmp1, numbers.dmq1, numbers.iqmp
            )

        if op.kind == "raw":
            return private(op.value)
        if op.kind == "sign":
            return pkcs1.sign_with_raw(private, bits, op.digest, op.padding, op.hash_alg)
        if isinstance(op.padding, padding.PKCS1v15):
            # Only OpenSSL's implicit rejection answers malformed v1.5 ciphertexts safely.
            raise Unavailable("unsupported", "PKCS#1 v1.5 decryption")
        return pkcs1.decrypt_with_raw(private, bits, op.data, op.padding, modulus=pub.n)
    pub = key.public_numbers()

    def public(m: int) -> int:
        return pkcs1.rsa_public_raw(m, pub.n, pub.e)

    if op.kind == "raw":
        return public(op.value)
    if op.kind == "verify":
        return pkcs1.verify_with_raw(
            public, bits, op.signature, op.digest, op.padding, op.hash_alg, modulus=pub.n
        )
    return pkcs1.encrypt_with_raw(public, bits, op.data, op.padding)


class TakeAllEngine:
    """Takes every op it claims and gets it right (RSA through the raw-exponent path)."""

    def __init__(self, name: str = "takeall", algorithms: Any = None) -> None:
        self.name = name
        self._algorithms = frozenset(algorithms) if algorithms is not None else None
        self.seen: list[Any] = []

    def probe(self) -> Capabilities:
        algs = self._algorithms if self._algorithms is not None else frozenset(all_algorithms())
        return Capabilities(available=True, algorithms=algs)

    def run(self, op: Any) -> Any:
        self.seen.append(op)
        if op.family == "rsa":
            return raw_rsa(op)
        return _SOFTWARE.run(op)


class ChaosEngine(TakeAllEngine):
    """Declines at random, faults at random (with assorted exceptions), else answers correctly."""

    def __init__(
        self, seed: int = 0, decline: float = 0.3, fault: float = 0.3, name: str = "chaos"
    ) -> None:
        super().__init__(name)
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.decline_rate = decline
        self.fault_rate = fault

    def run(self, op: Any) -> Any:
        with self._lock:
            roll = self._rng.random()
            reason = self._rng.choice(_DECLINES)
            fault = self._rng.choice(
                [
                    OSError(errno.EIO, "device error"),
                    RuntimeError("job ring stalled"),
                    ValueError("status 0x40000054"),
                    MemoryError(),
                ]
            )
        if roll < self.decline_rate:
            raise Unavailable(reason)
        if roll < self.decline_rate + self.fault_rate:
            raise fault
        return super().run(op)


class DecliningEngine:
    """Claims algorithms and declines every op with one reason: the silent fallback."""

    def __init__(
        self, name: str = "decliner", reason: str = "unsupported", algorithms: Any = None
    ) -> None:
        self.name = name
        self.reason = reason
        self._algorithms = algorithms
        self.calls = 0

    def probe(self) -> Capabilities:
        algs = self._algorithms if self._algorithms is not None else all_algorithms()
        return Capabilities(available=True, algorithms=frozenset(algs))

    def run(self, op: Any) -> Any:
        self.calls += 1
        raise Unavailable(self.reason)


class FaultingEngine(DecliningEngine):
    """Claims algorithms and raises ``exc`` on every op."""

    def __init__(self, exc: BaseException | None = None, name: str = "faulty", **kw: Any) -> None:
        super().__init__(name=name, **kw)
        self.exc = exc or OSError(errno.EIO, "device error")

    def run(self, op: Any) -> Any:
        self.calls += 1
        raise self.exc


class AbsentEngine:
    """An engine whose device is not on this machine."""

    name = "absent"

    def probe(self) -> Capabilities:
        return Capabilities(available=False, reason="no /dev/absent on this machine")

    def run(self, op: Any) -> Any:  # pragma: no cover - never routed to
        raise AssertionError("an unavailable engine must never be asked")


class _SoftStream:
    """A running hash/MAC in Python, standing in for an engine-held state; faults on request."""

    def __init__(self, state: Any, owner: StreamingEngine, fed: int = 0) -> None:
        self._state = state
        self._owner = owner
        self._fed = fed
        owner.live.add(self)

    def _maybe_fail(self, what: str) -> None:
        owner = self._owner
        owner.calls[what] = owner.calls.get(what, 0) + 1
        if owner.fail_at.get(what) == owner.calls[what]:
            owner.injected += 1
            raise OSError(errno.EIO, f"injected {what} fault")

    def update(self, data: Any) -> None:
        self._maybe_fail("update")
        self._state.update(data)
        self._fed += len(data)
        self._owner.largest = max(self._owner.largest, self._fed)

    def copy(self) -> _SoftStream:
        self._maybe_fail("copy")
        return _SoftStream(self._state.copy(), self._owner, self._fed)

    def finalize(self) -> bytes:
        self._maybe_fail("finalize")
        state = self._state
        self._owner.live.discard(self)
        return state.finalize() if hasattr(state, "finalize") else state.digest()

    def close(self) -> None:
        self._owner.closed += 1
        self._owner.live.discard(self)


class StreamingEngine(TakeAllEngine):
    """Takes every op, and keeps running hash/MAC states (``open_stream``) that can fault.

    ``fail_at`` maps ``update``/``copy``/``finalize``/``open`` to the call number that raises
    (``open`` declines as busy; ``open-fault`` raises OSError). ``injected`` counts the faults
    raised, ``largest`` is the most bytes one stream was fed, ``live`` the streams neither
    finalized nor closed.
    """

    def __init__(self, name: str = "streaming", fail_at: dict[str, int] | None = None) -> None:
        super().__init__(name)
        self.fail_at = dict(fail_at or {})
        self.calls: dict[str, int] = {}
        self.opened = 0
        self.closed = 0
        self.largest = 0
        self.injected = 0
        self.live: set[_SoftStream] = set()

    def open_stream(self, op: Any) -> _SoftStream:
        import hashlib
        import hmac

        from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
        from cryptography.hazmat.primitives import cmac
        from cryptography.hazmat.primitives.ciphers import algorithms

        from cryptoffload.core.names import HASH_NAMES, XOF_NAMES

        self.calls["open"] = self.calls.get("open", 0) + 1
        if self.fail_at.get("open") == self.calls["open"]:
            raise Unavailable("busy", "injected")
        if self.fail_at.get("open-fault") == self.calls["open"]:
            self.injected += 1
            raise OSError(errno.EIO, "injected open fault")
        if op.alg.startswith("gmac-") or op.alg in XOF_NAMES:
            raise Unavailable("streaming", "no running GMAC or SHAKE state")
        self.opened += 1
        if op.alg.startswith("hmac-"):
            state: Any = hmac.new(op.key, digestmod=HASH_NAMES[op.alg[5:]])
        elif op.alg.startswith("cmac-"):
            block = TripleDES(op.key) if op.alg == "cmac-3des" else algorithms.AES(op.key)
            state = cmac.CMAC(block)
        else:
            state = hashlib.new(HASH_NAMES[op.alg])
        return _SoftStream(state, self)


class BatchEngine(TakeAllEngine):
    """Takes batches in one call (``run_batch``); ``decline_every``/``fault_every`` turn the
    n-th item of each batch into a decline or a fault; ``batches`` records the batch sizes."""

    def __init__(self, name: str = "batcher", decline_every: int = 0, fault_every: int = 0) -> None:
        super().__init__(name)
        self.decline_every = decline_every
        self.fault_every = fault_every
        self.batches: list[int] = []

    def run_batch(self, ops: list[Any]) -> list[Any]:
        self.batches.append(len(ops))
        out: list[Any] = []
        for n, op in enumerate(ops, 1):
            if self.decline_every and n % self.decline_every == 0:
                out.append(Unavailable("busy"))
            elif self.fault_every and n % self.fault_every == 0:
                out.append(OSError(errno.EIO, "injected item fault"))
            else:
                try:
                    out.append(self.run(op))
                except Exception as exc:
                    out.append(exc)
        return out


class SessionEngine(TakeAllEngine):
    """Takes every op, and keeps sessions (``session``) as the software engine does, each of its
    sessions' calls first doing the work and then failing as ``plan`` says: ``plan(n)`` for the
    engine's n-th session call (from 1) gives None (the answer goes back) or the exception to
    raise (the work done, its output lost: the worst case for a stream's state)."""

    def __init__(self, name: str = "sessions", plan: Any = None, algorithms: Any = None) -> None:
        super().__init__(name, algorithms)
        self.plan = plan or (lambda n: None)
        self.sessions = 0
        self.calls = 0
        self.raised = 0
        self.asked: list[Any] = []  # the ops session was asked with

    def session(self, op: Any) -> Any:
        self.asked.append(op)
        inner = _SOFTWARE.session(op)
        if inner is None:
            return None
        self.sessions += 1
        return _PlannedSession(self, inner)


class _PlannedSession:
    """A software session whose calls fail as its engine's plan says."""

    def __init__(self, engine: SessionEngine, inner: Any) -> None:
        self._engine = engine
        self._inner = inner

    def _call(self, name: str, *args: Any) -> Any:
        engine = self._engine
        engine.calls += 1
        exc = engine.plan(engine.calls)
        try:
            out = getattr(self._inner, name)(*args)
        finally:
            if exc is not None:
                engine.raised += 1
                raise exc
        return out

    def __getattr__(self, name: str) -> Any:
        # The inner session's methods, each call planned: a method it lacks is absent here too.
        if name.startswith("_") or not callable(getattr(self._inner, name, None)):
            raise AttributeError(name)
        return functools.partial(self._call, name)
