"""The pass-through engine: named by spec, never discovered, gives every op software's answer."""

from __future__ import annotations

import pytest

from cryptoffload import Provider, engines, using
from cryptoffload.aead import AESGCM
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
