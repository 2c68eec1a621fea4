"""The Op contract: one typed record per family, and the table of kinds, fields and results.

Every engine receives one of the Op classes below. :data:`CONTRACT` says, per family and kind,
which fields are set, what each field means (:data:`FIELDS`) and what the engine returns; the
provider's validation refuses a family/kind the table does not list, and the tests build one Op
of every entry and hold every in-tree engine to it. A field has one meaning wherever it appears.
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives.keywrap import InvalidUnwrap

from cryptoffload.errors import NoResult

#: What each field holds. A field an entry of :data:`CONTRACT` does not list is None.
FIELDS: dict[str, str] = {
    "key": "the key: bytes for the symmetric algorithms (or a DeviceKey for AES: only its engine "
    "can use it; Triple DES: the 24-byte form; XTS: both keys; key wrap: the wrapping key), the "
    "password or key material of a KDF, a `cryptography` key object for RSA, EC, DSA, Ed25519, "
    "Ed448, X25519, X448, ML-KEM and ML-DSA, a `blocks.ffdh.PrivateKey` for DH (FFDH runs on "
    "GMP, not on `cryptography`'s deprecated API)",
    "iv": "bytes: the IV, initial counter block or XTS tweak (cipher; None for ECB and ARC4; "
    "ChaCha20's 4-byte little-endian block counter and 12-byte nonce), the nonce (aead, GMAC; "
    "None for AES-SIV without one)",
    "data": "bytes-like: the payload (plaintext, ciphertext, message); for an AEAD decrypt the "
    "ciphertext followed by its tag; the key to wrap or the wrapped key (keywrap); the ML-KEM "
    "ciphertext to decapsulate; the message ML-DSA signs (None when it signs a digest, mu)",
    "out": "a bytearray or writable byte memoryview with room for len(data) bytes, or None: "
    "where the result goes instead of a new bytes (cipher; the caller's update_into buffer)",
    "aad": "bytes-like or None: associated data, authenticated and not encrypted (aead; for "
    "AES-SIV a tuple of bytes-like items, RFC 5297's vector, the nonce not among them); "
    "Argon2's associated data",
    "tag_length": "int: bytes of authentication tag, produced on encrypt, expected at the end "
    "of data on decrypt (aead, GMAC)",
    "digest": "bytes: the message's digest under hash_alg, to sign or verify against (ML-DSA: "
    "mu, the 64-byte message representative, in place of data)",
    "signature": "bytes: the signature to check",
    "value": "int: the number to raise to the key's exponent, 0 < value < n (RSA raw)",
    "padding": "a `cryptography` padding object: PKCS1v15(), PSS(...), OAEP(...)",
    "hash_alg": "a `cryptography` HashAlgorithm: the hash that made digest",
    "deterministic": "bool: derive the ECDSA nonce from key and digest (RFC 6979)",
    "peer": "the other party's public key: a `cryptography` key object (ECDH, X25519, X448), "
    "a `blocks.ffdh.PublicKey` (FFDH)",
    "length": "int: bytes wanted (rng; the output of an extendable-output hash, SHAKE; the "
    "key a KDF derives)",
    "salt": "bytes: a KDF's salt (PBKDF2, scrypt, Argon2)",
    "params": "tuple of ints: a KDF's cost, in `cryptography`'s argument order: PBKDF2 "
    "(iterations,), scrypt (n, r, p), Argon2 (iterations, lanes, memory_cost in KiB)",
    "secret": "bytes or None: Argon2's secret value (a key: never shown)",
    "context": "bytes-like or None: the ML-DSA context string (at most 255 bytes)",
}


class Entry(NamedTuple):
    """One family/kind of the contract: the fields it sets and what the engine gives back."""

    required: tuple[str, ...]
    optional: tuple[str, ...]
    result: str
    returns: type | tuple[type, ...]
    #: Exceptions that are the operation's answer (a failed check), not a fault.
    answers: tuple[type[Exception], ...] = ()


_BYTES = bytes
CONTRACT: dict[tuple[str, str], Entry] = {
    ("cipher", "encrypt"): Entry(
        ("key", "data"),
        ("iv", "out"),
        "bytes: ciphertext, as long as data; with out, the int len(data), the ciphertext "
        "written at the start of out",
        (bytes, int),
    ),
    ("cipher", "decrypt"): Entry(
        ("key", "data"),
        ("iv", "out"),
        "bytes: plaintext, as long as data; with out, the int len(data), the plaintext "
        "written at the start of out",
        (bytes, int),
    ),
    ("aead", "encrypt"): Entry(
        ("key", "data", "tag_length"),
        ("iv", "aad"),
        "bytes: ciphertext followed by the tag, len(data) + tag_length (AES-SIV: the tag, the "
        "synthetic IV, first, as RFC 5297 lays it out)",
        _BYTES,
    ),
    ("aead", "decrypt"): Entry(
        ("key", "data", "tag_length"),
        ("iv", "aad"),
        "bytes: plaintext, len(data) - tag_length; InvalidTag (and no plaintext) if altered",
        _BYTES,
        (InvalidTag,),
    ),
    ("hash", "digest"): Entry(
        ("data",), ("length",), "bytes: the digest (SHAKE: length bytes of output)", _BYTES
    ),
    ("mac", "mac"): Entry(
        ("key", "data"),
        ("iv", "tag_length"),
        "bytes: the tag (HMAC, CMAC, Poly1305: full length; GMAC, which sets iv and tag_length: "
        "tag_length bytes)",
        _BYTES,
    ),
    ("rsa", "sign"): Entry(
        ("key", "digest", "padding", "hash_alg"), (), "bytes: the signature", _BYTES
    ),
    ("rsa", "verify"): Entry(
        ("key", "digest", "signature", "padding", "hash_alg"),
        (),
        "None; InvalidSignature if the signature does not hold",
        type(None),
        (InvalidSignature,),
    ),
    ("rsa", "encrypt"): Entry(("key", "data", "padding"), (), "bytes: the ciphertext", _BYTES),
    ("rsa", "decrypt"): Entry(
        ("key", "data", "padding"),
        (),
        "bytes: the plaintext; ValueError if the ciphertext does not decrypt",
        _BYTES,
        (ValueError,),
    ),
    ("rsa", "raw"): Entry(("key", "value"), (), "int: value^d or value^e mod n", int),
    ("ecdsa", "sign"): Entry(
        ("key", "digest", "hash_alg", "deterministic"), (), "bytes: DER signature", _BYTES
    ),
    ("ecdsa", "verify"): Entry(
        ("key", "digest", "signature", "hash_alg"),
        (),
        "None; InvalidSignature if the signature does not hold",
        type(None),
        (InvalidSignature,),
    ),
    ("ecdh", "exchange"): Entry(("key", "peer"), (), "bytes: the shared x coordinate", _BYTES),
    ("dh", "exchange"): Entry(
        ("key", "peer"), (), "bytes: the shared secret, as long as p", _BYTES
    ),
    ("eddsa", "sign"): Entry(("key", "data"), (), "bytes: the signature of data", _BYTES),
    ("eddsa", "verify"): Entry(
        ("key", "data", "signature"),
        (),
        "None; InvalidSignature if the signature does not hold",
        type(None),
        (InvalidSignature,),
    ),
    ("xdh", "exchange"): Entry(
        ("key", "peer"),
        (),
        "bytes: the shared secret; ValueError if all zeros",
        _BYTES,
        (ValueError,),
    ),
    ("dsa", "sign"): Entry(("key", "digest", "hash_alg"), (), "bytes: DER signature", _BYTES),
    ("dsa", "verify"): Entry(
        ("key", "digest", "signature", "hash_alg"),
        (),
        "None; InvalidSignature if the signature does not hold",
        type(None),
        (InvalidSignature,),
    ),
    ("rng", "seed"): Entry(("length",), (), "bytes: length random bytes", _BYTES),
    ("kdf", "derive"): Entry(
        ("key", "salt", "length", "params"),
        ("aad", "secret"),
        "bytes: the derived key, length bytes (aad and secret: Argon2's only)",
        _BYTES,
    ),
    ("keywrap", "wrap"): Entry(
        ("key", "data"),
        (),
        "bytes: the wrapped key, 8 bytes longer than data (RFC 5649: than data padded to 8)",
        _BYTES,
    ),
    ("keywrap", "unwrap"): Entry(
        ("key", "data"),
        (),
        "bytes: the unwrapped key; InvalidUnwrap if the integrity check fails",
        _BYTES,
        (InvalidUnwrap,),
    ),
    ("mlkem", "encapsulate"): Entry(
        ("key",), (), "tuple: (shared secret, ciphertext), for the public key", tuple
    ),
    ("mlkem", "decapsulate"): Entry(
        ("key", "data"), (), "bytes: the shared secret (a wrong ciphertext gives another)", _BYTES
    ),
    ("mldsa", "sign"): Entry(
        ("key",),
        ("data", "digest", "context"),
        "bytes: the signature of data under context, or of mu (digest); one of data, digest",
        _BYTES,
    ),
    ("mldsa", "verify"): Entry(
        ("key", "signature"),
        ("data", "digest", "context"),
        "None; InvalidSignature if the signature does not hold (of data, or of mu: digest)",
        type(None),
        (InvalidSignature,),
    ),
}


class Op:
    """What every family's record has: ``family``, ``alg``, ``kind`` and ``size``.

    ``size`` is the payload in bytes, what thresholds compare and counters add up (the plaintext
    or ciphertext without the tag for an AEAD op, 0 for public-key ops). Treat an Op as immutable
    once built: engines may keep references to its fields, the provider offers the same Op to
    one engine after another.
    """

    __slots__ = ("alg", "kind")
    family: ClassVar[str] = ""
    #: The fields this family's records carry, in constructor order after ``alg`` and ``kind``.
    FIELDS: ClassVar[tuple[str, ...]] = ()

    alg: str
    kind: str

    @property
    def size(self) -> int:
        """Payload bytes (see the class docstring); 0 for public-key ops."""
        return 0

    def __repr__(self) -> str:
        # Never show key material or payloads: reprs end up in logs and tracebacks.
        try:
            size = str(self.size)
        except (TypeError, AttributeError):  # an op that validation has not passed yet
            size = "?"
        return f"<{type(self).__name__} {self.family}/{self.kind} {self.alg} size={size}>"

    def fields(self) -> dict[str, Any]:
        """The family's fields by name (for tests and tools; holds the key, so never log it)."""
        return {name: getattr(self, name) for name in self.FIELDS}


