"""AES-GCM, GMAC and AES-CCM known answers (NIST CAVP) through every engine set.

GCM: a representative subset of the CAVP records (3 per section: every key/IV/PT/AAD/tag length
combination) whose nonce is 8 to 128 bytes (the 1-byte-IV records are outside what OpenSSL 3
and cryptoffload accept). 16-byte tags go through ``aead.AESGCM``; shorter tags through
``AESGCM(key, tag_length=n)`` and through the streaming ``Cipher(AES(key), modes.GCM(...))``.
GMAC is checked against the records with no plaintext (the tag covers the AAD only). CCM runs
every CAVP record through ``aead.AESCCM``. Records flagged FAIL must raise InvalidTag and
nothing else.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from chunks import split
from counting import ChaosTally, check_ops
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives.ciphers import aead as _aead
from vectors.loaders import ccm_vectors, gcm_vectors

from cryptoffload import Provider
from cryptoffload.aead import AESCCM, AESGCM
from cryptoffload.ciphers import Cipher, algorithms, modes
from cryptoffload.core.names import aes_name
from cryptoffload.gmac import GMAC

TALLY = ChaosTally()

GCM_PER_SECTION = 3
#: Chunk sizes cycled through when a streaming context is fed piecemeal.
CHUNK_PATTERN = (1, 15, 17, 33, 5, 48)


def _gcm_records() -> list[dict[str, Any]]:
    return [r for r in gcm_vectors(GCM_PER_SECTION) if 8 <= len(r["iv"]) <= 128]


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[1].rsplit(".", 1)[0]


GCM_FILES = sorted({r["file"] for r in _gcm_records()})
CCM_FILES = sorted({r["file"] for r in ccm_vectors()})


def _gcm(path: str, *, full_tag: bool | None = None, empty_pt: bool = False) -> list[dict]:
    records = [
        r
        for r in _gcm_records()
        if r["file"] == path
        and (full_tag is None or (len(r["tag"]) == 16) == full_tag)
        and (not empty_pt or r["ptlen"] == 0)
    ]
    assert records, (path, full_tag, empty_pt)
    if "Decrypt" in path:  # the decrypt files mix records to accept and records to reject
        assert any(r["fail"] for r in records) and not all(r["fail"] for r in records)
    return records


def _aad(r: dict[str, Any]) -> bytes | None:
    """Empty AAD is passed as None (cryptography treats the two alike)."""
    return r["aad"] or None


def _check_aead_record(aead: AESGCM | AESCCM, r: dict[str, Any], nonce: bytes) -> int:
    """Run one record through ``aead``; returns the number of ops done."""
    sealed = r["ct"] + r["tag"]
    if r["fail"]:
        with pytest.raises(InvalidTag):
            aead.decrypt(nonce, sealed, _aad(r))
        return 1
    assert aead.encrypt(nonce, r["pt"], _aad(r)) == sealed, r["count"]
    assert aead.decrypt(nonce, sealed, _aad(r)) == r["pt"], r["count"]
    return 2


# --------------------------------------------------------------------------- GCM, one-shot


@pytest.mark.parametrize("path", GCM_FILES, ids=_stem)
def test_aesgcm_16_byte_tag_records_encrypt_decrypt_and_fail_with_invalid_tag(
    path: str, provider: Provider
) -> None:
    performed: Counter[str] = Counter()
    for r in _gcm(path, full_tag=True):
        aead = AESGCM(r["key"], provider=provider)
        performed[aes_name(len(r["key"]), "gcm")] += _check_aead_record(aead, r, r["iv"])
    check_ops(provider, performed, TALLY)


@pytest.mark.parametrize("path", GCM_FILES, ids=_stem)
def test_aesgcm_short_tag_records_through_tag_length(path: str, provider: Provider) -> None:
    performed: Counter[str] = Counter()
    lengths = set()
    for r in _gcm(path, full_tag=False):
        lengths.add(len(r["tag"]))
        aead = AESGCM(r["key"], tag_length=len(r["tag"]), provider=provider)
        performed[aes_name(len(r["key"]), "gcm")] += _check_aead_record(aead, r, r["iv"])
    assert lengths == {4, 8, 12, 13, 14, 15}
    check_ops(provider, performed, TALLY)


# --------------------------------------------------------------------------- GCM, streaming


@pytest.mark.parametrize("path", GCM_FILES, ids=_stem)
def test_gcm_cipher_context_every_tag_length_tag_in_mode_and_finalize_with_tag(
    path: str, provider: Provider
) -> None:
    """Encryptor's tag prefix, decryptor with the tag in the mode, decryptor with
    finalize_with_tag fed in chunks; every tag length, min_tag_length = the tag's length."""
    performed: Counter[str] = Counter()
    for r in _gcm(path):
        n = len(r["tag"])
        aes = algorithms.AES(r["key"])
        alg = aes_name(len(r["key"]), "gcm")
        if not r["fail"]:
            enc = Cipher(aes, modes.GCM(r["iv"]), provider=provider).encryptor()
            if r["aad"]:
                enc.authenticate_additional_data(r["aad"])
            assert enc.update(r["pt"]) + enc.finalize() == r["ct"], r["count"]
            assert enc.tag[:n] == r["tag"], r["count"]
            performed[alg] += 1

        mode = modes.GCM(r["iv"], r["tag"], min_tag_length=n)
        dec = Cipher(aes, mode, provider=provider).decryptor()
        if r["aad"]:
            dec.authenticate_additional_data(r["aad"])
        out = dec.update(r["ct"])
        performed[alg] += 1
        if r["fail"]:
            with pytest.raises(InvalidTag):
                dec.finalize()
        else:
            assert out + dec.finalize() == r["pt"], r["count"]

        dec = Cipher(aes, modes.GCM(r["iv"], min_tag_length=n), provider=provider).decryptor()
        for piece in split(r["aad"], CHUNK_PATTERN):
            dec.authenticate_additional_data(piece)
        out = b"".join(dec.update(piece) for piece in split(r["ct"], CHUNK_PATTERN))
        performed[alg] += 1
        if r["fail"]:
            with pytest.raises(InvalidTag):
                dec.finalize_with_tag(r["tag"])
        else:
            assert out + dec.finalize_with_tag(r["tag"]) == r["pt"], r["count"]
    # Streaming GCM is always OpenSSL's: engines that claim it are counted as declining it.
    check_ops(provider, performed, TALLY, streamed=performed)


