"""The one driver and its recipes on the model: what the block does with them, word for word.

The recipes' own answers are test_caam_recipes.py's; here are the block's behaviours under them:
what discovery finds, the plaintext the AESA writes before it checks a tag, the status words of
errors (data size, PKHA operand, invalid signature, RNG not instantiated), PKCS#1 blocks through
the raw RSA forms, the QorIQ/i.MX quirks (built-in curves, already-hashed digests), extended
lengths, long pointers, a small ring that wraps.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESCCM, AESGCM

from cryptoffload.caam import regs, status
from cryptoffload.caam.jr.driver import CaamError, CaamUnavailable, Driver
from cryptoffload.caam.jr.transport import ModelTransport
from cryptoffload.caam.model import CaamModel
from cryptoffload.caam.recipes import aead, cipher, pk, rng
from cryptoffload.caam.recipes import hash as mdha
from cryptoffload.caam.recipes.base import execute

PARTS = ["t2080", "t1040", "imx7d"]
SETUPS = [(p, False) for p in PARTS] + [("t2080", True)]
ICV_ERROR = (status.SRC_CCB, status.CHA_AES, status.ERR_ICVCHK)


def make_driver(part: str, *, long_pointers: bool = False, depth: int = 8) -> Driver:
    model = CaamModel(part, seed=b"driver tests")
    return Driver(ModelTransport(model), long_pointers=long_pointers, depth=depth)


def model_of(drv: Driver) -> CaamModel:
    return drv.transport.model


@pytest.fixture(params=SETUPS, ids=lambda s: s[0] + ("-long" if s[1] else ""))
def drv(request: pytest.FixtureRequest) -> Iterator[Driver]:
    part, long_pointers = request.param
    driver = make_driver(part, long_pointers=long_pointers)
    yield driver
    driver.close()


@pytest.fixture
def ready(drv: Driver) -> Driver:
    """A driver whose RNG4 state handle 0 is instantiated."""
    drv.ensure_rng()
    assert drv.rdsta & regs.RDSTA_IF0
    return drv


@functools.cache
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def ccb_fields(word: int) -> tuple[int, int, int]:
    return word >> 28, (word >> 4) & 0xF, word & 0xF


def _be(value: int, length: int) -> bytes:
    return value.to_bytes(length, "big")


def _int(data: bytes) -> int:
    return int.from_bytes(data, "big")


# ---------------------------------------------------------------------- discovery


def test_driver_discovers_what_each_part_has(drv: Driver) -> None:
    caps = drv.caps
    assert caps.byteorder == model_of(drv).part.byteorder
    assert caps.gcm and caps.counts["AES"] >= 1 and caps.counts["MD"] >= 1
    assert caps.counts["RNG"] == 1 and caps.counts["PK"] == 1
    assert caps.versions["MD"] == regs.MD_HP  # SHA-384/512 available
    assert caps.counts["JR"] == model_of(drv).part.job_rings


# ---------------------------------------------------------------------- AES, GCM, CCM


def test_aes_cbc_partial_block_is_a_data_size_error(
    drv: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recipe declines it first (misaligned); past that check, the AESA refuses it too."""
    monkeypatch.setattr(cipher, "ALIGNED", frozenset())
    with pytest.raises(CaamError) as err:
        cipher.cipher(drv, os.urandom(16), "CBC", bytes(16), b"x" * 17, encrypt=True)
    assert ccb_fields(err.value.status) == (status.SRC_CCB, status.CHA_AES, status.ERR_DATASIZ)


def _altered(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 4])


