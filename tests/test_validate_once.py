"""Each check runs once per operation, on the direct path and on the engine path.

Every named check of ``validate`` is wrapped with a counter; one operation of each kind runs
(its objects built inside the count too) through software alone and through an engine that
takes everything; no check may run twice on the same argument.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes as _hashes
from cryptography.hazmat.primitives.asymmetric import ec as _ec
from cryptography.hazmat.primitives.asymmetric import padding
from doubles import TakeAllEngine
from sample_keys import DH_KEY, DH_PEER, EC_KEY, EC_PEER, OAEP, RSA_KEY

from cryptoffload import Policy, Provider, dh, ec, keywrap, mldsa, mlkem, rsa
from cryptoffload.aead import AESCCM, AESGCM
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.cmac import CMAC
from cryptoffload.core import validate
from cryptoffload.gmac import GMAC
from cryptoffload.hashes import SHA256, Hash, digest
from cryptoffload.hmac import HMAC
from cryptoffload.kdf.argon2 import Argon2id
from cryptoffload.kdf.pbkdf2 import PBKDF2HMAC
from cryptoffload.modes import CBC, CTR, ECB

KEY = bytes(range(16))
NONCE = bytes(12)
PSS = padding.PSS(padding.MGF1(_hashes.SHA256()), 32)
CHECKS = [
    name
    for name in dir(validate)
    if not name.startswith("_")
    and callable(getattr(validate, name))
    and getattr(getattr(validate, name), "__module__", "") == validate.__name__
    and name != "validate_op"
]


def _rsa_signature(p: Provider) -> bytes:
    return rsa.RSAPrivateKey(RSA_KEY, provider=p).sign(b"m", PSS, SHA256())


def _sealed(p: Provider) -> bytes:
    return AESGCM(KEY, provider=p).encrypt(NONCE, b"payload", b"aad")


#: One operation each: (what to prepare outside the count, the operation given that).
OPERATIONS: dict[str, tuple[Callable[[Provider], Any], Callable[[Provider, Any], Any]]] = {
    "gcm-encrypt": (
        lambda p: None,
        lambda p, _: AESGCM(KEY, provider=p).encrypt(NONCE, b"payload", b"aad"),
    ),
    "gcm-decrypt": (
        _sealed,
        lambda p, sealed: AESGCM(KEY, provider=p).decrypt(NONCE, sealed, b"aad"),
    ),
    "gcm-short-tag": (
        lambda p: None,
        lambda p, _: AESGCM(KEY, 12, provider=p).encrypt(NONCE, bytearray(b"x"), None),
    ),
    "ccm-encrypt": (
        lambda p: None,
        lambda p, _: AESCCM(KEY, provider=p).encrypt(bytes(13), b"payload", b"aad"),
    ),
    "ccm-decrypt": (
        lambda p: AESCCM(KEY, provider=p).encrypt(bytes(13), b"payload", b"aad"),
        lambda p, sealed: AESCCM(KEY, provider=p).decrypt(bytes(13), sealed, b"aad"),
    ),
    "cbc-update": (
        lambda p: None,
        lambda p, _: (
            Cipher(algorithms.AES(KEY), CBC(bytes(16)), provider=p)
            .encryptor()
            .update(bytearray(32))
        ),
    ),
    "ctr-update": (
        lambda p: None,
        lambda p, _: (
            Cipher(algorithms.AES(KEY), CTR(bytes(16)), provider=p).decryptor().update(b"x" * 20)
        ),
    ),
    "ecb-update-into": (
        lambda p: None,
        lambda p, _: (
            Cipher(algorithms.AES(KEY), ECB(), provider=p)
            .encryptor()
            .update_into(bytes(16), bytearray(31))
        ),
    ),
    "digest": (lambda p: None, lambda p, _: digest(b"message", SHA256(), provider=p)),
    "hash": (lambda p: None, lambda p, _: _finish(Hash(SHA256(), provider=p))),
    "hmac": (lambda p: None, lambda p, _: _finish(HMAC(KEY, SHA256(), provider=p))),
    "cmac": (lambda p: None, lambda p, _: _finish(CMAC(algorithms.AES(KEY), provider=p))),
    "gmac": (lambda p: None, lambda p, _: _finish(GMAC(KEY, NONCE, provider=p))),
    "rsa-sign": (lambda p: None, lambda p, _: _rsa_signature(p)),
    "rsa-verify": (
        _rsa_signature,
        lambda p, sig: (
            rsa.RSAPrivateKey(RSA_KEY, provider=p).public_key().verify(sig, b"m", PSS, SHA256())
        ),
    ),
    "rsa-encrypt": (
        lambda p: None,
        lambda p, _: rsa.RSAPublicKey(RSA_KEY.public_key(), provider=p).encrypt(b"m", OAEP),
    ),
    "rsa-decrypt": (
        lambda p: RSA_KEY.public_key().encrypt(b"m", OAEP),
        lambda p, ct: rsa.RSAPrivateKey(RSA_KEY, provider=p).decrypt(ct, OAEP),
    ),
    "rsa-raw": (lambda p: None, lambda p, _: rsa.RSAPrivateKey(RSA_KEY, provider=p).raw_private(7)),
    "ecdsa-sign": (
        lambda p: None,
        lambda p, _: ec.EllipticCurvePrivateKey(EC_KEY, provider=p).sign(b"m", ec.ECDSA(SHA256())),
    ),
    "ecdsa-verify": (
        lambda p: EC_KEY.sign(b"m", _ec.ECDSA(_hashes.SHA256())),
        lambda p, sig: ec.EllipticCurvePublicKey(EC_KEY.public_key(), provider=p).verify(
            sig, b"m", ec.ECDSA(SHA256())
        ),
    ),
    "ecdh": (
        lambda p: None,
        lambda p, _: ec.EllipticCurvePrivateKey(EC_KEY, provider=p).exchange(
            ec.ECDH(), ec.EllipticCurvePublicKey(EC_PEER)
        ),
    ),
    "dh": (
        lambda p: None,
        lambda p, _: dh.DHPrivateKey(DH_KEY, provider=p).exchange(dh.DHPublicKey(DH_PEER)),
    ),
    "pbkdf2": (
        lambda p: None,
        lambda p, _: PBKDF2HMAC(SHA256(), 16, b"salt", 2, provider=p).derive(b"password"),
    ),
    "argon2id": (
        lambda p: None,
        lambda p, _: Argon2id(bytes(8), 16, 1, 1, 8, provider=p).derive(b"password"),
    ),
    "keywrap": (lambda p: None, lambda p, _: keywrap.aes_key_wrap(KEY, KEY, provider=p)),
    "keyunwrap-pad": (
        lambda p: keywrap.aes_key_wrap_with_padding(KEY, b"k", provider=p),
        lambda p, wrapped: keywrap.aes_key_unwrap_with_padding(KEY, wrapped, provider=p),
    ),
    "mlkem-decap": (
        lambda p: mlkem.MLKEM768PrivateKey.generate(provider=p),
        lambda p, key: key.decapsulate(key.public_key().encapsulate()[1]),
    ),
    "mldsa-sign": (
        lambda p: mldsa.MLDSA44PrivateKey.generate(provider=p),
        lambda p, key: key.sign(b"m", b"c"),
    ),
    "mldsa-verify": (
        lambda p: (lambda key: (key.public_key(), key.sign(b"m", b"c")))(
            mldsa.MLDSA44PrivateKey.generate(provider=p)
        ),
        lambda p, given: given[0].verify(given[1], b"m", b"c"),
    ),
}


def _finish(ctx: Any) -> bytes:
    ctx.update(b"message")
    return ctx.finalize()


def _counting(monkeypatch: pytest.MonkeyPatch) -> collections.Counter:
    calls: collections.Counter = collections.Counter()
    for name in CHECKS:
        check = getattr(validate, name)

        @functools.wraps(check)
        def counted(*args: Any, _check: Callable = check, _name: str = name, **kw: Any) -> Any:
            # Checks that take an argument's name count once per argument.
            calls[(_name, args[0] if args and isinstance(args[0], str) else None)] += 1
            return _check(*args, **kw)

        monkeypatch.setattr(validate, name, counted)
    return calls


PATHS = {
    "software": lambda: Provider([]),
    "engine": lambda: Provider([TakeAllEngine()], policy=Policy(min_size={"*": 0})),
}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_no_check_runs_twice_in_one_operation(monkeypatch, path, operation):
    p = PATHS[path]()
    prepare, run = OPERATIONS[operation]
    given = prepare(p)
    calls = _counting(monkeypatch)
    run(p, given)
    twice = {check: n for check, n in calls.items() if n > 1}
    assert not twice, f"checks run more than once: {twice}"
    if path == "engine":
        assert p.counters.snapshot()["takeall"], "the engine did not take the operation"


def test_the_checks_are_counted_at_all(monkeypatch):
    calls = _counting(monkeypatch)
    AESCCM(KEY, provider=PATHS["engine"]()).encrypt(bytes(13), b"payload", None)
    assert calls[("ccm_nonce", None)] == 1
    assert calls[("aes_key", None)] == 1
