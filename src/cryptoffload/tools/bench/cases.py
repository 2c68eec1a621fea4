"""What each benchmark row runs: one callable per algorithm and operation, on shared buffers."""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec as c_ec
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import rsa as c_rsa

from cryptoffload import dh, ec, modes, rsa
from cryptoffload.aead import AESCCM, AESGCM
from cryptoffload.blocks import ffdh
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.cmac import CMAC
from cryptoffload.drbg import Drbg
from cryptoffload.gmac import GMAC
from cryptoffload.hashes import digest
from cryptoffload.hmac import HMAC
from cryptoffload.names import HASH_CLASSES
from cryptoffload.provider import Provider

MIB = 1024 * 1024
Builder = Callable[[Provider, int], Callable[[], object]]


@dataclass(frozen=True)
class Case:
    """One benchmark row kind: an algorithm name (as counters spell it) and an operation."""

    algorithm: str
    operation: str
    bulk: bool
    build: Builder

    @property
    def unit(self) -> str:
        return "MiB/s" if self.bulk else "ops/s"

    @property
    def label(self) -> str:
        return f"{self.algorithm} {self.operation}"


_AAD = bytes(range(16))  # a TLS-record-sized header
_NONCE = bytes(12)  # benchmarks only: a fixed nonce is fine for timing, never for data


