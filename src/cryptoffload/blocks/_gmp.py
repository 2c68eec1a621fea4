"""gmpy2, imported at its first use: its import (importlib.metadata, and with it email, zipfile,
pathlib...) costs more than the rest of the software engine's, and `run`'s start-up would pay it
for programs that do no finite-field arithmetic."""

from __future__ import annotations

import functools
import types


@functools.cache
def gmp() -> types.ModuleType:
    """The gmpy2 module."""
    import gmpy2

    return gmpy2
