"""CAAM public-key protocols (RSA, ECDSA, ECDH, DH, key pair) run through their PDBs on DMA memory.

Layouts follow the brief (section 2) and the Linux / NXP SDK PDB structures. Where the public
sources do not say what the hardware does, the model makes a documented choice (see
:func:`run_protocol`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import gmpy2

from cryptoffload.blocks import curves
from cryptoffload.caam import status
from cryptoffload.caam.model.memory import DmaError, DmaMemory

# Protocol ids, bits 23:16 of the OPERATION word.
PROTID_PUBLICKEYPAIR = 0x14
PROTID_DSASIGN = 0x15
PROTID_DSAVERIFY = 0x16
PROTID_DH = 0x17
PROTID_RSAENC = 0x18
PROTID_RSADEC = 0x19

# Protocol info bits (low 16 bits).
PKPROT_F2M = 0x1
PKPROT_ECC = 0x2
PKPROT_DECRYPT = 0x4
PKPROT_TEST = 0x8
PREHASHED = 0x800
RSA_FORM_MASK = 0x3

# PDB word 0 of the discrete-log protocols.
PDB_SGF_MASK = 0xFF000000
PDB_PD = 1 << 22
PDB_L_SHIFT = 7
PDB_L_MASK = 0x3FF
PDB_N_MASK = 0x7F
PDB_ECDSEL_MASK = 0x7F

#: Largest field the model accepts: ECC up to 1024-bit primes, finite fields up to 4096 bits
#: (the PKHA's operand size), RSA moduli up to 4096 bits.
MAX_ECC_L = 128
MAX_FF_L = 512
MAX_RSA_N = 512

#: ECDSA sign draws a fresh nonce when r or s comes out zero, at most this many times.
SIGN_ATTEMPTS = 8


@dataclass(frozen=True)
class ProtocolContext:
    """What a protocol needs from the job running it: memory, pointer size, part quirks, RNG."""

    memory: DmaMemory
    pointer_words: int
    byteorder: str
    builtin_curves: bool
    allow_prehashed_flag: bool
    rng: Callable[[int], bytes] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Domain:
    """Prime-field curve y^2 = x^3 + ax + b mod p, base point G of order n; L, N in bytes."""

    p: int
    a: int
    b: int
    gx: int
    gy: int
    n: int
    L: int  # field (prime) length in bytes, the brief's L
    N: int  # order length in bytes, the brief's N


#: Built-in curves by ECDSEL (NXP's table; i.MX parts only).
BUILTIN_CURVES: dict[int, str] = {
    0x00: "p192",
    0x01: "p224",
    0x02: "p256",
    0x03: "p384",
    0x04: "p521",
    0x0B: "brainpoolp256r1",
    0x0F: "brainpoolp384r1",
    0x11: "brainpoolp512r1",
    0x20: "secp256k1",
}


def builtin_domain(ecdsel: int) -> Domain | None:
    """The built-in curve the selector names, or None when the model does not carry it."""
    name = BUILTIN_CURVES.get(ecdsel)
    if name is None:
        return None
    c = curves.CURVES[name]
    return Domain(c.p, c.a, c.b, c.gx, c.gy, c.n, c.size, (c.n.bit_length() + 7) // 8)


class _Fail(Exception):
    """Ends a protocol early with a status word."""

    def __init__(self, word: int) -> None:
        super().__init__(f"status 0x{word:08x}")
        self.word = word


# --------------------------------------------------------------------------- EC arithmetic
# Jacobian coordinates (X, Y, Z) for x = X/Z^2, y = Y/Z^3; Z == 0 is the point at infinity.

_Jac = tuple[int, int, int]


def _jdouble(pt: _Jac, p: int, a: int) -> _Jac:
    x1, y1, z1 = pt
    if z1 == 0 or y1 == 0:
        return (1, 1, 0)
    xx = x1 * x1 % p
    yy = y1 * y1 % p
    yyyy = yy * yy % p
    zz = z1 * z1 % p
    s = 4 * x1 * yy % p
    m = (3 * xx + a * zz * zz) % p
    x3 = (m * m - 2 * s) % p
    y3 = (m * (s - x3) - 8 * yyyy) % p
    z3 = 2 * y1 * z1 % p
    return (x3, y3, z3)


def _jadd(p1: _Jac, p2: _Jac, p: int, a: int) -> _Jac:
    x1, y1, z1 = p1
    x2, y2, z2 = p2
    if z1 == 0:
        return p2
    if z2 == 0:
        return p1
    z1z1 = z1 * z1 % p
    z2z2 = z2 * z2 % p
    u1 = x1 * z2z2 % p
    u2 = x2 * z1z1 % p
    s1 = y1 * z2 * z2z2 % p
    s2 = y2 * z1 * z1z1 % p
    if u1 == u2:
        if s1 == s2:
            return _jdouble(p1, p, a)
        return (1, 1, 0)
    h = (u2 - u1) % p
    r = (s2 - s1) % p
    hh = h * h % p
    hhh = h * hh % p
    v = u1 * hh % p
    x3 = (r * r - hhh - 2 * v) % p
    y3 = (r * (v - x3) - s1 * hhh) % p
    z3 = z1 * z2 * h % p
    return (x3, y3, z3)


def _affine(pt: _Jac, p: int) -> tuple[int, int] | None:
    x, y, z = pt
    if z == 0:
        return None
    zi = int(gmpy2.invert(z, p))
    zi2 = zi * zi % p
    return (int(x * zi2 % p), int(y * zi2 * zi % p))


def ec_mul(k: int, point: tuple[int, int], dom: Domain) -> tuple[int, int] | None:
    """k * point on the domain's curve (affine in and out; None is the point at infinity)."""
    p, a = gmpy2.mpz(dom.p), gmpy2.mpz(dom.a)
    base: _Jac = (gmpy2.mpz(point[0]), gmpy2.mpz(point[1]), gmpy2.mpz(1))
    acc: _Jac = (gmpy2.mpz(1), gmpy2.mpz(1), gmpy2.mpz(0))
    for bit in bin(k)[2:] if k > 0 else "":
        acc = _jdouble(acc, p, a)
        if bit == "1":
            acc = _jadd(acc, base, p, a)
    return _affine(acc, p)


