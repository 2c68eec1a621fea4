"""The AF_ALG engine's parts that need no kernel support: specs, names, probe without AF_ALG."""

from __future__ import annotations

import socket

import pytest

from cryptoffload import Provider
from cryptoffload.engines import afalg, from_spec
from cryptoffload.errors import EngineError


def test_specs_name_the_engine():
    assert from_spec("afalg").name == "afalg"
    assert from_spec("afalg:any").name == "afalg:any"
    engine = from_spec("afalg:cbc-aes-caam")
    assert engine.name == "afalg:cbc-aes-caam" and engine.driver == "cbc-aes-caam"


def test_driver_names_with_spaces_are_refused():
    with pytest.raises(EngineError, match="no spaces"):
        from_spec("afalg:cbc aes")


def test_kernel_names_cover_the_modes_hashes_and_rng():
    names = afalg.KERNEL_NAMES
    assert names["aes-128-cbc"] == ("skcipher", "cbc(aes)")
    assert names["aes-256-gcm"] == ("aead", "gcm(aes)")
    assert names["hmac-sha256"] == ("hash", "hmac(sha256)")
    assert names["cmac-aes-128"] == ("hash", "cmac(aes)")
    assert names["drbg"] == ("rng", "stdrng")


def test_ccm_iv_carries_the_length_field_size():
    iv = afalg._ccm_iv(bytes(range(7)))
    assert len(iv) == 16 and iv[0] == 7 and iv[1:8] == bytes(range(7))


def _af_alg_works() -> bool:
    try:
        socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET).close()
        return True
    except (OSError, AttributeError):
        return False


@pytest.mark.skipif(_af_alg_works(), reason="this kernel has AF_ALG (the guest suite covers it)")
def test_probe_without_af_alg_names_the_kernel_options():
    caps = afalg.AfalgEngine().probe()
    assert not caps.available
    assert "CONFIG_CRYPTO_USER_API_SKCIPHER" in caps.reason
    p = Provider(["afalg"])
    assert "afalg" in p.unavailable and [e.name for e in p.engines] == ["software"]
