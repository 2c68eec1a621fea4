"""What the AEAD direct path adds over calling `cryptography`, in instructions (valgrind).

Timing on a shared 2-core machine moves by more than the few tens of nanoseconds measured here
(``benchmarks/overhead.py`` gives the times, side by side). Instruction counts do not: callgrind
counts the same total for the same binary and inputs whatever else the machine runs. For each
case, one process per side (``cryptography``'s object, and cryptoffload's) runs the operation N
and then 6N times; the difference of the two totals over 5N is the instructions per operation
without start-up. Cases: the software path (no engine claims AES-128-GCM) and the held-back path
(an engine claims it, the policy keeps every size from it), 64 B and 16 KiB, encrypt and
decrypt; and a held-back ``Cipher`` AES-128-CBC stream (an engine claims aes-128-cbc, the policy
keeps every size from it): ``update_into`` of 64 B and 1 KiB, again and again on one stream.
Needs valgrind (Debian's package). Instructions are not time (a cache miss costs more than an
add), but on this path, hot in cache, they track it.
Run: python benchmarks/overhead_instructions.py [--ops N] [--only software|held|cbc]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

CASES = [
    ("software", "encrypt", 64),
    ("software", "encrypt", 16384),
    ("held", "encrypt", 64),
    ("held", "decrypt", 64),
    ("held", "encrypt", 16384),
    ("held", "cbc-update_into", 64),
    ("held", "cbc-update_into", 1024),
]

#: The child: builds one side of one case, runs it ``ops`` times.
CHILD = r"""
import sys
side, path, kind = sys.argv[1:4]
size, ops = int(sys.argv[4]), int(sys.argv[5])
key, nonce, data = bytes(range(16)), bytes(12), bytes(size)
cbc = kind == "cbc-update_into"
if side == "direct":
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    provider = {}
else:
    sys.path.insert(0, sys.argv[6])  # benchmarks/: overhead.py's engine
    import cryptoffload
    from cryptoffload.aead import AESGCM
    from cryptoffload.ciphers import Cipher, algorithms, modes
    from overhead import OpenSSLEngine

    alg = "aes-128-cbc" if cbc else "aes-128-gcm"
    if path == "held":
        policy = cryptoffload.Policy(min_size={alg: 2 << 20})
        provider = {"provider": cryptoffload.Provider([OpenSSLEngine(alg)], policy)}
    else:
        provider = {"provider": cryptoffload.Provider([])}
if cbc:
    ctx = Cipher(algorithms.AES(key), modes.CBC(bytes(range(16, 32))), **provider).encryptor()
    buf = bytearray(size + 15)
    call = ctx.update_into
    for _ in range(ops):
        call(data, buf)
    raise SystemExit(0)
gcm = AESGCM(key, **provider)
if kind == "decrypt":
    data = gcm.encrypt(nonce, data, None)
call = gcm.encrypt if kind == "encrypt" else gcm.decrypt
for _ in range(ops):
    call(nonce, data, None)
"""


def instructions(side: str, path: str, kind: str, size: int, ops: int, workdir: str) -> int:
    """Instructions callgrind counted for one run of the child."""
    out = os.path.join(workdir, "callgrind.out")
    run = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-c",
            CHILD,
            side,
            path,
            kind,
            str(size),
            str(ops),
            os.path.dirname(os.path.abspath(__file__)),
        ],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, PYTHONHASHSEED="0"),  # dict probes the same in every run
    )
    found = re.search(r"Collected : (\d+)", run.stderr)
    if not found:
        raise SystemExit(f"callgrind printed no total:\n{run.stderr[-2000:]}")
    return int(found.group(1))


def per_op(side: str, path: str, kind: str, size: int, ops: int, workdir: str) -> float:
    """Instructions per operation, start-up taken out (runs of ops and 6 * ops)."""
    short = instructions(side, path, kind, size, ops, workdir)
    long = instructions(side, path, kind, size, 6 * ops, workdir)
    return (long - short) / (5 * ops)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=4000, help="N: operations in the short run")
    parser.add_argument(
        "--only", choices=("software", "held", "cbc"), help="one path's cases (cbc: the Cipher's)"
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    from cryptoffload import directpath

    twin = "compiled" if directpath.COMPILED else "pure Python"
    print(f"AEAD direct path and Cipher held-back path: {twin}; instructions per op (callgrind)")
    print(f"{'path':9} {'op':15} {'bytes':>6} {'direct':>9} {'ours':>9} {'added':>7} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as workdir:
        for path, kind, size in CASES:
            if args.only == "cbc" and not kind.startswith("cbc"):
                continue
            if args.only in ("software", "held") and path != args.only:
                continue
            direct = per_op("direct", path, kind, size, args.ops, workdir)
            ours = per_op("ours", path, kind, size, args.ops, workdir)
            print(
                f"{path:9} {kind:15} {size:>6} {direct:>9.0f} {ours:>9.0f} "
                f"{ours - direct:>7.0f} {direct / ours:>6.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
