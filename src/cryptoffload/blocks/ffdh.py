"""Finite-field DH on GMP: group checks, safe-prime generation, keys, agreement, and their DER.

Exponentiations with a secret exponent use ``gmpy2.powmod_sec`` (GMP's ``mpz_powm_sec``, whose
time and memory access do not depend on the exponent's value). Private values follow RFC 7919's
short-exponent sizes (appendix A: 225, 275, 325, 375 and 400 bits for ffdhe2048..8192), with
the top bit set so that every exponent of a group has the same length, and time.
"""

from __future__ import annotations

import functools
import secrets
from dataclasses import dataclass

from cryptoffload.blocks import der
from cryptoffload.blocks._gmp import gmp
from cryptoffload.blocks.ffdhe import group_for_prime

TYPE_CHECKING = False  # gmpy2 is loaded at its first use (blocks._gmp)
if TYPE_CHECKING:
    import gmpy2

#: Smallest and largest moduli taken, as `cryptography` and OpenSSL take them.
MIN_MODULUS_BITS = 512
MAX_MODULUS_BITS = 10000
#: PKCS #3 dhKeyAgreement (p, g) and ANSI X9.42 dhpublicnumber (p, g, q).
OID_DH = "1.2.840.113549.1.3.1"
OID_DHX = "1.2.840.10046.2.1"
#: RFC 7919 appendix A: short-exponent sizes by modulus size (the same figures OpenSSL uses).
_EXPONENT_BITS = ((2048, 225), (3072, 275), (4096, 325), (6144, 375))
_TOP_EXPONENT_BITS = 400
_PRIME_REPS = 25  # GMP: BPSW plus one Miller-Rabin round with a random base


def exponent_bits(p_bits: int) -> int:
    """Random bits in a private value for a modulus of ``p_bits`` (RFC 7919 appendix A)."""
    for limit, bits in _EXPONENT_BITS:
        if p_bits <= limit:
            return bits
    return _TOP_EXPONENT_BITS


@dataclass(frozen=True)
class Params:
    """A group: modulus p, generator g, and the subgroup order q when known."""

    p: int
    g: int
    q: int | None = None

    @property
    def bits(self) -> int:
        return self.p.bit_length()

    @property
    def subgroup_order(self) -> int | None:
        """q as given, or (p - 1) / 2 for an RFC 7919 group (where g = 2 generates it)."""
        if self.q is not None:
            return self.q
        group = group_for_prime(self.p)
        return group.q if group is not None and group.g == self.g else None


@dataclass(frozen=True)
class PublicKey:
    """A public value y in a group."""

    params: Params
    y: int

    @property
    def key_size(self) -> int:
        return self.params.bits


@dataclass(frozen=True, repr=False)
class PrivateKey:
    """A private value x and its public value y; the repr never shows x."""

    params: Params
    x: int
    y: int

    @property
    def key_size(self) -> int:
        return self.params.bits

    def public(self) -> PublicKey:
        return PublicKey(self.params, self.y)

    def __repr__(self) -> str:
        return f"<ffdh.PrivateKey {self.params.bits} bits>"


@functools.lru_cache(maxsize=64)
def _mpz(p: int) -> gmpy2.mpz:
    return gmp().mpz(p)


@functools.lru_cache(maxsize=256)
def parameters_valid(p: int, g: int, q: int | None) -> bool:
    """What OpenSSL's DH_check asks: p prime of 512..10000 bits, 1 < g < p - 1; with q, q prime,
    q | p - 1 and g^q = 1 mod p; without q, p a safe prime. The RFC 7919 groups pass at once."""
    if not MIN_MODULUS_BITS <= p.bit_length() <= MAX_MODULUS_BITS or not p & 1:
        return False
    if not 1 < g < p - 1:
        return False
    known = group_for_prime(p)
    if known is not None and q in (None, known.q) and g == known.g:
        return True
    gmpy2 = gmp()
    if q is not None:
        if not 1 < q < p or p % q != 1 or gmpy2.powmod(g, q, p) != 1:
            return False
        if not gmpy2.is_prime(q, _PRIME_REPS):
            return False
        return bool(gmpy2.is_prime(p, _PRIME_REPS))
    return bool(gmpy2.is_prime(p, _PRIME_REPS) and gmpy2.is_prime(p >> 1, _PRIME_REPS))


