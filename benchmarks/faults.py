"""Injected faults with nothing lost: engines that fail mid-run, and every operation still right."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from differential import TAKE_ALL
from fault_engines import DETECTION, SCENARIOS
from thread_workload import run_threads

from cryptoffload import Provider

ABOUT = """\
Each scenario builds a provider whose engine fails on purpose while THREADS threads run the mixed
workload of benchmarks/concurrency.py on it (every answer checked against `cryptography`, every
operation tallied), an injector striking every 50 ms: an engine that vanishes (ENODEV, no-device),
declines or faults at random, fails after writing part of its output, or slows down; the CAAM
model with error statuses (batch items included), stalls past the engine's timeout, ring resets
with jobs in flight, a full ring, silently corrupted output under a cross-checking provider; the
/dev/crypto stand-in failing requests after scribbling into their output, or losing every
descriptor (the module unloaded under the engine).

Printed per scenario: operations issued, faults injected (injector events), operations that an
engine failed or declined (the counters' faults and declines), operations lost (a wrong answer or
an exception no operation should raise: must be 0), counter drift (must be 0), threads stuck,
and the longest task (a stall must cost the engine's timeout, never a hang).

Run: python benchmarks/faults.py [--threads N] [--tasks N] [--only TEXT] [--seed S]
"""


def totals(provider: Provider) -> tuple[int, int, int]:
    """(faults, declines, cross-check mismatches) over every engine but software."""
    faults = declines = mismatches = 0
    for engine, algs in provider.counters.snapshot().items():
        if engine == "software":
            continue
        for cell in algs.values():
            faults += cell["faults"]
            declines += sum(cell["declined"].values())
            mismatches += cell.get("mismatches", 0)
    return faults, declines, mismatches


def run_scenario(name: str, seed: int, threads: int, tasks: int) -> dict:
    """One scenario's figures (see the module docstring)."""
    engines, make_injector, options = SCENARIOS[name](seed)
    provider = Provider(engines, policy=TAKE_ALL, **options)
    if provider.unavailable:
        raise RuntimeError(f"{name}: {provider.unavailable}")
    injector = make_injector(provider)
    try:
        run = run_threads(provider, threads, seed, tasks=tasks, on_sample=injector.tick)
    finally:
        injector.finish()
    faults, declines, mismatches = totals(provider)
    provider.close()
    return {
        "scenario": name,
        "ops": run.ops,
        "injected": injector.injected,
        "faulted": faults,
        "declined": declines,
        "mismatches": mismatches,
        "lost": len(run.wrong) + len(run.errors),
        "drift": run.drift,
        "stuck": run.stuck,
        "slowest": run.slowest,
        "seconds": run.seconds,
        "detail": (run.wrong + run.errors)[:3],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, epilog=ABOUT, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=60, help="tasks per thread")
    parser.add_argument("--only", help="scenarios whose name contains this text")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    names = [n for n in SCENARIOS if not args.only or args.only in n]
    # The fallback watch's warnings and the cross-check's errors say what the figures below
    # count; keep the table readable.
    logging.getLogger("cryptoffload").setLevel(logging.CRITICAL)
    print(f"{args.threads} threads x {args.tasks} tasks per scenario, injector every 50 ms")
    header = (
        f"{'scenario':<38} {'ops':>6} {'injected':>8} {'faulted':>7} {'declined':>8} "
        f"{'lost':>4} {'drift':>5} {'stuck':>5} {'slowest':>8}"
    )
    print(header)
    print("-" * len(header))
    bad = 0
    survived = injected = 0
    for name in names:
        r = run_scenario(name, args.seed, args.threads, args.tasks)
        print(
            f"{name:<38} {r['ops']:>6} {r['injected']:>8} {r['faulted']:>7} {r['declined']:>8} "
            f"{r['lost']:>4} {r['drift']:>5} {r['stuck']:>5} {r['slowest']:>7.2f}s"
        )
        if r["mismatches"]:
            print(f"    cross-check: {r['mismatches']} wrong results caught, software answered")
        for line in r["detail"]:
            print(f"    {line}")
        if name in DETECTION:
            if r["lost"]:
                print(
                    f"    {r['lost']} corrupted answers escaped the cross-check (it cannot open "
                    "an RSA ciphertext: random padding, no private key); not counted as lost"
                )
            bad += r["stuck"]
            continue
        bad += r["lost"] + r["drift"] + r["stuck"]
        injected += r["injected"]
        survived += r["faulted"] + r["declined"]
    print(
        f"faults injected: {injected}; operations an engine failed or declined and that still "
        f"got the right answer: {survived}; operations lost: {bad} (corruption scenario apart)"
    )
    print(
        "injected: injector events (a stall or ring reset fails every job in flight); faulted / "
        "declined: operations the counters show an engine failed or declined; lost: wrong "
        "answers and errors; drift: |counted - issued|; slowest: the longest task (1 to 16 ops)"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
