"""FFDH agreement on GMP (cryptoffload's software path) beside OpenSSL's (`cryptography`'s
deprecated FFDH API), ffdhe2048..8192, the same private values on both paths.

Rows: ``openssl`` (a `cryptography` DH key exchanging with a peer key: OpenSSL's constant-time
exponentiation and its peer checks), ``gmp`` (``blocks.ffdh.agree``: ``gmpy2.powmod_sec``, the
engine's work alone), ``cryptoffload`` (``dh.DHPrivateKey.exchange`` with a software-only
provider: the SP 800-56A peer check, routing and counting included) and, for scale,
``gmp-leaky`` (``gmpy2.powmod``, not constant time: what side-channel safety costs). Private
values are RFC 7919's short-exponent sizes (225..400 bits, top bit set). Alternating rounds,
medians. Run: python benchmarks/ffdh_paths.py [--seconds S] [--rounds N] [--groups ffdhe2048,...]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import gmpy2

from cryptoffload import Provider, dh
from cryptoffload.blocks import ffdh


def rate(fn: Callable[[], object], seconds: float) -> float:
    """Calls of ``fn`` per second over about ``seconds``."""
    n, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        fn()
        n += 1
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - start)


def openssl_pair(key: ffdh.PrivateKey, peer: ffdh.PublicKey) -> Callable[[], bytes]:
    """OpenSSL's agreement with the same numbers (through the deprecated API, warning hidden)."""
    with dh.quiet_ffdh_warning():
        from cryptography.hazmat.primitives.asymmetric import dh as c_dh

        params = c_dh.DHParameterNumbers(key.params.p, key.params.g)
        mine = c_dh.DHPrivateNumbers(key.x, c_dh.DHPublicNumbers(key.y, params)).private_key()
        theirs = c_dh.DHPublicNumbers(peer.y, params).public_key()
    return lambda: mine.exchange(theirs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.25, help="per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (median)")
    parser.add_argument("--groups", default=",".join(dh.GROUPS))
    args = parser.parse_args()
    provider = Provider([])
    print(
        f"{'group':10} {'x bits':>6} {'openssl/s':>10} {'gmp/s':>8} {'gmp/openssl':>11} "
        f"{'cryptoffload/s':>14} {'gmp-leaky/s':>11}"
    )
    for name in args.groups.split(","):
        mine = dh.generate_private_key(name, provider=provider)
        peer = dh.generate_private_key(name, provider=provider).public_key()
        key, peer_raw = mine.to_cryptography(), peer.to_cryptography()
        p = gmpy2.mpz(key.params.p)
        paths: dict[str, Callable[[], object]] = {
            "openssl": openssl_pair(key, peer_raw),
            "gmp": lambda key=key, y=peer_raw.y: ffdh.agree(key, y),
            "cryptoffload": lambda mine=mine, peer=peer: mine.exchange(dh.DHPublicKey(peer)),
            "gmp-leaky": lambda y=peer_raw.y, x=key.x, p=p: gmpy2.powmod(y, x, p),
        }
        expected = paths["openssl"]()
        assert paths["gmp"]() == expected == paths["cryptoffload"](), "paths disagree"
        seen: dict[str, list[float]] = {path: [] for path in paths}
        for _ in range(args.rounds):
            for path, fn in paths.items():
                seen[path].append(rate(fn, args.seconds))
        med = {path: statistics.median(rates) for path, rates in seen.items()}
        print(
            f"{name:10} {key.x.bit_length():>6} {med['openssl']:>10.0f} {med['gmp']:>8.0f} "
            f"{med['gmp'] / med['openssl']:>11.2f} {med['cryptoffload']:>14.0f} "
            f"{med['gmp-leaky']:>11.0f}"
        )


if __name__ == "__main__":
    main()