def check_parameters(params: Params) -> None:
    """ValueError unless ``params`` pass :func:`parameters_valid`."""
    if not parameters_valid(params.p, params.g, params.q):
        raise ValueError("Invalid DH parameters")


def generate_parameters(generator: int, key_size: int) -> Params:
    """A new safe-prime group of ``key_size`` bits for generator 2 or 5 (as OpenSSL makes them:
    p = 23 mod 24 for g = 2, p = 59 mod 60 for g = 5)."""
    if key_size < MIN_MODULUS_BITS:
        raise ValueError(f"DH key_size must be at least {MIN_MODULUS_BITS} bits")
    if generator not in (2, 5):
        raise ValueError("DH generator must be 2 or 5")
    if key_size > MAX_MODULUS_BITS:
        raise ValueError("Unable to generate DH parameters")
    gmpy2 = gmp()
    step, residue = (24, 23) if generator == 2 else (60, 59)
    small = gmpy2.primorial(2000)
    while True:
        p = secrets.randbits(key_size) | (1 << (key_size - 1)) | (3 << (key_size - 2))
        p += (residue - p) % step
        for _ in range(4096):
            if p.bit_length() != key_size:
                break
            q = p >> 1
            if (
                gmpy2.gcd(q * p, small) == 1
                and gmpy2.is_prime(q, _PRIME_REPS)
                and gmpy2.is_prime(p, _PRIME_REPS)
            ):
                return Params(int(p), generator)
            p += step


def new_private_key(params: Params) -> PrivateKey:
    """A fresh key: x of the RFC 7919 size for p (top bit set), below q when q is that short."""
    bits = exponent_bits(params.bits)
    q = params.subgroup_order
    if params.q is not None and params.q.bit_length() <= bits:
        x = secrets.randbelow(params.q - 1) + 1
    else:
        x = (1 << bits) | secrets.randbits(bits)
        if q is not None and x >= q:  # p too small for the RFC size: stay below q
            x = secrets.randbelow(q - 1) + 1
    y = int(gmp().powmod_sec(params.g, x, _mpz(params.p)))
    return PrivateKey(params, x, y)


