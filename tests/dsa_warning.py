"""cryptography 51 deprecates DSA: tests that use DSA on purpose hide that warning (and only it;
tests/test_dsa_deprecation.py checks where it is given)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TypeVar

import pytest
from cryptography.utils import CryptographyDeprecationWarning

T = TypeVar("T")

#: A pytest mark for a test or module that uses DSA on purpose.
IGNORE_DSA_WARNING = pytest.mark.filterwarnings(
    "ignore:DSA is deprecated:cryptography.utils.CryptographyDeprecationWarning"
)


def without_dsa_warning(make: Callable[[], T]) -> T:
    """``make()`` with the DSA deprecation warning hidden (for objects made at import)."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="DSA is deprecated", category=CryptographyDeprecationWarning
        )
        return make()
