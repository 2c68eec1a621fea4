"""AES key wrap: RFC 3394 (``aes-128-keywrap``...) and RFC 5649 (``aes-128-keywrap-pad``...),
one op per call, `cryptography`'s answers and errors (InvalidUnwrap is an answer, not a fault);
and ``constant_time.bytes_eq``."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import keywrap as c_keywrap
from doubles import FaultingEngine, TakeAllEngine

from cryptoffload import Policy, Provider, constant_time, keywrap
from cryptoffload.core import ops, validate

H = bytes.fromhex
#: (wrapping key, key to wrap, wrapped): RFC 3394 4.1 and 4.6.
RFC3394 = [
    (
        H("000102030405060708090A0B0C0D0E0F"),
        H("00112233445566778899AABBCCDDEEFF"),
        H("1FA68B0A8112B447AEF34BD8FB5A7B829D3E862371D2CFE5"),
    ),
    (
        H("000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F"),
        H("00112233445566778899AABBCCDDEEFF000102030405060708090A0B0C0D0E0F"),
        H("28C9F404C4B810F4CBCCB35CFB87F8263F5786E2D80ED326CBC7F0E71A99F43BFB988B9B7A02DD21"),
    ),
]
#: RFC 5649 section 6, both examples (a 192-bit wrapping key).
KEK = H("5840df6e29b02af1ab493b705bf16ea1ae8338f4dcc176a8")
RFC5649 = [
    (
        KEK,
        H("c37b7e6492584340bed12207808941155068f738"),
        H("138bdeaa9b8fa7fc61f97742e72248ee5ae6ae5360d1ae6a5f54f373fa543b6a"),
    ),
    (KEK, H("466f7250617369"), H("afbeb0f07dfbf5419200f2ccb50bb24f")),
]


@pytest.mark.parametrize(("kek", "key", "wrapped"), RFC3394)
def test_rfc3394_vectors_wrap_and_unwrap_as_one_counted_op_each(kek, key, wrapped):
    p = Provider([])
    assert keywrap.aes_key_wrap(kek, key, provider=p) == wrapped
    assert keywrap.aes_key_unwrap(kek, wrapped, provider=p) == key
    alg = f"aes-{len(kek) * 8}-keywrap"
    assert p.counters.snapshot()["software"] == {
        alg: {"ops": 2, "bytes": 2 * len(key), "declined": {}, "faults": 0}
    }


@pytest.mark.parametrize(("kek", "key", "wrapped"), RFC5649)
def test_rfc5649_vectors_wrap_and_unwrap_with_padding(kek, key, wrapped):
    p = Provider([])
    assert keywrap.aes_key_wrap_with_padding(kek, key, provider=p) == wrapped
    assert keywrap.aes_key_unwrap_with_padding(kek, wrapped, provider=p) == key
    counted = p.counters.snapshot()["software"]["aes-192-keywrap-pad"]
    assert counted["ops"] == 2
    assert counted["bytes"] == len(key) + len(wrapped) - 8


def test_an_engine_that_claims_key_wrap_gets_it_and_a_fault_leaves_the_same_answer():
    kek, key, wrapped = RFC3394[0]
    taker = TakeAllEngine(algorithms={"aes-128-keywrap"})
    p = Provider([taker], policy=Policy(min_size={"*": 0}))
    assert keywrap.aes_key_wrap(kek, key, provider=p) == wrapped
    assert [(op.family, op.kind, op.alg) for op in taker.seen] == [
        ("keywrap", "wrap", "aes-128-keywrap")
    ]
    assert p.counters.snapshot()["takeall"]["aes-128-keywrap"]["ops"] == 1
    faulty = Provider([FaultingEngine()], policy=Policy(min_size={"*": 0}))
    assert keywrap.aes_key_unwrap(kek, wrapped, provider=faulty) == key
    counted = faulty.counters.snapshot()
    assert counted["faulty"]["aes-128-keywrap"]["faults"] == 1
    assert counted["software"]["aes-128-keywrap"]["ops"] == 1


def test_a_failed_unwrap_is_the_engines_answer_not_a_fault():
    kek, _, wrapped = RFC3394[0]
    taker = TakeAllEngine()
    p = Provider([taker], policy=Policy(min_size={"*": 0}))
    altered = wrapped[:-1] + bytes([wrapped[-1] ^ 1])
    with pytest.raises(keywrap.InvalidUnwrap):
        keywrap.aes_key_unwrap(kek, altered, provider=p)
    assert keywrap.InvalidUnwrap is c_keywrap.InvalidUnwrap
    counted = p.counters.snapshot()
    assert counted["takeall"]["aes-128-keywrap"] == {
        "ops": 1,
        "bytes": 16,
        "declined": {},
        "faults": 0,
    }
    assert not counted.get("software")


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: keywrap.aes_key_wrap(b"badkey", bytes(16)), ValueError, "valid AES key length"),
        (lambda: keywrap.aes_key_wrap(bytes(16), bytes(15)), ValueError, "at least 16 bytes"),
        (lambda: keywrap.aes_key_wrap(bytes(16), bytes(23)), ValueError, "multiple of 8"),
        (lambda: keywrap.aes_key_unwrap(bytes(16), bytes(16)), keywrap.InvalidUnwrap, "24"),
        (lambda: keywrap.aes_key_unwrap(b"badkey", bytes(27)), keywrap.InvalidUnwrap, "of 8"),
        (lambda: keywrap.aes_key_unwrap(b"badkey", bytes(24)), ValueError, "AES key length"),
        (lambda: keywrap.aes_key_wrap_with_padding(bytes(16), b""), ValueError, "between 1"),
        (
            lambda: keywrap.aes_key_unwrap_with_padding(bytes(16), bytes(15)),
            keywrap.InvalidUnwrap,
            "Must be at least 16 bytes",
        ),
        (lambda: keywrap.aes_key_wrap(bytes(16), "sixteen chars..."), TypeError, "bytes-like"),
    ],
)
def test_bad_key_wrap_input_raises_what_cryptography_raises(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_every_bad_input_raises_the_same_class_as_cryptography():
    for wrap, theirs in (
        (keywrap.aes_key_wrap, c_keywrap.aes_key_wrap),
        (keywrap.aes_key_unwrap, c_keywrap.aes_key_unwrap),
        (keywrap.aes_key_wrap_with_padding, c_keywrap.aes_key_wrap_with_padding),
        (keywrap.aes_key_unwrap_with_padding, c_keywrap.aes_key_unwrap_with_padding),
    ):
        for key_len in (15, 16):
            for n in (0, 1, 8, 15, 16, 17, 24):
                outcomes = []
                for fn in (wrap, theirs):
                    try:
                        outcomes.append(fn(bytes(key_len), bytes(n)))
                    except Exception as exc:
                        outcomes.append((type(exc), str(exc)))
                assert outcomes[0] == outcomes[1], (wrap.__name__, key_len, n)


def test_a_hand_built_op_with_a_key_of_another_size_than_its_name_is_refused():
    op = ops.KeywrapOp("aes-256-keywrap", "wrap", bytes(16), bytes(16))
    with pytest.raises(ValueError, match="takes a 32-byte key"):
        validate.validate_op(op)


def test_bytes_eq_compares_bytes_only():
    assert constant_time.bytes_eq(b"abc", b"abc")
    assert not constant_time.bytes_eq(b"abc", b"abd")
    with pytest.raises(TypeError, match=r"a and b must be bytes\."):
        constant_time.bytes_eq("abc", b"abc")
