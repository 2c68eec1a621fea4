"""The CAAM model's PKHA and public-key protocols, checked against `cryptography` and CAVP."""

from __future__ import annotations

import hashlib
import random

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import (
    Prehashed,
    decode_dss_signature,
    encode_dss_signature,
)
from vectors.loaders import ecdsa_sigver_vectors

from cryptoffload import dh
from cryptoffload.blocks.curves import CURVES, Curve
from cryptoffload.blocks.ffdhe import FFDHE_GROUPS
from cryptoffload.caam import status
from cryptoffload.caam.model import pkha
from cryptoffload.caam.model.memory import DmaMemory
from cryptoffload.caam.model.pkha import PkhaRegisters, ProtocolContext, run_pkha, run_protocol

INDEX = 9  # descriptor word of the OPERATION, as it shows in status words

OP_RSA_ENC = 0x80180000
OP_RSA_DEC = 0x80190000
OP_SIGN = 0x80150002
OP_VERIFY = 0x80160002
OP_ECDH = 0x80170002
OP_DH = 0x80170000
OP_KEYPAIR = 0x80140002
PD = 1 << 22
PREHASHED = 0x800

PDBERR = status.deco(status.DECO_PDBERR, INDEX)
UNDEFPCL = status.deco(status.DECO_UNDEFPCL, INDEX)
INVSIGN = status.deco(status.DECO_INVSIGN, INDEX)
DMA = status.deco(status.DECO_DMA, INDEX)

CURVE_OBJECTS = {"p256": ec.SECP256R1(), "p384": ec.SECP384R1(), "p521": ec.SECP521R1()}
ECDSEL = {"p256": 2, "p384": 3, "p521": 4, "secp256k1": 0x20, "brainpoolp256r1": 0x0B}


# --------------------------------------------------------------------------- helpers


def make_ctx(
    *,
    pointer_words: int = 1,
    builtin: bool = False,
    prehashed: bool = False,
    rng: bool = True,
    seed: int = 1,
) -> ProtocolContext:
    """A QorIQ-style context by default; ``builtin``/``prehashed`` give the i.MX quirks."""
    source = random.Random(seed)
    return ProtocolContext(
        memory=DmaMemory(),
        pointer_words=pointer_words,
        byteorder="little" if builtin else "big",
        builtin_curves=builtin,
        allow_prehashed_flag=prehashed,
        rng=source.randbytes if rng else None,
    )


def put(ctx: ProtocolContext, data: bytes) -> int:
    """A new buffer holding ``data``."""
    addr = ctx.memory.alloc(len(data))
    ctx.memory.write(addr, data)
    return addr


def put_int(ctx: ProtocolContext, value: int, length: int) -> int:
    return put(ctx, value.to_bytes(length, "big"))


def out(ctx: ProtocolContext, length: int) -> int:
    return ctx.memory.alloc(length)


def get_int(ctx: ProtocolContext, addr: int, length: int) -> int:
    return int.from_bytes(ctx.memory.read(addr, length), "big")


def pdb(ctx: ProtocolContext, word0: int, pointers: list[int], tail: tuple[int, ...] = ()):
    """PDB words: word 0, the pointers (1 or 2 words each, most significant first), the tail."""
    words = [word0]
    for p in pointers:
        if ctx.pointer_words == 2:
            words += [p >> 32, p & 0xFFFFFFFF]
        else:
            words.append(p)
    return words + list(tail)


def nbytes(value: int) -> int:
    return (value.bit_length() + 7) // 8


def representative(digest: bytes, order: int) -> int:
    """FIPS 186 bits2int: the leftmost bits of the digest, as many as the order has."""
    e = int.from_bytes(digest, "big")
    excess = 8 * len(digest) - order.bit_length()
    return e >> excess if excess > 0 else e


def domain_buffers(ctx: ProtocolContext, c: Curve) -> tuple[int, int, int, int, int, int]:
    """(L, N, q, r, G, a||b pointers) for an explicit curve."""
    big_l, big_n = c.size, nbytes(c.n)
    q = put_int(ctx, c.p, big_l)
    r = put_int(ctx, c.n, big_n)
    g = put(ctx, c.gx.to_bytes(big_l, "big") + c.gy.to_bytes(big_l, "big"))
    ab = put(ctx, c.a.to_bytes(big_l, "big") + c.b.to_bytes(big_l, "big"))
    return big_l, big_n, q, r, g, ab


def point_bytes(x: int, y: int, big_l: int) -> bytes:
    return x.to_bytes(big_l, "big") + y.to_bytes(big_l, "big")


def sign_words(ctx, c: Curve, s: int, f: int) -> tuple[list[int], int, int, int]:
    """An explicit-domain ECDSA sign PDB; returns (words, c pointer, d pointer, N)."""
    big_l, big_n, q, r, g, ab = domain_buffers(ctx, c)
    s_ptr = put_int(ctx, s, big_n)
    f_ptr = put_int(ctx, f, big_n)
    c_ptr, d_ptr = out(ctx, big_n), out(ctx, big_n)
    words = pdb(ctx, big_l << 7 | big_n, [q, r, g, s_ptr, f_ptr, c_ptr, d_ptr, ab])
    return words, c_ptr, d_ptr, big_n


