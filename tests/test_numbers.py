"""The numbers classes of rsa, ec and dsa: this package's keys from them, theirs from its keys."""

from __future__ import annotations

import pytest
from cryptography.exceptions import UnsupportedAlgorithm, _Reasons
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import dsa as c_dsa
from cryptography.hazmat.primitives.asymmetric import ec as c_ec
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import rsa as c_rsa
from cryptography.hazmat.primitives.asymmetric.utils import NoDigestInfo, Prehashed
from dsa_warning import IGNORE_DSA_WARNING, without_dsa_warning

from cryptoffload import Provider, dsa, ec, rsa

RSA_KEY = c_rsa.generate_private_key(65537, 1024)
EC_KEY = c_ec.generate_private_key(c_ec.SECP256R1())
DSA_KEY = without_dsa_warning(lambda: c_dsa.generate_private_key(1024))


def _ops(p: Provider, alg: str) -> int:
    return p.counters.snapshot()["software"].get(alg, {}).get("ops", 0)


def test_rsa_numbers_give_routed_keys_and_back():
    theirs = RSA_KEY.private_numbers()
    pub = rsa.RSAPublicNumbers(theirs.public_numbers.e, theirs.public_numbers.n)
    ours = rsa.RSAPrivateNumbers(
        theirs.p, theirs.q, theirs.d, theirs.dmp1, theirs.dmq1, theirs.iqmp, pub
    )
    assert ours == theirs and theirs == ours and hash(ours) == hash(theirs)
    assert ours.public_numbers == pub and isinstance(ours.public_numbers, rsa.RSAPublicNumbers)
    assert repr(ours) == "<RSAPrivateNumbers>" and repr(pub) == repr(theirs.public_numbers)
    p = Provider()
    key = ours.private_key(unsafe_skip_rsa_key_validation=True, provider=p)
    assert isinstance(key, rsa.RSAPrivateKey) and isinstance(key, c_rsa.RSAPrivateKey)
    sig = key.sign(b"m", padding.PKCS1v15(), hashes.SHA256())
    pub.public_key(provider=p).verify(sig, b"m", padding.PKCS1v15(), hashes.SHA256())
    assert _ops(p, "rsa-1024-private") == 1 and _ops(p, "rsa-1024-public") == 1
    assert isinstance(key.private_numbers(), rsa.RSAPrivateNumbers)
    assert isinstance(key.public_key().public_numbers(), rsa.RSAPublicNumbers)
    assert key.private_numbers() == ours
    # theirs are still taken, inside ours and by the from_numbers functions
    assert rsa.RSAPrivateNumbers(1, 1, 1, 1, 1, 1, theirs.public_numbers).public_numbers == pub
    assert isinstance(rsa.private_key_from_numbers(theirs), rsa.RSAPrivateKey)
    assert isinstance(rsa.public_key_from_numbers(theirs.public_numbers), rsa.RSAPublicKey)
    with pytest.raises(TypeError):
        rsa.RSAPublicNumbers("1", 3)  # type: ignore[arg-type]


def test_rsa_no_digest_info_recovery_and_unsupported_mgf():
    key = rsa.RSAPrivateKey(RSA_KEY)
    digest = hashes.Hash(hashes.SHA256())
    digest.update(b"m")
    data = digest.finalize()
    sig = key.sign(data, padding.PKCS1v15(), NoDigestInfo())
    key.public_key().verify(sig, data, padding.PKCS1v15(), NoDigestInfo())
    assert key.public_key().recover_data_from_signature(sig, padding.PKCS1v15(), None) == data
    with pytest.raises(TypeError):
        key.public_key().recover_data_from_signature(
            sig, padding.PKCS1v15(), Prehashed(hashes.SHA256())
        )

    class OtherMGF:
        _algorithm = hashes.SHA256()

    pss = padding.PSS(mgf=OtherMGF(), salt_length=0)  # type: ignore[arg-type]
    with pytest.raises(UnsupportedAlgorithm) as info:
        key.sign(b"m", pss, hashes.SHA256())
    assert info.value._reason is _Reasons.UNSUPPORTED_MGF


def test_ec_numbers_give_routed_keys_and_back():
    theirs = EC_KEY.private_numbers()
    tp = theirs.public_numbers
    pub = ec.EllipticCurvePublicNumbers(tp.x, tp.y, ec.SECP256R1())
    ours = ec.EllipticCurvePrivateNumbers(theirs.private_value, pub)
    assert ours == theirs and theirs == ours and hash(ours) == hash(theirs)
    assert "private_value" not in repr(ours) and str(theirs.private_value) not in repr(ours)
    p = Provider()
    key = ours.private_key(provider=p)
    sig = key.sign(b"m", ec.ECDSA(hashes.SHA256()))
    pub.public_key(provider=p).verify(sig, b"m", ec.ECDSA(hashes.SHA256()))
    assert _ops(p, "ecdsa-p256-sign") == 1 and _ops(p, "ecdsa-p256-verify") == 1
    assert isinstance(key.private_numbers(), ec.EllipticCurvePrivateNumbers)
    assert key.public_key().public_numbers() == pub
    assert isinstance(ec.public_key_from_numbers(tp), ec.EllipticCurvePublicKey)
    assert isinstance(ec.public_key_from_numbers(pub), ec.EllipticCurvePublicKey)
    with pytest.raises(ValueError):
        ec.EllipticCurvePublicNumbers(tp.x, tp.y + 1, ec.SECP256R1()).public_key()


@IGNORE_DSA_WARNING
def test_dsa_numbers_give_routed_keys_and_back():
    theirs = DSA_KEY.private_numbers()
    tpar = theirs.public_numbers.parameter_numbers
    par = dsa.DSAParameterNumbers(tpar.p, tpar.q, tpar.g)
    ours = dsa.DSAPrivateNumbers(theirs.x, dsa.DSAPublicNumbers(theirs.public_numbers.y, par))
    assert ours == theirs and theirs == ours
    with pytest.raises(TypeError):
        hash(ours)
    assert repr(ours) == "<DSAPrivateNumbers>"
    p = Provider()
    key = ours.private_key(provider=p)
    sig = key.sign(b"m", hashes.SHA256())
    ours.public_numbers.public_key(provider=p).verify(sig, b"m", hashes.SHA256())
    assert _ops(p, "dsa-1024-sign") == 1 and _ops(p, "dsa-1024-verify") == 1
    assert isinstance(key.parameters().parameter_numbers(), dsa.DSAParameterNumbers)
    assert isinstance(par.parameters(), dsa.DSAParameters)
    assert key.private_numbers() == ours
