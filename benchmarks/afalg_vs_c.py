"""The AF_ALG engine against a C loop on the same kernel path, side by side (run in the rig).

For each driver and size: AES-128-CBC encrypt, one op per call, through (1) the C program
benchmarks/afalg_speed.c, (2) the engine's run(op) alone, (3) the full API (Cipher through a
Provider holding the engine). Prints MiB/s, the ratios to C, and the per-op overhead at the
smallest size. The three are measured one after the other in each of --rounds rounds and the
ratios are medians over rounds, so a slow spell of this shared machine hits all three alike.
Under TCG absolute figures mean nothing; ratios measured in one run do.
Run in the guest: rig/run python3 benchmarks/afalg_vs_c.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from cryptoffload import Policy, Provider
from cryptoffload.ciphers import Cipher, algorithms, modes
from cryptoffload.core.ops import CipherOp
from cryptoffload.engines.afalg import AfalgEngine

HERE = os.path.dirname(os.path.abspath(__file__))


def build_c(workdir: str) -> str:
    exe = os.path.join(workdir, "afalg_speed")
    subprocess.run(["gcc", "-O2", "-o", exe, os.path.join(HERE, "afalg_speed.c")], check=True)
    return exe


def c_rate(exe: str, driver: str, size: int, seconds: float) -> float:
    out = subprocess.run(
        [exe, driver, str(size), str(seconds)], capture_output=True, text=True, check=True
    ).stdout.split()
    return int(out[2]) / float(out[3])


def py_rate(fn, seconds: float) -> float:
    fn()
    ops, start = 0, time.perf_counter()
    while True:
        for _ in range(8):
            fn()
        ops += 8
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return ops / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drivers", default="virtio_crypto_aes_cbc,cbc-aes-aesni")
    parser.add_argument("--sizes", default="64,1408,16384,65536")
    parser.add_argument("--seconds", type=float, default=1.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_c(tmp)
        print(
            f"{'driver':24} {'size':>6} {'C MiB/s':>9} {'engine':>9} {'API':>9} "
            f"{'engine/C':>9} {'API/C':>7} {'added us/op (API)':>18}"
        )
        for driver in args.drivers.split(","):
            engine = AfalgEngine(driver=driver)
            caps = engine.probe()
            if not caps.available:
                print(f"{driver}: not available ({caps.reason})")
                continue
            provider = Provider([AfalgEngine(driver=driver)], policy=Policy(min_size={"*": 0}))
            for size in sizes:
                data, key, iv = bytes(size), bytes(16), bytes(16)
                op = CipherOp("aes-128-cbc", "encrypt", key, iv, data)
                enc = Cipher(algorithms.AES(key), modes.CBC(iv), provider=provider).encryptor()
                out = bytearray(size + 15)
                rounds = []
                for _ in range(args.rounds):
                    c = c_rate(exe, driver, size, args.seconds)
                    e = py_rate(lambda op=op, engine=engine: engine.run(op), args.seconds)
                    a = py_rate(
                        lambda enc=enc, data=data, out=out: enc.update_into(data, out),
                        args.seconds,
                    )
                    rounds.append((c, e, a, e / c, a / c, (1 / a - 1 / c) * 1e6))
                c, e, a, e_ratio, a_ratio, added = (
                    statistics.median(column) for column in zip(*rounds, strict=True)
                )
                mib = size / (1 << 20)
                print(
                    f"{driver:24} {size:>6} {c * mib:9.2f} {e * mib:9.2f} {a * mib:9.2f} "
                    f"{e_ratio:9.3f} {a_ratio:7.3f} {added:18.1f}"
                )
            snap = provider.counters.snapshot()
            print(
                f"  counters for {provider.engines[0].name}: "
                f"{snap[provider.engines[0].name].get('aes-128-cbc', {})}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