def ec_add(
    p1: tuple[int, int] | None, p2: tuple[int, int] | None, dom: Domain
) -> tuple[int, int] | None:
    """p1 + p2 on the domain's curve (affine; None is the point at infinity)."""
    if p1 is None:
        return p2
    if p2 is None:
        return p1
    p, a = gmpy2.mpz(dom.p), gmpy2.mpz(dom.a)
    j1 = (gmpy2.mpz(p1[0]), gmpy2.mpz(p1[1]), gmpy2.mpz(1))
    j2 = (gmpy2.mpz(p2[0]), gmpy2.mpz(p2[1]), gmpy2.mpz(1))
    return _affine(_jadd(j1, j2, p, a), p)


def on_curve(x: int, y: int, dom: Domain) -> bool:
    """True when 0 <= x, y < p and (x, y) satisfies the curve equation."""
    p = dom.p
    return 0 <= x < p and 0 <= y < p and (y * y - x * x * x - dom.a * x - dom.b) % p == 0


# --------------------------------------------------------------------------- PDB and memory


def _pdb_error(index: int) -> _Fail:
    return _Fail(status.deco(status.DECO_PDBERR, index))


def _pk_error(err: int, index: int) -> _Fail:
    return _Fail(status.ccb(status.CHA_PK, err, index))


class _Reader:
    """Walks the PDB words: plain words and pointers of ``pointer_words`` words."""

    def __init__(self, words: Sequence[int], ctx: ProtocolContext, index: int) -> None:
        self._words = list(words)
        self._pos = 0
        self._ptr = ctx.pointer_words
        self._index = index

    def word(self) -> int:
        if self._pos >= len(self._words):
            raise _pdb_error(self._index)
        value = self._words[self._pos] & 0xFFFFFFFF
        self._pos += 1
        return value

    def pointer(self) -> int:
        value = 0
        for _ in range(self._ptr):
            value = (value << 32) | self.word()
        return value


