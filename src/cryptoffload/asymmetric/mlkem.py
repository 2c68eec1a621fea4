"""`cryptoffload.mlkem` at `cryptography`'s ``asymmetric.mlkem`` path (that module's names)."""

from cryptoffload.mlkem import *  # noqa: F403
from cryptoffload.mlkem import __all__  # noqa: F401
