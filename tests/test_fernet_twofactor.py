"""Fernet and HOTP/TOTP on cryptoffload's own AES-CBC and HMAC: `cryptography`'s answers and
errors, tokens that interoperate with `cryptography.fernet`, the work counted as the ops it is
made of (``aes-128-cbc``, ``hmac-sha256``, ``hmac-sha1``...)."""

from __future__ import annotations

import base64

import pytest
from cryptography import fernet as c_fernet
from cryptography.hazmat.primitives import hashes as c_hashes
from cryptography.hazmat.primitives.twofactor import InvalidToken as CInvalidToken
from doubles import FaultingEngine, TakeAllEngine

from cryptoffload import Policy, Provider, using
from cryptoffload.fernet import Fernet, InvalidToken, MultiFernet
from cryptoffload.hashes import MD5, SHA1, SHA256, SHA512
from cryptoffload.twofactor import InvalidToken as TwoFactorInvalidToken
from cryptoffload.twofactor.hotp import HOTP
from cryptoffload.twofactor.totp import TOTP

#: The Fernet spec's generate.json vector.
SPEC_KEY = "cw_0x689RpI-jtRR7oE8h_eQsKImvJapLeSbXpwF4e4="
SPEC_TOKEN = (
    b"gAAAAAAdwJ6wAAECAwQFBgcICQoLDA0ODy021cpGVWKZ_eEwCGM4BLLF_5CV9dOPmrhuVUPgJobwOz7JcbmrR64jV"
    b"mpU4IwqDA=="
)
SPEC_TIME = 499162800
#: RFC 4226 appendix D: HOTP-SHA1 of "12345678901234567890", counters 0 to 9.
RFC4226 = [b"755224", b"287082", b"359152", b"969429", b"338314"]
RFC4226 += [b"254676", b"287922", b"162583", b"399871", b"520489"]
#: RFC 6238 appendix B: (time, SHA-1, SHA-256, SHA-512) with 8 digits and 30-second steps.
RFC6238 = [
    (59, b"94287082", b"46119246", b"90693936"),
    (1111111109, b"07081804", b"68084774", b"25091201"),
    (1111111111, b"14050471", b"67062674", b"99943326"),
    (1234567890, b"89005924", b"91819424", b"93441116"),
    (2000000000, b"69279037", b"90698825", b"38618901"),
    (20000000000, b"65353130", b"77737706", b"47863826"),
]
SEEDS = {
    "sha1": b"12345678901234567890",
    "sha256": b"12345678901234567890123456789012",
    "sha512": b"1234567890" * 6 + b"1234",
}


def test_fernet_gives_the_spec_token_counted_as_one_cbc_and_one_hmac_op():
    p = Provider([])
    with using(p):
        token = Fernet(SPEC_KEY)._encrypt_from_parts(b"hello", SPEC_TIME, bytes(range(16)))
    assert token == SPEC_TOKEN
    counted = p.counters.snapshot()["software"]
    assert counted == {
        "aes-128-cbc": {"ops": 1, "bytes": 16, "declined": {}, "faults": 0},
        "hmac-sha256": {"ops": 1, "bytes": 41, "declined": {}, "faults": 0},
    }


def test_fernet_tokens_open_with_cryptographys_fernet_and_the_other_way_round():
    key = Fernet.generate_key()
    ours, theirs = Fernet(key, provider=Provider([])), c_fernet.Fernet(key)
    assert theirs.decrypt(ours.encrypt(b"made here")) == b"made here"
    assert ours.decrypt(theirs.encrypt(b"made there")) == b"made there"
    assert ours.decrypt(theirs.encrypt(b"").decode()) == b""
    assert InvalidToken is c_fernet.InvalidToken


def test_an_engine_that_claims_cbc_and_hmac_takes_fernets_work_and_a_fault_changes_nothing():
    key = Fernet.generate_key()
    token = c_fernet.Fernet(key).encrypt(b"message")
    taker = TakeAllEngine(algorithms={"aes-128-cbc", "hmac-sha256"})
    p = Provider([taker], policy=Policy(min_size={"*": 0}))
    assert Fernet(key, provider=p).decrypt(token) == b"message"
    assert sorted(op.alg for op in taker.seen) == ["aes-128-cbc", "hmac-sha256"]
    faulty = Provider([FaultingEngine()], policy=Policy(min_size={"*": 0}))
    assert Fernet(key, provider=faulty).decrypt(token) == b"message"
    assert faulty.counters.snapshot()["faulty"]["aes-128-cbc"]["faults"] == 1


@pytest.mark.parametrize(
    "token",
    [
        b"\x00",
        base64.urlsafe_b64encode(b"\x81" + bytes(60)),
        base64.urlsafe_b64encode(b"\x80" + bytes(5)),
        b"not base64 !!",
        SPEC_TOKEN[:-8] + b"AAAAAA==",
    ],
    ids=["short", "version", "timestamp", "base64", "tag"],
)
def test_bad_fernet_tokens_raise_invalid_token(token):
    with pytest.raises(InvalidToken):
        Fernet(SPEC_KEY, provider=Provider([])).decrypt(token)


