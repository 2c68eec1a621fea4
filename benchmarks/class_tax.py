"""What our classes cost over `cryptography`'s own where no engine takes the op, both timed in one
process: the same calls through ``cryptoffload``'s class and through `cryptography`'s, in
alternating rounds (this machine is shared and noisy: two processes, as run_overhead.py
compares, can differ by more than what is measured here).

Each case prints both rates, the ratio (ours / theirs) and the time ours adds per op, medians
of the rounds with their range. The provider is the default one with no engine but software,
so every op takes the direct path (what ``run --engines software`` runs).

    python benchmarks/class_tax.py [--rounds 15] [--ops 5000] [--only cmac,hkdf]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from cryptography.hazmat.primitives import cmac as their_cmac
from cryptography.hazmat.primitives import hashes as their_hashes
from cryptography.hazmat.primitives import hmac as their_hmac
from cryptography.hazmat.primitives.ciphers import Cipher as TheirCipher
from cryptography.hazmat.primitives.ciphers import aead as their_aead
from cryptography.hazmat.primitives.ciphers import algorithms, modes
from cryptography.hazmat.primitives.kdf import hkdf as their_hkdf

from cryptoffload import Provider, using
from cryptoffload import cmac as our_cmac
from cryptoffload import hashes as our_hashes
from cryptoffload import hmac as our_hmac
from cryptoffload.aead import AESGCM as OurAESGCM
from cryptoffload.ciphers import Cipher as OurCipher
from cryptoffload.kdf import hkdf as our_hkdf

KEY16, KEY32, NONCE = bytes(range(16)), bytes(range(32)), bytes(12)
PACKET, RECORD = bytes(64), bytes(1400)


def cases() -> dict[str, tuple[Callable[[], object], Callable[[], object]]]:
    """name: (ours, theirs), each one op."""
    sealed = their_aead.AESGCM(KEY16).encrypt(NONCE, RECORD, None)
    ours_gcm, their_gcm = OurAESGCM(KEY16), their_aead.AESGCM(KEY16)
    # A running CTR stream each side (counted per update: a stream never finalized).
    ours_ctr = OurCipher(algorithms.AES(KEY16), modes.CTR(bytes(16))).encryptor()
    their_ctr = TheirCipher(algorithms.AES(KEY16), modes.CTR(bytes(16))).encryptor()

    def cmac_of(module):
        def op():
            c = module.CMAC(algorithms.AES(KEY16))
            c.update(PACKET)
            return c.finalize()

        return op

    def hkdf_of(kdf, hashes, salt=None):
        return lambda: kdf.HKDF(hashes.SHA256(), 32, salt, b"info").derive(KEY32)

    def hmac_of(module, hashes):
        def op():
            h = module.HMAC(KEY32, hashes.SHA256())
            h.update(PACKET)
            return h.finalize()

        return op

    return {
        "cmac-aes-128 64 B": (cmac_of(our_cmac), cmac_of(their_cmac)),
        "hkdf-sha256 32 B": (hkdf_of(our_hkdf, our_hashes), hkdf_of(their_hkdf, their_hashes)),
        "hkdf-sha256 32 B, salted": (
            hkdf_of(our_hkdf, our_hashes, KEY16),
            hkdf_of(their_hkdf, their_hashes, KEY16),
        ),
        "hmac-sha256 64 B": (hmac_of(our_hmac, our_hashes), hmac_of(their_hmac, their_hashes)),
        "aes-128-ctr 1400 B, Cipher.update": (
            lambda: ours_ctr.update(RECORD),
            lambda: their_ctr.update(RECORD),
        ),
        "aes-128-gcm 1400 B decrypt": (
            lambda: ours_gcm.decrypt(NONCE, sealed, None),
            lambda: their_gcm.decrypt(NONCE, sealed, None),
        ),
    }


def per_op(op: Callable[[], object], n: int) -> float:
    """Seconds per op over n calls."""
    start = time.perf_counter()
    for _ in range(n):
        op()
    return (time.perf_counter() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="alternating rounds (15)")
    parser.add_argument("--ops", type=int, default=5000, help="ops per round and side (5000)")
    parser.add_argument("--only", default="", help="comma-separated case name parts")
    args = parser.parse_args()
    if args.rounds < 1 or args.ops < 1:
        parser.error("--rounds and --ops take a positive number")
    wanted = [part.strip() for part in args.only.split(",") if part.strip()]
    with using(Provider(["software"])):
        chosen = {k: v for k, v in cases().items() if not wanted or any(w in k for w in wanted)}
        if not chosen:
            parser.error(f"--only {args.only!r} names no case; the cases: {', '.join(cases())}")
        print(f"{'case':<28}{'ours':>14}{'theirs':>14}{'ratio':>20}{'ours adds, µs':>22}")
        for name, (ours, theirs) in chosen.items():
            for _ in range(args.ops // 2):  # warm both
                ours()
                theirs()
            mine, their = [], []
            for _ in range(args.rounds):
                mine.append(per_op(ours, args.ops))
                their.append(per_op(theirs, args.ops))
            ratios = [t / m for m, t in zip(mine, their, strict=True)]
            adds = [(m - t) * 1e6 for m, t in zip(mine, their, strict=True)]
            ratio = f"{statistics.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f})"
            added = f"{statistics.median(adds):+.3f} ({min(adds):+.2f}-{max(adds):+.2f})"
            print(
                f"{name:<28}{1 / statistics.median(mine):>12,.0f}/s"
                f"{1 / statistics.median(their):>12,.0f}/s{ratio:>20}{added:>22}",
                flush=True,
            )


if __name__ == "__main__":
    main()
