"""RSA paddings and MGFs at `cryptography`'s ``asymmetric.padding`` path: its classes, which
cryptoffload's RSA keys take (parameter types, as the cipher modes are)."""

from cryptography.hazmat.primitives.asymmetric.padding import (
    MGF,
    MGF1,
    OAEP,
    PSS,
    AsymmetricPadding,
    PKCS1v15,
    calculate_max_pss_salt_length,
)

__all__ = [
    "MGF",
    "MGF1",
    "OAEP",
    "PSS",
    "AsymmetricPadding",
    "PKCS1v15",
    "calculate_max_pss_salt_length",
]
