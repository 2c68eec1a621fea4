"""Bad input through every engine set: the right exception, raised above the engines, no key shown.

Each test takes the ``provider`` fixture (software only, a take-all engine, a chaos engine). A
check that fails must fail before any engine is offered the op: the engine's ``seen`` list and
the provider's counters for it stay empty. Exception texts and reprs never carry key material.
"""

from __future__ import annotations

import hashlib
import traceback
from collections.abc import Callable
from typing import Any

import gmpy2
import pytest
from cryptography.exceptions import (
    AlreadyFinalized,
    InvalidSignature,
    InvalidTag,
    UnsupportedAlgorithm,
)
from cryptography.hazmat.decrepit.ciphers.algorithms import ARC4, RC2, Camellia, TripleDES
from cryptography.hazmat.primitives import hashes as _hashes
from cryptography.hazmat.primitives.asymmetric import ec as _ec
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import rsa as _rsa
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed
from cryptography.hazmat.primitives.ciphers import Cipher as _Cipher
from cryptography.hazmat.primitives.ciphers import algorithms as _algorithms
from cryptography.hazmat.primitives.ciphers import modes as _modes

from cryptoffload import Provider, dh, ec, modes, rsa
from cryptoffload.aead import AESCCM, AESGCM
from cryptoffload.blocks import ffdh
from cryptoffload.blocks.curves import CURVES, Curve, is_on_curve
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.cmac import CMAC
from cryptoffload.core import ops, validate
from cryptoffload.core.ops import CipherOp, DhOp, EcdhOp, Op
from cryptoffload.gmac import GMAC
from cryptoffload.hashes import SHA256, Hash
from cryptoffload.hmac import HMAC


def _bytes(n: int, label: str) -> bytes:
    """``n`` distinctive, reproducible bytes (a key no message could spell by chance)."""
    return hashlib.shake_256(label.encode()).digest(n)


KEY = _bytes(16, "aes-128 key")
KEY32 = _bytes(32, "aes-256 key")
HMAC_KEY = _bytes(40, "hmac key")
IV = _bytes(16, "iv")
NONCE = _bytes(12, "gcm nonce")
CCM_NONCE = _bytes(13, "ccm nonce")
DATA = _bytes(37, "plaintext")
AAD = _bytes(11, "aad")

# Generated once; each test wraps them for its own provider.
RSA_KEY = _rsa.generate_private_key(65537, 2048)
RSA_N = RSA_KEY.public_key().public_numbers().n
RSA_K = 256
_rsa_numbers = RSA_KEY.private_numbers()
RSA_SECRETS = (_rsa_numbers.d, _rsa_numbers.p, _rsa_numbers.q)
EC_KEY = _ec.generate_private_key(_ec.SECP256R1())
EC_SECRETS = (EC_KEY.private_numbers().private_value,)
EC_P384 = _ec.generate_private_key(_ec.SECP384R1())
DH_KEY = dh.generate_private_key("ffdhe2048").to_cryptography()
DH_SECRETS = (DH_KEY.x,)
DH_3072 = dh.generate_private_key("ffdhe3072").to_cryptography()
FFDHE2048 = dh.group("ffdhe2048")

NOT_BYTES = {"str": "k" * 16, "int": 16, "list": list(range(16))}
each_not_bytes = pytest.mark.parametrize("bad", list(NOT_BYTES.values()), ids=list(NOT_BYTES))


class _UnofferedHash(_hashes.HashAlgorithm):
    """A hash algorithm of `cryptography`'s interface that no engine or OpenSSL has."""

    name = "unoffered-hash"
    digest_size = 32
    block_size = 64


#: As `cryptography`: a hash it does not have is UnsupportedAlgorithm, a class where an
#: instance belongs is TypeError.
UNKNOWN_HASHES = {
    "unoffered": (_UnofferedHash(), UnsupportedAlgorithm),
    "class-not-instance": (_hashes.SHA256, TypeError),
}
each_unknown_hash = pytest.mark.parametrize(
    ("algorithm", "error"), list(UNKNOWN_HASHES.values()), ids=list(UNKNOWN_HASHES)
)


# -- helpers ------------------------------------------------------------------------------------


def _spellings(secret: bytes | int) -> list[str]:
    """The ways ``secret`` could show up in text: hex, escaped bytes, raw bytes, decimal."""
    if isinstance(secret, int):
        return [str(secret), format(secret, "x"), format(secret, "X")]
    raw = bytes(secret)
    return [raw.hex(), raw.hex().upper(), repr(raw)[2:-1], raw.decode("latin-1")]


def assert_hidden(text: str, *secrets: bytes | int) -> None:
    """Fail (without printing the secret) when any spelling of a secret is in ``text``."""
    for secret in secrets:
        if isinstance(secret, int) and secret < 1 << 64:
            continue  # too small to tell a leak from a coincidence
        if not isinstance(secret, int) and len(secret) < 8:
            continue
        for spelling in _spellings(secret):
            if spelling in text:
                pytest.fail("key material appears in text shown to the user")


def _exception_text(exc: BaseException) -> str:
    """Everything a traceback would print, chained exceptions and args included."""
    return "".join(traceback.format_exception(exc)) + repr(exc.args)


def assert_engines_untouched(provider: Provider) -> None:
    """No engine other than software was offered an op: not in ``seen``, not in the counters."""
    snapshot = provider.counters.snapshot()
    for engine in provider.engines:
        if engine is provider.software:
            continue
        assert getattr(engine, "seen", []) == [], f"{engine.name} was given an invalid op"
        assert snapshot.get(engine.name, {}) == {}, f"{engine.name} counted an invalid op"


def expect(
    provider: Provider,
    exc_type: type[BaseException],
    call: Callable[[], Any],
    *secrets: bytes | int,
    match: str | None = None,
) -> BaseException:
    """``call`` raises ``exc_type`` (text matching ``match``), no engine saw it, no key shown."""
    with pytest.raises(exc_type, match=match) as info:
        call()
    assert_hidden(_exception_text(info.value), KEY, KEY32, HMAC_KEY, *secrets)
    assert_engines_untouched(provider)
    return info.value


def _flip(data: bytes, index: int) -> bytes:
    out = bytearray(data)
    out[index] ^= 0x01
    return bytes(out)


