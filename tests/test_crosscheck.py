"""Engine results against software's: one comparison, and the provider's sampled safeguard."""

from __future__ import annotations

import logging

import pytest
from controlled import ControlledEngine
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes as c_hashes
from cryptography.hazmat.primitives.asymmetric import ec as c_ec
from cryptography.hazmat.primitives.asymmetric import padding as c_padding
from cryptography.hazmat.primitives.asymmetric import rsa as c_rsa
from doubles import BatchEngine, TakeAllEngine

from cryptoffload import Policy, Provider
from cryptoffload._buffers import REFUSED as OVERLAP_REFUSED
from cryptoffload.aead import AESGCM
from cryptoffload.ciphers import Cipher, algorithms, modes
from cryptoffload.core.crosscheck import AGREE, MISMATCH, UNCHECKED, compare
from cryptoffload.core.ops import AeadOp, CipherOp, EcdsaOp, RngOp, RsaOp
from cryptoffload.engines.software import SoftwareEngine
from cryptoffload.hashes import SHA256, digest

SOFTWARE = SoftwareEngine()
TAKE_ALL = Policy(min_size={"*": 0})
KEY = bytes(range(16))
SHA = c_hashes.SHA256()


def test_equal_results_agree_and_a_changed_byte_is_located():
    op = CipherOp("aes-128-cbc", "encrypt", KEY, bytes(16), bytes(64))
    right = SOFTWARE.run(op)
    assert compare(op, SOFTWARE, right).status == AGREE
    wrong = right[:5] + bytes([right[5] ^ 0x80]) + right[6:]
    check = compare(op, SOFTWARE, wrong)
    assert check.status == MISMATCH and check.detail == "1 of 64 bytes differ, the first at byte 5"


def test_a_result_written_in_place_is_compared_with_the_input_as_it_was():
    buf = bytearray(range(64))
    before = bytes(buf)
    op = CipherOp("aes-128-ctr", "encrypt", KEY, bytes(16), memoryview(buf), out=buf)
    n = SOFTWARE.run(CipherOp("aes-128-ctr", "encrypt", KEY, bytes(16), before, out=buf))
    assert compare(op, SOFTWARE, n, data=before).status == AGREE


def test_tag_answers_must_match_software_in_both_directions():
    sealed = SOFTWARE.run(AeadOp("aes-128-gcm", "encrypt", KEY, bytes(12), b"data", b"", 16))
    good = AeadOp("aes-128-gcm", "decrypt", KEY, bytes(12), sealed, b"", 16)
    bad = AeadOp("aes-128-gcm", "decrypt", KEY, bytes(12), sealed[:-1] + b"?", b"", 16)
    assert compare(bad, SOFTWARE, error=InvalidTag()).status == AGREE
    refused = compare(good, SOFTWARE, error=InvalidTag())
    assert (
        refused.status == MISMATCH and "InvalidTag where software gives a result" in refused.detail
    )
    accepted = compare(bad, SOFTWARE, b"data")
    assert (
        accepted.status == MISMATCH
        and "a result where software gives InvalidTag" in accepted.detail
    )


def test_random_signatures_must_verify_in_software():
    key = c_rsa.generate_private_key(65537, 2048)
    pss = c_padding.PSS(c_padding.MGF1(SHA), 32)
    dig = bytes(32)
    op = RsaOp("rsa-2048-private", "sign", key, digest=dig, padding=pss, hash_alg=SHA)
    assert compare(op, SOFTWARE, SOFTWARE.run(op)).status == AGREE
    assert compare(op, SOFTWARE, bytes(256)).status == MISMATCH
    ec_key = c_ec.generate_private_key(c_ec.SECP256R1())
    sign = EcdsaOp("ecdsa-p256-sign", "sign", ec_key, dig, SHA, deterministic=False)
    assert compare(sign, SOFTWARE, SOFTWARE.run(sign)).status == AGREE
    other = EcdsaOp("ecdsa-p256-sign", "sign", ec_key, bytes([1] * 32), SHA, deterministic=False)
    assert compare(sign, SOFTWARE, SOFTWARE.run(other)).status == MISMATCH


def test_rsa_encryption_is_opened_when_the_private_key_is_known():
    key = c_rsa.generate_private_key(65537, 2048)
    oaep = c_padding.OAEP(c_padding.MGF1(SHA), SHA, None)
    op = RsaOp("rsa-2048-public", "encrypt", key.public_key(), data=b"message", padding=oaep)
    sealed = SOFTWARE.run(op)
    assert compare(op, SOFTWARE, sealed).status == UNCHECKED
    assert compare(op, SOFTWARE, sealed, private_of=lambda pub: key).status == AGREE
    other = key.public_key().encrypt(b"another", oaep)
    assert compare(op, SOFTWARE, other, private_of=lambda pub: key).status == MISMATCH


def test_random_bytes_are_checked_for_length_only():
    op = RngOp("drbg", "seed", 48)
    assert compare(op, SOFTWARE, bytes(48)).status == UNCHECKED
    assert compare(op, SOFTWARE, bytes(47)).status == MISMATCH


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_cross_check_rate_is_a_fraction(bad):
    with pytest.raises(ValueError, match="between 0"):
        Provider([], cross_check=bad)
    with pytest.raises(TypeError, match="fraction"):
        Provider([], cross_check="1/1000")