def agree(key: PrivateKey, peer_y: int) -> bytes:
    """y_peer^x mod p as big-endian bytes the length of p; ValueError if it is 1 (or 0)."""
    p = _mpz(key.params.p)
    z = gmp().powmod_sec(peer_y, key.x, p)
    if z <= 1:
        raise ValueError("Error computing shared key.")
    return int(z).to_bytes((key.params.bits + 7) // 8, "big")


# -- DER: PKCS #3 / X9.42 parameters, PKCS #8 private keys, SubjectPublicKeyInfo ---------------


def params_der(params: Params) -> tuple[str, bytes]:
    """(PEM label, DER) of the parameters: PKCS #3 without q, X9.42 with it."""
    if params.q is None:
        return "DH PARAMETERS", der.sequence(der.integer(params.p), der.integer(params.g))
    body = der.sequence(der.integer(params.p), der.integer(params.g), der.integer(params.q))
    return "X9.42 DH PARAMETERS", body


def _algorithm(params: Params) -> bytes:
    oid = OID_DH if params.q is None else OID_DHX
    return der.sequence(der.oid(oid), params_der(params)[1])


def private_key_der(key: PrivateKey) -> bytes:
    """PKCS #8 PrivateKeyInfo."""
    return der.sequence(
        der.integer(0), _algorithm(key.params), der.octet_string(der.integer(key.x))
    )


def public_key_der(key: PublicKey) -> bytes:
    """SubjectPublicKeyInfo."""
    return der.sequence(_algorithm(key.params), der.bit_string(der.integer(key.y)))


def read_params(body: bytes, x942: bool) -> Params:
    """Parameters from a SEQUENCE's contents: (p, g[, privateValueLength]) or (p, g[, q, ...])."""
    fields = der.items(body)
    if len(fields) < 2 or any(tag != der.INTEGER for tag, _ in fields[:3]):
        raise der.DerError("DH parameters must be a SEQUENCE of INTEGERs")
    p, g = der.read_integer(fields[0][1]), der.read_integer(fields[1][1])
    q = der.read_integer(fields[2][1]) if x942 and len(fields) > 2 else None
    return Params(p, g, q)


def algorithm_params(algorithm: bytes) -> Params | None:
    """The group of a DH AlgorithmIdentifier's contents, or None if it is not a DH one."""
    fields = der.items(algorithm)
    if not fields or fields[0][0] != der.OID:
        raise der.DerError("AlgorithmIdentifier without an OID")
    oid = der.read_oid(fields[0][1])
    if oid not in (OID_DH, OID_DHX):
        return None
    if len(fields) < 2 or fields[1][0] != der.SEQUENCE:
        raise der.DerError("DH AlgorithmIdentifier without parameters")
    return read_params(fields[1][1], oid == OID_DHX)


def read_private_key(data: bytes, *, v2: bool = False) -> PrivateKey | None:
    """A DH key from PKCS #8 DER, None if the DER holds another kind of key. With ``v2``, RFC
    5958's OneAsymmetricKey v2 too: version 1, and a public key that must match. Version 0 with
    a public key is refused (RFC 5958 asks for version 1 then)."""
    _, body, rest = der.read(data, der.SEQUENCE)
    fields = der.items(body)
    if len(fields) < 3 or fields[1][0] != der.SEQUENCE:
        return None
    params = algorithm_params(fields[1][1])
    if params is None:
        return None
    if rest or fields[0][0] != der.INTEGER:
        raise der.DerError("unsupported PKCS #8 version")
    version = der.read_integer(fields[0][1])
    if version not in ((0, 1) if v2 else (0,)):
        raise der.DerError("unsupported PKCS #8 version")
    if fields[2][0] != der.OCTET_STRING:
        raise der.DerError("PKCS #8 key is not an OCTET STRING")
    _, xbody, _ = der.read(fields[2][1], der.INTEGER)
    x = der.read_integer(xbody)
    public = _one_asymmetric_key_public(fields[3:], version)
    check_parameters(params)
    if not 0 < x < params.p - 1:
        raise ValueError("Invalid DH private value")
    y = int(gmp().powmod_sec(params.g, x, _mpz(params.p)))
    if public is not None and public != y:
        raise der.DerError("the PKCS #8 public key does not match the private key")
    return PrivateKey(params, x, y)


def _one_asymmetric_key_public(extra: list[tuple[int, bytes]], version: int) -> int | None:
    """The public value of a OneAsymmetricKey's optional fields after the private key:
    ``[0]`` attributes, then (version 1 only) ``[1]`` the public key, a BIT STRING holding y."""
    if extra and extra[0][0] == _ATTRIBUTES:
        extra = extra[1:]
    if not extra:
        return None
    if len(extra) > 1 or extra[0][0] != _PUBLIC_KEY or version != 1:
        raise der.DerError("unexpected fields after the PKCS #8 private key")
    bits = extra[0][1]
    if not bits or bits[0] != 0:
        raise der.DerError("PKCS #8 public key is not a whole-byte BIT STRING")
    _, ybody, rest = der.read(bits[1:], der.INTEGER)
    if rest:
        raise der.DerError("PKCS #8 public key has bytes after its INTEGER")
    return der.read_integer(ybody)


#: OneAsymmetricKey's context tags: [0] IMPLICIT attributes (constructed), [1] IMPLICIT public
#: key (a BIT STRING's contents, primitive).
_ATTRIBUTES, _PUBLIC_KEY = 0xA0, 0x81


def read_public_key(data: bytes) -> PublicKey | None:
    """A DH key from SubjectPublicKeyInfo DER, None if the DER holds another kind of key."""
    _, body, _ = der.read(data, der.SEQUENCE)
    fields = der.items(body)
    if len(fields) != 2 or fields[0][0] != der.SEQUENCE:
        return None
    params = algorithm_params(fields[0][1])
    if params is None:
        return None
    if fields[1][0] != der.BIT_STRING or not fields[1][1] or fields[1][1][0] != 0:
        raise der.DerError("SubjectPublicKeyInfo key is not a whole-byte BIT STRING")
    _, ybody, _ = der.read(fields[1][1][1:], der.INTEGER)
    check_parameters(params)
    return PublicKey(params, der.read_integer(ybody))
