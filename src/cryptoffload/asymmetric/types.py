"""The key type unions at `cryptography`'s ``asymmetric.types`` path: its own, which
cryptoffload's keys fall under (they are instances of its key interfaces)."""

from cryptography.hazmat.primitives.asymmetric.types import (
    CertificateIssuerPrivateKeyTypes,
    CertificateIssuerPublicKeyTypes,
    CertificatePublicKeyTypes,
    PrivateKeyTypes,
    PublicKeyTypes,
)

__all__ = [
    "CertificateIssuerPrivateKeyTypes",
    "CertificateIssuerPublicKeyTypes",
    "CertificatePublicKeyTypes",
    "PrivateKeyTypes",
    "PublicKeyTypes",
]
