"""Public-key protocols on the PKHA, as caampkc and the NXP SDK run them: a plain job descriptor
whose PDB points at the operands (RSA forms 1 and 3, ECDSA, ECDH, DH, key pairs).

Curves always go with explicit domain parameters (q, r, G, a‖b): the built-in curve selector
is refused on QorIQ parts and never needed on i.MX, so no recipe emits it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from cryptoffload.blocks.curves import CURVES, Curve
from cryptoffload.caam import status
from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.recipes.base import Buffers, DriverLike, Prepared, check, execute
from cryptoffload.errors import Unavailable

__all__ = [
    "MAX_ECC_BYTES",
    "ecc_keypair",
    "ecdh",
    "ecdsa_sign",
    "ecdsa_verify",
    "ff_keypair",
    "ffdh",
    "prepare_ecdsa_sign",
    "prepare_ecdsa_verify",
    "prepare_rsa",
    "rsa_private",
    "rsa_private_crt",
    "rsa_public",
]

T = TypeVar("T")

#: ECC fields up to 1024 bits (the model's bound; the public sources give none for ECC). RSA
#: moduli and finite fields take the PKHA's full width (the driver's ``pkha_bits``).
MAX_ECC_BYTES = 128
#: The discrete-log PDBs give N (the order's or private value's length) 7 bits.
MAX_N_BYTES = 127


def _blen(value: int) -> int:
    return (value.bit_length() + 7) // 8


def _be(value: int, length: int) -> bytes:
    return value.to_bytes(length, "big")


def _int(data: bytes) -> int:
    return int.from_bytes(data, "big")


Outs = list[Any]


def _job(
    driver: DriverLike,
    build: Callable[[DescriptorBuilder, Buffers], Callable[[Outs], T]],
) -> Prepared[T]:
    """A plain job: ``build(builder, buffers)`` writes the PDB and the OPERATION, asks for its
    outputs (``bufs.want``) and returns what makes the result of them once the status is 0."""
    b = driver.builder()
    with Buffers(driver) as bufs:
        read = build(b, bufs)
        words = b.words()

    def finish(word: int, outs: Outs) -> T:
        check(word)
        return read(outs)

    return Prepared(words, bufs, finish)


def _fit(driver: DriverLike, what: str, size: int, limit: int | None = None) -> None:
    """Unavailable when the driver's PKHA (``pkha_bits``, 4096 if not said) cannot take
    ``size`` bytes."""
    width = getattr(driver, "pkha_bits", 4096) // 8
    if not width:
        raise Unavailable("unsupported", "the block has no PKHA")
    top = width if limit is None else min(width, limit)
    if size > top:
        raise Unavailable("too-large", f"{what} of {size} bytes (the PKHA takes {top})")


# ---------------------------------------------------------------------- RSA


def prepare_rsa(
    driver: DriverLike,
    value: int,
    *,
    n: int,
    e: int | None = None,
    d: int | None = None,
    crt: tuple[int, int, int, int, int] | None = None,
) -> Prepared[int]:
    """value^e mod n (public), value^d mod n (private form 1) or through the CRT (form 3,
    ``crt`` = (p, q, dp, dq, qinv))."""
    n_len = _blen(n)
    _fit(driver, "an RSA modulus", n_len)

    def build(b: DescriptorBuilder, bufs: Buffers) -> Callable[[Outs], int]:
        out = bufs.room(n_len)
        bufs.want(out, n_len)
        if e is not None:
            e_len = _blen(e)
            b.pdb("rsa-public", e_len=e_len, n_len=n_len, f=bufs.put(_be(value, n_len)), g=out,
                  n=bufs.put(_be(n, n_len)), e=bufs.put(_be(e, e_len)), f_len=n_len)  # fmt: skip
            b.protocol("RSAENC_PUBKEY")
        elif d is not None:
            b.pdb("rsa-private-form1", d_len=_blen(d), n_len=n_len, g=bufs.put(_be(value, n_len)),
                  f=out, n=bufs.put(_be(n, n_len)), d=bufs.put(_be(d, _blen(d))))  # fmt: skip
            b.protocol("RSADEC_PRVKEY", form=1)
        else:
            assert crt is not None
            p, q, dp, dq, qinv = crt
            p_len, q_len = _blen(p), _blen(q)
            b.pdb(
                "rsa-private-form3", n_len=n_len, g=bufs.put(_be(value, n_len)), f=out,
                c=bufs.put(_be(qinv, p_len)), p=bufs.put(_be(p, p_len)), q=bufs.put(_be(q, q_len)),
                dp=bufs.put(_be(dp, p_len)), dq=bufs.put(_be(dq, q_len)), tmp1=bufs.room(p_len),
                tmp2=bufs.room(q_len), q_len=q_len, p_len=p_len,
            )  # fmt: skip
            b.protocol("RSADEC_PRVKEY", form=3)
        return lambda outs: _int(outs[0])

    return _job(driver, build)


def rsa_public(driver: DriverLike, n: int, e: int, value: int) -> int:
    """value^e mod n (0 <= value < n)."""
    return execute(driver, prepare_rsa(driver, value, n=n, e=e))


def rsa_private(driver: DriverLike, n: int, d: int, value: int) -> int:
    """value^d mod n with the private key in form 1 (n, d)."""
    return execute(driver, prepare_rsa(driver, value, n=n, d=d))


def rsa_private_crt(
    driver: DriverLike, p: int, q: int, dp: int, dq: int, qinv: int, value: int
) -> int:
    """value^d mod pq with the private key in CRT form 3 (qinv = q^-1 mod p)."""
    return execute(driver, prepare_rsa(driver, value, n=p * q, crt=(p, q, dp, dq, qinv)))


# ---------------------------------------------------------------------- curves


def _curve(driver: DriverLike, curve: str | Curve) -> Curve:
    c = CURVES[curve] if isinstance(curve, str) else curve
    _fit(driver, "a curve field", c.size, MAX_ECC_BYTES)
    return c


def _domain(c: Curve, bufs: Buffers) -> dict[str, int]:
    """Word 0's lengths and the explicit domain: q (the prime), r (the order), a‖b."""
    size, n_len = c.size, _blen(c.n)
    return dict(
        l_len=size, n_len=n_len, q=bufs.put(_be(c.p, size)), r=bufs.put(_be(c.n, n_len)),
        ab=bufs.put(_be(c.a, size), _be(c.b, size)),
    )  # fmt: skip