def _block_mode(name: str, iv: bytes = IV) -> Any:
    return {
        "ecb": lambda: modes.ECB(),
        "cbc": lambda: modes.CBC(iv),
        "ctr": lambda: modes.CTR(iv),
        "cfb": lambda: modes.CFB(iv),
        "ofb": lambda: modes.OFB(iv),
    }[name]()


# -- AES key sizes ------------------------------------------------------------------------------

BAD_KEY_SIZES = (0, 15, 20, 33)
BYTE_KEYED = {
    "AESGCM": lambda key, p: AESGCM(key, provider=p),
    "AESCCM": lambda key, p: AESCCM(key, provider=p),
    "GMAC": lambda key, p: GMAC(key, NONCE, provider=p),
}


@pytest.mark.parametrize("size", BAD_KEY_SIZES)
@pytest.mark.parametrize("make", list(BYTE_KEYED.values()), ids=list(BYTE_KEYED))
def test_wrong_aes_key_size_is_valueerror_naming_expected_and_received(provider, make, size):
    key = _bytes(size, "wrong-size key")
    exc = expect(provider, ValueError, lambda: make(key, provider), key)
    text = str(exc)
    for allowed in ("16", "24", "32"):
        assert allowed in text
    assert f"got {size}" in text


AES_KEYED = {
    "Cipher-CBC": lambda key, p: Cipher(algorithms.AES(key), modes.CBC(IV), provider=p),
    "Cipher-ECB": lambda key, p: Cipher(algorithms.AES(key), modes.ECB(), provider=p),
    "CMAC": lambda key, p: CMAC(algorithms.AES(key), provider=p),
}


@pytest.mark.parametrize("size", BAD_KEY_SIZES)
@pytest.mark.parametrize("make", list(AES_KEYED.values()), ids=list(AES_KEYED))
def test_wrong_aes_key_size_in_algorithms_aes_is_valueerror(provider, make, size):
    # algorithms.AES itself refuses these sizes (cryptography's message gives the size in bits).
    key = _bytes(size, "wrong-size key")
    exc = expect(provider, ValueError, lambda: make(key, provider), key)
    assert str(size * 8) in str(exc)


@pytest.mark.parametrize("make", list(AES_KEYED.values()), ids=list(AES_KEYED))
def test_xts_sized_aes_key_is_valueerror_naming_expected_and_received(provider, make):
    # 64 bytes passes algorithms.AES (it is an AES-256-XTS key); cryptoffload must refuse it.
    key = _bytes(64, "xts key")
    exc = expect(provider, ValueError, lambda: make(key, provider), key)
    assert "16, 24 or 32" in str(exc)
    assert "got 64" in str(exc)


# -- not bytes ----------------------------------------------------------------------------------


@each_not_bytes
@pytest.mark.parametrize(
    "make",
    [
        lambda bad, p: AESGCM(bad, provider=p),
        lambda bad, p: AESCCM(bad, provider=p),
        lambda bad, p: GMAC(bad, NONCE, provider=p),
        lambda bad, p: HMAC(bad, SHA256(), provider=p),
        lambda bad, p: Cipher(algorithms.AES(bad), modes.CBC(IV), provider=p),
        lambda bad, p: CMAC(algorithms.AES(bad), provider=p),
    ],
    ids=["AESGCM", "AESCCM", "GMAC", "HMAC", "Cipher", "CMAC"],
)
def test_key_that_is_not_bytes_is_typeerror(provider, make, bad):
    expect(provider, TypeError, lambda: make(bad, provider))


AEAD_CALLS = {
    "gcm-encrypt-nonce": lambda p, bad: AESGCM(KEY, provider=p).encrypt(bad, DATA, AAD),
    "gcm-encrypt-data": lambda p, bad: AESGCM(KEY, provider=p).encrypt(NONCE, bad, AAD),
    "gcm-encrypt-aad": lambda p, bad: AESGCM(KEY, provider=p).encrypt(NONCE, DATA, bad),
    "gcm-decrypt-nonce": lambda p, bad: AESGCM(KEY, provider=p).decrypt(bad, DATA, AAD),
    "gcm-decrypt-data": lambda p, bad: AESGCM(KEY, provider=p).decrypt(NONCE, bad, AAD),
    "gcm-decrypt-aad": lambda p, bad: AESGCM(KEY, provider=p).decrypt(NONCE, DATA, bad),
    "gcm12-encrypt-nonce": lambda p, bad: AESGCM(KEY, 12, provider=p).encrypt(bad, DATA, None),
    "gcm12-decrypt-aad": lambda p, bad: AESGCM(KEY, 12, provider=p).decrypt(NONCE, DATA, bad),
    "ccm-encrypt-nonce": lambda p, bad: AESCCM(KEY, provider=p).encrypt(bad, DATA, AAD),
    "ccm-encrypt-data": lambda p, bad: AESCCM(KEY, provider=p).encrypt(CCM_NONCE, bad, AAD),
    "ccm-encrypt-aad": lambda p, bad: AESCCM(KEY, provider=p).encrypt(CCM_NONCE, DATA, bad),
    "ccm-decrypt-nonce": lambda p, bad: AESCCM(KEY, provider=p).decrypt(bad, DATA, AAD),
    "ccm-decrypt-data": lambda p, bad: AESCCM(KEY, provider=p).decrypt(CCM_NONCE, bad, AAD),
    "ccm-decrypt-aad": lambda p, bad: AESCCM(KEY, provider=p).decrypt(CCM_NONCE, DATA, bad),
}


@each_not_bytes
@pytest.mark.parametrize("call", list(AEAD_CALLS.values()), ids=list(AEAD_CALLS))
def test_aead_nonce_data_or_aad_that_is_not_bytes_is_typeerror(provider, call, bad):
    expect(provider, TypeError, lambda: call(provider, bad))


def _feed(ctx: Any, bad: Any) -> None:
    ctx.update(bad)