@pytest.mark.parametrize(
    ("algo", "nonce_len", "alen", "n", "tlen"),
    [
        ("gcm", 12, 6, 40, 16),
        ("gcm", 12, 0, 33, 12),
        ("ccm", 7, 0, 1, 4),
        ("ccm", 13, 30, 47, 16),
        ("ccm", 11, 1, 16, 8),
    ],
)
def test_a_bad_tag_is_an_icv_error_after_the_plaintext_was_written(
    drv: Driver, algo: str, nonce_len: int, alen: int, n: int, tlen: int
) -> None:
    """The quirk the driver answers by wiping: the AESA writes the plaintext to memory before it
    compares the tag. The recipe's job runs here without the driver owning its buffers, so the
    output is still there to read."""
    key, nonce, aad, pt = os.urandom(32), os.urandom(nonce_len), os.urandom(alen), os.urandom(n)
    if algo == "gcm":
        sealed = AESGCM(key).encrypt(nonce, pt, aad)
        sealed = sealed[:n] + sealed[n : n + tlen]
        job = aead.prepare_gcm(drv, key, nonce, _altered(sealed), aad, tag_length=tlen,
                               encrypt=False)  # fmt: skip
    else:
        sealed = AESCCM(key, tag_length=tlen).encrypt(nonce, pt, aad)
        job = aead.prepare_ccm(drv, key, nonce, _altered(sealed), aad, tag_length=tlen,
                               encrypt=False)  # fmt: skip
    word = drv.run(job.words)
    assert ccb_fields(word) == ICV_ERROR
    (out, length), = job.buffers.collect  # fmt: skip
    assert drv.read(out, length) == pt  # written, but not released
    job.buffers.release()


# ---------------------------------------------------------------------- RSA


def test_rsa_public_encrypt_decrypts_with_cryptography(drv: Driver) -> None:
    key = rsa_key()
    pub = key.public_key().public_numbers()
    msg = b"secret for the private key"
    k = key.key_size // 8
    filler = bytes(b % 255 + 1 for b in os.urandom(k - 3 - len(msg)))
    em = b"\x00\x02" + filler + b"\x00" + msg  # PKCS#1 v1.5 encryption block
    ct = _be(pk.rsa_public(drv, pub.n, pub.e, _int(em)), k)
    assert ct == _be(pow(_int(em), pub.e, pub.n), k)
    assert key.decrypt(ct, padding.PKCS1v15()) == msg


def _pkcs1_sign_block(msg: bytes, k: int) -> bytes:
    digest_info = bytes.fromhex("3031300d060960864801650304020105000420")
    t = digest_info + hashlib.sha256(msg).digest()
    return b"\x00\x01" + b"\xff" * (k - 3 - len(t)) + b"\x00" + t


@pytest.mark.parametrize("form", [1, 3])
def test_rsa_private_decrypt_makes_a_pkcs1_signature(drv: Driver, form: int) -> None:
    key = rsa_key()
    numbers = key.private_numbers()
    n = numbers.public_numbers.n
    msg = b"signed by raw RSA on the model"
    k = key.key_size // 8
    em = _int(_pkcs1_sign_block(msg, k))
    if form == 1:
        value = pk.rsa_private(drv, n, numbers.d, em)
    else:
        p, q = numbers.p, numbers.q
        value = pk.rsa_private_crt(drv, p, q, numbers.dmp1, numbers.dmq1, numbers.iqmp, em)
    assert value == pow(em, numbers.d, n)
    key.public_key().verify(_be(value, k), msg, padding.PKCS1v15(), hashes.SHA256())


def test_rsa_input_not_below_the_modulus_is_a_pkha_error(drv: Driver) -> None:
    pub = rsa_key().public_key().public_numbers()
    with pytest.raises(CaamError) as err:
        pk.rsa_public(drv, pub.n, pub.e, pub.n)
    assert ccb_fields(err.value.status) == (status.SRC_CCB, status.CHA_PK, status.ERR_PKAMEMSZ)


# ---------------------------------------------------------------------- ECDSA

CURVE_OBJECTS = {"p256": ec.SECP256R1(), "p384": ec.SECP384R1()}
CURVE_HASHES = {"p256": hashes.SHA256(), "p384": hashes.SHA384()}


def _point(key: ec.EllipticCurvePrivateKey) -> tuple[int, int]:
    numbers = key.public_key().public_numbers()
    return numbers.x, numbers.y


