"""The ``*_async`` methods: the answers, errors and counts of the sync calls and of
`cryptography`, on software, the CAAM model and an engine with a completion fd."""

from __future__ import annotations

import asyncio
import os

import pytest
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes as c_hashes
from cryptography.hazmat.primitives import hmac as c_hmac
from cryptography.hazmat.primitives.asymmetric import ec as c_ec
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers import aead as c_aead
from fd_engine import FdEngine
from sample_keys import RSA_KEY

from cryptoffload import Provider, ec, hashes, hmac, rsa, using
from cryptoffload import aead as o_aead

CONFIGS = ("software", "caam", "fd")
AEADS = [
    ("AESGCM", 16, 12),
    ("AESCCM", 16, 13),
    ("ChaCha20Poly1305", 32, 12),
    ("AESOCB3", 16, 12),
    ("AESGCMSIV", 32, 12),
]


def make_provider(config: str) -> Provider:
    if config == "software":
        return Provider(["software"])
    if config == "caam":
        return Provider(["caam:model=t2080"])
    return Provider([FdEngine()])


@pytest.fixture(params=CONFIGS)
def provider(request):
    p = make_provider(request.param)
    yield p
    p.close()


def arun(provider: Provider, coro_fn, *args):
    """``coro_fn(*args)`` under ``asyncio.run`` with ``provider`` in force."""
    with using(provider):
        return asyncio.run(coro_fn(*args))


def engine_ops(provider: Provider) -> int:
    """Ops the first engine (not software) answered, over every algorithm."""
    cells = provider.counters.snapshot()[provider.engines[0].name]
    return sum(cell["ops"] for cell in cells.values())


@pytest.mark.parametrize(("name", "key_len", "nonce_len"), AEADS)
def test_aead_async_equals_cryptography_and_refuses_altered_data(
    provider, name, key_len, nonce_len
):
    key, nonce = os.urandom(key_len), os.urandom(nonce_len)
    ours = getattr(o_aead, name)(key)
    theirs = getattr(c_aead, name)(key)
    data, aad = os.urandom(100), b"header"

    async def go():
        sealed = await ours.encrypt_async(nonce, data, aad)
        opened = await ours.decrypt_async(nonce, sealed, aad)
        altered = bytes([sealed[0] ^ 1]) + sealed[1:]
        with pytest.raises(InvalidTag):
            await ours.decrypt_async(nonce, altered, aad)
        return sealed, opened

    sealed, opened = arun(provider, go)
    assert sealed == theirs.encrypt(nonce, data, aad) == ours.encrypt(nonce, data, aad)
    assert opened == data


def test_aessiv_async_equals_cryptography(provider):
    key = os.urandom(32)
    ours, theirs = o_aead.AESSIV(key), c_aead.AESSIV(key)

    async def go():
        sealed = await ours.encrypt_async(b"data", [b"a", b"nonce"])
        assert await ours.decrypt_async(sealed, [b"a", b"nonce"]) == b"data"
        with pytest.raises(InvalidTag):
            await ours.decrypt_async(sealed, [b"b", b"nonce"])
        return sealed

    assert arun(provider, go) == theirs.encrypt(b"data", [b"a", b"nonce"])


@pytest.mark.parametrize("algorithm", [c_hashes.SHA256(), c_hashes.SHA384(), c_hashes.SHA1()])
def test_digest_async_equals_cryptography(provider, algorithm):
    data = os.urandom(1000)
    want = c_hashes.Hash(algorithm)
    want.update(data)
    got = arun(provider, hashes.digest_async, data, algorithm)
    assert got == want.finalize() == hashes.digest(data, algorithm, provider=provider)


def test_digest_async_of_a_shake_has_its_length(provider):
    algorithm = c_hashes.SHAKE128(digest_size=40)
    want = c_hashes.Hash(algorithm)
    want.update(b"abc")
    assert arun(provider, hashes.digest_async, b"abc", algorithm) == want.finalize()


def test_hmac_digest_async_equals_cryptography(provider):
    key, data = os.urandom(32), os.urandom(300)
    want = c_hmac.HMAC(key, c_hashes.SHA256())
    want.update(data)
    got = arun(provider, hmac.digest_async, key, data, c_hashes.SHA256())
    assert got == want.finalize()


def test_rsa_async_methods_equal_cryptography(provider):
    native = RSA_KEY
    key = rsa.RSAPrivateKey(native)
    public = key.public_key()
    pss = padding.PSS(padding.MGF1(c_hashes.SHA256()), padding.PSS.MAX_LENGTH)
    oaep = padding.OAEP(padding.MGF1(c_hashes.SHA256()), c_hashes.SHA256(), None)

    async def go():
        v15 = await key.sign_async(b"msg", padding.PKCS1v15(), c_hashes.SHA256())
        assert v15 == native.sign(b"msg", padding.PKCS1v15(), c_hashes.SHA256())
        signed = await key.sign_async(b"msg", pss, c_hashes.SHA256())
        native.public_key().verify(signed, b"msg", pss, c_hashes.SHA256())
        await public.verify_async(signed, b"msg", pss, c_hashes.SHA256())
        with pytest.raises(InvalidSignature):
            await public.verify_async(signed, b"other", pss, c_hashes.SHA256())
        sealed = await public.encrypt_async(b"secret", oaep)
        assert native.decrypt(sealed, oaep) == b"secret"
        theirs = native.public_key().encrypt(b"secret", oaep)
        assert await key.decrypt_async(theirs, oaep) == b"secret"
        with pytest.raises(ValueError):
            await key.decrypt_async(bytes([theirs[0] ^ 1]) + theirs[1:], oaep)

    arun(provider, go)


