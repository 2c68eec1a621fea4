"""Many threads sharing one provider and its engines: right answers, exact counters, no deadlock."""

from __future__ import annotations

import argparse
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from differential import TAKE_ALL, build_engine, cryptodev_present
from thread_workload import run_threads

from cryptoffload import Provider

ABOUT = """\
Each engine set gets one provider; THREADS threads run a mixed workload on it (AES-GCM through
one shared AESGCM object and through per-thread ones with short tags, CCM, GCM batches, cipher
contexts, hashes, HMAC/CMAC/GMAC, RSA sign/verify/OAEP and ECDSA/ECDH on shared keys, FFDH, a
shared DRBG and per-thread ones), every answer checked against `cryptography`, every operation
tallied by algorithm. After the threads are joined (a deadline: those still running are counted
as stuck), the provider's counters must hold exactly the operations issued, algorithm by
algorithm; open descriptors are sampled while it runs and traced memory compared before and
after (a second round on the same provider shows whether anything grows per operation).

The "all" set puts every engine in one provider (cryptodev, the CAAM model, chaos, takeall, in
that order), so that declines and faults of one move work to the next under contention.

Run: python benchmarks/concurrency.py [--threads N] [--tasks N] [--engines SPEC,...]
     [--rounds N] [--seed S]
"""

SETS = ["software", "takeall", "chaos", "caam:model=t2080", "caam:model=imx7d"]


def provider_for(spec: str, seed: int) -> Provider:
    """The provider of one engine set (``all``: every engine, in priority order)."""
    if spec == "software":
        return Provider([])
    if spec == "all":
        specs = ["cryptodev:any"] if cryptodev_present() else []
        specs += ["caam:model=t2080", "chaos", "takeall"]
        return Provider([build_engine(s, seed) for s in specs], policy=TAKE_ALL)
    return Provider([build_engine(spec, seed)], policy=TAKE_ALL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, epilog=ABOUT, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--tasks", type=int, default=150, help="tasks per thread per round")
    parser.add_argument("--rounds", type=int, default=2, help="rounds on the same provider")
    parser.add_argument("--engines", help="comma-separated engine sets (default: all present)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--deadline", type=float, default=300.0, help="seconds per round")
    args = parser.parse_args(argv)
    specs = args.engines.split(",") if args.engines else [*SETS]
    if not args.engines:
        specs += ["cryptodev:any"] * bool(cryptodev_present()) + ["all"]
    print(
        f"{args.threads} threads x {args.tasks} tasks x {args.rounds} rounds per engine set "
        "(each task: 1 to 16 operations)"
    )
    header = (
        f"{'engine set':<18} {'round':>5} {'ops':>7} {'ops/s':>7} {'wrong':>5} {'errors':>6} "
        f"{'drift':>5} {'stuck':>5} {'fds before/max/after':>21} {'KiB before/after':>17}"
    )
    print(header)
    print("-" * len(header))
    bad = 0
    tracemalloc.start()  # before any provider: later rounds show what stays per round
    for spec in specs:
        provider = provider_for(spec, args.seed)
        for rnd in range(args.rounds):
            run = run_threads(
                provider, args.threads, args.seed + rnd, tasks=args.tasks, deadline=args.deadline
            )
            fds = "/".join(map(str, run.fds))
            mem = "/".join(map(str, run.memory))
            print(
                f"{spec:<18} {rnd + 1:>5} {run.ops:>7} {run.ops / run.seconds:>7.0f} "
                f"{len(run.wrong):>5} {len(run.errors):>6} {run.drift:>5} {run.stuck:>5} "
                f"{fds:>21} {mem:>17}"
            )
            for line in (run.wrong + run.errors)[:3]:
                print(f"    {line}")
            if run.drift:
                for alg in sorted(set(run.issued) | set(run.counted)):
                    if run.issued[alg] != run.counted[alg]:
                        print(f"    {alg}: issued {run.issued[alg]}, counted {run.counted[alg]}")
            bad += len(run.wrong) + len(run.errors) + run.drift + run.stuck
        provider.close()
    print(
        "ops: operations issued; wrong: answers that differ from cryptography's; errors: "
        "exceptions no operation should raise; drift: |counted - issued| summed over "
        "algorithms; stuck: threads not done by the deadline; fds: open descriptors; KiB: "
        "traced Python memory before the round and after it (threads joined, collected)"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
