"""The AF_ALG engine's parts that need no kernel support: specs, names, probe without AF_ALG."""

from __future__ import annotations

import socket

import pytest

from cryptoffload import Provider
from cryptoffload.engines import _splice, afalg, from_spec
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


needs_splice = pytest.mark.skipif(not _splice.AVAILABLE, reason="no vmsplice on this platform")


@needs_splice
@pytest.mark.parametrize("kind", [bytes, bytearray])
def test_splice_pipe_moves_every_byte_in_order_across_several_pipe_loads(kind):
    import fcntl
    import os

    data = kind(os.urandom(200 * 1024))  # more than three loads of the 64 KiB pipe
    pipe = _splice.SplicePipe(64 * 1024)
    sink_r, sink_w = os.pipe()
    fcntl.fcntl(sink_w, fcntl.F_SETPIPE_SZ, 1 << 20)
    try:
        pipe.send(sink_w, data, 1000, len(data) - 7)
        os.close(sink_w)
        received = b""
        while chunk := os.read(sink_r, 1 << 20):
            received += chunk
    finally:
        pipe.close()
        os.close(sink_r)
    assert received == bytes(data[1000:-7])


@needs_splice
def test_read_only_views_are_not_spliced_but_sent_by_copy():
    assert afalg._spliceable(b"x") and afalg._spliceable(bytearray(3))
    assert not afalg._spliceable(memoryview(b"abc"))
    with pytest.raises(TypeError, match="spliced"):
        _splice.address_of(memoryview(b"abc"))


def test_splice_choice_is_checked():
    with pytest.raises(ValueError, match="hardware, always, never"):
        afalg.AfalgEngine(splice="sometimes")
