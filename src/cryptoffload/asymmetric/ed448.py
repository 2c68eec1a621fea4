"""`cryptoffload.ed448` at `cryptography`'s ``asymmetric.ed448`` path (that module's names)."""

from cryptoffload.ed448 import *  # noqa: F403
from cryptoffload.ed448 import __all__  # noqa: F401
