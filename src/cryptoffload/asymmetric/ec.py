"""`cryptoffload.ec` at `cryptography`'s ``asymmetric.ec`` path (that module's names)."""

from cryptoffload.ec import *  # noqa: F403
from cryptoffload.ec import __all__  # noqa: F401