class _PayloadOp(Op):
    """A record whose size is its ``data``'s length."""

    __slots__ = ()
    data: Any

    @property
    def size(self) -> int:
        return len(self.data)


class CipherOp(_PayloadOp):
    """AES ECB/CBC/CTR/CFB/CFB8/OFB/XTS and the other ciphers of names.CIPHER_FAMILIES (Triple
    DES, Camellia, SM4, ChaCha20...): ``key``, ``iv`` (None for ECB and ARC4; ChaCha20's
    16-byte counter and nonce), ``data``, and ``out``.

    With ``out`` the engine writes the result into the caller's buffer (no copy on the way
    back: the kernel or the DMA engine writes it there) and returns its length. A cipher has
    no tag to check, so an engine that faults after writing part of it leaves nothing wrong:
    the next engine, or software, writes the whole result again.
    """

    __slots__ = ("data", "iv", "key", "out")
    family = "cipher"
    FIELDS = ("key", "iv", "data", "out")

    def __init__(
        self,
        alg: str,
        kind: str,
        key: bytes,
        iv: bytes | None,
        data: Any,
        out: bytearray | memoryview | None = None,
    ) -> None:
        self.alg = alg
        self.kind = kind
        self.key = key
        self.iv = iv
        self.data = data
        self.out = out


