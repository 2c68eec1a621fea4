"""What the direct paths add over calling `cryptography`, in instructions (valgrind).

Timing on a shared 2-core machine moves by more than the few tens of nanoseconds measured here
(``benchmarks/overhead.py`` gives the times, side by side). Instruction counts do not: callgrind
counts the same total for the same binary and inputs whatever else the machine runs. For each
case, one process per side (``cryptography``'s object, and cryptoffload's) runs the operation N
and then 6N times; the difference of the two totals over 5N is the instructions per operation
without start-up. Cases: the software path (no engine claims AES-128-GCM; or AES-128-CBC, for
a ``Cipher`` stream's ``update_into``) and the held-back path (an engine claims it, the policy
keeps every size from it), 64 B and 16 KiB, encrypt and decrypt; and a held-back ``Cipher``
AES-128-CBC stream (an engine claims aes-128-cbc, the policy keeps every size from it):
``update_into`` of 64 B and 1 KiB, again and again on one stream.
Needs valgrind (Debian's package). Instructions are not time (a cache miss costs more than an
add), but on this path, hot in cache, they track it.
``--floor`` adds a column: the instructions that ``functools.partial`` around the same
``cryptography`` method adds per op, the standard library's own one-layer forwarder, for what
any layer that sees each op pays before it does anything.
``--cache`` adds callgrind's simulated caches and branch predictor: level-1 instruction and
data misses and mispredicted branches per op on each side. They explain where a layer costs
more time than its share of the instructions (its code evicting OpenSSL's from the
instruction cache, say); they are a model of a cache, not this CPU's counters.
Run: python benchmarks/overhead_instructions.py [--ops N] [--only software|held|cbc] [--floor]
[--cache]
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
    ("software", "cbc-update_into", 64),
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
def wrap(call):
    return call
if side == "partial":  # cryptography's method behind the standard library's forwarder
    import functools
    wrap = functools.partial
if side in ("direct", "partial"):
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
    call = wrap(ctx.update_into)
    for _ in range(ops):
        call(data, buf)
    raise SystemExit(0)
gcm = AESGCM(key, **provider)
if kind == "decrypt":
    data = gcm.encrypt(nonce, data, None)
call = wrap(gcm.encrypt if kind == "encrypt" else gcm.decrypt)
for _ in range(ops):
    call(nonce, data, None)
"""


def events(
    side: str, path: str, kind: str, size: int, ops: int, workdir: str, cache: bool
) -> dict[str, int]:
    """What callgrind counted for one run of the child: ``Ir`` (instructions), and with
    ``cache`` its simulated caches' and branch predictor's events too (``I1mr``, ``D1mr``,
    ``D1mw``, ``Bcm``, ``Bim``...)."""
    out = os.path.join(workdir, "callgrind.out")
    simulate = ["--cache-sim=yes", "--branch-sim=yes"] if cache else []
    run = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            *simulate,
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
    names = re.search(r"Events +: ([\w ]+)", run.stderr)
    counts = re.search(r"Collected : ([\d ]+)", run.stderr)
    if not names or not counts:
        raise SystemExit(f"callgrind printed no total:\n{run.stderr[-2000:]}")
    return dict(zip(names.group(1).split(), map(int, counts.group(1).split()), strict=True))


def per_op(
    side: str, path: str, kind: str, size: int, ops: int, workdir: str, cache: bool = False
) -> dict[str, float]:
    """Each event per operation, start-up taken out (runs of ops and 6 * ops)."""
    short = events(side, path, kind, size, ops, workdir, cache)
    long = events(side, path, kind, size, 6 * ops, workdir, cache)
    return {name: (long[name] - short[name]) / (5 * ops) for name in short}


def cache_columns(counts: dict[str, float]) -> str:
    """Level-1 instruction and data misses and mispredicted branches per op."""
    data = counts["D1mr"] + counts["D1mw"]
    return f"{counts['I1mr']:>6.1f} {data:>6.1f} {counts['Bcm'] + counts['Bim']:>6.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=4000, help="N: operations in the short run")
    parser.add_argument(
        "--only", choices=("software", "held", "cbc"), help="one path's cases (cbc: the Cipher's)"
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also count what functools.partial around cryptography's method adds (one C layer)",
    )
    parser.add_argument(
        "--cache",
        action="store_true",
        help="also simulate caches and branches: L1 misses and mispredicts per op, each side",
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    from cryptoffload.core import directpath

    twin = "compiled" if directpath.COMPILED else "pure Python"
    print(f"AEAD direct path and Cipher held-back path: {twin}; instructions per op (callgrind)")
    header = f"{'path':9} {'op':15} {'bytes':>6} {'direct':>9} {'ours':>9} {'added':>7} "
    header += f"{'ratio':>6}"
    if args.floor:
        header += f" {'partial':>8}"
    if args.cache:
        header += "   direct: I1 m  D1 m  mispr   ours: I1 m  D1 m  mispr"
    print(header)
    with tempfile.TemporaryDirectory() as workdir:
        for path, kind, size in CASES:
            if args.only == "cbc" and not kind.startswith("cbc"):
                continue
            if args.only in ("software", "held") and path != args.only:
                continue
            direct = per_op("direct", path, kind, size, args.ops, workdir, args.cache)
            ours = per_op("ours", path, kind, size, args.ops, workdir, args.cache)
            d, o = direct["Ir"], ours["Ir"]
            line = f"{path:9} {kind:15} {size:>6} {d:>9.0f} {o:>9.0f} {o - d:>7.0f} {d / o:>6.3f}"
            if args.floor:
                floor = per_op("partial", path, kind, size, args.ops, workdir)["Ir"]
                line += f" {floor - d:>8.0f}"
            if args.cache:
                line += f"   {cache_columns(direct)}   {cache_columns(ours)}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
