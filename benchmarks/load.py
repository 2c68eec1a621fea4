"""Load: a long mixed run on every engine, memory and descriptors held under ceilings throughout."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _proc import rss_mib
from differential import TAKE_ALL, build_engine, cryptodev_present
from thread_workload import forget_records, open_fds, run_threads

from cryptoffload import Provider

ABOUT = """\
Throughput under contention per engine is printed next to its single-thread figure.

First, per engine (software; the CAAM model; cryptodev over its stand-in, or /dev/crypto; AF_ALG
where the kernel has it), the mixed workload of benchmarks/concurrency.py runs for --phase
seconds on one thread, then on --threads threads: the operations each engine completed per
second (from the provider's counters), and the share of operations it took rather than software.
The workload's tasks check every answer against `cryptography`, so the figures are of the whole
path (API, engine, check), for comparing one thread with many, not engines with OpenSSL.

Then the long run: every engine in one provider (in the order printed, software last), --threads
threads for --seconds, sampled every 0.5 s: open descriptors against a ceiling (those at the
start plus --fd-slack: 16, and the AF_ALG engine's own bound where it runs) and resident
memory against a ceiling (at the start plus --rss-slack MiB). A sample over a ceiling is a
violation. Wrong answers, errors, counter drift and stuck threads are counted as in the
concurrency run.

Run: python benchmarks/load.py --seconds N [--threads N] [--phase S] [--seed S]
"""


def engines_present() -> list[str]:
    """Every engine this machine can run, those that claim less first (the CAAM model, which
    claims the most, last: it takes what the others decline)."""
    specs = []
    if cryptodev_present():
        specs.append("cryptodev:any")
    try:
        from cryptoffload.engines.afalg import AfalgEngine

        if AfalgEngine(allow_software=True).probe().available:
            specs.append("afalg:any")
    except Exception:  # no AF_ALG here
        pass
    return [*specs, "caam:model=t2080"]


def per_engine(provider: Provider, seconds: float) -> dict[str, float]:
    """Operations per second each engine completed over the last ``seconds``."""
    out: dict[str, float] = {}
    for engine, algs in provider.counters.snapshot().items():
        out[engine] = sum(c["ops"] for c in algs.values()) / seconds
    return out


def phase(spec: str, threads: int, seconds: float, seed: int) -> tuple[float, float]:
    """(engine ops/s, the engine's share of all ops) of ``threads`` threads for ``seconds``."""
    provider = Provider([] if spec == "software" else [build_engine(spec, seed)], policy=TAKE_ALL)
    run = run_threads(provider, threads, seed, seconds=seconds, trace=False)
    rates = per_engine(provider, run.seconds)
    provider.close()
    name = "software" if spec == "software" else provider.engines[0].name
    total = sum(rates.values())
    return rates.get(name, 0.0), (rates.get(name, 0.0) / total if total else 0.0)


class Ceilings:
    """Samples descriptors and resident memory; counts the samples over their ceilings."""

    def __init__(self, provider: Provider, fd_slack: int, rss_slack: float) -> None:
        self.provider = provider
        self.fds0, self.rss0 = open_fds(), rss_mib()
        self.fd_ceiling = self.fds0 + fd_slack
        self.rss_ceiling = self.rss0 + rss_slack
        self.samples = self.violations = 0
        self.max_fds, self.max_rss = self.fds0, self.rss0
        self.rss_at: list[tuple[float, float]] = []
        self._start = time.perf_counter()

    def sample(self) -> None:
        forget_records(self.provider)
        fds, rss = open_fds(), rss_mib()
        self.samples += 1
        self.max_fds, self.max_rss = max(self.max_fds, fds), max(self.max_rss, rss)
        self.violations += (fds > self.fd_ceiling) + (rss > self.rss_ceiling)
        self.rss_at.append((time.perf_counter() - self._start, rss))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, epilog=ABOUT, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=120.0, help="the long run (default 120)")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--phase", type=float, default=5.0, help="seconds per throughput phase")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--fd-slack",
        type=int,
        help="descriptors above the start allowed (default 16, and with AF_ALG its bound: "
        "MAX_SOCKETS + MAX_TFMS + one per thread)",
    )
    parser.add_argument("--rss-slack", type=float, default=64.0, help="MiB")
    args = parser.parse_args(argv)
    logging.getLogger("cryptoffload").setLevel(logging.ERROR)  # the chaos of fallbacks is counted
    specs = engines_present()
    print(f"engines present: software, {', '.join(specs)}")
    print(f"throughput, {args.phase:.0f} s per phase (engine ops/s; its share of all ops):")
    header = (
        f"{'engine':<18} {'1 thread':>10} {f'{args.threads} threads':>11} {'ratio':>6} {'share':>6}"
    )
    print(header)
    print("-" * len(header))
    for spec in ["software", *specs]:
        one, _ = phase(spec, 1, args.phase, args.seed)
        many, share = phase(spec, args.threads, args.phase, args.seed)
        ratio = many / one if one else 0.0
        print(f"{spec:<18} {one:>10.0f} {many:>11.0f} {ratio:>6.2f} {share:>6.0%}")

    provider = Provider([build_engine(s, args.seed) for s in specs], policy=TAKE_ALL)
    fd_slack = args.fd_slack
    if fd_slack is None:
        fd_slack = 16
        if any(s.startswith("afalg") for s in specs):
            from cryptoffload.engines import afalg

            fd_slack += afalg.MAX_SOCKETS + afalg.MAX_TFMS + args.threads
    ceilings = Ceilings(provider, fd_slack, args.rss_slack)
    run = run_threads(
        provider,
        args.threads,
        args.seed,
        seconds=args.seconds,
        on_sample=ceilings.sample,
        trace=False,
    )
    ceilings.sample()
    rates = per_engine(provider, run.seconds)
    provider.close()
    print(
        f"\nlong run: {args.threads} threads, {run.seconds:.0f} s, {run.ops} ops "
        f"({run.ops / run.seconds:.0f}/s), by engine: "
        + ", ".join(f"{e} {r:.0f}/s" for e, r in rates.items())
    )
    third = len(ceilings.rss_at) // 3
    early = max((r for _, r in ceilings.rss_at[:third]), default=0.0)
    late = max((r for _, r in ceilings.rss_at[-third:]), default=0.0)
    print(
        f"  descriptors: {ceilings.fds0} at start, at most {ceilings.max_fds} "
        f"(ceiling {ceilings.fd_ceiling}); resident: {ceilings.rss0:.0f} MiB at start, at most "
        f"{ceilings.max_rss:.0f} MiB (ceiling {ceilings.rss_ceiling:.0f}); most in the first "
        f"third {early:.0f} MiB, in the last third {late:.0f} MiB"
    )
    print(
        f"  samples {ceilings.samples}, over a ceiling {ceilings.violations}; wrong "
        f"{len(run.wrong)}, errors {len(run.errors)}, drift {run.drift}, stuck {run.stuck}, "
        f"longest task {run.slowest:.2f} s"
    )
    for line in (run.wrong + run.errors)[:5]:
        print(f"    {line}")
    bad = ceilings.violations + len(run.wrong) + len(run.errors) + run.drift + run.stuck
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