def verify_words(ctx, c: Curve, wx: int, wy: int, f: int, sig_r: int, sig_s: int) -> list[int]:
    big_l, big_n, q, r, g, ab = domain_buffers(ctx, c)
    w = put(ctx, point_bytes(wx, wy, big_l))
    f_ptr = put_int(ctx, f, big_n)
    c_ptr = put_int(ctx, sig_r, big_n)
    d_ptr = put_int(ctx, sig_s, big_n)
    tmp = out(ctx, 2 * big_l)
    return pdb(ctx, big_l << 7 | big_n, [q, r, g, w, f_ptr, c_ptr, d_ptr, tmp, ab])


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


# --------------------------------------------------------------------------- PKHA functions


def test_pkha_modexp_puts_a_to_the_e_mod_n_in_b_padded_to_n():
    n = (1 << 1023) + 12345 | 1
    a, e = 0x1234567890ABCDEF, 65537
    regs = PkhaRegisters(a=a.to_bytes(8, "big"), n=n.to_bytes(128, "big"), e=e.to_bytes(3, "big"))
    assert run_pkha(pkha.EXPO, 0, regs, index=INDEX) == 0
    assert regs.b == pow(a, e, n).to_bytes(128, "big")


def test_pkha_out_a_flag_writes_the_result_to_a():
    regs = PkhaRegisters(a=b"\x03", b=b"\x07", n=b"\x0b", e=b"\x05")
    assert run_pkha(pkha.EXPO, pkha.FLAG_OUT_A, regs, index=0) == 0
    assert regs.a == bytes([pow(3, 5, 11)]) and regs.b == b"\x07"


def test_pkha_accepts_the_whole_operation_word_as_function():
    regs = PkhaRegisters(a=b"\x02", n=b"\x0d", e=b"\x0a")
    assert run_pkha(0x81800006, 0, regs, index=0) == 0
    assert regs.b == bytes([pow(2, 10, 13)])


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        (pkha.MOD_ADD, (50 + 90) % 97),
        (pkha.SUB_AB, (50 - 90) % 97),
        (pkha.SUB_BA, (90 - 50) % 97),
        (pkha.MULT, 50 * 90 % 97),
        (pkha.INV, pow(50, -1, 97)),
    ],
)
def test_pkha_modular_arithmetic(function, expected):
    regs = PkhaRegisters(a=bytes([50]), b=bytes([90]), n=bytes([0, 97]))
    assert run_pkha(function, 0, regs, index=0) == 0
    assert regs.b == expected.to_bytes(2, "big")


def test_pkha_reduct_takes_an_a_wider_than_n():
    a = 0xFFEEDDCCBBAA99887766
    regs = PkhaRegisters(a=a.to_bytes(10, "big"), n=(1000003).to_bytes(4, "big"))
    assert run_pkha(pkha.REDUCT, 0, regs, index=0) == 0
    assert regs.b == (a % 1000003).to_bytes(4, "big")


def test_pkha_clearmem_clears_the_selected_registers_or_all():
    regs = PkhaRegisters(a=b"\x01", b=b"\x02", n=b"\x03", e=b"\x04")
    assert run_pkha(pkha.CLEARMEM, pkha.CLEAR_A | pkha.CLEAR_E, regs, index=0) == 0
    assert (regs.a, regs.b, regs.n, regs.e) == (b"", b"\x02", b"\x03", b"")
    assert run_pkha(pkha.CLEARMEM, 0, regs, index=0) == 0
    assert (regs.a, regs.b, regs.n, regs.e) == (b"", b"", b"", b"")


@pytest.mark.parametrize(
    ("function", "flags", "regs", "err"),
    [
        (pkha.EXPO, 0, PkhaRegisters(a=b"\x02", n=b"\x10", e=b"\x03"), status.ERR_PKMODEVN),
        (pkha.MULT, 0, PkhaRegisters(a=b"\x02", b=b"\x03", n=b"\x10"), status.ERR_PKMODEVN),
        (pkha.EXPO, 0, PkhaRegisters(a=b"\x02", n=b"\x00", e=b"\x03"), status.ERR_PKDIVZRO),
        (pkha.REDUCT, 0, PkhaRegisters(a=b"\x02"), status.ERR_PKDIVZRO),
        (pkha.EXPO, 0, PkhaRegisters(a=b"\x0d", n=b"\x0b", e=b"\x03"), status.ERR_PKAMEMSZ),
        (pkha.MOD_ADD, 0, PkhaRegisters(a=b"\x01", b=b"\x0c", n=b"\x0b"), status.ERR_PKBMEMSZ),
        # An operand equal to the modulus is already out of range (A < N, B < N).
        (pkha.EXPO, 0, PkhaRegisters(a=b"\x0b", n=b"\x0b", e=b"\x03"), status.ERR_PKAMEMSZ),
        (pkha.MULT, 0, PkhaRegisters(a=b"\x02", b=b"\x0b", n=b"\x0b"), status.ERR_PKBMEMSZ),
        (pkha.SUB_AB, 0, PkhaRegisters(a=b"\x0b", b=b"\x01", n=b"\x0b"), status.ERR_PKAMEMSZ),
        (pkha.INV, 0, PkhaRegisters(a=b"\x06", n=b"\x09"), status.ERR_PKDIVZRO),
        (0x0B, 0, PkhaRegisters(a=b"\x01", n=b"\x0b"), status.ERR_MODE),  # ECC_MULT
        (pkha.MULT, pkha.FLAG_IN_MONTY, PkhaRegisters(a=b"\x01", n=b"\x0b"), status.ERR_MODE),
        (pkha.MOD_ADD, pkha.FLAG_F2M, PkhaRegisters(a=b"\x01", n=b"\x0b"), status.ERR_MODE),
        # Operands wider than the PKHA's 4096-bit registers (a 64 KiB modulus took minutes).
        (pkha.EXPO, 0, PkhaRegisters(a=b"\x02", n=b"\x0b" * 513, e=b"\x03"), status.ERR_DATASIZ),
        (pkha.EXPO, 0, PkhaRegisters(a=b"\x02", n=b"\x0b", e=b"\x03" * 513), status.ERR_KEYSIZ),
        (pkha.REDUCT, 0, PkhaRegisters(a=b"\x02" * 513, n=b"\x0b"), status.ERR_PKAMEMSZ),
        (pkha.MULT, 0, PkhaRegisters(a=b"\x02", b=bytes(513), n=b"\x0b"), status.ERR_PKBMEMSZ),
    ],
)
def test_pkha_errors_are_ccb_pk_statuses(function, flags, regs, err):
    before = (regs.a, regs.b)
    assert run_pkha(function, flags, regs, index=INDEX) == 0x20000080 | INDEX << 8 | err
    assert (regs.a, regs.b) == before


