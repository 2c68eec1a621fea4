"""SHA-1/SHA-2 (CAVP short, long and Monte Carlo), HMAC (RFC 2202/4231) and AES-CMAC
(SP 800-38B) known answers through every engine set.

A hash or MAC context is one op, counted when it is finalized (or verified).
"""

from __future__ import annotations

import pytest
from chunks import split
from counting import SOFTWARE, ChaosTally, check_ops, engine_set
from cryptography.exceptions import InvalidSignature
from vectors.loaders import cmac_vectors, hash_monte, hash_vectors, hmac_vectors, run_sha_monte

from cryptoffload import Provider
from cryptoffload.ciphers import algorithms
from cryptoffload.cmac import CMAC
from cryptoffload.core.names import HASH_CLASSES
from cryptoffload.hashes import Hash
from cryptoffload.hmac import HMAC

TALLY = ChaosTally()

#: Loader (hashlib) spelling -> our algorithm name.
SHA = {
    "sha1": "sha1",
    "sha224": "sha224",
    "sha256": "sha256",
    "sha384": "sha384",
    "sha512": "sha512",
    "sha512_224": "sha512-224",
    "sha512_256": "sha512-256",
}
HMAC_HASHES = ("sha1", "sha224", "sha256", "sha384", "sha512")
CMAC_BITS = (128, 192, 256)

#: Chunk sizes cycled through to feed a message piecemeal, across hash block boundaries.
CHUNK_PATTERN = (1, 15, 17, 33, 5, 63, 64, 65, 127, 129, 1000, 4096)

#: Monte Carlo checkpoints (of 100, each 1000 digests) run through engines other than software
#: alone; the full run through the chaos engine costs seconds per hash.
MONTE_CHECKPOINTS_OFFLOADED = 10

#: RFC 2202 / RFC 4231 test case 5 ("Test With Truncation"): the output truncated to 96 bits
#: (RFC 2202, SHA-1) or 128 bits (RFC 4231). The vector files leave these out or untruncated.
TRUNCATION_KEY = b"\x0c" * 20
TRUNCATION_MSG = b"Test With Truncation"
TRUNCATED = {
    "sha1": "4c1a03424b55e07fe7f27be1",
    "sha224": "0e2aea68a90c8d37c988bcdb9fca6fa8",
    "sha256": "a3b6167473100ee06e0c796c2955552b",
    "sha384": "3abf34c3503b2a23a46efc619baef897",
    "sha512": "415fad6271580a531d4179bc891d87a6",
}


def _hash(name: str, provider: Provider) -> Hash:
    return Hash(HASH_CLASSES[SHA[name]](), provider=provider)


def _records(name: str, kind: str) -> list[dict]:
    records = [r for r in hash_vectors(name) if r["kind"] == kind]
    assert records
    return records


def _flip(tag: bytes) -> bytes:
    return tag[:-1] + bytes([tag[-1] ^ 0x01])


HASH_PARAMS = [
    pytest.param(name, kind, id=f"{name}-{kind}")
    for name in SHA
    for kind in ("ShortMsg", "LongMsg")
]


# --------------------------------------------------------------------------- SHA


@pytest.mark.parametrize(("name", "kind"), HASH_PARAMS)
def test_sha_one_shot_digest_matches_vectors(name: str, kind: str, provider: Provider) -> None:
    records = _records(name, kind)
    for r in records:
        h = _hash(name, provider)
        h.update(r["msg"])
        assert h.finalize() == r["md"], r["len"]
    check_ops(provider, {SHA[name]: len(records)}, TALLY)


@pytest.mark.parametrize(("name", "kind"), HASH_PARAMS)
def test_sha_digest_fed_in_chunks_matches_vectors(name: str, kind: str, provider: Provider) -> None:
    records = _records(name, kind)
    for r in records:
        h = _hash(name, provider)
        for chunk in split(r["msg"], CHUNK_PATTERN):
            h.update(chunk)
        assert h.finalize() == r["md"], r["len"]
    check_ops(provider, {SHA[name]: len(records)}, TALLY)


