"""HPKE at ``cryptoffload.hpke``: `cryptography`'s suite, taking cryptoffload's keys (it runs
natively: no op is counted), and its hybrid keys built from either library's keys."""

from __future__ import annotations

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hpke as c_hpke
from cryptography.hazmat.primitives.asymmetric import x25519 as c_x25519

from cryptoffload import Provider, ec, mlkem, using, x25519
from cryptoffload.hpke import (
    AEAD,
    KDF,
    KEM,
    MLKEM768X25519PrivateKey,
    MLKEM768X25519PublicKey,
    Suite,
)


def test_a_suite_seals_to_cryptoffloads_keys_and_cryptography_opens_it():
    p = Provider([])
    with using(p):
        key = x25519.X25519PrivateKey.generate()
        sealed = Suite(KEM.X25519, KDF.HKDF_SHA256, AEAD.AES_128_GCM).encrypt(
            b"hello", key.public_key(), info=b"i"
        )
    theirs = c_hpke.Suite(c_hpke.KEM.X25519, c_hpke.KDF.HKDF_SHA256, c_hpke.AEAD.AES_128_GCM)
    assert theirs.decrypt(sealed, key.to_cryptography(), info=b"i") == b"hello"
    assert not p.counters.snapshot().get("software")  # native: nothing offered or counted


def test_hybrid_keys_take_either_librarys_keys_and_are_their_classes_instances():
    kem, dh = mlkem.MLKEM768PrivateKey.generate(), c_x25519.X25519PrivateKey.generate()
    private = MLKEM768X25519PrivateKey(kem, dh)
    public = MLKEM768X25519PublicKey(kem.public_key(), dh.public_key())
    assert isinstance(private, MLKEM768X25519PrivateKey)
    assert isinstance(private, c_hpke.MLKEM768X25519PrivateKey)
    suite = Suite(KEM.MLKEM768_X25519, KDF.HKDF_SHA256, AEAD.CHACHA20_POLY1305)
    assert suite.decrypt(suite.encrypt(b"m", public), private) == b"m"
    with pytest.raises(TypeError):
        MLKEM768X25519PrivateKey(dh, dh)


def test_wrong_keys_raise_what_cryptography_raises():
    suite = Suite(KEM.P256, KDF.HKDF_SHA256, AEAD.AES_256_GCM)
    key = ec.generate_private_key(ec.SECP256R1())
    sealed = suite.encrypt(b"m", key.public_key())
    with pytest.raises(InvalidTag):
        suite.decrypt(sealed, ec.generate_private_key(ec.SECP256R1()))
    with pytest.raises(TypeError):
        suite.encrypt(b"m", x25519.X25519PrivateKey.generate().public_key())
    with pytest.raises(TypeError):
        Suite("not a kem", KDF.HKDF_SHA256, AEAD.AES_128_GCM)