@pytest.mark.parametrize("function", [pkha.MOD_ADD, pkha.SUB_AB, pkha.MULT])
def test_pkha_operands_just_below_the_modulus_are_accepted(function):
    regs = PkhaRegisters(a=b"\x0a", b=b"\x0a", n=b"\x0b")
    assert run_pkha(function, 0, regs, index=INDEX) == 0
    expected = {pkha.MOD_ADD: 20 % 11, pkha.SUB_AB: 0, pkha.MULT: 100 % 11}[function]
    assert regs.b == bytes([expected])


def test_pkha_registers_repr_shows_lengths_only():
    regs = PkhaRegisters(e=bytes.fromhex("c0ffee"))
    assert "c0ffee" not in repr(regs) and "e=3 B" in repr(regs)


# --------------------------------------------------------------------------- RSA


@pytest.mark.parametrize("pointer_words", [1, 2])
def test_rsa_encrypt_is_raw_rsa_left_padded_to_n_len(rsa_key, pointer_words):
    ctx = make_ctx(pointer_words=pointer_words)
    pub = rsa_key.public_key().public_numbers()
    f = 0x0102030405  # short input: f_len 5, output still n_len bytes
    n_ptr, e_ptr = put_int(ctx, pub.n, 256), put_int(ctx, pub.e, 3)
    f_ptr, g_ptr = put_int(ctx, f, 5), out(ctx, 256)
    words = pdb(ctx, 3 << 12 | 256, [f_ptr, g_ptr, n_ptr, e_ptr], (5,))
    assert run_protocol(OP_RSA_ENC, words, ctx, index=INDEX) == 0
    assert ctx.memory.read(g_ptr, 256) == pow(f, pub.e, pub.n).to_bytes(256, "big")


def _rsa_dec_words(ctx, key: rsa.RSAPrivateKey, form: int, g: int) -> tuple[list[int], int]:
    priv = key.private_numbers()
    n = priv.public_numbers.n
    g_ptr, f_ptr = put_int(ctx, g, 256), out(ctx, 256)
    p_len, q_len = nbytes(priv.p), nbytes(priv.q)
    if form == 1:
        d_len = nbytes(priv.d)
        ptrs = [g_ptr, f_ptr, put_int(ctx, n, 256), put_int(ctx, priv.d, d_len)]
        return pdb(ctx, d_len << 12 | 256, ptrs), f_ptr
    tmps = [out(ctx, p_len), out(ctx, q_len)]
    if form == 2:
        d_len = nbytes(priv.d)
        ptrs = [g_ptr, f_ptr, put_int(ctx, priv.d, d_len)]
        ptrs += [put_int(ctx, priv.p, p_len), put_int(ctx, priv.q, q_len), *tmps]
        return pdb(ctx, d_len << 12 | 256, ptrs, (q_len << 12 | p_len,)), f_ptr
    ptrs = [g_ptr, f_ptr, put_int(ctx, priv.iqmp, p_len)]
    ptrs += [put_int(ctx, priv.p, p_len), put_int(ctx, priv.q, q_len)]
    ptrs += [put_int(ctx, priv.dmp1, p_len), put_int(ctx, priv.dmq1, q_len), *tmps]
    return pdb(ctx, 256, ptrs, (q_len << 12 | p_len,)), f_ptr


@pytest.mark.parametrize("form", [1, 2, 3])
def test_rsa_decrypt_forms_invert_encrypt(rsa_key, form):
    ctx = make_ctx()
    pub = rsa_key.public_key().public_numbers()
    m = int.from_bytes(random.Random(form).randbytes(255), "big")
    words, f_ptr = _rsa_dec_words(ctx, rsa_key, form, pow(m, pub.e, pub.n))
    assert run_protocol(OP_RSA_DEC | (form - 1), words, ctx, index=INDEX) == 0
    assert get_int(ctx, f_ptr, 256) == m
    assert get_int(ctx, f_ptr, 256) == pow(pow(m, pub.e, pub.n), rsa_key.private_numbers().d, pub.n)


