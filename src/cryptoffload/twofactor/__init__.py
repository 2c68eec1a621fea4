"""One-time passwords (HOTP, TOTP) as `cryptography`'s ``twofactor``, on cryptoffload's HMAC."""

from cryptography.hazmat.primitives.twofactor import InvalidToken

__all__ = ["InvalidToken"]