@pytest.mark.parametrize(("name", "kind"), HASH_PARAMS)
def test_sha_copy_mid_stream_gives_the_same_digest(
    name: str, kind: str, provider: Provider
) -> None:
    records = _records(name, kind)
    for r in records:
        msg = r["msg"]
        half = len(msg) // 2
        h = _hash(name, provider)
        h.update(msg[:half])
        fork = h.copy()
        for ctx in (fork, h):  # the fork first: finishing it must leave the original intact
            for chunk in split(msg[half:], CHUNK_PATTERN):
                ctx.update(chunk)
            assert ctx.finalize() == r["md"], r["len"]
    check_ops(provider, {SHA[name]: 2 * len(records)}, TALLY)


@pytest.mark.parametrize("name", list(SHA))
def test_sha_monte_carlo_checkpoints_match(name: str, provider: Provider) -> None:
    monte = hash_monte(name)
    assert len(monte["checkpoints"]) == 100
    checkpoints = 100 if engine_set(provider) == SOFTWARE else MONTE_CHECKPOINTS_OFFLOADED
    algorithm = HASH_CLASSES[SHA[name]]()

    def digest(message: bytes) -> bytes:
        h = Hash(algorithm, provider=provider)
        h.update(message)
        return h.finalize()

    assert run_sha_monte(monte["seed"], digest, checkpoints) == monte["checkpoints"][:checkpoints]
    check_ops(provider, {SHA[name]: checkpoints * 1000}, TALLY)


# --------------------------------------------------------------------------- HMAC


@pytest.mark.parametrize("name", HMAC_HASHES)
def test_hmac_rfc_vectors_finalize_chunks_copy_and_verify(name: str, provider: Provider) -> None:
    records = hmac_vectors(name)
    algorithm = HASH_CLASSES[SHA[name]]()
    for r in records:
        mac = HMAC(r["key"], algorithm, provider=provider)
        mac.update(r["msg"])
        assert mac.finalize() == r["mac"]

        mac = HMAC(r["key"], algorithm, provider=provider)
        for chunk in split(r["msg"], CHUNK_PATTERN):
            mac.update(chunk)
        fork = mac.copy()
        assert fork.finalize() == r["mac"]
        mac.verify(r["mac"])

        mac = HMAC(r["key"], algorithm, provider=provider)
        mac.update(r["msg"])
        with pytest.raises(InvalidSignature):
            mac.verify(_flip(r["mac"]))
    check_ops(provider, {f"hmac-{SHA[name]}": 4 * len(records)}, TALLY)


@pytest.mark.parametrize("name", HMAC_HASHES)
def test_hmac_truncated_output_is_a_prefix_of_the_tag(name: str, provider: Provider) -> None:
    expected = bytes.fromhex(TRUNCATED[name])
    algorithm = HASH_CLASSES[SHA[name]]()
    mac = HMAC(TRUNCATION_KEY, algorithm, provider=provider)
    mac.update(TRUNCATION_MSG)
    tag = mac.finalize()
    assert len(tag) == algorithm.digest_size
    assert tag[: len(expected)] == expected

    # verify() takes the whole tag only, as cryptography's does.
    mac = HMAC(TRUNCATION_KEY, algorithm, provider=provider)
    mac.update(TRUNCATION_MSG)
    with pytest.raises(InvalidSignature):
        mac.verify(expected)
    check_ops(provider, {f"hmac-{SHA[name]}": 2}, TALLY)


# --------------------------------------------------------------------------- CMAC


@pytest.mark.parametrize("bits", CMAC_BITS)
def test_cmac_sp800_38b_vectors_finalize_chunks_copy_and_verify(
    bits: int, provider: Provider
) -> None:
    records = cmac_vectors(bits)
    assert {len(r["msg"]) for r in records} == {0, 16, 40, 64}
    for r in records:
        mac = CMAC(algorithms.AES(r["key"]), provider=provider)
        mac.update(r["msg"])
        assert mac.finalize() == r["mac"], r["count"]

        mac = CMAC(algorithms.AES(r["key"]), provider=provider)
        for chunk in split(r["msg"], CHUNK_PATTERN):
            mac.update(chunk)
        fork = mac.copy()
        assert fork.finalize() == r["mac"], r["count"]
        mac.verify(r["mac"])

        mac = CMAC(algorithms.AES(r["key"]), provider=provider)
        mac.update(r["msg"])
        with pytest.raises(InvalidSignature):
            mac.verify(_flip(r["mac"]))
    check_ops(provider, {f"cmac-aes-{bits}": 4 * len(records)}, TALLY)


def test_chaos_engine_declined_and_faulted_over_this_file(request) -> None:
    TALLY.check(request)