@pytest.mark.parametrize("form", [1, 2, 3])
def test_rsa_decrypt_forms_make_a_pkcs1_signature_cryptography_accepts(rsa_key, form):
    ctx = make_ctx(pointer_words=2)
    message = b"sign me on the model"
    prefix = bytes.fromhex("3031300d060960864801650304020105000420")  # DigestInfo, SHA-256
    t = prefix + hashlib.sha256(message).digest()
    em = b"\x00\x01" + b"\xff" * (256 - len(t) - 3) + b"\x00" + t
    words, f_ptr = _rsa_dec_words(ctx, rsa_key, form, int.from_bytes(em, "big"))
    assert run_protocol(OP_RSA_DEC | (form - 1), words, ctx, index=INDEX) == 0
    signature = ctx.memory.read(f_ptr, 256)
    rsa_key.public_key().verify(signature, message, padding.PKCS1v15(), hashes.SHA256())
    assert signature == rsa_key.sign(message, padding.PKCS1v15(), hashes.SHA256())


def test_rsa_input_not_below_n_is_a_pkha_a_size_error(rsa_key):
    ctx = make_ctx()
    pub = rsa_key.public_key().public_numbers()
    n_ptr, e_ptr = put_int(ctx, pub.n, 256), put_int(ctx, pub.e, 3)
    f_ptr, g_ptr = put_int(ctx, pub.n, 256), out(ctx, 256)
    words = pdb(ctx, 3 << 12 | 256, [f_ptr, g_ptr, n_ptr, e_ptr], (256,))
    assert run_protocol(OP_RSA_ENC, words, ctx, index=INDEX) == 0x20000084 | INDEX << 8
    assert ctx.memory.read(g_ptr, 256) == bytes(256)


def test_rsa_even_modulus_is_pkmodevn():
    ctx = make_ctx()
    ptrs = [put_int(ctx, 5, 4), out(ctx, 4), put_int(ctx, 1000, 4), put_int(ctx, 3, 1)]
    words = pdb(ctx, 1 << 12 | 4, ptrs, (4,))
    assert run_protocol(OP_RSA_ENC, words, ctx, index=INDEX) == 0x20000088 | INDEX << 8


@pytest.mark.parametrize(
    ("word0", "f_len"),
    [
        (3 << 12 | 0, 5),  # n_len 0
        (0 << 12 | 256, 5),  # e_len 0
        (257 << 12 | 256, 5),  # e_len > n_len
        (3 << 12 | 256, 257),  # f_len > n_len
        (3 << 12 | 256, 0),  # f_len 0
        (3 << 12 | 513, 5),  # n_len beyond 4096 bits
        (0x80000000 | 3 << 12 | 256, 5),  # scatter/gather flag
    ],
)
def test_rsa_bad_lengths_are_pdb_errors(rsa_key, word0, f_len):
    ctx = make_ctx()
    pub = rsa_key.public_key().public_numbers()
    ptrs = [put_int(ctx, 5, 257), out(ctx, 256), put_int(ctx, pub.n, 256), put_int(ctx, 3, 257)]
    assert run_protocol(OP_RSA_ENC, pdb(ctx, word0, ptrs, (f_len,)), ctx, index=INDEX) == PDBERR


def test_rsa_pdb_too_short_is_a_pdb_error(rsa_key):
    ctx = make_ctx()
    words = pdb(ctx, 3 << 12 | 256, [out(ctx, 256), out(ctx, 256), out(ctx, 256)])
    assert run_protocol(OP_RSA_ENC, words, ctx, index=INDEX) == PDBERR


def test_rsa_decrypt_form_4_and_formatting_bits_are_undefined(rsa_key):
    ctx = make_ctx()
    words, _ = _rsa_dec_words(ctx, rsa_key, 1, 5)
    assert run_protocol(OP_RSA_DEC | 3, words, ctx, index=INDEX) == UNDEFPCL
    assert run_protocol(OP_RSA_DEC | 0x1000, words, ctx, index=INDEX) == UNDEFPCL


# --------------------------------------------------------------------------- ECDSA


@pytest.mark.parametrize(("name", "hash_cls"), [("p256", hashes.SHA256), ("p384", hashes.SHA384)])
def test_ecdsa_sign_gives_a_signature_cryptography_verifies(name, hash_cls):
    c = CURVES[name]
    key = ec.generate_private_key(CURVE_OBJECTS[name])
    digest = hashlib.new(hash_cls.name, b"message for the model").digest()
    ctx = make_ctx()
    s = key.private_numbers().private_value
    words, c_ptr, d_ptr, big_n = sign_words(ctx, c, s, representative(digest, c.n))
    assert run_protocol(OP_SIGN, words, ctx, index=INDEX) == 0
    r_val, s_val = get_int(ctx, c_ptr, big_n), get_int(ctx, d_ptr, big_n)
    signature = encode_dss_signature(r_val, s_val)
    key.public_key().verify(signature, digest, ec.ECDSA(Prehashed(hash_cls())))
    with pytest.raises(InvalidSignature):
        key.public_key().verify(signature, digest[::-1], ec.ECDSA(Prehashed(hash_cls())))


