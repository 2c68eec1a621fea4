"""The public path of :mod:`cryptoffload.caam.jr.boards`, which holds the code."""

from cryptoffload.caam.jr.boards import *  # noqa: F403
from cryptoffload.caam.jr.boards import __all__  # noqa: F401
