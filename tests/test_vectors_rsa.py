"""RSA through every engine set: CAVP SigVer known answers, round trips against plain
`cryptography` in both directions, tampering, the raw operations, serialization, and counters.

The take-all and chaos engines do RSA as a modexp-only device would: PKCS#1 padding in Python
around a raw exponentiation (``doubles.raw_rsa``); they decline PKCS#1 v1.5 decryption.
"""

from __future__ import annotations

import functools
import pathlib

import pytest
from conftest import ENGINE_SETS
from counting import assert_counted as counted
from counting import assert_untouched, takeall_provider
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization as _ser
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import rsa as _rsa
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed
from doubles import ChaosEngine
from vectors.loaders import hash_class, rsa_sigver_vectors

from cryptoffload import Provider, rsa, serialization
from cryptoffload.core.ops import RsaOp

KEY_SIZES = (1024, 2048, 3072)
each_size = pytest.mark.parametrize("bits", KEY_SIZES, ids=[f"rsa{b}" for b in KEY_SIZES])

MESSAGE = b"cryptoffload known-answer message " * 3

SIGVER_FILES = sorted({r["file"] for r in rsa_sigver_vectors()})


@functools.cache
def _plain_key(bits: int) -> _rsa.RSAPrivateKey:
    """One `cryptography` key per size for the whole module (4096 is generated only if used)."""
    return _rsa.generate_private_key(65537, bits)


def _key(bits: int, provider: Provider) -> rsa.RSAPrivateKey:
    return rsa.RSAPrivateKey(_plain_key(bits), provider=provider)


def assert_counted(provider: Provider, alg: str, n: int, *, engine_declines: bool = False) -> None:
    """As counting.assert_counted; 1536-bit keys are claimed by no engine, so unclaimed is fine."""
    counted(provider, alg, n, engine_declines=engine_declines, require_claimed=False)


def _pss(hash_cls: type[hashes.HashAlgorithm], salt: object) -> padding.PSS:
    return padding.PSS(mgf=padding.MGF1(hash_cls()), salt_length=salt)


def _flip(data: bytes, index: int, mask: int = 0x01) -> bytes:
    out = bytearray(data)
    out[index] ^= mask
    return bytes(out)


# --------------------------------------------------------------------------- CAVP SigVer


@pytest.mark.parametrize(
    "relpath", SIGVER_FILES, ids=[pathlib.PurePosixPath(f).stem for f in SIGVER_FILES]
)
def test_sigver_vectors_verify_or_raise_invalid_signature_as_recorded(provider, relpath):
    records = [r for r in rsa_sigver_vectors() if r["file"] == relpath]
    assert len(records) >= 100
    keys: dict[tuple[int, int], rsa.RSAPublicKey] = {}
    per_alg: dict[str, int] = {}
    wrong = []
    for i, r in enumerate(records):
        key = keys.get((r["e"], r["n"]))
        if key is None:
            numbers = rsa.RSAPublicNumbers(r["e"], r["n"])
            key = keys[r["e"], r["n"]] = rsa.public_key_from_numbers(numbers, provider=provider)
        assert key.key_size == r["mod"]
        hash_cls = hash_class(r["hash"])
        pss = r["padding"] == "pss"
        pad = _pss(hash_cls, r["salt_len"]) if pss else padding.PKCS1v15()
        try:
            key.verify(r["signature"], r["msg"], pad, hash_cls())
            verified = True
        except InvalidSignature:
            verified = False
        alg = f"rsa-{r['mod']}-public"
        per_alg[alg] = per_alg.get(alg, 0) + 1
        if verified != r["result"]:
            wrong.append((i, r["mod"], r["hash"], r["reason"] or "valid", verified))
    assert not wrong, f"{len(wrong)} records answered wrongly, e.g. {wrong[:5]}"
    assert {r["result"] for r in records} == {True, False}
    for alg, n in per_alg.items():
        assert_counted(provider, alg, n)
    if any(isinstance(engine, ChaosEngine) for engine in provider.engines):
        # Hundreds of ops: the chaos engine must have answered, declined and faulted.
        chaos = provider.counters.snapshot()["chaos"].values()
        assert sum(c["ops"] for c in chaos) > 0
        assert sum(c["faults"] for c in chaos) > 0
        assert sum(sum(c["declined"].values()) for c in chaos) > 0