def test_ecdsa_sign_nonces_come_from_the_rng():
    c = CURVES["p256"]
    results = []
    for seed in (1, 1, 2):
        ctx = make_ctx(seed=seed)
        words, c_ptr, d_ptr, big_n = sign_words(ctx, c, 12345, 67890)
        assert run_protocol(OP_SIGN, words, ctx, index=INDEX) == 0
        results.append(ctx.memory.read(c_ptr, big_n) + ctx.memory.read(d_ptr, big_n))
    assert results[0] == results[1] != results[2]


@pytest.mark.parametrize("name", ["p256", "p384", "p521"])
def test_ecdsa_verify_accepts_cryptography_signature_and_rejects_altered(name):
    c = CURVES[name]
    key = ec.generate_private_key(CURVE_OBJECTS[name])
    pub = key.public_key().public_numbers()
    digest = hashlib.sha256(b"verify me").digest()
    sig_r, sig_s = decode_dss_signature(key.sign(digest, ec.ECDSA(Prehashed(hashes.SHA256()))))
    f = representative(digest, c.n)
    ctx = make_ctx()
    good = verify_words(ctx, c, pub.x, pub.y, f, sig_r, sig_s)
    assert run_protocol(OP_VERIFY, good, ctx, index=INDEX) == 0
    for bad in ((f ^ 1, sig_r, sig_s), (f, sig_r ^ 4, sig_s), (f, sig_r, sig_s + 1)):
        words = verify_words(ctx, c, pub.x, pub.y, *bad)
        assert run_protocol(OP_VERIFY, words, ctx, index=INDEX) == INVSIGN


def test_ecdsa_verify_out_of_range_signature_is_invalid_not_an_error():
    c = CURVES["p256"]
    ctx = make_ctx()
    words = verify_words(ctx, c, c.gx, c.gy, 5, 0, 1)
    assert run_protocol(OP_VERIFY, words, ctx, index=INDEX) == INVSIGN
    words = verify_words(ctx, c, c.gx, c.gy, 5, 1, c.n)
    assert run_protocol(OP_VERIFY, words, ctx, index=INDEX) == INVSIGN


def test_ecdsa_verify_public_key_off_the_curve_is_a_pdb_error():
    c = CURVES["p256"]
    ctx = make_ctx()
    words = verify_words(ctx, c, c.gx, c.gy + 1, 5, 1, 1)
    assert run_protocol(OP_VERIFY, words, ctx, index=INDEX) == PDBERR


def test_ecdsa_sigver_cavp_p256_vectors():
    c = CURVES["p256"]
    records = [r for r in ecdsa_sigver_vectors() if r["curve"] == "P-256"]
    assert records and {r["result"] for r in records} == {True, False}
    wrong = []
    for i, r in enumerate(records):
        ctx = make_ctx()
        digest = hashlib.new(r["hash"], r["msg"]).digest()
        f = representative(digest, c.n)
        words = verify_words(ctx, c, r["qx"], r["qy"], f, r["r"], r["s"])
        word = run_protocol(OP_VERIFY, words, ctx, index=INDEX)
        # Every failing P-256 record (message, R, S or Q changed) has Q on the curve: 0x86.
        if word != (0 if r["result"] else INVSIGN):
            wrong.append((i, r["reason"], hex(word)))
    assert not wrong, f"{len(wrong)} records answered wrongly, e.g. {wrong[:5]}"


def test_ecdsa_sign_without_rng_is_ccb_rng_not_instantiated():
    ctx = make_ctx(rng=False)
    words, c_ptr, _, big_n = sign_words(ctx, CURVES["p256"], 12345, 67890)
    word = run_protocol(OP_SIGN, words, ctx, index=INDEX)
    assert word == 0x20000054 | INDEX << 8
    assert word == status.ccb(status.CHA_RNG, status.ERR_RNG_NOT_INSTANTIATED, INDEX)
    assert ctx.memory.read(c_ptr, big_n) == bytes(big_n)


@pytest.mark.parametrize("s", [0, CURVES["p256"].n])
def test_ecdsa_sign_private_key_out_of_range_is_a_pdb_error(s):
    ctx = make_ctx()
    words, *_ = sign_words(ctx, CURVES["p256"], s, 1)
    assert run_protocol(OP_SIGN, words, ctx, index=INDEX) == PDBERR


def test_ecdsa_sign_generator_off_the_curve_is_a_pdb_error():
    c = CURVES["p256"]
    bad = c._replace(gy=c.gy ^ 1)
    ctx = make_ctx()
    words, *_ = sign_words(ctx, bad, 5, 1)
    assert run_protocol(OP_SIGN, words, ctx, index=INDEX) == PDBERR


def test_ecdsa_sign_even_field_prime_is_pkmodevn():
    c = CURVES["p256"]
    bad = c._replace(p=c.p - 1)
    ctx = make_ctx()
    words, *_ = sign_words(ctx, bad, 5, 1)
    assert run_protocol(OP_SIGN, words, ctx, index=INDEX) == 0x20000088 | INDEX << 8


def _tiny_curve_point(p: int, a: int, b: int) -> tuple[int, int]:
    """The first point of y^2 = x^3 + ax + b mod p with y != 0, by search."""
    return next(
        (x, y) for x in range(p) for y in range(1, p) if (y * y - x**3 - a * x - b) % p == 0
    )


