"""FFDH on GMP (blocks.ffdh, dh): exponent sizes, group checks, agreement, DER, and type checks."""

from __future__ import annotations

import pathlib
import warnings

import cryptography_vectors
import pytest
from cryptography.hazmat.primitives.asymmetric import types

from cryptoffload import Provider, dh, ed448, ed25519, serialization, x448, x25519
from cryptoffload.blocks import ffdh
from cryptoffload.blocks.ffdhe import FFDHE_GROUPS

VECTORS = pathlib.Path(cryptography_vectors.__file__).parent / "asymmetric" / "DH"


@pytest.mark.parametrize(
    "name, bits",
    [
        ("ffdhe2048", 225),
        ("ffdhe3072", 275),
        ("ffdhe4096", 325),
        ("ffdhe6144", 375),
        ("ffdhe8192", 400),
    ],
)
def test_private_values_have_rfc7919_short_exponent_sizes_with_the_top_bit_set(name, bits):
    key = dh.generate_private_key(name).to_cryptography()
    assert key.x.bit_length() == bits + 1
    assert key.y == pow(2, key.x, FFDHE_GROUPS[name].p)


def test_agreement_matches_plain_modular_exponentiation_padded_to_p():
    a = dh.generate_private_key("ffdhe2048")
    b = dh.generate_private_key("ffdhe2048")
    z = a.exchange(b.public_key())
    raw_a, raw_b = a.to_cryptography(), b.to_cryptography()
    assert z == pow(raw_b.y, raw_a.x, raw_a.params.p).to_bytes(256, "big")
    assert z == b.exchange(a.public_key())


def test_group_checks_refuse_a_prime_that_is_not_safe_and_a_wrong_q():
    p = FFDHE_GROUPS["ffdhe2048"].p
    assert ffdh.parameters_valid(p, 2, None)
    assert not ffdh.parameters_valid(p + 2, 2, None)  # not prime
    with pytest.raises(ValueError, match="Invalid DH parameters"):
        dh.DHParameterNumbers(p, 2, 12345).parameters()


def test_generated_parameters_are_a_safe_prime_of_the_size_asked():
    params = dh.generate_parameters(2, 512).parameter_numbers()
    assert params.p.bit_length() == 512 and params.p % 24 == 23
    assert ffdh.parameters_valid(params.p, 2, None)


def test_peer_value_outside_the_subgroup_is_refused_only_when_q_is_known():
    key = dh.generate_private_key("ffdhe2048")
    with pytest.raises(ValueError, match="subgroup"):
        key.exchange(dh.DHPublicKey.from_public_value("ffdhe2048", 7))  # a non-residue


@pytest.mark.parametrize("name", ["dhkey.pem", "dhkey_rfc5114_2.pem", "dhkey.der"])
def test_dh_private_keys_load_and_serialize_back_to_the_same_bytes_without_warning(name):
    data = (VECTORS / name).read_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if name.endswith(".pem"):
            key = serialization.load_pem_private_key(data, None)
            encoding = serialization.Encoding.PEM
        else:
            key = serialization.load_der_private_key(data, None)
            encoding = serialization.Encoding.DER
        out = key.private_bytes(
            encoding, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    assert out == data


def test_an_encrypted_dh_key_loads_back_with_its_password():
    key = dh.generate_private_key("ffdhe2048")
    sealed = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    assert b"ENCRYPTED PRIVATE KEY" in sealed
    assert serialization.load_pem_private_key(sealed, b"secret") == key


def test_keys_are_instances_of_cryptographys_interfaces():
    with dh.quiet_ffdh_warning():
        from cryptography.hazmat.primitives.asymmetric import dh as c_dh

        key = dh.generate_private_key("ffdhe2048")
        assert isinstance(key, c_dh.DHPrivateKey)
        assert isinstance(key.public_key(), c_dh.DHPublicKey)
        assert isinstance(key.parameters(), c_dh.DHParameters)
    assert isinstance(ed25519.Ed25519PrivateKey.generate(), types.PrivateKeyTypes.__args__)
    assert isinstance(x448.X448PrivateKey.generate().public_key(), types.PublicKeyTypes.__args__)


def test_edwards_and_montgomery_keys_go_through_the_provider_and_are_counted():
    p = Provider([])
    for cls in (ed25519.Ed25519PrivateKey, ed448.Ed448PrivateKey):
        key = cls.generate(provider=p)
        key.public_key().verify(key.sign(b"m"), b"m")
    a, b = x25519.X25519PrivateKey.generate(provider=p), x25519.X25519PrivateKey.generate()
    assert a.exchange(b.public_key()) == b.exchange(a.public_key())
    counted = p.counters.snapshot()["software"]
    assert {n: counted[n]["ops"] for n in ("ed25519-sign", "ed448-verify", "x25519")} == {
        "ed25519-sign": 1,
        "ed448-verify": 1,
        "x25519": 1,
    }
