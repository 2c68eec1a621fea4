"""BLOB encapsulation/decapsulation as blob_gen.c drives it, black keys and black key blobs."""

from __future__ import annotations

import pytest
from caam_linux import Ring, blob_desc, header, op_index, probe_rng, words_of
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from cryptoffload.caam import regs, status
from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.desc.decoder import decode_operation
from cryptoffload.caam.jr.rngboot import RNG_INSTANTIATE_NO_SK
from cryptoffload.caam.model import CaamModel
from cryptoffload.caam.model.blob import OVERHEAD
from cryptoffload.caam.model.keys import black_size
from cryptoffload.caam.recipes.blob import wrap_key

KEYMOD_16 = bytes(range(0x40, 0x50))
KEYMOD_8 = b"8-byte!!"
SECURE_KEY = b"SECURE_KEY"  # trusted_caam.c's key modifier, 10 bytes
SIZES = [1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 100, 255, 256, 1000, 4095, 4096]
MAC_FAIL = status.ccb(status.CHA_AES, status.ERR_ICVCHK)  # plus the index


def ready(part: str = "t2080", seed: bytes = b"device A", *, long_pointers: bool = False) -> Ring:
    """A model probed as Linux probes it (RNG handles with PR, secure keys), and job ring 0."""
    model = CaamModel(part, seed=seed)
    if long_pointers:
        model.write32(regs.MCFGR, regs.MCFGR_LONG_PTR)
    assert probe_rng(model)[0] == 0
    return Ring(model)


def payload(n: int) -> bytes:
    return bytes((7 * i + n) & 0xFF for i in range(n))


def encap(ring: Ring, data: bytes, keymod: bytes) -> tuple[int, bytes]:
    src, dst = ring.buf(data), ring.buf(len(data) + OVERHEAD)
    word = ring.run(blob_desc(ring, keymod, src, len(data), dst, len(data) + OVERHEAD, encap=True))
    return word, ring.read(dst, len(data) + OVERHEAD)


def decap(ring: Ring, blob: bytes, keymod: bytes) -> tuple[int, bytes, int]:
    """(status, output, index of the OPERATION)."""
    n = len(blob) - OVERHEAD
    src, dst = ring.buf(blob), ring.buf(max(n, 1))
    words = blob_desc(ring, keymod, src, len(blob), dst, n, encap=False)
    return ring.run(words), ring.read(dst, max(n, 0)), op_index(words)


@pytest.fixture(scope="module")
def device() -> Ring:
    return ready()


# ---------------------------------------------------------------------- round trips


@pytest.mark.parametrize("keymod", [KEYMOD_8, KEYMOD_16, SECURE_KEY], ids=["km8", "km16", "km10"])
@pytest.mark.parametrize("n", SIZES)
def test_round_trip(device: Ring, n: int, keymod: bytes) -> None:
    data = payload(n)
    word, blob = encap(device, data, keymod)
    assert word == 0
    assert len(blob) == n + 48  # CAAM_BLOB_OVERHEAD
    assert n < 8 or data not in blob  # shorter data may show up in 48+ random bytes by chance
    word, out, _ = decap(device, blob, keymod)
    assert word == 0 and out == data


def test_blob_gen_words(device: Ring) -> None:
    words = blob_desc(device, SECURE_KEY, 0x80001000, 32, 0x80002000, 80, encap=True)
    assert words == [
        0xB080000A, 0x0480000A, 0x53454355, 0x52455F4B, 0x45590000,
        0xF0000020, 0x80001000, 0xF8000050, 0x80002000, 0x870D0000,
    ]  # fmt: skip


def test_each_blob_has_its_own_blob_key(device: Ring) -> None:
    data = payload(64)
    first, second = encap(device, data, KEYMOD_16)[1], encap(device, data, KEYMOD_16)[1]
    assert first != second
    assert first[:32] != second[:32]  # the covered blob keys differ
    assert decap(device, first, KEYMOD_16)[1] == decap(device, second, KEYMOD_16)[1] == data


