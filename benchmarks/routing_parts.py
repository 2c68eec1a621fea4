"""Where routed and adaptive providers spend time at one size, against software alone.

Side by side in one process, rotating order, AES-128-GCM ``encrypt`` through ``AESGCM`` at
``--size`` bytes, on providers whose software is a stand-in engine (``--software``, default
a synthetic engine with no latency: OpenSSL's time plus the engine path, so overheads show)
and whose engine (``--engine``) the policy keeps from that size:

- ``software``: the stand-in alone (the better path at this size);
- ``as-engine``: the stand-in routed as a second engine after the engine, which declines the
  op first (how ``routing.py --baseline`` routed before the stand-in became software);
- ``routed``: the engine kept from the size by its ``min_size``: straight to software;
- ``adaptive-quiet``: adaptive routing settled on software, sampling all but off
  (``sample`` 1e-6): the adaptive path's own cost an op;
- ``adaptive``: adaptive routing with its default sampling: the quiet cost plus the samples.

Prints each provider's median µs per op over the rounds, its difference from software, and
the adaptive provider's samples in the measured ops.

Run: python benchmarks/routing_parts.py [--size N] [--rounds N] [--ops N]
[--engine SPEC] [--software SPEC]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time

from cryptoffload import Policy, Provider
from cryptoffload.aead import AESGCM
from cryptoffload.core.lane import SOFTWARE
from cryptoffload.engines import from_spec

ALG = "aes-128-gcm"
KEY, NONCE = bytes(range(16)), bytes(12)


def per_op(fn, data: bytes, ops: int) -> float:
    """Microseconds per ``fn(NONCE, data, None)`` over ``ops`` calls."""
    start = time.perf_counter()
    for _ in range(ops):
        fn(NONCE, data, None)
    return (time.perf_counter() - start) / ops * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--ops", type=int, default=5000, help="ops per provider and round")
    parser.add_argument("--engine", default="synthetic:latency=100us,throughput=2GiB/s")
    parser.add_argument("--software", default="synthetic:latency=0us,throughput=1000000GiB/s")
    args = parser.parse_args()
    logging.getLogger("cryptoffload").setLevel(logging.ERROR)

    def stand_in(name: str = SOFTWARE):
        engine = from_spec(args.software)
        engine.name = name
        return engine

    engine = from_spec(args.engine)
    keep = {engine.name: {"min_size": {ALG: args.size + 1}}}
    quiet = {"sample": 1e-6}
    providers = {
        "software": Provider([stand_in()]),
        "as-engine": Provider([engine, stand_in("stand-in")], Policy(engines=keep)),
        "routed": Provider([engine, stand_in()], Policy(engines=keep)),
        "adaptive-quiet": Provider([engine, stand_in()], Policy(engines=keep, adaptive=quiet)),
        "adaptive": Provider([engine, stand_in()], Policy(engines=keep, adaptive=True)),
    }
    data = bytes(args.size)
    fns = {side: AESGCM(KEY, provider=p).encrypt for side, p in providers.items()}
    for fn in fns.values():
        per_op(fn, data, args.ops)  # warm: the adaptive classes settle their skips
    before = providers["adaptive"].counters.snapshot()[engine.name][ALG]["adaptive"]["samples"]
    times: dict[str, list[float]] = {side: [] for side in fns}
    order = list(fns)
    for r in range(args.rounds):
        k = r % len(order)
        for side in order[k:] + order[:k]:
            times[side].append(per_op(fns[side], data, args.ops))
    after = providers["adaptive"].counters.snapshot()[engine.name][ALG]["adaptive"]
    base = statistics.median(times["software"])
    print(f"{ALG} encrypt, {args.size} B; engine {engine.name}; software {args.software}")
    print(f"{'provider':16} {'us/op':>8} {'- software':>10}")
    for side, values in times.items():
        med = statistics.median(values)
        print(f"{side:16} {med:>8.3f} {med - base:>+10.3f}")
    measured = args.rounds * args.ops
    print(
        f"adaptive: {after['samples'] - before} samples in {measured} measured ops; "
        f"threshold {after['threshold']} B; classes {after['classes']}"
    )


if __name__ == "__main__":
    main()
