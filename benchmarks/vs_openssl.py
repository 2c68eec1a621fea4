"""Software rows of `cryptoffload bench` against `openssl speed -elapsed -evp`, side by side.

For each algorithm the two are run in alternating rounds on the same machine, at the same block
size, and the ratio of the medians is printed: the issue's bar is 0.85 or better at 16 KiB.
Run: python benchmarks/vs_openssl.py [--rounds N] [--seconds S] [--block BYTES]
Note: `openssl` is the system's binary; `cryptography` carries its own OpenSSL build, so the
two may differ in version (both are printed).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable

from cryptography.hazmat.backends.openssl.backend import backend
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from cryptoffload import Provider
from cryptoffload.tools.bench.cases import MIB, select
from cryptoffload.tools.bench.timing import run_for

CASES = {
    "aes-128-gcm": "aes-128-gcm encrypt",
    "aes-128-cbc": "aes-128-cbc encrypt",
    "sha256": "sha256 digest",
}


def _direct_calls(block: int) -> dict[str, Callable[[], object]]:
    """The fastest way to do each row's work without cryptoffload: the binding's own ceiling."""
    data = bytes(block)
    gcm, aad, gcm_out = AESGCM(bytes(16)), bytes(range(16)), bytearray(block + 16)
    cbc = Cipher(algorithms.AES(bytes(16)), modes.CBC(bytes(16))).encryptor()
    cbc_out = bytearray(block + 15)
    return {
        "aes-128-gcm": functools.partial(gcm.encrypt_into, bytes(12), data, aad, gcm_out),
        "aes-128-cbc": functools.partial(cbc.update_into, data, cbc_out),
        "sha256": lambda: hashlib.sha256(data).digest(),
    }


def direct(alg: str, block: int, seconds: float) -> float:
    """MiB/s of the same work through `cryptography` (or hashlib) directly."""
    trial = run_for(_direct_calls(block)[alg], seconds)
    return trial.ops / trial.wall * block / MIB


def openssl_speed(alg: str, block: int, seconds: float) -> float:
    """MiB/s that `openssl speed -elapsed -evp` reports for one block size."""
    cmd = [
        "openssl",
        "speed",
        "-elapsed",
        "-evp",
        alg,
        "-bytes",
        str(block),
        "-seconds",
        str(max(1, round(seconds))),
        "-mr",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout
    for line in out.splitlines():
        if line.startswith("+F:"):
            return float(line.rsplit(":", 1)[1]) / MIB
    raise RuntimeError(f"no +F line in the output of {' '.join(cmd)}")


def ours(label: str, block: int, seconds: float) -> float:
    """MiB/s of the bench's software row for ``label``."""
    (case,) = select([label])
    trial = run_for(case.build(Provider([]), block), seconds)
    return trial.ops / trial.wall * block / MIB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--block", type=int, default=16384)
    args = parser.parse_args()
    if shutil.which("openssl") is None:
        print("openssl is not installed; nothing to compare with", file=sys.stderr)
        return 2
    version = subprocess.run(["openssl", "version"], capture_output=True, text=True).stdout
    print(
        f"openssl speed: {version.strip()}; cryptoffload software: "
        f"{backend.openssl_version_text()}; block {args.block} B, {args.rounds} rounds"
    )
    print("MiB/s, medians of alternating rounds; 'direct' = the same work through cryptography")
    print("(hashlib for SHA) without cryptoffload, the ceiling of the binding it is built on")
    print(
        f"{'algorithm':12} {'openssl':>9} {'direct':>9} {'ours':>9} {'ours/openssl':>13} "
        f"{'ours/direct':>12} {'direct/openssl':>15}"
    )
    worst = 1.0
    for alg, label in CASES.items():
        theirs, base, mine = [], [], []
        for _ in range(args.rounds):
            theirs.append(openssl_speed(alg, args.block, args.seconds))
            base.append(direct(alg, args.block, args.seconds))
            mine.append(ours(label, args.block, args.seconds))
        t, b, m = (statistics.median(x) for x in (theirs, base, mine))
        worst = min(worst, m / t)
        print(f"{alg:12} {t:9.1f} {b:9.1f} {m:9.1f} {m / t:13.3f} {m / b:12.3f} {b / t:15.3f}")
    print(f"lowest ours/openssl ratio {worst:.3f} (goal >= 0.85)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
