"""Packet-sized ops one at a time, as batches and N in flight from one thread, side by side.

Two workloads shaped like QUIC/TLS records: AES-128-GCM encryption of 1,200 to 1,400 B payloads
with a 20 B header as associated data, and AES-128-ECB of one 16 B block (QUIC header
protection). On each engine given, in alternating rounds over the same inputs:
  sync      one op at a time through the sync API, as an unchanged program calls it
            (``AESGCM.encrypt``; an ECB encryptor's ``update`` per sample)
  batchN    ``encrypt_many`` over N items at a time (ECB: ``Lane.run_batch`` of N CipherOps:
            there is no public batch call for ``Cipher``)
  asyncN    N ``encrypt_async`` gathered at a time from one thread (ECB: ``asyncio_lane.offload``
            of N CipherOps, the path an awaitable would take: ``Cipher`` has no ``*_async``)
  xbatchN   from a coroutine, batches of N awaited in the loop's default executor
            (``loop.run_in_executor(None, gcm.encrypt_many, items)``): what an asyncio program
            can do today to put a burst on the ring in one submission without blocking its loop
  threadsN  the sync calls of ``sync`` shared out to N threads (a pool kept for the run): the one
            way an unchanged program has several ops in flight, a thread per connection
Per row: the median over rounds of ops/s and µs/op, the spread of µs/op (lowest to highest
round), the caller's CPU per op (every thread of this process) and the ratio of the median
wall time per op to ``sync``'s on the same engine. Each engine's counters are checked after the
run: a row is marked when the engine did not do every op it was given (software answered).
Then, on a ``caam:device`` engine, the caller's CPU per job to put N prepared GCM jobs on the
ring with N ``submit`` calls against one ``submit_many`` (``--no-submission`` skips it).
Run: python benchmarks/inflight.py [--rounds N] [--ops N] [--inflight 1,4,16,64]
                                   [--engines SPEC ...] [--workloads gcm,ecb16] [--no-submission]
(default engines: caam:device=t2080 with its own timing, the same with latency=0.004, 4 ms per
job, slower than the device process's Python model, so the modelled queueing engine governs, and
software)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from cryptography.hazmat.primitives.ciphers import algorithms, modes

from cryptoffload import Policy, Provider
from cryptoffload.aead import AESGCM
from cryptoffload.ciphers import Cipher
from cryptoffload.core import asyncio_lane
from cryptoffload.core.ops import CipherOp

GCM_KEY, HP_KEY = bytes(range(16)), bytes(range(16, 32))
HEADER = bytes(20)

Form = Callable[[], object]


def gcm_forms(
    runner: asyncio.Runner,
    pools: dict[int, ThreadPoolExecutor],
    provider: Provider,
    ops: int,
    widths: list[int],
) -> dict[str, Form]:
    """The AES-GCM forms over ``ops`` packets of 1,200 to 1,400 B (fixed for the run)."""
    gcm = AESGCM(GCM_KEY, provider=provider)
    sizes = random.Random(1).choices(range(1200, 1401), k=ops)
    items = [(os.urandom(12), os.urandom(size), HEADER) for size in sizes]

    def sync() -> None:
        for nonce, data, aad in items:
            gcm.encrypt(nonce, data, aad)

    forms: dict[str, Form] = {"sync": sync}
    for n in widths:
        chunks = [items[i : i + n] for i in range(0, ops, n)]

        def batch(chunks: list[list[Any]] = chunks) -> None:
            for chunk in chunks:
                for result in gcm.encrypt_many(chunk):
                    if isinstance(result, Exception):
                        raise result

        async def gathered(chunks: list[list[Any]] = chunks) -> None:
            for chunk in chunks:
                await asyncio.gather(*(gcm.encrypt_async(*item) for item in chunk))

        async def handed(chunks: list[list[Any]] = chunks) -> None:
            loop = asyncio.get_running_loop()
            for chunk in chunks:
                for result in await loop.run_in_executor(None, gcm.encrypt_many, chunk):
                    if isinstance(result, Exception):
                        raise result

        def sealing(share: list[Any]) -> None:
            for nonce, data, aad in share:
                gcm.encrypt(nonce, data, aad)

        forms[f"batch{n}"] = batch
        forms[f"async{n}"] = lambda gathered=gathered: runner.run(gathered())
        forms[f"xbatch{n}"] = lambda handed=handed: runner.run(handed())
        forms[f"threads{n}"] = threaded(pools, n, sealing, items)
    return forms


def threaded(
    pools: dict[int, ThreadPoolExecutor], n: int, work: Callable[[list[Any]], None], items: list
) -> Form:
    """``work`` over ``items`` shared out to ``n`` threads of a pool kept for the run (the sync
    API from each: what an unchanged program with a thread per connection does)."""
    pool = pools.setdefault(n, ThreadPoolExecutor(n))
    shares = [items[i::n] for i in range(n)]

    def run() -> None:
        for future in [pool.submit(work, share) for share in shares if share]:
            future.result()

    return run


def ecb_forms(
    runner: asyncio.Runner,
    pools: dict[int, ThreadPoolExecutor],
    provider: Provider,
    ops: int,
    widths: list[int],
) -> dict[str, Form]:
    """The AES-ECB forms over ``ops`` 16 B samples (header protection's mask)."""
    samples = [os.urandom(16) for _ in range(ops)]
    encryptor = Cipher(algorithms.AES(HP_KEY), modes.ECB(), provider=provider).encryptor()
    lane = provider.lane("aes-128-ecb")

    def sync() -> None:
        for sample in samples:
            encryptor.update(sample)

    def awaited(op: CipherOp) -> Any:
        # What an ``update_async`` would do: started where an engine can, else inline or in
        # the executor as ``offload`` decides for the ``*_async`` methods.
        return asyncio_lane.offload(lane, lambda: op, encryptor.update, op.data)

    forms: dict[str, Form] = {"sync": sync}
    for n in widths:
        chunks = [
            [CipherOp("aes-128-ecb", "encrypt", HP_KEY, None, s) for s in samples[i : i + n]]
            for i in range(0, ops, n)
        ]

        def batch(chunks: list[list[CipherOp]] = chunks) -> None:
            for chunk in chunks:
                for result in lane.run_batch(chunk):
                    if isinstance(result, Exception):
                        raise result

        async def gathered(chunks: list[list[CipherOp]] = chunks) -> None:
            for chunk in chunks:
                await asyncio.gather(*(awaited(op) for op in chunk))

        async def handed(chunks: list[list[CipherOp]] = chunks) -> None:
            loop = asyncio.get_running_loop()
            for chunk in chunks:
                for result in await loop.run_in_executor(None, lane.run_batch, chunk):
                    if isinstance(result, Exception):
                        raise result

        def masking(share: list[bytes]) -> None:
            mine = Cipher(algorithms.AES(HP_KEY), modes.ECB(), provider=provider).encryptor()
            for sample in share:
                mine.update(sample)

        forms[f"batch{n}"] = batch
        forms[f"async{n}"] = lambda gathered=gathered: runner.run(gathered())
        forms[f"xbatch{n}"] = lambda handed=handed: runner.run(handed())
        forms[f"threads{n}"] = threaded(pools, n, masking, samples)
    return forms


WORKLOADS = {
    "gcm": ("AES-128-GCM 1,200-1,400 B", "aes-128-gcm", gcm_forms),
    "ecb16": ("AES-128-ECB 16 B", "aes-128-ecb", ecb_forms),
}


def timed(fn: Form) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process, every thread) of one call of ``fn``."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def measure(forms: dict[str, Form], rounds: int, ops: int) -> dict[str, tuple[list, list]]:
    """Each form's wall and CPU seconds per op, round by round; the order rotates each round."""
    for fn in forms.values():  # warm up: shared descriptors, the thread pool, the fd watch
        fn()
    names = list(forms)
    walls: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            wall, cpu = timed(forms[name])
            walls[name].append(wall / ops)
            cpus[name].append(cpu / ops)
    return {name: (walls[name], cpus[name]) for name in names}


