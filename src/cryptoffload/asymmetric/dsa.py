"""`cryptoffload.dsa` at `cryptography`'s ``asymmetric.dsa`` path (that module's names)."""

from cryptoffload.dsa import *  # noqa: F403
from cryptoffload.dsa import __all__  # noqa: F401
