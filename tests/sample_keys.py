"""Keys generated once per test run for the contract and check-count tests (never printed)."""

from __future__ import annotations

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from cryptoffload import dh

RSA_KEY = rsa.generate_private_key(65537, 2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
EC_PEER = ec.generate_private_key(ec.SECP256R1()).public_key()
DH_PARAMS = dh.DHParameterNumbers(dh.group("ffdhe2048").p, 2).parameters()
DH_KEY = DH_PARAMS.generate_private_key()
DH_PEER = DH_PARAMS.generate_private_key().public_key()
#: What a DhOp carries: the key records of blocks.ffdh (FFDH does not use `cryptography`).
DH_RAW = DH_KEY.to_cryptography()
DH_PEER_RAW = DH_PEER.to_cryptography()
OAEP = padding.OAEP(padding.MGF1(hashes.SHA256()), hashes.SHA256(), None)
