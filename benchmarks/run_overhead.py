"""What running an unchanged program under `cryptoffload run` costs, side by side.

The same workload, written against `cryptography` only (it never imports cryptoffload), runs in
child processes three ways, in alternating rounds: plain ``python`` (baseline), ``python -m
cryptoffload run --engines software`` (every op on the software fast path: what a machine without
engines pays; issue 32's goal is 0.95 of the baseline or better in every row) and ``...
--engines passthrough`` (every op takes the full engine path: Op, validation, routing, counting,
answered by OpenSSL). Each child reports operations per second per case (the best of five
slices of ``--seconds``: the box's other load only slows a slice); the medians over the rounds
and the ratios to the baseline are printed.

``--instructions`` counts instead what each case costs in instructions (callgrind, as
``overhead_instructions.py`` does: one process per side, runs of N and 6N ops, the per-op
difference), plain ``python`` against ``run --engines software`` and ``--engines passthrough``
(the engine path's own cost per op). Its ``partial`` column is
the floor: the instructions ``functools.partial`` (the standard library's one-layer forwarder)
adds to one call, times the calls the case makes into the layer (a layer that sees each call
pays at least that before doing anything).

Then start-up (issue 32: ``run`` should start within 30 ms of ``python``): an empty script, one
that imports hashlib and hmac, and one AES-GCM op by `cryptography`'s import path, each started
plain, under ``run`` as a user types it (the engines found) and the two ways above, in
alternating rounds; wall-time medians, spreads and paired differences (with ``--instructions``,
the instructions each start executes as well).

    python benchmarks/run_overhead.py [--rounds N] [--seconds S] [--only CASE,...]
                                      [--startup-rounds N] [--startup-only]
    python benchmarks/run_overhead.py --instructions [--ops N] [--only CASE,...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap

WORKLOAD = textwrap.dedent(
    """
    import functools, json, os, sys, time
    from cryptography.hazmat.primitives import cmac, hashes, hmac, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa, x25519
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.ciphers.aead import AESCCM, AESGCM, ChaCha20Poly1305
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF
    from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

    key16, key32, nonce12, iv16 = bytes(range(16)), bytes(range(32)), bytes(12), bytes(16)
    packet, record, block = bytes(64), bytes(1400), bytes(16384)
    kib, blocks1392, blocks1408, aad = bytes(1024), bytes(1392), bytes(1408), bytes(13)

    # Each case makes what it needs and gives its op (a process counting one case's
    # instructions makes nothing else). Keys are fixed (the RSA key written by the parent):
    # an instruction count must not depend on a key search's luck.

    def aead(cls, key, data, open_=False):
        box = cls(key)
        if open_:
            sealed = box.encrypt(nonce12, data, None)
            return lambda: box.decrypt(nonce12, sealed, None)
        return lambda: box.encrypt(nonce12, data, None)

    def hash_of(data):
        def op():
            h = hashes.Hash(hashes.SHA256()); h.update(data); h.finalize()
        return op

    def hmac_of(data):
        def op():
            h = hmac.HMAC(key32, hashes.SHA256()); h.update(data); h.finalize()
        return op

    def cmac_64():
        def op():
            c = cmac.CMAC(algorithms.AES(key16)); c.update(packet); c.finalize()
        return op

    def ctr_new(data):
        def op():
            Cipher(algorithms.AES(key16), modes.CTR(iv16)).encryptor().update(data)
        return op

    def cbc_new():
        def op():
            c = Cipher(algorithms.AES(key16), modes.CBC(iv16)).encryptor()
            c.update(blocks1392); c.finalize()
        return op

    def gcm_new():
        def op():
            c = Cipher(algorithms.AES(key16), modes.GCM(nonce12)).encryptor()
            c.authenticate_additional_data(aad); c.update(record); c.finalize(); c.tag
        return op

    def ctr_stream():
        stream = Cipher(algorithms.AES(key16), modes.CTR(iv16)).encryptor()
        return lambda: stream.update(record)

    def cbc_stream():
        stream, out = Cipher(algorithms.AES(key16), modes.CBC(iv16)).encryptor(), bytearray(1423)
        return lambda: stream.update_into(blocks1408, out)

    def p256(secret=0x1D2C3B4A5968778695A4B3C2D1E0F):
        return ec.derive_private_key(secret, ec.SECP256R1())

    def ecdsa_sign():
        signer = p256()
        return lambda: signer.sign(record, ec.ECDSA(hashes.SHA256()))

    def ecdsa_verify():
        signer = p256()
        signature, public = signer.sign(record, ec.ECDSA(hashes.SHA256())), signer.public_key()
        return lambda: public.verify(signature, record, ec.ECDSA(hashes.SHA256()))

    def ed25519_sign():
        key = ed25519.Ed25519PrivateKey.from_private_bytes(key32)
        return lambda: key.sign(record)

    def ed25519_verify():
        key = ed25519.Ed25519PrivateKey.from_private_bytes(key32)
        signature, public = key.sign(record), key.public_key()
        return lambda: public.verify(signature, record)

    def rsa_key():
        with open(os.path.splitext(__file__)[0] + ".pem", "rb") as f:
            return serialization.load_pem_private_key(f.read(), None)

    def pss():
        return padding.PSS(padding.MGF1(hashes.SHA256()), padding.PSS.MAX_LENGTH)

    def rsa_sign():
        key = rsa_key()
        return lambda: key.sign(record, pss(), hashes.SHA256())

    def rsa_verify():
        key = rsa_key()
        signature, public = key.sign(record, pss(), hashes.SHA256()), key.public_key()
        return lambda: public.verify(signature, record, pss(), hashes.SHA256())

    def x25519_exchange():
        mine = x25519.X25519PrivateKey.from_private_bytes(key32)
        peer = x25519.X25519PrivateKey.from_private_bytes(bytes(32 * [7])).public_key()
        return lambda: mine.exchange(peer)

    def ecdh():
        mine, peer = p256(), p256(0x5A5A5A5A5A5A5A5A5A5A).public_key()
        return lambda: mine.exchange(ec.ECDH(), peer)

    def hkdf():
        return lambda: HKDF(hashes.SHA256(), 32, None, b"info").derive(key32)

    def pbkdf2():
        return lambda: PBKDF2HMAC(hashes.SHA256(), 32, key16, 1000).derive(key32)

    # name: (makes the op, calls into the layer per op, 1 / the share of ops counted)
    CASES = {
        "aes-128-gcm 64 B (AESGCM)": (lambda: aead(AESGCM, key16, packet), 1, 1),
        "aes-128-gcm 1400 B (AESGCM)": (lambda: aead(AESGCM, key16, record), 1, 1),
        "aes-128-gcm 1400 B decrypt": (lambda: aead(AESGCM, key16, record, True), 1, 1),
        "aes-128-ccm 1400 B (AESCCM)": (lambda: aead(AESCCM, key16, record), 1, 1),
        "chacha20-poly1305 1400 B": (lambda: aead(ChaCha20Poly1305, key32, record), 1, 1),
        "sha256 64 B (Hash)": (lambda: hash_of(packet), 3, 1),
        "sha256 1 KiB (Hash)": (lambda: hash_of(kib), 3, 1),
        "hmac-sha256 64 B": (lambda: hmac_of(packet), 3, 1),
        "hmac-sha256 1 KiB": (lambda: hmac_of(kib), 3, 1),
        "cmac-aes-128 64 B": (cmac_64, 3, 1),
        "aes-128-ctr 1400 B, new Cipher": (lambda: ctr_new(record), 3, 1),
        "aes-128-ctr 16 KiB, new Cipher": (lambda: ctr_new(block), 3, 1),
        "aes-128-cbc 1392 B, new Cipher": (cbc_new, 4, 1),
        "aes-128-gcm 1400 B, new Cipher": (gcm_new, 6, 1),
        "aes-128-ctr 1400 B, Cipher.update": (ctr_stream, 1, 1),
        "aes-128-cbc 1408 B, update_into": (cbc_stream, 1, 1),
        "ecdsa-p256 sign": (ecdsa_sign, 1, 20),
        "ecdsa-p256 verify": (ecdsa_verify, 1, 20),
        "ed25519 sign": (ed25519_sign, 1, 20),
        "ed25519 verify": (ed25519_verify, 1, 20),
        "rsa-2048 pss sign": (rsa_sign, 1, 200),
        "rsa-2048 pss verify": (rsa_verify, 1, 20),
        "x25519": (x25519_exchange, 1, 20),
        "ecdh-p256": (ecdh, 1, 20),
        "hkdf-sha256 32 B": (hkdf, 2, 1),
        "pbkdf2-hmac-sha256 1000 iterations": (pbkdf2, 2, 200),
    }

    how, args = sys.argv[1], sys.argv[2:]
    if how == "rates":  # [seconds, case...]: each case's best rate over five slices
        seconds, names = float(args[0]), args[1:] or list(CASES)
        rates = {}
        for name in names:
            fn = CASES[name][0]()
            fn()
            best = 0.0
            for _ in range(5):
                n, start = 0, time.perf_counter()
                while (elapsed := time.perf_counter() - start) < seconds / 5:
                    for _ in range(10):
                        fn()
                    n += 10
                best = max(best, n / elapsed)
            rates[name] = best
        print(json.dumps({"module": hashes.__name__, "rates": rates}))
    elif how == "count":  # case, ops: run the case that many times (for callgrind)
        fn = CASES[args[0]][0]()
        for _ in range(int(args[1])):
            fn()
    elif how == "floor":  # how, ops: a 64-byte GCM encrypt, directly or through partial
        gcm = AESGCM(key16)
        call = gcm.encrypt if args[0] == "direct" else functools.partial(gcm.encrypt)
        for _ in range(int(args[1])):
            call(nonce12, packet, None)
    elif how == "cases":  # each case's calls into the layer and its share of the ops
        print(json.dumps({name: [calls, share] for name, (_, calls, share) in CASES.items()}))
    """
)

WAYS = {
    "python": [],
    "run, software": ["-m", "cryptoffload", "run", "--engines", "software"],
    "run, passthrough": ["-m", "cryptoffload", "run", "--engines", "passthrough"],
}


def rsa_key_pem() -> bytes:
    """A new RSA-2048 key for the workload, PEM (read by every child of the run)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(65537, 2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


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


def start_up(rounds: int, count_instructions: bool) -> None:
    """Wall time of starting each way on each start-up script, in alternating rounds (the order
    of the ways turns each round, so none always runs first): medians, the spread (10th to 90th
    percentile), and the median over rounds of each way minus ``python`` in the same round. With
    ``count_instructions``, also the instructions each executes once (callgrind: steady on a loaded
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
        if count_instructions:
            print("start-up, instructions executed (callgrind, one run each):")
            for case, path in paths.items():
                print(f"  {case}")
                for way, prefix in ways:
                    count = instructions([sys.executable, *prefix, path])
                    print(f"    {way:<18} {count / 1e6:8.1f} M")


def _ms(seconds: float) -> float:
    return seconds * 1000


def _spread(seconds: list[float]) -> str:
    if len(seconds) < 2:
        return ""
    deciles = statistics.quantiles(seconds, n=10)
    return f"[{_ms(deciles[0]):.0f}-{_ms(deciles[-1]):.0f}]"


def child(prefix: list[str], script: str, *argv: str) -> str:
    """Run the workload ``script`` one way; its last line of output."""
    out = subprocess.run(
        [sys.executable, *prefix, script, *argv], check=True, capture_output=True, text=True
    )
    return out.stdout.strip().splitlines()[-1]


def rates_table(script: str, cases: list[str], args: argparse.Namespace) -> None:
    """Operations per second each way, medians over the rounds, ratios to plain ``python``."""
    rates: dict[str, dict[str, list[float]]] = {way: {} for way in WAYS}
    for round_ in range(args.rounds):
        for way, prefix in WAYS.items():
            report = json.loads(child(prefix, script, "rates", str(args.seconds), *cases))
            expected = "cryptography" if way == "python" else "cryptoffload"
            assert report["module"].startswith(expected), (way, report["module"])
            for case, rate in report["rates"].items():
                rates[way].setdefault(case, []).append(rate)
        print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    from _rates import print_rates  # beside this script

    print_rates(rates, max(map(len, rates["python"])) + 2, 24)


def instructions(command: list[str]) -> int:
    """Instructions ``command`` executes (valgrind's callgrind; children not followed)."""
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, PYTHONHASHSEED="0"),  # dicts probe the same in every run
    )
    total = re.search(r"Collected : (\d+)", run.stderr)
    if total is None:
        raise SystemExit(f"callgrind printed no total:\n{run.stderr[-2000:]}")
    return int(total.group(1))


