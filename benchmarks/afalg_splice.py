"""sendmsg against vmsplice+splice for AF_ALG cipher requests, side by side (run in the rig).

For each driver and size, the engine's run(op) with splicing off (splice="never": the request
is copied by sendmsg) and on (splice="always": the pages are spliced), interleaved in rounds so
both see the same machine. Prints MiB/s and the ratio; the engine's SPLICE_MIN is where the
ratio crosses 1. Run in the guest: rig/run python3 benchmarks/afalg_splice.py
"""

from __future__ import annotations

import argparse
import statistics
import sys

from afalg_vs_c import py_rate as rate

from cryptoffload.core.ops import CipherOp
from cryptoffload.engines.afalg import AfalgEngine


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drivers", default="virtio_crypto_aes_cbc,cbc-aes-aesni")
    parser.add_argument("--sizes", default="1408,4096,8192,16384,32768,65536")
    parser.add_argument("--seconds", type=float, default=0.5, help="per measurement")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{'driver':24} {'size':>6} {'sendmsg MiB/s':>14} {'splice MiB/s':>13} {'splice/send':>12}"
    )
    for driver in args.drivers.split(","):
        copying = AfalgEngine(driver=driver, splice="never")
        splicing = AfalgEngine(driver=driver, splice="always", splice_min=0)
        caps = copying.probe()
        splicing.probe()
        if not caps.available:
            print(f"{driver}: not available ({caps.reason})")
            continue
        for size in (int(s) for s in args.sizes.split(",")):
            op = CipherOp("aes-128-cbc", "encrypt", bytes(16), bytes(16), bytes(size))
            assert copying.run(op) == splicing.run(op)
            ratios, sends, splices = [], [], []
            for _ in range(args.rounds):
                a = rate(lambda e=copying, op=op: e.run(op), args.seconds)
                b = rate(lambda e=splicing, op=op: e.run(op), args.seconds)
                sends.append(a)
                splices.append(b)
                ratios.append(b / a)
            mib = size / (1 << 20)
            print(
                f"{driver:24} {size:>6} {statistics.median(sends) * mib:14.2f} "
                f"{statistics.median(splices) * mib:13.2f} {statistics.median(ratios):12.3f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