# --------------------------------------------------------------------------- GMAC


@pytest.mark.parametrize("path", GCM_FILES, ids=_stem)
def test_gmac_equals_gcm_tag_over_aad_of_empty_plaintext_records(
    path: str, provider: Provider
) -> None:
    performed: Counter[str] = Counter()
    for r in _gcm(path, empty_pt=True):
        key, iv, tag = r["key"], r["iv"], r["tag"]
        alg = f"gmac-aes-{len(key) * 8}"
        bad = bytes([tag[0] ^ 0x80]) + tag[1:]
        if r["fail"]:
            gmac = GMAC(key, iv, tag_length=len(tag), provider=provider)
            gmac.update(r["aad"])
            with pytest.raises(InvalidSignature):
                gmac.verify(tag)
            performed[alg] += 1
            continue
        gmac = GMAC(key, iv, tag_length=len(tag), provider=provider)
        gmac.update(r["aad"])
        assert gmac.finalize() == tag, r["count"]

        gmac = GMAC(key, iv, tag_length=len(tag), provider=provider)
        for piece in split(r["aad"], CHUNK_PATTERN):
            gmac.update(piece)
        gmac.verify(tag)

        gmac = GMAC(key, iv, tag_length=len(tag), provider=provider)
        gmac.update(r["aad"])
        with pytest.raises(InvalidSignature):
            gmac.verify(bad)
        performed[alg] += 3
    check_ops(provider, performed, TALLY)


# --------------------------------------------------------------------------- CCM


@pytest.mark.parametrize("path", CCM_FILES, ids=_stem)
def test_aesccm_records_encrypt_decrypt_and_dvpt_fail_with_invalid_tag(
    path: str, provider: Provider
) -> None:
    performed: Counter[str] = Counter()
    records = [r for r in ccm_vectors() if r["file"] == path]
    assert records
    for r in records:
        assert len(r["tag"]) == r["tlen"] and len(r["nonce"]) == r["nlen"]
        aead = AESCCM(r["key"], tag_length=r["tlen"], provider=provider)
        performed[aes_name(len(r["key"]), "ccm")] += _check_aead_record(aead, r, r["nonce"])
    if "DVPT" in path:
        assert any(r["fail"] for r in records) and not all(r["fail"] for r in records)
    check_ops(provider, performed, TALLY)


def test_aesccm_longest_payload_a_13_byte_nonce_allows_round_trips(provider: Provider) -> None:
    """A 13-byte nonce leaves 2 bytes to count the payload: 65535 bytes fit, tag not counted."""
    key, nonce, aad = bytes(range(16)), bytes(range(13)), b"header"
    payload = bytes(i % 251 for i in range(65535))
    sealed = _aead.AESCCM(key).encrypt(nonce, payload, aad)  # cryptography as the reference
    aead = AESCCM(key, provider=provider)
    assert aead.encrypt(nonce, payload, aad) == sealed
    assert aead.decrypt(nonce, sealed, aad) == payload
    with pytest.raises(ValueError):
        aead.encrypt(nonce, payload + b"\x00", aad)
    check_ops(provider, {"aes-128-ccm": 2}, TALLY)


def test_chaos_engine_declined_and_faulted_over_this_file(request) -> None:
    TALLY.check(request)