def test_ecdsa_verify_with_a_composite_order_is_pkdivzro_not_an_exception():
    # The order is checked for oddness only: r = 9 leaves d = 3 without an inverse.
    ctx = make_ctx()
    g = point_bytes(*_tiny_curve_point(23, 1, 1), 1)
    q, r, ab = put_int(ctx, 23, 1), put_int(ctx, 9, 1), put(ctx, bytes([1, 1]))
    f, c, d = put_int(ctx, 1, 1), put_int(ctx, 1, 1), put_int(ctx, 3, 1)
    words = pdb(ctx, 1 << 7 | 1, [q, r, put(ctx, g), put(ctx, g), f, c, d, out(ctx, 2), ab])
    assert run_protocol(OP_VERIFY, words, ctx, index=INDEX) == 0x20000087 | INDEX << 8


def test_ecdh_with_a_composite_field_prime_is_pkdivzro_not_an_exception():
    # The field prime is checked for oddness only: mod 25 some multiples of W have no affine
    # form (Z shares the factor 5).
    ctx = make_ctx()
    w = put(ctx, point_bytes(*_tiny_curve_point(25, 1, 1), 1))
    q, ab = put_int(ctx, 25, 1), put(ctx, bytes([1, 1]))
    seen = set()
    for s in range(1, 30):
        words = pdb(ctx, 1 << 7 | 1, [q, 0, w, put_int(ctx, s, 1), out(ctx, 1), ab])
        seen.add(run_protocol(OP_ECDH, words, ctx, index=INDEX))
    assert 0x20000087 | INDEX << 8 in seen
    assert seen <= {0, PDBERR, 0x20000087 | INDEX << 8}


@pytest.mark.parametrize(
    "word0",
    [
        32 << 7 | 0,  # N = 0
        0 << 7 | 32,  # L = 0
        129 << 7 | 32,  # L beyond 1024 bits
        32 << 7 | 34,  # N > L + 1
        0x01000000 | 32 << 7 | 32,  # scatter/gather flag
        0x00020000 | 32 << 7 | 32,  # reserved bit
    ],
)
def test_ecdsa_bad_word0_is_a_pdb_error(word0):
    ctx = make_ctx()
    words, *_ = sign_words(ctx, CURVES["p256"], 5, 1)
    assert run_protocol(OP_SIGN, [word0, *words[1:]], ctx, index=INDEX) == PDBERR


def test_dma_fault_reading_an_input_is_deco_dma():
    ctx = make_ctx()
    words, *_ = sign_words(ctx, CURVES["p256"], 5, 1)
    words[4] = 0x1000  # s pointer: nothing allocated there
    assert run_protocol(OP_SIGN, words, ctx, index=INDEX) == DMA


def test_dma_fault_writing_an_output_is_deco_dma(rsa_key):
    ctx = make_ctx()
    pub = rsa_key.public_key().public_numbers()
    short_out = out(ctx, 100)  # g needs 256 bytes
    ptrs = [put_int(ctx, 7, 1), short_out, put_int(ctx, pub.n, 256), put_int(ctx, pub.e, 3)]
    words = pdb(ctx, 3 << 12 | 256, ptrs, (1,))
    assert run_protocol(OP_RSA_ENC, words, ctx, index=INDEX) == DMA


# --------------------------------------------------------------------------- quirks


def _builtin_sign(ctx: ProtocolContext, name: str, s: int, f: int):
    c = CURVES[name]
    big_n = nbytes(c.n)
    s_ptr, f_ptr = put_int(ctx, s, big_n), put_int(ctx, f, big_n)
    c_ptr, d_ptr = out(ctx, big_n), out(ctx, big_n)
    words = pdb(ctx, PD | ECDSEL[name] << 7, [s_ptr, f_ptr, c_ptr, d_ptr])
    return words, c_ptr, d_ptr, big_n


def test_builtin_curve_selector_is_refused_on_qoriq():
    ctx = make_ctx(builtin=False)
    words, *_ = _builtin_sign(ctx, "p256", 5, 1)
    assert run_protocol(OP_SIGN, words, ctx, index=INDEX) == PDBERR


@pytest.mark.parametrize(
    ("name", "curve_obj"),
    [("p256", ec.SECP256R1()), ("secp256k1", ec.SECP256K1()), ("brainpoolp256r1", None)],
)
def test_builtin_curve_sign_on_imx_verifies_with_cryptography(name, curve_obj):
    curve_obj = curve_obj or ec.BrainpoolP256R1()
    key = ec.generate_private_key(curve_obj)
    digest = hashlib.sha256(b"i.MX built-in domain").digest()
    ctx = make_ctx(builtin=True)
    words, c_ptr, d_ptr, big_n = _builtin_sign(
        ctx, name, key.private_numbers().private_value, int.from_bytes(digest, "big")
    )
    assert run_protocol(OP_SIGN, words, ctx, index=INDEX) == 0
    signature = encode_dss_signature(get_int(ctx, c_ptr, big_n), get_int(ctx, d_ptr, big_n))
    key.public_key().verify(signature, digest, ec.ECDSA(Prehashed(hashes.SHA256())))


