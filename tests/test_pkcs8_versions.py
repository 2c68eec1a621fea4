"""PKCS #8 versions, as the installed `cryptography` reads them (RFC 5958 OneAsymmetricKey v2
from 51 on): cryptoffload's own DH reader takes and refuses what `cryptography` does, gives
cryptoffload's key, and warns nothing (`cryptography`'s DH loading is deprecated)."""

from __future__ import annotations

import warnings

import pytest
from cryptography.hazmat.primitives import serialization as c_serialization

from cryptoffload import dh, serialization
from cryptoffload._release import READS_PKCS8_V2
from cryptoffload.blocks import der

KEY = dh.generate_private_key("ffdhe2048")
PKCS8 = KEY.private_bytes(
    serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
)
Y = KEY.public_key().public_numbers().y


def one_asymmetric_key(version: int, public: int | None = None, attributes: bool = False) -> bytes:
    """The key as OneAsymmetricKey of ``version``, with an optional [0] and [1] field."""
    _, body, _ = der.read(PKCS8, der.SEQUENCE)
    _, algorithm, private = (content for _, content in der.items(body))
    fields = der.integer(version) + der.sequence(algorithm) + der.octet_string(private)
    if attributes:
        fields += der.tlv(0xA0, b"")
    if public is not None:
        fields += der.tlv(0x81, b"\x00" + der.integer(public))
    return der.sequence(fields)


CASES = {
    "v1": (one_asymmetric_key(0), True),
    "v1-with-attributes": (one_asymmetric_key(0, attributes=True), True),
    "v2": (one_asymmetric_key(1), READS_PKCS8_V2),
    "v2-with-public-key": (one_asymmetric_key(1, Y), READS_PKCS8_V2),
    "v2-with-attributes-and-public-key": (
        one_asymmetric_key(1, Y, attributes=True),
        READS_PKCS8_V2,
    ),
    "v2-with-a-wrong-public-key": (one_asymmetric_key(1, Y + 1), False),
    "v1-with-public-key": (one_asymmetric_key(0, Y), False),
    "v3": (one_asymmetric_key(2), False),
}


def _cryptography_loads(data: bytes) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its DH loading is deprecated
        try:
            c_serialization.load_der_private_key(data, None)
        except ValueError:
            return False
    return True


@pytest.mark.parametrize("name", list(CASES))
def test_a_dh_key_of_each_pkcs8_version_is_read_as_cryptography_reads_it(name):
    data, expected = CASES[name]
    assert _cryptography_loads(data) is expected  # the case is what it says for this release
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if not expected:
            with pytest.raises(ValueError):
                serialization.load_der_private_key(data, None)
            return
        key = serialization.load_der_private_key(data, None)
    assert isinstance(key, dh.DHPrivateKey) and type(key).__module__ == "cryptoffload.dh"
    assert key.private_numbers().x == KEY.private_numbers().x


def test_cryptographys_own_dh_key_is_taken_by_wrap_key():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        native = c_serialization.load_der_private_key(PKCS8, None)
    key = serialization.wrap_key(native)
    assert type(key) is dh.DHPrivateKey and key.private_numbers().x == KEY.private_numbers().x