def test_sigver_pss_valid_records_also_verify_with_auto_salt_length(provider):
    records = [r for r in rsa_sigver_vectors() if r["padding"] == "pss" and r["result"]]
    assert records
    for r in records:
        key = rsa.public_key_from_numbers(rsa.RSAPublicNumbers(r["e"], r["n"]), provider=provider)
        hash_cls = hash_class(r["hash"])
        key.verify(r["signature"], r["msg"], _pss(hash_cls, padding.PSS.AUTO), hash_cls())
    for mod in {r["mod"] for r in records}:
        assert_counted(provider, f"rsa-{mod}-public", sum(r["mod"] == mod for r in records))


# --------------------------------------------------------------------------- signatures


@each_size
def test_pkcs1v15_sign_through_provider_matches_cryptography_and_verifies_both_ways(provider, bits):
    key = _key(bits, provider)
    plain = _plain_key(bits)
    algorithms = [hashes.SHA1(), hashes.SHA256(), hashes.SHA384(), hashes.SHA512()]
    for algorithm in algorithms:
        ours = key.sign(MESSAGE, padding.PKCS1v15(), algorithm)
        theirs = plain.sign(MESSAGE, padding.PKCS1v15(), algorithm)
        assert ours == theirs  # v1.5 signatures are deterministic
        plain.public_key().verify(ours, MESSAGE, padding.PKCS1v15(), algorithm)
        key.public_key().verify(theirs, MESSAGE, padding.PKCS1v15(), algorithm)
    assert_counted(provider, f"rsa-{bits}-private", len(algorithms))
    assert_counted(provider, f"rsa-{bits}-public", len(algorithms))


@each_size
def test_pss_sign_through_provider_verifies_with_cryptography_and_back(provider, bits):
    key = _key(bits, provider)
    plain = _plain_key(bits)
    cases = [
        (hashes.SHA256, padding.PSS.MAX_LENGTH),
        (hashes.SHA256, padding.PSS.DIGEST_LENGTH),
        (hashes.SHA384, 0),
        (hashes.SHA512, 20),
        (hashes.SHA1, padding.PSS.DIGEST_LENGTH),
    ]
    for hash_cls, salt in cases:
        ours = key.sign(MESSAGE, _pss(hash_cls, salt), hash_cls())
        assert len(ours) == bits // 8
        plain.public_key().verify(ours, MESSAGE, _pss(hash_cls, salt), hash_cls())
        plain.public_key().verify(ours, MESSAGE, _pss(hash_cls, padding.PSS.AUTO), hash_cls())
        theirs = plain.sign(MESSAGE, _pss(hash_cls, salt), hash_cls())
        key.public_key().verify(theirs, MESSAGE, _pss(hash_cls, salt), hash_cls())
    assert_counted(provider, f"rsa-{bits}-private", len(cases))
    assert_counted(provider, f"rsa-{bits}-public", len(cases))


@each_size
def test_prehashed_sign_and_verify_match_hashing_inside(provider, bits):
    key = _key(bits, provider)
    digest = hashes.Hash(hashes.SHA256())
    digest.update(MESSAGE)
    prehashed = digest.finalize()
    sig = key.sign(prehashed, padding.PKCS1v15(), Prehashed(hashes.SHA256()))
    assert sig == key.sign(MESSAGE, padding.PKCS1v15(), hashes.SHA256())
    key.public_key().verify(sig, prehashed, padding.PKCS1v15(), Prehashed(hashes.SHA256()))
    assert_counted(provider, f"rsa-{bits}-private", 2)
    assert_counted(provider, f"rsa-{bits}-public", 1)


def test_pkcs1v15_signatures_are_byte_identical_across_engine_sets():
    expected = {
        bits: _plain_key(bits).sign(MESSAGE, padding.PKCS1v15(), hashes.SHA256())
        for bits in KEY_SIZES
    }
    for name, make in ENGINE_SETS.items():
        provider = make()
        for bits in KEY_SIZES:
            sig = _key(bits, provider).sign(MESSAGE, padding.PKCS1v15(), hashes.SHA256())
            assert sig == expected[bits], (name, bits)
            assert_counted(provider, f"rsa-{bits}-private", 1)


