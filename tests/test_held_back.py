"""Ops the policy keeps from every engine run in software on the primitive's own OpenSSL object
(no Op, no per-op set-up), give the same answers, and are counted as software's ops and each
engine's decline, exactly as the Op path counts them; a chained context moves between the two
paths mid-stream without losing its place."""

from __future__ import annotations

import hashlib
import hmac as std_hmac

import pytest
from cryptography.hazmat.decrepit.ciphers import modes as old_modes
from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives.ciphers import Cipher as RefCipher
from cryptography.hazmat.primitives.ciphers import aead as ref_aead
from cryptography.hazmat.primitives.ciphers import algorithms as ref_algorithms
from cryptography.hazmat.primitives.ciphers import modes as ref_modes
from doubles import TakeAllEngine
from hypothesis import given, settings
from hypothesis import strategies as st

from cryptoffload import Policy, Provider, hashes, hmac, modes
from cryptoffload.aead import AESCCM, AESGCM
from cryptoffload.ciphers import Cipher, algorithms

KEY = bytes(range(16))
IV = bytes(range(16, 32))
MODES = {
    "ecb": (modes.ECB, ref_modes.ECB),
    "cbc": (modes.CBC, ref_modes.CBC),
    "ctr": (modes.CTR, ref_modes.CTR),
    "cfb": (modes.CFB, old_modes.CFB),
    "ofb": (modes.OFB, old_modes.OFB),
    "cfb8": (modes.CFB8, old_modes.CFB8),
}


def provider_with_floor(floor: int, ceiling: int | None = None) -> tuple[Provider, TakeAllEngine]:
    engine = TakeAllEngine()
    policy = Policy(min_size={"*": floor}, max_size={"*": ceiling} if ceiling else {})
    return Provider([engine], policy=policy), engine


def cells(provider: Provider, alg: str) -> tuple[dict, dict]:
    snap = provider.counters.snapshot()
    return snap.get("takeall", {}).get(alg, {}), snap.get("software", {}).get(alg, {})


def test_a_held_back_aead_op_is_softwares_and_each_engines_decline():
    provider, engine = provider_with_floor(1000)
    gcm = AESGCM(KEY, provider=provider)
    small, large = b"s" * 100, b"L" * 2000
    ref = ref_aead.AESGCM(KEY)
    sealed = gcm.encrypt(IV[:12], small, b"aad")
    assert sealed == ref.encrypt(IV[:12], small, b"aad")
    assert gcm.decrypt(IV[:12], sealed, b"aad") == small
    assert gcm.encrypt(IV[:12], large, None) == ref.encrypt(IV[:12], large, None)
    assert [op.kind for op in engine.seen] == ["encrypt"]  # only the large one reached it
    engine_cell, software_cell = cells(provider, "aes-128-gcm")
    assert engine_cell == {"ops": 1, "bytes": 2000, "declined": {"below-threshold": 2}, "faults": 0}
    assert (software_cell["ops"], software_cell["bytes"]) == (2, 200)


def test_too_large_for_every_engine_is_held_back_with_that_reason():
    provider, engine = provider_with_floor(0, ceiling=64)
    assert AESCCM(KEY, provider=provider).encrypt(IV[:13], b"x" * 100, None) == ref_aead.AESCCM(
        KEY
    ).encrypt(IV[:13], b"x" * 100, None)
    assert engine.seen == []
    assert cells(provider, "aes-128-ccm")[0]["declined"] == {"too-large": 1}


def test_held_back_digests_and_macs_match_hashlib_and_count_declines():
    provider, engine = provider_with_floor(512)
    assert (
        hashes.digest(b"m" * 100, hashes.SHA256(), provider=provider)
        == hashlib.sha256(b"m" * 100).digest()
    )
    mac = hmac.HMAC(KEY, hashes.SHA256(), provider=provider)
    mac.update(b"m" * 100)
    assert mac.finalize() == std_hmac.digest(KEY, b"m" * 100, "sha256")
    assert engine.seen == []
    assert cells(provider, "sha256")[0]["declined"] == {"below-threshold": 1}
    assert cells(provider, "hmac-sha256")[0]["declined"] == {"below-threshold": 1}
    assert cells(provider, "hmac-sha256")[1]["ops"] == 1


def test_held_back_ops_counted_before_a_snapshot_whatever_the_fold_order():
    provider, _ = provider_with_floor(1 << 20)
    gcm = AESGCM(KEY, provider=provider)
    for _ in range(5000):  # more than one fold of the pending record
        gcm.encrypt(IV[:12], b"x", None)
    engine_cell, software_cell = cells(provider, "aes-128-gcm")
    assert engine_cell["declined"] == {"below-threshold": 5000}
    assert (software_cell["ops"], software_cell["bytes"]) == (5000, 5000)
    provider.counters.reset()
    gcm.encrypt(IV[:12], b"x", None)
    assert cells(provider, "aes-128-gcm")[0]["declined"] == {"below-threshold": 1}


