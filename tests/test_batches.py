"""Batches: encrypt_many/decrypt_many/digest_many give each item's answer in order, on every path.

An engine with ``run_batch`` gets the whole batch in one call; items it declines or fails go on
to software one by one and are counted as ``run`` counts them; a bad item does not stop the
others; a policy that requires offload makes the items no engine took OffloadRequired.
"""

from __future__ import annotations

import hashlib
import hmac as std_hmac

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM as CAESGCM
from doubles import BatchEngine, TakeAllEngine

from cryptoffload import OffloadRequired, Policy, Provider, hashes, hmac
from cryptoffload.aead import AESCCM, AESGCM

KEY = bytes(range(16))
ALL = Policy(min_size={"*": 0})


def _items(n: int) -> list[tuple[bytes, bytes, bytes | None]]:
    return [
        (i.to_bytes(12, "big"), bytes([i]) * (i * 7), b"aad" * (i % 3) or None) for i in range(n)
    ]


PATHS = {
    "software": lambda: Provider([]),
    "engine, one by one": lambda: Provider([TakeAllEngine()], policy=ALL),
    "engine, batches": lambda: Provider([BatchEngine()], policy=ALL),
    "batches with declines and faults": lambda: Provider(
        [BatchEngine(decline_every=3, fault_every=4)], policy=ALL
    ),
}


@pytest.fixture(params=list(PATHS))
def provider(request: pytest.FixtureRequest) -> Provider:
    return PATHS[request.param]()


def test_encrypt_many_and_decrypt_many_give_cryptographys_answers_in_order(provider):
    gcm = AESGCM(KEY, provider=provider)
    items = _items(20)
    sealed = gcm.encrypt_many(items)
    assert sealed == [CAESGCM(KEY).encrypt(*item) for item in items]
    opened = gcm.decrypt_many([(n, s, a) for (n, _, a), s in zip(items, sealed, strict=True)])
    assert opened == [data for _, data, _ in items]
    ops = sum(
        cell.get("aes-128-gcm", {}).get("ops", 0) for cell in provider.counters.snapshot().values()
    )
    assert ops == 40


def test_a_bad_item_is_its_own_answer_and_the_others_go_through(provider):
    gcm = AESGCM(KEY, provider=provider)
    good = _items(3)
    sealed = gcm.encrypt_many(good)
    altered = bytearray(sealed[1])
    altered[0] ^= 1
    answers = gcm.decrypt_many(
        [
            (good[0][0], sealed[0], good[0][2]),
            (good[1][0], bytes(altered), good[1][2]),
            (b"short", sealed[2], good[2][2]),  # a 5-byte nonce: invalid
            (good[2][0], sealed[2], good[2][2]),
        ]
    )
    assert answers[0] == good[0][1]
    assert isinstance(answers[1], InvalidTag)
    assert isinstance(answers[2], ValueError) and "nonce" in str(answers[2])
    assert answers[3] == good[2][1]


def test_batches_reach_a_batch_engine_in_one_call_and_its_declines_fall_back_counted():
    engine = BatchEngine(decline_every=3, fault_every=4)
    p = Provider([engine], policy=ALL)
    AESCCM(KEY, provider=p).encrypt_many([(bytes(13), b"x" * i, None) for i in range(12)])
    assert engine.batches == [12]
    cells = p.counters.snapshot()
    assert cells["batcher"]["aes-128-ccm"]["declined"] == {"busy": 4}  # items 3, 6, 9, 12
    assert cells["batcher"]["aes-128-ccm"]["faults"] == 2  # items 4, 8
    assert cells["batcher"]["aes-128-ccm"]["ops"] == 6
    assert cells["software"]["aes-128-ccm"]["ops"] == 6


def test_items_no_engine_took_raise_offload_required_when_the_policy_requires_it():
    engine = BatchEngine(decline_every=2)
    p = Provider([engine], policy=Policy(min_size={"*": 0}, require=["aes-128-gcm"]))
    answers = AESGCM(KEY, provider=p).encrypt_many(_items(4))
    assert [isinstance(a, OffloadRequired) for a in answers] == [False, True, False, True]


def test_digest_many_and_hmac_digest_many_match_hashlib(provider):
    messages = [bytes([i]) * (i * 13) for i in range(10)]
    assert hashes.digest_many(messages, hashes.SHA256(), provider=provider) == [
        hashlib.sha256(m).digest() for m in messages
    ]
    tags = hmac.digest_many(KEY, messages, hashes.SHA384(), provider=provider)
    assert tags == [std_hmac.digest(KEY, m, "sha384") for m in messages]
    bad = hashes.digest_many([b"ok", 5], hashes.SHA256(), provider=provider)
    assert bad[0] == hashlib.sha256(b"ok").digest() and isinstance(bad[1], TypeError)


