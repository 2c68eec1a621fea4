"""hashes.digest: the one-shot digest equals the streaming Hash on every engine set, one op."""

from __future__ import annotations

import hashlib

import pytest
from cryptography.hazmat.primitives import hashes as c_hashes

from cryptoffload import hashes
from cryptoffload.names import HASH_CLASSES, HASH_NAMES

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


@pytest.mark.parametrize("algorithm", [c_hashes.MD5(), c_hashes.SHA3_256()])
def test_digest_refuses_hashes_not_offered(provider, algorithm):
    with pytest.raises(TypeError, match="hash algorithm must be one of"):
        hashes.digest(b"x", algorithm, provider=provider)
