"""caam.recipes on the model through the driver: every recipe against cryptography and hashlib."""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

import pytest
from caam_spies import freed_contents
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, rsa, utils
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESCCM, AESGCM

from cryptoffload.blocks import ffdhe
from cryptoffload.blocks.curves import CRYPTOGRAPHY_CLASSES, IN_CRYPTOGRAPHY
from cryptoffload.caam import status
from cryptoffload.caam.desc.decoder import decode
from cryptoffload.caam.desc.words import from_bytes
from cryptoffload.caam.jr.driver import Driver, Job, Request
from cryptoffload.caam.jr.transport import ModelTransport
from cryptoffload.caam.model import CaamModel
from cryptoffload.caam.recipes import aead, blob, cipher, pk, rng
from cryptoffload.caam.recipes import hash as mdha
from cryptoffload.caam.recipes.base import CaamError, IcvError, Prepared, Region, execute_many
from cryptoffload.errors import Unavailable
from cryptoffload.modes import CFB, OFB

SETUPS = [("t2080", False), ("t1040", False), ("imx7d", False), ("t2080", True)]
SIZES = [0, 1, 16, 1000, 65536 + 16]


def make_driver(part: str, long_pointers: bool = False, seed: bytes = b"recipes") -> Driver:
    return Driver(ModelTransport(CaamModel(part, seed=seed)), long_pointers=long_pointers)


@pytest.fixture(params=SETUPS, ids=lambda s: s[0] + ("-long" if s[1] else ""))
def drv(request: pytest.FixtureRequest) -> Iterator[Driver]:
    driver = make_driver(*request.param)
    yield driver
    driver.close()


