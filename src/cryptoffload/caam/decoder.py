"""The public path of :mod:`cryptoffload.caam.desc.decoder`, which holds the code."""

from cryptoffload.caam.desc.decoder import *  # noqa: F403
from cryptoffload.caam.desc.decoder import __all__  # noqa: F401
