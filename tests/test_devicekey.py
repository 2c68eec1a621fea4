"""Device keys: an AES key sealed to one CAAM, used through the API, never by software."""

from __future__ import annotations

import os

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESCCM as CAESCCM
from cryptography.hazmat.primitives.ciphers.aead import AESGCM as CAESGCM

from cryptoffload import Policy, Provider
from cryptoffload.aead import AESCCM, AESGCM
from cryptoffload.devicekey import DeviceKey, DeviceKeyError
from cryptoffload.gmac import GMAC

ALL = Policy(min_size={"*": 0})
NONCE = bytes(range(12))


def _device(seed: str = "01", part: str = "t2080") -> Provider:
    return Provider([f"caam:model={part},seed={seed}"], policy=ALL)


@pytest.mark.parametrize("part", ["t2080", "imx7d"])
@pytest.mark.parametrize("bits", [128, 192, 256])
def test_a_wrapped_key_encrypts_as_its_red_key_on_its_device_and_software_never_sees_it(part, bits):
    provider = _device(part=part)
    engine = provider.engines[0]
    red = os.urandom(bits // 8)
    key = engine.wrap_key(red, b"app key v1")
    assert key.engine == engine.name and key.bits == bits and red not in key.blob
    gcm = AESGCM(key, provider=provider)
    sealed = gcm.encrypt(NONCE, b"payload", b"aad")
    assert sealed == CAESGCM(red).encrypt(NONCE, b"payload", b"aad")
    assert gcm.decrypt(NONCE, sealed, b"aad") == b"payload"
    ccm = AESCCM(key, 8, provider=provider)
    assert ccm.encrypt(NONCE[:13], b"x" * 40, None) == CAESCCM(red, 8).encrypt(
        NONCE[:13], b"x" * 40, None
    )
    assert gcm.encrypt_many([(NONCE, b"a", None), (NONCE, b"bb", None)]) == [
        CAESGCM(red).encrypt(NONCE, b"a", None),
        CAESGCM(red).encrypt(NONCE, b"bb", None),
    ]
    snapshot = provider.counters.snapshot()
    assert snapshot["software"] == {}


def test_a_stored_blob_opens_again_on_the_same_device():
    red = os.urandom(32)
    first = _device("07").engines[0].wrap_key(red, b"modifier")
    again = _device("07")
    key = DeviceKey(first.blob, first.modifier, 256, again.engines[0].name)
    assert AESGCM(key, provider=again).encrypt(NONCE, b"m", None) == CAESGCM(red).encrypt(
        NONCE, b"m", None
    )


def test_software_refuses_a_device_key_with_a_clear_error_and_counts_nothing():
    key = _device().engines[0].wrap_key(os.urandom(16), b"modifier")
    software = Provider([])
    with pytest.raises(DeviceKeyError, match="bound to caam:model=t2080,seed=01"):
        AESGCM(key, provider=software).encrypt(NONCE, b"m", None)
    assert software.counters.snapshot()["software"] == {}


def test_another_engine_declines_a_key_bound_elsewhere_and_software_refuses_it():
    key = _device("01").engines[0].wrap_key(os.urandom(16), b"modifier")
    other = _device("02")
    with pytest.raises(DeviceKeyError, match="software cannot use it"):
        AESGCM(key, provider=other).encrypt(NONCE, b"m", None)
    cell = other.counters.snapshot()[other.engines[0].name]["aes-128-gcm"]
    assert cell == {"ops": 0, "bytes": 0, "declined": {"unsupported": 1}, "faults": 0}


@pytest.mark.parametrize("change", ["other device", "other modifier", "altered blob"])
def test_a_blob_that_does_not_open_is_a_device_key_error_not_a_fault(change):
    made = _device("01")
    key = made.engines[0].wrap_key(os.urandom(16), b"modifier")
    target = _device("02") if change == "other device" else _device("01")
    blob = bytearray(key.blob)
    if change == "altered blob":
        blob[-1] ^= 1
    modifier = b"another" if change == "other modifier" else key.modifier
    moved = DeviceKey(bytes(blob), modifier, 128, target.engines[0].name)
    with pytest.raises(DeviceKeyError, match="does not open"):
        AESGCM(moved, provider=target).encrypt(NONCE, b"m", None)
    assert (
        target.counters.snapshot()[target.engines[0].name].get("aes-128-gcm", {}).get("faults", 0)
        == 0
    )


def test_device_keys_show_nothing_of_the_blob_and_are_checked_when_made():
    key = DeviceKey(b"\x5a" * 64, b"modifier", 256, "caam:model=t2080")
    assert repr(key) == "<DeviceKey aes-256 bound to caam:model=t2080>"
    assert len(key) == 32
    with pytest.raises(ValueError, match="128, 192 or 256"):
        DeviceKey(b"", b"", 100, "caam")
    with pytest.raises(TypeError, match="engine"):
        DeviceKey(b"", b"", 128, "")
    with pytest.raises(TypeError, match="GMAC takes key bytes"):
        GMAC(key, NONCE)
