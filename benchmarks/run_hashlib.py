"""What Python's own `hashlib` and `hmac` cost an unchanged program under `cryptoffload run`.

The same workload, written against `hashlib` and `hmac` only, runs in child processes three
ways, in alternating rounds: plain ``python`` (baseline), ``run --engines software`` (no engine
claims a hash: the program must get Python's own functions, at Python's speed; issue 32's goal
is 0.95 of it or better) and ``run --engines passthrough`` (every hash and HMAC goes through the
provider: Op, validation, routing, counting, answered by OpenSSL). Each child reports operations
per second per case (the best of five slices of ``--seconds``) and whether its
``hashlib.sha256`` is Python's; the medians over the rounds and the ratios to the baseline are
printed.

    python benchmarks/run_hashlib.py [--rounds N] [--seconds S]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

WORKLOAD = textwrap.dedent(
    """
    import _hashlib, hashlib, hmac, json, sys, time
    from hashlib import sha256

    SECONDS = float(sys.argv[1])
    key, packet, block = bytes(32), bytes(64), bytes(1024)

    CASES = {
        "hmac-sha256 64 B (hmac.new, name)": lambda: hmac.new(key, packet, "sha256").digest(),
        "hmac-sha256 64 B (hmac.new, sha256)": lambda: hmac.new(key, packet, sha256).digest(),
        "hmac-sha256 64 B (hmac.digest)": lambda: hmac.digest(key, packet, "sha256"),
        "sha256 1 KiB (hashlib.sha256)": lambda: hashlib.sha256(block).digest(),
        "sha256 1 KiB (hashlib.new)": lambda: hashlib.new("sha256", block).digest(),
    }
    rates = {}
    for name, fn in CASES.items():
        best = 0.0
        for _ in range(5):  # the best of five slices: the box's other load only slows one
            n, start = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - start) < SECONDS / 5:
                for _ in range(50):
                    fn()
                n += 50
            best = max(best, n / elapsed)
        rates[name] = best
    print(json.dumps({"pythons": hashlib.sha256 is _hashlib.openssl_sha256, "rates": rates}))
    """
)

WAYS = {
    "python": [],
    "run, software": ["-m", "cryptoffload", "run", "--engines", "software"],
    "run, passthrough": ["-m", "cryptoffload", "run", "--engines", "passthrough"],
}
#: Whether each way's program must see Python's own hashlib.sha256.
PYTHONS = {"python": True, "run, software": True, "run, passthrough": False}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument("--seconds", type=float, default=0.5, help="per case per round")
    args = parser.parse_args()
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(WORKLOAD)
    rates: dict[str, dict[str, list[float]]] = {way: {} for way in WAYS}
    try:
        for round_ in range(args.rounds):
            for way, prefix in WAYS.items():
                out = subprocess.run(
                    [sys.executable, *prefix, f.name, str(args.seconds)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                report = json.loads(out.stdout.strip().splitlines()[-1])
                assert report["pythons"] is PYTHONS[way], (way, report["pythons"])
                for case, rate in report["rates"].items():
                    rates[way].setdefault(case, []).append(rate)
            print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        os.unlink(f.name)
    from _rates import print_rates  # beside this script

    print_rates(rates, 38, 22)


if __name__ == "__main__":
    main()
