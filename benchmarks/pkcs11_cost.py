"""Per-op cost of the PKCS#11 engine on a token against software (OpenSSL via `cryptography`),
side by side in one run, through the public API.

Rows: AES-256-GCM encrypt at 64 B, 1 KiB and 16 KiB (a caller key, imported once and cached; and
a key generated on the token), SHA-256 and HMAC-SHA256 of 1 KiB, ECDSA P-256 sign and verify,
RSA-2048 PKCS#1 v1.5 sign, ECDH P-256, and the import of a caller AES key (C_CreateObject and
C_DestroyObject, what a cache miss costs). Each figure is the median of ``--rounds`` rounds,
each the best of 3 repeats of ``--number`` ops, in microseconds of wall time per op; software
and token rows alternate within each round. Every row's answers are checked against software
first, and the token provider's counters must show the ops on the engine.

Without ``--spec``, a SoftHSM token is initialised in a temporary directory (tests/softhsm.py).

Run: python benchmarks/pkcs11_cost.py [--spec pkcs11:module=...,token=...,pin-env=VAR]
     [--rounds N] [--number N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import timeit
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from cryptography.hazmat.primitives import hashes as c_hashes
from cryptography.hazmat.primitives.asymmetric import ec as c_ec
from cryptography.hazmat.primitives.asymmetric import padding as c_padding
from cryptography.hazmat.primitives.asymmetric import rsa as c_rsa

from cryptoffload import Policy, Provider, ec, hashes, hmac, rsa
from cryptoffload.aead import AESGCM
from cryptoffload.engines.pkcs11 import ck
from cryptoffload.engines.pkcs11.keys import fingerprint

KEY, NONCE = bytes(range(32)), bytes(12)


Row = tuple[str, Callable[[Provider], Any], bool]


def rows(token: Provider) -> list[Row]:
    """(label, fn(provider), compare) per row: fn runs one op on that provider and returns its
    answer; compare says whether software's and the token's answers must be equal (not for
    randomised signatures, nor for a key only the token holds)."""
    engine = token.engines[0]
    ec_raw = c_ec.generate_private_key(c_ec.SECP256R1())
    rsa_raw = c_rsa.generate_private_key(65537, 2048)
    peer = c_ec.generate_private_key(c_ec.SECP256R1()).public_key()
    msg = b"m" * 32
    ecdsa = ec.ECDSA(c_hashes.SHA256())
    signature = ec_raw.sign(msg, c_ec.ECDSA(c_hashes.SHA256()))
    token_key = engine.generate_key("aes", label=f"bench-{os.urandom(4).hex()}", bits=256)
    kib, data64 = os.urandom(1024), os.urandom(64)
    out: list[Row] = []
    for size in (64, 1024, 16384):
        data = os.urandom(size)
        out.append((f"AES-256-GCM encrypt {size} B", partial(_gcm, KEY, data), True))

    def on_token_key(p: Provider) -> bytes:
        # Software cannot run the token's key: its column is the same op with a caller key.
        return _gcm(token_key if p is token else KEY, data64, p)

    def sign_ec(p: Provider) -> None:
        _ec(p, ec_raw).sign(msg, ecdsa)

    def verify_ec(p: Provider) -> None:
        _ec(p, ec_raw).public_key().verify(signature, msg, ecdsa)

    def sign_rsa(p: Provider) -> bytes:
        key = rsa.RSAPrivateKey(rsa_raw, provider=p)
        return key.sign(msg, c_padding.PKCS1v15(), c_hashes.SHA256())

    out += [
        ("  same, key on the token, 64 B", on_token_key, False),
        ("SHA-256 1 KiB", lambda p: hashes.digest(kib, hashes.SHA256(), provider=p), True),
        ("HMAC-SHA256 1 KiB", partial(_hmac, kib), True),
        ("ECDSA P-256 sign", sign_ec, False),
        ("ECDSA P-256 verify", verify_ec, True),
        ("RSA-2048 sign PKCS#1 v1.5", sign_rsa, True),
        ("ECDH P-256", lambda p: _ec(p, ec_raw).exchange(ec.ECDH(), peer), True),
    ]
    return out


def _gcm(key: Any, data: bytes, p: Provider) -> bytes:
    return AESGCM(key, provider=p).encrypt(NONCE, data, None)


def _hmac(data: bytes, p: Provider) -> bytes:
    h = hmac.HMAC(KEY, hashes.SHA256(), provider=p)
    h.update(data)
    return h.finalize()


def _ec(p: Provider, raw: Any) -> Any:
    return ec.EllipticCurvePrivateKey(raw, provider=p)


def import_cost(engine: Any, number: int) -> float:
    """Microseconds per import and destroy of a fresh AES key (a cache miss)."""
    token = engine._token
    module = token.module

    def one() -> None:
        key = os.urandom(32)
        fingerprint("aes", key)  # the cache's lookup
        template = [
            (ck.CKA_TOKEN, False),
            (ck.CKA_CLASS, ck.CKO_SECRET_KEY),
            (ck.CKA_KEY_TYPE, ck.CKK_AES),
            (ck.CKA_VALUE, key),
            (ck.CKA_ENCRYPT, True),
        ]
        with token.keeper() as s:
            module.destroy(s, module.create(s, template))

    return min(timeit.repeat(one, number=number, repeat=3)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", help="a pkcs11: spec (default: a SoftHSM token made here)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=200)
    args = parser.parse_args()
    spec = args.spec
    if spec is None:
        import softhsm

        missing = softhsm.why_missing()
        if missing:
            sys.exit(f"pkcs11_cost: {missing}; or give --spec")
        spec = softhsm.shared().spec
    software = Provider([])
    token = Provider([spec], policy=Policy(min_size={"*": 0}))
    if token.unavailable:
        sys.exit(f"pkcs11_cost: {token.unavailable}")
    engine = token.engines[0]
    table = rows(token)
    for label, fn, compare in table:  # the same answers, where answers are deterministic
        sw, tk = fn(software), fn(token)
        if compare and sw != tk:
            sys.exit(f"pkcs11_cost: {label}: the token's answer differs from software's")
    offloaded = sum(c["ops"] for c in token.counters.snapshot()[engine.name].values())
    on_software = sum(c["ops"] for c in token.counters.snapshot().get("software", {}).values())
    if offloaded < len(table) or on_software:
        sys.exit(f"pkcs11_cost: the token took {offloaded} ops, software {on_software}")
    figures: dict[str, tuple[list[float], list[float]]] = {row[0]: ([], []) for row in table}
    imports: list[float] = []
    for _ in range(args.rounds):
        for label, fn, _ in table:
            n = args.number if "RSA" not in label else max(args.number // 10, 5)
            for side, provider in enumerate((software, token)):
                best = min(timeit.repeat(partial(fn, provider), number=n, repeat=3))
                figures[label][side].append(best / n * 1e6)
        imports.append(import_cost(engine, args.number))
    info = token.capabilities[engine.name].detail
    print(f"token: {info['manufacturer']} {info['model']} ({spec.split(',')[0]})")
    print(f"median of {args.rounds} rounds, best of 3 x {args.number} ops, us per op (wall)")
    print(f"{'operation':34} {'software':>10} {'token':>10} {'ratio':>7}")
    for label, (sw, tk) in figures.items():
        s, t = statistics.median(sw), statistics.median(tk)
        print(f"{label:34} {s:10.1f} {t:10.1f} {t / s:6.1f}x")
    print(f"{'key import (create + destroy)':34} {'':>10} {statistics.median(imports):10.1f}")
    token.close()


if __name__ == "__main__":
    main()