class AeadOp(Op):
    """AES-GCM/CCM/OCB3/SIV/GCM-SIV, ChaCha20-Poly1305: ``key``, ``iv`` (the nonce), ``data``,
    ``aad``, ``tag_length``.

    Encrypt returns ciphertext and tag in one buffer; decrypt takes them in one buffer (``data``
    ends with ``tag_length`` bytes of tag), as OpenSSL, AF_ALG and the CAAM all lay them out.

    ``into`` (not a contract field: None here, set on :class:`AeadIntoOp`) is the caller's
    ``encrypt_into`` / ``decrypt_into`` buffer, exactly as long as the result. An engine may
    write the result there and return its length (an int) instead of bytes; one that does
    must leave no plaintext there when the tag fails. Engines that ignore it return bytes.
    """

    __slots__ = ("aad", "data", "iv", "key", "tag_length")
    family = "aead"
    FIELDS = ("key", "iv", "data", "aad", "tag_length")
    into: Any = None

    def __init__(
        self, alg: str, kind: str, key: bytes, iv: Any, data: Any, aad: Any, tag_length: int
    ) -> None:
        self.alg = alg
        self.kind = kind
        self.key = key
        self.iv = iv
        self.data = data
        self.aad = aad
        self.tag_length = tag_length

    @property
    def size(self) -> int:
        n = len(self.data)
        return n if self.kind == "encrypt" else max(n - self.tag_length, 0)


