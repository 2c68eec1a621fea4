"""`cryptography`'s ``serialization.base`` path: the PEM/DER loaders, giving cryptoffload's keys."""

from cryptoffload.serialization import (
    load_der_parameters,
    load_der_private_key,
    load_der_public_key,
    load_pem_parameters,
    load_pem_private_key,
    load_pem_public_key,
)

__all__ = [
    "load_der_parameters",
    "load_der_private_key",
    "load_der_public_key",
    "load_pem_parameters",
    "load_pem_private_key",
    "load_pem_public_key",
]