STREAM_CALLS = {
    "hash-update": lambda p, bad: _feed(Hash(SHA256(), provider=p), bad),
    "hmac-update": lambda p, bad: _feed(HMAC(HMAC_KEY, SHA256(), provider=p), bad),
    "hmac-verify": lambda p, bad: HMAC(HMAC_KEY, SHA256(), provider=p).verify(bad),
    "cmac-update": lambda p, bad: _feed(CMAC(algorithms.AES(KEY), provider=p), bad),
    "cmac-verify": lambda p, bad: CMAC(algorithms.AES(KEY), provider=p).verify(bad),
    "gmac-nonce": lambda p, bad: GMAC(KEY, bad, provider=p),
    "gmac-update": lambda p, bad: _feed(GMAC(KEY, NONCE, provider=p), bad),
    "gmac-verify": lambda p, bad: GMAC(KEY, NONCE, provider=p).verify(bad),
    "cipher-cbc-iv": lambda p, bad: Cipher(algorithms.AES(KEY), modes.CBC(bad), provider=p),
    "cipher-ctr-nonce": lambda p, bad: Cipher(algorithms.AES(KEY), modes.CTR(bad), provider=p),
    "cipher-gcm-nonce": lambda p, bad: Cipher(algorithms.AES(KEY), modes.GCM(bad), provider=p),
}
for _mode_name in ("ecb", "cbc", "ctr", "cfb", "ofb"):
    STREAM_CALLS[f"cipher-{_mode_name}-encrypt-data"] = lambda p, bad, m=_mode_name: _feed(
        Cipher(algorithms.AES(KEY), _block_mode(m), provider=p).encryptor(), bad
    )
    STREAM_CALLS[f"cipher-{_mode_name}-decrypt-data"] = lambda p, bad, m=_mode_name: _feed(
        Cipher(algorithms.AES(KEY), _block_mode(m), provider=p).decryptor(), bad
    )


@each_not_bytes
@pytest.mark.parametrize("call", list(STREAM_CALLS.values()), ids=list(STREAM_CALLS))
def test_stream_data_nonce_or_tag_that_is_not_bytes_is_typeerror(provider, call, bad):
    expect(provider, TypeError, lambda: call(provider, bad))


# -- ECB/CBC alignment, IV sizes ----------------------------------------------------------------

CHUNKINGS = {"5": (5,), "20": (20,), "16+5": (16, 5), "7+7+7": (7, 7, 7), "33": (33,)}


@pytest.mark.parametrize("encrypt", [True, False], ids=["encrypt", "decrypt"])
@pytest.mark.parametrize("chunks", list(CHUNKINGS.values()), ids=list(CHUNKINGS))
@pytest.mark.parametrize("mode_name", ["ecb", "cbc"])
def test_ecb_cbc_partial_block_fails_at_finalize_and_releases_only_whole_blocks(
    provider, mode_name, chunks, encrypt
):
    data = _bytes(sum(chunks), "unaligned data")
    whole = len(data) // 16 * 16
    reference = _Cipher(_algorithms.AES(KEY), _block_mode(mode_name))
    ref_ctx = reference.encryptor() if encrypt else reference.decryptor()
    expected = ref_ctx.update(data[:whole]) + ref_ctx.finalize()

    cipher = Cipher(algorithms.AES(KEY), _block_mode(mode_name), provider=provider)
    ctx = cipher.encryptor() if encrypt else cipher.decryptor()
    released = b""
    pos = 0
    for n in chunks:
        released += ctx.update(data[pos : pos + n])
        pos += n
    assert released == expected  # whole blocks only, and correct
    with pytest.raises(ValueError, match="multiple of") as info:
        ctx.finalize()
    assert_hidden(_exception_text(info.value), KEY)
    for engine in provider.engines[:-1]:
        assert all(len(op.data) % 16 == 0 for op in getattr(engine, "seen", ()))
        for cell in provider.counters.snapshot().get(engine.name, {}).values():
            assert cell["bytes"] % 16 == 0


@pytest.mark.parametrize("iv_size", [0, 8, 15, 17, 32])
@pytest.mark.parametrize("mode_name", ["cbc", "ctr", "cfb", "ofb"])
def test_wrong_iv_size_is_valueerror_naming_16_and_the_size(provider, mode_name, iv_size):
    iv = _bytes(iv_size, "wrong iv")
    exc = expect(
        provider,
        ValueError,
        lambda: Cipher(algorithms.AES(KEY), _block_mode(mode_name, iv), provider=provider),
    )
    assert "16 bytes" in str(exc)
    assert f"got {iv_size}" in str(exc)


# -- GCM and CCM parameters ---------------------------------------------------------------------


@pytest.mark.parametrize("nonce_size", [0, 7, 129])
@pytest.mark.parametrize(
    "call",
    [
        lambda p, n: AESGCM(KEY, provider=p).encrypt(n, DATA, AAD),
        lambda p, n: AESGCM(KEY, provider=p).decrypt(n, DATA, AAD),
        lambda p, n: AESGCM(KEY, 12, provider=p).encrypt(n, DATA, AAD),
        lambda p, n: AESGCM(KEY, 12, provider=p).decrypt(n, DATA, AAD),
        lambda p, n: GMAC(KEY, n, provider=p),
    ],
    ids=["encrypt", "decrypt", "tag12-encrypt", "tag12-decrypt", "GMAC"],
)
def test_gcm_nonce_length_out_of_range_is_valueerror(provider, call, nonce_size):
    nonce = _bytes(nonce_size, "nonce")
    exc = expect(provider, ValueError, lambda: call(provider, nonce))
    assert "8 to 128 bytes" in str(exc)
    assert f"got {nonce_size}" in str(exc)


@pytest.mark.parametrize("nonce_size", [0, 7, 129])
def test_cipher_gcm_nonce_length_out_of_range_is_valueerror(provider, nonce_size):
    nonce = _bytes(nonce_size, "nonce")
    expect(
        provider,
        ValueError,
        lambda: Cipher(algorithms.AES(KEY), modes.GCM(nonce), provider=provider),
    )


BAD_GCM_TAGS = (0, 3, 5, 9, 11, 17)


@pytest.mark.parametrize("tag_length", BAD_GCM_TAGS)
@pytest.mark.parametrize(
    "make",
    [
        lambda p, t: AESGCM(KEY, tag_length=t, provider=p),
        lambda p, t: GMAC(KEY, NONCE, tag_length=t, provider=p),
    ],
    ids=["AESGCM", "GMAC"],
)
def test_gcm_tag_length_not_allowed_is_valueerror(provider, make, tag_length):
    exc = expect(provider, ValueError, lambda: make(provider, tag_length))
    assert "4, 8 or 12 to 16" in str(exc)
    assert f"got {tag_length}" in str(exc)


