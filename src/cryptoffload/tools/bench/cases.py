"""What each benchmark row runs: one callable per algorithm and operation, on shared buffers."""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import hashes as c_hashes
from cryptography.hazmat.primitives.asymmetric import ec as c_ec
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import rsa as c_rsa

from cryptoffload import dh, ec, modes, rsa
from cryptoffload.aead import AESCCM, AESGCM, ChaCha20Poly1305
from cryptoffload.blocks import ffdh
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.cmac import CMAC
from cryptoffload.core.names import CIPHER_CLASSES, CIPHER_FAMILIES, HASH_CLASSES
from cryptoffload.core.provider import Provider
from cryptoffload.drbg import Drbg
from cryptoffload.gmac import GMAC
from cryptoffload.hashes import digest
from cryptoffload.hmac import HMAC
from cryptoffload.poly1305 import Poly1305

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


def _other_cipher(name: str, family: str, encrypt: bool) -> Builder:
    """A cipher of another family (``camellia-128-cbc``, ``chacha20``): one context streamed
    block after block, as for AES."""
    spec = CIPHER_FAMILIES[family]
    mode_name = name.rsplit("-", 1)[-1] if spec.modes else None
    if spec.sized:
        key_len = int(name.split("-")[1]) // 8
    else:
        key_len = 16 if 16 in spec.key_sizes else max(spec.key_sizes)

    def build(p: Provider, block: int) -> Callable[[], object]:
        key = bytes(range(key_len))
        if family == "chacha20":
            algorithm: Any = algorithms.ChaCha20(key, bytes(16))
        else:
            algorithm = CIPHER_CLASSES[family](key)
        if mode_name is None:
            mode = None
        elif mode_name == "ecb":
            mode = modes.ECB()
        else:
            mode = _MODE_CLASSES[mode_name](bytes(spec.block))
        cipher = Cipher(algorithm, mode, provider=p)
        ctx = cipher.encryptor() if encrypt else cipher.decryptor()
        data, out = bytes(block), bytearray(block + 15)
        if family != "chacha20":
            return functools.partial(ctx.update_into, data, out)
        # One nonce gives 2**32 blocks of keystream: start it again before they run out (a
        # long run at GB/s would otherwise reach the end, a ValueError, within minutes).
        calls_per_nonce = chacha20_calls_per_nonce(block)
        state = [0]

        def one() -> object:
            state[0] += 1
            if state[0] == calls_per_nonce:
                ctx.reset_nonce(bytes(16))
                state[0] = 1
            return ctx.update_into(data, out)

        return one

    return build


def chacha20_calls_per_nonce(block: int) -> int:
    """Updates of ``block`` bytes one ChaCha20 nonce (2**32 blocks of 64 bytes from counter 0)
    takes, less one: the bench starts the nonce again at the last (a part block uses a whole)."""
    return (1 << 32) // -(-block // 64) - 1


def _chacha20_poly1305(op: str) -> Builder:
    def build(p: Provider, block: int) -> Callable[[], object]:
        aead = ChaCha20Poly1305(_key(256), provider=p)
        data = bytes(block)
        if op == "decrypt":
            sealed = ChaCha20Poly1305(_key(256), provider=Provider([])).encrypt(_NONCE, data, _AAD)
            return functools.partial(aead.decrypt, _NONCE, sealed, _AAD)
        return functools.partial(aead.encrypt, _NONCE, data, _AAD)

    return build


#: Hashes beyond SHA-1/SHA-2, by our names: their `cryptography` objects (the XOFs have no
#: one-shot digest of a fixed size, so no row).
_MORE_HASHES: dict[str, Callable[[], Any]] = {
    "sha3-224": c_hashes.SHA3_224,
    "sha3-256": c_hashes.SHA3_256,
    "sha3-384": c_hashes.SHA3_384,
    "sha3-512": c_hashes.SHA3_512,
    "blake2b": lambda: c_hashes.BLAKE2b(64),
    "blake2s": lambda: c_hashes.BLAKE2s(32),
    "sm3": c_hashes.SM3,
    "md5": c_hashes.MD5,
}


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


def _one_shot_digest(cls: Callable[[], Any]) -> Builder:
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
    for family, spec in CIPHER_FAMILIES.items():
        for name in spec.names(family):
            # SM4-GCM and ARC4 stream in software whatever the engines (no engine row to
            # show); CFB8 is a byte at a time.
            if name.endswith(("-gcm", "-cfb8")) or name == "arc4":
                continue
            for op in ("encrypt", "decrypt"):
                cases.append(Case(name, op, True, _other_cipher(name, family, op == "encrypt")))
    for op in ("encrypt", "decrypt"):
        cases.append(Case("chacha20-poly1305", op, True, _chacha20_poly1305(op)))
    for name, make in _MORE_HASHES.items():
        cases.append(Case(name, "digest", True, _one_shot_digest(make)))
        cases.append(
            Case(
                f"hmac-{name}",
                "mac",
                True,
                _streamed(
                    lambda p, make=make: functools.partial(HMAC, _key(256), make(), provider=p)
                ),
            )
        )
    cases.append(
        Case(
            "poly1305",
            "mac",
            True,
            _streamed(lambda p: functools.partial(Poly1305, _key(256), provider=p)),
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

    def matches(case: Case, pat: str) -> bool:
        return fnmatch.fnmatchcase(case.algorithm, pat) or fnmatch.fnmatchcase(case.label, pat)

    # Every pattern must match a row: one that matches nothing is a typo or a name without a
    # row, not something to drop while the others run.
    unmatched = [pat for pat in patterns if not any(matches(c, pat) for c in cases)]
    if unmatched:
        raise ValueError(
            f"--algs {','.join(unmatched)} matches no benchmark row; names look like "
            "aes-128-gcm, sha256, hmac-sha256, rsa-2048-private, ecdsa-p256-sign, ffdhe2048, "
            "drbg (globs allowed: 'aes-*-cbc')"
        )
    return [c for c in cases if any(matches(c, pat) for pat in patterns)]