def _point(xy: tuple[int, int], size: int) -> bytes:
    return _be(xy[0], size) + _be(xy[1], size)


def _representative(c: Curve, digest: bytes) -> bytes:
    """The digest as ECDSA uses it (its leftmost bitlen(n) bits), in the order's N bytes."""
    value, bits = _int(digest), c.n.bit_length()
    if 8 * len(digest) > bits:
        value >>= 8 * len(digest) - bits
    return _be(value, _blen(c.n))


def prepare_ecdsa_sign(
    driver: DriverLike, curve: str | Curve, private: int, digest: bytes
) -> Prepared[tuple[int, int]]:
    """ECDSA signature (r, s) of ``digest``; the engine draws the nonce from RNG4."""
    c = _curve(driver, curve)
    driver.ensure_rng()

    def build(b: DescriptorBuilder, bufs: Buffers) -> Callable[[Outs], tuple[int, int]]:
        n_len = _blen(c.n)
        out_r, out_s = bufs.room(n_len), bufs.room(n_len)
        bufs.want(out_r, n_len)
        bufs.want(out_s, n_len)
        b.pdb("ecdsa-sign", **_domain(c, bufs), g=bufs.put(_point(c.generator, c.size)),
              s=bufs.put(_be(private, n_len)), f=bufs.put(_representative(c, digest)),
              c=out_r, d=out_s)  # fmt: skip
        b.protocol("DSASIGN", flags=["ECC"])
        return lambda outs: (_int(outs[0]), _int(outs[1]))

    return _job(driver, build)


def prepare_ecdsa_verify(
    driver: DriverLike,
    curve: str | Curve,
    public: tuple[int, int],
    digest: bytes,
    signature: tuple[int, int],
) -> Prepared[bool]:
    """Whether (r, s) signs ``digest`` under ``public``: False for DECO 0x86 (invalid)."""
    c = _curve(driver, curve)
    r, s = signature
    n_len = _blen(c.n)
    if not (0 < r < 1 << 8 * n_len and 0 < s < 1 << 8 * n_len):
        r = s = 0  # the engine says invalid for anything outside [1, n-1]
    b = driver.builder()
    with Buffers(driver) as bufs:
        sig = bufs.put(_be(r, n_len), _be(s, n_len))
        b.pdb("ecdsa-verify", **_domain(c, bufs), g=bufs.put(_point(c.generator, c.size)),
              w=bufs.put(_point(public, c.size)), f=bufs.put(_representative(c, digest)),
              c=sig, d=sig + n_len, tmp=bufs.room(2 * c.size))  # fmt: skip
        b.protocol("DSAVERIFY", flags=["ECC"])
        words = b.words()

    def finish(word: int, outs: Outs) -> bool:
        if word >> 28 == status.SRC_DECO and word & 0xFF == status.DECO_INVSIGN:
            return False
        check(word)
        return True

    return Prepared(words, bufs, finish)


def ecdsa_sign(
    driver: DriverLike, curve: str | Curve, private: int, digest: bytes
) -> tuple[int, int]:
    """ECDSA signature (r, s) of ``digest`` (the hash of the message) with ``private``."""
    return execute(driver, prepare_ecdsa_sign(driver, curve, private, digest))


def ecdsa_verify(
    driver: DriverLike,
    curve: str | Curve,
    public: tuple[int, int],
    digest: bytes,
    signature: tuple[int, int],
) -> bool:
    """Whether ``signature`` (r, s) holds for ``digest`` under the point ``public``."""
    return execute(driver, prepare_ecdsa_verify(driver, curve, public, digest, signature))


