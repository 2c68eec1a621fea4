"""`cryptoffload.x448` at `cryptography`'s ``asymmetric.x448`` path (that module's names)."""

from cryptoffload.x448 import *  # noqa: F403
from cryptoffload.x448 import __all__  # noqa: F401
