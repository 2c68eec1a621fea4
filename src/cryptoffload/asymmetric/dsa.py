"""`cryptoffload.dsa` at `cryptography`'s ``asymmetric.dsa`` path (that module's names): the same
objects, and the same deprecation warnings on reading them."""

from cryptoffload import dsa as _flat
from cryptoffload.dsa import __all__

globals().update({name: vars(_flat)[name] for name in __all__ if name in vars(_flat)})
_flat._deprecated.install(globals())
