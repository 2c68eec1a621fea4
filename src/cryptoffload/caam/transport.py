"""The public path of :mod:`cryptoffload.caam.jr.transport`, which holds the code."""

from cryptoffload.caam.jr.transport import *  # noqa: F403
from cryptoffload.caam.jr.transport import __all__  # noqa: F401
