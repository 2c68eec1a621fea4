"""The Linux CAAM driver's descriptors, word for word, through the model's job ring on i.MX7D and
T2080 (32- and 64-bit pointers): skcipher CBC/CTR, AEAD GCM and ahash against `cryptography` and
hashlib, with sec4 S/G tables of random fragmentation."""

from __future__ import annotations

import hashlib
import os
import random

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import given, settings
from hypothesis import strategies as st
from linux_descriptors import (
    HASHES,
    PART_IDS,
    PARTS,
    Pointer,
    Ring,
    ahash_job,
    fragments,
    gcm_job,
    shdsc_ahash,
    shdsc_gcm_decap,
    shdsc_gcm_encap,
    shdsc_skcipher_decap,
    shdsc_skcipher_encap,
    skcipher_job,
)

from cryptoffload.caam import status
from cryptoffload.caam.desc.decoder import decode
from cryptoffload.caam.desc.disasm import disassemble_text

K = 0xEEEEEEEE  # stands for a key word in the listings
P = 0xDDDDDDDD  # stands for a bus address

# ---------------------------------------------------------------------- the notes' listings

CBC_ENC_128 = [
    0xB880120E,
    0xA1004006,
    0x02800010,
    K,
    K,
    K,
    K,
    0x1A200010,
    0x82100105,
    0xA8080B04,
    0xA8080A04,
    0x2B120000,
    0x69300000,
    0x5A200010,
]
CBC_DEC_128 = [
    0xB8801211,
    0xA1004006,
    0x02800010,
    K,
    K,
    K,
    K,
    0x1A200010,
    0xA1004003,
    0x82100104,
    0xA0000002,
    0x82101104,
    0xA8080B04,
    0xA8080A04,
    0x2B120000,
    0x69300000,
    0x5A200010,
]
GCM_ENC_128 = [
    0xB8800217,
    0xA1004006,
    0x02800010,
    K,
    K,
    K,
    K,
    0x8210090D,
    0xA8280B04,
    0xA000040D,
    0xA80C3A04,
    0xA0000406,
    0xA80C3B04,
    0x693F0000,
    0xA8283B04,
    0xA0000406,
    0x2B310000,
    0xA8280A04,
    0x69300000,
    0x2B120000,
    0xA0000002,
    0x2B320000,
    0x5A200010,
]
GCM_DEC_128 = [
    0xB8800213,
    0xA1004006,
    0x02800010,
    K,
    K,
    K,
    K,
    0x8210090E,
    0xA80C3A04,
    0xA0000404,
    0xA80C3B04,
    0x693F0000,
    0x2B310000,
    0xA8290A04,
    0xA0000404,
    0xA8290B04,
    0x69300000,
    0x2B110000,
    0x2A3A0010,
]
AHASH_SHA256 = {
    "update": [0xB8800206, 0x1C200028, 0x84430001, 0xA8080A04, 0x2D140000, 0x5C200028],
    "update_first": [0xB8800205, 0x84430005, 0xA8080A04, 0x2D140000, 0x5C200028],
    "final": [0xB8800206, 0x1C200028, 0x84430009, 0xA8080A04, 0x2D140000, 0x5C200020],
    "digest": [0xB8800205, 0x8443000D, 0xA8080A04, 0x2D140000, 0x5C200020],
}


def masked(words: list[int], listing: list[int]) -> list[int]:
    """``words`` with the places the listing leaves open (key words, addresses) masked."""
    return [x if x in (K, P) else w for w, x in zip(words, listing, strict=True)]


