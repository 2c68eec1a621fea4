"""Key loading and saving (PEM/DER, SSH), as `cryptography`'s ``serialization``, returning
cryptoffload's keys; finite-field DH keys and parameters are read here, without `cryptography`."""

from __future__ import annotations

import importlib
from typing import Any

from cryptography.hazmat.primitives import serialization as _ser
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    KeySerializationEncryption,
    NoEncryption,
    ParameterFormat,
    PrivateFormat,
    PublicFormat,
    SSHCertificate,
    SSHCertificateBuilder,
    SSHCertificateType,
    SSHCertPrivateKeyTypes,
    SSHCertPublicKeyTypes,
    SSHPrivateKeyTypes,
    SSHPublicKeyTypes,
    ssh_key_fingerprint,
)

from cryptoffload import dh, dsa, ec, ed448, ed25519, rsa, x448, x25519
from cryptoffload._release import READS_PKCS8_V2
from cryptoffload.blocks import der, ffdh, pkcs8
from cryptoffload.core.provider import Provider

__all__ = [
    "BestAvailableEncryption",
    "Encoding",
    "KeySerializationEncryption",
    "NoEncryption",
    "ParameterFormat",
    "PrivateFormat",
    "PublicFormat",
    "SSHCertPrivateKeyTypes",
    "SSHCertPublicKeyTypes",
    "SSHCertificate",
    "SSHCertificateBuilder",
    "SSHCertificateType",
    "SSHPrivateKeyTypes",
    "SSHPublicKeyTypes",
    "load_der_parameters",
    "load_der_private_key",
    "load_der_public_key",
    "load_pem_parameters",
    "load_pem_private_key",
    "load_pem_public_key",
    "load_ssh_private_key",
    "load_ssh_public_identity",
    "load_ssh_public_key",
    "ssh_key_fingerprint",
    "wrap_key",
]


_WRAPPERS = (
    rsa.RSAPrivateKey,
    rsa.RSAPublicKey,
    ec.EllipticCurvePrivateKey,
    ec.EllipticCurvePublicKey,
    dh.DHPrivateKey,
    dh.DHPublicKey,
    dsa._DSAPrivateKey,
    dsa._DSAPublicKey,
    ed25519.Ed25519PrivateKey,
    ed25519.Ed25519PublicKey,
    ed448.Ed448PrivateKey,
    ed448.Ed448PublicKey,
    x25519.X25519PrivateKey,
    x25519.X25519PublicKey,
    x448.X448PrivateKey,
    x448.X448PublicKey,
)


def _post_quantum_wrappers() -> tuple[type, ...]:
    """ML-KEM and ML-DSA key classes, where the installed `cryptography` has them."""
    found: list[type] = []
    for name in ("mlkem", "mldsa"):
        try:
            module = importlib.import_module(f"cryptoffload.{name}")
        except ImportError:
            continue
        found += [getattr(module, attr) for attr in module.__all__ if attr.endswith("Key")]
    return tuple(found)


_WRAPPERS += _post_quantum_wrappers()


#: Keys `cryptography`'s loaders give that make no operation of their own, handed over as they
#: are: 51's composite SSH keys (``ssh-mldsa44-ed25519``) hold an ML-DSA-44 and an Ed25519 key
#: and sign nothing (``MLDSA44Ed25519PrivateKey`` has no ``sign``).
_CONTAINERS: dict[str, type] = {
    name: getattr(_ser, name)
    for name in ("MLDSA44Ed25519PrivateKey", "MLDSA44Ed25519PublicKey")
    if hasattr(_ser, name)
}
globals().update(_CONTAINERS)
__all__ += sorted(_CONTAINERS)


def wrap_key(key: Any, *, provider: Provider | None = None) -> Any:
    """This package's key for a `cryptography` key (TypeError for kinds cryptoffload lacks)."""
    for wrapper in _WRAPPERS:
        if isinstance(key, wrapper._WRAPS):
            return wrapper(key, provider=provider)
        native = wrapper.__dict__.get("_NATIVE")
        if native is not None and isinstance(key, native):  # DH: `cryptography`'s own key
            return wrapper._adopt(key, provider)
    raise TypeError(f"cryptoffload does not handle {type(key).__name__} keys")


def _private_der(data: bytes, password: bytes | None) -> ffdh.PrivateKey | None:
    """A DH key from PKCS #8 DER (sealed with PBES2 when ``password`` is given), or None when
    the DER is not a DH key this module reads (`cryptography` then answers)."""
    try:
        if password is not None:
            plain = pkcs8.decrypt(data, password)
            if plain is None:
                return None
            data = plain
        return ffdh.read_private_key(data, v2=READS_PKCS8_V2)
    except der.DerError:
        return None


def _pem_body(data: bytes, labels: tuple[str, ...]) -> tuple[str, bytes] | None:
    for label, body in der.pem_blocks(bytes(data)):
        if label in labels:
            return label, body
    return None


