"""PBKDF2, scrypt and Argon2: one op per derivation (``pbkdf2-hmac-sha1``, ``scrypt``,
``argon2id``), offered to engines, with `cryptography`'s answers, errors and messages."""

from __future__ import annotations

import pytest
from cryptography.exceptions import AlreadyFinalized, InvalidKey, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes as c_hashes
from cryptography.hazmat.primitives.kdf import argon2 as c_argon2
from cryptography.hazmat.primitives.kdf import pbkdf2 as c_pbkdf2
from doubles import FaultingEngine, TakeAllEngine

from cryptoffload import Policy, Provider, hashes, using
from cryptoffload.core import ops, validate
from cryptoffload.kdf import KeyDerivationFunction
from cryptoffload.kdf.argon2 import Argon2d, Argon2i, Argon2id
from cryptoffload.kdf.pbkdf2 import PBKDF2HMAC
from cryptoffload.kdf.scrypt import Scrypt

#: RFC 6070's PBKDF2-HMAC-SHA1 vectors (the 16777216-iteration one left out for time).
RFC6070 = [
    (b"password", b"salt", 1, 20, "0c60c80f961f0e71f3a9b524af6012062fe037a6"),
    (b"password", b"salt", 2, 20, "ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957"),
    (b"password", b"salt", 4096, 20, "4b007901b765489abead49d926f721d065a429c1"),
    (
        b"passwordPASSWORDpassword",
        b"saltSALTsaltSALTsaltSALTsaltSALTsalt",
        4096,
        25,
        "3d2eec4fe41c849b80c8d83662c0e44a8b291a964cf2f07038",
    ),
    (b"pass\0word", b"sa\0lt", 4096, 16, "56fa6aa75548099dcc37d7f03425e0c3"),
]
#: RFC 7914 section 12, the second vector.
SCRYPT = (
    "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9"
    "830dac727afb94a83ee6d8360cbdfa2cc0640"
)
#: RFC 9106 5.3: Argon2id, t=3, m=32 KiB, p=4, with secret and associated data.
ARGON2ID = "0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659"
PLANTED = bytes.fromhex("c0ffee5eed5ca1ab1ede7ec7ab1e0dd5")


def _rfc9106(cls=Argon2id, **kw):
    return cls(bytes([2]) * 16, 32, 3, 4, 32, ad=bytes([4]) * 12, secret=bytes([3]) * 8, **kw)


@pytest.mark.parametrize(("password", "salt", "iterations", "length", "expected"), RFC6070)
def test_pbkdf2_sha1_gives_rfc6070s_answers_as_one_counted_op(
    password, salt, iterations, length, expected
):
    p = Provider([])
    with using(p):
        key = PBKDF2HMAC(hashes.SHA1(), length, salt, iterations).derive(password)
    assert key.hex() == expected
    assert p.counters.snapshot() == {
        "software": {"pbkdf2-hmac-sha1": {"ops": 1, "bytes": 0, "declined": {}, "faults": 0}}
    }


def test_scrypt_gives_rfc7914s_answer_as_one_counted_op():
    p = Provider([])
    assert Scrypt(b"NaCl", 64, 1024, 8, 16, provider=p).derive(b"password").hex() == SCRYPT
    assert p.counters.snapshot()["software"]["scrypt"]["ops"] == 1


def test_argon2id_gives_rfc9106s_answer_with_secret_and_associated_data():
    p = Provider([])
    assert _rfc9106(provider=p).derive(bytes([1]) * 32).hex() == ARGON2ID
    assert p.counters.snapshot()["software"]["argon2id"] == {
        "ops": 1,
        "bytes": 0,
        "declined": {},
        "faults": 0,
    }


@pytest.mark.parametrize("cls", [Argon2d, Argon2i, Argon2id])
def test_each_argon2_variant_is_its_own_op_and_equals_cryptographys(cls):
    p = Provider([])
    ours = cls(b"saltsalt", 16, 1, 1, 8, provider=p).derive(b"pw")
    theirs = getattr(c_argon2, cls.__name__)(b"saltsalt", 16, 1, 1, 8).derive(b"pw")
    assert ours == theirs
    assert list(p.counters.snapshot()["software"]) == [cls.__name__.lower()]


@pytest.mark.parametrize(
    "make",
    [
        lambda p: PBKDF2HMAC(hashes.SHA256(), 32, b"salt", 10, provider=p),
        lambda p: Scrypt(b"salt", 32, 16, 2, 1, provider=p),
        lambda p: _rfc9106(provider=p),
    ],
    ids=["pbkdf2", "scrypt", "argon2id"],
)
def test_an_engine_that_claims_the_kdf_gets_the_op_and_a_fault_leaves_the_same_answer(make):
    expected = make(Provider([])).derive(b"password")
    taker = TakeAllEngine()
    p = Provider([taker], policy=Policy(min_size={"*": 0}))
    assert make(p).derive(b"password") == expected
    (op,) = taker.seen
    assert isinstance(op, ops.KdfOp) and op.size == 0
    assert p.counters.snapshot()["takeall"][op.alg]["ops"] == 1
    faulty = Provider([FaultingEngine()], policy=Policy(min_size={"*": 0}))
    assert make(faulty).derive(b"password") == expected
    counted = faulty.counters.snapshot()
    assert counted["faulty"][op.alg]["faults"] == 1
    assert counted["software"][op.alg]["ops"] == 1


