"""`cryptoffload.rsa` at `cryptography`'s ``asymmetric.rsa`` path (that module's names)."""

from cryptoffload.rsa import *  # noqa: F403
from cryptoffload.rsa import __all__  # noqa: F401
