"""What running an unchanged program under `cryptoffload run` costs, side by side.

The same workload, written against `cryptography` only (it never imports cryptoffload), runs in
child processes three ways, in alternating rounds: plain ``python`` (baseline), ``python -m
cryptoffload run --engines software`` (every op on the software fast path: what a machine without
engines pays) and ``... --engines passthrough`` (every op takes the full engine path: Op,
validation, routing, counting, answered by OpenSSL). Each child reports operations per second per
case; the medians and the ratios to the baseline are printed, with the import-hook's start-up cost.

    python benchmarks/run_overhead.py [--rounds N] [--seconds S]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

WORKLOAD = textwrap.dedent(
    """
    import json, sys, time
    from cryptography.hazmat.primitives import hashes, hmac
    from cryptography.hazmat.primitives.asymmetric import ec, x25519
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    SECONDS = float(sys.argv[1])
    gcm, record = AESGCM(bytes(16)), bytes(1400)
    signer = ec.generate_private_key(ec.SECP256R1())
    mine, peer = x25519.X25519PrivateKey.generate(), x25519.X25519PrivateKey.generate().public_key()
    block = bytes(16384)

    def sha256_1k():
        h = hashes.Hash(hashes.SHA256()); h.update(block[:1024]); h.finalize()

    def hmac_64():
        h = hmac.HMAC(bytes(32), hashes.SHA256()); h.update(block[:64]); h.finalize()

    def ctr_16k():
        Cipher(algorithms.AES(bytes(16)), modes.CTR(bytes(16))).encryptor().update(block)

    CASES = {
        "aes-128-gcm 1400 B": lambda: gcm.encrypt(bytes(12), record, None),
        "sha256 1 KiB (Hash)": sha256_1k,
        "hmac-sha256 64 B": hmac_64,
        "aes-128-ctr 16 KiB (Cipher)": ctr_16k,
        "ecdsa-p256 sign": lambda: signer.sign(record, ec.ECDSA(hashes.SHA256())),
        "x25519": lambda: mine.exchange(peer),
    }
    rates = {}
    for name, fn in CASES.items():
        n, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < SECONDS:
            for _ in range(20):
                fn()
            n += 20
        rates[name] = n / elapsed
    print(json.dumps({"module": hashes.__name__, "rates": rates}))
    """
)

WAYS = {
    "python": [],
    "run, software": ["-m", "cryptoffload", "run", "--engines", "software"],
    "run, passthrough": ["-m", "cryptoffload", "run", "--engines", "passthrough"],
}


def start_up_seconds(prefix: list[str], rounds: int) -> float:
    """Median wall time of starting the interpreter (and the hook) on an empty script."""
    import time

    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write("import cryptography.hazmat.primitives.hashes\n")
    times = []
    try:
        for _ in range(rounds):
            start = time.perf_counter()
            subprocess.run([sys.executable, *prefix, f.name], check=True)
            times.append(time.perf_counter() - start)
    finally:
        os.unlink(f.name)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    parser.add_argument("--seconds", type=float, default=0.3, help="per case per round")
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
                expected = "cryptography" if way == "python" else "cryptoffload"
                assert report["module"].startswith(expected), (way, report["module"])
                for case, rate in report["rates"].items():
                    rates[way].setdefault(case, []).append(rate)
            print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        os.unlink(f.name)
    base = rates["python"]
    header = f"{'case':<30}" + "".join(f"{way:>22}" for way in WAYS)
    print(header)
    for case in base:
        cells = []
        for way in WAYS:
            median = statistics.median(rates[way][case])
            ratio = median / statistics.median(base[case])
            cells.append(
                f"{median:>12,.0f}/s" + (f" {ratio:5.2f}x" if way != "python" else "      ")
            )
        print(f"{case:<30}" + "".join(f"{c:>22}" for c in cells))
    print("start-up (interpreter + hook, median of 5):")
    for way, prefix in WAYS.items():
        print(f"  {way:<20} {start_up_seconds(prefix, 5) * 1000:7.0f} ms")


if __name__ == "__main__":
    main()
