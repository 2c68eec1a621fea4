"""The ciphers other than AES (Triple DES, Camellia, SM4, ChaCha20, Blowfish, CAST5, IDEA, SEED,
RC2, ARC4) run through the provider under their names, give `cryptography`'s answers on the
software and engine paths, and ChaCha20's counter limit is kept above the engines."""

from __future__ import annotations

import struct
import warnings

import pytest
from cryptography.hazmat.decrepit.ciphers import algorithms as decrepit
from cryptography.hazmat.decrepit.ciphers import modes as old_modes
from cryptography.hazmat.primitives.ciphers import Cipher as RefCipher
from cryptography.hazmat.primitives.ciphers import algorithms as ref_algorithms
from cryptography.hazmat.primitives.ciphers import modes as ref_modes
from cryptography.utils import CryptographyDeprecationWarning
from doubles import TakeAllEngine
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cryptoffload import Policy, Provider
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.core.names import CIPHER_FAMILIES, all_algorithms

#: One cryptography algorithm object per family, and the key length it is made with.
MAKERS = {
    "3des": lambda: decrepit.TripleDES(bytes(range(24))),
    "camellia": lambda: decrepit.Camellia(bytes(range(32))),
    "sm4": lambda: ref_algorithms.SM4(bytes(range(16))),
    "chacha20": lambda: ref_algorithms.ChaCha20(bytes(range(32)), struct.pack("<I", 5) + bytes(12)),
    "blowfish": lambda: decrepit.Blowfish(bytes(range(20))),
    "cast5": lambda: decrepit.CAST5(bytes(range(10))),
    "idea": lambda: decrepit.IDEA(bytes(range(16))),
    "seed": lambda: decrepit.SEED(bytes(range(16))),
    "rc2": lambda: decrepit.RC2(bytes(range(16))),
    "arc4": lambda: decrepit.ARC4(bytes(range(16))),
}
MODES = {
    "ecb": lambda block: ref_modes.ECB(),
    "cbc": lambda block: ref_modes.CBC(bytes(range(100, 100 + block))),
    "ctr": lambda block: ref_modes.CTR(bytes(range(100, 100 + block))),
    "cfb": lambda block: old_modes.CFB(bytes(range(100, 100 + block))),
    "cfb8": lambda block: old_modes.CFB8(bytes(range(100, 100 + block))),
    "ofb": lambda block: old_modes.OFB(bytes(range(100, 100 + block))),
    "gcm": lambda block: ref_modes.GCM(bytes(12)),
}
CASES = [
    (family, mode) for family, spec in CIPHER_FAMILIES.items() for mode in (spec.modes or (None,))
]


def reference(family: str, mode: str | None, data: bytes, encrypt: bool) -> bytes:
    algorithm = MAKERS[family]()
    block = CIPHER_FAMILIES[family].block
    ctx = RefCipher(algorithm, MODES[mode](block) if mode else None)
    ctx = ctx.encryptor() if encrypt else ctx.decryptor()
    return ctx.update(data) + ctx.finalize()


def ours(
    family: str, mode: str | None, provider: Provider, encrypt: bool = True
) -> tuple[Cipher, object]:
    block = CIPHER_FAMILIES[family].block
    cipher = Cipher(MAKERS[family](), MODES[mode](block) if mode else None, provider=provider)
    return cipher, cipher.encryptor() if encrypt else cipher.decryptor()


def test_every_family_and_mode_is_a_name_the_software_engine_answers_for():
    names = set(all_algorithms())
    for family, spec in CIPHER_FAMILIES.items():
        assert set(spec.names(family)) <= names
    assert {"camellia-128-cbc", "camellia-256-ofb", "sm4-ctr", "chacha20", "arc4"} <= names


