"""The public path of :mod:`cryptoffload.caam.desc.builder`, which holds the code."""

from cryptoffload.caam.desc.builder import *  # noqa: F403
from cryptoffload.caam.desc.builder import __all__  # noqa: F401
