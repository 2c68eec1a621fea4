"""Overlapping input and output buffers of ``*_into`` calls: refused on every path where the
installed `cryptography` refuses them (51 on: "data and buf must not overlap"); where it takes
them (50), every engine path still gives the right answer, and no engine is handed a buffer it
would write over its own input."""

from __future__ import annotations

import os

import pytest
from cryptography.hazmat.primitives import hashes as c_hashes
from cryptography.hazmat.primitives.ciphers import aead as c_aead

from cryptoffload import Policy, Provider, using
from cryptoffload._buffers import REFUSED, disjoint_input, overlap, span
from cryptoffload.aead import (
    AESCCM,
    AESGCM,
    AESGCMSIV,
    AESOCB3,
    AESSIV,
    ChaCha20Poly1305,
)
from cryptoffload.ciphers import Cipher, algorithms, modes
from cryptoffload.kdf.concatkdf import ConcatKDFHash
from cryptoffload.kdf.hkdf import HKDF
from cryptoffload.kdf.x963kdf import X963KDF

OVERLAP = "data and buf must not overlap"
TAKE_ALL = Policy(min_size={"*": 0})
#: The paths an op can take: software's direct path, the engine path (an engine that answers
#: through OpenSSL), and the CAAM model (which writes into the caller's buffer).
PATHS = ["software", "passthrough", "caam:model=t2080"]
PAYLOAD = os.urandom(1000)
AAD = b"additional"


def provider_for(path: str) -> Provider:
    return Provider([] if path == "software" else [path], policy=TAKE_ALL)


def test_refused_agrees_with_what_the_installed_cryptography_does():
    key, nonce = bytes(16), bytes(12)
    buf = bytearray(len(PAYLOAD) + 16 + 8)
    buf[: len(PAYLOAD)] = PAYLOAD
    view = memoryview(buf)
    try:
        c_aead.AESGCM(key).encrypt_into(nonce, view[: len(PAYLOAD)], AAD, view[8:])
    except ValueError as exc:
        assert str(exc) == OVERLAP
        assert REFUSED
    else:
        assert not REFUSED


def test_spans_and_overlap_of_views_bytes_and_bytearrays():
    buf = bytearray(64)
    view = memoryview(buf)
    at, n = span(view[16:32])
    assert (at - span(buf)[0], n) == (16, 16)
    assert overlap(view[:32], view[31:])
    assert not overlap(view[:32], view[32:])  # adjacent is not overlapping
    assert overlap(view[8:16].toreadonly(), buf)  # a read-only view of writable memory
    assert overlap(buf, buf)
    assert not overlap(bytes(buf), buf)
    assert not overlap(bytearray(64), buf)
    assert not overlap(view[:0], buf)


def test_a_disjoint_input_is_passed_on_and_an_overlapping_one_refused_or_copied():
    buf = bytearray(range(32))
    data = memoryview(buf)[:16]
    assert disjoint_input(b"x" * 16, buf) == b"x" * 16
    assert disjoint_input(memoryview(buf)[16:], bytearray(16)) is not None
    if REFUSED:
        with pytest.raises(ValueError, match=OVERLAP):
            disjoint_input(data, buf)
    else:
        copy = disjoint_input(data, buf)
        assert copy == bytes(range(16)) and copy.__class__ is bytes


def _aead_cases():
    cases = [
        (AESGCM, 16, 12),
        (AESCCM, 16, 12),
        (ChaCha20Poly1305, 32, 12),
        (AESOCB3, 16, 12),
        (AESGCMSIV, 16, 12),
    ]
    for cls, key_len, nonce_len in cases:
        for path in PATHS:
            if path.startswith("caam") and cls not in (AESGCM, AESCCM):
                continue  # the CAAM takes GCM and CCM; the others fall to software there
            yield pytest.param(cls, key_len, nonce_len, path, id=f"{cls.__name__}-{path}")


@pytest.mark.parametrize(("cls", "key_len", "nonce_len", "path"), list(_aead_cases()))
@pytest.mark.parametrize("offset", [0, 7])
def test_aead_into_with_overlapping_buffers(cls, key_len, nonce_len, path, offset):
    provider = provider_for(path)
    key, nonce = os.urandom(key_len), os.urandom(nonce_len)
    aead = cls(key, provider=provider)
    sealed = cls(key).encrypt(nonce, PAYLOAD, AAD)
    n = len(PAYLOAD)

    into = bytearray(offset + n + 16)
    into[:n] = PAYLOAD
    view = memoryview(into)
    if REFUSED:
        with pytest.raises(ValueError, match=OVERLAP):
            aead.encrypt_into(nonce, view[:n], AAD, view[offset:])
    elif path != "software":  # an engine path: the right answer; software's is cryptography's
        aead.encrypt_into(nonce, view[:n], AAD, view[offset:])
        assert bytes(view[offset:]) == sealed

    into = bytearray(sealed + bytes(offset))
    view = memoryview(into)
    if REFUSED:
        with pytest.raises(ValueError, match=OVERLAP):
            aead.decrypt_into(nonce, view[: len(sealed)], AAD, view[offset : offset + n])
    elif path != "software":
        aead.decrypt_into(nonce, view[: len(sealed)], AAD, view[offset : offset + n])
        assert bytes(view[offset : offset + n]) == PAYLOAD