class _Job:
    """One protocol run: the context, the descriptor index and the PDB reader."""

    def __init__(self, pdb: Sequence[int], ctx: ProtocolContext, index: int) -> None:
        if ctx.pointer_words not in (1, 2):
            raise ValueError(f"pointer_words must be 1 or 2, got {ctx.pointer_words}")
        self.ctx = ctx
        self.index = index
        self.pdb = _Reader(pdb, ctx, index)

    def read(self, addr: int, length: int) -> bytes:
        return self.ctx.memory.read(addr, length)

    def read_int(self, addr: int, length: int) -> int:
        return int.from_bytes(self.read(addr, length), "big")

    def write_int(self, addr: int, value: int, length: int) -> None:
        self.ctx.memory.write(addr, int(value).to_bytes(length, "big"))

    def random_below(self, bound: int, nbytes: int) -> int:
        """A value in [1, bound - 1] from the RNG, with 64 extra bits against bias."""
        rng = self.ctx.rng
        if rng is None:
            raise _Fail(status.ccb(status.CHA_RNG, status.ERR_RNG_NOT_INSTANTIATED, self.index))
        raw = rng(nbytes + 8)
        return int.from_bytes(raw, "big") % (bound - 1) + 1

    def pdb_error(self) -> _Fail:
        return _pdb_error(self.index)

    def pk_error(self, err: int) -> _Fail:
        return _pk_error(err, self.index)

    def check_modulus(self, m: int) -> None:
        """PKHA rules for a modulus: zero divides by zero, an even one breaks Montgomery form."""
        if m == 0:
            raise self.pk_error(status.ERR_PKDIVZRO)
        if m % 2 == 0:
            raise self.pk_error(status.ERR_PKMODEVN)


# --------------------------------------------------------------------------- RSA


def _rsa_lengths(job: _Job, word0: int) -> tuple[int, int]:
    """(high 12-bit field, n_len) of an RSA PDB word 0; scatter/gather flags are refused."""
    if word0 & 0xFF000000:
        raise job.pdb_error()
    n_len = word0 & 0xFFF
    other = (word0 >> 12) & 0xFFF
    if n_len == 0 or n_len > MAX_RSA_N:
        raise job.pdb_error()
    return other, n_len


def _rsa_encrypt(job: _Job) -> None:
    e_len, n_len = _rsa_lengths(job, job.pdb.word())
    f_ptr, g_ptr, n_ptr, e_ptr = (job.pdb.pointer() for _ in range(4))
    f_len = job.pdb.word()
    if e_len == 0 or e_len > n_len or f_len == 0 or f_len > n_len:
        raise job.pdb_error()
    _rsa_expo(job, f_ptr, f_len, n_ptr, n_len, e_ptr, e_len, g_ptr)


def _rsa_expo(
    job: _Job, x_ptr: int, x_len: int, n_ptr: int, n_len: int, e_ptr: int, e_len: int, out: int
) -> None:
    """x^e mod n into ``out`` (n_len bytes): RSA encrypt, and decrypt with a form 1 key."""
    x = job.read_int(x_ptr, x_len)
    n = job.read_int(n_ptr, n_len)
    e = job.read_int(e_ptr, e_len)
    job.check_modulus(n)
    if x >= n:
        raise job.pk_error(status.ERR_PKAMEMSZ)
    job.write_int(out, gmpy2.powmod(x, e, n), n_len)