def test_fernet_argument_errors_are_cryptographys():
    with pytest.raises(ValueError, match="32 url-safe base64-encoded bytes"):
        Fernet(base64.urlsafe_b64encode(bytes(31)))
    with pytest.raises(TypeError, match="data must be bytes"):
        Fernet(SPEC_KEY).encrypt("text")
    with pytest.raises(TypeError, match="token must be bytes or str"):
        Fernet(SPEC_KEY).decrypt(12)
    with pytest.raises(ValueError, match="non-None ttl"):
        Fernet(SPEC_KEY).decrypt_at_time(SPEC_TOKEN, None, 0)
    with pytest.raises(InvalidToken):
        Fernet(SPEC_KEY).decrypt_at_time(SPEC_TOKEN, 10, SPEC_TIME + 11)
    with pytest.raises(ValueError, match="at least one Fernet"):
        MultiFernet([])
    assert SPEC_KEY not in repr(Fernet(SPEC_KEY))


def test_multifernet_takes_any_iterable_of_fernets_and_refuses_anything_else():
    # cryptography 51.0.1: a generator is taken; an element that is not a Fernet is a TypeError
    # when the MultiFernet is made, not an AttributeError at its first use.
    old, new = Fernet(Fernet.generate_key()), Fernet(Fernet.generate_key())
    assert MultiFernet(f for f in [new, old]).decrypt(old.encrypt(b"m")) == b"m"
    with pytest.raises(TypeError, match="MultiFernet takes Fernet instances, got object"):
        MultiFernet([new, object()])


def test_multifernet_rotates_to_its_first_key_keeping_the_timestamp():
    old, new = Fernet(Fernet.generate_key()), Fernet(Fernet.generate_key())
    token = old.encrypt_at_time(b"secret", 1000)
    rotated = MultiFernet([new, old]).rotate(token)
    assert new.decrypt_at_time(rotated, 100, 1050) == b"secret"
    assert new.extract_timestamp(rotated) == 1000


@pytest.mark.parametrize("counter", range(10))
def test_hotp_gives_rfc4226s_values_as_one_hmac_sha1_op(counter):
    p = Provider([])
    hotp = HOTP(SEEDS["sha1"], 6, SHA1(), provider=p)
    assert hotp.generate(counter) == RFC4226[counter]
    hotp.verify(RFC4226[counter], counter)
    assert p.counters.snapshot()["software"]["hmac-sha1"] == {
        "ops": 2,
        "bytes": 16,
        "declined": {},
        "faults": 0,
    }


@pytest.mark.parametrize(("time", "sha1", "sha256", "sha512"), RFC6238)
def test_totp_gives_rfc6238s_values_for_each_hash(time, sha1, sha256, sha512):
    p = Provider([])
    for algorithm, expected in ((SHA1(), sha1), (SHA256(), sha256), (SHA512(), sha512)):
        totp = TOTP(SEEDS[algorithm.name], 8, algorithm, 30, provider=p)
        assert totp.generate(time) == expected
        totp.verify(expected, time)
    counted = p.counters.snapshot()["software"]
    assert {name: cell["ops"] for name, cell in counted.items()} == {
        "hmac-sha1": 2,
        "hmac-sha256": 2,
        "hmac-sha512": 2,
    }


def test_an_engine_that_claims_hmac_sha1_computes_the_hotp():
    taker = TakeAllEngine(algorithms={"hmac-sha1"})
    p = Provider([taker], policy=Policy(min_size={"*": 0}))
    assert HOTP(SEEDS["sha1"], 6, c_hashes.SHA1(), provider=p).generate(1) == RFC4226[1]
    assert [op.alg for op in taker.seen] == ["hmac-sha1"]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: HOTP(bytes(15), 6, SHA1()), ValueError, "at least 128 bits"),
        (lambda: HOTP(bytes(16), 5, SHA1()), ValueError, "between 6 and 8"),
        (lambda: HOTP(bytes(16), 6.0, SHA1()), TypeError, "integer type"),
        (lambda: HOTP(bytes(16), 6, MD5()), TypeError, "SHA1, SHA256 or SHA512"),
        (lambda: HOTP(bytes(16), 6, SHA1()).generate(2**64), ValueError, "between 0 and"),
        (lambda: HOTP(bytes(16), 6, SHA1()).generate("1"), TypeError, "integer type"),
        (lambda: TOTP(bytes(16), 6, SHA1(), 30).generate("1"), TypeError, "float type"),
        (
            lambda: HOTP(bytes(16), 6, SHA1()).verify(b"000000", 0),
            TwoFactorInvalidToken,
            "Supplied HOTP value does not match.",
        ),
    ],
)
def test_bad_one_time_password_input_raises_what_cryptography_raises(call, error, message):
    with pytest.raises(error, match=message):
        call()
    assert TwoFactorInvalidToken is CInvalidToken


def test_provisioning_uris_are_cryptographys():
    from cryptography.hazmat.primitives.twofactor.totp import TOTP as CTOTP

    ours = TOTP(SEEDS["sha1"], 8, SHA1(), 30).get_provisioning_uri("alice@example", "Issuer Co")
    theirs = CTOTP(SEEDS["sha1"], 8, c_hashes.SHA1(), 30).get_provisioning_uri(
        "alice@example", "Issuer Co"
    )
    assert ours == theirs
