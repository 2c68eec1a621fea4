"""Token keys: made on the token, used through the normal API, run only by their engine, and
never readable out of it."""

from __future__ import annotations

import os

import pytest
import softhsm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec as ref_ec
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import rsa as ref_rsa
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from cryptoffload import Policy, Provider, ec, rsa, tokenkeys
from cryptoffload.aead import AESGCM
from cryptoffload.devicekey import DeviceKeyError
from cryptoffload.engines.pkcs11 import TokenAesKey, ck
from cryptoffload.engines.pkcs11.keys import find

ALL = Policy(min_size={"*": 0})
NONCE = bytes(range(12))


@pytest.fixture(scope="module")
def token_provider(softhsm_token: softhsm.SoftHsm):
    provider = Provider([softhsm_token.spec], policy=ALL)
    assert not provider.unavailable, provider.unavailable
    yield provider
    provider.close()


def _label(kind: str) -> str:
    return f"{kind}-{os.urandom(4).hex()}"


def test_a_generated_aes_key_seals_and_opens_through_aesgcm_and_only_its_engine_runs_it(
    token_provider,
):
    engine = token_provider.engines[0]
    key = engine.generate_key("aes", label=_label("aes"), bits=256)
    assert isinstance(key, TokenAesKey) and key.bits == 256 and len(key) == 32
    gcm = AESGCM(key, provider=token_provider)
    sealed = gcm.encrypt(NONCE, b"payload", b"aad")
    assert len(sealed) == len(b"payload") + 16
    assert gcm.decrypt(NONCE, sealed, b"aad") == b"payload"
    assert token_provider.counters.snapshot().get("software", {}) == {}
    with pytest.raises(DeviceKeyError, match="lives on the token"):
        AESGCM(key, provider=Provider([])).encrypt(NONCE, b"payload", None)
    with pytest.raises(DeviceKeyError):
        AESGCM(key, provider=Provider(["caam:model=t2080"], policy=ALL)).encrypt(NONCE, b"p", None)
    assert "aes-256" in repr(key) and engine.name in repr(key)


def test_another_token_refuses_the_key_and_so_does_software(token_provider, softhsm_token):
    engine = token_provider.engines[0]
    aes = engine.generate_key("aes", label=_label("aes"), bits=128)
    ec_key = tokenkeys.generate_key(engine, "ec", label=_label("ec"), provider=token_provider)
    other = Provider([softhsm_token.other_spec], policy=ALL)
    try:
        assert not other.unavailable and other.engines[0].name != engine.name
        with pytest.raises(DeviceKeyError, match=other.engines[0].name):
            AESGCM(aes, provider=other).encrypt(NONCE, b"m", None)
        moved = ec.EllipticCurvePrivateKey(ec_key.to_cryptography(), provider=other)
        with pytest.raises(DeviceKeyError, match=other.engines[0].name):
            moved.sign(b"m", ec.ECDSA(hashes.SHA256()))
        assert all(c["ops"] == 0 for c in other.counters.snapshot()["software"].values())
    finally:
        other.close()


def test_the_same_key_found_again_by_label_or_id_gives_the_same_answers(token_provider):
    engine = token_provider.engines[0]
    label = _label("aes")
    made = engine.generate_key("aes", label=label, id=b"\x01\x02" + os.urandom(4), bits=128)
    again = engine.key(label=label)
    assert again == made and again.bits == 128
    sealed = AESGCM(made, provider=token_provider).encrypt(NONCE, b"m", None)
    assert AESGCM(again, provider=token_provider).decrypt(NONCE, sealed, None) == b"m"
    with pytest.raises(LookupError, match="no private or AES key"):
        engine.key(label="no such key")
    with pytest.raises(TypeError):
        engine.key()


def test_a_token_key_value_cannot_be_read_out(token_provider):
    engine = token_provider.engines[0]
    label = _label("aes")
    engine.generate_key("aes", label=label)
    token = engine._token
    handle = find(token, ck.CKO_SECRET_KEY, label, None)
    with token.session() as s, pytest.raises(ck.CkError) as info:
        token.module.attribute(s, handle, ck.CKA_VALUE)
    assert info.value.rv == ck.CKR_ATTRIBUTE_SENSITIVE
    with token.session() as s:
        assert token.module.attribute(s, handle, ck.CKA_EXTRACTABLE) == b"\0"


def test_a_generated_ec_key_signs_and_agrees_and_its_public_half_is_an_ordinary_key(
    token_provider,
):
    engine = token_provider.engines[0]
    key = tokenkeys.generate_key(
        engine, "ec", label=_label("ec"), curve="p256", provider=token_provider
    )
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
    public = key.public_key().to_cryptography()
    assert isinstance(public, ref_ec.EllipticCurvePublicKey)
    sig = key.sign(b"message", ec.ECDSA(hashes.SHA256()))
    public.verify(sig, b"message", ref_ec.ECDSA(hashes.SHA256()))
    peer = ref_ec.generate_private_key(ref_ec.SECP256R1())
    assert key.exchange(ec.ECDH(), peer.public_key()) == peer.exchange(ref_ec.ECDH(), public)
    with pytest.raises(DeviceKeyError):
        key.private_numbers()
    with pytest.raises(DeviceKeyError):
        key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    # Software and other engines refuse it; a deterministic signature is declined, so refused.
    elsewhere = ec.EllipticCurvePrivateKey(key.to_cryptography(), provider=Provider([]))
    with pytest.raises(DeviceKeyError, match="only that engine"):
        elsewhere.sign(b"message", ec.ECDSA(hashes.SHA256()))
    with pytest.raises(DeviceKeyError):
        key.sign(b"m", ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
    assert "secret" not in repr(key)


def test_the_engine_gives_cryptographys_interfaces_that_the_api_takes_and_wraps(token_provider):
    engine = token_provider.engines[0]
    raw = engine.generate_key("ec", label=_label("ec"), curve="p384")
    assert isinstance(raw, ref_ec.EllipticCurvePrivateKey)
    with pytest.raises(DeviceKeyError):
        raw.sign(b"m", ref_ec.ECDSA(hashes.SHA384()))  # never signs outside its engine
    wrapped = ec.EllipticCurvePrivateKey(raw, provider=token_provider)
    sig = wrapped.sign(b"m", ec.ECDSA(hashes.SHA384()))
    raw.public_key().verify(sig, b"m", ref_ec.ECDSA(hashes.SHA384()))


def test_a_generated_rsa_key_signs_and_decrypts_and_cannot_be_read(token_provider):
    engine = token_provider.engines[0]
    label = _label("rsa")
    key = tokenkeys.generate_key(engine, "rsa", label=label, bits=2048, provider=token_provider)
    assert isinstance(key, rsa.RSAPrivateKey) and key.key_size == 2048
    public = key.public_key().to_cryptography()
    assert isinstance(public, ref_rsa.RSAPublicKey)
    for pad in (padding.PKCS1v15(), padding.PSS(padding.MGF1(hashes.SHA256()), 32)):
        sig = key.sign(b"message", pad, hashes.SHA256())
        public.verify(sig, b"message", pad, hashes.SHA256())
    oaep = padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA1(), None)
    assert key.decrypt(public.encrypt(b"secret", oaep), oaep) == b"secret"
    with pytest.raises(ValueError):
        key.decrypt(bytes(256), oaep)
    with pytest.raises(DeviceKeyError):
        key.private_numbers()
    found = tokenkeys.key(engine, label=label, provider=token_provider)
    assert found.public_key() == key.public_key()
    snap = token_provider.counters.snapshot()
    assert snap[engine.name]["rsa-2048-private"]["ops"] >= 4
