"""hashes.digest: the one-shot digest equals the streaming Hash on every engine set, one op."""

from __future__ import annotations

import hashlib

import pytest
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes as c_hashes

from cryptoffload import hashes
from cryptoffload.core.names import HASH_CLASSES, HASH_NAMES

MESSAGES = [b"", b"abc", bytes(range(256)) * 70]


@pytest.mark.parametrize("name", list(HASH_CLASSES))
def test_digest_equals_hashlib_and_counts_one_op(provider, name):
    for message in MESSAGES:
        expected = hashlib.new(HASH_NAMES[name], message).digest()
        assert hashes.digest(message, HASH_CLASSES[name](), provider=provider) == expected
    snap = provider.counters.snapshot()
    assert sum(algs.get(name, {}).get("ops", 0) for algs in snap.values()) == len(MESSAGES)


def test_digest_accepts_memoryview_and_bytearray(provider):
    data = bytearray(b"payload")
    expected = hashlib.sha256(data).digest()
    assert hashes.digest(data, hashes.SHA256(), provider=provider) == expected
    assert hashes.digest(memoryview(data), hashes.SHA256(), provider=provider) == expected


@pytest.mark.parametrize("bad", ["text", 12, None, [1, 2]])
def test_digest_refuses_non_bytes_with_type_error(provider, bad):
    with pytest.raises(TypeError, match="data must be bytes-like"):
        hashes.digest(bad, hashes.SHA256(), provider=provider)


class _UnofferedHash(c_hashes.HashAlgorithm):
    name = "unoffered-hash"
    digest_size = 32
    block_size = 64


def test_digest_refuses_hashes_not_offered_and_classes_as_cryptography_does(provider):
    with pytest.raises(UnsupportedAlgorithm, match="not a hash algorithm cryptoffload offers"):
        hashes.digest(b"x", _UnofferedHash(), provider=provider)
    with pytest.raises(TypeError, match=r"Expected instance of hashes\.HashAlgorithm"):
        hashes.digest(b"x", c_hashes.SHA3_256, provider=provider)


@pytest.mark.parametrize(
    ("algorithm", "name"),
    [(c_hashes.MD5(), "md5"), (c_hashes.SHA3_256(), "sha3_256"), (c_hashes.SM3(), "sm3")],
)
def test_digest_of_the_added_hashes_is_hashlibs_and_one_counted_op(provider, algorithm, name):
    before = provider.counters.snapshot()
    assert hashes.digest(b"abc", algorithm, provider=provider) == hashlib.new(name, b"abc").digest()
    diff = provider.counters.diff(before, provider.counters.snapshot())
    assert sum(cell["ops"] for algs in diff.values() for cell in algs.values()) == 1
