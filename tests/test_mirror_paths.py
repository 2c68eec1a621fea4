"""Code moves over by changing its imports: every public name of the `cryptography` modules
cryptoffload mirrors is there at the mirrored path (``cryptography.hazmat.primitives.X`` ->
``cryptoffload.X``), and the ``asymmetric`` and ``ciphers.aead`` paths are the flat modules."""

from __future__ import annotations
import __future__

import importlib
import types
import warnings

import pytest

#: cryptography.hazmat.primitives.<key> -> the cryptoffload module at its path.
MIRRORS = {
    "hashes": "cryptoffload.hashes",
    "hmac": "cryptoffload.hmac",
    "cmac": "cryptoffload.cmac",
    "poly1305": "cryptoffload.poly1305",
    "padding": "cryptoffload.padding",
    "serialization": "cryptoffload.serialization",
    "serialization.base": "cryptoffload.serialization.base",
    "serialization.pkcs12": "cryptoffload.serialization.pkcs12",
    "serialization.pkcs7": "cryptoffload.serialization.pkcs7",
    "serialization.ssh": "cryptoffload.serialization.ssh",
    "ciphers": "cryptoffload.ciphers",
    "ciphers.algorithms": "cryptoffload.ciphers.algorithms",
    "ciphers.modes": "cryptoffload.ciphers.modes",
    "ciphers.aead": "cryptoffload.ciphers.aead",
    "ciphers.base": "cryptoffload.ciphers.base",
    "kdf": "cryptoffload.kdf",
    "kdf.hkdf": "cryptoffload.kdf.hkdf",
    "kdf.x963kdf": "cryptoffload.kdf.x963kdf",
    "kdf.concatkdf": "cryptoffload.kdf.concatkdf",
    "kdf.kbkdf": "cryptoffload.kdf.kbkdf",
    **{
        f"asymmetric.{name}": f"cryptoffload.asymmetric.{name}"
        for name in (
            "rsa",
            "ec",
            "dh",
            "dsa",
            "ed25519",
            "ed448",
            "x25519",
            "x448",
            "padding",
            "utils",
            "types",
        )
    },
}
#: Names `cryptography`'s modules hold only because they import them for their own use.
IMPORTED_THERE = {
    "Buffer",  # cryptography.utils' typing alias
    "UnsupportedAlgorithm",  # cryptography.exceptions'
    "gcd",  # math's, in asymmetric.rsa
    "lcm",
    "Mode",  # ciphers.modes' (in ciphers.base)
    "BlockCipherAlgorithm",  # ciphers' (in ciphers.modes)
    "CipherAlgorithm",
}


def public_names(module: types.ModuleType) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # looking up a moved name warns
        return [
            name
            for name in dir(module)
            if not name.startswith("_")
            and name not in IMPORTED_THERE
            and not isinstance(getattr(module, name), (types.ModuleType, __future__._Feature))
        ]


@pytest.mark.parametrize(("theirs", "ours"), sorted(MIRRORS.items()))
def test_every_public_name_of_cryptographys_module_is_at_the_mirrored_path(theirs, ours):
    their_module = importlib.import_module(f"cryptography.hazmat.primitives.{theirs}")
    our_module = importlib.import_module(ours)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        missing = [name for name in public_names(their_module) if not hasattr(our_module, name)]
    assert missing == []


@pytest.mark.parametrize("name", ["rsa", "ec", "dh", "dsa", "ed25519", "ed448", "x25519", "x448"])
def test_the_asymmetric_path_is_the_flat_module(name):
    flat = importlib.import_module(f"cryptoffload.{name}")
    nested = importlib.import_module(f"cryptoffload.asymmetric.{name}")
    assert sorted(nested.__all__) == sorted(flat.__all__)
    for attr in flat.__all__:
        assert getattr(nested, attr) is getattr(flat, attr)


def test_from_asymmetric_import_rsa_and_padding_signs_through_the_provider():
    from cryptoffload import Provider, using
    from cryptoffload.asymmetric import padding, rsa
    from cryptoffload.hashes import SHA256

    provider = Provider(["software"])
    with using(provider):
        key = rsa.generate_private_key(65537, 2048)
        signature = key.sign(b"m", padding.PKCS1v15(), SHA256())
        key.public_key().verify(signature, b"m", padding.PKCS1v15(), SHA256())
    counted = provider.counters.snapshot()["software"]
    assert counted["rsa-2048-private"]["ops"] == 1
    assert counted["rsa-2048-public"]["ops"] == 1


def test_the_ciphers_aead_path_is_cryptoffloads_aead():
    import cryptoffload.aead
    import cryptoffload.ciphers.aead

    for name in cryptoffload.aead.__all__:
        assert getattr(cryptoffload.ciphers.aead, name) is getattr(cryptoffload.aead, name)
