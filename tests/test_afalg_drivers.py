"""The core's vector suites through afalg pinned to each kernel driver: run in the rig's guest.

Every driver the guest's kernel registers for an algorithm we claim (hardware and software:
aesni, avx2, generic C and template compositions of them) is pinned in turn and must give the
known answers, each op counted on the pinned engine and none left to software. Skipped, with
the reason printed, where there is no AF_ALG.
"""

from __future__ import annotations

import socket
from collections import defaultdict

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.decrepit.ciphers import algorithms as ref_decrepit
from cryptography.hazmat.primitives.ciphers import Cipher as RefCipher
from cryptography.hazmat.primitives.ciphers import algorithms as ref_algorithms
from vectors.loaders import (
    aes_vectors,
    ccm_vectors,
    cmac_vectors,
    gcm_vectors,
    hash_vectors,
    hmac_vectors,
)

from cryptoffload import Policy, Provider, modes
from cryptoffload.aead import AESCCM, AESGCM
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.cmac import CMAC
from cryptoffload.core.names import HASH_CLASSES
from cryptoffload.engines import afalg, procfs
from cryptoffload.hashes import digest
from cryptoffload.hmac import HMAC

TAKE_ALL = Policy(min_size={"*": 0})
MODES = {
    "cbc(aes)": "CBC",
    "ctr(aes)": "CTR",
    "ecb(aes)": "ECB",
    "cfb(aes)": "CFB",
    "ofb(aes)": "OFB",
}
HASHES = ("sha1", "sha224", "sha256", "sha384", "sha512")
#: Software compositions the kernel builds only on request: bound once so /proc/crypto lists them.
COMPOSITIONS = [
    ("skcipher", "ctr(aes-generic)"),
    ("skcipher", "ecb(aes-generic)"),
    ("skcipher", "cbc(aes-generic)"),
    ("aead", "gcm_base(ctr(aes-generic),ghash-generic)"),
    ("aead", "gcm_base(ctr-aes-aesni,ghash-generic)"),
]  # hmac, cmac and ccm over each loaded driver are built in _drivers()


def _no_af_alg() -> str | None:
    try:
        socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET).close()
    except (OSError, AttributeError) as exc:
        return f"no AF_ALG here ({exc}); run it in the guest: rig/setup && rig/run pytest ..."
    return None


def _bind_each(names: list[tuple[str, str]]) -> None:
    for kind, name in names:
        try:
            with socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET) as s:
                s.bind((kind, name))
        except OSError:
            pass


def _drivers() -> list[tuple[str, str]]:
    """(kernel algorithm name, driver) for every driver of an algorithm the engine can bind."""
    if _no_af_alg() is not None:
        return [("none", "none")]  # one placeholder, so the skip prints its reason
    wanted = {kname for _, kname in afalg.KERNEL_NAMES.values()} - {"stdrng"}
    # A lookup the kernel cannot satisfy makes it load every module offering the name
    # (request_module("crypto-NAME")): binding each name once under a type it does not have
    # loads the aesni/avx2 modules whose drivers a satisfied lookup would never bring in.
    misses = [("aead" if kind != "aead" else "skcipher", name) for kind, name in COMPOSITIONS]
    misses += [
        ("aead" if kind != "aead" else "skcipher", k) for kind, k in afalg.KERNEL_NAMES.values()
    ]
    _bind_each(misses + COMPOSITIONS + sorted(set(afalg.KERNEL_NAMES.values())))
    # Templates over each loaded driver (hmac over sha256-avx2, cmac and ccm over aesni), which
    # the kernel otherwise instantiates only over the driver it ranked first.
    entries = procfs.read()
    by_name: dict[str, list[str]] = defaultdict(list)
    for entry in entries:
        by_name[entry.name].append(entry.driver)
    templates = [("hash", f"hmac({d})") for h in HASHES for d in by_name[h]]
    templates += [("hash", f"cmac({d})") for d in by_name["aes"]]
    templates += [
        ("aead", f"ccm_base({c},cbcmac({a}))") for c in by_name["ctr(aes)"] for a in by_name["aes"]
    ]
    _bind_each(templates)
    found: dict[str, set[str]] = defaultdict(set)
    for entry in procfs.read():
        if entry.name in wanted:
            found[entry.name].add(entry.driver)
    return [(kname, driver) for kname in sorted(found) for driver in sorted(found[kname])]


DRIVERS = _drivers()
pytestmark = pytest.mark.skipif(_no_af_alg() is not None, reason=_no_af_alg() or "")


def _ids(pair: tuple[str, str]) -> str:
    return pair[1]


_OPEN: list[Provider] = []


@pytest.fixture(autouse=True)
def _close_providers():
    yield
    while _OPEN:
        _OPEN.pop().close()


