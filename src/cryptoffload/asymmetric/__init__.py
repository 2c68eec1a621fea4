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

try:  # ML-KEM and ML-DSA where the installed `cryptography` has them
    from cryptoffload.asymmetric import mldsa, mlkem
except ImportError:  # pragma: no cover - cryptography before ML-KEM/ML-DSA
    pass
else:
    __all__ += ["mldsa", "mlkem"]
