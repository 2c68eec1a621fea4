"""What the installed `cryptography` release does where its releases differ: the mirror follows
the release it runs on (pyproject.toml's range; both ends are tested)."""

from __future__ import annotations

import cryptography

#: The installed release's major version.
MAJOR = int(cryptography.__version__.split(".")[0])
#: 51 on: an ``*_into`` call whose input and output overlap is refused.
REFUSES_OVERLAP = MAJOR >= 51
#: 51 on: a PKCS #8 private key may be RFC 5958's OneAsymmetricKey v2 (version 1, with an
#: optional public key, which must then match the private key).
READS_PKCS8_V2 = MAJOR >= 51
