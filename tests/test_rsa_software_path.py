"""RSA verification on a lane no engine claims: `cryptography` called at once for plain input
(bytes, PKCS1v15 or PSS with MGF1, a hash class we offer), the same answers and counts as the
checked path, and few Python frames of ours per op."""

from __future__ import annotations

import pytest
from cryptography.exceptions import InvalidSignature
from direct_path_probe import ours_run
from sample_keys import RSA_KEY

from cryptoffload import Provider, hashes
from cryptoffload.asymmetric import padding, rsa

DATA = b"message" * 20


def paddings():
    return [
        padding.PKCS1v15(),
        padding.PSS(padding.MGF1(hashes.SHA256()), padding.PSS.MAX_LENGTH),
        padding.PSS(padding.MGF1(hashes.SHA1()), 20),
    ]


def test_plain_verifies_answer_and_count_as_the_checked_path(default_software):
    key = rsa.RSAPrivateKey(RSA_KEY)
    public = key.public_key()
    checked = Provider([])
    checked_public = rsa.RSAPublicKey(public._key, provider=checked)
    for pad in paddings():
        signature = key.sign(DATA, pad, hashes.SHA256())
        for verifier in (public, checked_public):
            verifier.verify(signature, DATA, pad, hashes.SHA256())
            with pytest.raises(InvalidSignature):
                verifier.verify(
                    signature[:-1] + bytes([signature[-1] ^ 1]), DATA, pad, hashes.SHA256()
                )
            with pytest.raises(InvalidSignature):  # one byte short: refused on every path
                verifier.verify(signature[1:], DATA, pad, hashes.SHA256())
            verifier.verify(bytearray(signature), memoryview(DATA), pad, hashes.SHA256())
    name = "rsa-2048-public"
    direct = default_software.counters.snapshot()["software"][name]
    assert direct == checked.counters.snapshot()["software"][name]
    assert direct["ops"] == 12


def test_a_plain_verify_runs_few_python_functions_of_ours(default_software):
    key = rsa.RSAPrivateKey(RSA_KEY)
    public = key.public_key()
    pad = padding.PKCS1v15()
    signature = key.sign(DATA, pad, hashes.SHA256())
    public.verify(signature, DATA, pad, hashes.SHA256())
    seen = ours_run(lambda: public.verify(signature, DATA, pad, hashes.SHA256()))
    # verify itself, the lane of the provider in force, the op's record: no per-argument checks
    assert len(seen) <= 5, seen