def test_builtin_curve_verify_on_imx():
    key = ec.generate_private_key(ec.SECP384R1())
    pub = key.public_key().public_numbers()
    digest = hashlib.sha384(b"verify, built in").digest()
    sig_r, sig_s = decode_dss_signature(key.sign(digest, ec.ECDSA(Prehashed(hashes.SHA384()))))
    ctx = make_ctx(builtin=True)
    ptrs = [put(ctx, point_bytes(pub.x, pub.y, 48))]
    ptrs += [put(ctx, digest), put_int(ctx, sig_r, 48), put_int(ctx, sig_s, 48), out(ctx, 96)]
    words = pdb(ctx, PD | 3 << 7, ptrs)
    assert run_protocol(OP_VERIFY, words, ctx, index=INDEX) == 0
    words[2] = put(ctx, digest[::-1])
    assert run_protocol(OP_VERIFY, words, ctx, index=INDEX) == INVSIGN


def test_unknown_builtin_selector_is_a_pdb_error_on_imx():
    ctx = make_ctx(builtin=True)
    words = pdb(ctx, PD | 0x7E << 7, [out(ctx, 32)] * 4)
    assert run_protocol(OP_SIGN, words, ctx, index=INDEX) == PDBERR


def test_prehashed_flag_is_undefined_on_qoriq_and_accepted_on_imx():
    c = CURVES["p256"]
    key = ec.generate_private_key(ec.SECP256R1())
    digest = hashlib.sha256(b"already hashed").digest()
    f = int.from_bytes(digest, "big")
    qoriq = make_ctx(prehashed=False)
    words, *_ = sign_words(qoriq, c, key.private_numbers().private_value, f)
    assert run_protocol(OP_SIGN | PREHASHED, words, qoriq, index=INDEX) == UNDEFPCL
    imx = make_ctx(builtin=True, prehashed=True)
    words, c_ptr, d_ptr, big_n = sign_words(imx, c, key.private_numbers().private_value, f)
    assert run_protocol(OP_SIGN | PREHASHED, words, imx, index=INDEX) == 0
    signature = encode_dss_signature(get_int(imx, c_ptr, big_n), get_int(imx, d_ptr, big_n))
    key.public_key().verify(signature, digest, ec.ECDSA(Prehashed(hashes.SHA256())))


@pytest.mark.parametrize(
    "op_word",
    [
        0x801A0000,  # unknown protocol id
        0x80150000,  # finite-field DSA sign: not modelled
        0x80150003,  # binary-field ECDSA
        0x80170006,  # black-key ECDH
        0x86150002,  # DECAP type, not UNI_PROTOCOL
    ],
)
def test_undefined_protocols_are_deco_0x81(op_word):
    ctx = make_ctx(builtin=True, prehashed=True)
    assert run_protocol(op_word, [32 << 7 | 32], ctx, index=INDEX) == UNDEFPCL


# --------------------------------------------------------------------------- ECDH and DH


@pytest.mark.parametrize("name", ["p256", "p384", "p521"])
def test_ecdh_matches_cryptography_exchange(name):
    c = CURVES[name]
    ours = ec.generate_private_key(CURVE_OBJECTS[name])
    peer = ec.generate_private_key(CURVE_OBJECTS[name])
    peer_pub = peer.public_key().public_numbers()
    big_l, big_n = c.size, nbytes(c.n)
    assert big_l < 1024 and big_n <= 127
    ctx = make_ctx()
    q = put_int(ctx, c.p, big_l)
    w = put(ctx, point_bytes(peer_pub.x, peer_pub.y, big_l))
    s = put_int(ctx, ours.private_numbers().private_value, big_n)
    z = out(ctx, big_l)
    ab = put(ctx, c.a.to_bytes(big_l, "big") + c.b.to_bytes(big_l, "big"))
    words = pdb(ctx, big_l << 7 | big_n, [q, 0, w, s, z, ab])  # r unused: null, as the SDK does
    assert run_protocol(OP_ECDH, words, ctx, index=INDEX) == 0
    assert ctx.memory.read(z, big_l) == ours.exchange(ec.ECDH(), peer.public_key())


def test_ecdh_peer_off_the_curve_is_a_pdb_error():
    c = CURVES["p256"]
    ctx = make_ctx()
    ab = put(ctx, c.a.to_bytes(32, "big") + c.b.to_bytes(32, "big"))
    w = put(ctx, point_bytes(c.gx, (c.gy + 1) % c.p, 32))
    words = pdb(ctx, 32 << 7 | 32, [put_int(ctx, c.p, 32), 0, w, put_int(ctx, 7, 32)])
    words += [out(ctx, 32), ab]
    assert run_protocol(OP_ECDH, words, ctx, index=INDEX) == PDBERR


def test_ecdh_builtin_curve_on_imx():
    ours = ec.generate_private_key(ec.SECP256R1())
    peer = ec.generate_private_key(ec.SECP256R1()).public_key()
    pn = peer.public_numbers()
    ctx = make_ctx(builtin=True)
    z = out(ctx, 32)
    ptrs = [put(ctx, point_bytes(pn.x, pn.y, 32))]
    ptrs += [put_int(ctx, ours.private_numbers().private_value, 32), z]
    assert run_protocol(OP_ECDH, pdb(ctx, PD | 2 << 7, ptrs), ctx, index=INDEX) == 0
    assert ctx.memory.read(z, 32) == ours.exchange(ec.ECDH(), peer)


