"""Python's own `hashlib` and `hmac` as an application sees them under `cryptoffload run` or after
`install()`: the hashes, HMACs and PBKDF2s an engine of the provider claims go through it, the
rest are Python's own functions.

Which algorithms go through the provider is decided once, when ``install()`` builds the views
(:func:`views`), from the provider in force then: an algorithm whose lane is software-only (no
engine claims it, no policy requires its offload) keeps Python's function object itself, so an
application pays nothing per call where no engine takes the op. When nothing of a module is
claimed, the application gets Python's module itself.
"""

from __future__ import annotations

import types
from typing import Any

from cryptoffload.stdlib._common import CANDIDATES


def views(provider: Any) -> dict[str, types.ModuleType]:
    """``{"hashlib": ..., "hmac": ...}``: the modules an application's imports of those names
    resolve to under ``provider``, only those of which something is claimed."""
    claimed = frozenset(alg for alg in CANDIDATES if not provider.lane(alg).software_only)
    if not claimed:
        return {}
    from cryptoffload.stdlib import hashlib as routed_hashlib
    from cryptoffload.stdlib import hmac as routed_hmac

    out = {}
    hashlib_view = routed_hashlib.view(claimed)
    if hashlib_view is not None:
        out["hashlib"] = hashlib_view
    hmac_view = routed_hmac.view(claimed, hashlib_view)
    if hmac_view is not None:
        out["hmac"] = hmac_view
    return out