def test_off_by_default_costs_nothing_and_keeps_the_counters_shape():
    engine = TakeAllEngine(algorithms=["aes-128-gcm"])
    p = Provider([engine], policy=TAKE_ALL)
    assert p.cross_check == 0
    lane = p.lane("aes-128-gcm")
    assert lane.routes[0].engine is engine  # no wrapper on the route: the hot path is as it was
    AESGCM(KEY, provider=p).encrypt(bytes(12), b"x", None)
    assert set(p.counters.snapshot()["takeall"]["aes-128-gcm"]) == {
        "ops",
        "bytes",
        "declined",
        "faults",
    }
    assert "mismatches" not in p.counters.to_prometheus()


def test_a_wrong_result_disables_the_engine_for_that_algorithm_counts_and_logs(caplog):
    engine = ControlledEngine("flaky", ["aes-128-gcm", "sha256"], wrong_at=2)
    p = Provider([engine], policy=TAKE_ALL, cross_check=1.0)
    gcm, ref = AESGCM(KEY, provider=p), AESGCM(KEY, provider=Provider([]))
    with caplog.at_level(logging.WARNING, logger="cryptoffload"):
        answers = [gcm.encrypt(bytes(12), bytes([i]) * 32, None) for i in range(4)]
    assert answers == [ref.encrypt(bytes(12), bytes([i]) * 32, None) for i in range(4)]
    cell = p.counters.snapshot()["flaky"]["aes-128-gcm"]
    assert cell == {
        "ops": 1,  # the first; the second was wrong, and the engine got no more
        "bytes": 32,
        "declined": {"disabled": 2},
        "faults": 1,
        "checked": 2,
        "mismatches": 1,
    }
    assert p.counters.snapshot()["software"]["aes-128-gcm"]["ops"] == 3
    assert p.disabled() == {"flaky": ["aes-128-gcm"]}
    # Other algorithms still go to the engine.
    assert digest(b"abc", SHA256(), provider=p) == digest(b"abc", SHA256(), provider=Provider([]))
    assert p.counters.snapshot()["flaky"]["sha256"]["ops"] == 1
    (record,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "flaky" in record.getMessage() and "aes-128-gcm" in record.getMessage()
    assert KEY.hex() not in record.getMessage()
    text = p.counters.to_prometheus()
    assert 'cryptoffload_mismatches_total{engine="flaky",algorithm="aes-128-gcm"} 1' in text


def test_about_the_rate_of_results_is_checked():
    engine = TakeAllEngine(algorithms=["sha256"])
    p = Provider([engine], policy=TAKE_ALL, cross_check=0.1)
    for i in range(2000):
        digest(bytes([i % 256]), SHA256(), provider=p)
    checked = p.counters.snapshot()["takeall"]["sha256"]["checked"]
    assert 100 < checked < 320  # 200 expected; bounds far outside what chance gives


def test_in_place_cipher_updates_are_refused_or_given_a_copy_and_not_taken_for_mismatches():
    # Where cryptography refuses overlapping buffers (51 on) the update is refused before any
    # engine runs; where it takes them (50), the engine gets a copy of its input and the
    # result, written in place, is checked against software's without a false mismatch.
    engine = TakeAllEngine(algorithms=["aes-128-ctr"])
    p = Provider([engine], policy=TAKE_ALL, cross_check=1.0)
    buf = bytearray(range(64)) + bytearray(15)
    ref = Cipher(algorithms.AES(KEY), modes.CTR(bytes(16))).encryptor().update(bytes(buf[:64]))
    ctx = Cipher(algorithms.AES(KEY), modes.CTR(bytes(16)), provider=p).encryptor()
    if OVERLAP_REFUSED:
        with pytest.raises(ValueError, match="data and buf must not overlap"):
            ctx.update_into(memoryview(buf)[:64], buf)
        assert bytes(buf[:64]) == bytes(range(64))
        assert "aes-128-ctr" not in p.counters.snapshot()["takeall"]
        return
    ctx.update_into(memoryview(buf)[:64], buf)
    assert bytes(buf[:64]) == ref
    cell = p.counters.snapshot()["takeall"]["aes-128-ctr"]
    assert cell["checked"] == 1 and cell["mismatches"] == 0 and not p.disabled()


def test_a_wrong_item_of_a_batch_gets_softwares_answer():
    class WrongBatch(BatchEngine):
        def run_batch(self, ops):
            answers = super().run_batch(ops)
            answers[1] = bytes([answers[1][0] ^ 1]) + answers[1][1:]
            return answers

    p = Provider([WrongBatch(name="batcher")], policy=TAKE_ALL, cross_check=1.0)
    gcm, ref = AESGCM(KEY, provider=p), AESGCM(KEY, provider=Provider([]))
    items = [(bytes(12), bytes([i]) * 16, None) for i in range(3)]
    assert gcm.encrypt_many(items) == [ref.encrypt(*item) for item in items]
    cell = p.counters.snapshot()["batcher"]["aes-128-gcm"]
    assert cell["mismatches"] == 1 and cell["ops"] == 2
    assert p.disabled() == {"batcher": ["aes-128-gcm"]}
