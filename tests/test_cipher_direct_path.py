"""``Cipher`` made and its contexts opened on a lane no engine claims (CipherCore's direct path):
no Python of ours per message, `cryptography`'s answers and errors, the counts of the contexts
it replaces, and the provider in force followed."""

from __future__ import annotations

import pytest
from cryptography.exceptions import AlreadyFinalized, InvalidTag, NotYetFinalized
from cryptography.hazmat.primitives.ciphers import Cipher as RefCipher
from cryptography.hazmat.primitives.ciphers import algorithms as ref_algorithms
from cryptography.hazmat.primitives.ciphers import modes as ref_modes
from direct_path_probe import ours_run, software
from doubles import TakeAllEngine

import cryptoffload
from cryptoffload import Provider
from cryptoffload.ciphers import Cipher, algorithms, modes
from cryptoffload.core import directpath
from cryptoffload.core.counters import FOLD_AT

KEY, IV, NONCE = bytes(range(16)), bytes(range(16, 32)), bytes(12)
DATA = bytes(range(256)) * 5 + bytes(112)  # 1392 bytes: whole blocks


def ctr_message() -> bytes:
    return Cipher(algorithms.AES(KEY), modes.CTR(IV)).encryptor().update(DATA)


def cbc_message() -> bytes:
    c = Cipher(algorithms.AES(KEY), modes.CBC(IV)).encryptor()
    return c.update(DATA) + c.finalize()


def gcm_message() -> bytes:
    c = Cipher(algorithms.AES(KEY), modes.GCM(NONCE)).encryptor()
    c.authenticate_additional_data(b"header")
    out = c.update(DATA) + c.finalize()
    return out + c.tag


def reference(mode, data: bytes = DATA, aad: bytes | None = None) -> bytes:
    c = RefCipher(ref_algorithms.AES(KEY), mode).encryptor()
    if aad is not None:
        c.authenticate_additional_data(aad)
    out = c.update(data) + c.finalize()
    return out + (c.tag if aad is not None else b"")


@pytest.mark.skipif(not directpath.COMPILED, reason="the compiled twin runs no Python by design")
@pytest.mark.parametrize(
    "message", [ctr_message, cbc_message, gcm_message], ids=["ctr", "cbc", "gcm"]
)
def test_a_new_cipher_per_message_runs_no_python_of_ours(default_software, message):
    message()  # the first Cipher of its kind is made the slow way, which opens the direct path
    assert ours_run(message) == []


def test_new_ciphers_per_message_give_cryptographys_output(default_software):
    for _ in range(3):
        assert ctr_message() == reference(ref_modes.CTR(IV))
        assert cbc_message() == reference(ref_modes.CBC(IV))
        assert gcm_message() == reference(ref_modes.GCM(NONCE), aad=b"header")
    for key in (bytes(24), bytes(32)):
        for _ in range(2):
            ours = Cipher(algorithms.AES(key), modes.ECB()).encryptor().update(DATA)
            ref = RefCipher(ref_algorithms.AES(key), ref_modes.ECB()).encryptor()
            assert ours == ref.update(DATA)


def test_gcm_decryption_with_the_tag_in_the_mode_or_given_at_the_end(default_software):
    sealed = reference(ref_modes.GCM(NONCE), aad=b"header")
    ciphertext, tag = sealed[:-16], sealed[-16:]
    for _ in range(2):
        d = Cipher(algorithms.AES(KEY), modes.GCM(NONCE, tag)).decryptor()
        d.authenticate_additional_data(b"header")
        assert d.update(ciphertext) + d.finalize() == DATA
        assert not hasattr(d, "tag")
        d = Cipher(algorithms.AES(KEY), modes.GCM(NONCE)).decryptor()
        d.authenticate_additional_data(b"header")
        assert d.update(ciphertext) + d.finalize_with_tag(tag) == DATA
        bad = Cipher(algorithms.AES(KEY), modes.GCM(NONCE, bytes(16))).decryptor()
        bad.authenticate_additional_data(b"header")
        bad.update(ciphertext)
        with pytest.raises(InvalidTag):
            bad.finalize()
    assert software(default_software, "aes-128-gcm") == {
        "ops": 6,
        "bytes": 6 * len(ciphertext),
        "declined": {},
        "faults": 0,
    }


def test_gcm_contexts_keep_cryptographys_rules(default_software):
    for _ in range(2):
        e = Cipher(algorithms.AES(KEY), modes.GCM(NONCE)).encryptor()
        with pytest.raises(NotYetFinalized):
            _ = e.tag
        e.update(b"x")
        e.finalize()
        with pytest.raises(AlreadyFinalized):
            e.update(b"y")
        with pytest.raises(ValueError, match="Authentication tag must be None when encrypting"):
            Cipher(algorithms.AES(KEY), modes.GCM(NONCE, bytes(16))).encryptor()
        d = Cipher(algorithms.AES(KEY), modes.GCM(NONCE)).decryptor()
        d.update(b"x")
        with pytest.raises(ValueError, match="GCM tag"):
            d.finalize_with_tag(b"short")


def test_bad_arguments_get_our_errors_on_a_path_already_open(default_software):
    ctr_message()
    cbc_message()
    with pytest.raises(ValueError, match="CBC IV must be 16 bytes, got 15"):
        Cipher(algorithms.AES(KEY), modes.CBC(IV[:15]))
    with pytest.raises(ValueError, match="CTR IV must be 16 bytes, got 8"):
        Cipher(algorithms.AES(KEY), modes.CTR(IV[:8]))
    with pytest.raises(TypeError, match="provider must be a cryptoffload Provider"):
        Cipher(algorithms.AES(KEY), modes.CTR(IV), provider="software")
    c = Cipher(algorithms.AES(KEY), modes.CBC(IV)).encryptor()
    c.update(DATA[:10])
    with pytest.raises(ValueError, match="not a multiple of the block length"):  # OpenSSL's
        c.finalize()


def test_contexts_made_per_message_count_as_before_and_keep_the_record_short(default_software):
    n = FOLD_AT + 9
    for _ in range(n):
        ctr_message()
    cell = software(default_software, "aes-128-ctr")
    assert (cell["ops"], cell["bytes"]) == (n, n * len(DATA))
    assert len(default_software.lane("aes-128-ctr").tally_q) <= FOLD_AT + 1


def test_contexts_follow_the_provider_in_force(default_software):
    ctr_message()
    engine = TakeAllEngine()
    claiming = Provider([engine])
    with cryptoffload.using(claiming):
        assert ctr_message() == reference(ref_modes.CTR(IV))
    explicit = Cipher(algorithms.AES(KEY), modes.CTR(IV), provider=claiming).encryptor()
    assert explicit.update(DATA) == reference(ref_modes.CTR(IV))
    ctr_message()
    assert claiming.counters.snapshot()[engine.name]["aes-128-ctr"]["ops"] == 2
    assert software(default_software, "aes-128-ctr")["ops"] == 2