def test_ecdsa_and_ecdh_async_equal_cryptography(provider):
    key = ec.generate_private_key(ec.SECP256R1())
    peer = c_ec.generate_private_key(c_ec.SECP256R1())
    algorithm = ec.ECDSA(c_hashes.SHA256())

    async def go():
        signature = await key.sign_async(b"msg", algorithm)
        key.public_key()._key.verify(signature, b"msg", algorithm)
        await key.public_key().verify_async(signature, b"msg", algorithm)
        with pytest.raises(InvalidSignature):
            await key.public_key().verify_async(signature, b"other", algorithm)
        return await key.exchange_async(ec.ECDH(), peer.public_key())

    secret = arun(provider, go)
    assert secret == peer.exchange(c_ec.ECDH(), key.public_key()._key)


BAD_CALLS = [
    ("short nonce", lambda g: g.encrypt_async(b"123", b"data", None), "encrypt"),
    ("str data", lambda g: g.encrypt_async(b"0" * 12, "data", None), "encrypt"),
    ("tagless", lambda g: g.decrypt_async(b"0" * 12, b"short", None), "decrypt"),
]


@pytest.mark.parametrize(("what", "call", "sync"), BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_input_raises_what_the_sync_call_raises(provider, what, call, sync):
    gcm = o_aead.AESGCM(bytes(16))
    args = {
        "short nonce": (b"123", b"data", None),
        "str data": (b"0" * 12, "data", None),
        "tagless": (b"0" * 12, b"short", None),
    }[what]
    with using(provider), pytest.raises(Exception) as expected:
        getattr(gcm, sync)(*args)
    with pytest.raises(type(expected.value)):
        arun(provider, call, gcm)


async def workload() -> None:
    """Every async method once, failures included."""
    gcm = o_aead.AESGCM(bytes(16))
    nonce = bytes(12)
    sealed = await gcm.encrypt_async(nonce, b"x" * 64, b"aad")
    await gcm.decrypt_async(nonce, sealed, b"aad")
    with pytest.raises(InvalidTag):
        await gcm.decrypt_async(nonce, sealed[:-1] + bytes([sealed[-1] ^ 1]), b"aad")
    await hashes.digest_async(b"y" * 100, c_hashes.SHA256())
    await hmac.digest_async(b"k", b"z" * 50, c_hashes.SHA256())
    key = rsa.RSAPrivateKey(RSA_KEY)
    signed = await key.sign_async(b"m", padding.PKCS1v15(), c_hashes.SHA256())
    await key.public_key().verify_async(signed, b"m", padding.PKCS1v15(), c_hashes.SHA256())
    with pytest.raises(InvalidSignature):
        await key.public_key().verify_async(signed, b"n", padding.PKCS1v15(), c_hashes.SHA256())
    eck = ec.derive_private_key(12345, ec.SECP256R1())
    signature = await eck.sign_async(b"m", ec.ECDSA(c_hashes.SHA256()))
    await eck.public_key().verify_async(signature, b"m", ec.ECDSA(c_hashes.SHA256()))
    await eck.exchange_async(ec.ECDH(), ec.derive_private_key(777, ec.SECP256R1()).public_key())


def sync_workload() -> None:
    """:func:`workload` with the sync calls."""
    gcm = o_aead.AESGCM(bytes(16))
    nonce = bytes(12)
    sealed = gcm.encrypt(nonce, b"x" * 64, b"aad")
    gcm.decrypt(nonce, sealed, b"aad")
    with pytest.raises(InvalidTag):
        gcm.decrypt(nonce, sealed[:-1] + bytes([sealed[-1] ^ 1]), b"aad")
    hashes.digest(b"y" * 100, c_hashes.SHA256())
    ctx = hmac.HMAC(b"k", c_hashes.SHA256())
    ctx.update(b"z" * 50)
    ctx.finalize()
    key = rsa.RSAPrivateKey(RSA_KEY)
    signed = key.sign(b"m", padding.PKCS1v15(), c_hashes.SHA256())
    key.public_key().verify(signed, b"m", padding.PKCS1v15(), c_hashes.SHA256())
    with pytest.raises(InvalidSignature):
        key.public_key().verify(signed, b"n", padding.PKCS1v15(), c_hashes.SHA256())
    eck = ec.derive_private_key(12345, ec.SECP256R1())
    signature = eck.sign(b"m", ec.ECDSA(c_hashes.SHA256()))
    eck.public_key().verify(signature, b"m", ec.ECDSA(c_hashes.SHA256()))
    eck.exchange(ec.ECDH(), ec.derive_private_key(777, ec.SECP256R1()).public_key())


@pytest.mark.parametrize("config", CONFIGS)
def test_counts_equal_the_sync_calls(config):
    sync, awaited = make_provider(config), make_provider(config)
    try:
        with using(sync):
            sync_workload()
        arun(awaited, workload)
        assert awaited.counters.snapshot() == sync.counters.snapshot()
        if config != "software":  # the engine did them, not the executor's software
            assert engine_ops(awaited) >= 11
    finally:
        sync.close()
        awaited.close()