def pinned(driver: str) -> Provider:
    provider = Provider([f"afalg:{driver}"], policy=TAKE_ALL)
    _OPEN.append(provider)
    if provider.unavailable:
        pytest.fail(f"driver {driver} not usable in the guest: {provider.unavailable}")
    return provider


def only_engine_ops(provider: Provider) -> int:
    """Ops the pinned engine performed; fails if software performed any."""
    snap = provider.counters.snapshot()
    assert snap["software"] == {}, snap["software"]
    engine = snap[provider.engines[0].name]
    assert all(not c["faults"] for c in engine.values()), engine
    return sum(c["ops"] for c in engine.values())


def kinds(*names: str) -> list[tuple[str, str]]:
    chosen = [pair for pair in DRIVERS if pair[0] in names or pair[0] == "none"]
    return chosen or [("absent", "absent")]


def test_guest_offers_a_hardware_and_two_software_drivers_for_cbc():
    cbc = [d for k, d in DRIVERS if k == "cbc(aes)"]
    entries = procfs.read()
    hardware = [d for d in cbc if procfs.by_driver(entries, d).hardware]
    software = [d for d in cbc if not procfs.by_driver(entries, d).hardware]
    assert hardware == ["virtio_crypto_aes_cbc"]
    assert len(software) >= 2


@pytest.mark.parametrize("pair", kinds(*MODES), ids=_ids)
def test_aes_mode_vectors_through_each_driver(pair):
    kname, driver = pair
    provider = pinned(driver)
    records = aes_vectors(MODES[kname])
    for r in records:
        mode = modes.ECB() if r["iv"] is None else getattr(modes, MODES[kname])(r["iv"])
        ctx = Cipher(algorithms.AES(r["key"]), mode, provider=provider)
        src, want = r["plaintext"], r["ciphertext"]
        worker = ctx.encryptor()
        if not r["direction"].startswith("enc"):
            src, want, worker = want, src, ctx.decryptor()
        assert worker.update(src) + worker.finalize() == want, (r["file"], r["count"])
    assert only_engine_ops(provider) == len(records)


@pytest.mark.parametrize("pair", kinds("gcm(aes)"), ids=_ids)
def test_gcm_vectors_and_tag_failures_through_each_driver(pair):
    provider = pinned(pair[1])
    records = [
        r
        for r in gcm_vectors(limit_per_section=2)
        if len(r["iv"]) == 12 and len(r["tag"]) in (4, 8, 12, 13, 14, 15, 16)
    ]
    assert any(r["fail"] for r in records)
    declined = 0
    for r in records:
        g = AESGCM(r["key"], tag_length=len(r["tag"]), provider=provider)
        if r["direction"] == "encrypt":
            assert g.encrypt(r["iv"], r["pt"], r["aad"]) == r["ct"] + r["tag"]
            continue
        if not r["aad"] and not r["ct"]:
            declined += 1  # nothing to read back, so no read reports the tag: software checks
        if r["fail"]:
            with pytest.raises(InvalidTag):
                g.decrypt(r["iv"], r["ct"] + r["tag"], r["aad"])
        else:
            assert g.decrypt(r["iv"], r["ct"] + r["tag"], r["aad"]) == r["pt"]
    snap = provider.counters.snapshot()
    engine = snap[provider.engines[0].name]
    assert sum(c["ops"] for c in engine.values()) == len(records) - declined
    assert sum(c["ops"] for c in snap["software"].values()) == declined


@pytest.mark.parametrize("pair", kinds("ccm(aes)"), ids=_ids)
def test_ccm_vectors_and_tag_failures_through_each_driver(pair):
    provider = pinned(pair[1])
    records = ccm_vectors()[::3]  # every third of the 2,880: all files, lengths and fail cases
    assert any(r["fail"] for r in records)
    for r in records:
        ccm = AESCCM(r["key"], tag_length=r["tlen"], provider=provider)
        if r["direction"] == "encrypt":
            assert ccm.encrypt(r["nonce"], r["pt"], r["aad"]) == r["ct"] + r["tag"]
        elif r["fail"]:
            with pytest.raises(InvalidTag):
                ccm.decrypt(r["nonce"], r["ct"] + r["tag"], r["aad"])
        else:
            assert ccm.decrypt(r["nonce"], r["ct"] + r["tag"], r["aad"]) == r["pt"]
    snap = provider.counters.snapshot()
    engine = snap[provider.engines[0].name]
    software = sum(c["ops"] for c in snap["software"].values())
    assert sum(c["ops"] for c in engine.values()) + software == len(records)
    assert software <= sum(1 for r in records if not r["aad"] and not r["pt"] and not r["ct"])


@pytest.mark.parametrize("pair", kinds(*HASHES), ids=_ids)
def test_sha_vectors_through_each_driver(pair):
    kname, driver = pair
    provider = pinned(driver)
    records = hash_vectors(kname)  # short and long messages
    for r in records:
        assert digest(r["msg"], HASH_CLASSES[kname](), provider=provider) == r["md"]
    assert only_engine_ops(provider) == len(records)


