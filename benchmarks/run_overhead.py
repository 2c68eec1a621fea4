"""What running an unchanged program under `cryptoffload run` costs, side by side.

The same workload, written against `cryptography` only (it never imports cryptoffload), runs in
child processes three ways, in alternating rounds: plain ``python`` (baseline), ``python -m
cryptoffload run --engines software`` (every op on the software fast path: what a machine without
engines pays) and ``... --engines passthrough`` (every op takes the full engine path: Op,
validation, routing, counting, answered by OpenSSL). Each child reports operations per second per
case; the medians and the ratios to the baseline are printed.

Then start-up (issue 32: ``run`` should start within 30 ms of ``python``): an empty script, one
that imports hashlib and hmac, and one AES-GCM op by `cryptography`'s import path, each started
plain, under ``run`` as a user types it (the engines found) and the two ways above, in
alternating rounds; wall-time medians, spreads and paired differences, and with
``--instructions`` the instructions each start executes (callgrind, steadier than wall time on a
shared machine).

    python benchmarks/run_overhead.py [--rounds N] [--seconds S] [--startup-rounds N]
                                      [--startup-only] [--instructions]
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


#: The start-up case's programs: nothing at all, what many a library does at import (hashlib and
#: hmac), and one AES-GCM op by `cryptography`'s path.
START_UP_SCRIPTS = {
    "empty script": "",
    "imports hashlib, hmac": "import hashlib, hmac\n",
    "one AES-GCM op": textwrap.dedent(
        """
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        AESGCM(bytes(16)).encrypt(bytes(12), b"one record", None)
        """
    ),
}
#: The start-up case's ways: ``run`` as a user types it (the engines found) first.
START_UP_WAYS = {
    "python": [],
    "run": ["-m", "cryptoffload", "run"],
    **{way: prefix for way, prefix in WAYS.items() if way != "python"},
}


def start_up(rounds: int, instructions: bool) -> None:
    """Wall time of starting each way on each start-up script, in alternating rounds (the order
    of the ways turns each round, so none always runs first): medians, the spread (10th to 90th
    percentile), and the median over rounds of each way minus ``python`` in the same round. With
    ``instructions``, also the instructions each executes once (callgrind: steady on a loaded
    machine, where wall time is not)."""
    import time

    if sys.flags.dont_write_bytecode or os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print(
            "note: PYTHONDONTWRITEBYTECODE is set: modules without a cached .pyc are compiled "
            "at every start (an installed package has them)",
            file=sys.stderr,
        )
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for n, (case, text) in enumerate(START_UP_SCRIPTS.items()):
            paths[case] = os.path.join(folder, f"startup{n}.py")
            with open(paths[case], "w") as f:
                f.write(text)
        ways = list(START_UP_WAYS.items())
        times: dict[str, dict[str, list[float]]] = {
            case: {way: [] for way in START_UP_WAYS} for case in paths
        }
        for round_ in range(rounds + 1):  # round 0 warms the caches, and is not counted
            turned = ways[round_ % len(ways) :] + ways[: round_ % len(ways)]
            for case, path in paths.items():
                for way, prefix in turned:
                    start = time.perf_counter()
                    subprocess.run([sys.executable, *prefix, path], check=True)
                    if round_:
                        times[case][way].append(time.perf_counter() - start)
        print(f"start-up, ms (median [10th-90th percentile] of {rounds} alternating rounds):")
        for case, by_way in times.items():
            print(f"  {case}")
            base = by_way["python"]
            for way, seconds in by_way.items():
                extra = ""
                if way != "python":
                    paired = [a - b for a, b in zip(seconds, base, strict=True)]
                    extra = f"   python +{_ms(statistics.median(paired)):.0f} (paired median)"
                median = _ms(statistics.median(seconds))
                print(f"    {way:<18} {median:6.0f} {_spread(seconds):>11}{extra}")
        if instructions:
            print("start-up, instructions executed (callgrind, one run each):")
            for case, path in paths.items():
                print(f"  {case}")
                for way, prefix in ways:
                    count = _instructions([sys.executable, *prefix, path])
                    print(f"    {way:<18} {count / 1e6:8.1f} M")


def _ms(seconds: float) -> float:
    return seconds * 1000


def _spread(seconds: list[float]) -> str:
    if len(seconds) < 2:
        return ""
    deciles = statistics.quantiles(seconds, n=10)
    return f"[{_ms(deciles[0]):.0f}-{_ms(deciles[-1]):.0f}]"


def _instructions(command: list[str]) -> int:
    """Instructions ``command`` executes (valgrind's callgrind; children not followed)."""
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        check=True,
        capture_output=True,
        text=True,
    )
    for line in out.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1])
    raise RuntimeError(f"no instruction count from callgrind: {out.stderr[-500:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    parser.add_argument("--seconds", type=float, default=0.3, help="per case per round")
    parser.add_argument(
        "--startup-rounds", type=int, default=20, help="alternating start-up rounds (default 20)"
    )
    parser.add_argument(
        "--startup-only", action="store_true", help="measure start-up only, not the op rates"
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count start-up's instructions under valgrind's callgrind",
    )
    args = parser.parse_args()
    if not args.startup_only:
        rates_side_by_side(args.rounds, args.seconds)
    start_up(args.startup_rounds, args.instructions)


def rates_side_by_side(rounds: int, seconds: float) -> None:
    """Each way's operations per second per case, medians over alternating rounds."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(WORKLOAD)
    rates: dict[str, dict[str, list[float]]] = {way: {} for way in WAYS}
    try:
        for round_ in range(rounds):
            for way, prefix in WAYS.items():
                out = subprocess.run(
                    [sys.executable, *prefix, f.name, str(seconds)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                report = json.loads(out.stdout.strip().splitlines()[-1])
                expected = "cryptography" if way == "python" else "cryptoffload"
                assert report["module"].startswith(expected), (way, report["module"])
                for case, rate in report["rates"].items():
                    rates[way].setdefault(case, []).append(rate)
            print(f"round {round_ + 1}/{rounds} done", file=sys.stderr)
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


if __name__ == "__main__":
    main()
