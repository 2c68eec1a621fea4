"""`cryptoffload.dh` at `cryptography`'s ``asymmetric.dh`` path (that module's names)."""

from cryptoffload.dh import *  # noqa: F403
from cryptoffload.dh import __all__  # noqa: F401
