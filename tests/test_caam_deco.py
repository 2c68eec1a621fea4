"""The CAAM model's DECO: the brief's recipes as hand-assembled words, against `cryptography`."""

from __future__ import annotations

import hashlib
import hmac
import os
import tracemalloc

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, rsa, utils
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESCCM, AESGCM
from vectors.loaders import aes_vectors, ccm_vectors, gcm_vectors

from cryptoffload.caam import regs, status
from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.desc.words import to_bytes
from cryptoffload.caam.model import CaamModel
from cryptoffload.caam.model.deco import JobContext, JobResult, run_job
from cryptoffload.caam.model.memory import DmaMemory
from cryptoffload.caam.model.parts import PARTS
from cryptoffload.caam.model.rng import Rng4
from cryptoffload.modes import CFB, OFB

HDR = 0xB0800000  # header: HDR_ONE; | start << 16 | length

# Command words from the brief's recipe table (OR in lengths).
KEY_C1 = 0x02200000
KEY_C2 = 0x04000000
KEY_PKHA_E = 0x02010000
LOAD_C1_CTX = 0x12200010  # class-1 context, offset 0, 16 bytes
LOAD_C1_CTX16 = 0x12201010  # offset 16 (CTR)
STORE_C1_CTX = 0x52200010
STORE_C1_CTX16 = 0x52201010
STORE_C2_CTX = 0x54200000  # | length
LOAD_CLRW_IMM = 0x10880004
FIFO_LOAD_MSG_LAST1 = 0x22120000
FIFO_LOAD_MSG_FLUSH1 = 0x22110000
FIFO_LOAD_IV_FLUSH1 = 0x22210000
FIFO_LOAD_AAD_FLUSH1 = 0x22310000
FIFO_LOAD_ICV_LAST1 = 0x223A0000
FIFO_LOAD_MSG_LAST2 = 0x24140000
FIFO_LOAD_MSG_LAST2_IMM = 0x24940000
FIFO_LOAD_PK_A = 0x220C0000
FIFO_LOAD_PK_N = 0x22080000
FIFO_STORE_MSG = 0x60300000
FIFO_STORE_RNG = 0x60340000
FIFO_STORE_PKHA_B = 0x620D0000
FIFO_LOAD_EXT = 0x00400000
OP_AES = {"CTR": 0x82100001, "CBC": 0x82100101, "ECB": 0x82100201}
OP_AES.update(CFB=0x82100301, OFB=0x82100401)
OP_GCM_ENC = 0x8210090D
OP_GCM_DEC_ICV = 0x8210090E
OP_HASH = {"md5": 0x8440000D, "sha1": 0x8441000D, "sha224": 0x8442000D}
OP_HASH.update(sha256=0x8443000D, sha384=0x8444000D, sha512=0x8445000D)
OP_HMAC_BIT = 0x10
OP_RNG_INSTANTIATE_SH0 = 0x82500004
OP_RNG_INSTANTIATE_SH1 = 0x82500014
OP_RNG_SK = 0x82501000
OP_RNG_GENERATE = 0x82500000
OP_MODEXP = 0x81800006
OP_RSA_ENC = 0x80180000
OP_RSA_DEC = 0x80190000
JUMP_WAIT_C1_NEXT = 0xA2000001
JUMP_HALT = 0xA2800000
JUMP_HALT_USER = 0xA0C00000

AES_CHA_ICV = status.ccb(status.CHA_AES, status.ERR_ICVCHK)


class Bench:
    """A part, its DMA memory and RNG4; writes descriptors and runs them through run_job."""

    def __init__(self, part: str = "t2080", *, long_pointers: bool = False) -> None:
        self.part = PARTS[part]
        self.mem = DmaMemory()
        self.rng = Rng4(seed=b"deco tests")
        self.long_pointers = long_pointers

    def buf(self, data: bytes | int) -> int:
        """A DMA buffer holding ``data`` (or that many zero bytes)."""
        size = data if isinstance(data, int) else len(data)
        addr = self.mem.alloc(max(size, 1))
        if not isinstance(data, int):
            self.mem.write(addr, data)
        return addr

    def read(self, addr: int, n: int) -> bytes:
        return self.mem.read(addr, n)

    def desc(self, *body: int, pdb: tuple[int, ...] = ()) -> int:
        start = 1 + len(pdb) if pdb else 0
        words = [HDR | (start << 16) | (1 + len(pdb) + len(body)), *pdb, *body]
        order = self.part.byteorder
        return self.buf(b"".join(w.to_bytes(4, order) for w in words))

    def run(self, *body: int, pdb: tuple[int, ...] = ()) -> JobResult:
        return self.run_at(self.desc(*body, pdb=pdb))

    def run_at(self, addr: int) -> JobResult:
        ctx = JobContext(self.mem, self.part, self.rng, self.long_pointers)
        return run_job(addr, ctx)


def imm_words(data: bytes, order: str) -> list[int]:
    padded = data + b"\0" * (-len(data) % 4)
    return [int.from_bytes(padded[i : i + 4], order) for i in range(0, len(padded), 4)]


@pytest.fixture(params=["t2080", "imx7d"])
def bench(request: pytest.FixtureRequest) -> Bench:
    return Bench(request.param)


# ---------------------------------------------------------------------- AES block modes


def aes_job(
    b: Bench, mode: str, key: bytes, iv: bytes | None, data: bytes, encrypt: bool = True
) -> tuple[JobResult, bytes, bytes | None]:
    """The brief's CBC recipe (CTR: context offset 16; ECB: no LOAD/STORE)."""
    p_key, p_in, p_out = b.buf(key), b.buf(data), b.buf(len(data))
    op = OP_AES[mode] if encrypt else OP_AES[mode] & ~1
    n = len(data)
    words = [KEY_C1 | len(key), p_key]
    p_iv = None
    if iv is not None:
        p_iv = b.buf(iv)
        words += [LOAD_C1_CTX16 if mode == "CTR" else LOAD_C1_CTX, p_iv]
    words += [op, FIFO_LOAD_MSG_LAST1 | n, p_in, FIFO_STORE_MSG | n, p_out]
    if iv is not None:
        words += [STORE_C1_CTX16 if mode == "CTR" else STORE_C1_CTX, p_iv]
    result = b.run(*words)
    return result, b.read(p_out, n), None if p_iv is None else b.read(p_iv, 16)


def reference(mode: str, key: bytes, iv: bytes | None, data: bytes, encrypt: bool) -> bytes:
    m = {
        "CBC": lambda: modes.CBC(iv),
        "ECB": modes.ECB,
        "CTR": lambda: modes.CTR(iv),
        "CFB": lambda: CFB(iv),
        "OFB": lambda: OFB(iv),
    }[mode]()
    c = Cipher(algorithms.AES(key), m)
    ctx = c.encryptor() if encrypt else c.decryptor()
    return ctx.update(data) + ctx.finalize()


