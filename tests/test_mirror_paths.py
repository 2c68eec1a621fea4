"""Code moves over by changing its imports: every public name of the `cryptography` modules
cryptoffload mirrors is there at the mirrored path (``cryptography.hazmat.primitives.X`` ->
``cryptoffload.X``), and the ``asymmetric`` and ``ciphers.aead`` paths are the flat modules."""

from __future__ import annotations
import __future__

import importlib
import pkgutil
import types
import warnings

import pytest


def _public_modules() -> list[str]:
    """Every public module of ``cryptography.hazmat.primitives`` (no component starting with an
    underscore), after the package's name."""
    package = importlib.import_module("cryptography.hazmat.primitives")
    found = []
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        rest = info.name.removeprefix(f"{package.__name__}.")
        if not any(part.startswith("_") for part in rest.split(".")):
            found.append(rest)
    return sorted(found)


#: cryptography module -> the cryptoffload module at its path: every public module of
#: ``hazmat.primitives`` at ``cryptoffload.<the same path>``, and ``cryptography.fernet``.
MIRRORS = {
    **{
        f"cryptography.hazmat.primitives.{name}": f"cryptoffload.{name}"
        for name in _public_modules()
    },
    "cryptography.fernet": "cryptoffload.fernet",
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
    their_module = importlib.import_module(theirs)
    our_module = importlib.import_module(ours)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        missing = [name for name in public_names(their_module) if not hasattr(our_module, name)]
    assert missing == []


def test_the_walk_finds_the_modules_of_issue_21():
    walked = set(_public_modules())
    assert {"kdf.pbkdf2", "kdf.scrypt", "kdf.argon2", "keywrap", "constant_time"} <= walked
    assert {"twofactor", "twofactor.hotp", "twofactor.totp", "hpke"} <= walked
    assert {"serialization.pkcs12", "serialization.pkcs7", "serialization.ssh"} <= walked


def test_from_cryptoffload_import_asymmetric_then_its_modules_are_attributes():
    from cryptoffload import asymmetric

    assert asymmetric.rsa.RSAPrivateKey is importlib.import_module("cryptoffload.rsa").RSAPrivateKey
    assert asymmetric.mlkem.MLKEM768PrivateKey.__module__ == "cryptoffload.mlkem"
    for name in asymmetric.__all__:
        assert isinstance(getattr(asymmetric, name), types.ModuleType)


@pytest.mark.parametrize(
    "name", ["rsa", "ec", "dh", "dsa", "ed25519", "ed448", "x25519", "x448", "mlkem", "mldsa"]
)
def test_the_asymmetric_path_is_the_flat_module(name):
    flat = importlib.import_module(f"cryptoffload.{name}")
    nested = importlib.import_module(f"cryptoffload.asymmetric.{name}")
    assert sorted(nested.__all__) == sorted(flat.__all__)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reading DSA's names warns with cryptography 51
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