@pytest.mark.parametrize(
    ("part", "long_pointers"), [("t1040", False), ("imx7d", False), ("t2080", True)]
)
def test_round_trip_on_other_parts(part: str, long_pointers: bool) -> None:
    ring = ready(part, long_pointers=long_pointers)
    word, blob = encap(ring, b"key material", KEYMOD_16)
    assert word == 0
    assert decap(ring, blob, KEYMOD_16)[:2] == (0, b"key material")


def test_the_master_key_survives_a_reset() -> None:
    ring = ready(seed=b"reset")
    word, blob = encap(ring, b"sealed before the reset", KEYMOD_8)
    assert word == 0
    ring.model.write32(regs.MCFGR, regs.MCFGR_SWRESET)
    assert probe_rng(ring.model)[0] == 0
    ring = Ring(ring.model)
    assert decap(ring, blob, KEYMOD_8)[:2] == (0, b"sealed before the reset")


def test_the_same_seed_is_the_same_device() -> None:
    word, blob = encap(ready(seed=b"twin"), b"for my twin", KEYMOD_16)
    assert word == 0
    assert decap(ready(seed=b"twin"), blob, KEYMOD_16)[:2] == (0, b"for my twin")


# ---------------------------------------------------------------------- failing cases


def test_wrong_key_modifier_is_the_mac_status(device: Ring) -> None:
    word, blob = encap(device, payload(100), KEYMOD_16)
    assert word == 0
    other = bytes([KEYMOD_16[0] ^ 1]) + KEYMOD_16[1:]
    for keymod in (other, KEYMOD_16[:8], KEYMOD_8, b""):
        word, out, index = decap(device, blob, keymod)
        assert word == MAC_FAIL | index << 8
        assert word & 0xFF == 0x1A  # the kernel's -EBADMSG
        assert out == bytes(100)  # nothing is released
    assert "ICV check failed" in status.Status(word).describe()


def test_another_device_cannot_open_a_blob(device: Ring) -> None:
    word, blob = encap(device, b"device A only", KEYMOD_16)
    assert word == 0
    other = ready(seed=b"device B")
    word, out, index = decap(other, blob, KEYMOD_16)
    assert word == MAC_FAIL | index << 8
    assert out == bytes(13)


@pytest.mark.parametrize("where", [0, 31, 32, 40, 47, -16, -1], ids=lambda w: f"byte{w}")
def test_an_altered_blob_fails(device: Ring, where: int) -> None:
    word, blob = encap(device, payload(16), KEYMOD_16)
    assert word == 0
    changed = bytearray(blob)
    changed[where] ^= 0x80
    word, _, index = decap(device, bytes(changed), KEYMOD_16)
    assert word == MAC_FAIL | index << 8


def test_a_truncated_blob_fails(device: Ring) -> None:
    word, blob = encap(device, payload(40), KEYMOD_16)
    assert word == 0
    word, _, index = decap(device, blob[:-1], KEYMOD_16)
    assert word == MAC_FAIL | index << 8
    ring = device
    src, dst = ring.buf(blob[:47]), ring.buf(16)
    words = blob_desc(ring, KEYMOD_16, src, 47, dst, 16, encap=False)
    assert ring.run(words) == status.deco(status.DECO_PROTOCOL_SIZE, op_index(words))


def test_blobs_need_the_secure_keys() -> None:
    model = CaamModel("t2080", seed=b"no sk")
    ring = Ring(model)
    src, dst = ring.buf(16), ring.buf(64)
    words = blob_desc(ring, KEYMOD_16, src, 16, dst, 64, encap=True)
    assert ring.run(words) == status.deco(status.DECO_KEYS_NOT_LOADED, op_index(words))
    # SH0 instantiated without SK: still no secure keys.
    assert ring.run(RNG_INSTANTIATE_NO_SK) == 0
    assert ring.run(words) == 0x40000000 | op_index(words) << 8 | 0x24
    assert ring.read(dst, 64) == bytes(64)