def _rsa_decrypt(job: _Job, form: int) -> None:
    word0 = job.pdb.word()
    if form == 0:
        d_len, n_len = _rsa_lengths(job, word0)
        g_ptr, f_ptr, n_ptr, d_ptr = (job.pdb.pointer() for _ in range(4))
        if d_len == 0 or d_len > n_len:
            raise job.pdb_error()
        _rsa_expo(job, g_ptr, n_len, n_ptr, n_len, d_ptr, d_len, f_ptr)
        return

    if form == 1:
        d_len, n_len = _rsa_lengths(job, word0)
        g_ptr, f_ptr, d_ptr, p_ptr, q_ptr, t1_ptr, t2_ptr = (job.pdb.pointer() for _ in range(7))
        if d_len == 0 or d_len > n_len:
            raise job.pdb_error()
    else:
        zero, n_len = _rsa_lengths(job, word0)
        if zero:
            raise job.pdb_error()
        ptrs = [job.pdb.pointer() for _ in range(9)]
        g_ptr, f_ptr, c_ptr, p_ptr, q_ptr, dp_ptr, dq_ptr, t1_ptr, t2_ptr = ptrs
    pq = job.pdb.word()
    if pq & 0xFF000000:
        raise job.pdb_error()
    p_len, q_len = pq & 0xFFF, (pq >> 12) & 0xFFF
    if p_len == 0 or q_len == 0 or p_len > n_len or q_len > n_len:
        raise job.pdb_error()

    g = job.read_int(g_ptr, n_len)
    p = job.read_int(p_ptr, p_len)
    q = job.read_int(q_ptr, q_len)
    if form == 1:
        d = job.read_int(d_ptr, d_len)
    else:
        c = job.read_int(c_ptr, p_len)
        dp = job.read_int(dp_ptr, p_len)
        dq = job.read_int(dq_ptr, q_len)
    # The work buffers must be reachable; what the hardware leaves in them is not modelled.
    job.read(t1_ptr, p_len)
    job.read(t2_ptr, q_len)

    job.check_modulus(p)
    job.check_modulus(q)
    n = p * q
    if n.bit_length() > 8 * n_len:
        raise job.pdb_error()
    if g >= n:
        raise job.pk_error(status.ERR_PKAMEMSZ)
    if form == 1:
        f = gmpy2.powmod(g, d, n)
    else:
        m1 = gmpy2.powmod(g % p, dp, p)
        m2 = gmpy2.powmod(g % q, dq, q)
        h = c * (m1 - m2) % p
        f = m2 + h * q
    job.write_int(f_ptr, f, n_len)


# --------------------------------------------------------------------------- discrete log


def _dl_word0(job: _Job, word0: int, *, ecc: bool) -> tuple[int, int, Domain | None]:
    """(L, N, built-in domain or None) from a discrete-log PDB word 0."""
    if word0 & PDB_SGF_MASK:
        raise job.pdb_error()
    if word0 & PDB_PD:
        if not ecc or not job.ctx.builtin_curves:
            raise job.pdb_error()
        if word0 & ~(PDB_PD | (PDB_ECDSEL_MASK << PDB_L_SHIFT) | PDB_N_MASK):
            raise job.pdb_error()
        dom = builtin_domain((word0 >> PDB_L_SHIFT) & PDB_ECDSEL_MASK)
        if dom is None:
            raise job.pdb_error()
        return dom.L, dom.N, dom
    if word0 & 0x00FE0000:
        raise job.pdb_error()
    big_l = (word0 >> PDB_L_SHIFT) & PDB_L_MASK
    big_n = word0 & PDB_N_MASK
    if big_l == 0 or big_n == 0:
        raise job.pdb_error()
    if ecc and (big_l > MAX_ECC_L or big_n > big_l + 1):
        raise job.pdb_error()
    if not ecc and (big_l > MAX_FF_L or big_n > big_l):
        raise job.pdb_error()
    return big_l, big_n, None


def _check_prime_field(job: _Job, p: int) -> None:
    job.check_modulus(p)
    if p < 5:
        raise job.pdb_error()


def _check_order(job: _Job, n: int) -> None:
    job.check_modulus(n)
    if n < 3:
        raise job.pdb_error()


def _domain(
    job: _Job, q_ptr: int, r_ptr: int, g_ptr: int, ab_ptr: int, big_l: int, big_n: int
) -> Domain:
    """Read and check explicit curve parameters."""
    p = job.read_int(q_ptr, big_l)
    n = job.read_int(r_ptr, big_n)
    g = job.read(g_ptr, 2 * big_l)
    ab = job.read(ab_ptr, 2 * big_l)
    _check_prime_field(job, p)
    _check_order(job, n)
    a = int.from_bytes(ab[:big_l], "big")
    b = int.from_bytes(ab[big_l:], "big")
    gx = int.from_bytes(g[:big_l], "big")
    gy = int.from_bytes(g[big_l:], "big")
    if a >= p or b >= p:
        raise job.pdb_error()
    dom = Domain(p, a, b, gx, gy, n, big_l, big_n)
    if not on_curve(gx, gy, dom):
        raise job.pdb_error()
    return dom


