"""`cryptography`'s ``asymmetric`` path: ``from cryptoffload.asymmetric import rsa, padding``."""

from cryptoffload.asymmetric import (
    dh,
    dsa,
    ec,
    ed448,
    ed25519,
    padding,
    rsa,
    types,
    utils,
    x448,
    x25519,
)

__all__ = [
    "dh",
    "dsa",
    "ec",
    "ed448",
    "ed25519",
    "padding",
    "rsa",
    "types",
    "utils",
    "x448",
    "x25519",
]
