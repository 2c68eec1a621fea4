"""`cryptography`'s ``asymmetric.utils`` at its path: ``Prehashed``, ``NoDigestInfo`` (parameter
types) and the DSS signature encoders (DER helpers that run no key operation)."""

from cryptography.hazmat.primitives.asymmetric.utils import (
    NoDigestInfo,
    Prehashed,
    decode_dss_signature,
    encode_dss_signature,
)

__all__ = ["NoDigestInfo", "Prehashed", "decode_dss_signature", "encode_dss_signature"]