def _dh_words(ctx, p: int, peer: int, s: int, s_len: int) -> tuple[list[int], int]:
    z = out(ctx, 256)
    ptrs = [put_int(ctx, p, 256), 0, put_int(ctx, peer, 256), put_int(ctx, s, s_len), z]
    return pdb(ctx, 256 << 7 | s_len, ptrs), z


def test_ffdh_ffdhe2048_matches_pow_and_cryptography():
    group = FFDHE_GROUPS["ffdhe2048"]
    params = dh.DHParameterNumbers(group.p, group.g).parameters()
    ours = params.generate_private_key()
    peer = params.generate_private_key()
    x = ours.private_numbers().x
    y = peer.public_key().public_numbers().y
    s_len = nbytes(x)
    assert s_len <= 127, "cryptography's exponent must fit the 7-bit N field"
    ctx = make_ctx()
    words, z = _dh_words(ctx, group.p, y, x, s_len)
    assert run_protocol(OP_DH, words, ctx, index=INDEX) == 0
    assert get_int(ctx, z, 256) == pow(y, x, group.p)
    assert ctx.memory.read(z, 256) == ours.exchange(peer.public_key()).rjust(256, b"\0")


def test_ffdh_short_exponent_and_pdb_words_with_long_pointers():
    group = FFDHE_GROUPS["ffdhe2048"]
    s = int.from_bytes(random.Random(5).randbytes(32), "big")
    peer = pow(group.g, 0xC0FFEE, group.p)
    ctx = make_ctx(pointer_words=2)
    words, z = _dh_words(ctx, group.p, peer, s, 32)
    assert len(words) == 11
    assert run_protocol(OP_DH, words, ctx, index=INDEX) == 0
    assert get_int(ctx, z, 256) == pow(peer, s, group.p)


@pytest.mark.parametrize("peer", [0, 1, FFDHE_GROUPS["ffdhe2048"].p - 1])
def test_ffdh_peer_value_out_of_range_is_a_pdb_error(peer):
    ctx = make_ctx()
    words, z = _dh_words(ctx, FFDHE_GROUPS["ffdhe2048"].p, peer, 12345, 32)
    assert run_protocol(OP_DH, words, ctx, index=INDEX) == PDBERR
    assert ctx.memory.read(z, 256) == bytes(256)


def test_ffdh_builtin_selector_is_a_pdb_error_even_on_imx():
    ctx = make_ctx(builtin=True)
    words, _ = _dh_words(ctx, FFDHE_GROUPS["ffdhe2048"].p, 5, 7, 32)
    words[0] = PD | 2 << 7
    assert run_protocol(OP_DH, words, ctx, index=INDEX) == PDBERR


# --------------------------------------------------------------------------- key pair


@pytest.mark.parametrize("name", ["p256", "p384", "p521"])
def test_keypair_public_is_s_times_g(name):
    c = CURVES[name]
    big_l, big_n, q, r, g, ab = domain_buffers(ctx := make_ctx(seed=7), c)
    s_ptr, w_ptr = out(ctx, big_n), out(ctx, 2 * big_l)
    words = pdb(ctx, big_l << 7 | big_n, [q, r, g, s_ptr, w_ptr, ab])
    assert run_protocol(OP_KEYPAIR, words, ctx, index=INDEX) == 0
    s = get_int(ctx, s_ptr, big_n)
    assert 0 < s < c.n
    expected = ec.derive_private_key(s, CURVE_OBJECTS[name]).public_key().public_numbers()
    assert ctx.memory.read(w_ptr, 2 * big_l) == point_bytes(expected.x, expected.y, big_l)


def test_keypair_builtin_curve_on_imx():
    ctx = make_ctx(builtin=True, seed=3)
    s_ptr, w_ptr = out(ctx, 32), out(ctx, 64)
    words = pdb(ctx, PD | 0x20 << 7, [s_ptr, w_ptr])
    assert run_protocol(OP_KEYPAIR, words, ctx, index=INDEX) == 0
    s = get_int(ctx, s_ptr, 32)
    expected = ec.derive_private_key(s, ec.SECP256K1()).public_key().public_numbers()
    assert ctx.memory.read(w_ptr, 64) == point_bytes(expected.x, expected.y, 32)


def test_keypair_without_rng_is_ccb_rng_not_instantiated():
    ctx = make_ctx(rng=False)
    big_l, big_n, q, r, g, ab = domain_buffers(ctx, CURVES["p256"])
    words = pdb(ctx, big_l << 7 | big_n, [q, r, g, out(ctx, 32), out(ctx, 64), ab])
    assert run_protocol(OP_KEYPAIR, words, ctx, index=INDEX) == 0x20000054 | INDEX << 8


def test_finite_field_keypair():
    group = FFDHE_GROUPS["ffdhe2048"]
    ctx = make_ctx(seed=11)
    order = (1 << 255) + 95  # any odd r: s is drawn below it
    s_ptr, w_ptr = out(ctx, 32), out(ctx, 256)
    ptrs = [put_int(ctx, group.p, 256), put_int(ctx, order, 32), put_int(ctx, group.g, 256)]
    words = pdb(ctx, 256 << 7 | 32, [*ptrs, s_ptr, w_ptr])
    assert run_protocol(0x80140000, words, ctx, index=INDEX) == 0
    s = get_int(ctx, s_ptr, 32)
    assert 0 < s < order
    assert get_int(ctx, w_ptr, 256) == pow(group.g, s, group.p)
