"""A pass-through engine: claims every algorithm and answers through the software engine.

For proving paths, not speed: with ``--engines passthrough`` every operation an application makes
takes the engine path (an Op built, validated above the engines, offered, counted under
``passthrough``), so the counters show everything that went through cryptoffload, and anything
left under ``software`` is what no engine op carries.
"""

from __future__ import annotations

from typing import Any

from cryptoffload.engines.base import Capabilities
from cryptoffload.engines.software import SoftwareEngine
from cryptoffload.errors import UnknownEngine
from cryptoffload.names import all_algorithms


class PassThroughEngine:
    """Every algorithm name claimed, every op answered by OpenSSL (as the software engine)."""

    name = "passthrough"

    def __init__(self) -> None:
        self._software = SoftwareEngine()

    def probe(self) -> Capabilities:
        # No size threshold of its own: the built-in ones (policy.DEFAULT_MIN_SIZE, small
        # AES-CBC/CTR/ECB to software) pay a device's round trip back, and this engine has
        # none; without this, aioquic's 16-byte header-protection blocks stayed on software.
        # A policy's own min_size still wins.
        return Capabilities(
            available=True, algorithms=frozenset(all_algorithms()), min_size={"*": 0}
        )

    def run(self, op: Any) -> Any:
        return self._software.run(op)


def from_spec(arg: str) -> PassThroughEngine:
    """``passthrough`` takes no options."""
    if arg:
        raise UnknownEngine(f"the passthrough engine takes no options, got 'passthrough:{arg}'")
    return PassThroughEngine()
