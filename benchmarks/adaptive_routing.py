"""Adaptive routing against the better of software alone and the engine alone, side by side.

An engine with a known cost curve (``--engine-latency`` + bytes / ``--engine-rate``) and a
software stand-in with another (``--software-latency`` + bytes / ``--software-rate``), both
answering through OpenSSL and spinning to their curve's deadline, so that a crossover exists on
any machine (the engine wins above a few KiB with the defaults). Three providers run
AES-128-GCM encrypt ops (``Provider.run``: the Op path, so that software is the stand-in) side
by side in one process, rotating order: software only, the engine only (``min_size`` 0), and
the engine with adaptive routing (``min_size`` 0 to start: the engine takes everything until
the evidence moves the threshold), warmed up first over the size mix. Prints, per size, each
side's ops/s (medians over trials) and adaptive / best of the other two (goal: >= 0.95).

This is issue 24's item 2 measured on a stand-in engine of this file; the synthetic engine of
``engines/synthetic.py`` and ``benchmarks/routing.py --adaptive`` are for when that lands.

Run: python benchmarks/adaptive_routing.py [--trials N] [--time S] [--sizes LIST]
"""

from __future__ import annotations

import argparse
import statistics
import time

from cryptoffload import Policy, Provider
from cryptoffload.core.ops import AeadOp
from cryptoffload.engines.base import Capabilities
from cryptoffload.engines.software import SoftwareEngine

ALG = "aes-128-gcm"
KEY, NONCE = bytes(range(16)), bytes(12)
SIZES = [64, 256, 1024, 4096, 16384, 65536, 262144, 1 << 20]
GOAL = 0.95


class CurveEngine(SoftwareEngine):
    """OpenSSL's answer, returned ``latency + size / rate`` seconds after the op came in."""

    def __init__(self, name: str, latency: float, rate: float) -> None:
        self.name, self.latency, self.rate = name, latency, rate

    def probe(self) -> Capabilities:
        return Capabilities(available=True, algorithms=frozenset({ALG}))

    def run(self, op):
        deadline = time.perf_counter() + self.latency + op.size / self.rate
        result = super().run(op)
        while time.perf_counter() < deadline:
            pass
        return result


def rate(provider: Provider, op: AeadOp, seconds: float) -> float:
    """Ops per second of ``provider.run(op)`` over about ``seconds``."""
    n, start = 0, time.perf_counter()
    end = start + seconds
    while True:
        provider.run(op)
        n += 1
        now = time.perf_counter()
        if now >= end:
            return n / (now - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5, help="trials per side and size")
    parser.add_argument("--time", type=float, default=0.1, help="seconds per trial and side")
    parser.add_argument("--warmup", type=int, default=3000, help="warm-up ops per size")
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="payload sizes, comma-separated"
    )
    parser.add_argument("--engine-latency", type=float, default=20e-6)
    parser.add_argument("--engine-rate", type=float, default=2 * 1024**3)
    parser.add_argument("--software-latency", type=float, default=1e-6)
    parser.add_argument("--software-rate", type=float, default=200 * 1024**2)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    def engine() -> CurveEngine:
        return CurveEngine("curve", args.engine_latency, args.engine_rate)

    def software() -> CurveEngine:
        return CurveEngine("software", args.software_latency, args.software_rate)

    start_at = {ALG: 0}
    providers = {
        "software": Provider([software()]),
        "engine": Provider([engine(), software()], Policy(min_size=start_at)),
        "adaptive": Provider([engine(), software()], Policy(min_size=start_at, adaptive=True)),
    }
    ops = {size: AeadOp(ALG, "encrypt", KEY, NONCE, bytes(size), None, 16) for size in sizes}
    adaptive = providers["adaptive"]
    for _ in range(args.warmup):
        for size in sizes:
            adaptive.run(ops[size])
    before = adaptive.counters.snapshot()["curve"][ALG]["adaptive"]
    print(
        f"after warm-up: threshold {before['threshold']} B, {before['moves']} moves, "
        f"{before['samples']} samples"
    )
    print(f"{'bytes':>8} {'software/s':>11} {'engine/s':>10} {'adaptive/s':>11} {'ratio':>6}")
    worst = None
    order = list(providers)
    for size in sizes:
        rates: dict[str, list[float]] = {side: [] for side in providers}
        for trial in range(args.trials):
            for side in order[trial % 3 :] + order[: trial % 3]:
                rates[side].append(rate(providers[side], ops[size], args.time))
        med = {side: statistics.median(values) for side, values in rates.items()}
        ratio = med["adaptive"] / max(med["software"], med["engine"])
        worst = ratio if worst is None else min(worst, ratio)
        print(
            f"{size:>8} {med['software']:>11.0f} {med['engine']:>10.0f} "
            f"{med['adaptive']:>11.0f} {ratio:>6.3f}"
        )
    after = adaptive.counters.snapshot()["curve"][ALG]["adaptive"]
    print(
        f"at the end: threshold {after['threshold']} B, {after['moves']} moves, "
        f"{after['samples']} samples; worst ratio {worst:.3f} (goal {GOAL})"
    )


if __name__ == "__main__":
    main()