def test_skcipher_shared_descriptors_are_the_listed_words() -> None:
    key = bytes(16)
    assert masked(shdsc_skcipher_encap(key, "CBC"), CBC_ENC_128) == CBC_ENC_128
    assert masked(shdsc_skcipher_decap(key, "CBC"), CBC_DEC_128) == CBC_DEC_128
    ctr = shdsc_skcipher_encap(key, "CTR")
    assert (ctr[7], ctr[8], ctr[13]) == (0x1A201010, 0x82100005, 0x5A201010)
    ctr_dec = shdsc_skcipher_decap(key, "CTR")
    assert len(ctr_dec) == 14 and ctr_dec[8] == 0x82100004 and ctr_dec[:8] == ctr[:8]
    # Other key sizes: the inline key grows, and so does the first JUMP.
    for keylen, enc_len, dec_len, jump in ((24, 16, 19, 0xA1004008), (32, 18, 21, 0xA100400A)):
        enc, dec = (
            shdsc_skcipher_encap(bytes(keylen), "CBC"),
            shdsc_skcipher_decap(bytes(keylen), "CBC"),
        )
        assert (len(enc), len(dec), enc[1], dec[1]) == (enc_len, dec_len, jump, jump)
        assert enc[0] == 0xB8801200 | enc_len


