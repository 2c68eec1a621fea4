"""Random bytes from an SP 800-90A CTR_DRBG (AES-256) seeded by the OS and by engine TRNGs.

An engine with a TRNG feeds the seed ("seed, never replace"): its bytes are concatenated with the
OS's and go through the derivation function, so a weak or broken TRNG cannot make the output
weaker than the OS alone. The generator reseeds after a fixed number of requests and in a child
process after fork, so a parent and child never share a stream.
"""

from __future__ import annotations

import os
import threading
import weakref

from cryptoffload.blocks.ctr_drbg import CtrDrbg
from cryptoffload.core.ops import RngOp
from cryptoffload.core.provider import SOFTWARE, Provider, checked_provider, resolve

__all__ = ["Drbg", "random_bytes"]

#: Bytes of seed material asked of each source: 256 bits of security plus margin.
SEED_BYTES = 48
#: Requests between reseeds (far below SP 800-90A's 2^48 limit, to bound what one seed yields).
RESEED_INTERVAL = 1 << 16

_instances: weakref.WeakSet[Drbg] = weakref.WeakSet()


class Drbg:
    """A DRBG bound to a provider (the one in force when it is first used, unless given)."""

    def __init__(self, provider: Provider | None = None, personalization: bytes = b"") -> None:
        self._provider = checked_provider(provider)
        self._personalization = bytes(personalization)
        self._lock = threading.Lock()
        self._drbg: CtrDrbg | None = None
        self.seed_sources: list[str] = []
        _instances.add(self)

    def __repr__(self) -> str:
        state = "seeded" if self._drbg is not None else "not seeded"
        return f"<Drbg {state}, sources={self.seed_sources}>"

    def _seed_material(self) -> tuple[bytes, list[str]]:
        provider = resolve(self._provider)
        material = os.urandom(SEED_BYTES)
        sources = ["os"]
        before = provider.counters.snapshot()
        engine_seed = provider.run(RngOp("drbg", "seed", SEED_BYTES))
        after = provider.counters.snapshot()
        for engine, algs in after.items():
            ops = algs.get("drbg", {}).get("ops", 0)
            if engine != SOFTWARE and ops > before.get(engine, {}).get("drbg", {}).get("ops", 0):
                sources.append(engine)
        return material + engine_seed, sources

    def _ensure(self) -> CtrDrbg:
        drbg = self._drbg
        if drbg is None:
            entropy, self.seed_sources = self._seed_material()
            drbg = self._drbg = CtrDrbg(
                entropy, nonce=os.urandom(16), personalization=self._personalization
            )
        elif drbg.needs_reseed:
            entropy, self.seed_sources = self._seed_material()
            drbg.reseed(entropy)
        return drbg

    def random_bytes(self, n: int) -> bytes:
        """``n`` random bytes."""
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"n must be an int, got {type(n).__name__}")
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        with self._lock:
            drbg = self._ensure()
            if drbg.reseed_counter + n // 65536 + 1 > drbg.reseed_interval:
                entropy, self.seed_sources = self._seed_material()
                drbg.reseed(entropy)
            out = drbg.random_bytes(n)
        resolve(self._provider).lane("drbg").count(n)
        return out

    def reseed(self) -> None:
        """Fresh seed material now (from the OS and the engines)."""
        with self._lock:
            if self._drbg is None:
                self._ensure()
            else:
                entropy, self.seed_sources = self._seed_material()
                self._drbg.reseed(entropy)

    def _forget(self) -> None:
        # After fork the child must not continue the parent's stream.
        self._lock = threading.Lock()
        if self._drbg is not None:
            self._drbg.zeroize()
        self._drbg = None


def _after_fork_in_child() -> None:
    for instance in list(_instances):
        instance._forget()


os.register_at_fork(after_in_child=_after_fork_in_child)

_default: Drbg | None = None
_default_lock = threading.Lock()


def random_bytes(n: int) -> bytes:
    """``n`` random bytes from the process-wide DRBG (seeded through the provider in force)."""
    global _default
    drbg = _default
    if drbg is None:
        with _default_lock:
            drbg = _default
            if drbg is None:
                drbg = _default = Drbg()
    return drbg.random_bytes(n)
