"""The AF_ALG engine against a real kernel: run in the rig's guest (rig/run), skipped elsewhere.

The guest has a virtio-crypto device (driver virtio_crypto_aes_cbc, hardware) beside the
kernel's software drivers (cbc-aes-aesni, cbc(aes-generic), gcm, sha and hmac templates).
"""

from __future__ import annotations

import errno
import socket

import pytest
from cryptography.exceptions import InvalidTag
from vectors.loaders import aes_vectors, gcm_vectors, hash_vectors, hmac_vectors

from cryptoffload import Policy, Provider, modes
from cryptoffload.aead import AESGCM
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.core.names import HASH_CLASSES
from cryptoffload.engines import afalg, procfs
from cryptoffload.hashes import SHA256, digest
from cryptoffload.hmac import HMAC


def _af_alg() -> str | None:
    try:
        socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET).close()
    except (OSError, AttributeError) as exc:
        return f"no AF_ALG here ({exc}); run it in the guest: rig/setup && rig/run pytest ..."
    return None


pytestmark = pytest.mark.skipif(_af_alg() is not None, reason=_af_alg() or "")

TAKE_ALL = Policy(min_size={"*": 0})
VIRTIO = "virtio_crypto_aes_cbc"
CBC_DRIVERS = [VIRTIO, "cbc-aes-aesni", "cbc(aes-generic)"]


def pinned(driver: str) -> Provider:
    provider = Provider([f"afalg:{driver}"], policy=TAKE_ALL)
    if provider.unavailable:
        pytest.fail(f"driver {driver} not usable in the guest: {provider.unavailable}")
    return provider


def engine_ops(provider: Provider, alg: str) -> int:
    return provider.counters.snapshot()[provider.engines[0].name].get(alg, {}).get("ops", 0)


def test_virtio_driver_is_classified_hardware_and_aesni_software():
    entries = procfs.read()
    virtio = procfs.by_driver(entries, VIRTIO)
    assert virtio is not None and virtio.hardware
    aesni = procfs.by_driver(entries, "cbc-aes-aesni")
    assert aesni is not None and not aesni.hardware


def test_unpinned_engine_skips_software_bound_algorithms_with_reasons():
    caps = afalg.AfalgEngine().probe()
    skipped = caps.detail["skipped"]
    assert caps.detail["algorithms"] == {}
    # cbc(aes) resolves to aesni (priority 400 over the device's 150): not offloaded by default.
    assert skipped["aes-128-cbc"].startswith("software driver")
    assert "aes-128-cbc" not in caps.algorithms


@pytest.mark.parametrize("driver", CBC_DRIVERS)
def test_cbc_vectors_through_each_driver(driver):
    provider = pinned(driver)
    records = aes_vectors("CBC")  # every CAVP CBC file: GFSbox, KeySbox, VarKey, VarTxt, MMT
    for r in records:
        mode = modes.CBC(r["iv"])
        ctx = Cipher(algorithms.AES(r["key"]), mode, provider=provider)
        if r["direction"].lower().startswith("enc"):
            enc = ctx.encryptor()
            assert enc.update(r["plaintext"]) + enc.finalize() == r["ciphertext"]
        else:
            dec = ctx.decryptor()
            assert dec.update(r["ciphertext"]) + dec.finalize() == r["plaintext"]
    snap = provider.counters.snapshot()
    engine = provider.engines[0].name
    assert sum(c["ops"] for c in snap[engine].values()) == len(records)
    assert snap["software"] == {}


@pytest.mark.parametrize("driver", CBC_DRIVERS)
def test_requests_above_the_limit_are_split_and_chained(driver):
    provider = pinned(driver)
    key, iv = bytes(range(16)), bytes(16)
    data = bytes(range(256)) * 800  # 200 KiB: four requests of at most 64 KiB
    ours = Cipher(algorithms.AES(key), modes.CBC(iv), provider=provider).encryptor()
    ref = Cipher(algorithms.AES(key), modes.CBC(iv), provider=Provider([])).encryptor()
    assert ours.update(data) + ours.finalize() == ref.update(data) + ref.finalize()
    assert engine_ops(provider, "aes-128-cbc") == 1


