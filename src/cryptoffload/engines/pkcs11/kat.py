"""Known answers at probe time: one op per mechanism group through the engine, held to
software's answer; an algorithm whose group disagrees or fails is not claimed."""

from __future__ import annotations

import os
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from cryptoffload.core.ops import AeadOp, CipherOp, EcdhOp, EcdsaOp, HashOp, MacOp, RsaOp
from cryptoffload.engines.software import SoftwareEngine
from cryptoffload.errors import Unavailable

_DATA = bytes(range(200))
_KEY = bytes(range(32))
_EC_KEYS: dict[str, Any] = {}
_RSA_KEY: list[Any] = []


def _ec_key(curve: str) -> Any:
    if curve not in _EC_KEYS:
        cls = {"p256": ec.SECP256R1, "p384": ec.SECP384R1, "p521": ec.SECP521R1}[curve]
        _EC_KEYS[curve] = ec.derive_private_key(0x1234567 + len(curve), cls())
    return _EC_KEYS[curve]


def _ops(alg: str) -> list[Any]:
    """The ops whose results must equal software's for ``alg`` (sign: checked by verifying)."""
    parts = alg.split("-")
    if alg.startswith("aes-"):
        key = _KEY[: int(parts[1]) // 8]
        mode = parts[2]
        if mode == "gcm":
            return [
                AeadOp(alg, "encrypt", key, _KEY[:12], _DATA[:77], b"aad", 16),
                AeadOp(alg, "encrypt", key, _KEY[:12], b"", b"", 16),
            ]
        iv = None if mode == "ecb" else bytes(15) + b"\xfe"
        return [
            CipherOp(alg, "encrypt", key, iv, _DATA[:64]),
            CipherOp(alg, "decrypt", key, iv, _DATA[:48]),
        ]
    if alg.startswith("sha"):
        return [HashOp(alg, "digest", _DATA), HashOp(alg, "digest", b"")]
    if alg.startswith("hmac-"):
        return [MacOp(alg, "mac", _KEY, _DATA), MacOp(alg, "mac", _KEY[:5], _DATA[:3])]
    if alg.startswith("cmac-aes-"):
        return [MacOp(alg, "mac", _KEY[: int(parts[2]) // 8], _DATA[:33])]
    if alg.startswith("ecdh-"):
        peer = ec.derive_private_key(99, _ec_key(parts[1]).curve).public_key()
        return [EcdhOp(alg, "exchange", _ec_key(parts[1]), peer)]
    if alg.startswith("ecdsa-") and alg.endswith("-verify"):
        key = _ec_key(parts[1])
        digest = _DATA[:32]
        sig = key.sign(digest, ec.ECDSA(_prehashed()))
        return [EcdsaOp(alg, "verify", key.public_key(), digest, hashes.SHA256(), signature=sig)]
    return []


def _prehashed() -> Any:
    from cryptography.hazmat.primitives.asymmetric.utils import Prehashed

    return Prehashed(hashes.SHA256())


def _signs(engine: Any, alg: str) -> str | None:
    """Sign with the engine, verify with software: None when it holds, else the failure."""
    parts = alg.split("-")
    digest = _DATA[:32]
    if alg.startswith("ecdsa-"):
        key = _ec_key(parts[1])
        der = engine.run(EcdsaOp(alg, "sign", key, digest, hashes.SHA256(), deterministic=False))
        key.public_key().verify(der, digest, ec.ECDSA(_prehashed()))
        return None
    if not _RSA_KEY:
        _RSA_KEY.append(rsa.generate_private_key(65537, 2048))
    key = _RSA_KEY[0]
    alg = "rsa-2048-private"  # one size checked for all (the same mechanism): 2048 bits
    pads = [padding.PKCS1v15(), padding.PSS(padding.MGF1(hashes.SHA256()), 32)]
    for pad in pads:
        sig = engine.run(
            RsaOp(alg, "sign", key, digest=digest, padding=pad, hash_alg=hashes.SHA256())
        )
        key.public_key().verify(sig, digest, pad, _prehashed())
    return None


def _import_refused(exc: BaseException) -> bool:
    return isinstance(exc, Unavailable) and "C_CreateObject" in exc.detail


def _signs_with_token_key(engine: Any, alg: str) -> None:
    """For a token that imports no keys (a TPM): a key pair made on the token for the probe
    signs, software verifies with its public half, and the pair is destroyed."""
    parts = alg.split("-")
    ident = b"cryptoffload-probe-" + os.urandom(6)
    label = ident.decode("latin-1")
    digest = _DATA[:32]
    try:
        if alg.startswith("ecdsa-"):
            raw = engine.generate_key("ec", label=label, id=ident, curve=parts[1])
            op = EcdsaOp(alg, "sign", raw, digest, hashes.SHA256(), deterministic=False)
            der = engine.run(op)
            raw.public_key().verify(der, digest, ec.ECDSA(_prehashed()))
        else:
            raw = engine.generate_key("rsa", label=label, id=ident, bits=int(parts[1]))
            pad = padding.PKCS1v15()
            op = RsaOp(alg, "sign", raw, digest=digest, padding=pad, hash_alg=hashes.SHA256())
            raw.public_key().verify(engine.run(op), digest, pad, _prehashed())
    finally:
        engine._destroy_token_objects(ident)


def check(engine: Any, algorithms: set[str]) -> dict[str, str]:
    """Run the known answers; the algorithms that failed, each with why (never key material).

    A token that refuses to import keys (a TPM) has ``imports_refused`` set on the engine; its
    signing algorithms are then checked with a key pair made on it (one size per family)."""
    software = SoftwareEngine()
    failed: dict[str, str] = {}
    for alg in sorted(algorithms):
        try:
            if alg.endswith("-sign") or alg.startswith("rsa-"):
                _signs(engine, alg)
                continue
            for op in _ops(alg):
                got, want = engine.run(op), software.run(op)
                if got != want:
                    failed[alg] = "known answer differs from software"
                    break
        except Exception as exc:  # a refusal or fault: not claimed
            if _import_refused(exc):
                engine.imports_refused = True
            failed[alg] = f"known answer failed: {type(exc).__name__}: {exc}"[:200]
    if engine.imports_refused:
        checked: dict[str, str | None] = {}  # each curve; one RSA size for all (one mechanism)
        for alg in sorted(a for a in failed if a.endswith("-sign") or a.startswith("rsa-")):
            family = "rsa" if alg.startswith("rsa-") else alg
            if family not in checked:
                try:
                    _signs_with_token_key(engine, alg)
                    checked[family] = None
                except Exception as exc:
                    checked[family] = f"token-key check failed: {type(exc).__name__}: {exc}"
            if checked[family] is None:
                del failed[alg]
            else:
                failed[alg] = str(checked[family])[:200]
    return failed


def gcm_tags(engine: Any, alg: str) -> frozenset[int]:
    """The GCM tag lengths (4 to 16 bytes) for which the token's ciphertext‖tag equals
    software's and a flipped tag bit fails."""
    software = SoftwareEngine()
    good: set[int] = set()
    for t in range(4, 17):
        op = AeadOp(alg, "encrypt", _KEY[:16], _KEY[:12], _DATA[:33], b"aad", t)
        try:
            sealed = engine.run(op)
            if sealed != software.run(op):
                continue
            bad = sealed[:-1] + bytes([sealed[-1] ^ 1])
            engine.run(AeadOp(alg, "decrypt", _KEY[:16], _KEY[:12], bad, b"aad", t))
        except InvalidTag:
            good.add(t)
        except Exception:  # a refusal or fault: that length is not claimed
            continue
    return frozenset(good)
