"""Zero-copy buffers on the CAAM model: DmaBuffers from ``engine.buffer(n)`` read and written
where they lie by ``encrypt_into`` / ``decrypt_into`` / ``update_into`` (same answers as
software, nothing copied or wiped), busy buffers refused, buffers of another or a closed engine
copied as any other, and transfers above 64 KiB cut into jobs in flight together. Input and
output overlapping (in place too) are refused where `cryptography` refuses them (51 on), as
software would refuse them; with 50 the engine gets a copy of the input."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.decrepit.ciphers import modes as ref_decrepit
from cryptography.hazmat.primitives.ciphers import Cipher as RefCipher
from cryptography.hazmat.primitives.ciphers import algorithms as ref_algorithms
from cryptography.hazmat.primitives.ciphers import modes as ref_modes
from cryptography.hazmat.primitives.ciphers.aead import AESCCM as RefCCM
from cryptography.hazmat.primitives.ciphers.aead import AESGCM as RefGCM

from cryptoffload import DmaBuffer, Policy, Provider, hashes, using
from cryptoffload._buffers import REFUSED as OVERLAP_REFUSED
from cryptoffload.aead import AESCCM, AESGCM
from cryptoffload.caam.recipes.direct import PIECE
from cryptoffload.ciphers import Cipher, algorithms, modes
from cryptoffload.core.ops import CipherOp

TAKE_ALL = Policy(min_size={"*": 0})
OVERLAP = "data and buf must not overlap"
PARTS = ("t2080", "imx7d")
COPIES = ("copy_in_bytes", "copy_out_bytes", "wipe_bytes", "zero_copy_bytes", "jobs")


@pytest.fixture(params=PARTS)
def caam(request: pytest.FixtureRequest) -> Iterator[tuple[Provider, Any]]:
    provider = Provider([f"caam:model={request.param}"], policy=TAKE_ALL)
    engine = provider.engines[0]
    yield provider, engine
    engine.close()


def _filled(engine: Any, data: bytes, room: int | None = None) -> DmaBuffer:
    buf = engine.buffer(room or len(data))
    buf[: len(data)] = data
    return buf


def _delta(engine: Any, before: dict[str, Any]) -> dict[str, int]:
    after = engine.figures
    return {k: after[k] - before[k] for k in COPIES}


def _ref_mode(mode: str, iv: bytes) -> Any:
    if mode == "ECB":
        return ref_modes.ECB()
    if mode in ("CFB", "OFB"):
        return getattr(ref_decrepit, mode)(iv)
    return getattr(ref_modes, mode)(iv)


def _our_mode(mode: str, iv: bytes) -> Any:
    if mode in ("CFB", "OFB"):  # cryptoffload takes `cryptography`'s decrepit modes as they are
        return getattr(ref_decrepit, mode)(iv)
    return modes.ECB() if mode == "ECB" else getattr(modes, mode)(iv)


# -- the buffer itself -------------------------------------------------------------------------


def test_dma_buffer_is_a_writable_bytes_like_object_of_the_pool(caam):
    _, engine = caam
    buf = engine.buffer(64)
    assert isinstance(buf, DmaBuffer) and len(buf) == 64
    buf[:] = bytes(range(64))
    assert bytes(buf) == bytes(range(64))
    view = memoryview(buf).cast("B")
    view[0] = 200
    assert buf[0] == 200 and bytes(buf)[0] == 200
    window = buf[16:32]
    assert isinstance(window, DmaBuffer) and bytes(window) == bytes(range(16, 32))
    assert window.phys == buf.phys + 16
    window[:4] = b"abcd"
    assert bytes(buf[16:20]) == b"abcd"
    assert engine.figures["dma_in_use"] >= 64
    buf.close()


def test_a_window_of_a_window_is_at_the_sum_of_the_offsets(caam):
    _, engine = caam
    with engine.buffer(64) as buf:
        buf[:] = bytes(range(64))
        outer = buf[16:48]
        inner = outer[8:16]
        assert isinstance(inner, DmaBuffer)
        assert (outer.phys, inner.phys) == (buf.phys + 16, buf.phys + 24)
        assert inner[2:4].phys == buf.phys + 26 and outer[-8:].phys == buf.phys + 40
        assert bytes(inner) == bytes(range(24, 32)) and inner[0] == 24
        assert bytes(inner[2:4]) == bytes([26, 27]) and bytes(outer[-8:]) == bytes(range(40, 48))
        inner[:] = b"\xaa" * 8
        memoryview(outer[20:24]).cast("B")[:] = b"\xbb" * 4
        expected = bytes(range(24)) + b"\xaa" * 8 + bytes(range(32, 36)) + b"\xbb" * 4
        assert bytes(buf) == expected + bytes(range(40, 64))


#: Where _nested_windows puts the output window in its buffer.
OUT_AT = 8192 + 4096


def _nested_windows(engine: Any, n_in: int, n_out: int) -> tuple[DmaBuffer, Any, Any, bytes]:
    """A buffer filled with a random background, an input window of a window (``n_in`` bytes
    at byte 1032) and an output window of a window (``n_out`` bytes at OUT_AT), and the
    buffer's bytes. Were the outer windows' offsets lost, the two would still not overlap: the
    engine would read and write other bytes of the buffer, in place, not through copies."""
    buf = _filled(engine, os.urandom(16384))
    src = buf[1024:8192][8 : 8 + n_in]
    out = buf[8192:16384][4096 : 4096 + n_out]
    return buf, src, out, bytes(buf)


def test_an_aead_into_job_on_windows_of_windows_reads_and_writes_only_them(caam):
    provider, engine = caam
    key, nonce, n = os.urandom(16), os.urandom(12), 1000
    buf, src, out, before = _nested_windows(engine, n, n + 16)
    data = bytes(src)
    with using(provider):
        gcm = AESGCM(key)
        figures = engine.figures
        assert gcm.encrypt_into(nonce, src, b"hdr", out) == n + 16
        moved = _delta(engine, figures)
        assert moved["zero_copy_bytes"] == 2 * n + 16  # in place, at the windows' addresses
        sealed = RefGCM(key).encrypt(nonce, data, b"hdr")
        assert bytes(out) == sealed
        assert bytes(buf) == before[:OUT_AT] + sealed + before[OUT_AT + n + 16 :]
        back = buf[8192:16384][6144 : 6144 + n]
        assert gcm.decrypt_into(nonce, out, b"hdr", back) == n
        assert bytes(back) == data
    buf.close()


@pytest.mark.parametrize("mode", ["CBC", "CTR"])
def test_a_cipher_update_into_on_windows_of_windows_reads_and_writes_only_them(caam, mode):
    provider, engine = caam
    key, iv, n = os.urandom(16), os.urandom(16), 2048
    buf, src, out, before = _nested_windows(engine, n, n + 15)
    data = bytes(src)
    with using(provider):
        figures = engine.figures
        ctx = Cipher(algorithms.AES(key), _our_mode(mode, iv)).encryptor()
        assert ctx.update_into(src, out) == n
        moved = _delta(engine, figures)
    assert moved["zero_copy_bytes"] == 2 * n and moved["copy_in_bytes"] == 0
    sealed = RefCipher(ref_algorithms.AES(key), _ref_mode(mode, iv)).encryptor().update(data)
    assert bytes(out[:n]) == sealed
    assert bytes(buf) == before[:OUT_AT] + sealed + before[OUT_AT + n :]
    buf.close()


def test_dma_buffer_repr_gives_size_and_engine_never_contents(caam):
    _, engine = caam
    with engine.buffer(48) as buf:
        buf[:] = b"\x5a" * 48
        text = repr(buf)
        assert "48 bytes" in text and engine.name in text
        assert "5a" not in text.lower() and "Z" not in text


def test_dma_buffer_refuses_an_empty_or_odd_size(caam):
    _, engine = caam
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError):
            engine.buffer(bad)


def test_closing_a_buffer_returns_its_memory_unwiped_and_ends_its_use(caam):
    _, engine = caam
    start = engine.figures["dma_in_use"]
    wiped = engine.figures["wipe_bytes"]
    buf = engine.buffer(4096)
    assert engine.figures["dma_in_use"] == start + 4096
    buf.close()
    buf.close()  # twice is harmless
    assert engine.figures["dma_in_use"] == start
    assert engine.figures["wipe_bytes"] == wiped  # the caller's memory: not ours to wipe
    assert buf.closed
    with pytest.raises(ValueError, match="closed"):
        bytes(buf)
    gcm = AESGCM(AESGCM.generate_key(128), provider=Provider([engine], policy=TAKE_ALL))
    with pytest.raises(ValueError, match="closed"):
        gcm.encrypt_into(os.urandom(12), b"x" * 16, None, buf)


# -- same answers as software, nothing copied ---------------------------------------------------


@pytest.mark.parametrize("mode", ["ECB", "CBC", "CTR", "CFB", "OFB"])
@pytest.mark.parametrize("bits", [128, 256])
def test_cipher_update_into_dma_buffers_matches_software_without_a_copy(caam, mode, bits):
    provider, engine = caam
    key, iv, data = os.urandom(bits // 8), os.urandom(16), os.urandom(4096)
    src = _filled(engine, data)
    dst = engine.buffer(4096 + 15)  # cryptography's room rule: a block less one more
    with using(provider):
        before = engine.figures
        n = Cipher(algorithms.AES(key), _our_mode(mode, iv)).encryptor().update_into(src, dst)
        moved = _delta(engine, before)
        sealed = RefCipher(ref_algorithms.AES(key), _ref_mode(mode, iv)).encryptor().update(data)
        assert n == 4096 and bytes(dst[:n]) == sealed
        assert moved["copy_in_bytes"] == moved["copy_out_bytes"] == moved["wipe_bytes"] == 0
        assert moved["zero_copy_bytes"] == 2 * 4096 and moved["jobs"] == 1
        back = Cipher(algorithms.AES(key), _our_mode(mode, iv)).decryptor()
        if OVERLAP_REFUSED:  # in place, as `cryptography` 51 refuses it; src is apart
            with pytest.raises(ValueError, match=OVERLAP):
                back.update_into(dst[:n], dst)
            apart = engine.buffer(4096 + 15)
            assert back.update_into(dst[:n], apart) == n
            assert bytes(apart[:n]) == data
        else:  # in place: the ciphertext decrypted where it lies
            assert back.update_into(dst[:n], dst) == n
            assert bytes(dst[:n]) == data
    assert provider.counters.snapshot()[engine.name][f"aes-{bits}-{mode.lower()}"]["ops"] == 2


def test_ordinary_buffers_are_copied_and_counted(caam):
    provider, engine = caam
    key, iv, data = os.urandom(16), os.urandom(16), os.urandom(4096)
    out = bytearray(4096 + 15)
    with using(provider):
        before = engine.figures
        Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor().update_into(data, out)
        moved = _delta(engine, before)
    assert moved["copy_in_bytes"] >= 4096 and moved["copy_out_bytes"] >= 4096
    assert moved["wipe_bytes"] >= 4096 and moved["zero_copy_bytes"] == 0


@pytest.mark.parametrize("mode", ["CBC", "CTR", "OFB"])
def test_an_update_in_place_keeps_the_chain_for_the_next(caam, mode):
    provider, engine = caam
    key, iv, data = os.urandom(16), os.urandom(16), os.urandom(8192)
    sealed = RefCipher(ref_algorithms.AES(key), _ref_mode(mode, iv)).encryptor().update(data)
    buf = _filled(engine, sealed, 8192 + 15)
    with using(provider):
        ctx = Cipher(algorithms.AES(key), _our_mode(mode, iv)).decryptor()
        if OVERLAP_REFUSED:
            with pytest.raises(ValueError, match=OVERLAP):
                ctx.update_into(buf[:4096], buf[: 4096 + 15])
            assert bytes(buf[:8192]) == sealed  # refused before anything was written
            return
        ctx.update_into(buf[:4096], buf[: 4096 + 15])
        ctx.update_into(buf[4096:8192], buf[4096:])
    assert bytes(buf[:8192]) == data


@pytest.mark.parametrize("mode", ["CBC", "CTR"])
def test_a_transfer_above_64_kib_is_cut_into_64_kib_jobs(caam, mode):
    provider, engine = caam
    size = 200 * 1024
    key, iv, data = os.urandom(32), os.urandom(16), os.urandom(size)
    src, dst = _filled(engine, data, size + 15), engine.buffer(size + 15)
    ref = RefCipher(ref_algorithms.AES(key), _ref_mode(mode, iv))
    with using(provider):
        before = engine.figures
        Cipher(algorithms.AES(key), _our_mode(mode, iv)).encryptor().update_into(src[:size], dst)
        moved = _delta(engine, before)
        assert bytes(dst[:size]) == ref.encryptor().update(data)
        assert moved["jobs"] == -(-size // PIECE) == 4
        assert moved["copy_in_bytes"] == moved["copy_out_bytes"] == 0
        peak = engine.figures["max_in_flight"]
        before = engine.figures
        Cipher(algorithms.AES(key), _our_mode(mode, iv)).decryptor().update_into(dst[:size], src)
        assert _delta(engine, before)["jobs"] == 4
        assert bytes(src[:size]) == data
    # CTR both ways and CBC decryption have every piece's IV at once: all in flight together
    assert engine.figures["max_in_flight"] >= 4
    if mode == "CTR":
        assert peak >= 4


@pytest.mark.parametrize("cls,ref", [(AESGCM, RefGCM), (AESCCM, RefCCM)])
@pytest.mark.parametrize(
    "aad", [None, b"", b"header", bytes(range(256)) * 2], ids=["none", "empty", "6", "512"]
)
def test_aead_into_dma_buffers_matches_software(caam, cls, ref, aad):
    provider, engine = caam
    key, nonce, data = os.urandom(16), os.urandom(12), os.urandom(3000)
    src, sealed_buf = _filled(engine, data), engine.buffer(3016)
    with using(provider):
        aead = cls(key)
        before = engine.figures
        assert aead.encrypt_into(nonce, src, aad, sealed_buf) == 3016
        moved = _delta(engine, before)
        assert bytes(sealed_buf) == ref(key).encrypt(nonce, data, aad)
        assert moved["zero_copy_bytes"] == 3000 + 3016
        assert moved["copy_out_bytes"] == 0
        assert moved["copy_in_bytes"] < 3000  # the AAD and S/G tables, never the payload
        plain = engine.buffer(3000)
        assert aead.decrypt_into(nonce, sealed_buf, aad, plain) == 3000
        assert bytes(plain) == data
        if OVERLAP_REFUSED:
            with pytest.raises(ValueError, match=OVERLAP):
                aead.decrypt_into(nonce, sealed_buf, aad, sealed_buf[:3000])
        else:  # in place: the plaintext written over the ciphertext it came from
            assert aead.decrypt_into(nonce, sealed_buf, aad, sealed_buf[:3000]) == 3000
            assert bytes(sealed_buf[:3000]) == data
    assert provider.counters.snapshot()[engine.name][f"aes-128-{cls.__name__[3:].lower()}"]


@pytest.mark.parametrize("cls", [AESGCM, AESCCM])
def test_a_failed_tag_leaves_no_plaintext_in_the_dma_buffer(caam, cls):
    provider, engine = caam
    key, nonce, data = os.urandom(16), os.urandom(12), os.urandom(2048)
    with using(provider):
        aead = cls(key)
        sealed = bytearray(aead.encrypt(nonce, data, b"aad"))
        sealed[100] ^= 1
        src = _filled(engine, bytes(sealed))
        out = engine.buffer(2048)
        out[:] = b"\xee" * 2048
        with pytest.raises(InvalidTag):
            aead.decrypt_into(nonce, src, b"aad", out)
        assert bytes(out) == bytes(2048)
        if OVERLAP_REFUSED:  # in place is refused before the engine reads a byte
            with pytest.raises(ValueError, match=OVERLAP):
                aead.decrypt_into(nonce, src, b"aad", src[:2048])
            assert bytes(src) == bytes(sealed)
            return
        with pytest.raises(InvalidTag):  # in place: the ciphertext is gone, and no plaintext
            aead.decrypt_into(nonce, src, b"aad", src[:2048])
        assert bytes(src[:2048]) == bytes(2048)


def test_software_decrypt_into_leaves_no_plaintext_on_a_failed_tag():
    key, nonce = os.urandom(16), os.urandom(12)
    with using(Provider(["software"])):
        gcm = AESGCM(key)
        sealed = bytearray(gcm.encrypt(nonce, b"secret" * 10, None))
        sealed[-1] ^= 1
        out = bytearray(60)
        with pytest.raises(InvalidTag):
            gcm.decrypt_into(nonce, bytes(sealed), None, out)
    assert out == bytearray(60)


@pytest.mark.parametrize("which", ["input", "output"])
def test_one_dma_buffer_side_with_an_ordinary_other_side(caam, which):
    provider, engine = caam
    key, nonce, data = os.urandom(16), os.urandom(12), os.urandom(1000)
    src: Any = _filled(engine, data) if which == "input" else data
    out: Any = engine.buffer(1016) if which == "output" else bytearray(1016)
    with using(provider):
        before = engine.figures
        AESGCM(key).encrypt_into(nonce, src, b"h", out)
        assert _delta(engine, before)["zero_copy_bytes"] == (1000 if which == "input" else 1016)
    assert bytes(out) == RefGCM(key).encrypt(nonce, data, b"h")


def test_cross_checked_results_through_dma_buffers_agree(caam):
    _, engine = caam
    provider = Provider([engine], policy=TAKE_ALL, cross_check=1.0)
    key, nonce, data = os.urandom(16), os.urandom(12), os.urandom(512)
    src, out = _filled(engine, data), engine.buffer(528)
    with using(provider):
        AESGCM(key).encrypt_into(nonce, src, None, out)
        AESGCM(key).decrypt_into(nonce, out, None, src)
    assert bytes(src) == data
    snapshot = provider.counters.snapshot()[engine.name]["aes-128-gcm"]
    assert snapshot.get("mismatches", 0) == 0 and snapshot["faults"] == 0


# -- buffers that are not this engine's --------------------------------------------------------


def test_a_buffer_of_another_engine_is_copied_as_any_other(caam):
    provider, engine = caam
    other = Provider(["caam:model=t2080"], policy=TAKE_ALL)
    stranger = other.engines[0]
    try:
        key, iv, data = os.urandom(16), os.urandom(16), os.urandom(2048)
        src, dst = _filled(stranger, data), stranger.buffer(2048 + 15)
        with using(provider):
            before = engine.figures
            Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor().update_into(src, dst)
            moved = _delta(engine, before)
        ref = RefCipher(ref_algorithms.AES(key), ref_modes.CBC(iv)).encryptor()
        assert bytes(dst[:2048]) == ref.update(data)
        assert moved["zero_copy_bytes"] == 0 and moved["copy_in_bytes"] >= 2048
    finally:
        stranger.close()


def test_a_buffer_of_a_closed_engine_stays_an_ordinary_buffer(caam):
    provider, _ = caam
    other = Provider(["caam:model=imx7d"], policy=TAKE_ALL)
    gone = other.engines[0]
    key, nonce, data = os.urandom(16), os.urandom(12), os.urandom(777)
    src, out = _filled(gone, data), gone.buffer(793)
    gone.close()
    assert src.engine is None and "closed engine" in repr(src)
    assert bytes(src) == data
    with using(provider):
        AESGCM(key).encrypt_into(nonce, src, None, out)
    assert bytes(out) == RefGCM(key).encrypt(nonce, data, None)
    src.close()


# -- busy buffers --------------------------------------------------------------------------------


def test_a_buffer_used_by_a_job_in_flight_is_refused_until_it_completes(caam, monkeypatch):
    provider, engine = caam
    driver = engine._driver
    inside, go_on = threading.Event(), threading.Event()
    real_wait = type(driver)._wait

    def held_wait(self: Any, job: Any, timeout: float | None) -> None:
        inside.set()  # the job is on the ring and not reaped: in flight
        go_on.wait(10)
        real_wait(self, job, timeout)

    key, nonce, data = os.urandom(16), os.urandom(12), os.urandom(4096)
    src, out = _filled(engine, data), engine.buffer(4112)
    results: list[Any] = []

    def first() -> None:
        with using(provider):
            results.append(AESGCM(key).encrypt_into(nonce, src, None, out))

    monkeypatch.setattr(type(driver), "_wait", held_wait)
    worker = threading.Thread(target=first)
    worker.start()
    try:
        assert inside.wait(10)
        assert src.busy and out.busy
        with using(provider), pytest.raises(BufferError, match="busy"):
            AESGCM(key).encrypt_into(nonce, src, None, engine.buffer(4112))
        with using(provider), pytest.raises(BufferError, match="busy"):
            Cipher(algorithms.AES(key), modes.CTR(nonce + bytes(4))).encryptor().update_into(
                data, out[:4096]
            )
        with pytest.raises(BufferError, match="busy"):
            out.close()
    finally:
        go_on.set()
        worker.join(10)
    monkeypatch.undo()
    assert results == [4112] and not src.busy and not out.busy
    assert bytes(out) == RefGCM(key).encrypt(nonce, data, None)
    with using(provider):  # free again once the op returned
        AESGCM(key).decrypt_into(nonce, out, None, src)
    assert bytes(src) == data
    out.close()
    src.close()


def test_a_ring_that_broke_keeps_its_buffers_busy_for_good(caam, monkeypatch):
    provider, engine = caam
    driver = engine._driver
    key, iv, data = os.urandom(16), os.urandom(16), os.urandom(1024)
    src, dst = _filled(engine, data), engine.buffer(1024 + 15)
    monkeypatch.setattr(type(driver), "broken", property(lambda self: "stuck in reset"))
    with using(provider):
        Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor().update_into(src, dst)
    monkeypatch.undo()
    assert src.busy and dst.busy  # the block may still write them: never reused
    with pytest.raises(BufferError):
        dst.close()


@pytest.mark.parametrize("name", ["sha1", "sha256", "sha512"])
@pytest.mark.parametrize("size", [0, 1000, 300 * 1024])
def test_a_digest_of_a_dma_buffer_reads_it_in_place(caam, name, size):
    provider, engine = caam
    if name not in provider.capabilities[engine.name].algorithms:
        pytest.skip(f"{engine.name} has no {name}")
    data = os.urandom(size)
    buf = _filled(engine, data, size or 1)[:size]
    before = engine.figures
    got = hashes.digest(buf, getattr(hashes, name.upper())(), provider=provider)
    moved = _delta(engine, before)
    assert got == hashlib.new(name, data).digest()
    assert moved["jobs"] == 1 and moved["zero_copy_bytes"] == size
    assert moved["copy_in_bytes"] == 0  # only the digest comes back through DMA memory


def test_a_dma_buffer_is_taken_wherever_bytes_are_even_by_software_alone(caam):
    _, engine = caam
    key, nonce, data = os.urandom(16), os.urandom(12), os.urandom(100)
    buf = _filled(engine, data)
    with using(Provider(["software"])):
        gcm = AESGCM(key)
        sealed = gcm.encrypt(nonce, buf, buf[:10])
        assert sealed == RefGCM(key).encrypt(nonce, data, data[:10])
        sealed_buf = _filled(engine, sealed)
        assert gcm.decrypt(nonce, sealed_buf, buf[:10]) == data
        assert hashes.digest(buf, hashes.SHA256()) == hashlib.sha256(data).digest()
        ctx = Cipher(algorithms.AES(key), modes.CTR(nonce + bytes(4))).encryptor()
        out = engine.buffer(100)
        ctx.update_into(buf, out)
    ref = RefCipher(ref_algorithms.AES(key), ref_modes.CTR(nonce + bytes(4))).encryptor()
    assert bytes(out) == ref.update(data)


def test_input_and_output_overlapping_at_an_offset_are_refused_or_the_engine_reads_a_copy(caam):
    provider, engine = caam
    key, iv, data = os.urandom(16), os.urandom(16), os.urandom(3 * PIECE)
    buf = _filled(engine, data, len(data) + 32)
    with using(provider):
        before = engine.figures
        ctx = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
        if OVERLAP_REFUSED:
            with pytest.raises(ValueError, match=OVERLAP):
                ctx.update_into(buf[: len(data)], buf[16:])
            assert _delta(engine, before)["jobs"] == 0 and bytes(buf[: len(data)]) == data
            return
        ctx.update_into(buf[: len(data)], buf[16:])  # the output 16 bytes on from the input
        moved = _delta(engine, before)
    ref = RefCipher(ref_algorithms.AES(key), ref_modes.CTR(iv)).encryptor()
    assert bytes(buf[16 : 16 + len(data)]) == ref.update(data)
    assert moved["copy_in_bytes"] >= len(data)  # the input, copied before the engine wrote


def test_an_op_built_with_overlapping_dma_buffers_goes_through_bounce_regions(caam):
    # The API refuses such a pair (or copies its input, with cryptography 50); an Op built
    # directly still gets the right answer from the engine, through its bounce regions.
    _provider, engine = caam
    key, iv, data = os.urandom(16), os.urandom(16), os.urandom(3 * PIECE)
    buf = _filled(engine, data, len(data) + 32)
    source = memoryview(buf).cast("B")[: len(data)]
    target = memoryview(buf).cast("B")[16 : 16 + len(data)]  # 16 bytes on from the input
    before = engine.figures
    engine.run(CipherOp("aes-128-ctr", "encrypt", key, iv, source, target))
    moved = _delta(engine, before)
    ref = RefCipher(ref_algorithms.AES(key), ref_modes.CTR(iv)).encryptor()
    assert bytes(buf[16 : 16 + len(data)]) == ref.update(data)
    assert moved["zero_copy_bytes"] == 0 and moved["copy_in_bytes"] >= len(data)
