"""`cryptoffload.ed25519` at `cryptography`'s ``asymmetric.ed25519`` path (that module's names)."""

from cryptoffload.ed25519 import *  # noqa: F403
from cryptoffload.ed25519 import __all__  # noqa: F401