def _loaded(key: Any, provider: Provider | None) -> Any:
    if isinstance(key, tuple(_CONTAINERS.values())):
        return key
    return wrap_key(key, provider=provider)


def load_pem_private_key(
    data: bytes,
    password: bytes | None,
    backend: object = None,
    *,
    unsafe_skip_rsa_key_validation: bool = False,
    provider: Provider | None = None,
) -> Any:
    """A private key from PEM (PKCS#8 or traditional), decrypted with ``password`` if given."""
    found = _pem_body(data, ("PRIVATE KEY", "ENCRYPTED PRIVATE KEY"))
    if found is not None:
        label, body = found
        encrypted = label == "ENCRYPTED PRIVATE KEY"
        if encrypted == (password is not None):
            raw = _private_der(body, password)
            if raw is not None:
                return dh.DHPrivateKey(raw, provider=provider)
    key = _ser.load_pem_private_key(
        data, password, unsafe_skip_rsa_key_validation=unsafe_skip_rsa_key_validation
    )
    return _loaded(key, provider)


def load_der_private_key(
    data: bytes,
    password: bytes | None,
    backend: object = None,
    *,
    unsafe_skip_rsa_key_validation: bool = False,
    provider: Provider | None = None,
) -> Any:
    """A private key from DER."""
    raw = _private_der(bytes(data), password)
    if raw is not None:
        return dh.DHPrivateKey(raw, provider=provider)
    key = _ser.load_der_private_key(
        data, password, unsafe_skip_rsa_key_validation=unsafe_skip_rsa_key_validation
    )
    return _loaded(key, provider)


def _public_der(data: bytes) -> ffdh.PublicKey | None:
    try:
        return ffdh.read_public_key(data)
    except der.DerError:
        return None


def load_pem_public_key(
    data: bytes, backend: object = None, *, provider: Provider | None = None
) -> Any:
    """A public key from PEM (SubjectPublicKeyInfo or PKCS#1)."""
    found = _pem_body(data, ("PUBLIC KEY",))
    raw = _public_der(found[1]) if found is not None else None
    if raw is not None:
        return dh.DHPublicKey(raw, provider=provider)
    return _loaded(_ser.load_pem_public_key(data), provider)


def load_der_public_key(
    data: bytes, backend: object = None, *, provider: Provider | None = None
) -> Any:
    """A public key from DER."""
    raw = _public_der(bytes(data))
    if raw is not None:
        return dh.DHPublicKey(raw, provider=provider)
    return _loaded(_ser.load_der_public_key(data), provider)


def _parameters(body: bytes, x942: bool, provider: Provider | None) -> dh.DHParameters:
    try:
        _, content, _ = der.read(body, der.SEQUENCE)
        params = ffdh.read_params(content, x942)
    except der.DerError:
        raise ValueError("Could not deserialize DH parameters") from None
    ffdh.check_parameters(params)
    return dh.DHParameters(params, provider=provider)


def load_pem_parameters(
    data: bytes, backend: object = None, *, provider: Provider | None = None
) -> dh.DHParameters:
    """DH parameters from PEM: PKCS #3 ``DH PARAMETERS`` or ``X9.42 DH PARAMETERS``."""
    found = _pem_body(data, ("DH PARAMETERS", "X9.42 DH PARAMETERS"))
    if found is None:
        raise ValueError(
            "Valid PEM but no BEGIN DH PARAMETERS/END DH PARAMETERS delimiters. "
            "Are you sure this is a DH parameters?"
        )
    return _parameters(found[1], found[0].startswith("X9.42"), provider)


def load_der_parameters(
    data: bytes, backend: object = None, *, provider: Provider | None = None
) -> dh.DHParameters:
    """DH parameters from DER (a trailing q is taken, as X9.42 has it)."""
    return _parameters(bytes(data), True, provider)


def load_ssh_private_key(
    data: bytes,
    password: bytes | None,
    backend: object = None,
    *,
    unsafe_skip_rsa_key_validation: bool = False,
    provider: Provider | None = None,
) -> Any:
    """A private key from OpenSSH's format."""
    key = _ser.load_ssh_private_key(
        data, password, unsafe_skip_rsa_key_validation=unsafe_skip_rsa_key_validation
    )
    return _loaded(key, provider)


def load_ssh_public_key(
    data: bytes, backend: object = None, *, provider: Provider | None = None
) -> Any:
    """A public key from an OpenSSH ``authorized_keys`` line."""
    return _loaded(_ser.load_ssh_public_key(data), provider)


def load_ssh_public_identity(data: bytes, *, provider: Provider | None = None) -> Any:
    """A public key (or an SSH certificate, as `cryptography` gives it) from OpenSSH's format."""
    found = _ser.load_ssh_public_identity(data)
    return found if isinstance(found, SSHCertificate) else _loaded(found, provider)


# The submodules at cryptography's paths, as attributes too (``serialization.pkcs12``...).
from cryptoffload.serialization import base, pkcs7, pkcs12, ssh  # noqa: E402, F401
