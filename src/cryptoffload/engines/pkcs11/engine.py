"""The PKCS#11 engine: runs ops on a token (an HSM, a smart card, a TPM, SoftHSM), with the
caller's keys imported as session objects or with keys that live on the token."""

from __future__ import annotations

from typing import Any

from cryptoffload.engines import _fork
from cryptoffload.engines.base import Capabilities
from cryptoffload.engines.pkcs11 import asymmetric, ck, kat, mechanisms, symmetric, tokens
from cryptoffload.engines.pkcs11.keys import KeyCache, TokenKeyRef, find
from cryptoffload.engines.pkcs11.sessions import (
    RESET_ON,
    RETRY_AFTER_RESET,
    Token,
    TokenUnavailable,
)
from cryptoffload.engines.pkcs11.spec import Spec
from cryptoffload.errors import Unavailable

#: Token answers that mean "not this mechanism, size or parameter": declined with the reason.
DECLINED = frozenset(
    {
        ck.CKR_MECHANISM_INVALID,
        ck.CKR_MECHANISM_PARAM_INVALID,
        ck.CKR_KEY_SIZE_RANGE,
        ck.CKR_KEY_TYPE_INCONSISTENT,
        ck.CKR_KEY_FUNCTION_NOT_PERMITTED,
        ck.CKR_DATA_LEN_RANGE,
        ck.CKR_ARGUMENTS_BAD,
        ck.CKR_FUNCTION_NOT_SUPPORTED,
        ck.CKR_TEMPLATE_INCONSISTENT,
        ck.CKR_ATTRIBUTE_VALUE_INVALID,
        ck.CKR_CURVE_NOT_SUPPORTED,
        ck.CKR_DOMAIN_PARAMS_INVALID,
    }
)


