"""`cryptoffload.mldsa` at `cryptography`'s ``asymmetric.mldsa`` path (that module's names)."""

from cryptoffload.mldsa import *  # noqa: F403
from cryptoffload.mldsa import __all__  # noqa: F401