def test_gcm_shared_descriptors_are_the_listed_words() -> None:
    assert masked(shdsc_gcm_encap(bytes(16), 16), GCM_ENC_128) == GCM_ENC_128
    assert masked(shdsc_gcm_decap(bytes(16), 16), GCM_DEC_128) == GCM_DEC_128
    for keylen, enc_len, dec_len in ((24, 25, 21), (32, 27, 23)):
        enc, dec = shdsc_gcm_encap(bytes(keylen), 16), shdsc_gcm_decap(bytes(keylen), 16)
        assert (len(enc), len(dec)) == (enc_len, dec_len)
        assert enc[1] == dec[1] == 0xA1004000 | (2 + keylen // 4)


def test_ahash_shared_descriptors_are_the_listed_words() -> None:
    for kind, listing in AHASH_SHA256.items():
        assert shdsc_ahash("sha256", kind) == listing, kind


def test_job_descriptors_are_the_listed_words() -> None:
    words = skcipher_job(P, 14, P, P, 64, long=False, order="big")
    want = [0xB08E1C08, P, 0xF1400000, P, 80, 0xF9400000, P, 80]
    assert masked(words, want) == want
    long = skcipher_job(0x1_0000_0040, 14, P, P, 64, long=True, order="big")
    assert long[0] == 0xB08E1C0B and long[1:3] == [1, 0x40]
    words = gcm_job(
        P,
        23,
        Pointer(P),
        Pointer(P),
        assoclen=13,
        cryptlen=32,
        authsize=16,
        iv=bytes(12),
        encrypt=True,
        long=False,
        order="big",
    )
    want = [0xB0971C0E, P, 0xF0400000, P, 45, 0xF8400000, P, 61, 0xA80C4304, 13, 0x22A1000C]
    assert masked(words[:11], want) == want and len(words) == 14
    empty = gcm_job(
        P,
        23,
        Pointer(P),
        Pointer(P),
        assoclen=0,
        cryptlen=0,
        authsize=16,
        iv=bytes(12),
        encrypt=True,
        long=False,
        order="big",
    )
    assert empty[10] == 0x22A3000C
    long = gcm_job(
        P,
        23,
        Pointer(P),
        Pointer(P),
        assoclen=0,
        cryptlen=32,
        authsize=16,
        iv=bytes(12),
        encrypt=True,
        long=True,
        order="big",
    )
    assert len(long) == 17
    words = ahash_job(P, 5, None, 0, P, 32, long=False, order="big")
    assert masked(words, [0xB0851C05, P, 0xF8400000, P, 32]) == [0xB0851C05, P, 0xF8400000, P, 32]
    assert len(ahash_job(P, 6, Pointer(P, True), 9, P, 32, long=True, order="big")) == 11


def all_kernel_descriptors() -> dict[str, list[int]]:
    out = {}
    for keylen in (16, 24, 32):
        key = bytes(range(keylen))
        for mode in ("CBC", "CTR"):
            out[f"skcipher-{mode}-enc-{keylen}"] = shdsc_skcipher_encap(key, mode)
            out[f"skcipher-{mode}-dec-{keylen}"] = shdsc_skcipher_decap(key, mode)
        out[f"gcm-enc-{keylen}"] = shdsc_gcm_encap(key, 12)
        out[f"gcm-dec-{keylen}"] = shdsc_gcm_decap(key, 12)
    for name in HASHES:
        for kind in ("update", "update_first", "final", "digest"):
            out[f"ahash-{name}-{kind}"] = shdsc_ahash(name, kind)
    return out


@pytest.mark.parametrize("long", [False, True], ids=["ptr32", "ptr64"])
def test_disasm_names_every_field_of_every_kernel_descriptor(long: bool) -> None:
    p = 0x1_2345_6780 if long else 0x8000_1000
    jobs = {
        "skcipher-job": skcipher_job(p, 14, p, p, 64, long=long, order="big"),
        "gcm-job": gcm_job(
            p,
            23,
            Pointer(p, True),
            Pointer(p),
            assoclen=20,
            cryptlen=33,
            authsize=16,
            iv=bytes(12),
            encrypt=False,
            long=long,
            order="big",
        ),
        "ahash-job": ahash_job(p, 6, Pointer(p, True), 99, p, 40, long=long, order="big"),
    }
    for name, words in {**all_kernel_descriptors(), **jobs}.items():
        commands = decode(words, long_pointers=long)
        assert [w for c in commands for w in c.words] == words, name
        for c in commands:
            assert c.name != "UNKNOWN" and "unknown_bits" not in c.fields, (name, c)
            assert "unknown" not in str(c.fields.values()), (name, c)
        text = disassemble_text(words, long_pointers=long)
        assert "UNKNOWN" not in text and "unknown" not in text and ";" not in text, name


def test_disasm_of_the_gcm_job_and_encrypt_descriptor() -> None:
    words = gcm_job(
        0x80001000,
        23,
        Pointer(0x80002000, True),
        Pointer(0x80003000),
        assoclen=13,
        cryptlen=32,
        authsize=16,
        iv=bytes(range(12)),
        encrypt=True,
        long=False,
        order="big",
    )
    lines = disassemble_text(words).splitlines()
    assert lines[0] == (
        "  0  b0971c0e  HEADER         shared_length=23 length=14 share=defer "
        "pointer=0x80001000 one shared reverse"
    )
    assert lines[1] == "  2  f1400000  SEQ_IN_PTR     flags=SGF|EXT length=45 pointer=0x80002000"
    assert lines[3] == (
        "  8  a80c4304  MATH           function=ADD(0x0) src0=ZERO(0xc) src1=IMM(0x4) "
        "dest=MATH3(0x3) length=4 src1_imm=0xd"
    )
    assert lines[4].endswith("type=IV(0x21) length=12 data=000102030405060708090a0b imm flush1")
    shared = disassemble_text(shdsc_gcm_encap(bytes(16), 16)).splitlines()
    assert shared[0] == "  0  b8800217  SHARED_HEADER  start=0 length=23 share=serial one"
    assert shared[1].endswith("condition=0x40(SHRD) offset=6 jsl")
    jump, skip = shared[5], shared[9]  # one line per command: the key's words share one
    assert jump == (
        "  9  a000040d  JUMP           class=0 type=local test=all(0) condition=0x04(MATH_Z) "
        "offset=13"
    )
    assert skip == " 13  693f0000  SEQ_FIFO_STORE class=0 type=SKIP(0x3f) length=0 vlf"


# ---------------------------------------------------------------------- skcipher on the ring

part_params = pytest.mark.parametrize(("part", "long"), PARTS, ids=PART_IDS)


def aes(mode: str, key: bytes, iv: bytes, data: bytes, encrypt: bool) -> bytes:
    cipher = Cipher(algorithms.AES(key), modes.CBC(iv) if mode == "CBC" else modes.CTR(iv))
    ctx = cipher.encryptor() if encrypt else cipher.decryptor()
    return ctx.update(data) + ctx.finalize()


def next_iv(mode: str, iv: bytes, src: bytes, out: bytes, encrypt: bool) -> bytes:
    """The crypto API's IV out: CBC the last ciphertext block, CTR the next counter."""
    if mode == "CBC":
        return (out if encrypt else src)[-16:]
    value = int.from_bytes(iv, "big") + -(-len(src) // 16)
    return (value % 2**128).to_bytes(16, "big")


def run_skcipher(
    r: Ring,
    mode: str,
    key: bytes,
    iv: bytes,
    src: bytes,
    *,
    encrypt: bool,
    in_place: bool,
    rng: random.Random | None,
) -> tuple[int, bytes, bytes]:
    """One caamalg skcipher request: (status, output, the IV buffer after the job).

    The data sits in pieces of random lengths, or in one buffer each way when ``rng`` is None.
    """
    build = shdsc_skcipher_encap if encrypt else shdsc_skcipher_decap
    shared = build(key, mode, r.order)
    p_shared = r.descriptor(shared)
    p_iv = r.buf(iv)  # the IV bounce buffer, both tables' IV entries
    n = len(src)

    def split(n: int) -> list[int]:
        return fragments(n, rng) if rng is not None else [n]

    src_pieces = r.scatter(src, split(n))
    if in_place:  # [IV, src0..srcN-1, IV+FIN]: input at entry 0, output at entry 1
        table = r.table([(p_iv, 16), *src_pieces, (p_iv, 16)])
        t_in, t_out, dst_pieces = table, table + 16, src_pieces
    else:  # [IV, src...] without FIN, then [dst..., IV+FIN]
        dst_pieces = r.scatter(bytes(n), split(n))
        t_in = r.table([(p_iv, 16), *src_pieces], fin=False)
        t_out = r.table([*dst_pieces, (p_iv, 16)])
    word = r.run(skcipher_job(p_shared, len(shared), t_in, t_out, n, long=r.long, order=r.order))
    return word, r.gather(dst_pieces), r.read(p_iv, 16)


@part_params
@pytest.mark.parametrize("mode", ["CBC", "CTR"])
@pytest.mark.parametrize("encrypt", [True, False], ids=["enc", "dec"])
@pytest.mark.parametrize("in_place", [False, True], ids=["out-of-place", "in-place"])
def test_skcipher(part: str, long: bool, mode: str, encrypt: bool, in_place: bool) -> None:
    r, rng = Ring(part, long), random.Random(f"{part}{long}{mode}{encrypt}{in_place}")
    for keylen, n in ((16, 16), (24, 64), (32, 1008), (16, 160)):
        if mode == "CTR":
            n += rng.randint(1, 15)  # CTR takes any length
        key, iv, src = os.urandom(keylen), os.urandom(16), os.urandom(n)
        if mode == "CTR" and rng.random() < 0.5:
            iv = iv[:12] + b"\xff\xff\xff\xfe"  # the counter wraps into the next word
        word, out, iv_out = run_skcipher(
            r, mode, key, iv, src, encrypt=encrypt, in_place=in_place, rng=rng
        )
        assert word == 0, status.Status(word)
        assert out == aes(mode, key, iv, src, encrypt)
        assert iv_out == next_iv(mode, iv, src, out, encrypt)


@part_params
def test_cbc_chains_through_the_iv_handed_back(part: str, long: bool) -> None:
    r, rng = Ring(part, long), random.Random(1)
    key, iv, msg = os.urandom(32), os.urandom(16), os.urandom(96)
    first = run_skcipher(r, "CBC", key, iv, msg[:48], encrypt=True, in_place=False, rng=rng)
    second = run_skcipher(r, "CBC", key, first[2], msg[48:], encrypt=True, in_place=True, rng=rng)
    assert first[1] + second[1] == aes("CBC", key, iv, msg, True)


def test_cbc_of_a_partial_block_is_the_aes_data_size_error() -> None:
    r = Ring("t2080", False)
    word, _, _ = run_skcipher(
        r,
        "CBC",
        os.urandom(16),
        os.urandom(16),
        os.urandom(20),
        encrypt=True,
        in_place=False,
        rng=random.Random(2),
    )
    # The FIFO LOAD that ends the stream is shared word 11 (the shared descriptor is at 0).
    assert word == status.ccb(status.CHA_AES, status.ERR_DATASIZ, 11)


# ---------------------------------------------------------------------- GCM on the ring


def run_gcm(
    r: Ring,
    key: bytes,
    iv: bytes,
    aad: bytes,
    data: bytes,
    *,
    encrypt: bool,
    in_place: bool,
    sg: bool,
    authsize: int,
    rng: random.Random,
) -> tuple[int, bytes, bytes]:
    """One caamalg gcm(aes) request: (status, dst after the job, the AAD area of dst).

    ``data`` is the plaintext (encrypt) or ciphertext and tag (decrypt). The source is AAD ||
    data; the destination AAD || output, its AAD area filled with 0xA5 beforehand so that a
    write to it shows (the engine steps over it).
    """
    shared = (shdsc_gcm_encap if encrypt else shdsc_gcm_decap)(key, authsize, r.order)
    p_shared = r.descriptor(shared)
    src = aad + data
    out_len = len(aad) + len(data) + (authsize if encrypt else -authsize)
    room = len(aad) + len(data) + (authsize if encrypt else 0)
    if in_place:
        buffer = src + bytes(room - len(src))
        pieces = r.scatter(buffer, fragments(room, rng) if sg else [room])
        ptr = Pointer(r.table(pieces) if sg else pieces[0][0], sg)
        src_ptr = dst_ptr = ptr
        dst_pieces = pieces
    else:
        src_pieces = r.scatter(src, fragments(len(src), rng) if sg else [len(src)])
        src_ptr = Pointer(r.table(src_pieces) if sg else src_pieces[0][0], sg)
        dst = b"\xa5" * len(aad) + bytes(out_len - len(aad))
        dst_pieces = r.scatter(dst, fragments(out_len, rng) if sg else [out_len])
        dst_ptr = Pointer(r.table(dst_pieces) if sg else dst_pieces[0][0], sg)
    job = gcm_job(
        p_shared,
        len(shared),
        src_ptr,
        dst_ptr,
        assoclen=len(aad),
        cryptlen=len(data),
        authsize=authsize,
        iv=iv,
        encrypt=encrypt,
        long=r.long,
        order=r.order,
    )
    word = r.run(job)
    out = r.gather(dst_pieces)
    return word, out[len(aad) : out_len], out[: len(aad)]


GCM_CASES = [(a, n) for a in (0, 13, 37) for n in (0, 1, 64, 1000)]


@part_params
@pytest.mark.parametrize("in_place", [False, True], ids=["out-of-place", "in-place"])
@pytest.mark.parametrize("sg", [False, True], ids=["flat", "sg"])
def test_gcm_encrypt_and_decrypt(part: str, long: bool, in_place: bool, sg: bool) -> None:
    r, rng = Ring(part, long), random.Random(f"{part}{long}{in_place}{sg}")
    for alen, n in [*GCM_CASES, (rng.randint(1, 300), rng.randint(0, 600))]:  # and any AAD
        keylen, authsize = rng.choice([16, 24, 32]), rng.choice([16, 16, 12, 8, 4])
        key, iv, aad, pt = os.urandom(keylen), os.urandom(12), os.urandom(alen), os.urandom(n)
        sealed = AESGCM(key).encrypt(iv, pt, aad)
        ct, tag = sealed[:n], sealed[n:][:authsize]
        word, out, aad_area = run_gcm(
            r, key, iv, aad, pt, encrypt=True, in_place=in_place, sg=sg, authsize=authsize, rng=rng
        )
        assert word == 0, (alen, n, status.Status(word))
        assert out == ct + tag, (alen, n)
        assert aad_area == (aad if in_place else b"\xa5" * alen)  # never written
        word, out, aad_area = run_gcm(
            r,
            key,
            iv,
            aad,
            ct + tag,
            encrypt=False,
            in_place=in_place,
            sg=sg,
            authsize=authsize,
            rng=rng,
        )
        assert word == 0, (alen, n, status.Status(word))
        assert out == pt, (alen, n)
        assert aad_area == (aad if in_place else b"\xa5" * alen)


@part_params
@pytest.mark.parametrize(("alen", "n"), [(0, 0), (13, 0), (0, 1), (20, 64)])
def test_gcm_bad_tag_is_the_ccb_icv_error(part: str, long: bool, alen: int, n: int) -> None:
    r, rng = Ring(part, long), random.Random(alen * 1000 + n)
    key, iv, aad, pt = os.urandom(16), os.urandom(12), os.urandom(alen), os.urandom(n)
    sealed = bytearray(AESGCM(key).encrypt(iv, pt, aad))
    sealed[-1] ^= 0x01
    word, out, _ = run_gcm(
        r, key, iv, aad, bytes(sealed), encrypt=False, in_place=False, sg=True, authsize=16, rng=rng
    )
    # The ICV FIFO LOAD is the shared descriptor's word 18: CCB, CHA AES, ICV check (0x..1A),
    # which the kernel turns into -EBADMSG. The plaintext went out before the compare.
    assert word == status.ccb(status.CHA_AES, status.ERR_ICVCHK, 18) == 0x2000121A
    assert out == pt


def test_gcm_short_tag_and_each_branch_on_one_ring() -> None:
    r, rng = Ring("imx7d", False), random.Random(3)
    for alen, n in ((0, 0), (5, 0), (0, 7), (5, 7)):
        key, iv, aad, pt = os.urandom(16), os.urandom(12), os.urandom(alen), os.urandom(n)
        want = AESGCM(key).encrypt(iv, pt, aad)
        word, out, _ = run_gcm(
            r, key, iv, aad, pt, encrypt=True, in_place=False, sg=False, authsize=8, rng=rng
        )
        assert (word, out) == (0, want[:n] + want[n : n + 8])


# ---------------------------------------------------------------------- ahash on the ring


class Ahash:
    """caamhash's request paths over one model: update (first and with a context), final,
    digest; the running context is opaque and lives in the buffer the jobs write."""

    def __init__(self, r: Ring, name: str, rng: random.Random) -> None:
        self.r, self.name, self.rng = r, name, rng
        _, self.ctx_len, self.digestsize, self.block = HASHES[name]
        self.shared = {
            k: shdsc_ahash(name, k, r.order) for k in ("update", "update_first", "final", "digest")
        }
        self.p_shared = {k: r.descriptor(w) for k, w in self.shared.items()}
        self.caam_ctx = r.buf(self.ctx_len)
        self.buf = b""
        self.ctx_held = False

    def _job(self, kind: str, parts: list[tuple[int, int]], total: int, out_len: int) -> None:
        r = self.r
        src = None
        if parts:
            table = len(parts) > 1
            src = Pointer(r.table(parts) if table else parts[0][0], table)
        words = ahash_job(
            self.p_shared[kind],
            len(self.shared[kind]),
            src,
            total,
            self.caam_ctx,
            out_len,
            long=r.long,
            order=r.order,
        )
        assert r.run(words) == 0

    def _data(self, data: bytes) -> list[tuple[int, int]]:
        return [p for p in self.r.scatter(data, fragments(len(data), self.rng)) if p[1]]

    def update(self, data: bytes) -> None:
        in_len = len(self.buf) + len(data)
        keep = in_len % self.block
        to_hash = in_len - keep
        if not to_hash:
            self.buf += data
            return
        hashed = (self.buf + data)[:to_hash]
        pieces = self._data(hashed)
        if self.ctx_held:  # [ctx, buf?, src..]; the context comes back into the same buffer
            self._job(
                "update",
                [(self.caam_ctx, self.ctx_len), *pieces],
                self.ctx_len + to_hash,
                self.ctx_len,
            )
        else:
            self._job("update_first", pieces, to_hash, self.ctx_len)
        self.ctx_held = True
        self.buf = (self.buf + data)[to_hash:]

    def final(self) -> bytes:
        pieces = self._data(self.buf)
        if self.ctx_held:
            self._job(
                "final",
                [(self.caam_ctx, self.ctx_len), *pieces],
                self.ctx_len + len(self.buf),
                self.digestsize,
            )
        else:  # digest of the buffer; no SEQ IN PTR at all when it is empty
            self._job("digest", pieces, len(self.buf), self.digestsize)
        return self.r.read(self.caam_ctx, self.digestsize)

    def digest(self, data: bytes) -> bytes:
        self._job("digest", self._data(data), len(data), self.digestsize)
        return self.r.read(self.caam_ctx, self.digestsize)


@part_params
@pytest.mark.parametrize("name", list(HASHES))
def test_ahash_digest(part: str, long: bool, name: str) -> None:
    r, rng = Ring(part, long), random.Random(name)
    for n in (0, 1, 64, 1000):
        msg = os.urandom(n)
        assert Ahash(r, name, rng).digest(msg) == hashlib.new(name, msg).digest(), n


@part_params
@pytest.mark.parametrize("name", ["md5", "sha1", "sha256", "sha384", "sha512"])
def test_ahash_update_update_final(part: str, long: bool, name: str) -> None:
    r, rng = Ring(part, long), random.Random(name + part)
    for sizes in ((0, 0), (1, 0), (64, 64), (100, 300), (1000, 1), (3, 5, 200, 129)):
        h = Ahash(r, name, rng)
        msg = b""
        for size in sizes:
            piece = os.urandom(size)
            h.update(piece)
            msg += piece
        assert h.final() == hashlib.new(name, msg).digest(), sizes


def test_ahash_final_with_nothing_issues_no_seq_in_ptr() -> None:
    r = Ring("t2080", True)
    h = Ahash(r, "sha256", random.Random(0))
    words = ahash_job(h.p_shared["digest"], 5, None, 0, h.caam_ctx, 32, long=True, order="big")
    assert [c.name for c in decode(words, long_pointers=True)] == ["HEADER", "SEQ_OUT_PTR"]
    assert h.final() == hashlib.sha256().digest()


# ---------------------------------------------------------------------- S/G as flat


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(range(len(PARTS))),
    st.integers(0, 400),
    st.randoms(use_true_random=False),
    st.booleans(),
)
def test_sg_layouts_give_the_bytes_of_a_flat_buffer(
    which: int, n: int, rng: random.Random, in_place: bool
) -> None:
    r = Ring(*PARTS[which])
    key, iv, src = os.urandom(16), os.urandom(16), os.urandom(n)
    if n:  # the kernel never sends an empty skcipher request
        flat = run_skcipher(r, "CTR", key, iv, src, encrypt=True, in_place=in_place, rng=None)
        pieces = run_skcipher(r, "CTR", key, iv, src, encrypt=True, in_place=in_place, rng=rng)
        assert pieces == flat
        assert flat == (0, aes("CTR", key, iv, src, True), next_iv("CTR", iv, src, b"", True))
    # The hash of the same bytes, in random pieces, is the hash of the flat message.
    assert Ahash(r, "sha1", rng).digest(src) == hashlib.sha1(src).digest()
