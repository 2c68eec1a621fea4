"""PKCS#11 tokens (HSMs, smart cards, TPMs, SoftHSM) as an engine, from a spec.

``pkcs11:module=PATH,token=LABEL[,pin-env=VAR|pin-file=PATH]``: the module's path, the token's
label, and where the user PIN is read (never the PIN itself: specs reach logs and process lists).
Modules: ``ck`` (the ctypes layer), ``spec``, ``sessions`` (login, session pool, fork),
``mechanisms`` and ``kat`` (claims), ``formats`` (edge translation), ``keys`` (the import cache
and the token key classes), ``symmetric`` and ``asymmetric`` (the operations), ``tokens`` (keys
made and found on the token), ``engine`` (probe, dispatch, error mapping).
"""

from __future__ import annotations

from cryptoffload.engines.pkcs11.engine import Pkcs11Engine
from cryptoffload.engines.pkcs11.keys import TokenAesKey, TokenEcPrivateKey, TokenRsaPrivateKey
from cryptoffload.engines.pkcs11.spec import Spec, parse

__all__ = [
    "Pkcs11Engine",
    "Spec",
    "TokenAesKey",
    "TokenEcPrivateKey",
    "TokenRsaPrivateKey",
    "from_spec",
]


def from_spec(arg: str) -> Pkcs11Engine:
    """``pkcs11:module=PATH,token=LABEL[,pin-env=VAR|pin-file=PATH]`` (BadEngineSpec otherwise)."""
    return Pkcs11Engine(parse(arg))