def per_op(prefix: list[str], script: str, how: str, what: str, ops: int) -> float:
    """Instructions per op of ``how what``, start-up taken out (runs of ops and 6 * ops)."""
    short = instructions([sys.executable, *prefix, script, how, what, str(ops)])
    long = instructions([sys.executable, *prefix, script, how, what, str(6 * ops)])
    return (long - short) / (5 * ops)


def instructions_table(script: str, cases: list[str], args: argparse.Namespace) -> None:
    """Instructions per op, plain ``python`` against ``run --engines software`` and ``run
    --engines passthrough`` (the engine path: its ``added`` is the lane's own cost per op, the
    pass-through engine answering by the software engine)."""
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    shape = json.loads(child([], script, "cases"))
    software, engine = WAYS["run, software"], WAYS["run, passthrough"]
    ops = args.ops
    partial = per_op([], script, "floor", "partial", ops) - per_op(
        [], script, "floor", "direct", ops
    )
    print(f"functools.partial adds {partial:.0f} instructions to a call")
    width = max(map(len, cases)) + 2
    print(
        f"{'case':<{width}}{'cryptography':>13}{'run':>11}{'added':>9}{'ratio':>7}"
        f"{'passthrough':>12}{'added':>9}{'ratio':>7}{'partial':>9}"
    )
    for case in cases:
        calls, share = shape[case]
        n = max(10, ops // share)
        theirs = per_op([], script, "count", case, n)
        ours = per_op(software, script, "count", case, n)
        routed = per_op(engine, script, "count", case, n)
        print(
            f"{case:<{width}}{theirs:>13,.0f}{ours:>11,.0f}{ours - theirs:>9,.0f}"
            f"{theirs / ours:>7.3f}{routed:>12,.0f}{routed - theirs:>9,.0f}"
            f"{theirs / routed:>7.3f}{calls * partial:>9,.0f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    parser.add_argument("--seconds", type=float, default=0.3, help="per case per round")
    parser.add_argument("--only", help="these cases only (comma-separated names, or parts)")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions (callgrind): per op instead of timing, and per start as well",
    )
    parser.add_argument(
        "--startup-rounds",
        type=int,
        default=20,
        help="alternating start-up rounds (default 20; 0: no start-up measurement)",
    )
    parser.add_argument(
        "--startup-only", action="store_true", help="measure start-up only, not the ops"
    )
    parser.add_argument("--ops", type=int, default=2000, help="--instructions: N (default 2000)")
    args = parser.parse_args()
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(WORKLOAD)
    pem = os.path.splitext(f.name)[0] + ".pem"
    with open(pem, "wb") as key_file:
        key_file.write(rsa_key_pem())
    try:
        cases = list(json.loads(child([], f.name, "cases")))
        if args.only:
            wanted = [w.strip() for w in args.only.split(",")]
            cases = [c for c in cases if any(w in c for w in wanted)]
            if not cases:
                raise SystemExit(f"no case matches {args.only!r}")
        if args.startup_only:
            pass
        elif args.instructions:
            instructions_table(f.name, cases, args)
        else:
            rates_table(f.name, cases, args)
        if args.startup_rounds > 0:
            start_up(args.startup_rounds, args.instructions)
    finally:
        os.unlink(f.name)
        os.unlink(pem)


if __name__ == "__main__":
    main()
