"""What adaptive routing's first ops cost, from a fresh start, with and without exploring.

A fresh provider per trial runs ``--rounds`` rounds of a size mix (one AES-128-GCM encrypt of
each size a round, through ``AESGCM``) with an engine and a stand-in for software that cross
(synthetic engines, ``--engine`` and ``--software``); the engine takes every size to start, so
adaptive routing must move the threshold to settle. Side by side in one process, rotating
order, every trial: software alone, the engine alone, adaptive with ``explore`` 0 (a class
settles after ``2 * min_samples`` due ops, one op in 64 due) and adaptive with the default
``explore`` (due ops back to back at the start and after each move). Prints each one's median
wall time for the whole run, and the adaptive ones against the per-size better path (for each
size the faster of software alone and the engine alone, timed in the same trials).

Run: python benchmarks/adaptive_settling.py [--rounds N] [--trials N] [--sizes LIST]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time

from cryptoffload import Policy, Provider
from cryptoffload.aead import AESGCM
from cryptoffload.core.adaptive import AdaptiveSettings
from cryptoffload.core.lane import SOFTWARE
from cryptoffload.engines import from_spec
from cryptoffload.tools import verify

ALG = "aes-128-gcm"
KEY, NONCE = bytes(range(16)), bytes(12)
SIZES = "64,256,1024,4096,16384,65536,262144"


def run(provider: Provider, datas: list[bytes], rounds: int) -> list[float]:
    """Seconds spent on each size over ``rounds`` rounds of the mix."""
    encrypt = AESGCM(KEY, provider=provider).encrypt
    spent = [0.0] * len(datas)
    clock = time.perf_counter
    for _ in range(rounds):
        for i, data in enumerate(datas):
            start = clock()
            encrypt(NONCE, data, None)
            spent[i] += clock() - start
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--sizes", default=SIZES)
    parser.add_argument("--engine", default="synthetic:latency=100us,throughput=2GiB/s")
    parser.add_argument("--software", default="synthetic:latency=20us,throughput=200MiB/s")
    args = parser.parse_args()
    logging.getLogger("cryptoffload").setLevel(logging.ERROR)
    datas = [bytes(int(s)) for s in args.sizes.split(",")]

    def stand_in():
        engine = from_spec(args.software)
        engine.name = SOFTWARE
        return engine

    def fresh(side: str) -> Provider:
        engine = from_spec(args.engine)
        if side == "software":
            return Provider([stand_in()])
        if side == "engine":
            return Provider([engine, stand_in()], verify.TAKE_ALL)
        explore = 0 if side == "explore 0" else AdaptiveSettings().explore
        policy = Policy(min_size={ALG: 0}, adaptive={"explore": explore})
        return Provider([engine, stand_in()], policy)

    sides = ["software", "engine", "explore 0", "explore default"]
    totals: dict[str, list[float]] = {side: [] for side in sides}
    oracle: list[float] = []
    for trial in range(args.trials):
        k = trial % len(sides)
        spent = {side: run(fresh(side), datas, args.rounds) for side in sides[k:] + sides[:k]}
        for side in sides:
            totals[side].append(sum(spent[side]))
        oracle.append(sum(map(min, spent["software"], spent["engine"])))
    best = statistics.median(oracle)
    print(
        f"{args.rounds} rounds of sizes {args.sizes}; engine {args.engine}; "
        f"software {args.software}; median of {args.trials} trials"
    )
    print(f"{'provider':16} {'seconds':>8} {'best path / it':>15}")
    print(f"{'per-size best':16} {best:>8.3f} {1:>15.3f}")
    for side in sides:
        med = statistics.median(totals[side])
        print(f"{side:16} {med:>8.3f} {best / med:>15.3f}")


if __name__ == "__main__":
    main()