def test_an_encapsulation_needs_the_rng() -> None:
    ring = ready(seed=b"no rng")
    assert ring.run([header(2), 0x8250000C]) == 0  # SH0 uninstantiated; the keys stay
    assert ring.model.read32(regs.RDSTA) & regs.RDSTA_SKVN
    word, _ = encap(ring, b"data", KEYMOD_16)
    index = op_index(blob_desc(ring, KEYMOD_16, 0, 4, 0, 52, encap=True))
    assert word == status.ccb(status.CHA_RNG, status.ERR_RNG_NOT_INSTANTIATED, index)


def test_a_short_output_sequence_is_refused(device: Ring) -> None:
    src, dst = device.buf(32), device.buf(80)
    words = blob_desc(device, KEYMOD_16, src, 32, dst, 79, encap=True)
    assert device.run(words) == status.deco(0x10, op_index(words))
    assert device.read(dst, 80) == bytes(80)


def test_a_key_modifier_over_16_bytes_is_refused(device: Ring) -> None:
    src, dst = device.buf(16), device.buf(64)
    words = blob_desc(device, bytes(17), src, 16, dst, 64, encap=True)
    assert device.run(words) == status.deco(status.DECO_BLOB_UNDEFINED_MODE, op_index(words))


@pytest.mark.parametrize(
    ("protinfo", "code"),
    [
        (0x0001, status.DECO_BLOB_UNDEFINED_MODE),  # format 1: undefined
        (0x0002, status.DECO_BLOB_UNDEFINED_MODE),  # master key verification: not modelled
        (0x0003, status.DECO_BLOB_UNDEFINED_MODE),  # test format: not modelled
        (0x0100, status.DECO_BLOB_UNDEFINED_MODE),  # EKT without BLACK
        (0x8000, status.DECO_BLOB_UNDEFINED_MODE),  # an unknown bit
        (0x0008, status.DECO_BLOB_SECMEM),  # plaintext in secure memory: the model has none
        (0x0204, status.DECO_BLOB_TRUSTED),  # TDKEK-covered keys need a trusted descriptor
    ],
)
def test_modes_the_model_does_not_run(device: Ring, protinfo: int, code: int) -> None:
    src, dst = device.buf(16), device.buf(64)
    words = blob_desc(device, KEYMOD_16, src, 16, dst, 64, encap=True)
    words[-1] |= protinfo
    assert device.run(words) == status.deco(code, op_index(words))


# ---------------------------------------------------------------------- black keys


def make_black(ring: Ring, key: bytes, *, ccm: bool) -> tuple[int, bytes]:
    """KEY class 1 (red, from memory), FIFO STORE class-1 key as KEY_KEK or KEY_CCM_JKEK."""
    src, dst = ring.buf(key), ring.buf(black_size(len(key), ccm=ccm))
    store = 0x62000000 | (0x14 if ccm else 0x24) << 16 | len(key)
    body = [0x02000000 | len(key), *ring.pointer(src), store, *ring.pointer(dst)]
    word = ring.run([header(len(body) + 1), *body])
    return word, ring.read(dst, black_size(len(key), ccm=ccm))


def cbc(ring: Ring, key_words: list[int], msg: bytes, iv: bytes) -> tuple[int, bytes]:
    """AES-CBC encrypt of ``msg`` with the KEY command(s) ``key_words``."""
    p_iv, p_in, p_out = ring.buf(iv), ring.buf(msg), ring.buf(len(msg))
    body = [*key_words, 0x12200010, *ring.pointer(p_iv), 0x82100101]
    body += [0x22120000 | len(msg), *ring.pointer(p_in), 0x60300000 | len(msg)]
    body += ring.pointer(p_out)
    return ring.run([header(len(body) + 1), *body]), ring.read(p_out, len(msg))