def test_gcm_vectors_and_tag_failure_through_the_kernel():
    provider = Provider(["afalg:any"], policy=TAKE_ALL)
    records = [
        r
        for r in gcm_vectors(limit_per_section=1)
        if len(r["iv"]) == 12 and len(r["tag"]) in (4, 8, 12, 16) and len(r["key"]) == 16
    ]
    for r in records:
        g = AESGCM(r["key"], tag_length=len(r["tag"]), provider=provider)
        if r["direction"] == "encrypt":
            assert g.encrypt(r["iv"], r["pt"], r["aad"]) == r["ct"] + r["tag"]
        elif r["fail"]:
            with pytest.raises(InvalidTag):
                g.decrypt(r["iv"], r["ct"] + r["tag"], r["aad"])
        else:
            assert g.decrypt(r["iv"], r["ct"] + r["tag"], r["aad"]) == r["pt"]
    empty = [r for r in records if r["direction"] == "decrypt" and not r["aad"] and not r["ct"]]
    assert engine_ops(provider, "aes-128-gcm") == len(records) - len(empty)
    snap = provider.counters.snapshot()["afalg:any"]["aes-128-gcm"]
    assert snap["declined"].get("unsupported", 0) == len(empty)


def test_failed_tag_with_nothing_to_decrypt_is_still_refused():
    # With neither AAD nor ciphertext no read would carry the kernel's EBADMSG: never trust it.
    provider = Provider(["afalg:any"], policy=TAKE_ALL)
    with pytest.raises(InvalidTag):
        AESGCM(bytes(16), provider=provider).decrypt(bytes(12), bytes(16), None)


def test_hashes_and_hmac_through_the_kernel():
    provider = Provider(["afalg:any"], policy=TAKE_ALL)
    for name in ("sha1", "sha256", "sha512"):
        for r in hash_vectors(name.upper())[:20]:
            assert digest(r["msg"], HASH_CLASSES[name](), provider=provider) == r["md"]
    for r in hmac_vectors("sha256"):
        h = HMAC(r["key"], SHA256(), provider=provider)
        h.update(r["msg"])
        assert h.finalize()[: len(r["mac"])] == r["mac"]
    assert engine_ops(provider, "sha256") == 20


class _FailingSocket:
    """Stands in for an operation socket whose sendmsg fails with ``code``."""

    def __init__(self, code: int) -> None:
        self.code = code

    def sendmsg_afalg(self, *args, **kwargs):
        raise OSError(self.code, "injected")

    def close(self) -> None:
        pass


def test_busy_device_falls_back_to_software_counted_as_busy(monkeypatch):
    provider = pinned(VIRTIO)
    engine = provider.engines[0]
    monkeypatch.setattr(engine, "_fast_socket", lambda *a: _FailingSocket(errno.EBUSY))
    key, iv, data = bytes(16), bytes(16), bytes(64)
    out = Cipher(algorithms.AES(key), modes.CBC(iv), provider=provider).encryptor().update(data)
    ref = Cipher(algorithms.AES(key), modes.CBC(iv), provider=Provider([])).encryptor()
    assert out == ref.update(data)
    snap = provider.counters.snapshot()
    assert snap[engine.name]["aes-128-cbc"]["declined"] == {"busy": 1}
    assert snap["software"]["aes-128-cbc"]["ops"] == 1


def test_socket_fault_never_loses_the_operation(monkeypatch):
    provider = pinned(VIRTIO)
    engine = provider.engines[0]
    monkeypatch.setattr(engine, "_fast_socket", lambda *a: _FailingSocket(errno.EIO))
    enc = Cipher(algorithms.AES(bytes(16)), modes.CBC(bytes(16)), provider=provider).encryptor()
    assert len(enc.update(bytes(32))) == 32
    assert provider.counters.snapshot()[engine.name]["aes-128-cbc"]["faults"] == 1


def test_engines_command_lists_the_virtio_driver_as_hardware(capsys):
    from cryptoffload.tools import cli

    assert cli.main(["engines", "--engine", f"afalg:{VIRTIO}"]) == 0
    out = capsys.readouterr().out
    assert VIRTIO in out and "hardware" in out


def test_bench_prints_afalg_rows_with_cpu_reading(capsys):
    from cryptoffload.tools import cli

    code = cli.main(
        [
            "bench",
            "--engines",
            f"software,afalg:{VIRTIO},afalg:cbc-aes-aesni",
            "--algs",
            "aes-128-cbc encrypt",
            "--block",
            "16k",
            "--time",
            "0.3",
            "--trials",
            "1",
            "--cpu",
            "--format",
            "json",
            "--quiet",
        ]
    )
    assert code == 0
    import json

    rows = json.loads(capsys.readouterr().out)["rows"]
    by_engine = {r["engine"]: r for r in rows}
    assert by_engine[f"afalg:{VIRTIO}"]["offloaded"]
    assert by_engine["afalg:cbc-aes-aesni"]["offloaded"]
    for r in rows:
        assert r["cpu"]["reading"]


