"""The PKCS#11 engine on a TPM 2.0 (swtpm + tpm2-abrmd + tpm2-pkcs11, started for the module
and stopped by pid): keys made on the TPM sign through the API; it imports no caller key, so
those run in software; a fork child declines the token with the reason."""

from __future__ import annotations

import os

import pytest
import tpm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec as ref_ec
from cryptography.hazmat.primitives.asymmetric import padding
from test_fork import in_child

from cryptoffload import Policy, Provider, ec, tokenkeys
from cryptoffload import hashes as co_hashes
from cryptoffload.devicekey import DeviceKeyError

pytestmark = pytest.mark.skipif(tpm.why_missing() is not None, reason=str(tpm.why_missing()))
ALL = Policy(min_size={"*": 0})


@pytest.fixture(scope="module")
def tpm_provider():
    stack = tpm.start()
    provider = Provider([stack.spec], policy=ALL)
    try:
        assert not provider.unavailable, provider.unavailable
        yield provider
    finally:
        provider.close()
        started = list(stack.pids)
        tpm.stop(stack)
        assert all(tpm._gone(pid) for pid in started)  # every process we started has ended


def test_the_tpm_claims_what_it_signs_with_its_own_keys_and_imports_nothing(tpm_provider):
    engine = tpm_provider.engines[0]
    caps = tpm_provider.capabilities[engine.name]
    assert {"ecdsa-p256-sign", "rsa-2048-private", "sha256"} <= caps.algorithms
    assert caps.detail["imports caller keys"] is False
    assert not any("gcm" in alg for alg in caps.algorithms)  # the TPM token has no GCM


def test_keys_made_on_the_tpm_sign_through_the_api_and_software_verifies(tpm_provider):
    engine = tpm_provider.engines[0]
    key = tokenkeys.generate_key(
        engine, "ec", label=f"tpm-ec-{os.urandom(3).hex()}", provider=tpm_provider
    )
    sig = key.sign(b"message", ec.ECDSA(hashes.SHA256()))
    key.public_key().to_cryptography().verify(sig, b"message", ref_ec.ECDSA(hashes.SHA256()))
    rkey = tokenkeys.generate_key(
        engine, "rsa", label=f"tpm-rsa-{os.urandom(3).hex()}", bits=2048, provider=tpm_provider
    )
    for pad in (padding.PKCS1v15(), padding.PSS(padding.MGF1(hashes.SHA256()), 32)):
        sig = rkey.sign(b"message", pad, hashes.SHA256())
        rkey.public_key().to_cryptography().verify(sig, b"message", pad, hashes.SHA256())
    with pytest.raises(DeviceKeyError):
        key.private_numbers()
    snap = tpm_provider.counters.snapshot()
    assert snap[engine.name]["ecdsa-p256-sign"]["ops"] == 1
    assert snap[engine.name]["rsa-2048-private"]["ops"] == 2


def test_a_caller_key_is_declined_by_the_tpm_and_signed_in_software(tpm_provider):
    engine = tpm_provider.engines[0]
    caller = ec.generate_private_key(ec.SECP256R1(), provider=tpm_provider)
    before = tpm_provider.counters.snapshot()[engine.name].get("ecdsa-p256-sign", {})
    sig = caller.sign(b"m", ec.ECDSA(hashes.SHA256()))
    caller.public_key().to_cryptography().verify(sig, b"m", ref_ec.ECDSA(hashes.SHA256()))
    cell = tpm_provider.counters.snapshot()[engine.name]["ecdsa-p256-sign"]
    assert (
        cell["declined"].get("unsupported", 0)
        == before.get("declined", {}).get("unsupported", 0) + 1
    )


def test_a_fork_child_declines_the_tpm_with_the_reason_and_answers_in_software(tpm_provider):
    engine = tpm_provider.engines[0]
    want = co_hashes.digest(b"abc", co_hashes.SHA256(), provider=tpm_provider)

    def child() -> tuple[bytes, dict, str]:
        got = co_hashes.digest(b"abc", co_hashes.SHA256(), provider=tpm_provider)
        return got, tpm_provider.counters.snapshot()[engine.name]["sha256"], engine._token.broken

    got, cell, reason = in_child(child)
    assert got == want
    assert cell["declined"] == {"no-device": 1}
    assert "cannot initialise again in a forked child" in reason
    assert co_hashes.digest(b"abc", co_hashes.SHA256(), provider=tpm_provider) == want