def black_key_words(ring: Ring, black: bytes, n: int, *, ccm: bool) -> list[int]:
    """KEY class 1 ENC (| EKT for CCM), length = the key's own length, pointer to the black key."""
    return [0x02400000 | (0x100000 if ccm else 0) | n, *ring.pointer(ring.buf(black))]


def reference_cbc(key: bytes, iv: bytes, msg: bytes) -> bytes:
    enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return enc.update(msg) + enc.finalize()


@pytest.mark.parametrize("ccm", [False, True], ids=["ecb", "ccm"])
@pytest.mark.parametrize("n", [16, 24, 32])
def test_a_black_key_encrypts_as_its_red_key(device: Ring, n: int, ccm: bool) -> None:
    key, iv, msg = payload(n), bytes(range(16)), payload(64)
    word, black = make_black(device, key, ccm=ccm)
    assert word == 0
    assert len(black) == black_size(n, ccm=ccm)
    assert key not in black
    red_word, red = cbc(device, [0x02000000 | n, *device.pointer(device.buf(key))], msg, iv)
    word, out = cbc(device, black_key_words(device, black, n, ccm=ccm), msg, iv)
    assert red_word == word == 0
    assert out == red == reference_cbc(key, iv, msg)


def test_black_key_sizes() -> None:
    assert [black_size(n, ccm=False) for n in (16, 24, 32)] == [16, 32, 32]
    assert [black_size(n, ccm=True) for n in (16, 24, 32)] == [28, 36, 44]


def test_a_changed_ccm_black_key_fails_its_icv(device: Ring) -> None:
    key = payload(16)
    black = bytearray(make_black(device, key, ccm=True)[1])
    black[10] ^= 1
    words = black_key_words(device, bytes(black), 16, ccm=True)
    word, _ = cbc(device, words, payload(16), bytes(16))
    assert word == status.ccb(status.CHA_AES, status.ERR_ICVCHK, 1)


def test_black_keys_do_not_survive_a_reset() -> None:
    ring = ready(seed=b"jdkek")
    key, iv, msg = payload(16), bytes(16), payload(32)
    ecb_black = make_black(ring, key, ccm=False)[1]
    ccm_black = make_black(ring, key, ccm=True)[1]
    ring.model.write32(regs.MCFGR, regs.MCFGR_SWRESET)
    ring = Ring(ring.model)
    word, _ = cbc(ring, black_key_words(ring, ecb_black, 16, ccm=False), msg, iv)
    assert word == status.deco(status.DECO_KEYS_NOT_LOADED, 1)  # no JDKEK before SK
    # A new JDKEK after the next probe: the old black keys are garbage now.
    assert probe_rng(ring.model, virt=False)[0] == 0
    word, out = cbc(ring, black_key_words(ring, ecb_black, 16, ccm=False), msg, iv)
    assert word == 0 and out != reference_cbc(key, iv, msg)
    word, _ = cbc(ring, black_key_words(ring, ccm_black, 16, ccm=True), msg, iv)
    assert word == status.ccb(status.CHA_AES, status.ERR_ICVCHK, 1)


def test_black_keys_need_the_secure_keys() -> None:
    ring = Ring(CaamModel("t2080", seed=b"bare"))
    assert ring.run(RNG_INSTANTIATE_NO_SK) == 0  # an RNG, no secure keys
    word, black = make_black(ring, payload(16), ccm=False)
    assert word == status.deco(status.DECO_KEYS_NOT_LOADED, 3)
    assert black == bytes(16)