@pytest.mark.parametrize("tag_length", BAD_GCM_TAGS)
def test_cipher_gcm_decrypt_tag_length_not_allowed_is_valueerror(provider, tag_length):
    tag = _bytes(tag_length, "tag")

    def with_tag_in_mode() -> None:
        mode = modes.GCM(NONCE, tag, min_tag_length=4)
        Cipher(algorithms.AES(KEY), mode, provider=provider).decryptor()

    expect(provider, ValueError, with_tag_in_mode)
    ctx = Cipher(algorithms.AES(KEY), modes.GCM(NONCE), provider=provider).decryptor()
    ctx.update(DATA)
    expect(provider, ValueError, lambda: ctx.finalize_with_tag(tag))


@pytest.mark.parametrize("nonce_size", [0, 6, 14])
@pytest.mark.parametrize("kind", ["encrypt", "decrypt"])
def test_ccm_nonce_length_out_of_range_is_valueerror(provider, kind, nonce_size):
    nonce = _bytes(nonce_size, "ccm nonce")
    aead = AESCCM(KEY, provider=provider)
    exc = expect(provider, ValueError, lambda: getattr(aead, kind)(nonce, DATA + b"t" * 16, AAD))
    assert "7 to 13 bytes" in str(exc)
    assert f"got {nonce_size}" in str(exc)


@pytest.mark.parametrize("tag_length", [0, 2, 3, 5, 7, 9, 11, 13, 15, 17, 18])
def test_ccm_odd_or_out_of_range_tag_length_is_valueerror(provider, tag_length):
    exc = expect(
        provider, ValueError, lambda: AESCCM(KEY, tag_length=tag_length, provider=provider)
    )
    assert f"got {tag_length}" in str(exc)


def test_ccm_data_too_long_for_the_nonce_is_valueerror(provider):
    # A 13-byte nonce leaves 2 bytes to count the length: at most 65535 bytes.
    aead = AESCCM(KEY, provider=provider)
    expect(provider, ValueError, lambda: aead.encrypt(CCM_NONCE, bytes(1 << 16), None))


# -- altered AEAD ciphertexts -------------------------------------------------------------------

AEADS = {
    "gcm-16": (lambda p: AESGCM(KEY, provider=p), NONCE, 16),
    "gcm-12": (lambda p: AESGCM(KEY, 12, provider=p), NONCE, 12),
    "gcm-4": (lambda p: AESGCM(KEY, 4, provider=p), NONCE, 4),
    "ccm-16": (lambda p: AESCCM(KEY, provider=p), CCM_NONCE, 16),
    "ccm-8": (lambda p: AESCCM(KEY, 8, provider=p), CCM_NONCE, 8),
    "ccm-4": (lambda p: AESCCM(KEY, 4, provider=p), CCM_NONCE, 4),
}

# Each takes (nonce, sealed, aad, tag_length) and returns the altered (nonce, sealed, aad).
TAMPERS: dict[str, Callable[[bytes, bytes, bytes, int], tuple[bytes, bytes, bytes | None]]] = {
    "flip-ct-first-bit": lambda n, s, a, t: (n, _flip(s, 0), a),
    "flip-ct-last-byte": lambda n, s, a, t: (n, _flip(s, len(s) - t - 1), a),
    "flip-tag-first-byte": lambda n, s, a, t: (n, _flip(s, len(s) - t), a),
    "flip-tag-last-byte": lambda n, s, a, t: (n, _flip(s, len(s) - 1), a),
    "flip-aad": lambda n, s, a, t: (n, s, _flip(a, 0)),
    "drop-aad": lambda n, s, a, t: (n, s, None),
    "extend-aad": lambda n, s, a, t: (n, s, a + b"\x00"),
    "flip-nonce": lambda n, s, a, t: (_flip(n, 0), s, a),
    "drop-last-byte": lambda n, s, a, t: (n, s[:-1], a),
    "drop-first-byte": lambda n, s, a, t: (n, s[1:], a),
    "append-byte": lambda n, s, a, t: (n, s + b"\x00", a),
    "tag-only": lambda n, s, a, t: (n, s[-t:], a),
    "shorter-than-tag": lambda n, s, a, t: (n, s[: t - 1], a),
    "empty": lambda n, s, a, t: (n, b"", a),
}


@pytest.mark.parametrize("tamper", list(TAMPERS.values()), ids=list(TAMPERS))
@pytest.mark.parametrize("aead", list(AEADS.values()), ids=list(AEADS))
def test_altered_aead_ciphertext_raises_invalidtag_and_returns_nothing(provider, aead, tamper):
    make, nonce, tag_length = aead
    sealed = make(provider).encrypt(nonce, DATA, AAD)
    assert len(sealed) == len(DATA) + tag_length
    assert make(provider).decrypt(nonce, sealed, AAD) == DATA
    bad_nonce, bad_sealed, bad_aad = tamper(nonce, sealed, AAD, tag_length)
    result = []
    with pytest.raises(InvalidTag) as info:
        result.append(make(provider).decrypt(bad_nonce, bad_sealed, bad_aad))
    assert result == []
    text = _exception_text(info.value)
    assert_hidden(text, KEY, DATA)


@pytest.mark.parametrize("aead", list(AEADS.values()), ids=list(AEADS))
def test_aead_data_shorter_than_tag_never_reaches_an_engine(provider, aead):
    make, nonce, tag_length = aead
    expect(provider, InvalidTag, lambda: make(provider).decrypt(nonce, bytes(tag_length - 1), AAD))


# -- MAC verification ---------------------------------------------------------------------------


def _reference_gmac(tag_length: int) -> bytes:
    ctx = _Cipher(_algorithms.AES(KEY), _modes.GCM(NONCE)).encryptor()
    ctx.authenticate_additional_data(DATA)
    ctx.finalize()
    return ctx.tag[:tag_length]


def _reference_cmac_and_hmac() -> tuple[bytes, bytes]:
    from cryptography.hazmat.primitives import cmac, hmac

    ctx = cmac.CMAC(_algorithms.AES(KEY))
    ctx.update(DATA)
    mac = hmac.HMAC(HMAC_KEY, _hashes.SHA256())
    mac.update(DATA)
    return ctx.finalize(), mac.finalize()


