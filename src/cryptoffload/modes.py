"""The AES modes cryptoffload offers, as `cryptography`'s mode classes (CFB/OFB from `decrepit`)."""

from __future__ import annotations

from cryptography.hazmat.decrepit.ciphers.modes import CFB, OFB
from cryptography.hazmat.primitives.ciphers.modes import CBC, CTR, ECB, GCM, Mode

__all__ = ["CBC", "CFB", "CTR", "ECB", "GCM", "OFB", "Mode"]