@pytest.mark.parametrize("mode", ["CTR", "ECB"])
def test_ctr_and_ecb_vectors_through_the_kernel(mode):
    provider = Provider(["afalg:any"], policy=TAKE_ALL)
    records = aes_vectors(mode)[:40]
    for r in records:
        m = modes.ECB() if mode == "ECB" else modes.CTR(r["iv"])
        ctx = Cipher(algorithms.AES(r["key"]), m, provider=provider)
        if r["direction"].lower().startswith("enc"):
            enc = ctx.encryptor()
            assert enc.update(r["plaintext"]) + enc.finalize() == r["ciphertext"]
        else:
            dec = ctx.decryptor()
            assert dec.update(r["ciphertext"]) + dec.finalize() == r["plaintext"]
    snap = provider.counters.snapshot()["afalg:any"]
    assert sum(c["ops"] for c in snap.values()) >= len(records)


def test_ccm_through_the_kernel_equals_software():
    from cryptoffload.aead import AESCCM

    provider = Provider(["afalg:any"], policy=TAKE_ALL)
    key, nonce, aad, data = bytes(range(16)), bytes(range(12)), b"header", bytes(range(100))
    ours = AESCCM(key, tag_length=8, provider=provider)
    ref = AESCCM(key, tag_length=8, provider=Provider([]))
    sealed = ours.encrypt(nonce, data, aad)
    assert sealed == ref.encrypt(nonce, data, aad)
    assert ours.decrypt(nonce, sealed, aad) == data
    with pytest.raises(InvalidTag):
        ours.decrypt(nonce, sealed[:-1] + bytes([sealed[-1] ^ 1]), aad)
    snap = provider.counters.snapshot()["afalg:any"]["aes-128-ccm"]
    assert snap["ops"] == 3


def test_cmac_through_the_kernel_equals_software():
    from cryptoffload.cmac import CMAC

    provider = Provider(["afalg:any"], policy=TAKE_ALL)
    key = bytes(range(16))
    for message in (b"", b"abc", bytes(1000)):
        ours = CMAC(algorithms.AES(key), provider=provider)
        ref = CMAC(algorithms.AES(key), provider=Provider([]))
        ours.update(message)
        ref.update(message)
        assert ours.finalize() == ref.finalize()
    assert provider.counters.snapshot()["afalg:any"]["cmac-aes-128"]["ops"] == 3


def test_kernel_rng_seeds_the_drbg():
    from cryptoffload.drbg import Drbg

    provider = Provider(["afalg:any"], policy=TAKE_ALL)
    d = Drbg(provider=provider)
    assert len(d.random_bytes(64)) == 64
    assert d.seed_sources == ["os", "afalg:any"]


def test_long_hash_streams_through_the_kernel_with_msg_more_and_accept_cloning():
    import hashlib

    provider = Provider(["afalg:any"], policy=TAKE_ALL)
    from cryptoffload.hashes import Hash

    h = Hash(SHA256(), provider=provider)
    piece = bytes(range(256)) * 4096  # 1 MiB
    for _ in range(6):  # 6 MiB: past what a context gathers for one op
        h.update(piece)
    twin = h.copy()  # accept() on the operation socket clones the kernel's partial state
    twin.update(b"tail")
    assert h.finalize() == hashlib.sha256(piece * 6).digest()
    assert twin.finalize() == hashlib.sha256(piece * 6 + b"tail").digest()
    cell = provider.counters.snapshot()["afalg:any"]["sha256"]
    assert cell["ops"] == 2 and cell["bytes"] == 12 * len(piece) + 4
    assert provider.counters.snapshot()["software"] == {}


def test_long_hmac_streams_through_the_kernel():
    import hmac as std_hmac

    provider = Provider(["afalg:any"], policy=TAKE_ALL)
    key = bytes(range(40))
    mac = HMAC(key, SHA256(), provider=provider)
    piece = bytes(range(256)) * 4096
    for _ in range(5):
        mac.update(piece)
    assert mac.finalize() == std_hmac.new(key, piece * 5, "sha256").digest()
    assert provider.counters.snapshot()["afalg:any"]["hmac-sha256"]["ops"] == 1