@pytest.mark.parametrize("pair", kinds(*[f"hmac({h})" for h in HASHES]), ids=_ids)
def test_hmac_vectors_through_each_driver(pair):
    kname, driver = pair
    provider = pinned(driver)
    records = hmac_vectors(kname[5:-1])
    for r in records:
        h = HMAC(r["key"], HASH_CLASSES[kname[5:-1]](), provider=provider)
        h.update(r["msg"])
        assert h.finalize()[: len(r["mac"])] == r["mac"]
    assert only_engine_ops(provider) == len(records)


@pytest.mark.parametrize("pair", kinds("cmac(aes)"), ids=_ids)
def test_cmac_vectors_through_each_driver(pair):
    provider = pinned(pair[1])
    records = [r for bits in (128, 192, 256) for r in cmac_vectors(bits)]
    for r in records:
        mac = CMAC(algorithms.AES(r["key"]), provider=provider)
        mac.update(r["msg"])
        assert mac.finalize() == r["mac"]
    assert only_engine_ops(provider) == len(records)


#: The other ciphers the engine claims, each pinned driver against `cryptography` (OpenSSL).
OTHER_CIPHERS = {
    "chacha20": lambda key, iv: (ref_algorithms.ChaCha20(key[:32], iv), None, 1),
    "ecb(camellia)": lambda key, iv: (ref_decrepit.Camellia(key[:24]), modes.ECB(), 16),
    "cbc(camellia)": lambda key, iv: (ref_decrepit.Camellia(key[:32]), modes.CBC(iv), 16),
    "ecb(blowfish)": lambda key, iv: (ref_decrepit.Blowfish(key[:20]), modes.ECB(), 8),
    "cbc(blowfish)": lambda key, iv: (ref_decrepit.Blowfish(key[:16]), modes.CBC(iv[:8]), 8),
    "ecb(cast5)": lambda key, iv: (ref_decrepit.CAST5(key[:16]), modes.ECB(), 8),
    "cbc(cast5)": lambda key, iv: (ref_decrepit.CAST5(key[:10]), modes.CBC(iv[:8]), 8),
}


def test_chacha20_rfc7539_keystream_through_each_driver():
    """RFC 7539 2.4.2: the sunscreen text under counter 1, through every chacha20 driver."""
    pairs = kinds("chacha20")
    key = bytes(range(32))
    nonce = (1).to_bytes(4, "little") + bytes.fromhex("000000000000004a00000000")
    text = (
        b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for "
        b"the future, sunscreen would be it."
    )
    for _, driver in pairs:
        provider = pinned(driver)
        ctx = Cipher(ref_algorithms.ChaCha20(key, nonce), None, provider=provider).encryptor()
        out = ctx.update(text) + ctx.finalize()
        assert out[:16].hex() == "6e2e359a2568f98041ba0728dd0d6981", driver
        assert only_engine_ops(provider) == 1


@pytest.mark.parametrize("pair", kinds(*OTHER_CIPHERS), ids=_ids)
def test_other_ciphers_through_each_driver_equal_openssl_in_any_chunks(pair):
    kname, driver = pair
    provider = pinned(driver)
    key, iv = bytes(range(7, 7 + 32)), bytes(range(60, 76))
    algorithm, mode, block = OTHER_CIPHERS[kname](key, iv)
    data = bytes((3 * i + 11) % 256 for i in range(block * 700))
    want = RefCipher(algorithm, mode).encryptor().update(data)
    ops = 0
    for chunks in ([len(data)], [block * 3, block * 97, len(data) - block * 100]):
        ctx = Cipher(algorithm, mode, provider=provider).encryptor()
        got, at = b"", 0
        for n in chunks:
            got += ctx.update(data[at : at + n])
            at += n
        assert got + ctx.finalize() == want
        dec = Cipher(algorithm, mode, provider=provider).decryptor()
        assert dec.update(want) + dec.finalize() == data
        ops += len(chunks) + 1  # each update of the encryptor, the one of the decryptor
    assert only_engine_ops(provider) == ops


@pytest.mark.parametrize("pair", kinds("chacha20"), ids=_ids)
def test_chacha20_above_the_request_limit_is_split_by_block_counter(pair):
    provider = pinned(pair[1])
    key = bytes(range(32))
    nonce = (2**32 - 4000).to_bytes(4, "little") + bytes(range(12))  # near the counter's top
    data = bytes(range(256)) * 800  # 200 KiB: four requests of at most 64 KiB
    want = RefCipher(ref_algorithms.ChaCha20(key, nonce), None).encryptor().update(data)
    ctx = Cipher(ref_algorithms.ChaCha20(key, nonce), None, provider=provider).encryptor()
    assert ctx.update(data) + ctx.finalize() == want
    assert only_engine_ops(provider) == 1