@pytest.mark.parametrize("part", ["t2080", "imx7d"])
def test_a_failed_tag_in_a_batch_is_the_engines_answer_not_a_fault(part):
    """The ring checks every tag: a bad one is that item's InvalidTag, counted as the engine's
    op (no fault, no software rerun), beside the good items."""
    provider = Provider([f"caam:model={part}"], policy=ALL)
    gcm = AESGCM(KEY, provider=provider)
    items = _items(4)
    sealed = gcm.encrypt_many(items)
    altered = bytearray(sealed[2])
    altered[-1] ^= 1
    sealed[2] = bytes(altered)
    answers = gcm.decrypt_many([(n, s, a) for (n, _, a), s in zip(items, sealed, strict=True)])
    assert isinstance(answers[2], InvalidTag)
    assert [a for i, a in enumerate(answers) if i != 2] == [
        d for i, (_, d, _) in enumerate(items) if i != 2
    ]
    cells = provider.counters.snapshot()
    engine = cells[provider.engines[0].name]["aes-128-gcm"]
    assert (engine["ops"], engine["faults"], engine["declined"]) == (8, 0, {})
    assert cells.get("software", {}).get("aes-128-gcm", {}).get("ops", 0) == 0
    provider.close()


# -- the batch's shape (issue 22.14): checked once, before any work; the caller's mistake raises --

SHA256 = hashes.SHA256()


@pytest.mark.parametrize("messages", [b"ab", "ab", bytearray(b"ab"), {b"a": b"b"}, 7])
def test_digest_many_of_one_bytes_object_or_a_non_iterable_raises_typeerror(provider, messages):
    with pytest.raises(TypeError, match=r"iterable .* each a bytes-like message; got"):
        hashes.digest_many(messages, SHA256, provider=provider)
    with pytest.raises(TypeError, match=r"iterable .* each a bytes-like message; got"):
        hmac.digest_many(b"key", messages, SHA256, provider=provider)


def test_digest_many_keeps_a_non_bytes_message_as_its_own_answer(provider):
    answers = hashes.digest_many([b"a", 3, b"b"], SHA256, provider=provider)
    assert answers[0] == hashlib.sha256(b"a").digest()
    assert isinstance(answers[1], TypeError)
    assert answers[2] == hashlib.sha256(b"b").digest()


@pytest.mark.parametrize("cls,nonce", [(AESGCM, bytes(12)), (AESCCM, bytes(13))])
@pytest.mark.parametrize("kind", ["encrypt_many", "decrypt_many"])
def test_an_aead_batch_item_not_a_3_tuple_raises_typeerror_naming_index_and_shape(
    provider, cls, nonce, kind
):
    many = getattr(cls(KEY, provider=provider), kind)
    for bad, got in [((nonce, b"x"), "a 2-tuple"), (b"abc", "bytes"), (None, "NoneType")]:
        with pytest.raises(TypeError) as info:
            many([(nonce, b"x" * 32, None), bad])
        message = str(info.value)
        assert f"{kind}: item 1 must be a (nonce, data, associated_data) tuple, got {got}" in (
            message
        )
        assert "_AeadBase" not in message


@pytest.mark.parametrize("batch", [{1: 2}, b"abc", "abc", 5, None])
def test_an_aead_batch_that_is_a_dict_bytes_or_no_iterable_raises_typeerror(provider, batch):
    gcm = AESGCM(KEY, provider=provider)
    with pytest.raises(TypeError, match=r"encrypt_many takes an iterable .* each a \(nonce"):
        gcm.encrypt_many(batch)
    with pytest.raises(TypeError, match=r"decrypt_many takes an iterable .* each a \(nonce"):
        gcm.decrypt_many(batch)


def test_an_aead_batch_with_a_bad_shape_does_no_work(provider):
    gcm = AESGCM(KEY, provider=provider)
    with pytest.raises(TypeError):
        gcm.encrypt_many([(bytes(12), b"x" * 64, None), (bytes(12), b"y")])
    cells = provider.counters.snapshot()
    assert all(cell.get("aes-128-gcm", {}).get("ops", 0) == 0 for cell in cells.values())


def test_aead_batch_items_given_as_lists_and_from_a_generator_still_work(provider):
    gcm = AESGCM(KEY, provider=provider)
    items = _items(4)
    sealed = gcm.encrypt_many(list(item) for item in items)
    assert sealed == [CAESGCM(KEY).encrypt(*item) for item in items]


def test_aessiv_batch_item_not_a_2_tuple_raises_typeerror_naming_index_and_shape(provider):
    from cryptoffload.aead import AESSIV

    siv = AESSIV(bytes(32), provider=provider)
    with pytest.raises(TypeError, match=r"item 0 must be a \(data, associated_data\) tuple"):
        siv.encrypt_many([(b"x",)])


def test_digest_many_given_a_provider_that_is_not_one_raises_typeerror():
    wrong = "provider must be a cryptoffload Provider or None, got str"
    with pytest.raises(TypeError, match=wrong):
        hashes.digest_many([b"a"], SHA256, provider="software")
    with pytest.raises(TypeError, match=wrong):
        hmac.digest_many(b"key", [b"a"], SHA256, provider="software")