@pytest.fixture
def spy(drv: Driver, monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """Every job descriptor the driver is given, in order."""
    seen: list[list[int]] = []
    submit, submit_many = drv.submit, drv.submit_many

    def one(words: Sequence[int], **kw: Any) -> Job:
        seen.append(list(words))
        return submit(words, **kw)

    def many(reqs: Sequence[Request]) -> list[Job]:
        seen.extend(list(r.words) for r in reqs)
        return submit_many(reqs)

    monkeypatch.setattr(drv, "submit", one)
    monkeypatch.setattr(drv, "submit_many", many)
    return seen


def shared_words(drv: Driver, job: list[int]) -> list[int]:
    """The shared descriptor a job descriptor points at, read back from DMA memory."""
    phys = job[1] << 32 | job[2] if drv.long_pointers else job[1]
    return from_bytes(drv.read(phys, 4 * (job[0] >> 16 & 0x3F)), drv.byteorder)


# ---------------------------------------------------------------------- AES modes


def reference_mode(mode: str, iv: bytes | None) -> modes.Mode:
    return {"ECB": lambda: modes.ECB(), "CBC": lambda: modes.CBC(iv), "CTR": lambda: modes.CTR(iv),
            "CFB": lambda: CFB(iv), "OFB": lambda: OFB(iv)}[mode]()  # fmt: skip


def reference(key: bytes, mode: str, iv: bytes | None, data: bytes) -> bytes:
    return Cipher(algorithms.AES(key), reference_mode(mode, iv)).encryptor().update(data)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("mode", cipher.MODES)
def test_cipher_matches_cryptography_and_chains(drv: Driver, mode: str, n: int) -> None:
    key, data = os.urandom(32), os.urandom(n)
    iv = None if mode == "ECB" else os.urandom(16)
    if mode in cipher.ALIGNED and n % 16:
        with pytest.raises(Unavailable) as err:
            cipher.cipher(drv, key, mode, iv, data, encrypt=True)
        assert err.value.reason == "misaligned"
        return
    ct, next_iv = cipher.cipher(drv, key, mode, iv, data, encrypt=True)
    assert ct == reference(key, mode, iv, data)
    assert cipher.cipher(drv, key, mode, iv, ct, encrypt=False)[0] == data
    if iv is not None and n % 16 == 0:  # the next IV continues the stream
        more = os.urandom(32)
        tail, _ = cipher.cipher(drv, key, mode, next_iv, more, encrypt=True)
        assert ct + tail == reference(key, mode, iv, data + more)


@pytest.mark.parametrize("keylen", [16, 24, 32])
def test_cipher_key_sizes_and_next_iv(drv: Driver, keylen: int) -> None:
    key, iv, pt = os.urandom(keylen), os.urandom(16), os.urandom(64)
    ct, next_iv = cipher.cipher(drv, key, "CBC", iv, pt, encrypt=True)
    assert ct == reference(key, "CBC", iv, pt) and next_iv == ct[-16:]
    back, next_iv = cipher.cipher(drv, key, "CBC", iv, ct, encrypt=False)
    assert back == pt and next_iv == ct[-16:]
    ctr = bytes(15) + b"\xfe"
    _, next_ctr = cipher.cipher(drv, key, "CTR", ctr, os.urandom(45), encrypt=True)
    assert next_ctr == (0xFE + 3).to_bytes(16, "big")


@pytest.mark.parametrize("mode", ["CBC", "CTR", "OFB"])
def test_cipher_long_input_as_chained_jobs(drv: Driver, mode: str) -> None:
    key, iv, data = os.urandom(16), os.urandom(16), os.urandom(1024 + (5 if mode == "CTR" else 0))
    before = drv.figures["jobs"]
    ct, _ = cipher.cipher(drv, key, mode, iv, data, encrypt=True, chunk=64)
    assert drv.figures["jobs"] - before == -(-len(data) // 64)
    assert ct == reference(key, mode, iv, data)


def test_cipher_into_a_buffer(drv: Driver) -> None:
    key, iv, data = os.urandom(16), os.urandom(16), os.urandom(100)
    out = bytearray(120)
    got, _ = cipher.cipher(drv, key, "CTR", iv, data, encrypt=True, into=out)
    assert got == 100 and bytes(out[:100]) == reference(key, "CTR", iv, data)
    out = bytearray(100)
    got, _ = cipher.cipher(drv, key, "CTR", iv, data, encrypt=True, into=out, chunk=32)
    assert got == 100 and bytes(out) == reference(key, "CTR", iv, data)


def regions(drv: Driver, data: bytes, cuts: list[int]) -> list[Region]:
    """``data`` in separate DMA regions of the driver, cut at ``cuts``."""
    out, at = [], 0
    for end in [*cuts, len(data)]:
        phys = drv.put(data[at:end])
        out.append(Region(phys, end - at))
        at = end
    return out


def gather(drv: Driver, pieces: list[Region]) -> bytes:
    return b"".join(drv.read(r.phys, r.length) for r in pieces)


@pytest.mark.parametrize("mode", ["ECB", "CBC", "CTR"])
def test_cipher_scatter_gather(drv: Driver, mode: str) -> None:
    key, data = os.urandom(24), os.urandom(96)
    iv = None if mode == "ECB" else os.urandom(16)
    want = reference(key, mode, iv, data)
    pieces = [data[:5], *regions(drv, data[5:70], [20, 20]), data[70:]]  # a zero-length piece
    ct, next_iv = cipher.cipher(drv, key, mode, iv, pieces, encrypt=True)
    assert ct == want
    outs = regions(drv, bytes(96), [1, 50])
    got, iv2 = cipher.cipher(drv, key, mode, iv, data, encrypt=True, into=outs)
    assert got == 96 and gather(drv, outs) == want and iv2 == next_iv
    with pytest.raises(ValueError, match="96 bytes"):
        cipher.cipher(drv, key, mode, iv, data, encrypt=True, into=outs[:1])


# ---------------------------------------------------------------------- GCM and CCM

AEAD_CASES = [(0, 0), (20, 0), (0, 1), (13, 16), (0, 1000), (70000, 65536 + 16)]


@pytest.mark.parametrize("tag", [4, 12, 16])
@pytest.mark.parametrize(("alen", "n"), AEAD_CASES)
def test_gcm(drv: Driver, alen: int, n: int, tag: int) -> None:
    key, iv, aad, pt = os.urandom(16), os.urandom(12), os.urandom(alen), os.urandom(n)
    ct = aead.gcm_encrypt(drv, key, iv, pt, aad, tag_length=tag)
    full = AESGCM(key).encrypt(iv, pt, aad)
    assert ct == full[:n] + full[n : n + tag]
    assert aead.gcm_decrypt(drv, key, iv, ct, aad, tag_length=tag) == pt


@pytest.mark.parametrize("tag", [4, 16])
@pytest.mark.parametrize("nonce", [7, 13])
@pytest.mark.parametrize(("alen", "n"), AEAD_CASES)
def test_ccm(drv: Driver, alen: int, n: int, nonce: int, tag: int) -> None:
    key, iv, aad, pt = os.urandom(32), os.urandom(nonce), os.urandom(alen), os.urandom(n)
    if n >> 8 * (15 - nonce):  # the length does not fit B0 beside this nonce
        with pytest.raises(ValueError, match="at most 65535 bytes"):
            aead.ccm_encrypt(drv, key, iv, pt, aad, tag_length=tag)
        return
    ct = aead.ccm_encrypt(drv, key, iv, pt, aad, tag_length=tag)
    assert ct == AESCCM(key, tag_length=tag).encrypt(iv, pt, aad)
    assert aead.ccm_decrypt(drv, key, iv, ct, aad, tag_length=tag) == pt


@pytest.fixture
def freed(drv: Driver, monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """What every DMA region held when it was freed."""
    return freed_contents(monkeypatch, drv.transport)


@pytest.mark.parametrize("algo", ["gcm", "ccm"])
def test_a_bad_tag_is_an_icv_error_and_no_plaintext_is_left(
    drv: Driver, freed: list[bytes], algo: str
) -> None:
    key, iv, aad, pt = os.urandom(16), os.urandom(12), b"header", os.urandom(200)
    enc, dec = {
        "gcm": (aead.gcm_encrypt, aead.gcm_decrypt),
        "ccm": (aead.ccm_encrypt, aead.ccm_decrypt),
    }[algo]
    ct = bytearray(enc(drv, key, iv, pt, aad))
    ct[-1] ^= 1
    freed.clear()
    with pytest.raises(IcvError) as err:
        dec(drv, key, iv, bytes(ct), aad)
    assert err.value.status >> 28 == status.SRC_CCB and err.value.status & 0xF == 0xA
    assert freed and not any(pt[:16] in region for region in freed)
    outs = regions(drv, bytes(200), [77])  # the caller's regions: wiped as well
    with pytest.raises(IcvError):
        dec(drv, key, iv, bytes(ct), aad, into=outs)
    assert gather(drv, outs) == bytes(200)


def test_aead_scatter_gather(drv: Driver) -> None:
    key, iv, aad, pt = os.urandom(32), os.urandom(12), os.urandom(9), os.urandom(150)
    want = AESGCM(key).encrypt(iv, pt, aad)
    pieces = [pt[:10], *regions(drv, pt[10:], [60])]
    assert aead.gcm_encrypt(drv, key, iv, pieces, aad) == want
    outs = regions(drv, bytes(166), [100])
    assert aead.gcm_encrypt(drv, key, iv, pt, aad, into=outs) == 166
    assert gather(drv, outs) == want
    back = regions(drv, bytes(150), [3])
    assert aead.gcm_decrypt(drv, key, iv, [want[:100], want[100:]], aad, into=back) == 150
    assert gather(drv, back) == pt
    want = AESCCM(key).encrypt(iv, pt, aad)
    assert aead.ccm_decrypt(drv, key, iv, [want[:7], want[7:]], aad) == pt


def test_gcm_takes_12_byte_ivs_only(drv: Driver) -> None:
    with pytest.raises(Unavailable) as err:
        aead.gcm_encrypt(drv, os.urandom(16), os.urandom(16), b"data")
    assert err.value.reason == "unsupported"


def test_a_batch_gives_per_item_results(drv: Driver) -> None:
    key = os.urandom(16)
    items = [(os.urandom(12), os.urandom(40 + i)) for i in range(6)]
    sealed = [AESGCM(key).encrypt(iv, pt, b"") for iv, pt in items]
    sealed[3] = sealed[3][:-1] + bytes([sealed[3][-1] ^ 1])
    drv.ensure_rng()

    def batch() -> list[Any]:
        jobs: list[Prepared[Any]] = [
            aead.prepare_gcm(drv, key, iv, ct, encrypt=False)
            for (iv, _), ct in zip(items, sealed, strict=True)
        ]
        jobs += [mdha.prepare_digest(drv, "sha256", b"abc"), rng.prepare_random(drv, 8)]
        return execute_many(drv, jobs)

    out = batch()
    assert isinstance(out[3], IcvError)
    assert [o for i, o in enumerate(out[:6]) if i != 3] == [pt for i, (_, pt) in enumerate(items)
                                                             if i != 3]  # fmt: skip
    assert out[6] == hashlib.sha256(b"abc").digest() and len(out[7]) == 8
    in_use = drv.figures["dma_in_use"]  # the shared descriptors, now cached
    batch()
    assert drv.figures["dma_in_use"] == in_use  # every job's regions freed


# ---------------------------------------------------------------------- hashes and HMAC


@pytest.mark.parametrize("n", [*SIZES, 64, 128])
@pytest.mark.parametrize("name", list(mdha.HASHES))
def test_digest(drv: Driver, name: str, n: int) -> None:
    msg = os.urandom(n)
    assert mdha.digest(drv, name, msg) == hashlib.new(name, msg).digest()


@pytest.mark.parametrize("keylen", [0, 20, 64, 65, 128, 129, 300])
@pytest.mark.parametrize("name", list(mdha.HASHES))
def test_hmac(drv: Driver, name: str, keylen: int) -> None:
    key, msg = os.urandom(keylen), os.urandom(777)
    assert mdha.digest(drv, name, msg, key) == hmac.new(key, msg, name).digest()


@pytest.mark.parametrize("keylen", [None, 16, 200])
@pytest.mark.parametrize("name", list(mdha.HASHES))
def test_streams_with_copy(drv: Driver, name: str, keylen: int | None) -> None:
    key = None if keylen is None else os.urandom(keylen)
    stream = mdha.open_stream(drv, name, key)
    ref = hashlib.new(name) if key is None else hmac.new(key, digestmod=name)
    for piece in (b"", b"abc", os.urandom(300), os.urandom(128), os.urandom(1), os.urandom(5000)):
        stream.update(piece)
        ref.update(piece)
    twin, ref_twin = stream.copy(), ref.copy()
    twin.update(b"only the copy")
    ref_twin.update(b"only the copy")
    assert stream.finalize() == ref.digest()
    assert twin.finalize() == ref_twin.digest()
    with pytest.raises(ValueError, match="finalized"):
        stream.update(b"late")
    empty = mdha.open_stream(drv, name, key)
    want = hashlib.new(name).digest() if key is None else hmac.new(key, b"", name).digest()
    assert empty.finalize() == want


def test_streams_keep_the_running_context_between_jobs(drv: Driver, spy: list[list[int]]) -> None:
    stream = mdha.open_stream(drv, "sha256")
    stream.update(os.urandom(64 * 3 + 5))  # 3 blocks now, 5 bytes wait
    stream.update(os.urandom(59))  # one more block
    stream.finalize()
    states = []
    for words in spy:
        ops = [c for c in decode(shared_words(drv, words)) if c.name == "OPERATION"]
        states.append(ops[0].fields["state"])
    assert states == [1, 0, 2]  # INIT, UPDATE, FINALIZE
    lengths = [words[2 + drv.pointer_size // 2] for words in spy]  # SEQ IN PTR's EXT length
    assert lengths == [3 * 64, 40 + 64, 40]  # blocks; context + block; context + nothing


def test_a_long_message_goes_through_the_context(
    drv: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mdha, "CHUNK", 256)
    msg, key = os.urandom(3000), os.urandom(32)
    before = drv.figures["jobs"]
    assert mdha.digest(drv, "sha384", msg) == hashlib.sha384(msg).digest()
    whole = 3000 - 3000 % 128  # SHA-384 blocks; the rest goes with the final job
    assert drv.figures["jobs"] - before == -(-whole // 256) + 1
    assert mdha.digest(drv, "sha1", msg, key) == hmac.new(key, msg, "sha1").digest()


# ---------------------------------------------------------------------- RSA


@functools.cache
def rsa_key(bits: int) -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=bits)


@pytest.mark.parametrize("bits", [2048, 4096])
def test_rsa_public_and_both_private_forms(drv: Driver, bits: int) -> None:
    numbers = rsa_key(bits).private_numbers()
    pub = numbers.public_numbers
    value = int.from_bytes(os.urandom(bits // 8 - 1), "big")
    ct = pk.rsa_public(drv, pub.n, pub.e, value)
    assert ct == pow(value, pub.e, pub.n)
    assert pk.rsa_private(drv, pub.n, numbers.d, ct) == value
    p, q = numbers.p, numbers.q
    assert pk.rsa_private_crt(drv, p, q, numbers.dmp1, numbers.dmq1, numbers.iqmp, ct) == value


def test_rsa_past_the_pkha_is_declined(drv: Driver) -> None:
    with pytest.raises(Unavailable) as err:
        pk.rsa_public(drv, (1 << 4097) + 1, 65537, 5)
    assert err.value.reason == "too-large"


# ---------------------------------------------------------------------- ECDSA, ECDH, key pairs

CURVE_OBJECTS = {
    name: CRYPTOGRAPHY_CLASSES[c.openssl_name]() for name, c in IN_CRYPTOGRAPHY.items()
}


def point(key: ec.EllipticCurvePrivateKey) -> tuple[int, int]:
    numbers = key.public_key().public_numbers()
    return numbers.x, numbers.y


@pytest.mark.parametrize("curve", list(CURVE_OBJECTS))
def test_ecdsa_ecdh_and_key_pairs(drv: Driver, curve: str) -> None:
    obj = CURVE_OBJECTS[curve]
    key, other = ec.generate_private_key(obj), ec.generate_private_key(obj)
    s = key.private_numbers().private_value
    for algorithm in (hashes.SHA256(), hashes.SHA512()):  # shorter and longer than the order
        digest = hashlib.new(algorithm.name, b"signed on the model").digest()
        prehashed = ec.ECDSA(utils.Prehashed(algorithm))
        r, sig_s = pk.ecdsa_sign(drv, curve, s, digest)
        key.public_key().verify(utils.encode_dss_signature(r, sig_s), digest, prehashed)
        theirs = utils.decode_dss_signature(key.sign(digest, prehashed))
        assert pk.ecdsa_verify(drv, curve, point(key), digest, theirs)
        assert not pk.ecdsa_verify(drv, curve, point(key), digest, (theirs[0], theirs[1] ^ 1))
        assert not pk.ecdsa_verify(drv, curve, point(other), digest, theirs)
        assert not pk.ecdsa_verify(drv, curve, point(key), digest, (theirs[0], 1 << 600))
    z = pk.ecdh(drv, curve, s, point(other))
    assert z == key.exchange(ec.ECDH(), other.public_key())
    priv, pub = pk.ecc_keypair(drv, curve)
    assert point(ec.derive_private_key(priv, obj)) == pub


@pytest.mark.parametrize("group", ["ffdhe2048", "ffdhe3072"])
def test_ffdhe(drv: Driver, group: str) -> None:
    g = ffdhe.FFDHE_GROUPS[group]
    size = g.bits // 8
    short = int.from_bytes(os.urandom(32), "big")  # the DH protocol (fits its 7-bit N)
    full = int.from_bytes(os.urandom(size), "big") % g.q  # past it: the PKHA's MOD_EXPO
    a_pub, b_pub = pow(g.g, short, g.p), pow(g.g, full, g.p)
    z = pk.ffdh(drv, g.p, short, b_pub)
    assert z == pk.ffdh(drv, g.p, full, a_pub) == pow(b_pub, short, g.p).to_bytes(size, "big")
    bound = (1 << 255) + 95
    s, w = pk.ff_keypair(drv, g.p, g.g, bound)
    assert 0 < s < bound and w == pow(g.g, s, g.p)


def test_ffdhe_past_the_pkha_is_declined(drv: Driver) -> None:
    g = ffdhe.FFDHE_GROUPS["ffdhe6144"]
    with pytest.raises(Unavailable) as err:
        pk.ffdh(drv, g.p, 12345, 2)
    assert err.value.reason == "too-large"


@pytest.mark.parametrize("part", ["t2080", "t1040", "imx7d"])
def test_no_recipe_emits_the_builtin_curve_selector(part: str) -> None:
    drv = make_driver(part)
    seen: list[list[int]] = []
    submit = drv.submit
    drv.submit = lambda words, **kw: seen.append(list(words)) or submit(words, **kw)  # type: ignore[method-assign]
    key = ec.generate_private_key(ec.SECP256R1())
    s, digest = key.private_numbers().private_value, hashlib.sha256(b"x").digest()
    sig = pk.ecdsa_sign(drv, "p256", s, digest)
    pk.ecdsa_verify(drv, "p256", point(key), digest, sig)
    pk.ecdh(drv, "p256", s, point(key))
    pk.ecc_keypair(drv, "p256")
    g = ffdhe.FFDHE_GROUPS["ffdhe2048"]
    pk.ffdh(drv, g.p, 3, 5)
    pk.ff_keypair(drv, g.p, g.g, (1 << 200) + 1)
    pdb_jobs = [w for w in seen if w[0] >> 16 & 0x3F > 1]  # a start index past 1: a PDB
    assert len(pdb_jobs) == 6
    for words in pdb_jobs:
        assert not words[1] & 1 << 22  # PD: the built-in curve selector
        op = words[(words[0] >> 16 & 0x3F)]
        assert op >> 24 == 0x80 and not op & 0x800  # no "already hashed" flag either


# ---------------------------------------------------------------------- RNG and blobs


def test_random_bytes(drv: Driver) -> None:
    a, b = rng.random_bytes(drv, 32), rng.random_bytes(drv, 100_000)
    assert len(a) == 32 and len(b) == 100_000 and a not in b and len(set(b)) == 256
    assert drv.figures["rng_instantiations"] == 1
    assert rng.random_bytes(drv, 0) == b""
    # The driver instantiates without prediction resistance: asking for it is RNG error 6.
    with pytest.raises(CaamError) as err:
        rng.random_bytes(drv, 16, prediction_resistance=True)
    assert err.value.status & 0xFF == status.CHA_RNG << 4 | status.ERR_RNG_PREDICTION_RESISTANCE


@pytest.mark.parametrize("n", [1, 16, 1000, 4096])
def test_blobs(drv: Driver, n: int) -> None:
    data = os.urandom(n)
    sealed = blob.encapsulate(drv, data, b"key modifier")
    assert len(sealed) == n + blob.OVERHEAD and (n < 16 or data not in sealed)
    assert blob.decapsulate(drv, sealed, b"key modifier") == data
    with pytest.raises(IcvError):
        blob.decapsulate(drv, sealed, b"other modifier")
    other = make_driver("t2080", seed=b"another device")
    with pytest.raises(IcvError):
        blob.decapsulate(other, sealed, b"key modifier")


@pytest.mark.parametrize("ccm", [False, True], ids=["ecb", "ccm"])
def test_key_blobs_give_keys_software_never_holds(drv: Driver, ccm: bool) -> None:
    key, iv, msg = os.urandom(32), os.urandom(16), os.urandom(64)
    sealed = blob.wrap_key(drv, key, b"disk", ccm=ccm)
    assert len(sealed) == 32 + blob.OVERHEAD and key not in sealed
    black = blob.unwrap_key(drv, sealed, b"disk", ccm=ccm)
    assert key not in drv.read(black.phys, blob.black_size(32, ccm=ccm))
    assert "phys" in repr(black) and black.token.hex() not in repr(black)
    assert cipher.cipher(drv, black, "CBC", iv, msg, encrypt=True)[0] == reference(
        key, "CBC", iv, msg
    )
    assert aead.gcm_encrypt(drv, black, iv[:12], msg) == AESGCM(key).encrypt(iv[:12], msg, None)
    with pytest.raises(IcvError):
        blob.unwrap_key(drv, sealed, b"not it", ccm=ccm)
    blob.release_key(drv, black)


# ---------------------------------------------------------------------- shapes and the cache


def test_the_second_job_reuses_the_shared_descriptor(drv: Driver, spy: list[list[int]]) -> None:
    key, iv = os.urandom(16), os.urandom(16)
    builds = drv.figures["shared_builds"]
    cipher.cipher(drv, key, "CBC", iv, os.urandom(32), encrypt=True)
    assert drv.figures["shared_builds"] == builds + 1
    hits = drv.figures["shared_hits"]
    cipher.cipher(drv, key, "CBC", iv, os.urandom(64), encrypt=True)
    assert drv.figures["shared_builds"] == builds + 1
    assert drv.figures["shared_hits"] == hits + 1
    first, second = spy
    assert len(second) == (11 if drv.long_pointers else 8)  # header, pointer, SEQ IN, SEQ OUT
    assert second[0] == first[0] and second[0] & 0x1800 == 0x1800  # SHARED | REVERSE
    assert second[1] == first[1]  # the same shared descriptor
    cipher.cipher(drv, os.urandom(16), "CBC", iv, os.urandom(32), encrypt=True)
    assert drv.figures["shared_builds"] == builds + 2


def test_cache_keys_never_show_a_key(drv: Driver, monkeypatch: pytest.MonkeyPatch) -> None:
    keys: list[object] = []
    shared = drv.shared
    monkeypatch.setattr(drv, "shared", lambda k, build: keys.append(k) or shared(k, build))
    key = bytes(range(32))
    cipher.cipher(drv, key, "CTR", bytes(16), b"x", encrypt=True)
    aead.gcm_encrypt(drv, key, bytes(12), b"x")
    mdha.digest(drv, "sha256", b"x", key)
    blob.encapsulate(drv, b"x", key[:16])
    text = repr(keys)
    assert len(keys) == 4 and key[:16].hex() not in text and repr(key[:16]) not in text


def test_shared_descriptors_are_the_kernels(drv: Driver, monkeypatch: pytest.MonkeyPatch) -> None:
    """Word for word what tests/linux_descriptors.py (caamalg_desc.c, caamhash_desc.c) builds."""
    from linux_descriptors import (
        shdsc_ahash,
        shdsc_gcm_decap,
        shdsc_gcm_encap,
        shdsc_skcipher_decap,
        shdsc_skcipher_encap,
    )

    built: list[list[int]] = []
    shared = drv.shared

    def spy(k: Hashable, build: Callable[[], Sequence[int]]) -> int:
        built.append(list(build()))
        return shared(k, lambda: built[-1])

    monkeypatch.setattr(drv, "shared", spy)
    key, iv, order = os.urandom(16), bytes(16), drv.byteorder
    for mode in ("CBC", "CTR"):
        ct, _ = cipher.cipher(drv, key, mode, iv, bytes(16), encrypt=True)
        cipher.cipher(drv, key, mode, iv, ct, encrypt=False)
        assert built[-2:] == [shdsc_skcipher_encap(key, mode, order),
                              shdsc_skcipher_decap(key, mode, order)]  # fmt: skip
    aead.gcm_encrypt(drv, key, bytes(12), b"m")
    with pytest.raises(IcvError):  # a made-up tag
        aead.gcm_decrypt(drv, key, bytes(12), bytes(20), tag_length=12)
    assert built[-2:] == [shdsc_gcm_encap(key, 16, order), shdsc_gcm_decap(key, 12, order)]
    stream = mdha.open_stream(drv, "sha384")
    stream.update(bytes(256))
    stream.update(bytes(128))
    stream.finalize()
    mdha.digest(drv, "sha384", b"abc")
    kinds = ["update_first", "update", "final", "digest"]
    assert built[-4:] == [shdsc_ahash("sha384", kind, order) for kind in kinds]


def test_job_templates_fill_as_the_builder_builds(drv: Driver, spy: list[list[int]]) -> None:
    from linux_descriptors import Pointer, gcm_job

    key, iv, aad = os.urandom(16), os.urandom(12), os.urandom(5)
    aead.gcm_encrypt(drv, key, iv, b"payload", aad)
    words = spy[0]
    pw = drv.pointer_size // 4
    shared = words[1] << 32 | words[2] if pw == 2 else words[1]
    src = words[2 + pw] << 32 | words[3 + pw] if pw == 2 else words[3]
    want = gcm_job(
        shared, words[0] >> 16 & 0x3F, Pointer(src), Pointer(src), assoclen=5, cryptlen=7,
        authsize=16, iv=iv, encrypt=True, long=drv.long_pointers, order=drv.byteorder,
    )  # fmt: skip
    assert words == want