def ecdh(driver: DriverLike, curve: str | Curve, private: int, peer: tuple[int, int]) -> bytes:
    """The x coordinate of private * peer, in the field's L bytes."""
    c = _curve(driver, curve)

    def build(b: DescriptorBuilder, bufs: Buffers) -> Callable[[Outs], bytes]:
        out = bufs.room(c.size)
        bufs.want(out, c.size)
        b.pdb("ecdh", **_domain(c, bufs), w=bufs.put(_point(peer, c.size)),
              s=bufs.put(_be(private, _blen(c.n))), z=out)  # fmt: skip
        b.protocol("DH", flags=["ECC"])
        return lambda outs: outs[0]

    return execute(driver, _job(driver, build))


def ecc_keypair(driver: DriverLike, curve: str | Curve) -> tuple[int, tuple[int, int]]:
    """A new key pair drawn by the engine: (private s, public point W = sG)."""
    c = _curve(driver, curve)
    driver.ensure_rng()

    def build(b: DescriptorBuilder, bufs: Buffers) -> Callable[[Outs], tuple[int, tuple[int, int]]]:
        n_len, size = _blen(c.n), c.size
        out_s, out_w = bufs.room(n_len), bufs.room(2 * size)
        bufs.want(out_s, n_len)
        bufs.want(out_w, 2 * size)
        b.pdb("ecc-keypair", **_domain(c, bufs), g=bufs.put(_point(c.generator, size)),
              s=out_s, w=out_w)  # fmt: skip
        b.protocol("PUBLICKEYPAIR", flags=["ECC"])

        def read(outs: Outs) -> tuple[int, tuple[int, int]]:
            s, w = outs
            return _int(s), (_int(w[:size]), _int(w[size:]))

        return read

    return execute(driver, _job(driver, build))


# ---------------------------------------------------------------------- finite fields


def _field(driver: DriverLike, p: int) -> int:
    size = _blen(p)
    _fit(driver, "a prime field", size)
    return size


def ffdh(driver: DriverLike, p: int, private: int, peer: int) -> bytes:
    """peer^private mod p, as long as p: the DH protocol when the private value fits its PDB's
    7-bit length (127 bytes), else the PKHA's modular exponentiation (equal time)."""
    size, s_len = _field(driver, p), max(1, _blen(private))

    def protocol(b: DescriptorBuilder, bufs: Buffers) -> Callable[[Outs], bytes]:
        out = bufs.room(size)
        bufs.want(out, size)
        b.pdb("ff-dh", l_len=size, n_len=s_len, q=bufs.put(_be(p, size)), r=bufs.room(s_len),
              w=bufs.put(_be(peer, size)), s=bufs.put(_be(private, s_len)), z=out)  # fmt: skip
        b.protocol("DH")
        return lambda outs: outs[0]

    def modexp(b: DescriptorBuilder, bufs: Buffers) -> Callable[[Outs], bytes]:
        out = bufs.room(size)
        bufs.want(out, size)
        b.key(1, dest="pkha-e", pointer=bufs.put(_be(private, s_len)), length=s_len)
        b.fifo_load(1, "PK_A", pointer=bufs.put(_be(peer, size)), length=size)
        b.fifo_load(1, "PK_N", pointer=bufs.put(_be(p, size)), length=size)
        b.pkha("MOD_EXPO", flags=["TIME_EQ"])
        b.fifo_store(1, "PKHA_B", pointer=out, length=size)
        return lambda outs: outs[0]

    return execute(driver, _job(driver, protocol if s_len <= MAX_N_BYTES else modexp))


def ff_keypair(driver: DriverLike, p: int, g: int, bound: int) -> tuple[int, int]:
    """A new finite-field key pair drawn by the engine: (s in [1, bound-1], g^s mod p).

    ``bound`` takes the place of the group order r in the PDB: odd (the PKHA works modulo it in
    Montgomery form) and at most 127 bytes (the PDB's N).
    """
    if bound < 3 or bound % 2 == 0:
        raise ValueError(f"bound must be odd and above 2, got {bound}")
    size, s_len = _field(driver, p), _blen(bound)
    if s_len > MAX_N_BYTES:
        raise Unavailable("too-large", f"a bound of {s_len} bytes (the PDB takes 127)")
    driver.ensure_rng()

    def build(b: DescriptorBuilder, bufs: Buffers) -> Callable[[Outs], tuple[int, int]]:
        out_s, out_w = bufs.room(s_len), bufs.room(size)
        bufs.want(out_s, s_len)
        bufs.want(out_w, size)
        pointers = [bufs.put(_be(p, size)), bufs.put(_be(bound, s_len)), bufs.put(_be(g, size)),
                    out_s, out_w]  # fmt: skip
        words = []
        for phys in pointers:
            words += [phys >> 32, phys & 0xFFFF_FFFF] if driver.pointer_size == 8 else [phys]
        b.pdb_words(size << 7 | s_len, *words)  # q, r, g, s, w: no builder layout names it
        b.protocol("PUBLICKEYPAIR")
        return lambda outs: (_int(outs[0]), _int(outs[1]))

    return execute(driver, _job(driver, build))