class AeadIntoOp(AeadOp):
    """An AeadOp from an ``*_into`` call: ``into`` is the caller's output buffer (a writable
    byte view, exactly as long as the result); see AeadOp."""

    __slots__ = ("into",)

    def __init__(
        self,
        alg: str,
        kind: str,
        key: bytes,
        iv: Any,
        data: Any,
        aad: Any,
        tag_length: int,
        into: Any,
    ) -> None:
        super().__init__(alg, kind, key, iv, data, aad, tag_length)
        self.into = into


class HashOp(_PayloadOp):
    """A digest of ``data``; ``length`` is the output wanted of a SHAKE (None for the others)."""

    __slots__ = ("data", "length")
    family = "hash"
    FIELDS = ("data", "length")

    def __init__(self, alg: str, kind: str, data: Any, length: int | None = None) -> None:
        self.alg = alg
        self.kind = kind
        self.data = data
        self.length = length


class MacOp(_PayloadOp):
    """HMAC, CMAC and Poly1305: ``key``, ``data``; GMAC also ``iv`` (the nonce) and
    ``tag_length``."""

    __slots__ = ("data", "iv", "key", "tag_length")
    family = "mac"
    FIELDS = ("key", "data", "iv", "tag_length")

    def __init__(
        self,
        alg: str,
        kind: str,
        key: bytes,
        data: Any,
        iv: Any = None,
        tag_length: int | None = None,
    ) -> None:
        self.alg = alg
        self.kind = kind
        self.key = key
        self.data = data
        self.iv = iv
        self.tag_length = tag_length


class RsaOp(Op):
    """RSA with a `cryptography` key: sign/verify a ``digest``, encrypt/decrypt ``data``, raw."""

    __slots__ = ("data", "digest", "hash_alg", "key", "padding", "signature", "value")
    family = "rsa"
    FIELDS = ("key", "data", "digest", "signature", "value", "padding", "hash_alg")

    def __init__(
        self,
        alg: str,
        kind: str,
        key: Any,
        *,
        data: Any = None,
        digest: bytes | None = None,
        signature: bytes | None = None,
        value: int | None = None,
        padding: Any = None,
        hash_alg: Any = None,
    ) -> None:
        self.alg = alg
        self.kind = kind
        self.key = key
        self.data = data
        self.digest = digest
        self.signature = signature
        self.value = value
        self.padding = padding
        self.hash_alg = hash_alg