#: The block ciphers a chained context runs: a key and the block size in bytes.
BLOCK_CIPHERS = {
    "aes-128": (lambda: ref_algorithms.AES(KEY), 16),
    "3des": (lambda: TripleDES(bytes(range(24))), 8),
}


@settings(max_examples=300, deadline=None)
@given(
    cipher_name=st.sampled_from(sorted(BLOCK_CIPHERS)),
    mode=st.sampled_from(sorted(MODES)),
    encrypt=st.booleans(),
    floor=st.sampled_from([0, 1, 8, 16, 17, 32, 48, 1 << 20]),
    chunks=st.lists(st.integers(0, 70), min_size=1, max_size=12),
    into=st.booleans(),
)
def test_chained_context_moves_between_engine_and_held_paths_without_losing_its_place(
    cipher_name, mode, encrypt, floor, chunks, into
):
    """Chunks of every size, an engine that takes ops from ``floor`` bytes: each update goes
    to the engine or stays in software by its size, and the stream matches `cryptography`,
    for 16-byte (AES) and 8-byte (Triple DES) blocks alike."""
    if cipher_name == "3des" and mode == "ctr":
        return  # not offered: OpenSSL has no Triple DES CTR
    make, block = BLOCK_CIPHERS[cipher_name]
    total = sum(chunks)
    if mode in ("ecb", "cbc"):  # whole blocks overall, as the modes need
        chunks = [*chunks, (-total) % block]
        total = sum(chunks)
    data = bytes((7 * i + 3) % 256 for i in range(total))
    ours_mode, ref_mode = MODES[mode]
    iv = IV[:block]
    args = () if mode == "ecb" else (iv,)
    ref = RefCipher(make(), ref_mode(*args))
    ref_ctx = ref.encryptor() if encrypt else ref.decryptor()
    want = ref_ctx.update(data) + ref_ctx.finalize()
    provider, engine = provider_with_floor(floor)
    cipher = Cipher(make(), ours_mode(*args), provider=provider)
    ctx = cipher.encryptor() if encrypt else cipher.decryptor()
    got, at = b"", 0
    for n in chunks:
        piece = data[at : at + n]
        at += n
        if into:
            buf = bytearray(n + block - 1)
            k = ctx.update_into(piece, buf)
            got += bytes(buf[:k])
        else:
            got += ctx.update(piece)
    got += ctx.finalize()
    assert got == want
    alg = f"{cipher_name}-{mode}"
    engine_cell, _ = cells(provider, alg)
    assert engine_cell.get("ops", 0) == len(engine.seen)
    if floor == 1 << 20:
        assert engine.seen == []


@pytest.mark.parametrize("mode", ["cbc", "ctr"])
def test_a_held_back_partial_block_is_carried_to_the_engine_path(mode):
    """Software holds 5 bytes (CBC) or has used 5 bytes of a counter block (CTR); the next op
    is large enough for the engine and must start exactly there."""
    data = bytes(range(256)) * 2
    ours_mode, ref_mode = MODES[mode]
    ref = RefCipher(ref_algorithms.AES(KEY), ref_mode(IV)).encryptor()
    want = ref.update(data) + ref.finalize()
    provider, engine = provider_with_floor(64)
    ctx = Cipher(algorithms.AES(KEY), ours_mode(IV), provider=provider).encryptor()
    got = ctx.update(data[:21]) + ctx.update(data[21:])
    got += ctx.finalize()
    assert got == want
    assert len(engine.seen) == 1 and cells(provider, f"aes-128-{mode}")[1]["ops"] == 1


@pytest.mark.parametrize("cipher_name", sorted(BLOCK_CIPHERS))
@pytest.mark.parametrize("floor", [0, 64])
def test_cbc_decryption_into_a_reused_input_buffer_chains_from_the_ciphertext_it_was_given(
    cipher_name, floor
):
    """Streaming decryption refills one input buffer per chunk, as callers do: the chaining
    value must be the ciphertext as it was, not a view of a buffer that has changed since."""
    make, block = BLOCK_CIPHERS[cipher_name]
    iv = IV[:block]
    data = bytes((11 * i + 5) % 256 for i in range(block * 48))
    sealed = RefCipher(make(), ref_modes.CBC(iv)).encryptor().update(data)
    provider, engine = provider_with_floor(floor, 64 if floor == 0 else None)
    ctx = Cipher(make(), modes.CBC(iv), provider=provider).decryptor()
    chunk = block * 8
    inbuf, outbuf, got = bytearray(chunk), bytearray(chunk + block - 1), b""
    for at in range(0, len(sealed), chunk):
        inbuf[:] = sealed[at : at + chunk]
        k = ctx.update_into(inbuf, outbuf)
        got += bytes(outbuf[:k])
    got += ctx.update(b"") + ctx.finalize()
    assert got == data
    engine.seen.clear()  # the test engine keeps the ops it was given; the context must not
    inbuf.extend(b"x")  # hold a view of the caller's buffer