def test_the_op_and_the_kdf_never_show_the_password_or_secret():
    taker = TakeAllEngine()
    p = Provider([taker], policy=Policy(min_size={"*": 0}))
    kdf = Argon2id(b"saltsalt", 16, 1, 1, 8, secret=PLANTED, provider=p)
    kdf.derive(PLANTED)
    text = repr(kdf) + repr(taker.seen[0]) + repr(p.counters.snapshot())
    assert PLANTED.hex()[:12] not in text and repr(PLANTED)[:12] not in text


def test_pbkdf2_matches_cryptography_for_every_hmac_hash():
    for algorithm in (c_hashes.SHA256(), c_hashes.SHA3_512(), c_hashes.BLAKE2s(32), c_hashes.SM3()):
        ours = PBKDF2HMAC(algorithm, 40, b"salt", 3, provider=Provider([])).derive(b"pw")
        assert ours == c_pbkdf2.PBKDF2HMAC(algorithm, 40, b"salt", 3).derive(b"pw")


def test_kdfs_are_used_once_and_verify_raises_invalid_key():
    kdf = PBKDF2HMAC(hashes.SHA1(), 20, b"salt", 10, provider=Provider([]))
    key = kdf.derive(b"password")
    with pytest.raises(AlreadyFinalized, match=r"Context was already finalized\."):
        kdf.derive(b"password")
    with pytest.raises(InvalidKey, match=r"Keys do not match\."):
        PBKDF2HMAC(hashes.SHA1(), 20, b"salt", 10).verify(b"other", key)
    buf = bytearray(19)
    with pytest.raises(ValueError, match="buffer must be 20 bytes"):
        PBKDF2HMAC(hashes.SHA1(), 20, b"salt", 10).derive_into(b"password", buf)
    assert isinstance(kdf, KeyDerivationFunction)


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: PBKDF2HMAC(hashes.SHA1(), 20, b"salt", 0), ValueError, "iterations must be"),
        (lambda: PBKDF2HMAC(hashes.SHA1(), 20, "salt", 1), TypeError, "bytes"),
        (lambda: PBKDF2HMAC(hashes.SHA1(), -1, b"salt", 1), OverflowError, "negative"),
        (lambda: PBKDF2HMAC(hashes.SHAKE128(16), 20, b"s", 1), UnsupportedAlgorithm, "PBKDF2"),
        (lambda: PBKDF2HMAC(hashes.SHA1, 20, b"s", 1), TypeError, "HashAlgorithm"),
        (lambda: Scrypt(b"NaCl", 64, 3, 8, 16), ValueError, "n must be greater than 1"),
        (lambda: Scrypt(b"NaCl", 64, 2, 0, 16), ValueError, "r must be greater"),
        (lambda: Scrypt(b"NaCl", 64, 2, 8, 0), ValueError, "p must be greater"),
        (lambda: Argon2id(b"short", 32, 1, 1, 8), ValueError, "salt must be at least 8 bytes"),
        (lambda: Argon2id(b"saltsalt", 3, 1, 1, 8), ValueError, "length must be greater"),
        (lambda: Argon2id(b"saltsalt", 32, 1, 2, 15), ValueError, r"memory_cost must be"),
        (lambda: Argon2id(b"saltsalt", 32, 1, 1, 8, ad="x"), TypeError, "bytes"),
        (lambda: Argon2id(b"saltsalt", 32, 2**32, 1, 8), OverflowError, "too big"),
    ],
)
def test_bad_kdf_arguments_raise_what_cryptography_raises(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_validation_above_the_engines_refuses_a_hand_built_kdf_op():
    good = dict(key=b"pw", salt=b"salt", length=16, params=(1,))
    validate.validate_op(ops.make("kdf", "pbkdf2-hmac-sha256", "derive", **good))
    with pytest.raises(ValueError, match="not a KDF"):
        validate.validate_op(ops.make("kdf", "pbkdf2-hmac-shake128", "derive", **good))
    with pytest.raises(ValueError, match="cost parameters"):
        validate.validate_op(ops.make("kdf", "scrypt", "derive", **good))
    with pytest.raises(TypeError, match="Argon2's only"):
        validate.validate_op(ops.make("kdf", "pbkdf2-hmac-sha256", "derive", secret=b"s", **good))


def test_argon2_phc_strings_round_trip_and_bad_ones_raise_invalid_key():
    kdf = Argon2id(b"0" * 8, 32, 2, 2, 64, provider=Provider([]))
    encoded = kdf.derive_phc_encoded(b"password")
    assert encoded == c_argon2.Argon2id(b"0" * 8, 32, 2, 2, 64).derive_phc_encoded(b"password")
    Argon2id.verify_phc_encoded(b"password", encoded)
    with pytest.raises(InvalidKey, match=r"Keys do not match\."):
        Argon2id.verify_phc_encoded(b"wrong", encoded)
    with pytest.raises(InvalidKey, match="did you mean to use Argon2id"):
        Argon2d.verify_phc_encoded(b"password", encoded)
    with pytest.raises(InvalidKey, match="Invalid base64 salt"):
        Argon2id.verify_phc_encoded(b"password", "$argon2id$v=19$m=32,t=1,p=1$!x$hash")
