"""Software rows of `cryptoffload bench` against `openssl speed -elapsed -evp`, side by side.

For each algorithm the two are run in alternating rounds on the same machine, at the same block
size, and the ratio of the medians is printed: the issue's bar is 0.85 or better at 16 KiB.
Run: python benchmarks/vs_openssl.py [--rounds N] [--seconds S] [--block BYTES]
Note: `openssl` is the system's binary; `cryptography` carries its own OpenSSL build, so the
two may differ in version (both are printed).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys

from cryptography.hazmat.backends.openssl.backend import backend

from cryptoffload import Provider
from cryptoffload.bench.cases import MIB, select
from cryptoffload.bench.timing import measure

CASES = {
    "aes-128-gcm": "aes-128-gcm encrypt",
    "aes-128-cbc": "aes-128-cbc encrypt",
    "sha256": "sha256 digest",
}


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
    result = measure(case.build(Provider([]), block), seconds, 1)
    return result.rates(block / MIB)[0]


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
    print(f"{'algorithm':14} {'openssl MiB/s':>14} {'ours MiB/s':>11} {'ratio':>6}")
    worst = 1.0
    for alg, label in CASES.items():
        theirs, mine = [], []
        for _ in range(args.rounds):
            theirs.append(openssl_speed(alg, args.block, args.seconds))
            mine.append(ours(label, args.block, args.seconds))
        t, m = statistics.median(theirs), statistics.median(mine)
        worst = min(worst, m / t)
        print(f"{alg:14} {t:14.1f} {m:11.1f} {m / t:6.3f}")
    print(f"lowest ratio {worst:.3f} (goal >= 0.85)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
