"""`cryptography`'s own keys are first-class here: instances of cryptoffload's key classes, taken
wherever ours are (their operations counted by the provider), equal to ours of the same value."""

from __future__ import annotations

import warnings

import pytest
from cryptography.hazmat.primitives.asymmetric import dsa as c_dsa
from cryptography.hazmat.primitives.asymmetric import ec as c_ec
from cryptography.hazmat.primitives.asymmetric import ed448 as c_ed448
from cryptography.hazmat.primitives.asymmetric import ed25519 as c_ed25519
from cryptography.hazmat.primitives.asymmetric import rsa as c_rsa
from cryptography.hazmat.primitives.asymmetric import x448 as c_x448
from cryptography.hazmat.primitives.asymmetric import x25519 as c_x25519
from dsa_warning import IGNORE_DSA_WARNING

from cryptoffload import Provider, dh, dsa, ec, ed448, ed25519, rsa, using, x448, x25519

pytestmark = IGNORE_DSA_WARNING  # DSA keys are among the native keys tested

NATIVE = {
    "rsa": (rsa, lambda: c_rsa.generate_private_key(65537, 1024)),
    "ec": (ec, lambda: c_ec.generate_private_key(c_ec.SECP256R1())),
    "dsa": (dsa, lambda: c_dsa.generate_private_key(1024)),
    "ed25519": (ed25519, c_ed25519.Ed25519PrivateKey.generate),
    "ed448": (ed448, c_ed448.Ed448PrivateKey.generate),
    "x25519": (x25519, c_x25519.X25519PrivateKey.generate),
    "x448": (x448, c_x448.X448PrivateKey.generate),
}
CLASSES = {
    "rsa": ("RSAPrivateKey", "RSAPublicKey"),
    "ec": ("EllipticCurvePrivateKey", "EllipticCurvePublicKey"),
    "dsa": ("DSAPrivateKey", "DSAPublicKey"),
    "ed25519": ("Ed25519PrivateKey", "Ed25519PublicKey"),
    "ed448": ("Ed448PrivateKey", "Ed448PublicKey"),
    "x25519": ("X25519PrivateKey", "X25519PublicKey"),
    "x448": ("X448PrivateKey", "X448PublicKey"),
}


def test_native_post_quantum_keys_are_instances_of_ours():
    mlkem = pytest.importorskip("cryptoffload.mlkem")
    mldsa = pytest.importorskip("cryptoffload.mldsa")
    from cryptography.hazmat.primitives.asymmetric import mldsa as c_mldsa
    from cryptography.hazmat.primitives.asymmetric import mlkem as c_mlkem

    kem = c_mlkem.MLKEM768PrivateKey.generate()
    assert isinstance(kem, mlkem.MLKEM768PrivateKey)
    assert isinstance(kem.public_key(), mlkem.MLKEM768PublicKey)
    assert not isinstance(kem, mlkem.MLKEM1024PrivateKey)
    dsa_key = c_mldsa.MLDSA65PrivateKey.generate()
    assert isinstance(dsa_key, mldsa.MLDSA65PrivateKey)
    assert not isinstance(dsa_key, mldsa.MLDSA44PrivateKey)


def native_dh_key():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from cryptography.hazmat.primitives.asymmetric import dh as c_dh

        numbers = dh.group("ffdhe2048")
        params = c_dh.DHParameterNumbers(numbers.p, numbers.g).parameters()
        return params.generate_private_key()


@pytest.mark.parametrize("family", sorted(NATIVE))
def test_cryptographys_keys_are_instances_of_ours_and_not_of_the_other_kind(family):
    module, generate = NATIVE[family]
    private_name, public_name = CLASSES[family]
    key = generate()
    assert isinstance(key, getattr(module, private_name))
    assert isinstance(key.public_key(), getattr(module, public_name))
    assert not isinstance(key, getattr(module, public_name))
    assert not isinstance(key.public_key(), getattr(module, private_name))
    assert not isinstance(key, rsa.RSAPrivateKey if family != "rsa" else ec.EllipticCurvePrivateKey)


def test_native_dh_keys_are_instances_of_ours():
    key = native_dh_key()
    assert isinstance(key, dh.DHPrivateKey)
    assert isinstance(key.public_key(), dh.DHPublicKey)


def test_our_keys_stay_instances_of_cryptographys_interfaces():
    key = rsa.generate_private_key(65537, 1024, provider=Provider([]))
    assert isinstance(key, c_rsa.RSAPrivateKey)
    assert isinstance(key.public_key(), c_rsa.RSAPublicKey)


def test_ours_and_cryptographys_key_of_one_value_are_equal_both_ways():
    ours = ec.generate_private_key(ec.SECP256R1()).public_key()
    native = ours.to_cryptography()
    assert ours == native
    assert native == ours
    other = c_ec.generate_private_key(c_ec.SECP256R1()).public_key()
    assert ours != other


@pytest.mark.parametrize(
    ("ours", "theirs", "agree"),
    [
        (
            lambda: x25519.X25519PrivateKey.generate(),
            c_x25519.X25519PrivateKey.generate,
            lambda key, peer: key.exchange(peer),
        ),
        (
            lambda: x448.X448PrivateKey.generate(),
            c_x448.X448PrivateKey.generate,
            lambda key, peer: key.exchange(peer),
        ),
        (
            lambda: ec.generate_private_key(ec.SECP384R1()),
            lambda: c_ec.generate_private_key(c_ec.SECP384R1()),
            lambda key, peer: key.exchange(ec.ECDH(), peer),
        ),
    ],
    ids=["x25519", "x448", "ecdh"],
)
def test_a_native_peer_key_is_taken_and_the_agreement_counted(ours, theirs, agree):
    provider = Provider(["passthrough"])
    with using(provider):
        mine, peer = ours(), theirs()
        secret = agree(mine, peer.public_key())
    assert secret == agree(peer, mine.public_key().to_cryptography())
    counted = provider.counters.snapshot()["passthrough"]
    assert sum(cell["ops"] for cell in counted.values()) == 1


