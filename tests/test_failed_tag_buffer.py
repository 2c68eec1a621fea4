"""A failed tag leaves zeros in a ``decrypt_into`` buffer, whatever was there and whichever path
ran (cryptography 51 zeroes it; OpenSSL may have written plaintext before the tag failed)."""

from __future__ import annotations

import os

import pytest
from cryptography.exceptions import InvalidTag

from cryptoffload import Policy, Provider
from cryptoffload.aead import AESCCM, AESGCM, AESGCMSIV, AESOCB3, AESSIV, ChaCha20Poly1305

#: software's direct path, the engine path, and an engine the policy holds every op back from.
PROVIDERS = {
    "software": lambda: Provider([]),
    "passthrough": lambda: Provider(["passthrough"], policy=Policy(min_size={"*": 0})),
    "held-back": lambda: Provider(["passthrough"], policy=Policy(min_size={"*": 1 << 30})),
}
NONCE_AEADS = [(AESGCM, 16), (AESCCM, 16), (ChaCha20Poly1305, 32), (AESOCB3, 16), (AESGCMSIV, 16)]
JUNK = 0xEE


@pytest.mark.parametrize("path", list(PROVIDERS))
@pytest.mark.parametrize(("cls", "key_len"), NONCE_AEADS, ids=lambda v: getattr(v, "__name__", ""))
def test_a_failed_tag_zeroes_the_buffer(cls, key_len, path):
    aead = cls(os.urandom(key_len), provider=PROVIDERS[path]())
    nonce = os.urandom(12)
    sealed = bytearray(aead.encrypt(nonce, os.urandom(100), b"aad"))
    sealed[3] ^= 1
    buf = bytearray([JUNK]) * 100
    with pytest.raises(InvalidTag):
        aead.decrypt_into(nonce, bytes(sealed), b"aad", buf)
    assert buf == bytearray(100)


@pytest.mark.parametrize("path", list(PROVIDERS))
def test_a_failed_siv_tag_zeroes_the_buffer(path):
    siv = AESSIV(os.urandom(32), provider=PROVIDERS[path]())
    sealed = bytearray(siv.encrypt(os.urandom(100), [b"aad"]))
    sealed[20] ^= 1
    buf = bytearray([JUNK]) * 100
    with pytest.raises(InvalidTag):
        siv.decrypt_into(bytes(sealed), [b"aad"], buf)
    assert buf == bytearray(100)