def _point(job: _Job, data: bytes, dom: Domain) -> tuple[int, int]:
    x = int.from_bytes(data[: dom.L], "big")
    y = int.from_bytes(data[dom.L :], "big")
    if not on_curve(x, y, dom):
        raise job.pdb_error()
    return (x, y)


def _ecdsa_sign(job: _Job) -> None:
    big_l, big_n, dom = _dl_word0(job, job.pdb.word(), ecc=True)
    if dom is None:
        q_ptr, r_ptr, g_ptr, s_ptr, f_ptr, c_ptr, d_ptr, ab_ptr = (
            job.pdb.pointer() for _ in range(8)
        )
    else:
        s_ptr, f_ptr, c_ptr, d_ptr = (job.pdb.pointer() for _ in range(4))
    s = job.read_int(s_ptr, big_n)
    f = job.read_int(f_ptr, big_n)
    if dom is None:
        dom = _domain(job, q_ptr, r_ptr, g_ptr, ab_ptr, big_l, big_n)
    n = dom.n
    if not 0 < s < n:
        raise job.pdb_error()
    e = f % n
    for _ in range(SIGN_ATTEMPTS):
        k = job.random_below(n, big_n)
        kg = ec_mul(k, (dom.gx, dom.gy), dom)
        if kg is None:
            continue
        c = kg[0] % n
        if c == 0:
            continue
        d = int(gmpy2.invert(k, n)) * (e + s * c) % n
        if d == 0:
            continue
        job.write_int(c_ptr, c, big_n)
        job.write_int(d_ptr, d, big_n)
        return
    raise _Fail(status.deco(status.DECO_DSASIGN, job.index))


def _ecdsa_verify(job: _Job) -> None:
    big_l, big_n, dom = _dl_word0(job, job.pdb.word(), ecc=True)
    if dom is None:
        ptrs = [job.pdb.pointer() for _ in range(9)]
        q_ptr, r_ptr, g_ptr, w_ptr, f_ptr, c_ptr, d_ptr, tmp_ptr, ab_ptr = ptrs
    else:
        w_ptr, f_ptr, c_ptr, d_ptr, tmp_ptr = (job.pdb.pointer() for _ in range(5))
    w = job.read(w_ptr, 2 * big_l)
    f = job.read_int(f_ptr, big_n)
    c = job.read_int(c_ptr, big_n)
    d = job.read_int(d_ptr, big_n)
    job.read(tmp_ptr, 2 * big_l)  # work buffer: must be reachable; its contents are not modelled
    if dom is None:
        dom = _domain(job, q_ptr, r_ptr, g_ptr, ab_ptr, big_l, big_n)
    pub = _point(job, w, dom)
    n = dom.n
    invalid = _Fail(status.deco(status.DECO_INVSIGN, job.index))
    if not (0 < c < n and 0 < d < n):
        raise invalid
    di = int(gmpy2.invert(d, n))
    u1 = (f % n) * di % n
    u2 = c * di % n
    x = ec_add(ec_mul(u1, (dom.gx, dom.gy), dom), ec_mul(u2, pub, dom), dom)
    if x is None or x[0] % n != c:
        raise invalid


def _ecdh(job: _Job) -> None:
    big_l, big_n, dom = _dl_word0(job, job.pdb.word(), ecc=True)
    if dom is None:
        q_ptr, _r_ptr, w_ptr, s_ptr, z_ptr, ab_ptr = (job.pdb.pointer() for _ in range(6))
    else:
        w_ptr, s_ptr, z_ptr = (job.pdb.pointer() for _ in range(3))
    w = job.read(w_ptr, 2 * big_l)
    s = job.read_int(s_ptr, big_n)
    if dom is None:
        # r is not used by (EC)DH: the NXP SDK passes a null pointer for it.
        p = job.read_int(q_ptr, big_l)
        ab = job.read(ab_ptr, 2 * big_l)
        _check_prime_field(job, p)
        a = int.from_bytes(ab[:big_l], "big")
        b = int.from_bytes(ab[big_l:], "big")
        if a >= p or b >= p:
            raise job.pdb_error()
        dom = Domain(p, a, b, 0, 0, 0, big_l, big_n)
    peer = _point(job, w, dom)
    if s == 0:
        raise job.pdb_error()
    shared = ec_mul(s, peer, dom)
    if shared is None:
        raise job.pdb_error()
    job.write_int(z_ptr, shared[0], big_l)


