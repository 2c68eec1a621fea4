"""The exceptions cryptoffload raises, and the vocabulary of reasons an engine declines with."""

from __future__ import annotations

from cryptography.exceptions import InvalidSignature, InvalidTag

__all__ = [
    "REASONS",
    "BadEngineSpec",
    "CryptoffloadError",
    "EngineError",
    "InvalidSignature",
    "InvalidTag",
    "OffloadRequired",
    "Unavailable",
    "UnknownEngine",
]

#: Reasons an engine (or the policy) gives for not taking an operation; counters keep them.
REASONS = frozenset(
    {
        "unsupported",  # the engine cannot express this algorithm, mode, length or parameter
        "below-threshold",  # policy: smaller than the minimum offload size
        "too-large",  # larger than the engine or the policy accepts
        "misaligned",  # length or buffer alignment the engine cannot take
        "busy",  # ring full, device busy, EAGAIN/EBUSY
        "fault",  # the engine failed before releasing any output
        "denied",  # policy deny list
        "streaming",  # a streaming context the engine cannot carry across calls
        "no-device",  # the device went away or was never there
        "disabled",  # a cross-check found a wrong result: the engine no longer gets the algorithm
    }
)


class CryptoffloadError(Exception):
    """Base class of cryptoffload's own errors."""


class Unavailable(CryptoffloadError):
    """An engine declines an operation; the provider tries the next engine.

    ``reason`` is one of :data:`REASONS` (an engine from outside may use its own word; counters keep
    whatever string it gives). ``detail`` is free text for logs and never reaches the counters.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class NoResult(CryptoffloadError, ValueError):
    """The input has no result, as the Op contract says for its family (an RSA ciphertext that
    does not decrypt, an X25519/X448 agreement that comes out all zeros): the engine's answer,
    counted as its operation and never redone in software; the caller sees the ValueError it is.

    An engine raises it for these answers only: any other exception, a plain ValueError
    included, is a fault, after which software redoes the operation.
    """


class OffloadRequired(CryptoffloadError):
    """The policy requires offload for this algorithm and no engine took the operation."""

    def __init__(self, algorithm: str, declines: dict[str, str]) -> None:
        tried = ", ".join(f"{engine}: {reason}" for engine, reason in declines.items()) or "none"
        super().__init__(
            f"policy requires offload of {algorithm}, but no engine took it (declines: {tried})"
        )
        self.algorithm = algorithm
        self.declines = declines


class EngineError(CryptoffloadError):
    """An engine could not be built, probed or configured (bad spec, missing device, bad option)."""


class UnknownEngine(EngineError, ValueError):
    """An engine spec names an engine this package does not have."""


class BadEngineSpec(EngineError, ValueError):
    """An engine spec is malformed: an option this engine does not take, or a value that is not
    what its option takes (a usage error, found when the spec is read, before any probe)."""