def test_no_store_reveals_a_key_register(device: Ring) -> None:
    key = payload(16)
    black = make_black(device, key, ccm=False)[1]
    for key_words in ([0x02000000 | 16, *device.pointer(device.buf(key))],
                      black_key_words(device, black, 16, ccm=False)):  # fmt: skip
        out = device.buf(64)
        # STORE of the class-1 key register: refused (DECO invalid STORE), nothing written.
        store = [0x52400010, *device.pointer(out)]
        word = device.run([header(len(key_words) + 3), *key_words, *store])
        assert word == status.deco(0x08, len(key_words) + 1)
        # FIFO STORE of it: only ever its black form.
        fifo = [0x62240010, *device.pointer(out)]
        assert device.run([header(len(key_words) + 3), *key_words, *fifo]) == 0
        written = device.read(out, 64)
        assert key not in written and written[:16] == black
    # Nor do the DECO page's key registers (class 1 key at 0x400, class 2 at 0x600).
    base = regs.deco_base(0)
    assert all(device.model.read32(base + off) == 0 for off in range(0x400, 0x800, 4))


def test_a_fifo_store_of_a_key_of_another_length_is_refused(device: Ring) -> None:
    src, dst = device.buf(16), device.buf(32)
    body = [0x02000010, *device.pointer(src), 0x62240020, *device.pointer(dst)]
    assert device.run([header(len(body) + 1), *body]) == status.deco(0x0B, 3)


def test_enc_needs_a_pointer_and_ekt_needs_enc(device: Ring) -> None:
    imm = [header(6), 0x02C00010, 0, 0, 0, 0]  # ENC with IMM: refused (the model's choice)
    assert device.run(imm) == status.deco(0x06, 1)
    ekt = [header(3), 0x02100010, device.buf(16)]
    assert device.run(ekt) == status.deco(0x06, 1)


# ---------------------------------------------------------------------- black key blobs


@pytest.mark.parametrize("long_pointers", [False, True], ids=["ptr32", "ptr64"])
@pytest.mark.parametrize("ccm", [False, True], ids=["ecb", "ccm"])
def test_wrap_key_is_the_posted_series_encapsulation(ccm: bool, long_pointers: bool) -> None:
    """recipes.blob.wrap_key builds the posted series' encapsulation with is_pkey, word for
    word: red key -> black over its own input -> blob; the tests below seal key blobs with it."""
    ring = ready(long_pointers=long_pointers)
    seen: list[list[int]] = []
    submit = ring.driver.submit

    def spy(words: list[int], **kw: object) -> object:
        seen.append(list(words))
        return submit(words, **kw)  # type: ignore[arg-type]

    ring.driver.submit = spy  # type: ignore[method-assign]
    key = payload(24)
    sealed = wrap_key(ring.driver, key, KEYMOD_16, ccm=ccm)
    assert len(sealed) == 24 + OVERHEAD and key not in sealed
    (words,) = seen
    ptr = len(ring.pointer(0))
    p_in = words[2] << 32 | words[3] if ptr == 2 else words[2]
    at = words.index(0xF8400000) + 1
    p_out = words[at] << 32 | words[at + 1] if ptr == 2 else words[at]
    body = [0x02000000 | 24, *ring.pointer(p_in)]
    body += [0x62000000 | (0x14 if ccm else 0x24) << 16 | 24, *ring.pointer(p_in)]
    body += [0xA1000201]  # JUMP jsl NOP all +1: wait for the store
    body += [0x04800000 | len(KEYMOD_16), *words_of(KEYMOD_16, ring.order)]
    body += [0xF0400000, *ring.pointer(p_in), 24, 0xF8400000, *ring.pointer(p_out), 24 + OVERHEAD]
    body += [0x870D0004 | (0x100 if ccm else 0)]
    assert words == [header(len(body) + 1), *body]


def black_blob_decap(
    ring: Ring, blob: bytes, keymod: bytes, *, ccm: bool, black: bool = True
) -> tuple[int, bytes, int]:
    """The posted series' decapsulation with is_pkey: LOAD class-2 key IMM keymod, SEQ IN/OUT
    (16-bit), OPERATION 0x860D0004[|0x100]. Not recipes.blob.unwrap_key's words (KEY, EXT
    lengths): the model takes both shapes, and this one opens what wrap_key seals."""
    n = len(blob) - OVERHEAD
    p_in, p_out = ring.buf(blob), ring.buf(black_size(n, ccm=ccm))
    body = [0x14C00000 | len(keymod), *words_of(keymod, ring.order)]
    body += [0xF0000000 | len(blob), *ring.pointer(p_in), 0xF8000000 | n, *ring.pointer(p_out)]
    body += [(0x860D0004 if black else 0x860D0000) | (0x100 if ccm else 0)]
    words = [header(len(body) + 1), *body]
    return ring.run(words), ring.read(p_out, black_size(n, ccm=ccm)), op_index(words)