def _ffdh(job: _Job) -> None:
    big_l, big_n, _ = _dl_word0(job, job.pdb.word(), ecc=False)
    q_ptr, _r_ptr, w_ptr, s_ptr, z_ptr = (job.pdb.pointer() for _ in range(5))
    p = job.read_int(q_ptr, big_l)
    w = job.read_int(w_ptr, big_l)
    s = job.read_int(s_ptr, big_n)
    _check_prime_field(job, p)
    if not 1 < w < p - 1 or s == 0:
        raise job.pdb_error()
    job.write_int(z_ptr, gmpy2.powmod(w, s, p), big_l)


def _keypair(job: _Job, ecc: bool) -> None:
    big_l, big_n, dom = _dl_word0(job, job.pdb.word(), ecc=ecc)
    if not ecc:
        q_ptr, r_ptr, g_ptr, s_ptr, w_ptr = (job.pdb.pointer() for _ in range(5))
        p = job.read_int(q_ptr, big_l)
        n = job.read_int(r_ptr, big_n)
        g = job.read_int(g_ptr, big_l)
        _check_prime_field(job, p)
        _check_order(job, n)
        if not 1 < g < p - 1:
            raise job.pdb_error()
        s = job.random_below(n, big_n)
        job.write_int(s_ptr, s, big_n)
        job.write_int(w_ptr, gmpy2.powmod(g, s, p), big_l)
        return
    if dom is None:
        q_ptr, r_ptr, g_ptr, s_ptr, w_ptr, ab_ptr = (job.pdb.pointer() for _ in range(6))
        dom = _domain(job, q_ptr, r_ptr, g_ptr, ab_ptr, big_l, big_n)
    else:
        s_ptr, w_ptr = (job.pdb.pointer() for _ in range(2))
    s = job.random_below(dom.n, big_n)
    pub = ec_mul(s, (dom.gx, dom.gy), dom)
    if pub is None:  # only when the order given is not G's order
        raise job.pdb_error()
    job.write_int(s_ptr, s, big_n)
    job.write_int(w_ptr, (pub[0] << (8 * big_l)) | pub[1], 2 * big_l)


# --------------------------------------------------------------------------- dispatch


def _dispatch(op_word: int, ctx: ProtocolContext) -> Callable[[_Job], None] | None:
    """The handler an OPERATION word selects, or None when the protocol is not defined."""
    if (op_word >> 24) & 0xFF != 0x80:  # OPERATION command, type UNI_PROTOCOL
        return None
    protid = (op_word >> 16) & 0xFF
    info = op_word & 0xFFFF
    if protid == PROTID_RSAENC:
        return _rsa_encrypt if info == 0 else None
    if protid == PROTID_RSADEC:
        form = info & RSA_FORM_MASK
        if info & ~RSA_FORM_MASK or form == 3:
            return None
        return lambda job: _rsa_decrypt(job, form)
    if protid not in (PROTID_PUBLICKEYPAIR, PROTID_DSASIGN, PROTID_DSAVERIFY, PROTID_DH):
        return None
    allowed = PKPROT_ECC
    if protid in (PROTID_DSASIGN, PROTID_DSAVERIFY) and ctx.allow_prehashed_flag:
        allowed |= PREHASHED
    if info & ~allowed:
        return None
    ecc = bool(info & PKPROT_ECC)
    if protid == PROTID_DH:
        return _ecdh if ecc else _ffdh
    if protid == PROTID_PUBLICKEYPAIR:
        return lambda job: _keypair(job, ecc)
    if not ecc:  # finite-field DSA is not modelled
        return None
    return _ecdsa_sign if protid == PROTID_DSASIGN else _ecdsa_verify


