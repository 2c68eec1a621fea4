"""Memory while streaming a long hash (1 GiB by default) through each kind of provider."""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import cryptodev_standin
from _proc import rss_mib
from doubles import TakeAllEngine

from cryptoffload import Policy, Provider, _stream, hashes

MiB = 1 << 20
ALL = Policy(min_size={"*": 0})


ABOUT = """\
The message is fed in 1 MiB updates from one reused buffer (as a file read with readinto is), and
the digest checked against hashlib's. Traced memory (tracemalloc: the peak above the start) and
the process's resident size are printed per provider:
  software        no engine: the updates go straight into OpenSSL's context
  gathered        an engine that keeps no running state: 4 MiB gathered, then software
  engine stream   an engine that holds the running hash (cryptodev over its stand-in): the
                  context keeps what it sent, so that software can redo it after a fault, up
                  to the retain limit (256 MiB); past it software takes the stream
  stream, max 16M the same with a policy max_size of 16 MiB for sha256: kept up to 16 MiB

Run: python benchmarks/hash_memory.py [--gib N] [--only NAME]
"""


def providers() -> dict[str, Provider]:
    cryptodev_standin.install()
    capped = Policy(min_size={"*": 0}, max_size={"sha256": 16 * MiB})
    return {
        "software": Provider([]),
        "gathered": Provider([TakeAllEngine()], policy=ALL),
        "engine stream": Provider(["cryptodev:any"], policy=ALL),
        "stream, max 16M": Provider(["cryptodev:any"], policy=capped),
    }


def where(provider: Provider) -> str:
    """Which engine counted the op, and the declines on the way."""
    parts = []
    for engine, algs in provider.counters.snapshot().items():
        cell = algs.get("sha256")
        if cell and (cell["ops"] or cell["declined"]):
            declined = ",".join(f"{r}" for r in cell["declined"])
            parts.append(
                f"{engine}: {cell['ops']} op" + (f" (declined {declined})" if declined else "")
            )
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, epilog=ABOUT, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gib", type=float, default=1.0, help="message size in GiB")
    parser.add_argument("--only", help="one provider by name")
    args = parser.parse_args(argv)
    total = int(args.gib * 1024) * MiB
    print(
        f"sha256 over {total / MiB:.0f} MiB in 1 MiB updates; gather limit "
        f"{_stream.GATHER_LIMIT // MiB} MiB, retain limit {_stream.RETAIN_LIMIT // MiB} MiB"
    )
    header = (
        f"{'provider':<16} {'seconds':>7} {'MiB/s':>7} {'traced peak MiB':>15} {'RSS MiB':>8}  work"
    )
    print(header)
    print("-" * (len(header) + 30))
    chunk = bytearray(MiB)
    bad = 0
    for name, provider in providers().items():
        if args.only and name != args.only:
            continue
        reference = hashlib.sha256()
        tracemalloc.start()
        start_mem = tracemalloc.get_traced_memory()[0]
        began = time.perf_counter()
        ctx = hashes.Hash(hashes.SHA256(), provider=provider)
        for i in range(total // MiB):
            chunk[:8] = i.to_bytes(8, "big")
            ctx.update(chunk)
            reference.update(chunk)
        digest = ctx.finalize()
        took = time.perf_counter() - began
        peak = (tracemalloc.get_traced_memory()[1] - start_mem) / MiB
        tracemalloc.stop()
        ok = digest == reference.digest()
        bad += not ok
        print(
            f"{name:<16} {took:>7.1f} {total / MiB / took:>7.0f} {peak:>15.1f} {rss_mib():>8.0f}  "
            f"{where(provider)}{'' if ok else '  WRONG DIGEST'}"
        )
        provider.close()
    print(
        "seconds include hashlib's reference over the same updates; traced peak: Python memory "
        "above the start (tracemalloc), RSS: the process's resident size after the run"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
