"""AESGCM's direct path (a lane on which software takes the op: OpenSSL called at once, one
append recorded): the same answers as `cryptography`, exact counts across folds, and a binding
that follows the provider in force (explicit, ``using`` blocks, the default) and its policy."""

from __future__ import annotations

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import aead as ref_aead
from direct_path_probe import ours_run
from doubles import TakeAllEngine

import cryptoffload
from cryptoffload import Policy, Provider
from cryptoffload.aead import AESCCM, AESGCM
from cryptoffload.core.counters import FOLD_AT

KEY = bytes(range(16))
NONCE = bytes(12)
REF = ref_aead.AESGCM(KEY)


def sw_cell_of(provider: Provider, alg: str) -> dict:
    return provider.counters.snapshot()["software"].get(alg, {})


def sw_cell(provider: Provider) -> dict:
    return provider.counters.snapshot()["software"].get("aes-128-gcm", {})


def test_software_only_counts_are_exact_across_many_folds(default_software):
    gcm = AESGCM(KEY)
    n = 3 * FOLD_AT + 17
    for i in range(n):
        data = bytes(i % 50)
        assert gcm.encrypt(NONCE, data, None) == REF.encrypt(NONCE, data, None)
    cell = sw_cell(default_software)
    assert cell["ops"] == n
    assert cell["bytes"] == sum(i % 50 for i in range(n))
    assert len(default_software.lane("aes-128-gcm").direct_q) <= FOLD_AT


def test_held_back_direct_ops_count_software_ops_and_engine_declines_exactly():
    engine = TakeAllEngine()
    provider = Provider([engine], Policy(min_size={"*": 1000}))
    gcm = AESGCM(KEY, provider=provider)
    n = FOLD_AT + 5
    for _ in range(n):
        sealed = gcm.encrypt(NONCE, b"x" * 10, None)
        assert gcm.decrypt(NONCE, sealed, None) == b"x" * 10
    assert gcm.encrypt(NONCE, b"L" * 2000, None) == REF.encrypt(NONCE, b"L" * 2000, None)
    snap = provider.counters.snapshot()
    assert snap["software"]["aes-128-gcm"] == {
        "ops": 2 * n,
        "bytes": 20 * n,
        "declined": {},
        "faults": 0,
    }
    assert snap["takeall"]["aes-128-gcm"] == {
        "ops": 1,
        "bytes": 2000,
        "declined": {"below-threshold": 2 * n},
        "faults": 0,
    }
    assert len(engine.seen) == 1


def test_binding_follows_using_blocks_and_the_default_provider(default_software):
    gcm = AESGCM(KEY)
    other = Provider([])
    engine = TakeAllEngine()
    offloading = Provider([engine], Policy(min_size={"*": 0}))
    gcm.encrypt(NONCE, b"a", None)
    with cryptoffload.using(other):
        gcm.encrypt(NONCE, b"bb", None)
        with cryptoffload.using(offloading):
            gcm.encrypt(NONCE, b"ccc", None)
        gcm.encrypt(NONCE, b"dddd", None)
    gcm.encrypt(NONCE, b"eeeee", None)
    cryptoffload.set_default_provider(other)
    gcm.encrypt(NONCE, b"ffffff", None)
    assert sw_cell(default_software)["bytes"] == 1 + 5
    assert sw_cell(other)["bytes"] == 2 + 4 + 6
    assert offloading.counters.snapshot()["takeall"]["aes-128-gcm"]["bytes"] == 3
    assert [len(op.data) for op in engine.seen] == [3]


def test_an_explicit_provider_wins_over_using_blocks_and_the_default(default_software):
    explicit = Provider([])
    gcm = AESGCM(KEY, provider=explicit)
    with cryptoffload.using(Provider([])):
        gcm.encrypt(NONCE, b"abc", None)
    gcm.encrypt(NONCE, b"de", None)
    assert sw_cell(explicit) == {"ops": 2, "bytes": 5, "declined": {}, "faults": 0}
    assert sw_cell(default_software) == {}


def test_one_object_follows_each_providers_policy_by_size():
    engine = TakeAllEngine()
    low = Provider([engine], Policy(min_size={"*": 0}))
    high = Provider([TakeAllEngine("other")], Policy(min_size={"*": 100}))
    gcm = AESGCM(KEY)
    with cryptoffload.using(low):
        gcm.encrypt(NONCE, b"x" * 50, None)
    with cryptoffload.using(high):
        gcm.encrypt(NONCE, b"x" * 50, None)
        gcm.encrypt(NONCE, b"x" * 150, None)
    assert low.counters.snapshot()["takeall"]["aes-128-gcm"]["ops"] == 1
    high_snap = high.counters.snapshot()
    assert high_snap["other"]["aes-128-gcm"]["ops"] == 1
    assert high_snap["other"]["aes-128-gcm"]["declined"] == {"below-threshold": 1}
    assert high_snap["software"]["aes-128-gcm"]["ops"] == 1