def run_protocol(op_word: int, pdb: Sequence[int], ctx: ProtocolContext, *, index: int) -> int:
    """Run the protocol OPERATION ``op_word`` with PDB words ``pdb``; returns the status word.

    ``pdb`` is the words between the header and the start index (word 0 first); pointers in it
    are ``ctx.pointer_words`` words, most significant first. Inputs are read from and outputs
    written to ``ctx.memory``. Big integers in memory are big-endian, fixed width: RSA outputs
    n_len bytes, ECDSA c and d N bytes, (EC)DH z L bytes, key pair s N bytes and w 2L (x || y).

    Protocols: RSA encrypt 0x80180000; RSA decrypt 0x80190000 | form (0 = form 1 n/d,
    1 = form 2 d/p/q, 2 = form 3 CRT); ECDSA sign 0x80150002 and verify 0x80160002; ECDH
    0x80170002; finite-field DH 0x80170000; key pair 0x80140002 (ECC) and 0x80140000 (finite
    field: q, r, g, s, w). Explicit domains use word 0 = L << 7 | N; built-in curves
    (word 0 = PD | ECDSEL << 7, only when ``ctx.builtin_curves``) drop the q, r, G and a||b
    pointers: sign s, f, c, d; verify w, f, c, d, tmp; ECDH w, s, z; key pair s, w (the
    layouts of NXP's i.MX ECDSA driver; the ECDH one is the explicit layout without q, r, ab).

    Statuses, and the model's choices where the public sources are silent:
    - DECO 0x81 (undefined protocol): not an UNI_PROTOCOL OPERATION, an unknown protocol id,
      the reserved RSA decrypt form value 3, protocol-info bits the model does not carry
      (binary fields F2M, black keys, test mode, RSA formatting, finite-field DSA), and the
      "already hashed" flag 0x800 unless ``ctx.allow_prehashed_flag`` (then it is accepted on
      sign and verify, and f is the message representative either way).
    - DECO 0x82 (PDB error): a PDB too short for its layout; scatter/gather flags (not
      modelled); reserved word-0 bits; zero lengths; L > 128 for ECC or > 512 for finite fields,
      N > L + 1 (ECC) or N > L (finite field), RSA n_len > 512, e_len/d_len/f_len > n_len;
      PD/ECDSEL when ``ctx.builtin_curves`` is False (the QorIQ quirk) or an unknown ECDSEL;
      a, b or a point coordinate >= q; G, W or the peer point off the curve; a private key s
      of 0 or >= r (sign); a DH peer value outside (1, q - 1); a shared point at infinity;
      p * q wider than n_len (RSA form 2/3).
    - CCB PK errors, as the PKHA would report them: a zero modulus (n, p, q, r or the field
      prime) PKDIVZRO 0x87, an even one PKMODEVN 0x88; an RSA input >= n PKAMEMSZ 0x84. The
      model checks r and q for oddness only: when an inverse modulo a composite one does not
      exist (a point's Z, a nonce, a signature half), PKDIVZRO 0x87 as well.
    - CCB RNG 0x54 when sign or key pair needs a random value and ``ctx.rng`` is None.
    - DECO 0x86 when a signature does not verify (including c or d outside [1, r - 1]);
      DECO 0x87 if sign draws a zero c or d SIGN_ATTEMPTS times.
    - DECO 0x16 (DMA) when any read or write falls outside allocated memory. Work buffers
      (RSA tmp1/tmp2, verify tmp) are checked for reach but their contents are not modelled.
    """
    handler = _dispatch(op_word, ctx)
    if handler is None:
        return status.deco(status.DECO_UNDEFPCL, index)
    try:
        handler(_Job(pdb, ctx, index))
    except _Fail as fail:
        return fail.word
    except DmaError:
        return status.deco(status.DECO_DMA, index)
    except ZeroDivisionError:  # no inverse mod a composite r or q the PDB passed off as prime
        return status.ccb(status.CHA_PK, status.ERR_PKDIVZRO, index)
    return status.OK
