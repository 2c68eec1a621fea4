"""cryptoffload: one crypto API over the machine's crypto engines, with software finishing the rest.

Every operation is offered to the engines a :class:`Provider` holds, in priority order; software
(OpenSSL through `cryptography`) completes whatever they decline or fail, with the same answer.
Counters on the provider say what was offloaded and why the rest was not.
"""

from cryptoffload.errors import (
    CryptoffloadError,
    EngineError,
    InvalidSignature,
    InvalidTag,
    OffloadRequired,
    Unavailable,
    UnknownEngine,
)
from cryptoffload.policy import Policy
from cryptoffload.provider import Provider, current, default_provider, set_default_provider, using

__version__ = "0.1.0"

__all__ = [
    "CryptoffloadError",
    "EngineError",
    "InvalidSignature",
    "InvalidTag",
    "OffloadRequired",
    "Policy",
    "Provider",
    "Unavailable",
    "UnknownEngine",
    "__version__",
    "current",
    "default_provider",
    "set_default_provider",
    "using",
]
