"""The software engine's AES-GCM engine stream (the pass-through engine's ``open_aead_stream``):
its compiled twin (engines/_gcmstream.c) and its pure one give `cryptography`'s answers, decline
what they do not do, and behave alike on misuse."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from cryptoffload.core.ops import AeadOp
from cryptoffload.engines import software
from cryptoffload.errors import Unavailable


def _compiled() -> Any:
    opener = software._compiled_gcm_stream()
    if opener is None:
        pytest.skip("engines/_gcmstream.c is not built here (or CRYPTOFFLOAD_PURE_PYTHON is set)")
    return opener


TWINS = {"pure": lambda: software.py_gcm_stream, "compiled": _compiled}


@pytest.fixture(params=sorted(TWINS))
def open_stream(request: pytest.FixtureRequest) -> Any:
    return TWINS[request.param]()


def _op(kind: str, key: Any, iv: Any, alg: str | None = None) -> AeadOp:
    return AeadOp(alg or f"aes-{len(key) * 8}-gcm", kind, key, iv, b"", b"", 16)


def _reference(key: bytes, iv: bytes, aad: bytes, data: bytes) -> tuple[bytes, bytes]:
    enc = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor()
    enc.authenticate_additional_data(aad)
    out = enc.update(data) + enc.finalize()
    return out, enc.tag


@pytest.mark.parametrize("key_size", [16, 24, 32])
@pytest.mark.parametrize("iv_size", [8, 12, 16])
def test_a_stream_gives_cryptographys_output_and_tag_and_checks_the_tag(
    open_stream: Any, key_size: int, iv_size: int
) -> None:
    key, iv = bytes(range(key_size)), bytes(range(100, 100 + iv_size))
    aad, data = b"header" * 3, bytes(range(256)) * 5 + b"tail"
    sealed, tag = _reference(key, iv, aad, data)
    enc = open_stream(_op("encrypt", key, iv))
    enc.update_aad(aad[:7])
    enc.update_aad(aad[7:])
    out = enc.update(data[:100]) + enc.update(data[100:])
    assert (out, enc.finalize()) == (sealed, tag)
    dec = open_stream(_op("decrypt", key, iv))
    dec.update_aad(aad)
    assert dec.update(sealed) + dec.finalize(tag) == data
    bad = open_stream(_op("decrypt", key, iv))
    bad.update_aad(aad)
    bad.update(sealed)
    with pytest.raises(InvalidTag):
        bad.finalize(bytes([tag[0] ^ 1]) + tag[1:])


@pytest.mark.parametrize("length", [4, 8, 13, 16])
def test_a_decryption_takes_any_tag_of_four_bytes_and_more(open_stream: Any, length: int) -> None:
    key, iv = bytes(16), bytes(12)
    sealed, tag = _reference(key, iv, b"", b"message")
    dec = open_stream(_op("decrypt", key, iv))
    assert dec.update(sealed) + dec.finalize(tag=tag[:length]) == b"message"


def test_a_decryption_with_no_tag_or_a_short_one_is_refused(open_stream: Any) -> None:
    key, iv = bytes(16), bytes(12)
    sealed, tag = _reference(key, iv, b"", b"message")
    for given in (None, b"", tag[:3]):
        dec = open_stream(_op("decrypt", key, iv))
        dec.update(sealed)
        with pytest.raises(ValueError, match="tag"):
            dec.finalize(given)


def test_a_key_or_nonce_that_is_not_bytes_is_taken(open_stream: Any) -> None:
    key, iv = bytes(range(16)), bytes(12)
    sealed, tag = _reference(key, iv, b"a", b"b" * 40)
    enc = open_stream(_op("encrypt", bytearray(key), memoryview(iv)))
    enc.update_aad(b"a")
    assert (enc.update(b"b" * 40), enc.finalize()) == (sealed, tag)


def test_a_key_seen_for_the_first_time_is_kept_and_taken_again(open_stream: Any) -> None:
    software._KEYED.clear()
    key, iv = bytes(range(50, 66)), bytes(12)
    sealed, tag = _reference(key, iv, b"", b"x" * 33)
    for _ in range(3):
        enc = open_stream(_op("encrypt", key, iv))
        assert (enc.update(b"x" * 33), enc.finalize()) == (sealed, tag)
    assert software._KEYED.peek((software._keyed_cipher, key, "aes-128-gcm")) is not None


@pytest.mark.parametrize("alg", ["aes-128-ctr", "aes-128-ccm", "chacha20-poly1305", "sm4-gcm"])
def test_an_algorithm_other_than_aes_gcm_is_declined(open_stream: Any, alg: str) -> None:
    key = bytes(16)
    software._KEYED.get(software._keyed_cipher, key, "aes-128-ctr")  # an AES object kept
    with pytest.raises(Unavailable) as declined:
        open_stream(_op("encrypt", key, bytes(12), alg=alg))
    assert declined.value.reason == "streaming"


def test_a_closed_stream_lets_go_of_its_context_and_cannot_finish(open_stream: Any) -> None:
    stream = open_stream(_op("encrypt", bytes(16), bytes(12)))
    stream.close()
    assert (stream._ctx, stream.update, stream.update_aad) == (None, None, None)
    with pytest.raises(AttributeError):
        stream.finalize()


def test_finalize_takes_one_tag_at_most(open_stream: Any) -> None:
    stream = open_stream(_op("decrypt", bytes(16), bytes(12)))
    with pytest.raises(TypeError):
        stream.finalize(b"1" * 16, b"2" * 16)


def test_a_stale_compiled_stream_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    import cryptoffload.engines

    stale = types.ModuleType("cryptoffload.engines._gcmstream")
    stale.API = software.GCM_STREAM_API - 1  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cryptoffload.engines._gcmstream", stale)
    monkeypatch.setattr(cryptoffload.engines, "_gcmstream", stale, raising=False)
    monkeypatch.delenv("CRYPTOFFLOAD_PURE_PYTHON", raising=False)
    assert software._compiled_gcm_stream() is None


def test_the_pure_python_setting_keeps_the_pure_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRYPTOFFLOAD_PURE_PYTHON", "1")
    assert software._compiled_gcm_stream() is None
