"""Property tests: a provider whose engine declines and faults at random never changes an answer.

For random keys, nonces, data, associated data and chunkings, each operation runs through a
Provider with a fresh ChaosEngine (new seed per example), through a software-only Provider and
through plain `cryptography`; the answers are equal, and when one raises the other raises the
same exception class. Invalid inputs are mixed in on purpose (nonce and tag lengths out of range,
unaligned data, altered ciphertexts and tags).
"""

from __future__ import annotations

import hashlib
import hmac as std_hmac
from collections.abc import Callable
from typing import Any

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import cmac as _cmac
from cryptography.hazmat.primitives.asymmetric import ec as _ec
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import rsa as _rsa
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed
from cryptography.hazmat.primitives.ciphers import Cipher as _Cipher
from cryptography.hazmat.primitives.ciphers import aead as _aead
from cryptography.hazmat.primitives.ciphers import algorithms as _algorithms
from doubles import ChaosEngine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cryptoffload import Policy, Provider, dh, ec, hashes, modes, rsa
from cryptoffload.aead import AESCCM, AESGCM
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.cmac import CMAC
from cryptoffload.core.names import HASH_CLASSES, HASH_NAMES
from cryptoffload.core.validate import GCM_TAG_SIZES
from cryptoffload.gmac import GMAC
from cryptoffload.hmac import HMAC

BULK = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PUBLIC_KEY = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SOFTWARE = Provider([])

# Public keys are generated once: each example varies the chaos seed and the message.
RSA_KEY = _rsa.generate_private_key(65537, 2048)
RSA_PUBLIC = RSA_KEY.public_key()
RSA_N = RSA_PUBLIC.public_numbers().n
EC_CURVES = {
    "p256": _ec.SECP256R1(),
    "p384": _ec.SECP384R1(),
    "secp256k1": _ec.SECP256K1(),
    "brainpoolp256r1": _ec.BrainpoolP256R1(),
}
EC_KEYS = {name: _ec.generate_private_key(curve) for name, curve in EC_CURVES.items()}
DH_KEY = dh.generate_private_key("ffdhe2048")
DH_PEERS = [dh.generate_private_key("ffdhe2048").public_key() for _ in range(3)]

# -- strategies ---------------------------------------------------------------------------------

seeds = st.integers(0, 2**32 - 1)
aes_keys = st.sampled_from([16, 24, 32]).flatmap(lambda n: st.binary(min_size=n, max_size=n))
sha_names = st.sampled_from(sorted(HASH_CLASSES))  # the SHA-1/SHA-2 family


def _sized(low: int, high: int) -> st.SearchStrategy[bytes]:
    return st.integers(low, high).flatmap(lambda n: st.binary(min_size=n, max_size=n))


# Short payloads, and payloads of any length up to 4096 bytes as often.
payloads = st.binary(max_size=64) | _sized(0, 4096)
aads = st.none() | st.binary(max_size=64)

# Half the time the usual length, else any length (many of those invalid).
gcm_nonces = _sized(12, 12) | _sized(0, 140)
ccm_nonces = _sized(7, 13) | _sized(0, 16)
gcm_tag_lengths = st.sampled_from(sorted(GCM_TAG_SIZES)) | st.integers(0, 17)
ccm_tag_lengths = st.sampled_from([4, 6, 8, 10, 12, 14, 16]) | st.integers(0, 17)


def chaos_provider(seed: int) -> Provider:
    """A provider whose one engine claims everything and declines or faults at random."""
    return Provider([ChaosEngine(seed=seed)], policy=Policy(min_size={"*": 0}))


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", result) or ("raised", exception class): what two providers must agree on."""
    try:
        return ("ok", call())
    except Exception as exc:
        return ("raised", type(exc))