class EcdsaOp(Op):
    """ECDSA with a `cryptography` EC key: sign or verify a ``digest``."""

    __slots__ = ("deterministic", "digest", "hash_alg", "key", "signature")
    family = "ecdsa"
    FIELDS = ("key", "digest", "signature", "hash_alg", "deterministic")

    def __init__(
        self,
        alg: str,
        kind: str,
        key: Any,
        digest: bytes,
        hash_alg: Any,
        *,
        signature: bytes | None = None,
        deterministic: bool | None = None,
    ) -> None:
        self.alg = alg
        self.kind = kind
        self.key = key
        self.digest = digest
        self.hash_alg = hash_alg
        self.signature = signature
        self.deterministic = deterministic


class ExchangeOp(Op):
    """Key agreement: our private ``key`` with the ``peer``'s public key (ECDH, FFDH)."""

    __slots__ = ("key", "peer")
    FIELDS = ("key", "peer")

    def __init__(self, alg: str, kind: str, key: Any, peer: Any) -> None:
        self.alg = alg
        self.kind = kind
        self.key = key
        self.peer = peer


class EcdhOp(ExchangeOp):
    """ECDH on a prime curve."""

    __slots__ = ()
    family = "ecdh"


class DhOp(ExchangeOp):
    """Finite-field DH: ``key`` and ``peer`` are ``blocks.ffdh`` records (p, g, q; x, y)."""

    __slots__ = ()
    family = "dh"


class XdhOp(ExchangeOp):
    """X25519 or X448 with `cryptography` keys."""

    __slots__ = ()
    family = "xdh"


class EddsaOp(Op):
    """Ed25519 or Ed448 with a `cryptography` key: sign ``data`` (the message), or verify."""

    __slots__ = ("data", "key", "signature")
    family = "eddsa"
    FIELDS = ("key", "data", "signature")

    def __init__(
        self, alg: str, kind: str, key: Any, data: Any, *, signature: bytes | None = None
    ) -> None:
        self.alg = alg
        self.kind = kind
        self.key = key
        self.data = data
        self.signature = signature


class DsaOp(Op):
    """DSA with a `cryptography` key: sign or verify a ``digest``."""

    __slots__ = ("digest", "hash_alg", "key", "signature")
    family = "dsa"
    FIELDS = ("key", "digest", "signature", "hash_alg")

    def __init__(
        self,
        alg: str,
        kind: str,
        key: Any,
        digest: bytes,
        hash_alg: Any,
        *,
        signature: bytes | None = None,
    ) -> None:
        self.alg = alg
        self.kind = kind
        self.key = key
        self.digest = digest
        self.hash_alg = hash_alg
        self.signature = signature


class RngOp(Op):
    """``length`` random bytes (seed material for the DRBG)."""

    __slots__ = ("length",)
    family = "rng"
    FIELDS = ("length",)

    def __init__(self, alg: str, kind: str, length: int) -> None:
        self.alg = alg
        self.kind = kind
        self.length = length

    @property
    def size(self) -> int:
        return self.length if isinstance(self.length, int) else 0


class KdfOp(Op):
    """PBKDF2, scrypt, Argon2: derive ``length`` bytes from ``key`` (the password or key
    material), ``salt`` and the cost ``params``; Argon2 also takes ``aad`` and ``secret``.

    Its ``size`` is 0, as for public-key ops: the work is set by ``params``, not by the
    password's length, and counters adding up password lengths would tell something of them.
    """

    __slots__ = ("aad", "key", "length", "params", "salt", "secret")
    family = "kdf"
    FIELDS = ("key", "salt", "length", "params", "aad", "secret")

    def __init__(
        self,
        alg: str,
        kind: str,
        key: Any,
        salt: bytes,
        length: int,
        params: tuple[int, ...],
        aad: bytes | None = None,
        secret: bytes | None = None,
    ) -> None:
        self.alg = alg
        self.kind = kind
        self.key = key
        self.salt = salt
        self.length = length
        self.params = params
        self.aad = aad
        self.secret = secret


