"""The software engine's kept key schedules and carried contexts give the answers of a fresh
OpenSSL context for every op, whatever order ops come in."""

from __future__ import annotations

import random

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher as PlainCipher
from cryptography.hazmat.primitives.ciphers import algorithms as plain_algorithms
from cryptography.hazmat.primitives.ciphers import modes as plain_modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM as PlainAESGCM

from cryptoffload import Provider, using
from cryptoffload.ciphers import Cipher, algorithms, modes
from cryptoffload.core.ops import AeadOp, CipherOp
from cryptoffload.engines import _kept
from cryptoffload.engines._kept import CarriedContexts, KeyedObjects, carries
from cryptoffload.engines.passthrough import PassThroughEngine
from cryptoffload.engines.software import SoftwareEngine

KEY = bytes(range(16))


def fresh(kind: str, mode: str, iv: bytes | None, data: bytes) -> bytes:
    """What a new `cryptography` context gives for one op."""
    made = {"ctr": plain_modes.CTR, "cbc": plain_modes.CBC}
    mode_object = made[mode](iv) if mode in made else plain_modes.ECB()
    cipher = PlainCipher(plain_algorithms.AES(KEY), mode_object)
    ctx = cipher.encryptor() if kind == "encrypt" else cipher.decryptor()
    return ctx.update(data) + ctx.finalize()