def split(draw: Callable[..., Any], data: bytes) -> list[bytes]:
    """``data`` cut at random points (empty pieces included)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=6)))
    pieces, start = [], 0
    for cut in [*cuts, len(data)]:
        pieces.append(data[start:cut])
        start = cut
    return pieces


def alter(draw: Callable[..., Any], data: bytes) -> bytes:
    """``data`` unchanged, with one bit flipped, truncated, or extended."""
    how = draw(st.sampled_from(["keep", "flip", "truncate", "extend"]))
    if how == "flip" and data:
        index = draw(st.integers(0, len(data) - 1))
        bit = draw(st.integers(0, 7))
        out = bytearray(data)
        out[index] ^= 1 << bit
        return bytes(out)
    if how == "truncate" and data:
        return data[: draw(st.integers(0, len(data) - 1))]
    if how == "extend":
        return data + draw(st.binary(min_size=1, max_size=4))
    return data


def alter_aad(draw: Callable[..., Any], aad: bytes | None) -> bytes | None:
    """The same associated data half the time, else any (possibly the same by chance)."""
    if draw(st.booleans()):
        return aad
    return draw(aads)


# -- AEAD ---------------------------------------------------------------------------------------


@BULK
@given(seed=seeds, key=aes_keys, nonce=gcm_nonces, data=payloads, aad=aads, draw=st.data())
def test_aesgcm_chaos_equals_software_and_cryptography(seed, key, nonce, data, aad, draw):
    chaos = chaos_provider(seed)
    reference = _aead.AESGCM(key)
    sealed = outcome(lambda: AESGCM(key, provider=chaos).encrypt(nonce, data, aad))
    assert sealed == outcome(lambda: AESGCM(key, provider=SOFTWARE).encrypt(nonce, data, aad))
    assert sealed == outcome(lambda: reference.encrypt(nonce, data, aad))

    ciphertext = alter(draw.draw, sealed[1]) if sealed[0] == "ok" else draw.draw(payloads)
    aad2 = alter_aad(draw.draw, aad)
    opened = outcome(lambda: AESGCM(key, provider=chaos).decrypt(nonce, ciphertext, aad2))
    assert opened == outcome(
        lambda: AESGCM(key, provider=SOFTWARE).decrypt(nonce, ciphertext, aad2)
    )
    assert opened == outcome(lambda: reference.decrypt(nonce, ciphertext, aad2))
    if sealed[0] == "ok" and ciphertext == sealed[1] and aad2 == aad:
        assert opened == ("ok", data)


def _gcm_reference_seal(key: bytes, nonce: bytes, data: bytes, aad: bytes | None, t: int) -> bytes:
    full = _aead.AESGCM(key).encrypt(nonce, data, aad)
    return full[: len(data) + t]


def _gcm_reference_open(
    key: bytes, nonce: bytes, sealed: bytes, aad: bytes | None, t: int
) -> bytes:
    if len(sealed) < t:
        modes.GCM(nonce)  # a bad nonce is reported first, as the AEAD classes do
        raise InvalidTag
    mode = modes.GCM(nonce, sealed[len(sealed) - t :], min_tag_length=t)
    ctx = _Cipher(_algorithms.AES(key), mode).decryptor()
    if aad:
        ctx.authenticate_additional_data(aad)
    return ctx.update(sealed[: len(sealed) - t]) + ctx.finalize()


@BULK
@given(
    seed=seeds,
    key=aes_keys,
    nonce=gcm_nonces,
    data=payloads,
    aad=aads,
    tag_length=gcm_tag_lengths,
    draw=st.data(),
)
def test_aesgcm_any_tag_length_chaos_equals_software(seed, key, nonce, data, aad, tag_length, draw):
    chaos = chaos_provider(seed)
    made = outcome(lambda: AESGCM(key, tag_length, provider=chaos))
    assert made[0] == outcome(lambda: AESGCM(key, tag_length, provider=SOFTWARE))[0]
    if made[0] == "raised":
        assert tag_length not in GCM_TAG_SIZES
        return
    through_chaos = made[1]
    through_software = AESGCM(key, tag_length, provider=SOFTWARE)
    sealed = outcome(lambda: through_chaos.encrypt(nonce, data, aad))
    assert sealed == outcome(lambda: through_software.encrypt(nonce, data, aad))
    if sealed[0] == "ok":
        assert sealed[1] == _gcm_reference_seal(key, nonce, data, aad, tag_length)

    ciphertext = alter(draw.draw, sealed[1]) if sealed[0] == "ok" else draw.draw(payloads)
    aad2 = alter_aad(draw.draw, aad)
    opened = outcome(lambda: through_chaos.decrypt(nonce, ciphertext, aad2))
    assert opened == outcome(lambda: through_software.decrypt(nonce, ciphertext, aad2))
    assert opened == outcome(lambda: _gcm_reference_open(key, nonce, ciphertext, aad2, tag_length))
    if opened[0] == "ok":
        # Only the genuine (ciphertext, tag) opens: a changed one is refused.
        assert ciphertext == sealed[1]
        assert aad2 == aad or (not aad2 and not aad)
        assert opened[1] == data


@BULK
@given(
    seed=seeds,
    key=aes_keys,
    nonce=ccm_nonces,
    data=payloads,
    aad=aads,
    tag_length=ccm_tag_lengths,
    draw=st.data(),
)
def test_aesccm_chaos_equals_software_and_cryptography(
    seed, key, nonce, data, aad, tag_length, draw
):
    chaos = chaos_provider(seed)
    made = outcome(lambda: AESCCM(key, tag_length, provider=chaos))
    reference = outcome(lambda: _aead.AESCCM(key, tag_length))
    assert made[0] == reference[0] == outcome(lambda: AESCCM(key, tag_length, provider=SOFTWARE))[0]
    if made[0] == "raised":
        assert made[1] is reference[1]
        return
    through_chaos = made[1]
    through_software = AESCCM(key, tag_length, provider=SOFTWARE)
    sealed = outcome(lambda: through_chaos.encrypt(nonce, data, aad))
    assert sealed == outcome(lambda: through_software.encrypt(nonce, data, aad))
    assert sealed == outcome(lambda: reference[1].encrypt(nonce, data, aad))

    ciphertext = alter(draw.draw, sealed[1]) if sealed[0] == "ok" else draw.draw(payloads)
    aad2 = alter_aad(draw.draw, aad)
    opened = outcome(lambda: through_chaos.decrypt(nonce, ciphertext, aad2))
    assert opened == outcome(lambda: through_software.decrypt(nonce, ciphertext, aad2))
    assert opened == outcome(lambda: reference[1].decrypt(nonce, ciphertext, aad2))


# -- block cipher modes -------------------------------------------------------------------------

# Initial counter blocks that wrap within a few blocks (CTR counts over all 128 bits).
CTR_WRAPS = st.sampled_from([b"\xff" * 16, bytes(8) + b"\xff" * 8, b"\xff" * 15 + b"\xf0"])
MODES = {"ecb": modes.ECB, "cbc": modes.CBC, "ctr": modes.CTR, "cfb": modes.CFB, "ofb": modes.OFB}


def _mode(name: str, iv: bytes) -> Any:
    return MODES[name]() if name == "ecb" else MODES[name](iv)


def run_cipher(make: Callable[[], Any], encrypt: bool, pieces: list[bytes]) -> tuple:
    """Each update's output and finalize's, or what was released before the exception class."""
    released: list[bytes] = []
    try:
        cipher = make()
        ctx = cipher.encryptor() if encrypt else cipher.decryptor()
        for piece in pieces:
            released.append(ctx.update(piece))
        released.append(ctx.finalize())
    except Exception as exc:
        return ("raised", type(exc), released)
    return ("ok", released)


@BULK
@given(
    seed=seeds,
    mode=st.sampled_from(sorted(MODES)),
    key=aes_keys,
    iv=_sized(16, 16) | CTR_WRAPS | _sized(0, 32),
    data=payloads,
    aligned=st.booleans(),
    encrypt=st.booleans(),
    draw=st.data(),
)
def test_cipher_modes_with_random_chunks_chaos_equals_software_and_cryptography(
    seed, mode, key, iv, data, aligned, encrypt, draw
):
    if aligned:
        data = data[: len(data) // 16 * 16]
    pieces = split(draw.draw, data)
    chaos = chaos_provider(seed)

    def ours(provider: Provider) -> Callable[[], Any]:
        return lambda: Cipher(algorithms.AES(key), _mode(mode, iv), provider=provider)

    through_chaos = run_cipher(ours(chaos), encrypt, pieces)
    assert through_chaos == run_cipher(ours(SOFTWARE), encrypt, pieces)
    reference = run_cipher(lambda: _Cipher(_algorithms.AES(key), _mode(mode, iv)), encrypt, pieces)
    assert through_chaos == reference
    if through_chaos[0] == "ok":
        assert len(b"".join(through_chaos[1])) == len(data)


# -- hashes and MACs ----------------------------------------------------------------------------


def run_stream(make: Callable[[], Any], pieces: list[bytes], fork_at: int) -> tuple:
    """Feed ``pieces``; a copy taken before piece ``fork_at`` (if there is one) is finalized too."""

    def run() -> tuple[bytes, bytes | None]:
        ctx = make()
        fork = None
        for i, piece in enumerate(pieces):
            if i == fork_at:
                fork = ctx.copy()
            ctx.update(piece)
        return ctx.finalize(), (fork.finalize() if fork is not None else None)

    return outcome(run)


@BULK
@given(seed=seeds, name=sha_names, data=payloads, draw=st.data())
def test_hash_chaos_equals_software_and_hashlib(seed, name, data, draw):
    pieces = split(draw.draw, data)
    fork_at = draw.draw(st.integers(0, len(pieces)))
    chaos = chaos_provider(seed)
    algorithm = HASH_CLASSES[name]()
    through_chaos = run_stream(lambda: hashes.Hash(algorithm, provider=chaos), pieces, fork_at)
    assert through_chaos == run_stream(
        lambda: hashes.Hash(algorithm, provider=SOFTWARE), pieces, fork_at
    )
    digest, forked = through_chaos[1]
    assert digest == hashlib.new(HASH_NAMES[name], data).digest()
    if fork_at < len(pieces):
        head = b"".join(pieces[:fork_at])
        assert forked == hashlib.new(HASH_NAMES[name], head).digest()


def verify_outcome(make: Callable[[], Any], pieces: list[bytes], tag: bytes) -> tuple:
    def run() -> None:
        ctx = make()
        for piece in pieces:
            ctx.update(piece)
        ctx.verify(tag)

    return outcome(run)


@BULK
@given(
    seed=seeds,
    name=sha_names,
    key=st.binary(max_size=200),
    data=payloads,
    draw=st.data(),
)
def test_hmac_chaos_equals_software_and_stdlib(seed, name, key, data, draw):
    pieces = split(draw.draw, data)
    fork_at = draw.draw(st.integers(0, len(pieces)))
    chaos = chaos_provider(seed)
    algorithm = HASH_CLASSES[name]()
    expected = std_hmac.new(key, data, HASH_NAMES[name]).digest()
    forked = None
    if fork_at < len(pieces):
        forked = std_hmac.new(key, b"".join(pieces[:fork_at]), HASH_NAMES[name]).digest()
    for provider in (chaos, SOFTWARE):
        ours = run_stream(lambda p=provider: HMAC(key, algorithm, provider=p), pieces, fork_at)
        assert ours == ("ok", (expected, forked))
    tag = alter(draw.draw, expected)
    verified = verify_outcome(lambda: HMAC(key, algorithm, provider=chaos), pieces, tag)
    assert verified == verify_outcome(lambda: HMAC(key, algorithm, provider=SOFTWARE), pieces, tag)
    assert verified == (("ok", None) if tag == expected else ("raised", InvalidSignature))


@BULK
@given(seed=seeds, key=aes_keys, data=payloads, draw=st.data())
def test_cmac_chaos_equals_software_and_cryptography(seed, key, data, draw):
    pieces = split(draw.draw, data)
    chaos = chaos_provider(seed)
    reference = _cmac.CMAC(_algorithms.AES(key))
    reference.update(data)
    expected = reference.finalize()
    for provider in (chaos, SOFTWARE):
        make = lambda p=provider: CMAC(algorithms.AES(key), provider=p)  # noqa: E731
        assert run_stream(make, pieces, len(pieces)) == ("ok", (expected, None))
    tag = alter(draw.draw, expected)
    verified = verify_outcome(lambda: CMAC(algorithms.AES(key), provider=chaos), pieces, tag)
    assert verified == verify_outcome(
        lambda: CMAC(algorithms.AES(key), provider=SOFTWARE), pieces, tag
    )
    assert verified == (("ok", None) if tag == expected else ("raised", InvalidSignature))


def _gmac_reference(key: bytes, nonce: bytes, data: bytes, tag_length: int) -> bytes:
    ctx = _Cipher(_algorithms.AES(key), modes.GCM(nonce)).encryptor()
    ctx.authenticate_additional_data(data)
    ctx.finalize()
    return ctx.tag[:tag_length]


@BULK
@given(
    seed=seeds,
    key=aes_keys,
    nonce=gcm_nonces,
    tag_length=gcm_tag_lengths,
    data=payloads,
    draw=st.data(),
)
def test_gmac_chaos_equals_software_and_cryptography(seed, key, nonce, tag_length, data, draw):
    pieces = split(draw.draw, data)
    chaos = chaos_provider(seed)

    def tag_through(provider: Provider) -> tuple:
        def run() -> bytes:
            ctx = GMAC(key, nonce, tag_length, provider=provider)
            for piece in pieces:
                ctx.update(piece)
            return ctx.finalize()

        return outcome(run)

    through_chaos = tag_through(chaos)
    assert through_chaos == tag_through(SOFTWARE)
    if through_chaos[0] == "raised":
        assert through_chaos[1] is ValueError
        assert tag_length not in GCM_TAG_SIZES or not 8 <= len(nonce) <= 128
        return
    expected = _gmac_reference(key, nonce, data, tag_length)
    assert through_chaos[1] == expected
    tag = alter(draw.draw, expected)

    def make(provider: Provider) -> Callable[[], GMAC]:
        return lambda: GMAC(key, nonce, tag_length, provider=provider)

    verified = verify_outcome(make(chaos), pieces, tag)
    assert verified == verify_outcome(make(SOFTWARE), pieces, tag)
    assert verified == (("ok", None) if tag == expected else ("raised", InvalidSignature))


# -- RSA ----------------------------------------------------------------------------------------

messages = st.binary(max_size=512)


@PUBLIC_KEY
@given(seed=seeds, name=sha_names, message=messages, prehashed=st.booleans())
def test_rsa_pkcs1v15_signature_equal_across_providers(seed, name, message, prehashed):
    algorithm = HASH_CLASSES[name]()
    data = message
    if prehashed:
        data = hashlib.new(HASH_NAMES[name], message).digest()
        algorithm = Prehashed(algorithm)
    chaos = rsa.RSAPrivateKey(RSA_KEY, provider=chaos_provider(seed))
    software = rsa.RSAPrivateKey(RSA_KEY, provider=SOFTWARE)
    signature = chaos.sign(data, padding.PKCS1v15(), algorithm)
    assert signature == software.sign(data, padding.PKCS1v15(), algorithm)
    assert signature == RSA_KEY.sign(data, padding.PKCS1v15(), algorithm)
    chaos.public_key().verify(signature, data, padding.PKCS1v15(), algorithm)


PSS_SALTS = st.sampled_from([padding.PSS.DIGEST_LENGTH, padding.PSS.MAX_LENGTH]) | st.integers(
    0, 64
)


@PUBLIC_KEY
@given(seed=seeds, name=sha_names, mgf_name=sha_names, salt=PSS_SALTS, message=messages)
def test_rsa_pss_signature_from_chaos_verifies_under_cryptography(
    seed, name, mgf_name, salt, message
):
    algorithm = HASH_CLASSES[name]()
    pss = padding.PSS(padding.MGF1(HASH_CLASSES[mgf_name]()), salt)
    provider = chaos_provider(seed)
    key = rsa.RSAPrivateKey(RSA_KEY, provider=provider)
    signature = key.sign(message, pss, algorithm)
    RSA_PUBLIC.verify(signature, message, pss, algorithm)
    # And both providers agree on it, and on a signature of another message.
    for public in (key.public_key(), rsa.RSAPublicKey(RSA_PUBLIC, provider=SOFTWARE)):
        public.verify(signature, message, pss, algorithm)
        assert outcome(lambda p=public: p.verify(signature, message + b"!", pss, algorithm)) == (
            "raised",
            InvalidSignature,
        )


raw_inputs = st.integers(1, RSA_N - 1) | st.integers(-3, 3) | st.integers(RSA_N - 2, RSA_N + 2)


@PUBLIC_KEY
@given(seed=seeds, value=raw_inputs)
def test_rsa_raw_operations_equal_across_providers(seed, value):
    numbers = RSA_KEY.private_numbers()
    valid = 0 < value < RSA_N
    chaos = rsa.RSAPrivateKey(RSA_KEY, provider=chaos_provider(seed))
    software = rsa.RSAPrivateKey(RSA_KEY, provider=SOFTWARE)
    private = outcome(lambda: chaos.raw_private(value))
    assert private == outcome(lambda: software.raw_private(value))
    assert private == (("ok", pow(value, numbers.d, RSA_N)) if valid else ("raised", ValueError))
    public = outcome(lambda: chaos.public_key().raw_public(value))
    assert public == outcome(lambda: software.public_key().raw_public(value))
    assert public == (("ok", pow(value, 65537, RSA_N)) if valid else ("raised", ValueError))


OAEP_HASHES = st.sampled_from(["sha1", "sha224", "sha256", "sha384", "sha512"])


@PUBLIC_KEY
@given(
    seed=seeds,
    name=OAEP_HASHES,
    label=st.none() | st.binary(max_size=16),
    message=st.binary(max_size=62),
)
def test_rsa_oaep_through_chaos_interoperates_with_cryptography(seed, name, label, message):
    algorithm = HASH_CLASSES[name]()
    oaep = padding.OAEP(padding.MGF1(algorithm), algorithm, label)
    key = rsa.RSAPrivateKey(RSA_KEY, provider=chaos_provider(seed))
    assert RSA_KEY.decrypt(key.public_key().encrypt(message, oaep), oaep) == message
    assert key.decrypt(RSA_PUBLIC.encrypt(message, oaep), oaep) == message


# -- EC and DH ----------------------------------------------------------------------------------


@PUBLIC_KEY
@given(seed=seeds, curve=st.sampled_from(sorted(EC_CURVES)), scalar=st.integers(1, 2**160))
def test_ecdh_secret_equal_across_providers(seed, curve, scalar):
    own = EC_KEYS[curve]
    peer = _ec.derive_private_key(scalar, EC_CURVES[curve]).public_key()
    expected = own.exchange(_ec.ECDH(), peer)
    for provider in (chaos_provider(seed), SOFTWARE):
        key = ec.EllipticCurvePrivateKey(own, provider=provider)
        assert key.exchange(ec.ECDH(), ec.EllipticCurvePublicKey(peer)) == expected


@PUBLIC_KEY
@given(seed=seeds, curve=st.sampled_from(sorted(EC_CURVES)), name=sha_names, message=messages)
def test_ecdsa_signature_from_chaos_verifies_under_cryptography(seed, curve, name, message):
    algorithm = _ec.ECDSA(HASH_CLASSES[name]())
    provider = chaos_provider(seed)
    key = ec.EllipticCurvePrivateKey(EC_KEYS[curve], provider=provider)
    signature = key.sign(message, algorithm)
    EC_KEYS[curve].public_key().verify(signature, message, algorithm)
    software = ec.EllipticCurvePublicKey(EC_KEYS[curve].public_key(), provider=SOFTWARE)
    for public in (key.public_key(), software):
        public.verify(signature, message, algorithm)
        assert outcome(lambda p=public: p.verify(signature, message + b"!", algorithm)) == (
            "raised",
            InvalidSignature,
        )


@settings(max_examples=10, deadline=None)
@given(seed=seeds, peer=st.sampled_from(range(len(DH_PEERS))))
def test_dh_secret_equal_across_providers(seed, peer):
    public: dh.DHPublicKey = DH_PEERS[peer]
    expected = DH_KEY.exchange(public)
    for provider in (chaos_provider(seed), SOFTWARE):
        key = dh.DHPrivateKey(DH_KEY, provider=provider)
        assert key.exchange(dh.DHPublicKey(public)) == expected
