"""The pass-through engine: named by spec, never discovered, gives every op software's answer."""

from __future__ import annotations

import pytest

from cryptoffload import Policy, Provider, engines, using
from cryptoffload.aead import AESGCM
from cryptoffload.ciphers import Cipher, algorithms, modes
from cryptoffload.errors import UnknownEngine
from cryptoffload.hashes import SHA256, Hash


def test_passthrough_is_named_by_spec_and_not_discovered():
    assert engines.from_spec("passthrough").name == "passthrough"
    assert "passthrough" not in [engine.name for engine in engines.discover()]
    with pytest.raises(UnknownEngine, match="takes no options"):
        engines.from_spec("passthrough:x")


def test_passthrough_takes_every_op_with_softwares_answer():
    provider = Provider(["passthrough"])
    with using(provider):
        sealed = AESGCM(bytes(16)).encrypt(bytes(12), b"data", b"aad")
        digest = Hash(SHA256())
        digest.update(b"abc")
        out = digest.finalize()
    reference = Provider([])
    assert sealed == AESGCM(bytes(16), provider=reference).encrypt(bytes(12), b"data", b"aad")
    assert out.hex().startswith("ba7816bf")
    counted = provider.counters.snapshot()
    assert counted["passthrough"]["aes-128-gcm"]["ops"] == 1
    assert counted["passthrough"]["sha256"]["ops"] == 1


def test_passthrough_takes_small_blocks_the_built_in_thresholds_give_software():
    """A 16-byte AES-ECB block (QUIC header protection) is under the built-in 256-byte
    minimum for ECB: the pass-through engine still takes it, unless a policy says otherwise."""
    provider = Provider(["passthrough"])
    with using(provider):
        Cipher(algorithms.AES(bytes(32)), modes.ECB()).encryptor().update(bytes(16))
    counted = provider.counters.snapshot()
    assert counted["passthrough"]["aes-256-ecb"]["ops"] == 1
    assert not counted.get("software", {}).get("aes-256-ecb", {}).get("ops")

    held = Provider(["passthrough"], policy=Policy(min_size={"aes-*-ecb": 64}))
    with using(held):
        Cipher(algorithms.AES(bytes(32)), modes.ECB()).encryptor().update(bytes(16))
    counted = held.counters.snapshot()
    assert counted["software"]["aes-256-ecb"]["ops"] == 1
    assert counted["passthrough"]["aes-256-ecb"]["declined"] == {"below-threshold": 1}


def test_passthrough_streams_gcm_through_cipher_and_long_hashes():
    from cryptography.hazmat.primitives.ciphers import Cipher as CCipher
    from cryptography.hazmat.primitives.ciphers import algorithms as c_algorithms
    from cryptography.hazmat.primitives.ciphers import modes as c_modes

    from cryptoffload.ciphers import Cipher, algorithms, modes

    provider = Provider(["passthrough"])
    key, iv, data = bytes(range(16)), bytes(12), bytes(1000)
    with using(provider):
        enc = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor()
        enc.authenticate_additional_data(b"aad")
        out = enc.update(data[:333]) + enc.update(data[333:]) + enc.finalize()
        dec = Cipher(algorithms.AES(key), modes.GCM(iv, enc.tag)).decryptor()
        dec.authenticate_additional_data(b"aad")
        assert dec.update(out) + dec.finalize() == data
        big = Hash(SHA256())
        big.update(bytes(5 * 1024 * 1024))
        digest = big.finalize()
    ref = CCipher(c_algorithms.AES(key), c_modes.GCM(iv)).encryptor()
    ref.authenticate_additional_data(b"aad")
    assert out == ref.update(data) + ref.finalize() and enc.tag == ref.tag
    import hashlib

    assert digest == hashlib.sha256(bytes(5 * 1024 * 1024)).digest()
    counted = provider.counters.snapshot()["passthrough"]
    assert counted["aes-128-gcm"]["ops"] == 2
    assert counted["aes-128-gcm"]["declined"] == {}
    assert counted["sha256"]["ops"] == 1