@pytest.mark.parametrize("curve", ["p256", "p384"])
def test_an_invalid_signature_is_deco_0x86_at_the_operation(drv: Driver, curve: str) -> None:
    key = ec.generate_private_key(CURVE_OBJECTS[curve])
    msg = b"signed by cryptography"
    c, d = utils.decode_dss_signature(key.sign(msg, ec.ECDSA(CURVE_HASHES[curve])))
    h = hashes.Hash(CURVE_HASHES[curve])
    h.update(msg)
    f = h.finalize()

    def verify(point: tuple[int, int], digest: bytes, sig: tuple[int, int]) -> int:
        job = pk.prepare_ecdsa_verify(drv, curve, point, digest, sig)
        return drv.run(job.words, owned=job.buffers.owned)

    assert verify(_point(key), f, (c, d)) == 0
    # Any change: DECO 0x86 at the OPERATION, which follows the header and a 10-word PDB.
    invalid = status.deco(status.DECO_INVSIGN, 1 + (19 if drv.long_pointers else 10))
    altered = bytes([f[0] ^ 0x80]) + f[1:]
    assert verify(_point(key), altered, (c, d)) == invalid
    assert verify(_point(key), f, (c, d ^ 2)) == invalid
    other = _point(ec.generate_private_key(CURVE_OBJECTS[curve]))
    assert verify(other, f, (c, d)) == invalid


# ---------------------------------------------------------------------- quirks: QorIQ vs i.MX

QUIRKS = [("t2080", False), ("t1040", False), ("imx7d", True)]


@pytest.mark.parametrize(("part", "imx"), QUIRKS)
def test_builtin_curve_selector(part: str, imx: bool) -> None:
    """No recipe emits it (test_caam_recipes.py checks); the block's answer to it, by hand."""
    drv = make_driver(part)
    drv.ensure_rng()
    key = ec.generate_private_key(ec.SECP256R1())
    digest = hashlib.sha256(b"built-in curve").digest()
    p_c, p_d = drv.alloc(32), drv.alloc(32)
    pd_p256 = (1 << 22) | (2 << 7)  # PD | ECDSEL P-256: no PDB layout names this form
    b = drv.builder().pdb_words(
        pd_p256, drv.put(_be(key.private_numbers().private_value, 32)), drv.put(digest), p_c, p_d
    )
    word = drv.run(b.protocol("DSASIGN", flags=["ECC"]).words())
    if not imx:
        assert word == status.deco(status.DECO_PDBERR, 6)
        return
    assert word == 0
    sig = utils.encode_dss_signature(_int(drv.read(p_c, 32)), _int(drv.read(p_d, 32)))
    key.public_key().verify(sig, digest, ec.ECDSA(utils.Prehashed(hashes.SHA256())))


@pytest.mark.parametrize(("part", "imx"), QUIRKS)
def test_already_hashed_flag(part: str, imx: bool) -> None:
    """The recipe's signing job with the OPERATION's HASHED flag set: i.MX only."""
    drv = make_driver(part)
    drv.ensure_rng()
    key = ec.generate_private_key(ec.SECP256R1())
    digest = hashlib.sha256(b"already hashed").digest()
    job = pk.prepare_ecdsa_sign(drv, "p256", key.private_numbers().private_value, digest)
    hashed = drv.builder().protocol("DSASIGN", flags=["ECC", "HASHED"]).words()[1]
    assert job.words[-1] | 0x800 == hashed  # the flag is all that changes
    ran = drv.submit([*job.words[:-1], hashed], owned=job.buffers.owned,
                     collect=job.buffers.collect)  # fmt: skip
    word = ran.wait()
    if not imx:
        assert word == status.deco(status.DECO_UNDEFPCL, 10)
        return
    assert word == 0
    sig = utils.encode_dss_signature(*(_int(o) for o in ran.outputs))
    key.public_key().verify(sig, digest, ec.ECDSA(utils.Prehashed(hashes.SHA256())))