@pytest.mark.parametrize("keylen", [16, 24, 32])
def test_cbc_encrypt_and_next_iv(bench: Bench, keylen: int) -> None:
    key, iv, pt = os.urandom(keylen), os.urandom(16), os.urandom(80)
    result, ct, next_iv = aes_job(bench, "CBC", key, iv, pt)
    assert result.status == 0
    assert ct == reference("CBC", key, iv, pt, True)
    assert next_iv == ct[-16:]
    assert result.chas == ("AES",)


def test_cbc_decrypt_and_next_iv(bench: Bench) -> None:
    key, iv, ct = os.urandom(16), os.urandom(16), os.urandom(64)
    result, pt, next_iv = aes_job(bench, "CBC", key, iv, ct, encrypt=False)
    assert result.status == 0
    assert pt == reference("CBC", key, iv, ct, False)
    assert next_iv == ct[-16:]


def test_cbc_chains_across_jobs(bench: Bench) -> None:
    key, iv, pt = os.urandom(16), os.urandom(16), os.urandom(96)
    _, first, next_iv = aes_job(bench, "CBC", key, iv, pt[:48])
    _, second, _ = aes_job(bench, "CBC", key, next_iv, pt[48:])
    assert first + second == reference("CBC", key, iv, pt, True)


@pytest.mark.parametrize("n", [16, 37, 64])
def test_ctr_with_counter_at_offset_16(bench: Bench, n: int) -> None:
    key, ctr, pt = os.urandom(32), os.urandom(15) + b"\xff", os.urandom(n)
    result, ct, next_ctr = aes_job(bench, "CTR", key, ctr, pt)
    assert result.status == 0
    assert ct == reference("CTR", key, ctr, pt, True)
    blocks = -(-n // 16)
    assert next_ctr == ((int.from_bytes(ctr, "big") + blocks) % 2**128).to_bytes(16, "big")


def test_ecb_both_directions(bench: Bench) -> None:
    key, pt = os.urandom(24), os.urandom(48)
    result, ct, _ = aes_job(bench, "ECB", key, None, pt)
    assert (result.status, ct) == (0, reference("ECB", key, None, pt, True))
    result, back, _ = aes_job(bench, "ECB", key, None, ct, encrypt=False)
    assert (result.status, back) == (0, pt)


@pytest.mark.parametrize("mode", ["CFB", "OFB"])
@pytest.mark.parametrize("n", [32, 45])
def test_cfb_ofb(bench: Bench, mode: str, n: int) -> None:
    key, iv, pt = os.urandom(16), os.urandom(16), os.urandom(n)
    result, ct, _ = aes_job(bench, mode, key, iv, pt)
    assert (result.status, ct) == (0, reference(mode, key, iv, pt, True))
    result, back, _ = aes_job(bench, mode, key, iv, ct, encrypt=False)
    assert (result.status, back) == (0, pt)


@pytest.mark.parametrize("mode", ["ECB", "CBC", "CFB", "OFB", "CTR"])
def test_aes_nist_vectors(mode: str) -> None:
    b = Bench("t2080")
    records = aes_vectors(mode)
    # Every MMT record (multi-block) and every 7th single-block KAT record.
    chosen = [r for i, r in enumerate(records) if "MMT" in r["file"] or i % 7 == 0]
    assert chosen
    for r in chosen:
        encrypt = r["direction"] == "encrypt"
        src, want = (r["plaintext"], r["ciphertext"])[:: 1 if encrypt else -1]
        result, got, _ = aes_job(b, mode, r["key"], r["iv"], src, encrypt)
        assert result.status == 0, (r["file"], r["count"])
        assert got == want, (r["file"], r["count"])


# ---------------------------------------------------------------------- GCM


def gcm_words(
    b: Bench,
    key: bytes,
    iv: bytes,
    aad: bytes,
    data: bytes,
    *,
    tag: bytes | None = None,
) -> tuple[list[int], int, int]:
    """The brief's GCM recipe: encrypt when ``tag`` is None, else decrypt checking ``tag``."""
    n = len(data)
    p_out, p_tag = b.buf(n), b.buf(16)
    words = [KEY_C1 | len(key), b.buf(key)]
    words += [OP_GCM_ENC if tag is None else OP_GCM_DEC_ICV]
    words += [FIFO_LOAD_IV_FLUSH1 | len(iv), b.buf(iv)]
    words += [FIFO_LOAD_AAD_FLUSH1 | len(aad), b.buf(aad)]
    words += [FIFO_STORE_MSG | n, p_out]
    if tag is None:
        words += [FIFO_LOAD_MSG_LAST1 | n, b.buf(data), STORE_C1_CTX, p_tag]
    else:
        words += [FIFO_LOAD_MSG_FLUSH1 | n, b.buf(data), FIFO_LOAD_ICV_LAST1 | len(tag), b.buf(tag)]
    return words, p_out, p_tag


@pytest.mark.parametrize("n", [0, 16, 61])
def test_gcm_encrypt(bench: Bench, n: int) -> None:
    key, iv, aad, pt = os.urandom(16), os.urandom(12), os.urandom(20), os.urandom(n)
    words, p_out, p_tag = gcm_words(bench, key, iv, aad, pt)
    result = bench.run(*words)
    want = AESGCM(key).encrypt(iv, pt, aad)
    assert result.status == 0
    assert bench.read(p_out, n) + bench.read(p_tag, 16) == want


def test_gcm_decrypt_good_tag(bench: Bench) -> None:
    key, iv, aad, pt = os.urandom(32), os.urandom(12), b"header", os.urandom(50)
    sealed = AESGCM(key).encrypt(iv, pt, aad)
    words, p_out, _ = gcm_words(bench, key, iv, aad, sealed[:-16], tag=sealed[-16:])
    result = bench.run(*words)
    assert result.status == 0
    assert bench.read(p_out, len(pt)) == pt


def test_gcm_decrypt_bad_tag_writes_plaintext_then_fails(bench: Bench) -> None:
    key, iv, aad, pt = os.urandom(16), os.urandom(12), b"", os.urandom(40)
    sealed = AESGCM(key).encrypt(iv, pt, aad)
    bad = bytes([sealed[-16] ^ 1]) + sealed[-15:]
    words, p_out, _ = gcm_words(bench, key, iv, aad, sealed[:-16], tag=bad)
    result = bench.run(*words)
    icv_index = len(words) - 2 + 1  # the ICV FIFO LOAD (word 0 is the header)
    assert result.status == 0x2000001A | (icv_index << 8)
    assert status.Status(result.status).describe().startswith("CCB: AES: ICV check failed")
    assert bench.read(p_out, len(pt)) == pt  # the hardware's quirk: plaintext already out
    assert (p_out, len(pt)) in result.outputs


def test_gcm_truncated_tag(bench: Bench) -> None:
    key, iv, pt = os.urandom(16), os.urandom(12), os.urandom(20)
    sealed = AESGCM(key).encrypt(iv, pt, b"")
    words, _, _ = gcm_words(bench, key, iv, b"", sealed[:-16], tag=sealed[-16:-8])
    assert bench.run(*words).status == 0


def test_gcm_nist_vectors() -> None:
    b = Bench("t2080")
    # cryptography's GCM takes IVs of 8 to 128 bytes: the 1-byte IV sections are left out.
    records = [r for r in gcm_vectors(limit_per_section=2) if r["ivlen"] >= 64]
    assert len(records) > 1000
    for r in records:
        taglen = r["taglen"] // 8
        if r["direction"] == "encrypt":
            words, p_out, p_tag = gcm_words(b, r["key"], r["iv"], r["aad"], r["pt"])
            assert b.run(*words).status == 0
            assert b.read(p_out, len(r["ct"])) == r["ct"]
            assert b.read(p_tag, 16)[:taglen] == r["tag"]
        else:
            words, p_out, _ = gcm_words(b, r["key"], r["iv"], r["aad"], r["ct"], tag=r["tag"])
            result = b.run(*words)
            if r["fail"]:
                assert status.Status(result.status).code == 0x1A, r["count"]
            else:
                assert result.status == 0
                assert b.read(p_out, len(r["pt"])) == r["pt"]


def ccm_blocks(nonce: bytes, alen: int, plen: int, tlen: int) -> tuple[bytes, bytes]:
    """B0 and CTR0 as SP 800-38C formats them (what NXP's CCM drivers load into the context)."""
    q = 15 - len(nonce)
    flags = (0x40 if alen else 0) | ((tlen - 2) // 2) << 3 | (q - 1)
    return bytes([flags]) + nonce + plen.to_bytes(q, "big"), bytes([q - 1]) + nonce + bytes(q)


def ccm_words(
    b: Bench, key: bytes, nonce: bytes, aad: bytes, data: bytes, tlen: int, tag: bytes | None = None
) -> tuple[list[int], int, int]:
    """NXP's one-shot CCM descriptor (MCUXpresso templateAesCcm): B0 and CTR0 by immediate LOAD,
    the AAD with its 2-byte length in front, the message with LAST1, then the tag: STORE from
    context offset 32 (encrypt) or an ICV FIFO LOAD checked by the engine (decrypt)."""
    order = b.part.byteorder
    b0, ctr0 = ccm_blocks(nonce, len(aad), len(data), tlen)
    n = len(data)
    p_out, p_tag = b.buf(n), b.buf(tag if tag is not None else 16)
    op = 0x8210080D if tag is None else 0x8210080E
    words = [KEY_C1 | len(key), b.buf(key), 0x12A00010, *imm_words(b0, order)]
    words += [0x12A01010, *imm_words(ctr0, order), op]
    if aad:
        encoded = len(aad).to_bytes(2, "big") + aad
        words += [FIFO_LOAD_AAD_FLUSH1 | len(encoded), b.buf(encoded)]
    words += [0x22130000 | n, b.buf(data), FIFO_STORE_MSG | n, p_out]
    if tag is None:
        words += [0x52202000 | tlen, p_tag]
    else:
        words += [0x223B0000 | len(tag), p_tag]
    return words, p_out, p_tag


def test_ccm_nist_vectors() -> None:
    records = ccm_vectors()
    assert len(records) > 2000
    for part in ("t2080", "imx7d"):
        b = Bench(part)
        for r in records if part == "t2080" else records[::17]:
            tlen = r["tlen"]
            if r["direction"] == "encrypt":
                words, p_out, p_tag = ccm_words(b, r["key"], r["nonce"], r["aad"], r["pt"], tlen)
                assert b.run(*words).status == 0, r["count"]
                assert b.read(p_out, len(r["ct"])) == r["ct"]
                assert b.read(p_tag, tlen) == r["tag"]
                continue
            words, p_out, _ = ccm_words(b, r["key"], r["nonce"], r["aad"], r["ct"], tlen, r["tag"])
            result = b.run(*words)
            if r["fail"]:
                assert result.status == status.ccb(
                    status.CHA_AES, status.ERR_ICVCHK, len(words) - 1
                )
            else:
                assert result.status == 0, r["count"]
                assert b.read(p_out, len(r["pt"])) == r["pt"]


def test_ccm_context_after_the_job(bench: Bench) -> None:
    key, nonce, aad, pt = os.urandom(16), os.urandom(13), b"header", os.urandom(40)
    sealed = AESCCM(key, tag_length=16).encrypt(nonce, pt, aad)
    for encrypt in (True, False):
        tag = None if encrypt else sealed[-16:]
        data = pt if encrypt else sealed[:-16]
        words, _, _ = ccm_words(bench, key, nonce, aad, data, 16, tag)
        p_ctx = bench.buf(48)
        assert bench.run(*words, 0x52200030, p_ctx).status == 0
        ctx = bench.read(p_ctx, 48)
        # OP-TEE reads the tag from offset 32 after an encrypt, and XORs offsets 0 and 32 after
        # a decrypt: offset 0 is the CBC-MAC, offset 32 E(CTR0) or the encrypted tag.
        enc_tag = (
            ctx[32:48] if encrypt else bytes(x ^ y for x, y in zip(ctx, ctx[32:], strict=False))
        )
        assert enc_tag[:16] == sealed[-16:]


def test_ccm_bad_tag_writes_plaintext_then_fails(bench: Bench) -> None:
    key, nonce, pt = os.urandom(32), os.urandom(7), os.urandom(33)
    sealed = AESCCM(key, tag_length=8).encrypt(nonce, pt, None)
    bad = bytes([sealed[-1] ^ 1])
    words, p_out, _ = ccm_words(bench, key, nonce, b"", sealed[:-8], 8, sealed[-8:-1] + bad)
    result = bench.run(*words)
    assert result.status == status.ccb(status.CHA_AES, status.ERR_ICVCHK, len(words) - 1)
    assert bench.read(p_out, len(pt)) == pt


# ---------------------------------------------------------------------- hashes and HMAC


@pytest.mark.parametrize("name", ["md5", "sha1", "sha224", "sha256", "sha384", "sha512"])
@pytest.mark.parametrize("n", [3, 200])
def test_hash(bench: Bench, name: str, n: int) -> None:
    msg = os.urandom(n)
    size = hashlib.new(name).digest_size
    p_digest = bench.buf(size)
    result = bench.run(
        OP_HASH[name], FIFO_LOAD_MSG_LAST2 | n, bench.buf(msg), STORE_C2_CTX | size, p_digest
    )
    assert result.status == 0
    assert bench.read(p_digest, size) == hashlib.new(name, msg).digest()
    assert result.chas == ("MD",)
    assert result.outputs == ((p_digest, size),)


@pytest.mark.parametrize("name", ["sha1", "sha224", "sha256", "sha384", "sha512"])
def test_hash_empty_message_immediate(bench: Bench, name: str) -> None:
    size = hashlib.new(name).digest_size
    p_digest = bench.buf(size)
    result = bench.run(OP_HASH[name], FIFO_LOAD_MSG_LAST2_IMM, STORE_C2_CTX | size, p_digest)
    assert result.status == 0
    assert bench.read(p_digest, size) == hashlib.new(name, b"").digest()


def test_hash_immediate_message(bench: Bench) -> None:
    msg = b"abc"
    words = imm_words(msg, bench.part.byteorder)
    p_digest = bench.buf(32)
    result = bench.run(
        OP_HASH["sha256"], FIFO_LOAD_MSG_LAST2_IMM | len(msg), *words, STORE_C2_CTX | 32, p_digest
    )
    assert result.status == 0
    assert bench.read(p_digest, 32) == hashlib.sha256(msg).digest()


@pytest.mark.parametrize("name", ["sha1", "sha256", "sha512"])
@pytest.mark.parametrize("keylen", [20, 200])
def test_hmac_raw_key(bench: Bench, name: str, keylen: int) -> None:
    key, msg = os.urandom(keylen), os.urandom(100)
    size = hashlib.new(name).digest_size
    p_mac = bench.buf(size)
    result = bench.run(
        KEY_C2 | keylen,
        bench.buf(key),
        OP_HASH[name] | OP_HMAC_BIT,
        FIFO_LOAD_MSG_LAST2 | len(msg),
        bench.buf(msg),
        STORE_C2_CTX | size,
        p_mac,
    )
    assert result.status == 0
    assert bench.read(p_mac, size) == hmac.new(key, msg, name).digest()


FIFO_LOAD_MSG2 = 0x24100000  # class-2 message, more to come
FIFO_LOAD_ICV_LAST2 = 0x243C0000


@pytest.mark.parametrize("name", ["sha1", "sha256", "sha512"])
@pytest.mark.parametrize("flip", [None, 0, -1], ids=["right", "first-byte", "last-byte"])
def test_hmac_icv_check_passes_the_right_tag_and_fails_any_altered_byte(
    bench: Bench, name: str, flip: int | None
) -> None:
    """OPERATION with ICV on (decrypt): the MDHA compares its MAC with the ICV loaded after the
    message; a mismatch anywhere in it is CCB MD ICV, pointing at the ICV FIFO LOAD."""
    key, msg = os.urandom(32), os.urandom(100)
    tag = bytearray(hmac.new(key, msg, name).digest())
    if flip is not None:
        tag[flip] ^= 0x01
    op_check = ((OP_HASH[name] | OP_HMAC_BIT) & ~1) | 2  # decrypt, ICV on
    result = bench.run(
        KEY_C2 | len(key),
        bench.buf(key),
        op_check,
        FIFO_LOAD_MSG2 | len(msg),
        bench.buf(msg),
        FIFO_LOAD_ICV_LAST2 | len(tag),
        bench.buf(bytes(tag)),
    )
    if flip is None:
        assert result.status == 0
    else:
        assert result.status == status.ccb(status.CHA_MD, status.ERR_ICVCHK, 6)


def test_hash_with_ext_length_over_64k(bench: Bench) -> None:
    msg = os.urandom(100_000)  # more than a 16-bit FIFO LOAD length can say
    p_digest = bench.buf(32)
    result = bench.run(
        OP_HASH["sha256"],
        FIFO_LOAD_MSG_LAST2 | FIFO_LOAD_EXT,
        bench.buf(msg),
        len(msg),
        STORE_C2_CTX | 32,
        p_digest,
    )
    assert result.status == 0
    assert bench.read(p_digest, 32) == hashlib.sha256(msg).digest()


# ---------------------------------------------------------------------- RNG

RNG_INSTANTIATE = [
    OP_RNG_INSTANTIATE_SH0,
    JUMP_WAIT_C1_NEXT,
    LOAD_CLRW_IMM,
    0x00000001,
    OP_RNG_SK,
    JUMP_HALT,
]


def test_rng_instantiate_then_generate(bench: Bench) -> None:
    assert bench.rng.rdsta() == 0
    result = bench.run(*RNG_INSTANTIATE)
    assert result.status == 0  # a HALT with a zero low byte reports 0 (the model's choice)
    assert result.chas == ("RNG",)
    assert bench.rng.rdsta() == 0x40000001  # IF0, and SKVN: the recipe ends with SK
    p1, p2 = bench.buf(32), bench.buf(32)
    assert bench.run(OP_RNG_GENERATE, FIFO_STORE_RNG | 32, p1).status == 0
    assert bench.run(OP_RNG_GENERATE, FIFO_STORE_RNG | 32, p2).status == 0
    first, second = bench.read(p1, 32), bench.read(p2, 32)
    assert first != bytes(32) and second != bytes(32) and first != second


def test_rng_instantiate_handle_1(bench: Bench) -> None:
    assert bench.run(OP_RNG_INSTANTIATE_SH1).status == 0
    assert bench.rng.rdsta() == 0x2


def test_generate_before_instantiate_is_0x54(bench: Bench) -> None:
    p = bench.buf(16)
    result = bench.run(OP_RNG_GENERATE, FIFO_STORE_RNG | 16, p)
    assert result.status == status.ccb(status.CHA_RNG, 4, 1)
    assert result.status & 0xFF == 0x54
    assert bench.read(p, 16) == bytes(16)
    assert result.outputs == ()


def test_second_instantiate_without_clear_written_refused(bench: Bench) -> None:
    words = [w for w in RNG_INSTANTIATE if w not in (LOAD_CLRW_IMM, 0x00000001)]
    result = bench.run(*words)
    assert result.status == status.ccb(status.CHA_RNG, 0xD, 3)  # class 1 CHA not reset


def test_instantiate_twice_and_injected_failure() -> None:
    b = Bench()
    b.rng.fail_next_instantiate = True
    assert b.run(*RNG_INSTANTIATE).status == status.ccb(status.CHA_RNG, 3, 1)
    assert b.rng.rdsta() == 0
    assert b.run(*RNG_INSTANTIATE).status == 0
    assert b.run(*RNG_INSTANTIATE).status == status.ccb(status.CHA_RNG, 3, 1)


def test_seeded_rng_is_repeatable() -> None:
    one, two = Rng4(seed=b"x"), Rng4(seed=b"x")
    for r in (one, two):
        assert r.instantiate(0, index=1) == 0
    assert one.generate(40) == two.generate(40)
    one.reset()
    assert one.rdsta() == 0 and not one.is_instantiated(0)


# ---------------------------------------------------------------------- halts and jumps


def test_user_halt_with_a_status_byte(bench: Bench) -> None:
    result = bench.run(JUMP_HALT_USER | 0x42, OP_RNG_GENERATE)
    assert result.status == 0x30000142


def test_local_jump_skips_commands(bench: Bench) -> None:
    # Jump over a generate that would fail (RNG not instantiated): 1 + 2 = the HALT.
    result = bench.run(0xA0000002, OP_RNG_GENERATE, JUMP_HALT)
    assert result.status == 0


def test_jump_loop_hits_the_watchdog(bench: Bench) -> None:
    result = bench.run(0xA0000000)  # offset 0: jumps to itself
    assert result.status == status.deco(0x1C, 1)


def test_loop_over_an_expensive_command_stops_on_its_second_pass(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cryptoffload.caam.model import operations

    calls = []
    real = operations.run_pkha
    monkeypatch.setattr(operations, "run_pkha", lambda *a, **k: calls.append(1) or real(*a, **k))
    n = (1 << 4095) | 1  # 4096-bit odd modulus: one EXPO is slow in Python
    result = bench.run(
        KEY_PKHA_E | 512,
        bench.buf((n - 2).to_bytes(512, "big")),
        FIFO_LOAD_PK_A | 512,
        bench.buf((n - 3).to_bytes(512, "big")),
        FIFO_LOAD_PK_N | 512,
        bench.buf(n.to_bytes(512, "big")),
        OP_MODEXP,
        0xA00000FF,  # jump back 1 word, to the EXPO, forever
    )
    assert result.status == status.deco(0x1C, 8)
    assert len(calls) == 2  # not MAX_STEPS / 2


# ---------------------------------------------------------------------- PKHA and protocols


def test_modexp(bench: Bench) -> None:
    n = rsa.generate_private_key(65537, 1024).public_key().public_numbers().n
    a, e = 0x1234567 * 7919, 65537
    nb = n.to_bytes(128, "big")
    p_out = bench.buf(128)
    result = bench.run(
        KEY_PKHA_E | 3,
        bench.buf(e.to_bytes(3, "big")),
        FIFO_LOAD_PK_A | 8,
        bench.buf(a.to_bytes(8, "big")),
        FIFO_LOAD_PK_N | 128,
        bench.buf(nb),
        OP_MODEXP,
        FIFO_STORE_PKHA_B | 128,
        p_out,
    )
    assert result.status == 0
    assert bench.read(p_out, 128) == pow(a, e, n).to_bytes(128, "big")
    assert result.chas == ("PK",)


def _rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(65537, 1024)


def test_rsa_encrypt_and_decrypt_form1(bench: Bench) -> None:
    key = _rsa_key()
    pub = key.public_key().public_numbers()
    priv = key.private_numbers()
    n = pub.n.to_bytes(128, "big")
    e = pub.e.to_bytes(3, "big")
    d = priv.d.to_bytes(128, "big")
    msg = int.from_bytes(os.urandom(100), "big").to_bytes(128, "big")
    p_f, p_g, p_n, p_e = bench.buf(msg), bench.buf(128), bench.buf(n), bench.buf(e)
    pdb = ((3 << 12) | 128, p_f, p_g, p_n, p_e, 128)
    assert bench.run(OP_RSA_ENC, pdb=pdb).status == 0
    g = bench.read(p_g, 128)
    assert g == pow(int.from_bytes(msg, "big"), pub.e, pub.n).to_bytes(128, "big")
    p_back, p_d = bench.buf(128), bench.buf(d)
    pdb = ((128 << 12) | 128, p_g, p_back, p_n, p_d)
    result = bench.run(OP_RSA_DEC, pdb=pdb)
    assert result.status == 0
    assert bench.read(p_back, 128) == msg
    assert (p_back, 128) in result.outputs


P256_P = 2**256 - 2**224 + 2**192 + 2**96 - 1
P256_B = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B
P256_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
P256_GX = 0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296
P256_GY = 0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5
OP_ECDSA_SIGN = 0x80150002


def _b32(*values: int) -> bytes:
    return b"".join(v.to_bytes(32, "big") for v in values)


def ecdsa_sign_job(b: Bench, key: ec.EllipticCurvePrivateKey, digest: bytes) -> tuple[int, bytes]:
    """ECDSA sign on P-256 with explicit domain parameters (the QorIQ-safe form)."""
    s = key.private_numbers().private_value
    p_c, p_d = b.buf(32), b.buf(32)
    pdb = (
        (32 << 7) | 32,
        b.buf(_b32(P256_P)),
        b.buf(_b32(P256_N)),
        b.buf(_b32(P256_GX, P256_GY)),
        b.buf(_b32(s)),
        b.buf(digest),
        p_c,
        p_d,
        b.buf(_b32(P256_P - 3, P256_B)),
    )
    result = b.run(OP_ECDSA_SIGN, pdb=pdb)
    return result.status, b.read(p_c, 32) + b.read(p_d, 32)


def test_ecdsa_sign_explicit_domain(bench: Bench) -> None:
    assert bench.run(*RNG_INSTANTIATE).status == 0
    key = ec.generate_private_key(ec.SECP256R1())
    digest = hashlib.sha256(b"sign me").digest()
    result, sig = ecdsa_sign_job(bench, key, digest)
    assert result == 0
    der = utils.encode_dss_signature(
        int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big")
    )
    key.public_key().verify(der, digest, ec.ECDSA(utils.Prehashed(hashes.SHA256())))


def test_ecdsa_sign_before_rng_instantiation_is_0x54(bench: Bench) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    result, _ = ecdsa_sign_job(bench, key, bytes(32))
    assert result & 0xF00000FF == 0x20000054


@pytest.mark.parametrize(("part", "want"), [("t2080", 0x82), ("imx7d", 0)])
def test_builtin_curve_selector_quirk(part: str, want: int) -> None:
    b = Bench(part)
    assert b.run(*RNG_INSTANTIATE).status == 0
    key = ec.generate_private_key(ec.SECP256R1())
    s = key.private_numbers().private_value
    p_c, p_d = b.buf(32), b.buf(32)
    pd_p256 = (1 << 22) | (2 << 7)
    pdb = (pd_p256, b.buf(_b32(s)), b.buf(bytes(32)), p_c, p_d)
    result = b.run(OP_ECDSA_SIGN, pdb=pdb)
    assert result.status & 0xFF == want
    if want:
        assert result.status == status.deco(0x82, 1 + len(pdb))


# ---------------------------------------------------------------------- byte order


def test_same_job_little_endian_on_imx() -> None:
    key, iv, pt = os.urandom(16), os.urandom(16), os.urandom(32)
    outs = []
    for part in ("t2080", "imx7d"):
        b = Bench(part)
        result, ct, _ = aes_job(b, "CBC", key, iv, pt)
        assert result.status == 0
        outs.append(ct)
    assert outs[0] == outs[1] == reference("CBC", key, iv, pt, True)


def test_big_endian_descriptor_on_little_endian_part_is_a_header_error() -> None:
    b = Bench("imx7d")
    words = [HDR | 2, OP_RNG_GENERATE]
    addr = b.buf(b"".join(w.to_bytes(4, "big") for w in words))
    assert b.run_at(addr).status == status.deco(status.DECO_HDRLEN, 0)


def test_long_pointers() -> None:
    b = Bench(long_pointers=True)
    msg = b"long pointers"
    p_msg, p_digest = b.buf(msg), b.buf(32)
    result = b.run(
        OP_HASH["sha256"],
        FIFO_LOAD_MSG_LAST2 | len(msg),
        p_msg >> 32,
        p_msg & 0xFFFFFFFF,
        STORE_C2_CTX | 32,
        p_digest >> 32,
        p_digest & 0xFFFFFFFF,
    )
    assert result.status == 0
    assert b.read(p_digest, 32) == hashlib.sha256(msg).digest()


# ---------------------------------------------------------------------- error paths


def test_bad_descriptor_address() -> None:
    b = Bench()
    result = b.run_at(0x10)
    assert result.status == status.job_ring(status.JR_BAD_DESC_ADDR)
    assert result == JobResult(result.status, (), ())


def test_header_without_one_bit() -> None:
    b = Bench()
    addr = b.buf((0xB0000002).to_bytes(4, "big") + OP_RNG_GENERATE.to_bytes(4, "big"))
    assert b.run_at(addr).status == status.deco(status.DECO_HDRLEN, 0)


def test_command_past_header_length() -> None:
    b = Bench()
    # A KEY whose pointer word lies past the header's length (2 words: header + KEY).
    words = [HDR | 2, KEY_C1 | 16, b.buf(16)]
    addr = b.buf(b"".join(w.to_bytes(4, "big") for w in words))
    assert b.run_at(addr).status == status.deco(status.DECO_HDRLEN, 1)


def test_bad_dma_pointer() -> None:
    b = Bench()
    result = b.run(OP_HASH["sha256"], FIFO_LOAD_MSG_LAST2 | 16, 0x100, STORE_C2_CTX | 32, b.buf(32))
    assert result.status == status.deco(status.DECO_DMA, 2)


def test_bad_output_pointer() -> None:
    b = Bench()
    result = b.run(OP_HASH["sha256"], FIFO_LOAD_MSG_LAST2_IMM, STORE_C2_CTX | 32, 0x100)
    assert result.status == status.deco(status.DECO_DMA, 3)


@pytest.mark.parametrize("keylen", [8, 20, 33])
def test_aes_key_size(keylen: int) -> None:
    b = Bench()
    result, _, _ = aes_job(b, "CBC", os.urandom(keylen), bytes(16), bytes(16))
    assert result.status == status.ccb(status.CHA_AES, status.ERR_KEYSIZ, 5)


@pytest.mark.parametrize("mode", ["CBC", "ECB"])
def test_aes_data_size(mode: str) -> None:
    b = Bench()
    iv = None if mode == "ECB" else bytes(16)
    result, _, _ = aes_job(b, mode, bytes(16), iv, bytes(20))
    index = 4 if mode == "ECB" else 6  # the FIFO LOAD ending the stream
    assert result.status == status.ccb(status.CHA_AES, status.ERR_DATASIZ, index)


def test_unknown_algorithm() -> None:
    b = Bench()
    assert b.run(0x82300001).status == status.ccb(0, status.ERR_INVCHA, 1)


def test_unmodelled_aes_mode() -> None:
    b = Bench()
    result = b.run(KEY_C1 | 16, b.buf(16), 0x82100501)  # XTS
    assert result.status == status.ccb(status.CHA_AES, status.ERR_MODE, 3)


def test_unfilled_output_store_stalls() -> None:
    b = Bench()
    result = b.run(KEY_C1 | 16, b.buf(16), OP_AES["ECB"], FIFO_STORE_MSG | 16, b.buf(16))
    assert result.status == status.deco(0x1C, 4)


@pytest.mark.parametrize("store", [FIFO_STORE_RNG, FIFO_STORE_PKHA_B])
def test_a_4gib_ext_store_to_a_small_buffer_fails_before_making_the_data(store: int) -> None:
    # The destination is checked first: the model used to generate (or zero-pad) 4 GiB, then
    # fault on the write.
    b = Bench()
    assert b.rng.instantiate(0, index=0) == 0
    tracemalloc.start()
    try:
        result = b.run(store | FIFO_LOAD_EXT, b.buf(64), 0xFFFFFFFF)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.status == status.deco(status.DECO_DMA, 1)
    assert peak < 1 << 20


def test_move_from_an_input_fifo_is_not_modelled() -> None:
    b = Bench()
    assert b.run(0x78800000).status == status.deco(0x0C, 1)  # MOVE INFIFO -> CLASS1CTX


# ---------------------------------------------------------------------- sequences

SEQ_IN_PTR = 0xF0000000
SEQ_OUT_PTR = 0xF8000000
SEQ_FIFO_LOAD_MSG = 0x2A100000
LAST1 = 0x20000
SEQ_FIFO_STORE_MSG = 0x68300000


def test_cbc_through_sequence_pointers(bench: Bench) -> None:
    key, iv, pt = os.urandom(16), os.urandom(16), os.urandom(64)
    p_out, p_iv = bench.buf(64), bench.buf(iv)
    result = bench.run(
        SEQ_OUT_PTR | 64,
        p_out,
        SEQ_IN_PTR | 64,
        bench.buf(pt),
        KEY_C1 | 16,
        bench.buf(key),
        LOAD_C1_CTX,
        p_iv,
        OP_AES["CBC"],
        SEQ_FIFO_LOAD_MSG | 40,  # no LAST1: the stream goes on
        SEQ_FIFO_STORE_MSG | 32,
        SEQ_FIFO_LOAD_MSG | LAST1 | 24,
        SEQ_FIFO_STORE_MSG | 32,
        STORE_C1_CTX,
        p_iv,
    )
    assert result.status == 0
    want = reference("CBC", key, iv, pt, True)
    assert bench.read(p_out, 64) == want
    assert bench.read(p_iv, 16) == want[-16:]
    assert result.outputs == ((p_out, 64), (p_iv, 16))


def test_sequence_overrun(bench: Bench) -> None:
    result = bench.run(OP_HASH["sha256"], SEQ_IN_PTR | 8, bench.buf(8), 0x2C140010)
    assert result.status == status.deco(0x10, 4)


# ---------------------------------------------------------------------- hashes across jobs

HASH_NAMES = ["md5", "sha1", "sha224", "sha256", "sha384", "sha512"]
CONTEXT_SIZE = {"md5": 24, "sha1": 28, "sha224": 40, "sha256": 40, "sha384": 72, "sha512": 72}
# Initial chaining values (RFC 1321, FIPS 180-4 5.3), as the context holds them: MD5 words
# little-endian, SHA words big-endian; SHA-224 and SHA-384 keep all eight words.
INITIAL_STATE = {
    "md5": bytes.fromhex("0123456789abcdeffedcba9876543210"),
    "sha1": bytes.fromhex("67452301efcdab8998badcfe10325476c3d2e1f0"),
    "sha224": bytes.fromhex("c1059ed8367cd5073070dd17f70e5939ffc00b316858151164f98fa7befa4fa4"),
    "sha256": bytes.fromhex("6a09e667bb67ae853c6ef372a54ff53a510e527f9b05688c1f83d9ab5be0cd19"),
    "sha384": bytes.fromhex(
        "cbbb9d5dc1059ed8629a292a367cd5079159015a3070dd17152fecd8f70e5939"
        "67332667ffc00b318eb44a8768581511db0c2e0d64f98fa747b5481dbefa4fa4"
    ),
    "sha512": bytes.fromhex(
        "6a09e667f3bcc908bb67ae8584caa73b3c6ef372fe94f82ba54ff53a5f1d36f1"
        "510e527fade682d19b05688c2b3e6c1f1f83d9abfb41bd6b5be0cd19137e2179"
    ),
}
MD_DATASIZ = status.ccb(status.CHA_MD, status.ERR_DATASIZ)


def block_size(name: str) -> int:
    return hashlib.new(name).block_size


def built(b: Bench, builder: DescriptorBuilder) -> JobResult:
    """Run a DescriptorBuilder's descriptor on the bench."""
    return b.run_at(b.buf(to_bytes(builder.words(), b.part.byteorder)))


def hash_job(
    b: Bench,
    name: str,
    state: str,
    msg: bytes,
    *,
    ctx_in: int | None = None,
    ctx_out: int | None = None,
    key: bytes | None = None,
    aai: str = "HASH",
) -> DescriptorBuilder:
    """Linux caamhash's shape: [KEY] [LOAD class-2 context] OPERATION FIFO LOAD(LAST2) STORE."""
    size = CONTEXT_SIZE[name] if state in ("init", "update") else hashlib.new(name).digest_size
    d = DescriptorBuilder(byteorder=b.part.byteorder)
    if key is not None:
        d.key(2, pointer=b.buf(key), length=len(key))
    if ctx_in is not None:
        d.load(2, "context", length=CONTEXT_SIZE[name], pointer=ctx_in)
    d.operation(2, name.upper(), aai=aai, state=state, encrypt=True)
    if msg:
        d.fifo_load(2, "MSG", pointer=b.buf(msg), length=len(msg), last2=True)
    else:
        d.fifo_load(2, "MSG", data=b"", last2=True)
    if ctx_out is not None:
        d.store(2, "context", length=size, pointer=ctx_out)
    return d


def three_jobs(b: Bench, name: str, parts: tuple[bytes, bytes, bytes]) -> tuple[bytes, bytes]:
    """INIT, UPDATE, FINALIZE over ``parts``: (digest, the context after INIT)."""
    p_ctx, p_digest = b.buf(CONTEXT_SIZE[name]), b.buf(64)
    first, second, last = parts
    assert built(b, hash_job(b, name, "init", first, ctx_out=p_ctx)).status == 0
    after_init = b.read(p_ctx, CONTEXT_SIZE[name])
    job = hash_job(b, name, "update", second, ctx_in=p_ctx, ctx_out=p_ctx)
    assert built(b, job).status == 0
    job = hash_job(b, name, "finalize", last, ctx_in=p_ctx, ctx_out=p_digest)
    assert built(b, job).status == 0
    return b.read(p_digest, hashlib.new(name).digest_size), after_init


@pytest.mark.parametrize("name", HASH_NAMES)
def test_hash_split_across_init_update_finalize(bench: Bench, name: str) -> None:
    bs = block_size(name)
    parts = (os.urandom(2 * bs), os.urandom(3 * bs), os.urandom(bs + 37))
    digest, after_init = three_jobs(bench, name, parts)
    assert digest == hashlib.new(name, b"".join(parts)).digest()
    state_size = CONTEXT_SIZE[name] - 8
    assert after_init[state_size:] == (2 * bs).to_bytes(8, "big")  # the byte count


@pytest.mark.parametrize("name", HASH_NAMES)
def test_init_on_nothing_stores_the_initial_values_and_a_zero_count(name: str) -> None:
    b = Bench("t2080")
    p_ctx = b.buf(CONTEXT_SIZE[name])
    result = built(b, hash_job(b, name, "init", b"", ctx_out=p_ctx))
    assert result.status == 0
    assert result.outputs == ((p_ctx, CONTEXT_SIZE[name]),)
    assert b.read(p_ctx, CONTEXT_SIZE[name]) == INITIAL_STATE[name] + bytes(8)


@pytest.mark.parametrize("name", HASH_NAMES)
def test_context_round_trip_through_memory_into_another_part(name: str) -> None:
    bs = block_size(name)
    head, tail = os.urandom(4 * bs), os.urandom(bs - 1)
    qoriq, imx = Bench("t2080"), Bench("imx7d")
    p_ctx = qoriq.buf(CONTEXT_SIZE[name])
    assert built(qoriq, hash_job(qoriq, name, "init", head, ctx_out=p_ctx)).status == 0
    saved = qoriq.read(p_ctx, CONTEXT_SIZE[name])
    # The saved context is the state after `head`, not a digest of it.
    assert saved[: hashlib.new(name).digest_size] != hashlib.new(name, head).digest()
    p_in, p_digest = imx.buf(saved), imx.buf(64)
    job = hash_job(imx, name, "finalize", tail, ctx_in=p_in, ctx_out=p_digest)
    assert built(imx, job).status == 0
    assert (
        imx.read(p_digest, hashlib.new(name).digest_size) == hashlib.new(name, head + tail).digest()
    )
    # A different saved context gives a different answer: the LOAD is what FINALIZE resumes.
    other = bytearray(saved)
    other[0] ^= 1
    p_other = imx.buf(bytes(other))
    job = hash_job(imx, name, "finalize", tail, ctx_in=p_other, ctx_out=p_digest)
    assert built(imx, job).status == 0
    assert (
        imx.read(p_digest, hashlib.new(name).digest_size) != hashlib.new(name, head + tail).digest()
    )


@pytest.mark.parametrize("name", HASH_NAMES)
def test_empty_finalize(bench: Bench, name: str) -> None:
    block = os.urandom(block_size(name))
    digest, _ = three_jobs(bench, name, (block, b"", b""))
    assert digest == hashlib.new(name, block).digest()
    digest, _ = three_jobs(bench, name, (b"", b"", b""))
    assert digest == hashlib.new(name, b"").digest()


@pytest.mark.parametrize("name", ["md5", "sha256", "sha512"])
def test_non_block_multiple_init_or_update_is_a_data_size_error(bench: Bench, name: str) -> None:
    bs = block_size(name)
    p_ctx = bench.buf(CONTEXT_SIZE[name])
    # header 0, OPERATION 1, FIFO LOAD 2-3
    result = built(bench, hash_job(bench, name, "init", bytes(bs + 1), ctx_out=p_ctx))
    assert result.status == 0x20000242 == MD_DATASIZ | 2 << 8
    assert built(bench, hash_job(bench, name, "init", bytes(bs), ctx_out=p_ctx)).status == 0
    # header 0, LOAD 1-2, OPERATION 3, FIFO LOAD 4-5
    job = hash_job(bench, name, "update", bytes(bs - 1), ctx_in=p_ctx, ctx_out=p_ctx)
    assert built(bench, job).status == 0x20000442 == MD_DATASIZ | 4 << 8


def test_update_pieces_adding_up_to_blocks_in_one_job_are_fine(bench: Bench) -> None:
    # The block rule is about the whole non-final piece (up to LAST2), not each FIFO LOAD.
    msg = os.urandom(128)
    p_ctx, p_digest = bench.buf(40), bench.buf(32)
    d = DescriptorBuilder(byteorder=bench.part.byteorder).operation(
        2, "SHA256", state="init", encrypt=True
    )
    d.fifo_load(2, "MSG", pointer=bench.buf(msg[:10]), length=10)
    d.fifo_load(2, "MSG", pointer=bench.buf(msg[10:]), length=118, last2=True)
    d.store(2, "context", length=40, pointer=p_ctx)
    assert built(bench, d).status == 0
    job = hash_job(bench, "sha256", "finalize", b"x", ctx_in=p_ctx, ctx_out=p_digest)
    assert built(bench, job).status == 0
    assert bench.read(p_digest, 32) == hashlib.sha256(msg + b"x").digest()


@pytest.mark.parametrize("name", ["md5", "sha1", "sha256", "sha384", "sha512"])
@pytest.mark.parametrize("keylen", [20, 200])
def test_hmac_across_init_update_finalize(bench: Bench, name: str, keylen: int) -> None:
    # The natural model of multi-job HMAC: key at INIT and FINALIZE, none at UPDATE.
    key, bs = os.urandom(keylen), block_size(name)
    parts = os.urandom(bs), os.urandom(2 * bs), os.urandom(5)
    size = hashlib.new(name).digest_size
    p_ctx, p_mac = bench.buf(CONTEXT_SIZE[name]), bench.buf(size)
    jobs = [
        hash_job(bench, name, "init", parts[0], ctx_out=p_ctx, key=key, aai="HMAC"),
        hash_job(bench, name, "update", parts[1], ctx_in=p_ctx, ctx_out=p_ctx, aai="HMAC"),
        hash_job(
            bench, name, "finalize", parts[2], ctx_in=p_ctx, ctx_out=p_mac, key=key, aai="HMAC"
        ),
    ]
    for job in jobs:
        assert built(bench, job).status == 0
    assert bench.read(p_mac, size) == hmac.new(key, b"".join(parts), name).digest()


def test_hash_across_jobs_with_sequences_like_caamhash(bench: Bench) -> None:
    # caamhash puts the saved context in front of the data in one input sequence and SEQ LOADs it.
    head, more, tail = os.urandom(64), os.urandom(128), os.urandom(3)
    p_ctx = bench.buf(40)
    assert built(bench, hash_job(bench, "sha256", "init", head, ctx_out=p_ctx)).status == 0
    for state, data in (("update", more), ("finalize", tail)):
        out = 40 if state == "update" else 32
        p_in, p_out = bench.buf(bench.read(p_ctx, 40) + data), bench.buf(out)
        d = DescriptorBuilder(byteorder=bench.part.byteorder)
        d.seq_out_ptr(pointer=p_out, length=out).seq_in_ptr(pointer=p_in, length=40 + len(data))
        d.load(2, "context", length=40, seq=True)
        d.operation(2, "SHA256", state=state, encrypt=True)
        d.fifo_load(2, "MSG", length=len(data), last2=True, seq=True)
        d.store(2, "context", length=out, seq=True)
        assert built(bench, d).status == 0
        bench.mem.write(p_ctx, bench.read(p_out, out))
    assert bench.read(p_ctx, 32) == hashlib.sha256(head + more + tail).digest()


def test_hash_across_jobs_through_the_imx7d_job_ring() -> None:
    model = CaamModel("imx7d")
    order = regs.discover(model.read32).byteorder
    assert order == "little"
    base, mem = regs.jr_base(0), model.memory
    inring, outring = mem.alloc(4), mem.alloc(8)
    for reg, value in ((regs.IRBAR_LO, inring), (regs.ORBAR_LO, outring), (regs.IRSR, 1),
                       (regs.ORSR, 1), (regs.JRCFGR_LS, regs.JRCFGR_IMSK)):  # fmt: skip
        model.write32(base + reg, value)

    def buf(data: bytes) -> int:
        addr = mem.alloc(max(len(data), 1))
        mem.write(addr, data)
        return addr

    def run(d: DescriptorBuilder) -> int:
        addr = buf(to_bytes(d.words(), order))
        mem.write(inring, addr.to_bytes(4, order))
        model.write32(base + regs.IRJAR, 1)
        assert model.read32(base + regs.ORSFR) == 1
        raw = mem.read(outring, 8)
        model.write32(base + regs.ORJRR, 1)
        assert int.from_bytes(raw[:4], order) == addr
        return int.from_bytes(raw[4:], order)

    parts = os.urandom(64), os.urandom(192), os.urandom(33)
    p_ctx, p_digest = buf(bytes(40)), buf(bytes(32))
    states = [("init", None, p_ctx, 40), ("update", p_ctx, p_ctx, 40)]
    states.append(("finalize", p_ctx, p_digest, 32))
    for (state, ctx_in, ctx_out, out), data in zip(states, parts, strict=True):
        d = DescriptorBuilder(byteorder=order)
        if ctx_in is not None:
            d.load(2, "context", length=40, pointer=ctx_in)
        d.operation(2, "SHA256", state=state, encrypt=True)
        d.fifo_load(2, "MSG", pointer=buf(data), length=len(data), last2=True)
        d.store(2, "context", length=out, pointer=ctx_out)
        assert run(d) == 0
    assert mem.read(p_digest, 32) == hashlib.sha256(b"".join(parts)).digest()
    # A piece short of a block in a non-final state, through the ring: header 0, OPERATION 1.
    d = DescriptorBuilder(byteorder=order).operation(2, "SHA256", state="update", encrypt=True)
    d.fifo_load(2, "MSG", data=bytes(5), last2=True)
    assert run(d) == MD_DATASIZ | 2 << 8
