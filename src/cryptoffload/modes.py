"""The AES modes cryptoffload offers, as `cryptography`'s mode classes (CFB/OFB from `decrepit`)."""

from __future__ import annotations

from cryptography.hazmat.primitives.ciphers.modes import CBC, CTR, ECB, GCM, Mode

try:  # cryptography 43+ keeps CFB and OFB here and deprecates the old names
    from cryptography.hazmat.decrepit.ciphers.modes import CFB, OFB
except ImportError:  # pragma: no cover - older cryptography
    from cryptography.hazmat.primitives.ciphers.modes import CFB, OFB

__all__ = ["CBC", "CFB", "CTR", "ECB", "GCM", "OFB", "Mode"]
