"""Hash, HMAC and CMAC contexts on a lane no engine claims (DigestCore's direct path): the
software object made and fed with no Python of ours per message, `cryptography`'s answers and
errors, one op counted per message across folds, and the provider in force followed."""

from __future__ import annotations

import hashlib
import hmac as std_hmac

import pytest
from cryptography.exceptions import AlreadyFinalized, InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives import cmac as ref_cmac
from cryptography.hazmat.primitives import hashes as ref_hashes
from cryptography.hazmat.primitives import hmac as ref_hmac
from direct_path_probe import ours_run, software
from doubles import TakeAllEngine

import cryptoffload
from cryptoffload import Provider, hashes
from cryptoffload.ciphers import algorithms
from cryptoffload.cmac import CMAC
from cryptoffload.core import directpath
from cryptoffload.core.counters import FOLD_AT
from cryptoffload.hmac import HMAC

KEY = bytes(range(32))


def one_hmac() -> bytes:
    h = HMAC(KEY, hashes.SHA256())
    h.update(b"m" * 64)
    return h.finalize()


def one_hash() -> bytes:
    h = hashes.Hash(hashes.SHA256())
    h.update(b"m" * 64)
    return h.finalize()


def one_cmac() -> bytes:
    c = CMAC(algorithms.AES(KEY[:16]))
    c.update(b"m" * 64)
    return c.finalize()


@pytest.mark.skipif(not directpath.COMPILED, reason="the compiled twin runs no Python by design")
@pytest.mark.parametrize("op", [one_hmac, one_hash, one_cmac], ids=["hmac", "hash", "cmac"])
def test_a_message_on_a_software_only_lane_runs_no_python_of_ours(default_software, op):
    op()  # the first context of its kind is made the slow way, which opens the direct path
    assert ours_run(op) == []


@pytest.mark.parametrize("name", ["SHA1", "SHA256", "SHA512", "SHA3_256", "BLAKE2b", "MD5"])
def test_direct_hmacs_give_pythons_tags_for_each_hash(default_software, name):
    algorithm = getattr(hashes, name)(64) if name == "BLAKE2b" else getattr(hashes, name)()
    for _ in range(2):  # the slow way, then the direct one
        h = HMAC(KEY, algorithm)
        h.update(b"abc")
        h.update(b"def")
        name = algorithm.name.replace("-", "_")
        assert h.finalize() == std_hmac.new(KEY, b"abcdef", name).digest()


def test_hmac_copies_verify_and_errors_match_cryptography(default_software):
    ref = ref_hmac.HMAC(KEY, ref_hashes.SHA256())
    ref.update(b"ab")
    tag = ref.finalize()
    for _ in range(2):
        early = HMAC(KEY, hashes.SHA256())
        fork = early.copy()  # nothing fed yet: made when fed, as the original
        early.update(b"a")
        later = early.copy()
        early.update(b"b")
        fork.update(b"ab")
        later.update(bytearray(b"b"))
        assert early.finalize() == fork.finalize() == tag
        later.verify(tag)
        with pytest.raises(AlreadyFinalized):
            later.finalize()
        with pytest.raises(AlreadyFinalized):
            later.update(b"x")
        with pytest.raises(AlreadyFinalized):
            later.copy()
        bad = HMAC(KEY, hashes.SHA256())
        bad.update(b"ab")
        with pytest.raises(InvalidSignature, match=r"Signature did not match digest\."):
            bad.verify(tag[:-1] + bytes([tag[-1] ^ 1]))
        with pytest.raises(AlreadyFinalized):
            bad.verify(tag)
    with pytest.raises(TypeError, match="key must be bytes-like"):
        HMAC("key", hashes.SHA256())
    with pytest.raises(UnsupportedAlgorithm):
        HMAC(KEY, hashes.SHAKE128(32))
    with pytest.raises(TypeError, match="data must be bytes-like"):
        HMAC(KEY, hashes.SHA256()).update("text")


def test_hashes_and_their_copies_give_hashlibs_digests(default_software):
    for _ in range(2):
        h = hashes.Hash(hashes.SHA256())
        empty = h.copy()
        h.update(b"abc")
        fork = h.copy()
        fork.update(memoryview(b"d"))
        assert h.finalize() == hashlib.sha256(b"abc").digest()
        assert fork.finalize() == hashlib.sha256(b"abcd").digest()
        assert empty.finalize() == hashlib.sha256().digest()
        with pytest.raises(AlreadyFinalized):
            h.update(b"x")
        assert not hasattr(h, "verify")
        shake = hashes.Hash(hashes.SHAKE128(20))
        shake.update(b"abc")
        assert shake.finalize() == hashlib.shake_128(b"abc").digest(20)


@pytest.mark.parametrize(
    "algorithm",
    [algorithms.AES(KEY[:16]), algorithms.AES(KEY[:24]), algorithms.AES(KEY), TripleDES(KEY[:24])],
    ids=["aes-128", "aes-192", "aes-256", "3des"],
)
def test_cmacs_give_cryptographys_tags_for_each_key(default_software, algorithm):
    ref = ref_cmac.CMAC(algorithm)
    ref.update(b"abc")
    tag = ref.finalize()
    for _ in range(2):
        c = CMAC(algorithm)
        c.update(b"abc")
        assert c.copy().finalize() == tag
        c.verify(tag)


def test_each_message_is_one_op_across_folds(default_software):
    n = FOLD_AT + 7
    for i in range(n):
        h = HMAC(KEY, hashes.SHA256())
        h.update(bytes(i % 5))
        h.update(b"x")
        h.finalize()
        d = hashes.Hash(hashes.SHA256())
        d.update(bytes(i % 3))
        d.finalize()
    hmac_cell = software(default_software, "hmac-sha256")
    assert (hmac_cell["ops"], hmac_cell["bytes"]) == (n, sum(i % 5 + 1 for i in range(n)))
    hash_cell = software(default_software, "sha256")
    assert (hash_cell["ops"], hash_cell["bytes"]) == (n, sum(i % 3 for i in range(n)))
    assert len(default_software.lane("hmac-sha256").tally_q) <= FOLD_AT


def test_a_failed_verify_is_an_op_and_an_unended_message_is_none(default_software):
    h = HMAC(KEY, hashes.SHA256())
    h.update(b"abc")
    with pytest.raises(InvalidSignature):
        h.verify(bytes(32))
    HMAC(KEY, hashes.SHA256()).update(b"never ended")
    assert software(default_software, "hmac-sha256")["ops"] == 1


def test_the_direct_path_follows_the_provider_in_force(default_software):
    one_hmac()
    engine = TakeAllEngine()
    claiming = Provider([engine])
    with cryptoffload.using(claiming):
        assert one_hmac() == std_hmac.new(KEY, b"m" * 64, "sha256").digest()
    h = HMAC(KEY, hashes.SHA256(), provider=claiming)
    h.update(b"m")
    h.finalize()
    one_hmac()
    assert claiming.counters.snapshot()[engine.name]["hmac-sha256"]["ops"] == 2
    assert software(default_software, "hmac-sha256")["ops"] == 2
    assert "hmac-sha256" not in claiming.counters.snapshot().get("software", {})


def test_a_context_keeps_the_lane_it_was_made_on(default_software):
    h = HMAC(KEY, hashes.SHA256())
    other = Provider([])
    with cryptoffload.using(other):
        h.update(b"abc")
        h.finalize()
    assert software(default_software, "hmac-sha256")["ops"] == 1
    assert "hmac-sha256" not in other.counters.snapshot().get("software", {})