@pytest.mark.parametrize("path", ["software", "passthrough"])
def test_aes_siv_into_with_overlapping_buffers(path):
    siv = AESSIV(bytes(32), provider=provider_for(path))
    sealed = AESSIV(bytes(32)).encrypt(PAYLOAD, [AAD])
    into = bytearray(len(PAYLOAD) + 16)
    into[: len(PAYLOAD)] = PAYLOAD
    view = memoryview(into)
    if REFUSED:
        with pytest.raises(ValueError, match=OVERLAP):
            siv.encrypt_into(view[: len(PAYLOAD)], [AAD], view)
    elif path != "software":
        siv.encrypt_into(view[: len(PAYLOAD)], [AAD], view)
        assert bytes(into) == sealed


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("mode", ["ctr", "cbc"])
def test_cipher_update_into_in_place(path, mode):
    key, iv = os.urandom(16), os.urandom(16)
    make = modes.CTR if mode == "ctr" else modes.CBC
    expected = Cipher(algorithms.AES(key), make(iv)).encryptor().update(PAYLOAD[:512])
    buf = bytearray(PAYLOAD[:512] + bytes(15))
    ctx = Cipher(algorithms.AES(key), make(iv), provider=provider_for(path)).encryptor()
    if REFUSED:
        with pytest.raises(ValueError, match=OVERLAP):
            ctx.update_into(memoryview(buf)[:512], buf)
        assert bytes(buf[:512]) == PAYLOAD[:512]  # nothing written before the refusal
    elif path != "software":
        assert ctx.update_into(memoryview(buf)[:512], buf) == 512
        assert bytes(buf[:512]) == expected


def test_a_gcm_stream_refuses_overlap_on_the_engine_path():
    key, iv = os.urandom(16), os.urandom(12)
    buf = bytearray(PAYLOAD[:256] + bytes(16))
    ctx = Cipher(algorithms.AES(key), modes.GCM(iv), provider=provider_for("passthrough"))
    encryptor = ctx.encryptor()
    expected = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor().update(PAYLOAD[:256])
    if REFUSED:
        with pytest.raises(ValueError, match=OVERLAP):
            encryptor.update_into(memoryview(buf)[:256], memoryview(buf)[3:])
    else:
        encryptor.update_into(memoryview(buf)[:256], memoryview(buf)[3:])
        assert bytes(buf[3:259]) == expected


def test_a_small_overlapping_buffer_is_refused_for_its_size_first():
    # As `cryptography` orders its checks: the buffer's room before the overlap.
    buf = bytearray(PAYLOAD[:64])
    ctx = Cipher(
        algorithms.AES(bytes(16)), modes.CBC(bytes(16)), provider=provider_for("passthrough")
    ).encryptor()
    with pytest.raises(ValueError, match="buffer must be at least 79 bytes"):
        ctx.update_into(memoryview(buf)[:64], buf)


@pytest.mark.parametrize("path", PATHS)
def test_adjacent_buffers_are_not_overlapping(path):
    gcm = AESGCM(bytes(16), provider=provider_for(path))
    buf = bytearray(len(PAYLOAD) * 2 + 16)
    buf[: len(PAYLOAD)] = PAYLOAD
    view = memoryview(buf)
    gcm.encrypt_into(bytes(12), view[: len(PAYLOAD)], None, view[len(PAYLOAD) :])
    assert bytes(view[len(PAYLOAD) :]) == AESGCM(bytes(16)).encrypt(bytes(12), PAYLOAD, None)


@pytest.mark.parametrize(
    "make",
    [
        lambda: HKDF(c_hashes.SHA256(), 32, None, None),
        lambda: X963KDF(c_hashes.SHA256(), 32, None),
        lambda: ConcatKDFHash(c_hashes.SHA256(), 32, None),
    ],
    ids=["hkdf", "x963", "concat-hash"],
)
def test_derive_into_with_the_key_material_in_the_buffer(make):
    buf = bytearray(os.urandom(32))
    expected = make().derive(bytes(buf))
    with using(provider_for("passthrough")):
        kdf = make()
        if REFUSED:
            with pytest.raises(ValueError, match=OVERLAP):
                kdf.derive_into(memoryview(buf)[:16], buf)
        else:
            kdf.derive_into(bytes(buf), buf)
            assert bytes(buf) == expected


def test_dma_buffers_overlapping_on_the_caam():
    provider = provider_for("caam:model=t2080")
    caam = provider.engines[0]
    key, nonce = os.urandom(16), os.urandom(12)
    sealed = AESGCM(key).encrypt(nonce, PAYLOAD, None)
    with caam.buffer(len(PAYLOAD) + 32) as dma, using(provider):
        dma[: len(PAYLOAD)] = PAYLOAD
        gcm = AESGCM(key)
        if REFUSED:
            with pytest.raises(ValueError, match=OVERLAP):
                gcm.encrypt_into(nonce, dma[: len(PAYLOAD)], None, dma[8 : 8 + len(sealed)])
        else:
            gcm.encrypt_into(nonce, dma[: len(PAYLOAD)], None, dma[8 : 8 + len(sealed)])
            assert bytes(dma[8 : 8 + len(sealed)]) == sealed
