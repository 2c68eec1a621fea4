"""`cryptoffload.x25519` at `cryptography`'s ``asymmetric.x25519`` path (that module's names)."""

from cryptoffload.x25519 import *  # noqa: F403
from cryptoffload.x25519 import __all__  # noqa: F401
