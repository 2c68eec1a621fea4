"""Sizes the policy keeps from every engine go straight to software (no engine asked, the
declines counted at the fold), and a stand-in named "software" answers every op software
would: the primitives' direct calls to OpenSSL stay off for it."""

from __future__ import annotations

from cryptography.hazmat.primitives import hashes as ref_hashes
from cryptography.hazmat.primitives.ciphers import aead as ref_aead

from cryptoffload import Policy, Provider, hashes
from cryptoffload.aead import AESGCM
from cryptoffload.core.ops import AeadOp
from cryptoffload.engines.base import Capabilities
from cryptoffload.engines.software import SoftwareEngine

KEY = bytes(range(16))
NONCE = bytes(12)
ALG = "aes-128-gcm"


class Recording(SoftwareEngine):
    """OpenSSL's answers, each op's size recorded; named "software": a stand-in."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def run(self, op):
        self.sizes.append(op.size)
        return super().run(op)


class Claiming(Recording):
    """An engine claiming AES-128-GCM and SHA-256."""

    name = "claiming"

    def probe(self) -> Capabilities:
        return Capabilities(available=True, algorithms=frozenset({ALG, "sha256"}))


def op(size: int) -> AeadOp:
    return AeadOp(ALG, "encrypt", KEY, NONCE, bytes(size), None, 16)


def test_a_kept_size_asks_no_engine_and_counts_its_declines_at_the_fold():
    engine = Claiming()
    provider = Provider([engine], Policy(min_size={ALG: 1000}, max_size={ALG: 5000}))
    ref = ref_aead.AESGCM(KEY)
    for size in (10, 999, 6000, 1000, 5000):
        assert provider.run(op(size)) == ref.encrypt(NONCE, bytes(size), None)
    assert engine.sizes == [1000, 5000]
    snap = provider.counters.snapshot()
    assert snap["claiming"][ALG]["ops"] == 2
    assert snap["claiming"][ALG]["declined"] == {"below-threshold": 2, "too-large": 1}
    assert snap["software"][ALG]["ops"] == 3


def test_a_kept_size_that_fails_its_tag_is_counted_and_releases_nothing():
    provider = Provider([Claiming()], Policy(min_size={ALG: 1 << 20}))
    bad = AeadOp(ALG, "decrypt", KEY, NONCE, bytes(32), None, 16)
    try:
        provider.run(bad)
    except Exception as exc:  # InvalidTag, as software alone raises it
        assert type(exc).__name__ == "InvalidTag"
    else:
        raise AssertionError("a forged ciphertext decrypted")
    snap = provider.counters.snapshot()
    assert snap["software"][ALG]["ops"] == 1
    assert snap["claiming"][ALG]["declined"] == {"below-threshold": 1}


def test_a_stand_in_software_answers_aesgcm_instead_of_the_direct_path():
    stand_in = Recording()
    ref = ref_aead.AESGCM(KEY)
    alone = Provider([stand_in])
    assert not alone.lane(ALG).software_only
    gcm = AESGCM(KEY, provider=alone)
    for size in (16, 4096):
        assert gcm.encrypt(NONCE, bytes(size), None) == ref.encrypt(NONCE, bytes(size), None)
    assert stand_in.sizes == [16, 4096]
    routed_in = Recording()
    engine = Claiming()
    routed = Provider([engine, routed_in], Policy(min_size={ALG: 1000}))
    gcm = AESGCM(KEY, provider=routed)
    for size in (16, 4096):
        sealed = gcm.encrypt(NONCE, bytes(size), None)
        assert gcm.decrypt(NONCE, sealed, None) == bytes(size)
    assert routed_in.sizes == [16, 16] and engine.sizes == [4096, 4096]
    snap = routed.counters.snapshot()
    assert snap["claiming"][ALG]["declined"] == {"below-threshold": 2}


def test_a_stand_in_software_answers_hashes_too():
    stand_in = Recording()
    provider = Provider([Claiming(), stand_in], Policy(min_size={"sha256": 100}))
    h = ref_hashes.Hash(ref_hashes.SHA256())
    h.update(b"abc")
    assert hashes.digest(b"abc", ref_hashes.SHA256(), provider=provider) == h.finalize()
    assert stand_in.sizes == [3]


def test_openssl_software_keeps_the_direct_path():
    engine = Claiming()
    provider = Provider([engine], Policy(min_size={ALG: 1000}))
    lane = provider.lane(ALG)
    assert lane.native and lane.hold_below == lane.keep_below == 1000
    AESGCM(KEY, provider=provider).encrypt(NONCE, bytes(16), None)
    assert engine.sizes == []


def test_cipher_contexts_held_back_keep_the_record_bounded():
    from cryptography.hazmat.primitives.ciphers import Cipher as RefCipher
    from cryptography.hazmat.primitives.ciphers import algorithms as ref_alg
    from cryptography.hazmat.primitives.ciphers import modes as ref_modes

    from cryptoffload.ciphers import Cipher, algorithms, modes
    from cryptoffload.core.counters import FOLD_AT

    class CbcEngine(Claiming):
        name = "cbc"

        def probe(self) -> Capabilities:
            return Capabilities(available=True, algorithms=frozenset({"aes-128-cbc"}))

    engine = CbcEngine()
    provider = Provider([engine], Policy(min_size={"aes-128-cbc": 1 << 20}))
    key, iv = bytes(range(16)), bytes(range(16, 32))
    ours = Cipher(algorithms.AES(key), modes.CBC(iv), provider=provider)
    ref = RefCipher(ref_alg.AES(key), ref_modes.CBC(iv))
    for i in range(3 * FOLD_AT):
        data = bytes([i % 256]) * 32
        e, r = ours.encryptor(), ref.encryptor()
        assert e.update(data) + e.finalize() == r.update(data) + r.finalize()
    assert len(provider.lane("aes-128-cbc")._pending) <= FOLD_AT + 1
    snap = provider.counters.snapshot()
    assert snap["software"]["aes-128-cbc"]["ops"] == 3 * FOLD_AT
    assert snap["cbc"]["aes-128-cbc"]["declined"] == {"below-threshold": 3 * FOLD_AT}
    assert engine.sizes == []