def _key(bits: int) -> bytes:
    return bytes(range(bits // 8))


_MODE_CLASSES = {"cbc": modes.CBC, "ctr": modes.CTR, "cfb": modes.CFB, "ofb": modes.OFB}


def _cipher(bits: int, mode: str, encrypt: bool) -> Builder:
    def build(p: Provider, block: int) -> Callable[[], object]:
        m = modes.ECB() if mode == "ecb" else _MODE_CLASSES[mode](bytes(16))
        cipher = Cipher(algorithms.AES(_key(bits)), m, provider=p)
        ctx = cipher.encryptor() if encrypt else cipher.decryptor()
        data, out = bytes(block), bytearray(block + 15)
        # One context streamed block after block, as `openssl speed` does.
        return functools.partial(ctx.update_into, data, out)

    return build


def _gcm(bits: int, op: str) -> Builder:
    def build(p: Provider, block: int) -> Callable[[], object]:
        aad = None if op == "encrypt-no-aad" else _AAD
        g = AESGCM(_key(bits), provider=p)
        data = bytes(block)
        if op == "decrypt":
            sealed = AESGCM(_key(bits), provider=Provider([])).encrypt(_NONCE, data, aad)
            out = bytearray(block)
            return functools.partial(g.decrypt_into, _NONCE, sealed, aad, out)
        out = bytearray(block + 16)
        return functools.partial(g.encrypt_into, _NONCE, data, aad, out)

    return build


def _ccm(bits: int, op: str) -> Builder:
    def build(p: Provider, block: int) -> Callable[[], object]:
        c = AESCCM(_key(bits), provider=p)
        data = bytes(block)
        if op == "decrypt":
            sealed = AESCCM(_key(bits), provider=Provider([])).encrypt(_NONCE, data, _AAD)
            return functools.partial(c.decrypt, _NONCE, sealed, _AAD)
        return functools.partial(c.encrypt, _NONCE, data, _AAD)

    return build


def _streamed(make: Callable[[Provider], Callable[[], Any]]) -> Builder:
    """A new context per message, fed once and finalized: a one-shot digest or MAC."""

    def build(p: Provider, block: int) -> Callable[[], object]:
        data = bytes(block)
        new = make(p)  # the constructor with its arguments bound, so the loop only calls it

        def one() -> object:
            ctx = new()
            ctx.update(data)
            return ctx.finalize()

        return one

    return build


def _one_shot_digest(cls: type) -> Builder:
    def build(p: Provider, block: int) -> Callable[[], object]:
        return functools.partial(digest, bytes(block), cls(), provider=p)

    return build


def _drbg(p: Provider, block: int) -> Callable[[], object]:
    return functools.partial(Drbg(provider=p).random_bytes, block)


@functools.cache
def bench_rsa_key(bits: int) -> c_rsa.RSAPrivateKey:
    """One RSA key per size for every row of a run (generated once)."""
    return c_rsa.generate_private_key(65537, bits)


@functools.cache
def bench_ec_key(curve: str, which: int) -> c_ec.EllipticCurvePrivateKey:
    """Key number ``which`` on ``curve`` for every row of a run (generated once)."""
    return c_ec.generate_private_key(
        {"p256": c_ec.SECP256R1, "p384": c_ec.SECP384R1, "p521": c_ec.SECP521R1}[curve]()
    )


@functools.cache
def _dh_key(group: str, which: int) -> ffdh.PrivateKey:
    return dh.generate_private_key(group, provider=Provider([])).to_cryptography()


_MSG = b"cryptoffload benchmark message, 48 bytes long..."


def _rsa(bits: int, side: str) -> Builder:
    def build(p: Provider, block: int) -> Callable[[], object]:
        sha = HASH_CLASSES["sha256"]()
        key = rsa.RSAPrivateKey(bench_rsa_key(bits), provider=p)
        if side == "private":
            return functools.partial(key.sign, _MSG, padding.PKCS1v15(), sha)
        sig = bench_rsa_key(bits).sign(_MSG, padding.PKCS1v15(), sha)
        return functools.partial(key.public_key().verify, sig, _MSG, padding.PKCS1v15(), sha)

    return build


def _ecdsa(curve: str, op: str) -> Builder:
    def build(p: Provider, block: int) -> Callable[[], object]:
        algorithm = ec.ECDSA(HASH_CLASSES["sha384" if curve != "p256" else "sha256"]())
        raw = bench_ec_key(curve, 0)
        if op == "sign":
            return functools.partial(
                ec.EllipticCurvePrivateKey(raw, provider=p).sign, _MSG, algorithm
            )
        sig = raw.sign(_MSG, algorithm)
        pub = ec.EllipticCurvePublicKey(raw.public_key(), provider=p)
        return functools.partial(pub.verify, sig, _MSG, algorithm)

    return build


def _ecdh(curve: str) -> Builder:
    def build(p: Provider, block: int) -> Callable[[], object]:
        mine = ec.EllipticCurvePrivateKey(bench_ec_key(curve, 0), provider=p)
        peer = bench_ec_key(curve, 1).public_key()

        def agree() -> bytes:
            # A fresh peer object each time, so its validation is paid as in a real handshake.
            return mine.exchange(ec.ECDH(), ec.EllipticCurvePublicKey(peer))

        return agree

    return build


def _ffdhe(group: str) -> Builder:
    def build(p: Provider, block: int) -> Callable[[], object]:
        mine = dh.DHPrivateKey(_dh_key(group, 0), provider=p)
        peer = _dh_key(group, 1).public()

        def agree() -> bytes:
            return mine.exchange(dh.DHPublicKey(peer))

        return agree

    return build


def catalog() -> list[Case]:
    """Every row the benchmark can run, in a stable order."""
    cases: list[Case] = []
    for mode in ("cbc", "ctr", "ecb", "cfb", "ofb"):
        for bits in (128, 192, 256):
            for op in ("encrypt", "decrypt"):
                cases.append(
                    Case(f"aes-{bits}-{mode}", op, True, _cipher(bits, mode, op == "encrypt"))
                )
    for bits in (128, 192, 256):
        for op in ("encrypt", "decrypt", "encrypt-no-aad"):
            cases.append(Case(f"aes-{bits}-gcm", op, True, _gcm(bits, op)))
    for bits in (128, 192, 256):
        for op in ("encrypt", "decrypt"):
            cases.append(Case(f"aes-{bits}-ccm", op, True, _ccm(bits, op)))
    for bits in (128, 192, 256):
        key = _key(bits)
        cases.append(
            Case(
                f"gmac-aes-{bits}",
                "mac",
                True,
                _streamed(lambda p, key=key: functools.partial(GMAC, key, _NONCE, provider=p)),
            )
        )
        cases.append(
            Case(
                f"cmac-aes-{bits}",
                "mac",
                True,
                _streamed(
                    lambda p, key=key: functools.partial(CMAC, algorithms.AES(key), provider=p)
                ),
            )
        )
    for name, cls in HASH_CLASSES.items():
        cases.append(
            Case(
                name,
                "digest",
                True,
                _one_shot_digest(cls),
            )
        )
    for name, cls in HASH_CLASSES.items():
        cases.append(
            Case(
                f"hmac-{name}",
                "mac",
                True,
                _streamed(lambda p, cls=cls: functools.partial(HMAC, _key(256), cls(), provider=p)),
            )
        )
    for bits in (2048, 3072, 4096):
        cases.append(Case(f"rsa-{bits}-private", "sign", False, _rsa(bits, "private")))
        cases.append(Case(f"rsa-{bits}-public", "verify", False, _rsa(bits, "public")))
    for curve in ("p256", "p384", "p521"):
        cases.append(Case(f"ecdsa-{curve}-sign", "sign", False, _ecdsa(curve, "sign")))
        cases.append(Case(f"ecdsa-{curve}-verify", "verify", False, _ecdsa(curve, "verify")))
        cases.append(Case(f"ecdh-{curve}", "agree", False, _ecdh(curve)))
    for group in ("ffdhe2048", "ffdhe3072", "ffdhe4096"):
        cases.append(Case(group, "agree", False, _ffdhe(group)))
    cases.append(Case("drbg", "generate", True, _drbg))
    return cases


#: The default run: what the articles' tables show, in about a minute on 2 cores.
DEFAULT = (
    "aes-128-cbc encrypt",
    "aes-128-cbc decrypt",
    "aes-256-cbc encrypt",
    "aes-128-ctr encrypt",
    "aes-128-ecb encrypt",
    "aes-128-cfb encrypt",
    "aes-128-ofb encrypt",
    "aes-128-gcm encrypt",
    "aes-128-gcm decrypt",
    "aes-128-gcm encrypt-no-aad",
    "aes-256-gcm encrypt",
    "aes-128-ccm encrypt",
    "gmac-aes-128 mac",
    "cmac-aes-128 mac",
    "sha1 digest",
    "sha256 digest",
    "sha384 digest",
    "sha512 digest",
    "hmac-sha256 mac",
    "rsa-2048-private sign",
    "rsa-2048-public verify",
    "rsa-3072-private sign",
    "rsa-3072-public verify",
    "rsa-4096-private sign",
    "rsa-4096-public verify",
    "ecdsa-p256-sign sign",
    "ecdsa-p256-verify verify",
    "ecdsa-p384-sign sign",
    "ecdsa-p384-verify verify",
    "ecdh-p256 agree",
    "ecdh-p384 agree",
    "ffdhe2048 agree",
    "ffdhe3072 agree",
    "drbg generate",
)


def select(patterns: list[str] | None) -> list[Case]:
    """The default cases, or those whose algorithm (or "algorithm operation") matches a glob."""
    cases = catalog()
    if not patterns:
        by_label = {c.label: c for c in cases}
        return [by_label[label] for label in DEFAULT]
    chosen = [
        c
        for c in cases
        if any(
            fnmatch.fnmatchcase(c.algorithm, pat) or fnmatch.fnmatchcase(c.label, pat)
            for pat in patterns
        )
    ]
    if not chosen:
        raise ValueError(
            f"--algs {','.join(patterns)} matches no benchmark row; names look like "
            "aes-128-gcm, sha256, hmac-sha256, rsa-2048-private, ecdsa-p256-sign, ffdhe2048, "
            "drbg (globs allowed: 'aes-*-cbc')"
        )
    return chosen