@pytest.mark.parametrize("ccm", [False, True], ids=["ecb", "ccm"])
@pytest.mark.parametrize("n", [16, 24, 32])
def test_black_key_blob_round_trip_and_use(n: int, ccm: bool) -> None:
    ring = ready(seed=b"paes")
    key, iv, msg = payload(n), bytes(range(16)), payload(48)
    blob = wrap_key(ring.driver, key, KEYMOD_16, ccm=ccm)
    assert len(blob) == n + 48 and key not in blob
    word, black, _ = black_blob_decap(ring, blob, KEYMOD_16, ccm=ccm)
    assert word == 0 and key not in black
    word, out = cbc(ring, black_key_words(ring, black, n, ccm=ccm), msg, iv)
    assert word == 0 and out == reference_cbc(key, iv, msg)


def test_a_black_blob_outlives_its_jdkek() -> None:
    ring = ready(seed=b"paes reboot")
    key, iv, msg = payload(32), bytes(16), payload(16)
    blob = wrap_key(ring.driver, key, KEYMOD_16, ccm=True)
    ring.model.write32(regs.MCFGR, regs.MCFGR_SWRESET)  # new boot: new JDKEK
    assert probe_rng(ring.model)[0] == 0
    ring = Ring(ring.model)
    word, black, _ = black_blob_decap(ring, blob, KEYMOD_16, ccm=True)
    assert word == 0
    word, out = cbc(ring, black_key_words(ring, black, 32, ccm=True), msg, iv)
    assert word == 0 and out == reference_cbc(key, iv, msg)


def test_red_and_black_blobs_do_not_mix(device: Ring) -> None:
    black_blob = wrap_key(device.driver, payload(16), KEYMOD_16, ccm=False)
    word, out, index = decap(device, black_blob, KEYMOD_16)  # opened as red data
    assert word == MAC_FAIL | index << 8 and out == bytes(16)
    word, red_blob = encap(device, payload(16), KEYMOD_16)
    assert word == 0
    word, _, index = black_blob_decap(device, red_blob, KEYMOD_16, ccm=False)
    assert word == MAC_FAIL | index << 8


def test_black_blob_failures(device: Ring) -> None:
    blob = wrap_key(device.driver, payload(16), KEYMOD_16, ccm=True)
    word, _, index = black_blob_decap(device, blob, KEYMOD_8, ccm=True)
    assert word == MAC_FAIL | index << 8
    other = ready(seed=b"device C")
    word, _, index = black_blob_decap(other, blob, KEYMOD_16, ccm=True)
    assert word == MAC_FAIL | index << 8
    # A black key of 65 bytes (over the model's 64): DECO 0xC4.
    big = bytes(65 + OVERHEAD)
    word, _, index = black_blob_decap(device, big, KEYMOD_16, ccm=False)
    assert word == status.deco(status.DECO_BLOB_BLACK_SIZE, index)


def test_the_tools_name_the_blob_fields() -> None:
    word = DescriptorBuilder().protocol("BLOB", kind="encap", flags=["BLACK", "EKT"]).words()[1]
    assert word == 0x870D0104
    fields = decode_operation(0x860D0104)
    assert fields["optype"] == "decap" and fields["prot_name"] == "BLOB"
    assert fields["format"] == "normal" and fields["flags"] == ("BLACK", "EKT")
    assert decode_operation(0x870D0002)["format"] == "master-key-verification"