class KeywrapOp(Op):
    """AES key wrap (RFC 3394; ``-pad``: RFC 5649): ``key`` wraps or unwraps ``data``.

    ``size`` is the key wrapped: ``data``'s length to wrap, less the 8-byte integrity block to
    unwrap (as an AEAD op's size leaves out its tag).
    """

    __slots__ = ("data", "key")
    family = "keywrap"
    FIELDS = ("key", "data")

    def __init__(self, alg: str, kind: str, key: Any, data: Any) -> None:
        self.alg = alg
        self.kind = kind
        self.key = key
        self.data = data

    @property
    def size(self) -> int:
        n = len(self.data)
        return n if self.kind == "wrap" else max(n - 8, 0)


class MlkemOp(Op):
    """ML-KEM with a `cryptography` key: encapsulate to the public ``key``, or decapsulate the
    ciphertext ``data`` with the private one."""

    __slots__ = ("data", "key")
    family = "mlkem"
    FIELDS = ("key", "data")

    def __init__(self, alg: str, kind: str, key: Any, data: Any = None) -> None:
        self.alg = alg
        self.kind = kind
        self.key = key
        self.data = data


class MldsaOp(Op):
    """ML-DSA with a `cryptography` key: sign or verify ``data`` (the message) under
    ``context``, or ``digest`` (mu, the 64-byte message representative)."""

    __slots__ = ("context", "data", "digest", "key", "signature")
    family = "mldsa"
    FIELDS = ("key", "data", "digest", "context", "signature")

    def __init__(
        self,
        alg: str,
        kind: str,
        key: Any,
        data: Any = None,
        digest: Any = None,
        context: Any = None,
        signature: Any = None,
    ) -> None:
        self.alg = alg
        self.kind = kind
        self.key = key
        self.data = data
        self.digest = digest
        self.context = context
        self.signature = signature


#: The record class of each family.
OP_CLASSES: dict[str, type[Op]] = {
    cls.family: cls
    for cls in (
        *(CipherOp, AeadOp, HashOp, MacOp, RsaOp, EcdsaOp, EcdhOp, DhOp, RngOp),
        *(XdhOp, EddsaOp, DsaOp, KdfOp, KeywrapOp, MlkemOp, MldsaOp),
    )
}


def make(family: str, alg: str, kind: str, **fields: Any) -> Op:
    """An Op of ``family`` built from named fields (tools and tests; primitives call the classes).

    Raises ValueError for a family/kind the contract does not list, a field the family does not
    have, or a required field left out.
    """
    entry = CONTRACT.get((family, kind))
    if entry is None:
        raise ValueError(f"the Op contract has no {family}/{kind}; see ops.CONTRACT")
    cls = OP_CLASSES[family]
    unknown = set(fields) - set(cls.FIELDS)
    if unknown:
        raise ValueError(f"{family} ops have no field {', '.join(sorted(unknown))}")
    missing = [name for name in entry.required if fields.get(name) is None]
    if missing:
        raise ValueError(f"{family}/{kind} needs {', '.join(missing)}")
    return cls(alg, kind, **{name: fields.get(name) for name in cls.FIELDS})


#: Failed checks: an engine's answer whatever the family.
CHECK_FAILURES = (InvalidTag, InvalidSignature, InvalidUnwrap)


def is_answer(op: Op, exc: BaseException) -> bool:
    """Whether ``exc`` from an engine is ``op``'s answer rather than a fault: a failed check, or
    ``NoResult`` where the contract gives a ValueError as that family's result (``Entry.answers``:
    an RSA ciphertext that does not decrypt, an X25519 agreement that comes out all zeros).
    Software would give the same, and asking it again would only take longer: for RSA
    decryption, a timing difference between good and bad padding."""
    if isinstance(exc, CHECK_FAILURES):
        return True
    if not isinstance(exc, NoResult):  # a plain ValueError may be a device's: a fault
        return False
    entry = CONTRACT.get((op.family, op.kind))
    return entry is not None and ValueError in entry.answers