class Pkcs11Engine:
    """An engine over one token of a PKCS#11 module (see the package docstring for the spec)."""

    def __init__(self, spec: Spec, cache_size: int = 64) -> None:
        self.spec = spec
        self.name = f"pkcs11:{spec.token}"
        self._token = Token(spec)
        self._cache = KeyCache(self._token, cache_size)
        self._claims: dict[str, mechanisms.Claim] = {}
        self._hmac_range: dict[str, tuple[int, int]] = {}
        self._probed: Capabilities | None = None
        #: Set by the probe when the token refuses C_CreateObject for keys (a TPM): caller keys
        #: are declined at once, and only keys made on the token run there.
        self.imports_refused = False
        #: GCM tag lengths the token was seen to produce as software does (probe widens it).
        self._gcm_tags: frozenset[int] = frozenset({16})
        _fork.watch(self)

    def __repr__(self) -> str:
        return f"<Pkcs11Engine {self.spec.text()}>"

    # -- probe ---------------------------------------------------------------------------

    def probe(self) -> Capabilities:
        """Open the token, read its mechanisms, claim what passes a known answer (once: the
        same Capabilities again for every provider built on this engine)."""
        if self._probed is None or not self._probed.available:
            self._probed = self._probe()
        return self._probed

    def _probe(self) -> Capabilities:
        try:
            self._token.open()
            assert self._token.module is not None
            mechs = self._token.module.mechanisms(self._token.slot)
        except TokenUnavailable as exc:
            return Capabilities(available=False, reason=str(exc))
        except ck.CkError as exc:
            return Capabilities(available=False, reason=f"token {self.spec.token!r}: {exc}")
        self._claims = mechanisms.offered(mechs)
        for name, claim in self._claims.items():
            if name.startswith("hmac-"):
                self._hmac_range[name] = (claim.min_key, claim.max_key)
        if "aes-128-gcm" in self._claims:
            self._gcm_tags = frozenset(range(4, 17))  # offered while they are checked
            self._gcm_tags = frozenset({16} | kat.gcm_tags(self, "aes-128-gcm"))
        refused = kat.check(self, set(self._claims))
        for name in refused:
            self._claims.pop(name, None)
        info = self._token.info
        assert info is not None
        return Capabilities(
            available=True,
            algorithms=frozenset(self._claims),
            detail={
                "module": self.spec.module,
                "token": self.spec.token,
                "manufacturer": info.manufacturerID.rstrip(b" \0").decode(errors="replace"),
                "model": info.model.rstrip(b" \0").decode(errors="replace"),
                "gcm tag lengths": sorted(self._gcm_tags),
                "imports caller keys": not self.imports_refused,
                "known-answer failures": {k: v for k, v in sorted(refused.items())},
                "mechanisms": mechanisms.describe(mechs),
                "algorithms": {
                    n: {"driver": f"0x{c.mechanism:x}", "hardware": True}
                    for n, c in sorted(self._claims.items())
                },
            },
        )

    # -- running ops ---------------------------------------------------------------------

    def run(self, op: Any) -> Any:
        """Run ``op`` on the token; decline (Unavailable) what it cannot do exactly."""
        handler = _HANDLERS.get(op.family)
        if handler is None or (self._claims and op.alg not in self._claims):
            raise Unavailable("unsupported", f"{self.name} does not claim {op.alg}")
        for attempt in (1, 2):
            generation = self._token.generation
            try:
                return handler(self, op)
            except TokenUnavailable as exc:
                raise Unavailable("no-device", str(exc)) from None
            except ck.CkError as exc:
                if exc.rv in DECLINED:
                    raise Unavailable("unsupported", f"{self.name}: {exc}") from None
                if exc.rv not in RESET_ON:
                    raise
                # Sessions and keys open afresh: for this op once more when only the handles
                # were lost, else for the next op (this one a fault).
                self._token.reset(generation)
                if attempt == 2 or exc.rv not in RETRY_AFTER_RESET:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _module(self) -> ck.Module:
        """The module, the token opened first if it is not (first use, after fork or reset)."""
        self._token.ensure()
        assert self._token.module is not None
        return self._token.module

    def _imported(self, name: bytes, template: Any) -> Any:
        """The cache's context for a caller key; declined on a token that imports none."""
        if self.imports_refused:
            raise Unavailable(
                "unsupported", f"{self.name} imports no keys: only keys made on it run there"
            )
        return self._cache.use(name, template)

    def _ref_handle(self, ref: TokenKeyRef) -> int:
        if ref.token is self._token:
            return ref.handle()
        return find(self._token, ref.cls, ref.label, ref.id)

    # -- token keys ----------------------------------------------------------------------

    def key(self, *, label: str | None = None, id: bytes | None = None) -> Any:
        """The key on the token with this label or id: a TokenAesKey (AESGCM and the AES
        ciphers take it like key bytes), or a TokenEcPrivateKey / TokenRsaPrivateKey
        (`cryptography`'s interfaces, taken wherever this package takes a `cryptography` key;
        ``cryptoffload.tokenkeys.key`` gives them as this package's key objects, whose
        ``sign`` and ``decrypt`` run here). LookupError if there is none."""
        return tokens.find_key(self, label=label, id=id)

    #: ``engine.generate_key(kind, *, label, id=None, bits=None, curve="p256")``: see there.
    generate_key = tokens.generate_key

    def _destroy_token_objects(self, ident: bytes) -> None:
        """Destroy every object with this CKA_ID (the probe's own key pairs)."""
        tokens.destroy_objects(self, ident)

    @property
    def imports(self) -> int:
        """Caller keys imported so far (each once while it stays in the cache)."""
        return self._cache.imports

    def close(self) -> None:
        """Destroy the imported keys, close the sessions, finalize the module."""
        self._cache.clear()
        self._token.close()

    def _after_fork_in_child(self) -> None:
        self._cache.forget()
        self._token.forget()


_HANDLERS = {
    "aead": symmetric.aead,
    "cipher": symmetric.cipher,
    "hash": symmetric.digest,
    "mac": symmetric.mac,
    "ecdsa": asymmetric.ecdsa,
    "ecdh": asymmetric.ecdh,
    "rsa": asymmetric.rsa,
}