def test_a_native_dh_peer_is_taken():
    provider = Provider(["passthrough"])
    native = native_dh_key()
    with using(provider):
        mine = dh.generate_private_key("ffdhe2048")
        secret = mine.exchange(native.public_key())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from cryptography.hazmat.primitives.asymmetric import dh as c_dh

        numbers = mine.public_key().public_numbers()
        group = c_dh.DHParameterNumbers(numbers.parameter_numbers.p, numbers.parameter_numbers.g)
        their_view = c_dh.DHPublicNumbers(numbers.y, group).public_key()
        assert native.exchange(their_view) == secret
    assert provider.counters.snapshot()["passthrough"]["ffdhe2048"]["ops"] == 1


def test_a_key_of_another_kind_is_refused_with_the_expected_kind():
    mine = x25519.X25519PrivateKey.generate()
    with pytest.raises(TypeError, match="an X25519 public key"):
        mine.exchange(c_x448.X448PrivateKey.generate().public_key())
    with pytest.raises(TypeError, match="an EC public key"):
        ec.generate_private_key(ec.SECP256R1()).exchange(ec.ECDH(), mine.public_key())


def test_our_rsa_numbers_take_our_public_numbers_or_cryptographys():
    native = c_rsa.generate_private_key(65537, 1024).private_numbers()
    for public in (
        native.public_numbers,
        rsa.RSAPublicNumbers(native.public_numbers.e, native.public_numbers.n),
    ):
        numbers = rsa.RSAPrivateNumbers(
            native.p, native.q, native.d, native.dmp1, native.dmq1, native.iqmp, public
        )
        assert numbers == native
        assert isinstance(numbers.private_key(), rsa.RSAPrivateKey)


def _self_signed(key):
    from cryptography.hazmat.primitives import hashes

    return _self_signed_with(key, hashes.SHA256())


def _self_signed_with(key, digest):
    import datetime

    from cryptography import x509
    from cryptography.x509.oid import NameOID

    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "cryptoffload test")])
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, digest)
    )


def test_pkcs12_takes_our_key_in_cryptographys_function_and_ours_gives_ours_back():
    from cryptography.hazmat.primitives.serialization import NoEncryption
    from cryptography.hazmat.primitives.serialization import pkcs12 as c_pkcs12

    from cryptoffload.serialization import pkcs12

    provider = Provider(["passthrough"])
    with using(provider):
        key = rsa.generate_private_key(65537, 2048)
        cert = _self_signed(key)  # the certificate's signature is made through the provider
    assert provider.counters.snapshot()["passthrough"]["rsa-2048-private"]["ops"] == 1
    theirs = c_pkcs12.serialize_key_and_certificates(b"n", key, cert, None, NoEncryption())
    ours = pkcs12.serialize_key_and_certificates(b"n", key, cert, None, NoEncryption())
    for blob in (theirs, ours):
        loaded, loaded_cert, _ = pkcs12.load_key_and_certificates(blob, None)
        assert type(loaded) is rsa.RSAPrivateKey
        assert loaded.public_key() == key.public_key()
        assert loaded_cert == cert
    assert type(pkcs12.load_pkcs12(ours, None).key) is rsa.RSAPrivateKey


@pytest.mark.parametrize("family", ["rsa", "ec", "ed25519"])
def test_cryptographys_x509_builders_sign_with_our_keys_through_the_provider(family):
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509 import ocsp

    provider = Provider(["passthrough"])
    with using(provider):
        key = {
            "rsa": lambda: rsa.generate_private_key(65537, 2048),
            "ec": lambda: ec.generate_private_key(ec.SECP256R1()),
            "ed25519": ed25519.Ed25519PrivateKey.generate,
        }[family]()
        digest = None if family == "ed25519" else hashes.SHA256()
        cert = _self_signed_with(key, digest)
        name = cert.subject
        now = datetime.datetime.now(datetime.UTC)
        crl = (
            x509.CertificateRevocationListBuilder()
            .issuer_name(name)
            .last_update(now)
            .next_update(now + datetime.timedelta(days=1))
            .sign(key, digest)
        )
        assert crl.is_signature_valid(key.public_key())
        response = (
            ocsp.OCSPResponseBuilder()
            .add_response(
                cert, cert, hashes.SHA256(), ocsp.OCSPCertStatus.GOOD, now, None, None, None
            )
            .responder_id(ocsp.OCSPResponderEncoding.HASH, cert)
            .sign(key, digest)
        )
        x509.CertificateSigningRequestBuilder().subject_name(name).sign(key, digest)
    assert response.response_status == ocsp.OCSPResponseStatus.SUCCESSFUL
    cert.verify_directly_issued_by(cert)
    counted = provider.counters.snapshot()["passthrough"]
    signs = sum(cell["ops"] for alg, cell in counted.items() if alg.endswith(("-sign", "-private")))
    verifies = sum(
        cell["ops"] for alg, cell in counted.items() if alg.endswith(("-verify", "-public"))
    )
    assert (signs, verifies) == (4, 1)  # certificate, CRL, OCSP response, CSR; the CRL check
