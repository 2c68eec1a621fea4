"""What the numbers classes of RSA, EC and DSA share: `cryptography`'s numbers object, checked by
`cryptography` itself (same errors), behind a class of ours whose ``private_key()`` /
``public_key()`` / ``parameters()`` give this package's keys, which go through the provider.

`cryptography`'s numbers classes are final (Rust), so ours cannot subclass them; they compare
equal to them (either way round) and hash alike, and every function here that takes numbers
takes either.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

N = TypeVar("N", bound="Numbers")


class Numbers:
    """`cryptography`'s numbers object of class ``_WRAPS``, held as ``_raw``."""

    __slots__ = ("_raw",)
    _WRAPS: ClassVar[type] = object

    @classmethod
    def _wrap(cls: type[N], raw: Any) -> N:
        """Ours, around `cryptography`'s numbers object ``raw`` (already checked)."""
        if isinstance(raw, cls):
            return raw
        numbers = cls.__new__(cls)
        numbers._raw = raw
        return numbers

    def to_cryptography(self) -> Any:
        """The same numbers as `cryptography`'s class."""
        return self._raw

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Numbers):
            other = other._raw
        if not isinstance(other, self._WRAPS):
            return NotImplemented
        return bool(self._raw == other)

    def __hash__(self) -> int:
        return hash(self._raw)

    def __repr__(self) -> str:
        # As `cryptography`'s for public numbers; private numbers override (no secrets).
        return repr(self._raw)


def unwrap(numbers: Any) -> Any:
    """`cryptography`'s numbers object for ours; anything else as it is (for its own checks)."""
    return numbers._raw if isinstance(numbers, Numbers) else numbers
