"""The cryptodev engine against a real /dev/crypto: on a board or a guest with cryptodev-linux
loaded; skipped elsewhere with the reason. (Where the device opens, every vector suite also runs
through it: the ``cryptodev-device`` engine set of tests/conftest.py.)"""

from __future__ import annotations

import hashlib
import hmac as std_hmac
import os

import pytest
from conftest import has_dev_crypto
from cryptography.exceptions import InvalidTag
from vectors.loaders import aes_vectors, gcm_vectors, hash_vectors, hmac_vectors

from cryptoffload import Policy, Provider
from cryptoffload.aead import AESGCM
from cryptoffload.ciphers import Cipher, algorithms, modes
from cryptoffload.core.names import HASH_CLASSES
from cryptoffload.core.ops import HashOp, MacOp
from cryptoffload.engines.cryptodev import ALGORITHMS, CryptodevEngine
from cryptoffload.errors import Unavailable
from cryptoffload.hashes import digest
from cryptoffload.hmac import HMAC

pytestmark = pytest.mark.skipif(
    not has_dev_crypto(),
    reason="no usable /dev/crypto here: build cryptodev-linux against this kernel, "
    "modprobe cryptodev, and give this user read/write access to /dev/crypto",
)

TAKE_ALL = Policy(min_size={"*": 0})
MODES = {"CBC": modes.CBC, "CTR": modes.CTR, "ECB": None}


@pytest.fixture
def provider():
    p = Provider(["cryptodev:any"], policy=TAKE_ALL)
    if p.unavailable:
        pytest.fail(f"/dev/crypto opens but the engine is not available: {p.unavailable}")
    yield p
    p.close()


def offloaded(p: Provider, alg: str) -> int:
    return p.counters.snapshot()["cryptodev:any"].get(alg, {}).get("ops", 0)


def test_probe_names_a_driver_and_a_hardware_flag_for_each_claimed_algorithm():
    caps = CryptodevEngine(allow_software=True).probe()
    assert caps.available, caps.reason
    for alg in caps.algorithms:
        binding = caps.detail["algorithms"][alg]
        assert binding["driver"] and isinstance(binding["hardware"], bool)
        assert binding["kernel name"] == ALGORITHMS[alg].kernel_name
    hardware = CryptodevEngine().probe()
    bound = hardware.detail.get("algorithms", {})
    assert all(b["hardware"] for b in bound.values())
    for alg, why in hardware.detail.get("skipped", {}).items():
        assert alg not in hardware.algorithms and why


@pytest.mark.parametrize("mode", list(MODES))
def test_aes_vectors_through_the_device(provider, mode):
    records = aes_vectors(mode)
    for r in records:
        mode_obj = modes.ECB() if MODES[mode] is None else MODES[mode](r["iv"])
        ctx = Cipher(algorithms.AES(r["key"]), mode_obj, provider=provider)
        if r["direction"].startswith("enc"):
            assert ctx.encryptor().update(r["plaintext"]) == r["ciphertext"]
        else:
            assert ctx.decryptor().update(r["ciphertext"]) == r["plaintext"]
    claimed = provider.capabilities["cryptodev:any"].algorithms
    done = sum(offloaded(provider, f"aes-{b}-{mode.lower()}") for b in (128, 192, 256))
    expected = sum(1 for r in records if f"aes-{len(r['key']) * 8}-{mode.lower()}" in claimed)
    assert done == expected


def test_gcm_vectors_and_a_failed_tag_through_the_device(provider):
    records = [r for r in gcm_vectors(limit_per_section=2) if len(r["iv"]) == 12]
    for r in records:
        g = AESGCM(r["key"], tag_length=len(r["tag"]), provider=provider)
        if r["direction"] == "encrypt":
            assert g.encrypt(r["iv"], r["pt"], r["aad"]) == r["ct"] + r["tag"]
        elif r["fail"]:
            with pytest.raises(InvalidTag):
                g.decrypt(r["iv"], r["ct"] + r["tag"], r["aad"])
        else:
            assert g.decrypt(r["iv"], r["ct"] + r["tag"], r["aad"]) == r["pt"]
    assert sum(offloaded(provider, f"aes-{b}-gcm") for b in (128, 192, 256)) > 0


@pytest.mark.parametrize("name", ["sha1", "sha224", "sha256", "sha384", "sha512"])
def test_hash_and_hmac_vectors_through_the_device(provider, name):
    for r in hash_vectors(name.upper())[:40]:
        assert digest(r["msg"], HASH_CLASSES[name](), provider=provider) == r["md"]
    for r in hmac_vectors(name)[:40]:
        h = HMAC(r["key"], HASH_CLASSES[name](), provider=provider)
        h.update(r["msg"])
        assert h.finalize()[: len(r["mac"])] == r["mac"]
    assert offloaded(provider, name) == 40


def test_streams_and_long_digests_through_the_device():
    engine = CryptodevEngine(allow_software=True, max_request=4096)
    assert engine.probe().available
    data = os.urandom(20000)
    stream = engine.open_stream(HashOp("sha256", "digest", b""))
    stream.update(data[:7000])
    try:
        twin = stream.copy()
    except Unavailable as exc:  # cryptodev-linux before CIOCCPHASH
        twin = None
        print(f"no hash state copy on this cryptodev: {exc}")
    stream.update(data[7000:])
    assert stream.finalize() == hashlib.sha256(data).digest()
    if twin is not None:
        twin.update(b"tail")
        assert twin.finalize() == hashlib.sha256(data[:7000] + b"tail").digest()
    mac = engine.run(MacOp("hmac-sha256", "mac", b"k", data))  # five requests, one session
    assert mac == std_hmac.new(b"k", data, "sha256").digest()
    figures = engine.figures
    engine.close()
    assert figures["sessions_streaming"] == 0


def test_closing_frees_every_session_the_engine_opened(provider):
    for i in range(5):
        AESGCM(bytes([i]) * 16, provider=provider).encrypt(bytes(12), b"x", None)
    engine = provider.engines[0]
    provider.close()
    figures = engine.figures
    assert figures["sessions_cached"] == 0
    assert figures["sessions_opened"] == figures["sessions_freed"]