@pytest.mark.parametrize("driver", [VIRTIO, "cbc-aes-aesni"])
def test_spliced_requests_give_the_same_bytes_as_copied_ones(driver):
    from cryptoffload.core.ops import CipherOp

    spliced = afalg.AfalgEngine(driver=driver, splice="always", splice_min=0)
    copied = afalg.AfalgEngine(driver=driver, splice="never")
    assert spliced.probe().available and copied.probe().available
    assert "aes-128-cbc" in spliced._splice_algs and not copied._splice_algs
    for size in (16, 4096, 16384, 65536):
        data = bytearray(bytes(range(256)) * (size // 256 or 1))[:size]
        for kind in ("encrypt", "decrypt"):
            op = CipherOp("aes-128-cbc", kind, bytes(16), bytes(16), data)
            assert spliced.run(op) == copied.run(op), (size, kind)
    spliced.close()
    copied.close()


@pytest.mark.parametrize("mode", ["ECB", "CTR"])
def test_modes_with_and_without_an_iv_split_chain_and_splice_like_software(mode):
    # ECB sends an empty IV (the kernel wants one exactly as long as the mode's): through the
    # hot path, the spliced header and the split-and-chained requests above MAX_REQUEST.
    from cryptography.hazmat.primitives.ciphers import Cipher as Reference

    from cryptoffload.core.ops import CipherOp

    alg, iv = f"aes-128-{mode.lower()}", None if mode == "ECB" else bytes(range(240, 256))
    key = bytes(range(16))
    engines = [
        afalg.AfalgEngine(allow_software=True),
        afalg.AfalgEngine(allow_software=True, splice="always", splice_min=0),
    ]
    for engine in engines:
        assert alg in engine.probe().algorithms
    for size in (16, 4096, 65536, 3 * 65536 + 48):
        data = bytearray(bytes(range(256)) * (size // 256 + 1))[:size]
        ref = Reference(algorithms.AES(key), modes.ECB() if iv is None else modes.CTR(iv))
        sealed = ref.encryptor().update(bytes(data))
        for engine in engines:
            assert engine.run(CipherOp(alg, "encrypt", key, iv, data)) == sealed, size
            assert engine.run(CipherOp(alg, "decrypt", key, iv, bytearray(sealed))) == data
    for engine in engines:
        engine.close()


def test_aead_buffers_of_every_kind_with_and_without_aad_through_the_kernel():
    from cryptoffload.aead import AESCCM

    provider = Provider(["afalg:any"], policy=TAKE_ALL)
    software = Provider([])
    key, nonce = bytes(range(16)), bytes(range(12))
    data = bytearray(bytes(range(256)) * 3)
    for cls, tag_length in ((AESGCM, 16), (AESGCM, 12), (AESGCM, 4), (AESCCM, 8)):
        ours = cls(key, tag_length=tag_length, provider=provider)
        ref = cls(key, tag_length=tag_length, provider=software)
        for aad in (None, b"header", memoryview(bytearray(b"h" * 33))):
            sealed = ours.encrypt(nonce, data, aad)
            assert type(sealed) is bytes and sealed == ref.encrypt(nonce, bytes(data), aad)
            assert ours.decrypt(nonce, memoryview(sealed), aad) == data
    cells = provider.counters.snapshot()["afalg:any"]
    assert cells["aes-128-gcm"]["ops"] == 18 and cells["aes-128-ccm"]["ops"] == 6
    assert provider.counters.snapshot()["software"] == {}


def test_nothing_splices_by_default_and_hardware_choice_splices_only_device_drivers():
    assert not afalg.AfalgEngine(driver=VIRTIO)._splice_algs
    virtio = afalg.AfalgEngine(driver=VIRTIO, splice="hardware")
    aesni = afalg.AfalgEngine(driver="cbc-aes-aesni", splice="hardware")
    virtio.probe()
    aesni.probe()
    assert virtio._splice_algs == {"aes-128-cbc", "aes-192-cbc", "aes-256-cbc"}
    assert aesni._splice_algs == frozenset()


@pytest.mark.parametrize("driver", [VIRTIO, "cbc-aes-aesni"])
def test_forked_child_uses_sockets_of_its_own_and_the_parent_keeps_its(driver):
    import os
    import pickle

    provider = pinned(driver)
    key, iv, data = bytes(range(16)), bytes(16), bytes(range(256)) * 4

    def encrypt() -> bytes:
        enc = Cipher(algorithms.AES(key), modes.CBC(iv), provider=provider).encryptor()
        return enc.update(data) + enc.finalize()

    want = encrypt()
    engine = provider.engines[0]
    inherited = {sock.fileno() for sock in engine._sockets}
    assert inherited
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            answer = encrypt()
            own = {sock.fileno() for sock in engine._sockets}
            with os.fdopen(write_end, "wb") as out:
                pickle.dump((answer, engine_ops(provider, "aes-128-cbc"), own), out)
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as got:
        answer, child_ops, child_fds = pickle.load(got)
    os.waitpid(pid, 0)
    assert answer == want
    assert child_ops == 2  # the child's counters go on from the parent's, through the engine
    assert child_fds  # the child bound and accepted sockets of its own
    assert encrypt() == want
    assert engine_ops(provider, "aes-128-cbc") == 2