def test_a_failed_tag_on_the_direct_path_raises_invalid_tag_and_is_counted(default_software):
    gcm = AESGCM(KEY)
    sealed = bytearray(gcm.encrypt(NONCE, b"secret", None))
    sealed[0] ^= 1
    with pytest.raises(InvalidTag):
        gcm.decrypt(NONCE, bytes(sealed), None)
    with pytest.raises(InvalidTag):
        gcm.decrypt(NONCE, b"short", None)  # no room for a tag: refused, uncounted
    assert sw_cell(default_software)["ops"] == 2


def test_bad_input_on_the_direct_path_raises_the_same_class_as_cryptography(default_software):
    gcm = AESGCM(KEY)
    for args in ((b"", b"data", None), (NONCE, "text", None), (NONCE, b"data", 5)):
        with pytest.raises(Exception) as ours:
            gcm.encrypt(*args)
        with pytest.raises(Exception) as theirs:
            REF.encrypt(*args)
        assert type(ours.value) is type(theirs.value) or isinstance(ours.value, type(theirs.value))
    assert sw_cell(default_software) == {}


def test_a_short_tag_object_takes_the_op_path_and_matches_software(default_software):
    gcm = AESGCM(KEY, tag_length=12)
    sealed = gcm.encrypt(NONCE, b"data", None)
    assert sealed == REF.encrypt(NONCE, b"data", None)[:-4]
    assert gcm.decrypt(NONCE, sealed, None) == b"data"
    assert sw_cell(default_software)["ops"] == 2


def test_into_calls_on_the_direct_path_match_cryptography_and_count_exactly():
    engine = TakeAllEngine()
    provider = Provider([engine], Policy(min_size={"*": 1000}))
    gcm = AESGCM(KEY, provider=provider)
    data = b"p" * 100
    out = bytearray(116)
    assert gcm.encrypt_into(NONCE, data, b"a", out) == 116
    assert bytes(out) == REF.encrypt(NONCE, data, b"a")
    plain = bytearray(100)
    assert gcm.decrypt_into(NONCE, bytes(out), b"a", plain) == 100
    assert bytes(plain) == data
    out[3] ^= 1
    with pytest.raises(InvalidTag):
        gcm.decrypt_into(NONCE, bytes(out), b"a", plain)
    assert plain == bytearray(100)  # no plaintext released on a failed tag
    with pytest.raises(ValueError):
        gcm.encrypt_into(NONCE, data, b"a", bytearray(5))  # wrong size: refused, uncounted
    snap = provider.counters.snapshot()
    assert snap["software"]["aes-128-gcm"]["ops"] == 3
    assert snap["takeall"]["aes-128-gcm"]["declined"] == {"below-threshold": 3}
    assert engine.seen == []


@pytest.mark.skipif(
    not cryptoffload.core.directpath.COMPILED, reason="the compiled twin runs no Python by design"
)
def test_an_aesccm_op_on_the_direct_path_runs_no_python_of_ours(default_software):
    ccm = AESCCM(KEY)
    sealed = ccm.encrypt(NONCE, b"x" * 1400, None)
    assert ours_run(lambda: ccm.encrypt(NONCE, b"x" * 1400, None)) == []
    assert ours_run(lambda: ccm.decrypt(NONCE, sealed, None)) == []


def test_aesccm_on_the_direct_path_matches_cryptography_and_says_what_is_wrong(default_software):
    ccm, ref = AESCCM(KEY, tag_length=8), ref_aead.AESCCM(KEY, tag_length=8)
    for nonce in (bytes(7), bytes(12), bytes(13)):
        sealed = ccm.encrypt(nonce, b"data", b"aad")
        assert sealed == ref.encrypt(nonce, b"data", b"aad")
        assert ccm.decrypt(nonce, sealed, b"aad") == b"data"
        buf = bytearray(4 + 8)
        assert ccm.encrypt_into(nonce, b"data", b"aad", buf) == 12 and bytes(buf) == sealed
    with pytest.raises(ValueError, match="Data too long for nonce"):
        ccm.encrypt(bytes(13), bytes(1 << 16), None)  # 2 length bytes count up to 65535
    with pytest.raises(ValueError, match="CCM nonce must be 7 to 13 bytes, got 14"):
        ccm.encrypt(bytes(14), b"data", None)
    with pytest.raises(TypeError, match="data must be bytes-like"):
        ccm.encrypt(bytes(12), "text", None)
    with pytest.raises(InvalidTag):
        ccm.decrypt(bytes(12), bytes(12), None)
    assert sw_cell_of(default_software, "aes-128-ccm")["ops"] == 10