@pytest.mark.parametrize("mode", ["ctr", "cbc", "ecb"])
@pytest.mark.parametrize("kind", ["encrypt", "decrypt"])
def test_chained_stream_through_passthrough_matches_cryptography(mode: str, kind: str) -> None:
    rng = random.Random(7)
    pieces = [rng.randbytes(rng.choice([0, 1, 15, 16, 17, 64, 1400]) // 16 * 16 or 16)]
    pieces += [rng.randbytes(rng.choice([1, 8, 15, 16, 33, 1400])) for _ in range(60)]
    if mode != "ctr":  # whole blocks overall (held-back bytes carried by the context)
        pieces.append(bytes(-sum(map(len, pieces)) % 16))
    iv = None if mode == "ecb" else bytes(range(100, 116))
    made = {"ctr": modes.CTR, "cbc": modes.CBC}
    mode_object = made[mode](iv) if mode in made else modes.ECB()
    with using(Provider([PassThroughEngine()])) as provider:
        cipher = Cipher(algorithms.AES(KEY), mode_object)
        ctx = cipher.encryptor() if kind == "encrypt" else cipher.decryptor()
        out = b"".join(ctx.update(piece) for piece in pieces) + ctx.finalize()
    assert out == fresh(kind, mode, iv, b"".join(pieces))
    assert provider.counters.snapshot()["passthrough"][f"aes-128-{mode}"]["ops"] > 0


def test_ctr_update_into_through_passthrough_matches_cryptography() -> None:
    rng = random.Random(5)
    iv, pieces, out = bytes(16), [], bytearray()
    with using(Provider([PassThroughEngine()])):
        ctx = Cipher(algorithms.AES(KEY), modes.CTR(iv)).encryptor()
        for size in (1400, 7, 16, 1400, 3, 29):
            pieces.append(rng.randbytes(size))
            buf = bytearray(size + 15)
            n = ctx.update_into(pieces[-1], buf)
            out += buf[:n]
    assert bytes(out) == fresh("encrypt", "ctr", iv, b"".join(pieces))


@pytest.mark.parametrize("mode", ["ctr", "cbc"])
def test_carried_op_at_any_iv_gives_a_fresh_contexts_answer(mode: str) -> None:
    rng = random.Random(3)
    carried = CarriedContexts()
    ivs = [rng.randbytes(16) for _ in range(3)]
    for _ in range(200):
        iv = rng.choice(ivs)
        data = rng.randbytes(rng.choice([16, 32, 48]) if mode == "cbc" else rng.randint(1, 70))
        kind = rng.choice(["encrypt", "decrypt"])
        op = CipherOp(f"aes-128-{mode}", kind, KEY, iv, data)
        assert carried.run(op) == fresh(kind, mode, iv, data)
        # Sometimes the next op starts where this one ended (the chained context's case).
        if rng.random() < 0.5:
            ivs.append(_end_iv(mode, kind, iv, data))


def _end_iv(mode: str, kind: str, iv: bytes, data: bytes) -> bytes:
    if mode == "ctr":
        return ((int.from_bytes(iv, "big") + len(data) // 16) % (1 << 128)).to_bytes(16, "big")
    return (fresh(kind, mode, iv, data) if kind == "encrypt" else data)[-16:]


def test_ctr_op_shorter_than_the_kept_partial_block_starts_afresh() -> None:
    carried = CarriedContexts()
    iv = bytes(16)
    carried.run(CipherOp("aes-128-ctr", "encrypt", KEY, iv, bytes(13)))  # 13 bytes of block 0
    short = CipherOp("aes-128-ctr", "encrypt", KEY, iv, b"\x01" * 5)
    assert carried.run(short) == fresh("encrypt", "ctr", iv, b"\x01" * 5)


def test_carried_op_writes_into_out_and_returns_its_length() -> None:
    carried = CarriedContexts()
    iv, data = bytes(16), bytes(range(40))
    carried.run(CipherOp("aes-128-ctr", "encrypt", KEY, iv, data[:20]))
    out = bytearray(20)  # too small for update_into's room rule: written from bytes
    after = (1).to_bytes(16, "big")  # counter block 1: where the 20-byte op ended
    n = carried.run(CipherOp("aes-128-ctr", "encrypt", KEY, after, data[16:36], out))
    assert n == 20
    assert bytes(out) == fresh("encrypt", "ctr", iv, data[:36])[16:36]


def test_carries_only_aes_ctr_cbc_ecb_in_whole_blocks_under_bytes_keys() -> None:
    assert carries(CipherOp("aes-128-ctr", "encrypt", KEY, bytes(16), bytes(5)))
    assert carries(CipherOp("aes-128-cbc", "encrypt", KEY, bytes(16), bytes(32)))
    assert not carries(CipherOp("aes-128-cbc", "encrypt", KEY, bytes(16), bytes(33)))
    assert carries(CipherOp("aes-128-ecb", "encrypt", KEY, None, bytes(16)))
    assert not carries(CipherOp("aes-128-ofb", "encrypt", KEY, bytes(16), bytes(16)))
    assert not carries(CipherOp("camellia-128-cbc", "encrypt", KEY, bytes(16), bytes(16)))
    assert not carries(CipherOp("aes-128-ctr", "encrypt", bytearray(KEY), bytes(16), bytes(5)))


def test_stores_keep_at_most_their_limit() -> None:
    keyed, carried = KeyedObjects(), CarriedContexts()
    for i in range(_kept.LIMIT * 2 + 3):
        key = i.to_bytes(16, "big")
        keyed.get(PlainAESGCM, key)
        carried.run(CipherOp("aes-128-ctr", "encrypt", key, bytes(16), bytes(16)))
        assert len(keyed._kept) <= _kept.LIMIT and len(carried._kept) <= _kept.LIMIT


def test_keyed_object_made_once_per_key_and_not_kept_for_a_mutable_key() -> None:
    keyed = KeyedObjects()
    assert keyed.get(PlainAESGCM, KEY) is keyed.get(PlainAESGCM, bytes(KEY))
    assert keyed.get(PlainAESGCM, bytearray(KEY)) is not keyed.get(PlainAESGCM, bytearray(KEY))
    keyed.clear()
    assert not keyed._kept


def test_software_aead_under_many_keys_matches_cryptography() -> None:
    engine = SoftwareEngine()
    for i in range(_kept.LIMIT + 5):
        key = (i * 7).to_bytes(16, "big")
        op = AeadOp("aes-128-gcm", "encrypt", key, bytes(12), b"record", None, 16)
        assert engine.run(op) == PlainAESGCM(key).encrypt(bytes(12), b"record", None)


def test_stores_show_no_key_in_their_repr() -> None:
    keyed, carried = KeyedObjects(), CarriedContexts()
    keyed.get(PlainAESGCM, KEY)
    carried.run(CipherOp("aes-128-ctr", "encrypt", KEY, bytes(16), bytes(5)))
    for store in (keyed, carried):
        assert KEY.hex() not in repr(store) and repr(KEY) not in repr(store)


def test_passthrough_subclass_keeps_its_own_run() -> None:
    seen: list[str] = []

    class Watching(PassThroughEngine):
        def run(self, op: object) -> object:
            seen.append(op.alg)
            return super().run(op)

    op = AeadOp("aes-128-gcm", "encrypt", KEY, bytes(12), b"x", None, 16)
    assert Watching().run(op) == PassThroughEngine().run(op) == SoftwareEngine().run(op)
    assert seen == ["aes-128-gcm"]