@each_size
@pytest.mark.parametrize("scheme", ["pkcs1v15", "pss"])
def test_tampered_signatures_raise_invalid_signature(provider, bits, scheme):
    key = _key(bits, provider)
    pub = key.public_key()
    pad = padding.PKCS1v15() if scheme == "pkcs1v15" else _pss(hashes.SHA256, 32)
    sig = key.sign(MESSAGE, pad, hashes.SHA256())
    k = bits // 8
    bad_signatures = [
        _flip(sig, 0, 0x01),
        _flip(sig, k // 2, 0x80),
        _flip(sig, k - 1, 0x01),
        sig[:-1],  # one byte short
        b"\x00" + sig,  # one byte long
        b"\x00" * k,  # zero
        b"\xff" * k,  # not below n
        pub.public_numbers().n.to_bytes(k, "big"),  # exactly n
    ]
    for bad in bad_signatures:
        with pytest.raises(InvalidSignature):
            pub.verify(bad, MESSAGE, pad, hashes.SHA256())
    with pytest.raises(InvalidSignature):
        pub.verify(sig, MESSAGE + b"!", pad, hashes.SHA256())
    with pytest.raises(InvalidSignature):
        pub.verify(sig, MESSAGE, pad, hashes.SHA384())
    pub.verify(sig, MESSAGE, pad, hashes.SHA256())
    # A failed check is an answer: counted once, wherever it was given.
    assert_counted(provider, f"rsa-{bits}-public", len(bad_signatures) + 3)
    assert_counted(provider, f"rsa-{bits}-private", 1)


# --------------------------------------------------------------------------- encryption


def _oaep(hash_cls, mgf_hash_cls=None, label=None) -> padding.OAEP:
    return padding.OAEP(
        mgf=padding.MGF1((mgf_hash_cls or hash_cls)()), algorithm=hash_cls(), label=label
    )


#: (hash, MGF1 hash, label) of each OAEP case.
OAEP_CASES = {
    "sha1": (hashes.SHA1, hashes.SHA1, None),
    "sha256": (hashes.SHA256, hashes.SHA256, None),
    "sha256-label": (hashes.SHA256, hashes.SHA256, b"cryptoffload label"),
    "sha256-mgf1sha1-label": (hashes.SHA256, hashes.SHA1, b"\x00\x01label"),
}


@each_size
@pytest.mark.parametrize("case", list(OAEP_CASES))
def test_oaep_encrypt_decrypt_round_trips_with_cryptography_both_ways(provider, bits, case):
    key = _key(bits, provider)
    plain = _plain_key(bits)
    hash_cls, mgf_hash_cls, label = OAEP_CASES[case]
    pad = _oaep(hash_cls, mgf_hash_cls, label)
    longest = bits // 8 - 2 * hash_cls.digest_size - 2
    messages = [b"", b"m", bytes(i % 251 for i in range(longest))]
    for message in messages:
        ours = key.public_key().encrypt(message, pad)
        assert len(ours) == bits // 8
        assert plain.decrypt(ours, pad) == message
        assert key.decrypt(ours, pad) == message
        theirs = plain.public_key().encrypt(message, pad)
        assert key.decrypt(theirs, pad) == message
    assert_counted(provider, f"rsa-{bits}-public", len(messages))
    assert_counted(provider, f"rsa-{bits}-private", 2 * len(messages))


@each_size
def test_pkcs1v15_encrypt_decrypt_round_trips_and_engines_leave_decryption_to_software(
    provider, bits
):
    key = _key(bits, provider)
    plain = _plain_key(bits)
    pad = padding.PKCS1v15()
    messages = [b"", b"secret", bytes(i % 251 for i in range(bits // 8 - 11))]
    for message in messages:
        ours = key.public_key().encrypt(message, pad)
        assert plain.decrypt(ours, pad) == message
        assert key.decrypt(ours, pad) == message
        assert key.decrypt(plain.public_key().encrypt(message, pad), pad) == message
    assert_counted(provider, f"rsa-{bits}-public", len(messages))
    # The doubles decline v1.5 decryption: only OpenSSL's implicit rejection is safe there.
    assert_counted(provider, f"rsa-{bits}-private", 2 * len(messages), engine_declines=True)


@each_size
def test_oaep_decrypt_of_tampered_ciphertext_raises_value_error(provider, bits):
    key = _key(bits, provider)
    pad = _oaep(hashes.SHA256, label=b"label")
    ct = key.public_key().encrypt(MESSAGE[:40], pad)
    k = bits // 8
    n = key.private_numbers().public_numbers.n
    tampered = [
        _flip(ct, 1),
        _flip(ct, k // 2, 0x40),
        _flip(ct, k - 1),
        n.to_bytes(k, "big"),  # c = n
        b"\xff" * k,  # c > n
        b"\x00" * k,  # c = 0
        ct[:-1],  # wrong length
        ct + b"\x00",
    ]
    for bad in tampered:
        with pytest.raises(ValueError):
            key.decrypt(bad, pad)
    with pytest.raises(ValueError):
        key.decrypt(ct, _oaep(hashes.SHA256, label=b"other label"))
    with pytest.raises(ValueError):
        key.decrypt(ct, _oaep(hashes.SHA1, label=b"label"))
    assert key.decrypt(ct, pad) == MESSAGE[:40]


def test_oaep_message_too_long_raises_value_error(provider):
    key = _key(1024, provider)
    pad = _oaep(hashes.SHA256)
    with pytest.raises(ValueError):
        key.public_key().encrypt(b"x" * (128 - 2 * 32 - 1), pad)


# --------------------------------------------------------------------------- raw operations


@each_size
def test_raw_private_and_raw_public_are_inverse_and_equal_pow(provider, bits):
    key = _key(bits, provider)
    numbers = key.private_numbers()
    n, e, d = numbers.public_numbers.n, numbers.public_numbers.e, numbers.d
    values = [1, 2, 0xC0FFEE, n // 3, n - 2, n - 1]
    for m in values:
        s = key.raw_private(m)
        assert s == pow(m, d, n)
        assert key.public_key().raw_public(s) == m
        c = key.public_key().raw_public(m)
        assert c == pow(m, e, n)
        assert key.raw_private(c) == m
    assert_counted(provider, f"rsa-{bits}-private", 2 * len(values))
    assert_counted(provider, f"rsa-{bits}-public", 2 * len(values))


def test_raw_input_out_of_range_is_rejected_before_any_engine():
    provider, engine = takeall_provider()
    key = _key(1024, provider)
    n = key.private_numbers().public_numbers.n
    for value in (0, -1, n, n + 1, 1 << 2048):
        with pytest.raises(ValueError):
            key.raw_private(value)
        with pytest.raises(ValueError):
            key.public_key().raw_public(value)
    for value in (True, 1.0, b"\x01"):
        with pytest.raises(TypeError):
            key.raw_private(value)
        with pytest.raises(TypeError):
            key.public_key().raw_public(value)
    with pytest.raises(ValueError):
        provider.run(RsaOp("rsa-1024-private", "raw", key.to_cryptography(), value=n))
    assert engine.seen == []
    assert_untouched(provider, "rsa-1024-private")
    assert_untouched(provider, "rsa-1024-public")


# --------------------------------------------------------------------------- 4096, sparingly


def test_rsa4096_sign_verify_oaep_and_raw_through_each_engine_set(provider):
    key = _key(4096, provider)
    plain = _plain_key(4096)
    sig = key.sign(MESSAGE, padding.PKCS1v15(), hashes.SHA512())
    assert sig == plain.sign(MESSAGE, padding.PKCS1v15(), hashes.SHA512())
    pss = _pss(hashes.SHA256, padding.PSS.DIGEST_LENGTH)
    plain.public_key().verify(
        key.sign(MESSAGE, pss, hashes.SHA256()), MESSAGE, pss, hashes.SHA256()
    )
    key.public_key().verify(sig, MESSAGE, padding.PKCS1v15(), hashes.SHA512())
    pad = _oaep(hashes.SHA256, label=b"4096")
    assert plain.decrypt(key.public_key().encrypt(MESSAGE, pad), pad) == MESSAGE
    assert key.decrypt(plain.public_key().encrypt(MESSAGE, pad), pad) == MESSAGE
    assert key.public_key().raw_public(key.raw_private(12345)) == 12345
    assert_counted(provider, "rsa-4096-private", 4)
    assert_counted(provider, "rsa-4096-public", 3)


# --------------------------------------------------------------------------- serialization

PRIVATE_FORMATS = [
    (_ser.Encoding.PEM, _ser.PrivateFormat.PKCS8, serialization.load_pem_private_key),
    (_ser.Encoding.PEM, _ser.PrivateFormat.TraditionalOpenSSL, serialization.load_pem_private_key),
    (_ser.Encoding.DER, _ser.PrivateFormat.PKCS8, serialization.load_der_private_key),
    (_ser.Encoding.DER, _ser.PrivateFormat.TraditionalOpenSSL, serialization.load_der_private_key),
]
PUBLIC_FORMATS = [
    (_ser.Encoding.PEM, _ser.PublicFormat.SubjectPublicKeyInfo, serialization.load_pem_public_key),
    (_ser.Encoding.PEM, _ser.PublicFormat.PKCS1, serialization.load_pem_public_key),
    (_ser.Encoding.DER, _ser.PublicFormat.SubjectPublicKeyInfo, serialization.load_der_public_key),
    (_ser.Encoding.DER, _ser.PublicFormat.PKCS1, serialization.load_der_public_key),
]


@pytest.mark.parametrize(
    ("encoding", "fmt", "load"),
    PRIVATE_FORMATS,
    ids=["pem-pkcs8", "pem-traditional", "der-pkcs8", "der-traditional"],
)
def test_private_key_save_and_load_round_trip_returns_our_key_class(provider, encoding, fmt, load):
    key = _key(2048, provider)
    data = key.private_bytes(encoding, fmt, _ser.NoEncryption())
    loaded = load(data, None, provider=provider)
    assert type(loaded) is rsa.RSAPrivateKey
    assert loaded.private_numbers() == key.private_numbers()
    assert loaded.public_key() == key.public_key()
    assert loaded.private_bytes(encoding, fmt, _ser.NoEncryption()) == data
    # The loaded key routes through the provider it was loaded with.
    sig = loaded.sign(MESSAGE, padding.PKCS1v15(), hashes.SHA256())
    assert sig == _plain_key(2048).sign(MESSAGE, padding.PKCS1v15(), hashes.SHA256())
    assert_counted(provider, "rsa-2048-private", 1)


@pytest.mark.parametrize(
    ("encoding", "fmt", "load"),
    PUBLIC_FORMATS,
    ids=["pem-spki", "pem-pkcs1", "der-spki", "der-pkcs1"],
)
def test_public_key_save_and_load_round_trip_returns_our_key_class(provider, encoding, fmt, load):
    pub = _key(2048, provider).public_key()
    data = pub.public_bytes(encoding, fmt)
    loaded = load(data, provider=provider)
    assert type(loaded) is rsa.RSAPublicKey
    assert loaded.public_numbers() == pub.public_numbers()
    assert loaded.public_bytes(encoding, fmt) == data
    sig = _plain_key(2048).sign(MESSAGE, padding.PKCS1v15(), hashes.SHA256())
    loaded.verify(sig, MESSAGE, padding.PKCS1v15(), hashes.SHA256())
    assert_counted(provider, "rsa-2048-public", 1)


@pytest.mark.parametrize(
    "fmt", [_ser.PrivateFormat.PKCS8, _ser.PrivateFormat.TraditionalOpenSSL], ids=["PKCS8", "Trad"]
)
def test_encrypted_pem_round_trips_with_the_password_only(provider, fmt):
    key = _key(2048, provider)
    password = b"correct horse battery staple"
    data = key.private_bytes(_ser.Encoding.PEM, fmt, _ser.BestAvailableEncryption(password))
    assert b"ENCRYPTED" in data
    loaded = serialization.load_pem_private_key(data, password, provider=provider)
    assert type(loaded) is rsa.RSAPrivateKey
    assert loaded.private_numbers() == key.private_numbers()
    with pytest.raises(ValueError):
        serialization.load_pem_private_key(data, b"wrong password", provider=provider)
    with pytest.raises(TypeError):
        serialization.load_pem_private_key(data, None, provider=provider)
    loaded.sign(MESSAGE, padding.PKCS1v15(), hashes.SHA256())
    assert_counted(provider, "rsa-2048-private", 1)
