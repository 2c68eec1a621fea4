"""The public path of :mod:`cryptoffload.caam.jr.driver`, which holds the code."""

from cryptoffload.caam.jr.driver import *  # noqa: F403
from cryptoffload.caam.jr.driver import __all__  # noqa: F401
