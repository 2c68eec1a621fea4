"""`cryptoffload.aead` at `cryptography`'s ``ciphers.aead`` path (the same module's names)."""

from cryptoffload.aead import *  # noqa: F403
from cryptoffload.aead import __all__  # noqa: F401
