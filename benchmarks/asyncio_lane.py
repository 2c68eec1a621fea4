"""What the ``*_async`` methods cost next to the sync call, side by side in one run.

For AES-128-GCM encryption at each size, on each provider, three ways over the same inputs in
alternating rounds: ``sync`` (a loop of ``encrypt``), ``await`` (one coroutine awaiting
``encrypt_async`` op after op) and ``gather`` (N coroutines gathered: as many in flight as the
engine allows). Reports the median microseconds per operation and the process CPU time per
operation (user + sys of every thread: ``time.process_time``). On ``software`` the awaited
forms run in the default executor (a thread hop per op); on ``caam:model=PART`` AES jobs are
started on the ring (the in-process model completes them inside the submit, so nothing
overlaps: the difference is the asyncio layer's own cost).
Run: python benchmarks/asyncio_lane.py [--rounds N] [--ops N] [--sizes 1408,16384]
                                       [--engines software,caam:model=t2080]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Callable

from cryptoffload import Provider
from cryptoffload.aead import AESGCM


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process, every thread) of one call of ``fn``."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def forms(
    runner: asyncio.Runner, gcm: AESGCM, items: list[tuple[bytes, bytes]]
) -> dict[str, Callable[[], object]]:
    """The three forms over ``items``; the awaited ones on one loop (and its one executor)."""

    def sync() -> None:
        for nonce, data in items:
            gcm.encrypt(nonce, data, None)

    async def one_by_one() -> None:
        for nonce, data in items:
            await gcm.encrypt_async(nonce, data, None)

    async def gathered() -> None:
        await asyncio.gather(*(gcm.encrypt_async(nonce, data, None) for nonce, data in items))

    return {
        "sync": sync,
        "await": lambda: runner.run(one_by_one()),
        "gather": lambda: runner.run(gathered()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ops", type=int, default=200, help="operations per round and form")
    parser.add_argument("--sizes", default="1408,16384")
    parser.add_argument("--engines", default="software,caam:model=t2080")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"AES-128-GCM encrypt, {args.ops} ops per round, median of {args.rounds} rounds")
    print(f"{'engine':<20} {'bytes':>6} {'form':<7} {'us/op':>9} {'cpu us/op':>10} {'vs sync':>8}")
    for spec in args.engines.split(","):
        provider = Provider([spec])
        if spec != "software" and spec not in provider.capabilities:
            print(f"{spec}: not available")
            continue
        runner = asyncio.Runner()
        try:
            gcm = AESGCM(bytes(range(16)), provider=provider)
            for size in sizes:
                items = [(os.urandom(12), os.urandom(size)) for _ in range(args.ops)]
                cases = forms(runner, gcm, items)
                for fn in cases.values():  # warm up: shared descriptors, thread pool
                    fn()
                walls: dict[str, list[float]] = {name: [] for name in cases}
                cpus: dict[str, list[float]] = {name: [] for name in cases}
                for _ in range(args.rounds):
                    for name, fn in cases.items():
                        wall, cpu = timed(fn)
                        walls[name].append(wall / args.ops)
                        cpus[name].append(cpu / args.ops)
                base = statistics.median(walls["sync"])
                for name in cases:
                    wall = statistics.median(walls[name])
                    cpu = statistics.median(cpus[name])
                    print(
                        f"{spec:<20} {size:>6} {name:<7} {wall * 1e6:>9.1f} "
                        f"{cpu * 1e6:>10.1f} {wall / base:>7.2f}x"
                    )
        finally:
            runner.close()
            provider.close()


if __name__ == "__main__":
    main()
