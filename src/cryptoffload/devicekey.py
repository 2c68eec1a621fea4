"""Keys bound to one engine's hardware: usable through the API, never held by software in clear."""

from __future__ import annotations

from cryptoffload.errors import CryptoffloadError

__all__ = ["DeviceKey", "DeviceKeyError"]


class DeviceKeyError(CryptoffloadError, ValueError):
    """A device-bound key reached something that cannot use it (software, another engine)."""


class DeviceKey:
    """An AES key wrapped to one engine's device (a CAAM black-key blob under the device's
    master key and a key modifier). ``AESGCM(key)`` and ``AESCCM(key)`` take it like key bytes;
    only the engine that made it can run them, and software refuses it with DeviceKeyError.

    ``blob`` and ``modifier`` may be stored: ``DeviceKey(blob, modifier, bits, engine)`` on the
    same device gives the same key back (on another device the blob does not open).
    """

    __slots__ = ("bits", "blob", "engine", "modifier")

    def __init__(self, blob: bytes, modifier: bytes, bits: int, engine: str) -> None:
        if bits not in (128, 192, 256):
            raise ValueError(f"a device key is an AES key of 128, 192 or 256 bits, got {bits}")
        if not isinstance(engine, str) or not engine:
            raise TypeError(f"engine must name the engine that made the key, got {engine!r}")
        self.blob = bytes(blob)
        self.modifier = bytes(modifier)
        self.bits = bits
        self.engine = engine

    def __len__(self) -> int:
        """The key's length in bytes, as for key bytes (the blob's own length is ``len(blob)``)."""
        return self.bits // 8

    def __repr__(self) -> str:
        # The blob is covered key material: reprs end up in logs; show only what it is for.
        return f"<DeviceKey aes-{self.bits} bound to {self.engine}>"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, DeviceKey)
            and other.blob == self.blob
            and other.modifier == self.modifier
            and other.engine == self.engine
        )

    def __hash__(self) -> int:
        return hash((self.blob, self.modifier, self.engine))

    def refuse(self, who: str) -> DeviceKeyError:
        """The error for ``who`` (software, another engine) being handed this key."""
        return DeviceKeyError(
            f"this AES-{self.bits} key is bound to {self.engine} (a device key blob): {who} "
            f"cannot use it; run it through a provider holding {self.engine}, which must take "
            "the operation (it did not: see the provider's counters for its reason)"
        )