_CMAC_TAG, _HMAC_TAG = _reference_cmac_and_hmac()
MACS = {
    "hmac-sha256": (lambda p: HMAC(HMAC_KEY, SHA256(), provider=p), _HMAC_TAG),
    "cmac-aes-128": (lambda p: CMAC(algorithms.AES(KEY), provider=p), _CMAC_TAG),
    "gmac-16": (lambda p: GMAC(KEY, NONCE, provider=p), _reference_gmac(16)),
    "gmac-12": (lambda p: GMAC(KEY, NONCE, 12, provider=p), _reference_gmac(12)),
    "gmac-4": (lambda p: GMAC(KEY, NONCE, 4, provider=p), _reference_gmac(4)),
}
BAD_TAGS: dict[str, Callable[[bytes], bytes]] = {
    "flip-first-byte": lambda t: _flip(t, 0),
    "flip-last-byte": lambda t: _flip(t, len(t) - 1),
    "truncated": lambda t: t[:-1],
    "first-half": lambda t: t[: len(t) // 2],
    "empty": lambda t: b"",
    "extended": lambda t: t + b"\x00",
    "zeros": lambda t: bytes(len(t)),
}


@pytest.mark.parametrize("mac", list(MACS.values()), ids=list(MACS))
def test_mac_verify_accepts_the_right_tag(provider, mac):
    make, tag = mac
    ctx = make(provider)
    ctx.update(DATA)
    ctx.verify(tag)


@pytest.mark.parametrize("bad", list(BAD_TAGS.values()), ids=list(BAD_TAGS))
@pytest.mark.parametrize("mac", list(MACS.values()), ids=list(MACS))
def test_mac_verify_with_wrong_or_truncated_tag_raises_invalidsignature(provider, mac, bad):
    make, tag = mac
    ctx = make(provider)
    ctx.update(DATA)
    with pytest.raises(InvalidSignature) as info:
        ctx.verify(bad(tag))
    assert_hidden(_exception_text(info.value), KEY, HMAC_KEY, tag)


# -- finalize twice -----------------------------------------------------------------------------

CONTEXTS: dict[str, Callable[[Provider], Any]] = {
    "hash": lambda p: Hash(SHA256(), provider=p),
    "hmac": lambda p: HMAC(HMAC_KEY, SHA256(), provider=p),
    "cmac": lambda p: CMAC(algorithms.AES(KEY), provider=p),
    "gmac": lambda p: GMAC(KEY, NONCE, provider=p),
    "gcm-encryptor": lambda p: Cipher(
        algorithms.AES(KEY), modes.GCM(NONCE), provider=p
    ).encryptor(),
}
for _mode_name in ("ecb", "cbc", "ctr", "cfb", "ofb"):
    CONTEXTS[f"{_mode_name}-encryptor"] = lambda p, m=_mode_name: Cipher(
        algorithms.AES(KEY), _block_mode(m), provider=p
    ).encryptor()
    CONTEXTS[f"{_mode_name}-decryptor"] = lambda p, m=_mode_name: Cipher(
        algorithms.AES(KEY), _block_mode(m), provider=p
    ).decryptor()


@pytest.mark.parametrize("make", list(CONTEXTS.values()), ids=list(CONTEXTS))
def test_finalize_twice_and_update_after_finalize_raise_alreadyfinalized(provider, make):
    ctx = make(provider)
    ctx.update(bytes(32))
    ctx.finalize()
    with pytest.raises(AlreadyFinalized):
        ctx.finalize()
    with pytest.raises(AlreadyFinalized):
        ctx.update(bytes(16))


@pytest.mark.parametrize("name", ["hash", "hmac", "cmac"])
def test_copy_after_finalize_raises_alreadyfinalized(provider, name):
    ctx = CONTEXTS[name](provider)
    ctx.update(DATA)
    ctx.finalize()
    with pytest.raises(AlreadyFinalized):
        ctx.copy()


@pytest.mark.parametrize("mac", list(MACS.values()), ids=list(MACS))
def test_mac_verify_after_finalize_and_finalize_after_verify_raise_alreadyfinalized(provider, mac):
    make, tag = mac
    ctx = make(provider)
    ctx.update(DATA)
    ctx.finalize()
    with pytest.raises(AlreadyFinalized):
        ctx.verify(tag)
    ctx = make(provider)
    ctx.update(DATA)
    ctx.verify(tag)
    with pytest.raises(AlreadyFinalized):
        ctx.finalize()


# -- unsupported algorithms and modes -----------------------------------------------------------

UNSUPPORTED = {
    # OpenSSL has no CTR for Camellia, ECB for RC2, nor a mode for a stream cipher.
    "camellia-ctr": lambda p: Cipher(Camellia(KEY), modes.CTR(IV), provider=p),
    "rc2-ecb": lambda p: Cipher(RC2(KEY), modes.ECB(), provider=p),
    "arc4-ecb": lambda p: Cipher(ARC4(KEY), modes.ECB(), provider=p),
    "3des-ctr": lambda p: Cipher(TripleDES(KEY32[:24]), _modes.CTR(IV[:8]), provider=p),
    "aes-no-mode": lambda p: Cipher(algorithms.AES(KEY), None, provider=p),
}


@pytest.mark.parametrize("make", list(UNSUPPORTED.values()), ids=list(UNSUPPORTED))
def test_unsupported_cipher_or_mode_raises_unsupportedalgorithm_when_used(provider, make):
    # As `cryptography`: the Cipher is made, a context is refused.
    cipher = make(provider)
    expect(provider, UnsupportedAlgorithm, cipher.encryptor)
    expect(provider, UnsupportedAlgorithm, cipher.decryptor)


# -- RSA ----------------------------------------------------------------------------------------

RAW_OUT_OF_RANGE = {
    "0": 0,
    "n": RSA_N,
    "n+1": RSA_N + 1,
    "2n": 2 * RSA_N,
    "-1": -1,
    "-n": -RSA_N,
}
RAW_NOT_INT = {"str": "5", "float": 5.0, "bytes": b"\x05", "bool": True, "None": None}


def _rsa_raw(provider: Provider, side: str) -> Callable[[Any], int]:
    key = rsa.RSAPrivateKey(RSA_KEY, provider=provider)
    return key.raw_private if side == "private" else key.public_key().raw_public


@pytest.mark.parametrize("side", ["private", "public"])
@pytest.mark.parametrize("value", list(RAW_OUT_OF_RANGE.values()), ids=list(RAW_OUT_OF_RANGE))
def test_rsa_raw_input_out_of_range_is_valueerror(provider, side, value):
    raw = _rsa_raw(provider, side)
    expect(provider, ValueError, lambda: raw(value), *RSA_SECRETS, match="0 < m < n")


@pytest.mark.parametrize("side", ["private", "public"])
@pytest.mark.parametrize("value", list(RAW_NOT_INT.values()), ids=list(RAW_NOT_INT))
def test_rsa_raw_input_not_an_int_is_typeerror(provider, side, value):
    raw = _rsa_raw(provider, side)
    expect(provider, TypeError, lambda: raw(value), *RSA_SECRETS)


RSA_PADDINGS = {
    "pkcs1v15": padding.PKCS1v15(),
    "pss": padding.PSS(padding.MGF1(_hashes.SHA256()), padding.PSS.DIGEST_LENGTH),
}
BAD_SIGNATURES: dict[str, Callable[[bytes], bytes]] = {
    "equal-to-n": lambda s: RSA_N.to_bytes(RSA_K, "big"),
    "n-plus-1": lambda s: (RSA_N + 1).to_bytes(RSA_K, "big"),
    "all-ff": lambda s: b"\xff" * RSA_K,
    "one-byte-short": lambda s: s[1:],
    "one-byte-long-leading-zero": lambda s: b"\x00" + s,
    "one-byte-long-trailing-zero": lambda s: s + b"\x00",
    "empty": lambda s: b"",
    "zero": lambda s: bytes(RSA_K),
}


@pytest.mark.parametrize("bad", list(BAD_SIGNATURES.values()), ids=list(BAD_SIGNATURES))
@pytest.mark.parametrize("pad", list(RSA_PADDINGS.values()), ids=list(RSA_PADDINGS))
def test_rsa_verify_signature_not_below_n_or_wrong_length_is_invalidsignature(provider, pad, bad):
    key = rsa.RSAPrivateKey(RSA_KEY, provider=provider)
    signature = key.sign(DATA, pad, _hashes.SHA256())
    public = key.public_key()
    public.verify(signature, DATA, pad, _hashes.SHA256())
    with pytest.raises(InvalidSignature) as info:
        public.verify(bad(signature), DATA, pad, _hashes.SHA256())
    assert_hidden(_exception_text(info.value), *RSA_SECRETS)


# -- EC peer keys -------------------------------------------------------------------------------


def _sqrt_mod(curve: Curve, value: int) -> int | None:
    """A square root mod p (p = 3 mod 4), or None when ``value`` is not a square."""
    root = pow(value, (curve.p + 1) // 4, curve.p)
    return root if root * root % curve.p == value % curve.p else None


def _point_on_other_curve(curve: Curve) -> tuple[int, int]:
    """A point of y^2 = x^3 + ax + (b + 1): the classic invalid-curve attack input."""
    assert curve.p % 4 == 3
    for x in range(1, 1000):
        y = _sqrt_mod(curve, (x**3 + curve.a * x + curve.b + 1) % curve.p)
        if y is not None and not is_on_curve(curve, x, y):
            return x, y
    raise AssertionError("no point found")


def _bad_points(curve: Curve) -> dict[str, tuple[int, int]]:
    gx, gy = curve.generator
    return {
        "y-plus-1": (gx, (gy + 1) % curve.p),
        "x-plus-p": (gx + curve.p, gy),
        "y-plus-p": (gx, gy + curve.p),
        "x-equals-p": (curve.p, gy),
        "negative-x": (gx - curve.p, gy),
        "origin": (0, 0),
        "other-curve-b": _point_on_other_curve(curve),
    }


EC_CURVES = ["p256", "p384", "secp256k1", "brainpoolp256r1"]
BAD_POINT_NAMES = list(_bad_points(CURVES["p256"]))


@pytest.mark.parametrize("case", BAD_POINT_NAMES)
@pytest.mark.parametrize("curve_name", EC_CURVES)
def test_validate_ec_public_point_rejects_points_off_curve_or_out_of_range(curve_name, case):
    curve = CURVES[curve_name]
    validate.ec_public_point(curve, *curve.generator)  # the check itself passes a good point
    x, y = _bad_points(curve)[case]
    with pytest.raises(ValueError):
        validate.ec_public_point(curve, x, y)


class _UncheckedPeer:
    """Stands in for a public key OpenSSL would refuse to build: only what validation reads."""

    def __init__(self, curve: _ec.EllipticCurve, x: int, y: int) -> None:
        self.curve = curve
        self._numbers = _ec.EllipticCurvePublicNumbers(x, y, curve)

    def public_numbers(self) -> _ec.EllipticCurvePublicNumbers:
        return self._numbers


def _ecdh_op(peer: Any) -> Op:
    return EcdhOp("ecdh-p256", "exchange", EC_KEY, peer)


@pytest.mark.parametrize("case", BAD_POINT_NAMES)
def test_ecdh_op_with_invalid_peer_point_is_valueerror_before_any_engine(provider, case):
    x, y = _bad_points(CURVES["p256"])[case]
    op = _ecdh_op(_UncheckedPeer(_ec.SECP256R1(), x, y))
    expect(provider, ValueError, lambda: provider.run(op), *EC_SECRETS)


def test_ecdh_op_with_peer_on_another_curve_is_valueerror_before_any_engine(provider):
    op = _ecdh_op(EC_P384.public_key())
    expect(provider, ValueError, lambda: provider.run(op), *EC_SECRETS)


@pytest.mark.parametrize("wrap", [True, False], ids=["cryptoffload-key", "key-record"])
def test_ecdh_exchange_with_peer_on_another_curve_is_valueerror(provider, wrap):
    key = ec.EllipticCurvePrivateKey(EC_KEY, provider=provider)
    peer = EC_P384.public_key()
    if wrap:
        peer = ec.EllipticCurvePublicKey(peer)
    expect(provider, ValueError, lambda: key.exchange(ec.ECDH(), peer), *EC_SECRETS)


@pytest.mark.parametrize("case", ["y-plus-1", "other-curve-b", "x-equals-p"])
def test_ecdh_exchange_with_encoded_point_off_curve_is_valueerror(provider, case):
    curve = CURVES["p256"]
    x, y = _bad_points(curve)[case]
    encoded = b"\x04" + x.to_bytes(32, "big") + y.to_bytes(32, "big")
    key = ec.EllipticCurvePrivateKey(EC_KEY, provider=provider)

    def exchange() -> None:
        peer = ec.EllipticCurvePublicKey.from_encoded_point(_ec.SECP256R1(), encoded)
        key.exchange(ec.ECDH(), peer)

    expect(provider, ValueError, exchange, *EC_SECRETS)


# -- DH peer values -----------------------------------------------------------------------------


def _non_residues(p: int, candidates: range) -> int:
    return next(y for y in candidates if gmpy2.legendre(y, p) == -1)


DH_BAD_Y = {
    "0": 0,
    "1": 1,
    "p-1": FFDHE2048.p - 1,
    "p": FFDHE2048.p,
    "p+1": FFDHE2048.p + 1,
    # In a safe-prime group the order-q subgroup is the quadratic residues.
    "small-outside-subgroup": _non_residues(FFDHE2048.p, range(3, 1000)),
    "large-outside-subgroup": _non_residues(FFDHE2048.p, range(FFDHE2048.p - 2, 2, -1)),
}


def _dh_peer_y(y: int) -> Any:
    return ffdh.PublicKey(DH_KEY.params, y)


@pytest.mark.parametrize("y", list(DH_BAD_Y.values()), ids=list(DH_BAD_Y))
def test_dh_exchange_with_bad_peer_value_is_valueerror(provider, y):
    key = dh.DHPrivateKey(DH_KEY, provider=provider)
    expect(
        provider,
        ValueError,
        lambda: key.exchange(dh.DHPublicKey.from_public_value("ffdhe2048", y)),
        *DH_SECRETS,
    )
    op = DhOp("ffdhe2048", "exchange", DH_KEY, _dh_peer_y(y))
    expect(provider, ValueError, lambda: provider.run(op), *DH_SECRETS)


@pytest.mark.parametrize("wrap", [True, False], ids=["cryptoffload-key", "key-record"])
def test_dh_exchange_with_peer_from_another_group_is_valueerror(provider, wrap):
    key = dh.DHPrivateKey(DH_KEY, provider=provider)
    peer = DH_3072.public()
    if wrap:
        peer = dh.DHPublicKey(peer)
    expect(provider, ValueError, lambda: key.exchange(peer), *DH_SECRETS)


def test_dh_op_with_peer_from_another_group_is_valueerror_before_any_engine(provider):
    op = DhOp("ffdhe2048", "exchange", DH_KEY, DH_3072.public())
    expect(provider, ValueError, lambda: provider.run(op), *DH_SECRETS)


# -- unknown hashes -----------------------------------------------------------------------------


def _rsa_private(p: Provider) -> rsa.RSAPrivateKey:
    return rsa.RSAPrivateKey(RSA_KEY, provider=p)


def _ec_private(p: Provider) -> ec.EllipticCurvePrivateKey:
    return ec.EllipticCurvePrivateKey(EC_KEY, provider=p)


def _oaep(h: Any) -> padding.OAEP:
    return padding.OAEP(padding.MGF1(h), h, None)


def _oaep_mgf(h: Any) -> padding.OAEP:
    return padding.OAEP(padding.MGF1(h), _hashes.SHA256(), None)


HASH_USES: dict[str, Callable[[Provider, Any], Any]] = {
    "Hash": lambda p, h: Hash(h, provider=p),
    "HMAC": lambda p, h: HMAC(HMAC_KEY, h, provider=p),
    "rsa-sign-pkcs1v15": lambda p, h: _rsa_private(p).sign(DATA, padding.PKCS1v15(), h),
    "rsa-sign-pss": lambda p, h: _rsa_private(p).sign(
        DATA, padding.PSS(padding.MGF1(_hashes.SHA256()), 20), h
    ),
    "rsa-sign-prehashed": lambda p, h: _rsa_private(p).sign(
        bytes(h.digest_size), padding.PKCS1v15(), Prehashed(h)
    ),
    "rsa-verify-pkcs1v15": lambda p, h: (
        _rsa_private(p).public_key().verify(bytes(RSA_K), DATA, padding.PKCS1v15(), h)
    ),
    "rsa-encrypt-oaep": lambda p, h: _rsa_private(p).public_key().encrypt(DATA, _oaep(h)),
    "rsa-encrypt-oaep-mgf1": lambda p, h: _rsa_private(p).public_key().encrypt(DATA, _oaep_mgf(h)),
    "rsa-decrypt-oaep": lambda p, h: _rsa_private(p).decrypt(bytes(RSA_K), _oaep(h)),
    "ecdsa-sign": lambda p, h: _ec_private(p).sign(DATA, ec.ECDSA(h)),
    "ecdsa-sign-prehashed": lambda p, h: _ec_private(p).sign(
        bytes(h.digest_size), ec.ECDSA(Prehashed(h))
    ),
    "ecdsa-verify": lambda p, h: _ec_private(p).public_key().verify(bytes(8), DATA, ec.ECDSA(h)),
}


@each_unknown_hash
@pytest.mark.parametrize("use", list(HASH_USES.values()), ids=list(HASH_USES))
def test_unknown_hash_is_unsupported_and_a_hash_class_is_typeerror(provider, use, algorithm, error):
    expect(provider, error, lambda: use(provider, algorithm), *RSA_SECRETS, *EC_SECRETS)


# -- ops that reach Provider.run directly -------------------------------------------------------

INVALID_OPS: dict[str, tuple[type[Exception], Op]] = {
    "cipher-misaligned": (
        ValueError,
        ops.make("cipher", "aes-128-cbc", "encrypt", key=KEY, iv=IV, data=bytes(17)),
    ),
    "cipher-short-iv": (
        ValueError,
        ops.make("cipher", "aes-128-ctr", "encrypt", key=KEY, iv=IV[:8], data=bytes(16)),
    ),
    "cipher-key-15": (
        ValueError,
        ops.make("cipher", "aes-128-ecb", "encrypt", key=KEY[:15], data=bytes(16)),
    ),
    "cipher-data-str": (
        TypeError,
        ops.make("cipher", "aes-128-ecb", "encrypt", key=KEY, data="x" * 16),
    ),
    "gcm-nonce-empty": (
        ValueError,
        ops.make("aead", "aes-128-gcm", "encrypt", key=KEY, iv=b"", data=DATA, tag_length=16),
    ),
    "gcm-tag-length-5": (
        ValueError,
        ops.make("aead", "aes-128-gcm", "encrypt", key=KEY, iv=NONCE, data=DATA, tag_length=5),
    ),
    "gcm-decrypt-tag-3": (
        ValueError,
        ops.make(
            "aead", "aes-128-gcm", "decrypt", key=KEY, iv=NONCE, data=DATA + b"abc", tag_length=3
        ),
    ),
    "ccm-nonce-6": (
        ValueError,
        ops.make("aead", "aes-128-ccm", "encrypt", key=KEY, iv=bytes(6), data=DATA, tag_length=16),
    ),
    "ccm-aad-int": (
        TypeError,
        ops.make(
            "aead", "aes-128-ccm", "encrypt", key=KEY, iv=CCM_NONCE, data=DATA, aad=5, tag_length=16
        ),
    ),
    "gmac-tag-length-3": (
        ValueError,
        ops.make("mac", "gmac-aes-128", "mac", key=KEY, iv=NONCE, data=DATA, tag_length=3),
    ),
    "hmac-key-str": (TypeError, ops.make("mac", "hmac-sha256", "mac", key="key", data=DATA)),
    "cmac-key-20": (ValueError, ops.make("mac", "cmac-aes-128", "mac", key=bytes(20), data=DATA)),
    "hash-data-list": (TypeError, ops.make("hash", "sha256", "digest", data=[1, 2])),
    "rsa-raw-zero": (ValueError, ops.make("rsa", "rsa-2048-private", "raw", key=RSA_KEY, value=0)),
    "rsa-raw-str": (TypeError, ops.make("rsa", "rsa-2048-private", "raw", key=RSA_KEY, value="1")),
    "rng-negative": (ValueError, ops.make("rng", "drbg", "seed", length=-1)),
    "unknown-kind": (ValueError, CipherOp("aes-128-ecb", "transmogrify", KEY, None, bytes(16))),
    "unknown-family": (
        ValueError,
        type("QuantumOp", (CipherOp,), {"family": "quantum"})(
            "aes-128-ecb", "encrypt", KEY, None, bytes(16)
        ),
    ),
}


@pytest.mark.parametrize("case", list(INVALID_OPS.values()), ids=list(INVALID_OPS))
def test_invalid_op_given_to_provider_run_is_refused_before_any_engine(provider, case):
    exc_type, op = case
    expect(provider, exc_type, lambda: provider.run(op), *RSA_SECRETS)


# -- reprs hide keys ----------------------------------------------------------------------------

REPRS: dict[str, tuple[Callable[[Provider], Any], tuple[bytes | int, ...]]] = {
    "AESGCM": (lambda p: AESGCM(KEY, provider=p), (KEY,)),
    "AESGCM-256": (lambda p: AESGCM(KEY32, 12, provider=p), (KEY32,)),
    "AESCCM": (lambda p: AESCCM(KEY, 8, provider=p), (KEY,)),
    "HMAC": (lambda p: HMAC(HMAC_KEY, SHA256(), provider=p), (HMAC_KEY,)),
    "CMAC": (lambda p: CMAC(algorithms.AES(KEY), provider=p), (KEY,)),
    "GMAC": (lambda p: GMAC(KEY, NONCE, provider=p), (KEY,)),
    "Op-cipher": (
        lambda p: ops.make("cipher", "aes-128-cbc", "encrypt", key=KEY, iv=IV, data=DATA),
        (KEY,),
    ),
    "Op-mac": (
        lambda p: ops.make("mac", "hmac-sha256", "mac", key=HMAC_KEY, data=DATA),
        (HMAC_KEY,),
    ),
    "Op-rsa": (
        lambda p: ops.make("rsa", "rsa-2048-private", "raw", key=RSA_KEY, value=5),
        RSA_SECRETS,
    ),
    "RSAPrivateKey": (lambda p: rsa.RSAPrivateKey(RSA_KEY, provider=p), RSA_SECRETS),
    "RSAPublicKey": (lambda p: rsa.RSAPrivateKey(RSA_KEY, provider=p).public_key(), RSA_SECRETS),
    "ECPrivateKey": (lambda p: ec.EllipticCurvePrivateKey(EC_KEY, provider=p), EC_SECRETS),
    "ECPublicKey": (
        lambda p: ec.EllipticCurvePrivateKey(EC_KEY, provider=p).public_key(),
        EC_SECRETS,
    ),
    "DHPrivateKey": (lambda p: dh.DHPrivateKey(DH_KEY, provider=p), DH_SECRETS),
    "DHPublicKey": (lambda p: dh.DHPrivateKey(DH_KEY, provider=p).public_key(), DH_SECRETS),
}


@pytest.mark.parametrize("case", list(REPRS.values()), ids=list(REPRS))
def test_repr_and_str_never_show_the_key(provider, case):
    make, secrets = case
    obj = make(provider)
    assert_hidden(repr(obj) + str(obj), *secrets)


def test_rsa_pss_signature_shortened_by_its_leading_zero_is_invalid_on_every_path(provider):
    """A PSS signature whose first byte is 0, sent without it, is the same integer: OpenSSL takes
    it, the raw path refuses it (wrong length, RFC 8017 8.1.2). Every path must refuse it."""
    key = rsa.RSAPrivateKey(RSA_KEY, provider=provider)
    pss = RSA_PADDINGS["pss"]
    signature = key.sign(DATA, pss, _hashes.SHA256())
    while signature[0] != 0:  # PSS is randomised: about 1 in 256 signatures starts with 0
        signature = key.sign(DATA, pss, _hashes.SHA256())
    key.public_key().verify(signature, DATA, pss, _hashes.SHA256())
    with pytest.raises(InvalidSignature):
        key.public_key().verify(signature[1:], DATA, pss, _hashes.SHA256())