def engine_ops(provider: Provider, alg: str) -> int:
    """Ops of ``alg`` that engines other than software counted."""
    snapshot = provider.counters.snapshot()
    return sum(
        algs.get(alg, {}).get("ops", 0) for name, algs in snapshot.items() if name != "software"
    )


def submission(engine: Any, widths: list[int], rounds: int) -> None:
    """The caller's CPU to put N prepared GCM jobs on the ring, N ``submit`` calls against one
    ``submit_many`` (the waits for them untimed): the most that coalescing the ops an event
    loop starts in one iteration into one ring submission could save."""
    from cryptoffload.caam.recipes import aead

    driver = engine._driver
    data = os.urandom(1300)

    def jobs(n: int) -> list[Any]:
        return [
            aead.prepare_gcm(driver, GCM_KEY, os.urandom(12), data, HEADER, encrypt=True)
            for _ in range(n)
        ]

    def one_by_one(prepared: list[Any]) -> list[Any]:
        return [
            driver.submit(p.words, owned=p.buffers.owned, collect=p.buffers.collect)
            for p in prepared
        ]

    def together(prepared: list[Any]) -> list[Any]:
        return driver.submit_many([p.request() for p in prepared])

    print(f"{engine.name}: caller CPU to submit N jobs (us per job), median of {rounds} rounds")
    for n in widths:
        cpu: dict[str, list[float]] = {"submit": [], "submit_many": []}
        for _ in range(rounds + 1):
            for name, put in (("submit", one_by_one), ("submit_many", together)):
                prepared = jobs(n)
                c0 = time.process_time()
                placed = put(prepared)
                cpu[name].append((time.process_time() - c0) / n)
                for job in placed:
                    job.wait()
        single, many = (statistics.median(cpu[k][1:]) for k in ("submit", "submit_many"))
        print(
            f"  N={n:<3} {n} x submit {single * 1e6:7.1f}   submit_many {many * 1e6:7.1f}   "
            f"saved {(single - many) * 1e6:6.1f} us per job"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ops", type=int, default=128, help="operations per round and form")
    parser.add_argument("--inflight", default="1,4,16,64", help="batch sizes and ops in flight")
    parser.add_argument(
        "--engines",
        nargs="+",
        default=["caam:device=t2080", "caam:device=t2080,latency=0.004", "software"],
        help="engine specs, space-separated",
    )
    parser.add_argument("--workloads", default="gcm,ecb16")
    parser.add_argument(
        "--no-submission",
        dest="submission",
        action="store_false",
        help="skip the ring-submission part (caam:device engines)",
    )
    args = parser.parse_args()
    try:
        widths = [int(n) for n in args.inflight.split(",")]
    except ValueError:
        parser.error(f"--inflight takes whole numbers separated by commas, got {args.inflight!r}")
    if args.ops < 1 or args.rounds < 1 or any(n < 1 for n in widths):
        parser.error("--ops, --rounds and every --inflight value must be at least 1")
    unknown = set(args.workloads.split(",")) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(sorted(unknown))}; known: gcm, ecb16")
    print(f"{args.ops} ops per round and form, median of {args.rounds} alternating rounds")
    print(
        f"{'engine':<20} {'workload':<26} {'form':<8} {'ops/s':>8} {'us/op':>8} "
        f"{'spread us/op':>15} {'cpu us/op':>9} {'vs sync':>8}"
    )
    for spec in args.engines:
        provider = Provider([spec], policy=Policy(min_size={"*": 0}))
        engine = provider.engines[0].name
        if spec != "software" and not provider.capabilities[engine].available:
            print(f"{spec}: not available: {provider.capabilities[engine].reason}")
            provider.close()
            continue
        runner = asyncio.Runner()
        pools: dict[int, ThreadPoolExecutor] = {}
        try:
            for workload in args.workloads.split(","):
                label, alg, build = WORKLOADS[workload]
                if spec != "software" and alg not in provider.capabilities[engine].algorithms:
                    print(f"{spec:<20} {label:<26} not claimed by the engine")
                    continue
                forms = build(runner, pools, provider, args.ops, widths)
                before = engine_ops(provider, alg)
                results = measure(forms, args.rounds, args.ops)
                given = (args.rounds + 1) * args.ops * len(forms)
                offloaded = engine_ops(provider, alg) - before
                mark = "" if spec == "software" or offloaded == given else " (!)"
                base = statistics.median(results["sync"][0])
                for name, (walls, cpus) in results.items():
                    wall = statistics.median(walls)
                    print(
                        f"{spec:<20} {label:<26} {name:<8} {1 / wall:>8.0f} {wall * 1e6:>8.1f} "
                        f"{min(walls) * 1e6:>7.1f}-{max(walls) * 1e6:<7.1f} "
                        f"{statistics.median(cpus) * 1e6:>9.1f} {base / wall:>7.2f}x{mark}"
                    )
                if mark:
                    print(f"  (!) the engine did {offloaded} of the {given} ops; software the rest")
            if spec.startswith("caam:device=") and args.submission:
                submission(provider.engines[0], widths, args.rounds * 4)
        finally:
            runner.close()
            for pool in pools.values():
                pool.shutdown()
            provider.close()


if __name__ == "__main__":
    main()