@pytest.mark.parametrize("part", PARTS)
def test_rdsta_0_at_reset_so_generate_and_sign_give_0x54(
    part: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    drv = make_driver(part)
    assert drv.rdsta == 0
    with pytest.raises(CaamError) as err:
        execute(drv, rng.prepare_random(drv, 16))  # no ensure_rng on the way
    assert err.value.status == status.ccb(status.CHA_RNG, status.ERR_RNG_NOT_INSTANTIATED, 1)
    key = ec.generate_private_key(ec.SECP256R1())
    with monkeypatch.context() as m:
        m.setattr(drv, "ensure_rng", lambda: None)
        with pytest.raises(CaamError) as err:
            pk.ecdsa_sign(drv, "p256", key.private_numbers().private_value, bytes(32))
    assert err.value.status == status.ccb(status.CHA_RNG, status.ERR_RNG_NOT_INSTANTIATED, 10)
    drv.ensure_rng()
    assert drv.rdsta == regs.RDSTA_IF0 | regs.RDSTA_SKVN
    assert len(rng.random_bytes(drv, 16)) == 16


# ---------------------------------------------------------------------- lengths and pointers


@pytest.mark.parametrize("part", PARTS)
def test_over_64k_needs_the_extended_length(part: str) -> None:
    drv = make_driver(part)
    msg = os.urandom(70_000)
    with pytest.raises(ValueError, match="ext"):
        drv.builder().fifo_load(2, "MSG", pointer=drv.put(msg), length=len(msg), last2=True)
    assert mdha.digest(drv, "sha256", msg) == hashlib.sha256(msg).digest()
    key, ctr = os.urandom(16), os.urandom(16)
    ct, _ = cipher.cipher(drv, key, "CTR", ctr, msg, encrypt=True)
    assert ct == Cipher(algorithms.AES(key), modes.CTR(ctr)).encryptor().update(msg)


@pytest.mark.parametrize(("part", "can"), [("t2080", True), ("t1040", True), ("imx7d", False)])
def test_long_pointers_only_where_ctpr_ms_ps(part: str, can: bool) -> None:
    model = CaamModel(part)
    assert regs.discover(model.read32).long_pointers is can
    model.write32(regs.MCFGR, regs.MCFGR_LONG_PTR)
    assert bool(model.read32(regs.MCFGR) & regs.MCFGR_LONG_PTR) is can
    model.write32(regs.MCFGR, 0)
    if not can:
        with pytest.raises(CaamUnavailable, match="cannot use long pointers"):
            Driver(ModelTransport(model), long_pointers=True)
        return
    # A descriptor built for 32-bit pointers is misread once long pointers are on, and the
    # other way round; each works in its own mode.
    short = Driver(ModelTransport(model))
    b32 = short.builder()
    p32 = short.alloc(32)
    b32.operation(2, "SHA256").fifo_load(2, "MSG", data=b"abc", last2=True)
    b32.store(2, "context", length=32, pointer=p32)
    assert short.run(b32.words()) == 0
    assert short.read(p32, 32) == hashlib.sha256(b"abc").digest()
    long = Driver(ModelTransport(model), long_pointers=True)
    assert long.pointer_size == 8
    assert long.run(b32.words()) != 0
    assert mdha.digest(long, "sha256", b"abc") == hashlib.sha256(b"abc").digest()


# ---------------------------------------------------------------------- the ring


def test_several_jobs_in_flight_and_the_ring_wraps() -> None:
    drv = make_driver("t1040", depth=4)
    msgs = [os.urandom(i + 1) for i in range(22)]
    digests = []
    for batch in range(0, len(msgs), 4):
        jobs = [mdha.prepare_digest(drv, "sha256", m) for m in msgs[batch : batch + 4]]
        placed = [drv.submit(j.words, owned=j.buffers.owned, collect=j.buffers.collect)
                  for j in jobs]  # fmt: skip
        assert drv.transport.read32(regs.jr_base(0) + regs.IRSAR) == 4  # each ran at once
        assert drv.poll() == len(placed)
        digests += [bytes(j.result()[0]) for j in placed]
    assert digests == [hashlib.sha256(m).digest() for m in msgs]
    assert model_of(drv).counters.jobs == len(msgs)
