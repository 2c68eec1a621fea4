"""AES ECB/CBC/CFB128/OFB (NIST CAVP AESAVS) and CTR (RFC 3686) through every engine set.

Every record is run both ways (plaintext -> ciphertext and back) through
``cryptoffload.ciphers.Cipher``: in one ``update``, in uneven chunks that start and end
mid-block (the chained-op context carries the IV/counter between ops), and with
``update_into``. One test item covers one vector file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from chunks import split
from counting import ChaosTally, check_ops
from vectors.loaders import aes_vectors

from cryptoffload import Provider, modes
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.core.names import aes_name

TALLY = ChaosTally()

#: Loader mode -> (our mode name, the mode object for an IV).
MODES: dict[str, tuple[str, Any]] = {
    "ECB": ("ecb", lambda iv: modes.ECB()),
    "CBC": ("cbc", modes.CBC),
    "CFB128": ("cfb", modes.CFB),
    "OFB": ("ofb", modes.OFB),
    "CTR": ("ctr", modes.CTR),
}

#: Chunk sizes cycled through to split a message: none of them lines up with the 16-byte block.
CHUNK_PATTERN = (1, 15, 17, 33, 5, 48, 31, 2, 16)


def _files() -> list[Any]:
    params = []
    for mode in MODES:
        files = sorted({r["file"] for r in aes_vectors(mode)})
        assert files, f"no {mode} vector files"
        for path in files:
            stem = path.rsplit("/", 1)[1].rsplit(".", 1)[0]
            params.append(pytest.param(mode, path, id=stem))
    return params


FILES = _files()


def _records(mode: str, path: str) -> list[dict[str, Any]]:
    records = [r for r in aes_vectors(mode) if r["file"] == path]
    assert records
    return records


def _cipher(mode: str, r: dict[str, Any], provider: Provider) -> Cipher:
    make_mode = MODES[mode][1]
    return Cipher(algorithms.AES(r["key"]), make_mode(r["iv"]), provider=provider)


def _alg(mode: str, r: dict[str, Any]) -> str:
    return aes_name(len(r["key"]), MODES[mode][0])


def _directions(r: dict[str, Any]) -> Iterator[tuple[bool, bytes, bytes]]:
    """(encrypt?, input, expected output): every record is checked both ways."""
    yield True, r["plaintext"], r["ciphertext"]
    yield False, r["ciphertext"], r["plaintext"]


def update_ops(mode: str, sizes: list[int]) -> int:
    """Ops one context does for ``update`` calls of ``sizes`` bytes, as ciphers.py promises,
    the same with or without an engine: each ``update`` that gives output is one op (ECB/CBC
    hold back a partial block until a whole block is there; an empty ``update`` does nothing).
    """
    ops = held = 0
    for n in sizes:
        total = held + n
        if MODES[mode][0] in ("ecb", "cbc"):
            ops += total >= 16
        else:
            ops += n > 0
        held = total % 16
    return ops


@pytest.mark.parametrize(("mode", "path"), FILES)
def test_one_shot_update_finalize_matches_vectors_both_ways(
    mode: str, path: str, provider: Provider
) -> None:
    performed: Counter[str] = Counter()
    for r in _records(mode, path):
        cipher = _cipher(mode, r, provider)
        for encrypt, data, expected in _directions(r):
            ctx = cipher.encryptor() if encrypt else cipher.decryptor()
            assert ctx.update(data) + ctx.finalize() == expected, (r["count"], encrypt)
            performed[_alg(mode, r)] += update_ops(mode, [len(data)])
    check_ops(provider, performed, TALLY)


@pytest.mark.parametrize(("mode", "path"), FILES)
def test_uneven_chunks_match_vectors_both_ways(mode: str, path: str, provider: Provider) -> None:
    performed: Counter[str] = Counter()
    for i, r in enumerate(_records(mode, path)):
        cipher = _cipher(mode, r, provider)
        for encrypt, data, expected in _directions(r):
            chunks = split(data, CHUNK_PATTERN, i)
            assert b"".join(chunks) == data
            ctx = cipher.encryptor() if encrypt else cipher.decryptor()
            out = b"".join(ctx.update(chunk) for chunk in chunks) + ctx.finalize()
            assert out == expected, (r["count"], encrypt, [len(c) for c in chunks])
            performed[_alg(mode, r)] += update_ops(mode, [len(c) for c in chunks])
    check_ops(provider, performed, TALLY)


@pytest.mark.parametrize(("mode", "path"), FILES)
def test_update_into_uneven_chunks_matches_vectors_both_ways(
    mode: str, path: str, provider: Provider
) -> None:
    performed: Counter[str] = Counter()
    for i, r in enumerate(_records(mode, path)):
        cipher = _cipher(mode, r, provider)
        for encrypt, data, expected in _directions(r):
            chunks = split(data, CHUNK_PATTERN, i + 3)
            ctx = cipher.encryptor() if encrypt else cipher.decryptor()
            out = bytearray()
            for chunk in chunks:
                # cryptography asks for room for a whole extra block beyond the input.
                buf = bytearray(len(chunk) + 15)
                n = ctx.update_into(chunk, buf)
                out += buf[:n]
            out += ctx.finalize()
            assert bytes(out) == expected, (r["count"], encrypt, [len(c) for c in chunks])
            performed[_alg(mode, r)] += update_ops(mode, [len(c) for c in chunks])
    check_ops(provider, performed, TALLY)


def test_split_follows_the_chunk_pattern() -> None:
    data = bytes(range(100))
    assert [len(c) for c in split(data, CHUNK_PATTERN, 0)] == [1, 15, 17, 33, 5, 29]
    assert [len(c) for c in split(data[:16], CHUNK_PATTERN, 1)] == [15, 1]
    assert b"".join(split(data, CHUNK_PATTERN, 5)) == data


def test_chaos_engine_declined_and_faulted_over_this_file(request) -> None:
    TALLY.check(request)
