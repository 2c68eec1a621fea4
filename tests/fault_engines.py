"""Engines that fail on purpose, and injectors that break the CAAM model and /dev/crypto."""

from __future__ import annotations

import errno
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from doubles import TakeAllEngine

from cryptoffload.caam import regs, status
from cryptoffload.errors import Unavailable


class Injector:
    """Counts what it injected; ``tick()`` is called every few tens of milliseconds while the
    workload runs, ``finish()`` once after (to leave the engine able to serve)."""

    def __init__(self) -> None:
        self.injected = 0
        self._lock = threading.Lock()

    def hit(self, n: int = 1) -> None:
        with self._lock:
            self.injected += n

    def tick(self) -> None:
        """Inject now, if it is time."""

    def finish(self) -> None:
        """Stop injecting; undo what would keep the engine from serving."""


class FlakyEngine(TakeAllEngine):
    """Takes every op (right answers) until ``fail(op)`` of its injector says otherwise.

    ``mode`` picks the failure: ``vanish`` (after ``after`` ops the device is gone: every op and
    stream raises OSError ENODEV, or declines no-device, half and half), ``partial`` (writes
    garbage into a cipher op's ``out`` buffer, then fails with EIO; other ops fail after the
    answer was computed), ``decline`` and ``fault`` (at random, at ``rate``), ``slow`` (sleeps
    1 to ``delay_ms`` before answering right).
    """

    def __init__(
        self,
        mode: str,
        injector: Injector,
        seed: int = 0,
        rate: float = 0.3,
        after: int = 200,
        delay_ms: float = 5.0,
        name: str | None = None,
    ) -> None:
        super().__init__(name or f"flaky-{mode}")
        self.mode = mode
        self.injector = injector
        self.rate = rate
        self.after = after
        self.delay = delay_ms / 1000
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._done = 0

    def _roll(self) -> float:
        with self._lock:
            self._done += 1
            return self._rng.random()

    def run(self, op: Any) -> Any:
        self.seen.clear()  # nothing kept per op: long runs stay flat
        roll = self._roll()
        mode = self.mode
        if mode == "vanish" and self._done > self.after:
            self.injector.hit()
            if roll < 0.5:
                raise Unavailable("no-device", "the device went away")
            raise OSError(errno.ENODEV, "No such device")
        if mode == "decline" and roll < self.rate:
            self.injector.hit()
            raise Unavailable("busy", "injected")
        if mode == "fault" and roll < self.rate:
            self.injector.hit()
            raise _FAULTS[int(roll * 1000) % len(_FAULTS)]
        if mode == "slow":
            time.sleep(self.delay * (0.2 + roll))
        result = super().run(op)
        if mode == "partial" and roll < self.rate:
            self.injector.hit()
            out = getattr(op, "out", None)
            if out is not None:
                n = len(op.data)
                out[: n // 2] = bytes(range(256)) * (n // 512) + bytes(range(n // 2 % 256))
            raise OSError(errno.EIO, "request failed after writing part of its output")
        return result

    def open_stream(self, op: Any) -> Any:
        if self.mode == "vanish" and self._done > self.after:
            self.injector.hit()
            raise OSError(errno.ENODEV, "No such device")
        raise Unavailable("streaming", "no running state")


_FAULTS = (
    OSError(errno.EIO, "Input/output error"),
    OSError(errno.EBADF, "Bad file descriptor"),
    BrokenPipeError(errno.EPIPE, "Broken pipe"),
    TimeoutError("device did not answer"),
    RuntimeError("job ring stalled"),
    ValueError("status 0x40000054"),
    MemoryError(),
)


# -- the CAAM model ----------------------------------------------------------------------------

#: Error statuses a job may end with that are faults, not answers (no ICV check failure here:
#: that one is an answer, InvalidTag).
CAAM_ERRORS = (
    status.ccb(status.CHA_AES, status.ERR_HARDWARE, 2),
    status.ccb(status.CHA_MD, status.ERR_HARDWARE, 1),
    status.ccb(status.CHA_PK, status.ERR_HARDWARE, 1),
    status.deco(status.DECO_DMA, 3),
    status.deco(status.DECO_JOBFAIL, 1),
)


def caam_model(provider: Any) -> tuple[Any, Any]:
    """The provider's (first) CAAM engine on the model, and its model."""
    for engine in provider.engines:
        inner = getattr(engine, "engine", engine)
        transport = getattr(inner, "_transport", None)
        if transport is not None and hasattr(transport, "model"):
            return transport.model, inner
    raise LookupError("no CAAM model engine in this provider")


class JobHook(Injector):
    """An injector that sees every job the model runs (batch items included): ``on_job(n)``
    after the n-th, under the model's lock (the model runs one job at a time). Triggers count
    jobs, not time, so that a short run injects the same faults every time; ``tick()`` undoes
    what must not last (a stall, a full ring) on the workload's next sample."""

    def __init__(self, model: Any, every: int) -> None:
        super().__init__()
        self._model, self._every = model, every
        self._count = 0
        self._execute = model._execute
        model._execute = self._run

    def _run(self, desc: int) -> int:
        word = self._execute(desc)
        self._count += 1
        if self._count % self._every == 0:
            word = self.on_job(word)
        return word

    def on_job(self, word: int) -> int:
        """Strike after every ``every``-th job; returns the status it reports."""
        return word

    def finish(self) -> None:
        self._model._execute = self._execute


class EveryNthJobFails(JobHook):
    """Every ``every``-th job the model runs ends with an error status."""

    def __init__(self, model: Any, every: int = 7, seed: int = 0) -> None:
        super().__init__(model, every)
        self._rng = random.Random(seed)

    def on_job(self, word: int) -> int:
        if word:
            return word
        self.hit()
        return self._rng.choice(CAAM_ERRORS)


def _figure(engine: Any, name: str) -> int:
    return int(engine.figures.get(name, 0))


class Stalls(JobHook):
    """After every ``every``-th job the model stops completing jobs, until a tick finds that the
    engine timed one out (set its timeout below the tick: the jobs in flight fail, the ring is
    reset, software answers them)."""

    def __init__(self, model: Any, engine: Any, every: int = 40) -> None:
        super().__init__(model, every)
        self._engine = engine
        self._stalled_at: int | None = None

    def on_job(self, word: int) -> int:
        if self._stalled_at is None:
            self._model.stall()
            self._stalled_at = -1  # the engine's count is read on the next tick
            self.hit()
        return word

    def tick(self) -> None:
        if self._stalled_at == -1:
            self._stalled_at = _figure(self._engine, "timeouts")
        elif self._stalled_at is not None and _figure(self._engine, "timeouts") > self._stalled_at:
            self._stalled_at = None
            self._model.unstall()

    def finish(self) -> None:
        super().finish()
        self._model.unstall()


class RingResets(JobHook):
    """After every ``every``-th job the model stalls; on the first tick that finds jobs in
    flight, more jobs are written to IRJAR than the ring has slots: a ring error, after which
    the driver resets the ring and fails what was in flight."""

    def __init__(self, model: Any, engine: Any, every: int = 40) -> None:
        super().__init__(model, every)
        self._engine = engine
        self._armed = False

    def on_job(self, word: int) -> int:
        if not self._armed:
            self._model.stall()
            self._armed = True
        return word

    def tick(self) -> None:
        if self._armed and _figure(self._engine, "in_flight"):
            self._armed = False
            self._model.write32(regs.jr_base(0) + regs.IRJAR, 10_000)
            self._model.unstall()
            self.hit()

    def finish(self) -> None:
        super().finish()
        self._armed = False
        self._model.unstall()


class RingFull(JobHook):
    """After every ``every``-th job the ring reads full, until a tick finds that the engine
    declined a job for it (busy: software answers)."""

    def __init__(self, model: Any, engine: Any, every: int = 30) -> None:
        super().__init__(model, every)
        self._engine = engine
        self._full_at: int | None = None

    def on_job(self, word: int) -> int:
        if self._full_at is None:
            self._model.make_ring_full()
            self._full_at = -1
            self.hit()
        return word

    def tick(self) -> None:
        if self._full_at == -1:
            self._full_at = _figure(self._engine, "ring_full")
        elif self._full_at is not None and _figure(self._engine, "ring_full") > self._full_at:
            self._full_at = None
            self._model.make_ring_full(False)

    def finish(self) -> None:
        super().finish()
        self._model.make_ring_full(False)


class Corruption(JobHook):
    """The job after every ``every``-th has a flipped output byte: a wrong answer that only a
    cross-checking provider catches (it then disables the engine for that algorithm)."""

    def __init__(self, model: Any, every: int = 15) -> None:
        super().__init__(model, every)

    def on_job(self, word: int) -> int:
        self._model.corrupt_output()
        self.hit()
        return word


# -- the /dev/crypto stand-in -----------------------------------------------------------------


class DeviceErrors(Injector):
    """The stand-in fails the next few crypt requests with an errno after scribbling into their
    output (a device that failed half way): armed at once, and again on every ``every``-th
    tick."""

    CODES = (errno.EIO, errno.EFAULT, errno.EBUSY, errno.ENOMEM, errno.ENODEV)

    def __init__(self, device: Any, every: int = 2, seed: int = 0) -> None:
        super().__init__()
        self._device, self._every = device, every
        self._ticks = 0
        self._rng = random.Random(seed)
        self._arm()

    def _arm(self) -> None:
        from cryptodev_standin import CIOCAUTHCRYPT, CIOCCRYPT

        times = self._rng.randint(1, 4)
        code = self._rng.choice(self.CODES)
        request = self._rng.choice((CIOCCRYPT, CIOCAUTHCRYPT))
        self._device.fail(request, code, times, scribble=True)
        self.hit(times)

    def tick(self) -> None:
        self._ticks += 1
        if self._ticks % self._every == 0:
            self._arm()

    def finish(self) -> None:
        self._device.injected.clear()


class DeviceGone(Injector):
    """After ``after`` requests the stand-in forgets every descriptor it gave out (the module
    was unloaded under the engine): every request fails with EBADF from then on."""

    def __init__(self, device: Any, after: int = 30) -> None:
        super().__init__()
        self._device, self._after = device, after
        from cryptoffload.engines import cryptodev

        self._requests = 0
        self._module = cryptodev
        self._ioctl = cryptodev.ioctl  # the engine looks it up there on every request
        cryptodev.ioctl = self._count

    def _count(self, fd: int, request: int, arg: Any) -> int:
        self._requests += 1
        if self._requests == self._after:
            self._device.files.clear()
            self.hit()
        return self._ioctl(fd, request, arg)

    def finish(self) -> None:
        self._module.ioctl = self._ioctl


# -- a PKCS#11 token --------------------------------------------------------------------------


class SessionsClosed(Injector):
    """At once and on every ``every``-th tick, all of the token's sessions are closed under the
    engine (C_CloseAllSessions: the login and the imported keys go with them), as when a token
    is pulled and put back or another library in the process closes them.

    The close comes between the token's calls, never inside one: SoftHSM frees a session that
    another thread's call is still using, and the process dies in the token library (a CI run
    lost a test worker so). Until ``finish()``, the module's calls pass one at a time."""

    def __init__(self, engine: Any, every: int = 1) -> None:
        super().__init__()
        self._engine, self._every = engine, every
        self._ticks = 0
        self._module = engine._token.module
        self._gate = threading.Lock()
        if self._module is not None:
            self._plain_fn = self._module.fn
            self._module.fn = self._gated
        self._close()

    def _gated(self, name: str) -> Callable[..., Any]:
        call = self._plain_fn(name)

        def one_at_a_time(*args: Any) -> Any:
            with self._gate:
                return call(*args)

        return one_at_a_time

    def _close(self) -> None:
        from cryptoffload.engines.pkcs11 import ck

        token = self._engine._token
        if token.module is not None:
            with self._gate:
                self._plain_fn("C_CloseAllSessions")(ck.ULONG(token.slot))
            self.hit()

    def finish(self) -> None:
        if self._module is not None:
            del self._module.fn  # the class's own fn again

    def tick(self) -> None:
        self._ticks += 1
        if self._ticks % self._every == 0:
            self._close()


def _pkcs11(make: Callable[[Any], Injector]) -> Any:
    def build(seed: int) -> tuple[list[Any], Callable[[Any], Injector], dict[str, Any]]:
        import softhsm

        token = softhsm.shared()
        return [token.spec], lambda provider: make(provider.engines[0]), {}

    return build


# -- scenarios -------------------------------------------------------------------------------


def _flaky(mode: str, **kw: Any) -> Any:
    def build(seed: int) -> tuple[list[Any], Callable[[Any], Injector], dict[str, Any]]:
        injector = Injector()
        return [FlakyEngine(mode, injector, seed=seed, **kw)], lambda provider: injector, {}

    return build


def _caam(
    make: Callable[[Any, Any], Injector], spec: str = "caam:model=t2080", **options: Any
) -> Any:
    def build(seed: int) -> tuple[list[Any], Callable[[Any], Injector], dict[str, Any]]:
        return [spec], lambda provider: make(*caam_model(provider)), options

    return build


def _standin(make: Callable[[Any], Injector]) -> Any:
    def build(seed: int) -> tuple[list[Any], Callable[[Any], Injector], dict[str, Any]]:
        import cryptodev_standin

        device = cryptodev_standin.install(cryptodev_standin.Device(seed=seed))
        return ["cryptodev:any"], lambda provider: make(device), {}

    return build


#: Scenarios whose faults are wrong answers, not failures: what the provider's cross-check
#: catches is answered by software; what it cannot check escapes (an RSA encryption: random
#: padding, and no private key to open the ciphertext with).
DETECTION = frozenset({"caam: corrupt output, cross-check"})

#: Fault scenarios by name: each builds (engines, the injector for the provider made of them,
#: provider options) from a seed.
SCENARIOS: dict[
    str, Callable[[int], tuple[list[Any], Callable[[Any], Injector], dict[str, Any]]]
] = {
    "engine vanishes (ENODEV / no-device)": _flaky("vanish", after=40),
    "random declines (busy)": _flaky("decline", rate=0.5),
    "random faults (7 kinds)": _flaky("fault", rate=0.5),
    "errors after partial output": _flaky("partial", rate=0.4),
    "slow engine (1-6 ms per op)": _flaky("slow", delay_ms=5),
    "caam: error status every 7th job": _caam(lambda m, e: EveryNthJobFails(m, 7)),
    "caam: stalls past timeout=0.02": _caam(Stalls, "caam:model=t2080,timeout=0.02"),
    "caam: ring reset mid-run": _caam(RingResets, "caam:model=imx7d,timeout=1"),
    "caam: ring full (busy)": _caam(RingFull),
    "caam: corrupt output, cross-check": _caam(lambda m, e: Corruption(m), cross_check=1.0),
    "cryptodev: errno after scribble": _standin(lambda d: DeviceErrors(d)),
    "cryptodev: device gone (EBADF)": _standin(lambda d: DeviceGone(d)),
}
if __import__("softhsm").why_missing() is None:
    SCENARIOS["pkcs11: sessions closed under the engine"] = _pkcs11(SessionsClosed)
