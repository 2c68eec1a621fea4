"""The PHC string of an Argon2 hash (``$argon2id$v=19$m=..,t=..,p=..$salt$hash``), read and
written as `cryptography` does: InvalidKey, with its message, for anything else."""

from __future__ import annotations

import base64
import re

from cryptography.exceptions import InvalidKey

_B64 = re.compile(r"[A-Za-z0-9+/]*")
_U32 = re.compile(r"\+?[0-9]+")
#: Our variant names -> how `cryptography` names the class in its "did you mean" message.
VARIANTS = {"argon2d": "Argon2d", "argon2i": "Argon2i", "argon2id": "Argon2id"}


def b64(data: bytes) -> str:
    """Standard base64 without padding."""
    return base64.b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str, what: str) -> bytes:
    """Strict unpadded base64 (no padding, no stray bits): InvalidKey otherwise."""
    if not _B64.fullmatch(text) or len(text) % 4 == 1:
        raise InvalidKey(f"Invalid base64 {what} in PHC string.")
    data = base64.b64decode(text + "=" * (-len(text) % 4))
    if b64(data) != text:
        raise InvalidKey(f"Invalid base64 {what} in PHC string.")
    return data


def _u32(text: str, what: str) -> int:
    if not _U32.fullmatch(text) or int(text) >= 1 << 32:
        raise InvalidKey(f"Invalid {what} in PHC string.")
    return int(text)


def encode(variant: str, memory: int, iterations: int, lanes: int, salt: bytes, key: bytes) -> str:
    """The PHC string of a derived key."""
    return f"${variant}$v=19$m={memory},t={iterations},p={lanes}${b64(salt)}${b64(key)}"


def decode(variant: str, phc: str) -> tuple[int, int, int, bytes, bytes]:
    """(memory_cost, iterations, lanes, salt, hash) of a PHC string for ``variant``."""
    parts = phc.split("$")
    if len(parts) != 6 or parts[0] or parts[1] not in VARIANTS:
        raise InvalidKey("Invalid PHC string format.")
    if parts[1] != variant:
        raise InvalidKey(
            f"Incorrect variant in PHC string, did you mean to use {VARIANTS[parts[1]]}?"
        )
    if parts[2] != "v=19":
        raise InvalidKey("Invalid version in PHC string.")
    params = parts[3].split(",")
    if len(params) != 3:
        raise InvalidKey("Invalid parameters in PHC string.")
    if not all(p.startswith(k) for p, k in zip(params, ("m=", "t=", "p="), strict=True)):
        raise InvalidKey("Parameters must be in order: m, t, p.")
    memory = _u32(params[0][2:], "memory cost")
    iterations = _u32(params[1][2:], "iterations")
    lanes = _u32(params[2][2:], "parallelism")
    return memory, iterations, lanes, _unb64(parts[4], "salt"), _unb64(parts[5], "hash")