@pytest.mark.parametrize(("family", "mode"), CASES)
@pytest.mark.parametrize("engine", [False, True], ids=["software", "engine"])
def test_each_cipher_matches_cryptography_and_is_counted_under_its_name(family, mode, engine):
    block = CIPHER_FAMILIES[family].block
    data = bytes(range(256)) * 2 if mode not in ("ecb", "cbc") else bytes(range(8 * block))
    taker = TakeAllEngine()
    provider = Provider([taker] if engine else ["software"])
    cipher, ctx = ours(family, mode, provider)
    got = ctx.update(data[:37]) + ctx.update(data[37:]) + ctx.finalize()
    assert got == reference(family, mode, data, True)
    if mode != "gcm":
        _, dec = ours(family, mode, provider, encrypt=False)
        assert dec.update(got) + dec.finalize() == data
    alg = cipher._alg
    snapshot = provider.counters.snapshot()
    streamed = family == "arc4" or mode == "gcm"  # no engine carries these states across calls
    if engine and not streamed:
        assert snapshot["takeall"][alg]["ops"] >= 1
        assert taker.seen and {op.alg for op in taker.seen} == {alg}
    elif engine:
        assert taker.seen == []
        contexts = 1 if mode == "gcm" else 2  # an encryptor, and for ARC4 a decryptor
        assert snapshot["takeall"][alg]["declined"] == {"streaming": contexts}
        assert snapshot["software"][alg]["ops"] == contexts
    else:
        assert snapshot["software"][alg]["ops"] >= 1


@settings(max_examples=120, deadline=None)
@given(
    chunks=st.lists(st.integers(0, 200), min_size=1, max_size=8),
    floor=st.sampled_from([0, 1, 64, 65, 1 << 20]),
    counter=st.sampled_from([0, 1, 2**32 - 20]),
)
def test_chacha20_streams_across_partial_blocks_on_any_path(chunks, floor, counter):
    """Updates of any length, each to the engine or held back by size, give one keystream."""
    assume(sum(chunks) <= (2**32 - counter) * 64)  # within the nonce's blocks (past: ValueError)
    key, nonce = bytes(range(32)), struct.pack("<I", counter) + bytes(range(12))
    data = bytes((5 * i + 1) % 256 for i in range(sum(chunks)))
    want = RefCipher(ref_algorithms.ChaCha20(key, nonce), None).encryptor().update(data)
    provider = Provider([TakeAllEngine()], policy=Policy(min_size={"*": floor}))
    ctx = Cipher(algorithms.ChaCha20(key, nonce), None, provider=provider).encryptor()
    got, at = b"", 0
    for n in chunks:
        got += ctx.update(data[at : at + n])
        at += n
    assert got + ctx.finalize() == want


@pytest.mark.parametrize("engine", [False, True], ids=["software", "engine"])
def test_chacha20_refuses_to_run_past_its_32_bit_block_counter(engine):
    taker = TakeAllEngine()
    provider = Provider([taker] if engine else ["software"])
    last = struct.pack("<I", 2**32 - 1) + bytes(12)
    ctx = Cipher(algorithms.ChaCha20(bytes(32), last), None, provider=provider).encryptor()
    with pytest.raises(ValueError):
        ctx.update(bytes(65))
    assert len(ctx.update(bytes(64))) == 64  # exactly one block is left
    with pytest.raises(ValueError):
        ctx.update(b"\x00")
    ctx.reset_nonce(bytes(16))  # a fresh counter restores the budget
    assert len(ctx.update(bytes(128))) == 128
    if engine:
        assert all(len(op.data) <= 128 for op in taker.seen)


def test_chacha20_op_past_the_counter_is_refused_above_the_engines():
    from cryptoffload.core.ops import CipherOp

    taker = TakeAllEngine()
    provider = Provider([taker])
    last = struct.pack("<I", 2**32 - 1) + bytes(12)
    op = CipherOp("chacha20", "encrypt", bytes(32), last, bytes(65))
    with pytest.raises(ValueError, match="ChaCha20 counter would overflow"):
        provider.run(op)
    assert taker.seen == []


def test_a_key_outside_a_variable_range_says_the_range():
    from cryptoffload.core.ops import CipherOp

    op = CipherOp("blowfish-cbc", "encrypt", bytes(3), bytes(8), bytes(8))
    with pytest.raises(ValueError, match="blowfish-cbc key must be between 4 and 56 bytes, got 3"):
        Provider(["software"]).run(op)


