"""``NoResult``, where the Op contract gives a ValueError as an operation's result (an RSA
ciphertext that does not decrypt, an all-zero X25519 agreement), is the engine's answer: counted
as its op, raised once, never redone in software (no fault, no second timing); anything else, a
plain ValueError included, stays a fault."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding

from cryptoffload import Provider, rsa, using, x25519
from cryptoffload.aead import AESGCM
from cryptoffload.engines.base import Capabilities
from cryptoffload.engines.software import SoftwareEngine
from cryptoffload.errors import NoResult


class Recording(SoftwareEngine):
    """Claims ``algs`` and answers through OpenSSL, remembering how many ops it was given."""

    def __init__(self, algs, refuse=None):
        super().__init__()
        self.name = "recording"
        self._algs = frozenset(algs)
        self._refuse = refuse
        self.ops = 0

    def probe(self):
        return Capabilities(True, algorithms=self._algs)

    def run(self, op):
        self.ops += 1
        if self._refuse is not None and self._refuse(op):
            raise self._refuse(op)
        return super().run(op)


OAEP = padding.OAEP(padding.MGF1(hashes.SHA256()), hashes.SHA256(), None)


def test_an_rsa_ciphertext_that_does_not_decrypt_is_the_engines_answer():
    engine = Recording(["rsa-2048-private"])
    provider = Provider([engine])
    key = rsa.generate_private_key(65537, 2048, provider=provider)
    # A number below n (so validation above the engines lets it through) that is no OAEP block.
    not_oaep = (12345).to_bytes(256, "big")
    with using(provider), pytest.raises(ValueError, match="Decryption failed"):
        key.decrypt(not_oaep, OAEP)
    counted = provider.counters.snapshot()
    assert counted["recording"]["rsa-2048-private"] == {
        "ops": 1,
        "bytes": 0,
        "declined": {},
        "faults": 0,
    }
    assert "rsa-2048-private" not in counted.get("software", {})
    assert engine.ops == 1


def test_an_all_zero_x25519_agreement_is_the_engines_answer():
    provider = Provider([Recording(["x25519"])])
    key = x25519.X25519PrivateKey.generate(provider=provider)
    low_order = x25519.X25519PublicKey.from_public_bytes(bytes(32))
    with pytest.raises(ValueError):
        key.exchange(low_order)
    cell = provider.counters.snapshot()["recording"]["x25519"]
    assert (cell["ops"], cell["faults"]) == (1, 0)


def test_a_plain_value_error_is_a_fault_and_software_answers():
    # A device error spelled ValueError is not the op's answer: only NoResult is.
    engine = Recording(["rsa-2048-private"], refuse=lambda op: ValueError("status 0x40000054"))
    provider = Provider([engine])
    key = rsa.generate_private_key(65537, 2048, provider=provider)
    sealed = key.public_key().encrypt(b"secret", OAEP)
    with using(provider):
        assert key.decrypt(sealed, OAEP) == b"secret"
    counted = provider.counters.snapshot()
    assert counted["recording"]["rsa-2048-private"]["faults"] == 1
    assert counted["software"]["rsa-2048-private"]["ops"] == 1


def test_no_result_where_the_contract_gives_none_is_still_a_fault():
    engine = Recording(["aes-128-gcm"], refuse=lambda op: NoResult("not an answer here"))
    provider = Provider([engine])
    sealed = AESGCM(bytes(16), provider=provider).encrypt(bytes(12), b"data", None)
    assert sealed == AESGCM(bytes(16), provider=Provider([])).encrypt(bytes(12), b"data", None)
    counted = provider.counters.snapshot()
    assert counted["recording"]["aes-128-gcm"]["faults"] == 1
    assert counted["software"]["aes-128-gcm"]["ops"] == 1


def test_the_cross_check_catches_an_engine_refusing_a_good_ciphertext():
    engine = Recording(
        ["rsa-2048-private"],
        refuse=lambda op: NoResult("Decryption failed") if op.kind == "decrypt" else None,
    )
    provider = Provider([engine], cross_check=1.0)
    key = rsa.generate_private_key(65537, 2048, provider=provider)
    sealed = key.public_key().encrypt(b"secret", OAEP)
    with using(provider):
        assert key.decrypt(sealed, OAEP) == b"secret"
    cell = provider.counters.snapshot()["recording"]["rsa-2048-private"]
    assert (cell["mismatches"], cell["faults"]) == (1, 1)
    assert provider.disabled() == {"recording": ["rsa-2048-private"]}