def test_moved_algorithms_and_modes_warn_as_cryptography_does_and_the_rest_do_not():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert algorithms.SM4 is ref_algorithms.SM4
        assert algorithms.ChaCha20 is ref_algorithms.ChaCha20
    for name in ("TripleDES", "Camellia", "ARC4"):
        with pytest.warns(CryptographyDeprecationWarning, match="decrepit"):
            assert getattr(algorithms, name) is getattr(decrepit, name)
    with pytest.raises(AttributeError):
        algorithms.Rot13  # noqa: B018
    from cryptoffload.ciphers import modes as mirrored_modes

    for name in ("CFB", "CFB8", "OFB"):
        with pytest.warns(CryptographyDeprecationWarning, match="decrepit"):
            assert getattr(mirrored_modes, name) is getattr(old_modes, name)


@pytest.mark.parametrize(
    "alg",
    [
        name
        for family, spec in CIPHER_FAMILIES.items()
        for name in spec.names(family)
        if not name.endswith("-gcm")  # SM4-GCM runs only as a stream through Cipher
    ]
    + ["poly1305"],
)
def test_verify_has_a_workload_for_each_cipher_and_an_engine_gives_softwares_answers(alg):
    from cryptoffload.tools import workload

    items = workload.build(alg)
    assert items
    software, engine = Provider(["software"]), Provider([TakeAllEngine()])
    for item in items:
        assert item.run(engine) == item.run(software), item.label
    assert engine.counters.snapshot()["takeall"][alg]["ops"] == len(items)


@pytest.mark.parametrize(
    "alg", ["chacha20-poly1305", "aes-128-gcm", "sm4-gcm", "aes-192-xts", "rot13-cbc"]
)
def test_a_cipher_op_under_a_name_that_is_no_cipher_is_refused_above_the_engines(alg):
    from cryptoffload.core.ops import CipherOp

    taker = TakeAllEngine()
    op = CipherOp(alg, "encrypt", bytes(32), bytes(16), bytes(64))
    with pytest.raises(ValueError, match="is not a cipher algorithm"):
        Provider([taker]).run(op)
    assert taker.seen == []


def test_an_sm4_gcm_aead_op_takes_a_16_byte_key_only():
    from cryptoffload.core.ops import AeadOp

    op = AeadOp("sm4-gcm", "encrypt", bytes(32), bytes(12), b"data", None, 16)
    with pytest.raises(ValueError, match="sm4-gcm key must be 16 bytes, got 32"):
        Provider(["software"]).run(op)
    good = AeadOp("sm4-gcm", "encrypt", bytes(16), bytes(12), b"data", None, 16)
    ctx = RefCipher(ref_algorithms.SM4(bytes(16)), ref_modes.GCM(bytes(12))).encryptor()
    want = ctx.update(b"data") + ctx.finalize() + ctx.tag
    assert Provider([TakeAllEngine()]).run(good) == want


@pytest.mark.parametrize(
    "make",
    [
        lambda key: __import__("cryptoffload.core.ops").ops.CipherOp(
            "aes-128-cbc", "encrypt", key, bytes(16), bytes(16)
        ),
        lambda key: __import__("cryptoffload.core.ops").ops.AeadOp(
            "aes-128-gcm", "encrypt", key, bytes(12), b"x", None, 16
        ),
        lambda key: __import__("cryptoffload.core.ops").ops.MacOp("cmac-aes-128", "mac", key, b"x"),
    ],
    ids=["cipher", "aead", "cmac"],
)
def test_an_aes_op_whose_key_is_not_the_size_its_name_says_is_refused(make):
    """An aes-128 op with a 32-byte key would run AES-256 and be counted as AES-128."""
    taker = TakeAllEngine()
    with pytest.raises(ValueError, match="takes a 16-byte key, got 32"):
        Provider([taker]).run(make(bytes(32)))
    assert taker.seen == []
    Provider([taker], policy=Policy(min_size={"*": 0})).run(make(bytes(16)))
    assert len(taker.seen) == 1
