"""The cryptodev engine end to end through the stand-in of /dev/crypto, and its ABI by hand.

No /dev/crypto here: tests/cryptodev_standin.py answers at the real ioctl numbers from the bytes
of the real structures. The layout tests compare the engine's structures and request numbers
with values worked out by hand from crypto/cryptodev.h and linux/ioctl.h (written below as
literals), for this build, for 32-bit builds of both byte orders and for 64-bit big-endian.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import hmac as std_hmac
import json
import os
import struct
import threading

import cryptodev_standin
import pytest
from cryptodev_standin import CIOCAUTHCRYPT, CIOCCRYPT, CIOCGSESSINFO, CIOCGSESSION
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher as RefCipher
from cryptography.hazmat.primitives.ciphers import aead as ref_aead
from cryptography.hazmat.primitives.ciphers import algorithms as ref_algorithms
from cryptography.hazmat.primitives.ciphers import modes as ref_modes

from cryptoffload import Policy, Provider, _stream
from cryptoffload.aead import AESGCM
from cryptoffload.ciphers import Cipher, algorithms, modes
from cryptoffload.core.ops import AeadOp, CipherOp, HashOp, MacOp
from cryptoffload.devicekey import DeviceKey
from cryptoffload.engines import cryptodev, cryptodev_abi, from_spec
from cryptoffload.engines.cryptodev import CryptodevEngine
from cryptoffload.errors import EngineError, Unavailable
from cryptoffload.hashes import SHA256, SHA384, Hash, digest
from cryptoffload.hmac import HMAC

TAKE_ALL = Policy(min_size={"*": 0})
KEY = bytes(range(16))
IV = bytes(range(16, 32))
NONCE = bytes(range(12))
OURS = sorted(cryptodev.ALGORITHMS)


@pytest.fixture
def device() -> cryptodev_standin.Device:
    """The stand-in in place of /dev/crypto (tests/conftest.py removes it after the test)."""
    return cryptodev_standin.install()


def provider(spec: str = "cryptodev", **engine_options) -> Provider:
    engine = from_spec(spec)
    for name, value in engine_options.items():
        setattr(engine, name, value)
    p = Provider([engine], policy=TAKE_ALL)
    assert not p.unavailable, p.unavailable
    return p


def cell(p: Provider, alg: str, engine: str = "cryptodev") -> dict:
    return p.counters.snapshot().get(engine, {}).get(alg, {})


def ref_cbc(data: bytes, key: bytes = KEY, iv: bytes = IV) -> bytes:
    enc = RefCipher(ref_algorithms.AES(key), ref_modes.CBC(iv)).encryptor()
    return enc.update(data) + enc.finalize()


def cbc_encrypt(p: Provider, data: bytes, key: bytes = KEY) -> bytes:
    enc = Cipher(algorithms.AES(key), modes.CBC(IV), provider=p).encryptor()
    return enc.update(data) + enc.finalize()


# -- the ABI, against values worked out by hand --------------------------------------------------

# (size, {field: offset}) per structure. 64-bit (LP64): u32 fields at 4-byte alignment, pointers at
# 8, each structure padded to 8. 32-bit: everything at 4. session_info_op has no pointer: two
# alg_info (2 x 64 chars each) after ses, alignmask at 4 + 256 = 260, flags aligned up to 264.
LAYOUT_64 = {
    "SessionOp": (48, dict(cipher=0, mac=4, keylen=8, key=16, mackeylen=24, mackey=32, ses=40)),
    "SessionInfoOp": (
        268,
        dict(
            ses=0,
            cipher_name=4,
            cipher_driver=68,
            hash_name=132,
            hash_driver=196,
            alignmask=260,
            flags=264,
        ),
    ),
    "CryptOp": (48, dict(ses=0, op=4, flags=6, len=8, src=16, dst=24, mac=32, iv=40)),
    "CryptAuthOp": (
        72,
        dict(
            ses=0,
            op=4,
            flags=6,
            len=8,
            auth_len=12,
            auth_src=16,
            src=24,
            dst=32,
            tag=40,
            tag_len=48,
            iv=56,
            iv_len=64,
        ),
    ),
    "CphashOp": (8, dict(dst_ses=0, src_ses=4)),
}
LAYOUT_32 = {
    "SessionOp": (28, dict(cipher=0, mac=4, keylen=8, key=12, mackeylen=16, mackey=20, ses=24)),
    "SessionInfoOp": LAYOUT_64["SessionInfoOp"],
    "CryptOp": (28, dict(ses=0, op=4, flags=6, len=8, src=12, dst=16, mac=20, iv=24)),
    "CryptAuthOp": (
        44,
        dict(
            ses=0,
            op=4,
            flags=6,
            len=8,
            auth_len=12,
            auth_src=16,
            src=20,
            dst=24,
            tag=28,
            tag_len=32,
            iv=36,
            iv_len=40,
        ),
    ),
    "CphashOp": (8, dict(dst_ses=0, src_ses=4)),
}
# _IOC(dir, 'c' = 0x63, nr, size) = dir << 30 | size << 16 | 0x63 << 8 | nr (asm-generic), with
# _IOWR's dir 3 and _IOW's 1: CIOCGSESSION = 3 << 30 | 48 << 16 | 0x6366 = 0xC0306366 on 64-bit.
REQUESTS_GENERIC_64 = {
    "CIOCGSESSION": 0xC0306366,  # _IOWR 102, 48 bytes
    "CIOCFSESSION": 0x40046367,  # _IOW 103, __u32
    "CIOCCRYPT": 0xC0306368,  # _IOWR 104, 48
    "CIOCGSESSINFO": 0xC10C636B,  # _IOWR 107, 268 = 0x10C
    "CIOCAUTHCRYPT": 0xC048636D,  # _IOWR 109, 72
    "CIOCCPHASH": 0x40086370,  # _IOW 112, 8
}
REQUESTS_GENERIC_32 = {
    **REQUESTS_GENERIC_64,
    "CIOCGSESSION": 0xC01C6366,  # 28 bytes
    "CIOCCRYPT": 0xC01C6368,  # 28
    "CIOCAUTHCRYPT": 0xC02C636D,  # 44
}
# PowerPC (QorIQ), MIPS, SPARC, Alpha: dir << 29, _IOC_WRITE 4, _IOC_READ 2: _IOWR is 6 << 29,
# the same top bits as the generic 3 << 30; _IOW is 4 << 29 = 0x80000000.
REQUESTS_PPC_32 = {
    **REQUESTS_GENERIC_32,
    "CIOCFSESSION": 0x80046367,
    "CIOCCPHASH": 0x80086370,
}
REQUESTS_PPC_64 = {**REQUESTS_GENERIC_64, "CIOCFSESSION": 0x80046367, "CIOCCPHASH": 0x80086370}


def check_layout(abi: cryptodev_abi.Abi, expected: dict) -> None:
    for name, (size, offsets) in expected.items():
        cls = getattr(abi, name)
        assert ctypes.sizeof(cls) == size, name
        got = {field: getattr(cls, field).offset for field, _ in cls._fields_}
        assert got == offsets, name


def requests(abi: cryptodev_abi.Abi) -> dict[str, int]:
    return {name: getattr(abi, name) for name in REQUESTS_GENERIC_64}


def test_native_structures_and_request_numbers_match_the_header():
    native_64 = ctypes.sizeof(ctypes.c_void_p) == 8
    check_layout(cryptodev_abi.NATIVE, LAYOUT_64 if native_64 else LAYOUT_32)
    machine = os.uname().machine
    three_bit = machine.startswith(("ppc", "powerpc", "mips", "sparc", "alpha"))
    want = {
        (True, False): REQUESTS_GENERIC_64,
        (False, False): REQUESTS_GENERIC_32,
        (True, True): REQUESTS_PPC_64,
        (False, True): REQUESTS_PPC_32,
    }[(native_64, three_bit)]
    if machine.startswith("parisc"):
        pytest.skip("no hand-worked PA-RISC numbers")
    assert requests(cryptodev_abi.NATIVE) == want
    # The stand-in decodes with struct formats of its own: the same sizes, the same numbers.
    standin = {name: getattr(cryptodev_standin, name) for name in REQUESTS_GENERIC_64}
    assert standin == want
    engine_side = {name: getattr(cryptodev, name) for name in REQUESTS_GENERIC_64}
    assert engine_side == want  # what the engine module sends


@pytest.mark.parametrize(
    ("base", "order"),
    [(ctypes.LittleEndianStructure, "<"), (ctypes.BigEndianStructure, ">")],
    ids=["32-bit little-endian (ARM, i386)", "32-bit big-endian (PowerPC e500, MIPS)"],
)
def test_32_bit_layouts_place_every_field_as_the_header_does(base, order):
    abi = cryptodev_abi.Abi(ctypes.c_uint32, ctypes.c_uint32, base, cryptodev_abi.GENERIC_IOC)
    check_layout(abi, LAYOUT_32)
    assert requests(abi) == REQUESTS_GENERIC_32
    op = abi.CryptAuthOp(
        ses=0x11223344,
        op=1,
        flags=2,
        len=0x100,
        auth_len=0x20,
        auth_src=0xA1A2A3A4,
        src=0xB1B2B3B4,
        dst=0xC1C2C3C4,
        tag=0,
        tag_len=16,
        iv=0xD1D2D3D4,
        iv_len=12,
    )
    packed = struct.pack(
        order + "IHHIIIIIIIII",
        *(0x11223344, 1, 2, 0x100, 0x20, 0xA1A2A3A4, 0xB1B2B3B4, 0xC1C2C3C4, 0, 16),
        *(0xD1D2D3D4, 12),
    )
    assert bytes(op) == packed


def test_64_bit_big_endian_layout_pads_before_each_pointer():
    abi = cryptodev_abi.Abi(
        ctypes.c_uint64, ctypes.c_uint64, ctypes.BigEndianStructure, cryptodev_abi.THREE_BIT_IOC
    )
    check_layout(abi, LAYOUT_64)
    assert requests(abi) == REQUESTS_PPC_64
    op = abi.SessionOp(cipher=11, mac=0, keylen=16, key=0x0102030405060708, ses=0xCAFEF00D)
    want = struct.pack(">III4xQI4xQI4x", 11, 0, 16, 0x0102030405060708, 0, 0, 0xCAFEF00D)
    assert bytes(op) == want


@pytest.mark.parametrize(
    ("machine", "encoding"),
    [
        ("x86_64", cryptodev_abi.GENERIC_IOC),
        ("aarch64", cryptodev_abi.GENERIC_IOC),
        ("armv7l", cryptodev_abi.GENERIC_IOC),
        ("ppc64", cryptodev_abi.THREE_BIT_IOC),
        ("ppc", cryptodev_abi.THREE_BIT_IOC),
        ("mips", cryptodev_abi.THREE_BIT_IOC),
        ("parisc64", cryptodev_abi.PARISC_IOC),
    ],
)
def test_ioctl_encoding_follows_the_machine(machine, encoding):
    assert cryptodev_abi.ioc_encoding(machine) == encoding


def test_ppc32_requests_use_the_three_bit_direction():
    abi = cryptodev_abi.Abi(
        ctypes.c_uint32, ctypes.c_uint32, ctypes.BigEndianStructure, cryptodev_abi.THREE_BIT_IOC
    )
    assert requests(abi) == REQUESTS_PPC_32


# -- specs, probe ------------------------------------------------------------------------------


def test_specs_name_the_engine_and_refuse_unknown_options():
    assert from_spec("cryptodev").name == "cryptodev"
    assert from_spec("cryptodev").hardware_only
    engine = from_spec("cryptodev:any")
    assert engine.name == "cryptodev:any" and engine.allow_software and not engine.hardware_only
    with pytest.raises(EngineError, match="'any'"):
        from_spec("cryptodev:soft")


def test_without_dev_crypto_the_probe_says_how_to_load_the_module(monkeypatch):
    def absent() -> int:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", "/dev/crypto")

    monkeypatch.setattr(cryptodev, "open_device", absent)
    caps = CryptodevEngine().probe()
    assert not caps.available
    assert "/dev/crypto does not exist" in caps.reason and "modprobe cryptodev" in caps.reason
    p = Provider(["cryptodev"])
    assert "modprobe cryptodev" in p.unavailable["cryptodev"]


def test_a_device_this_user_cannot_open_is_reported_as_such(monkeypatch):
    def denied() -> int:
        raise PermissionError(errno.EACCES, "Permission denied", "/dev/crypto")

    monkeypatch.setattr(cryptodev, "open_device", denied)
    reason = CryptodevEngine().probe().reason
    assert "Permission denied" in reason and "read and write access" in reason


def test_probe_reports_driver_and_hardware_flag_per_algorithm_and_frees_its_sessions(device):
    caps = CryptodevEngine().probe()
    assert caps.available and sorted(caps.algorithms) == OURS
    bindings = caps.detail["algorithms"]
    assert bindings["aes-128-cbc"] == {
        "kernel name": "cbc(aes)",
        "driver": "cbc-aes-caam",
        "hardware": True,
        "alignmask": 15,
    }
    assert bindings["hmac-sha256"]["driver"] == "hmac-sha256-caam"
    assert bindings["sha384"]["kernel name"] == "sha384"
    assert caps.detail["skipped"] == {}
    assert device.open_sessions == 0 and device.created == len(OURS)


def test_software_bound_algorithms_are_skipped_unless_software_is_allowed(device):
    device.bind("cbc(aes)", "cbc(aes-generic)", hardware=False)
    device.bind("sha256", "sha256-generic", hardware=False)
    caps = CryptodevEngine().probe()
    skipped = caps.detail["skipped"]
    assert skipped["aes-128-cbc"] == "software driver: cbc(aes-generic)"
    assert skipped["sha256"] == "software driver: sha256-generic"
    assert "aes-256-cbc" not in caps.algorithms and "aes-256-ctr" in caps.algorithms
    soft = CryptodevEngine(allow_software=True).probe()
    assert soft.detail["algorithms"]["aes-128-cbc"]["hardware"] is False
    assert "aes-128-cbc" in soft.algorithms and not soft.detail["skipped"]


def test_nothing_on_hardware_means_not_available(device):
    for name in list(device.drivers):  # the kernel's own spelling: cbc(aes-generic)...
        generic = name.replace(")", "-generic)", 1) if "(" in name else f"{name}-generic"
        device.bind(name, generic, hardware=False)
    caps = CryptodevEngine().probe()
    assert not caps.available and caps.reason == "no algorithm is bound to a hardware driver"


def test_a_key_size_the_driver_refuses_leaves_that_algorithm_out(device):
    device.refused_keys |= {("cbc(aes)", 24), ("gcm(aes)", 24)}
    caps = CryptodevEngine().probe()
    assert "aes-192-cbc" not in caps.algorithms and "aes-192-gcm" not in caps.algorithms
    assert "Invalid argument" in caps.detail["skipped"]["aes-192-cbc"]
    assert "aes-256-cbc" in caps.algorithms


def test_engines_command_shows_the_driver_and_hardware_flag(device, capsys):
    from cryptoffload.tools import cli

    device.bind("ecb(aes)", "ecb(aes-generic)", hardware=False)
    assert cli.main(["engines", "--engine", "cryptodev", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["engines"]}
    detail = rows["cryptodev"]["detail"]
    assert detail["algorithms"]["aes-128-gcm"]["driver"] == "gcm-aes-caam"
    assert detail["algorithms"]["aes-128-gcm"]["hardware"] is True
    assert detail["skipped"]["aes-128-ecb"] == "software driver: ecb(aes-generic)"
    assert cli.main(["engines", "--engine", "cryptodev"]) == 0
    out = capsys.readouterr().out
    assert "cbc-aes-caam" in out and "hardware" in out and "ecb(aes-generic)" in out


# -- operations and their sessions -----------------------------------------------------------


def test_cipher_gcm_hash_and_hmac_answers_come_from_the_device(device):
    p = provider()
    assert cbc_encrypt(p, b"a" * 64) == ref_cbc(b"a" * 64)
    ctr = Cipher(algorithms.AES(KEY), modes.CTR(IV), provider=p).encryptor().update(b"b" * 40)
    ref = RefCipher(ref_algorithms.AES(KEY), ref_modes.CTR(IV)).encryptor().update(b"b" * 40)
    assert ctr == ref
    sealed = AESGCM(KEY, provider=p).encrypt(NONCE, b"payload", b"header")
    assert sealed == ref_aead.AESGCM(KEY).encrypt(NONCE, b"payload", b"header")
    assert AESGCM(KEY, provider=p).decrypt(NONCE, sealed, b"header") == b"payload"
    assert digest(b"abc", SHA256(), provider=p) == hashlib.sha256(b"abc").digest()
    mac = HMAC(b"key", SHA384(), provider=p)
    mac.update(b"message")
    assert mac.finalize() == std_hmac.new(b"key", b"message", "sha384").digest()
    for alg in ("aes-128-cbc", "aes-128-ctr", "sha256", "hmac-sha384"):
        assert cell(p, alg)["ops"] == 1, alg
    assert cell(p, "aes-128-gcm")["ops"] == 2
    assert device.calls["CIOCCRYPT"] == 4 and device.calls["CIOCAUTHCRYPT"] == 2


def test_repeated_ops_with_one_key_reuse_one_session(device):
    p = provider()
    created = device.created
    other = bytes(16)
    for _ in range(5):
        assert cbc_encrypt(p, b"x" * 32) == ref_cbc(b"x" * 32)
        assert cbc_encrypt(p, b"x" * 32, other) == ref_cbc(b"x" * 32, other)
        digest(b"m", SHA256(), provider=p)
    assert device.created - created == 3
    assert p.engines[0].figures["sessions_cached"] == 3


def test_the_session_cache_is_bounded_and_frees_the_least_recently_used(device):
    p = provider(max_sessions=2)
    keys = [bytes([i]) * 16 for i in range(3)]
    cbc_encrypt(p, bytes(16), keys[0])
    cbc_encrypt(p, bytes(16), keys[1])
    cbc_encrypt(p, bytes(16), keys[0])  # key 0 used last: key 1 goes first
    cbc_encrypt(p, bytes(16), keys[2])
    assert device.open_sessions == 2
    cached = [k for _, k in p.engines[0]._sessions]
    assert cached == [keys[0], keys[2]]
    created = device.created
    cbc_encrypt(p, bytes(16), keys[0])
    assert device.created == created  # still there


def test_closing_frees_every_session_and_a_later_op_opens_the_device_again(device):
    p = provider()
    engine = p.engines[0]
    for i in range(4):
        cbc_encrypt(p, bytes(16), bytes([i]) * 16)
    stream = engine.open_stream(HashOp("sha256", "digest", b""))
    stream.update(b"held")
    assert device.open_sessions == 5
    fd = engine._fd
    p.close()
    assert device.open_sessions == 0 and engine._fd is None
    with pytest.raises(OSError):
        os.fstat(fd)  # the descriptor is closed
    assert cbc_encrypt(p, bytes(16)) == ref_cbc(bytes(16))
    assert device.open_sessions == 1
    stream.close()  # its session went with the close: nothing freed twice
    assert device.open_sessions == 1
    p.close()


def test_sessions_bound_to_software_after_the_probe_are_declined_and_freed(device):
    p = provider()
    device.bind("cbc(aes)", "cbc(aes-generic)", hardware=False)
    assert cbc_encrypt(p, b"s" * 32) == ref_cbc(b"s" * 32)
    assert cell(p, "aes-128-cbc")["declined"] == {"unsupported": 1}
    assert cell(p, "aes-128-cbc", "software")["ops"] == 1
    assert device.open_sessions == 0
    engine = p.engines[0]
    with pytest.raises(Unavailable, match=r"software driver: cbc\(aes-generic\)"):
        engine.run(CipherOp("aes-128-cbc", "encrypt", KEY, IV, bytes(16)))
    assert device.open_sessions == 0


def test_any_takes_software_drivers(device):
    device.bind("cbc(aes)", "cbc(aes-generic)", hardware=False)
    p = provider("cryptodev:any")
    assert cbc_encrypt(p, b"s" * 32) == ref_cbc(b"s" * 32)
    assert cell(p, "aes-128-cbc", "cryptodev:any")["ops"] == 1


def test_update_into_writes_the_callers_buffer_directly(device):
    p = provider()
    enc = Cipher(algorithms.AES(KEY), modes.CBC(IV), provider=p).encryptor()
    buf = bytearray(64 + 15)
    n = enc.update_into(b"q" * 64, buf)
    assert n == 64 and bytes(buf[:64]) == ref_cbc(b"q" * 64)
    request = [r for r in device.seen if r["request"] == "CIOCCRYPT"][-1]
    address = ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))
    assert request["dst"] == address


def test_bytearray_and_memoryview_inputs_are_read_in_place_or_copied(device):
    engine = provider().engines[0]
    data = bytearray(b"z" * 48)
    out = engine.run(CipherOp("aes-128-cbc", "encrypt", KEY, IV, data))
    assert out == ref_cbc(bytes(data))
    assert device.seen[-1]["src"] == ctypes.addressof((ctypes.c_char * 48).from_buffer(data))
    view = memoryview(b"y" * 48)  # read-only: copied
    assert engine.run(CipherOp("aes-128-cbc", "decrypt", bytearray(KEY), IV, view)) == (
        RefCipher(ref_algorithms.AES(KEY), ref_modes.CBC(IV)).decryptor().update(b"y" * 48)
    )


def test_a_request_the_kernel_marked_no_zero_copy_does_not_mark_the_next(device):
    engine = provider().engines[0]
    misaligned = memoryview(bytearray(49))[1:]  # the kernel copies it back with NO_ZC set
    engine.run(CipherOp("aes-128-cbc", "encrypt", KEY, IV, misaligned))
    engine.run(CipherOp("aes-128-cbc", "encrypt", KEY, IV, bytes(48)))
    assert device.seen[-1]["flags"] == 0


@pytest.mark.parametrize("mode", ["cbc", "ctr", "ecb"])
@pytest.mark.parametrize("out", [False, True], ids=["bytes", "update_into"])
def test_requests_above_the_limit_are_split_and_chained_by_iv(device, mode, out):
    engine = CryptodevEngine(max_request=64)
    p = Provider([engine], policy=TAKE_ALL)
    data = bytes(range(200)) + bytes(8) if mode != "ctr" else bytes(range(200))
    ref_mode = {"cbc": ref_modes.CBC(IV), "ctr": ref_modes.CTR(IV), "ecb": ref_modes.ECB()}[mode]
    want = RefCipher(ref_algorithms.AES(KEY), ref_mode).encryptor().update(data)
    ours = {"cbc": modes.CBC(IV), "ctr": modes.CTR(IV), "ecb": modes.ECB()}[mode]
    enc = Cipher(algorithms.AES(KEY), ours, provider=p).encryptor()
    calls = device.calls["CIOCCRYPT"]
    if out:
        buf = bytearray(len(data) + 16)
        assert enc.update_into(data, buf) == len(data)
        assert bytes(buf[: len(data)]) == want
    else:
        assert enc.update(data) == want
    assert device.calls["CIOCCRYPT"] - calls == -(-len(data) // 64)
    assert cell(p, f"aes-128-{mode}")["ops"] == 1
    dec = Cipher(algorithms.AES(KEY), ours, provider=p).decryptor()
    assert dec.update(want) == data


def test_a_long_cbc_decrypt_in_place_chains_from_the_ciphertext_it_overwrites(device):
    engine = CryptodevEngine(max_request=64)
    data = bytes(range(208))
    buf = bytearray(ref_cbc(data))
    assert engine.run(CipherOp("aes-128-cbc", "decrypt", KEY, IV, buf, buf)) == len(data)
    assert bytes(buf) == data


def test_keys_of_another_engines_device_are_declined(device):
    engine = provider().engines[0]
    key = DeviceKey(bytes(64), bytes(8), 128, "caam:model=t2080")
    with pytest.raises(Unavailable, match="bound to caam"):
        engine.run(AeadOp("aes-128-gcm", "encrypt", key, NONCE, b"x", None, 16))


def test_a_key_size_the_kernel_refuses_is_declined_as_unsupported(device):
    engine = provider().engines[0]
    with pytest.raises(Unavailable) as info:
        engine.run(CipherOp("aes-128-cbc", "encrypt", bytes(20), IV, bytes(16)))
    assert info.value.reason == "unsupported" and "Invalid argument" in info.value.detail


def test_threads_share_sessions_and_each_gets_its_own_answer(device):
    p = provider()
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(50):
                data = bytes([i, j]) * 16
                assert cbc_encrypt(p, data) == ref_cbc(data)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cell(p, "aes-128-cbc")["ops"] == 200 and device.open_sessions == 1


# -- GCM -------------------------------------------------------------------------------------


def test_gcm_lays_out_ciphertext_then_tag_and_sends_aad_and_tag_length(device):
    p = provider()
    gcm = AESGCM(KEY, tag_length=12, provider=p)
    sealed = gcm.encrypt(NONCE, b"p" * 33, b"a" * 20)
    ref = RefCipher(ref_algorithms.AES(KEY), ref_modes.GCM(NONCE)).encryptor()
    ref.authenticate_additional_data(b"a" * 20)
    want = ref.update(b"p" * 33) + ref.finalize()
    assert sealed == want + ref.tag[:12]
    request = device.seen[-1]
    assert (request["len"], request["auth_len"], request["tag_len"]) == (33, 20, 12)
    assert gcm.decrypt(NONCE, sealed, b"a" * 20) == b"p" * 33
    assert gcm.decrypt(NONCE, gcm.encrypt(NONCE, b"", None), None) == b""


def test_a_failed_tag_raises_invalid_tag_and_releases_no_plaintext(device):
    p = provider()
    gcm = AESGCM(KEY, provider=p)
    sealed = bytearray(gcm.encrypt(NONCE, b"secret plaintext" * 4, b"aad"))
    sealed[-1] ^= 1
    with pytest.raises(InvalidTag):
        gcm.decrypt(NONCE, bytes(sealed), b"aad")
    request = device.seen[-1]
    # The stand-in wrote the unauthenticated plaintext to dst, as the kernel may: wiped since.
    assert ctypes.string_at(request["dst"], 64) == bytes(64)
    snap = cell(p, "aes-128-gcm")
    assert snap["faults"] == 0 and not snap["declined"]
    assert cell(p, "aes-128-gcm", "software").get("ops", 0) == 0


@pytest.mark.parametrize(
    ("op", "reason", "detail"),
    [
        (AeadOp("aes-128-gcm", "encrypt", KEY, bytes(8), b"x", None, 16), "unsupported", "12-byte"),
        (AeadOp("aes-128-gcm", "encrypt", KEY, NONCE, b"x", None, 6), "unsupported", "6 bytes"),
        (AeadOp("aes-128-gcm", "encrypt", KEY, NONCE, b"x", bytes(4097), 16), "too-large", "4096"),
        (AeadOp("aes-128-gcm", "encrypt", KEY, NONCE, bytes(65537), None, 16), "too-large", ""),
        (AeadOp("aes-128-ccm", "encrypt", KEY, NONCE, b"x", None, 16), "unsupported", "ccm"),
        (MacOp("cmac-aes-128", "mac", KEY, b"x"), "unsupported", "cmac"),
    ],
    ids=["nonce-8", "tag-6", "aad-4097", "data-above-limit", "ccm", "cmac"],
)
def test_what_cryptodev_cannot_express_is_declined_with_its_reason(device, op, reason, detail):
    engine = provider().engines[0]
    calls = sum(device.calls.values())
    with pytest.raises(Unavailable) as info:
        engine.run(op)
    assert info.value.reason == reason and detail in info.value.detail
    assert sum(device.calls.values()) == calls  # declined before any request


def test_aad_of_exactly_one_page_is_offloaded(device):
    p = provider()
    aad = bytes(range(256)) * 16
    sealed = AESGCM(KEY, provider=p).encrypt(NONCE, b"d", aad)
    assert sealed == ref_aead.AESGCM(KEY).encrypt(NONCE, b"d", aad)
    assert cell(p, "aes-128-gcm")["ops"] == 1
    AESGCM(KEY, provider=p).encrypt(NONCE, b"d", aad + b"!")
    assert cell(p, "aes-128-gcm")["declined"] == {"too-large": 1}


# -- declines and faults at the device ---------------------------------------------------------


@pytest.mark.parametrize("code", [errno.EBUSY, errno.EAGAIN])
def test_a_busy_device_is_a_busy_decline_and_software_answers(device, code):
    p = provider()
    cbc_encrypt(p, bytes(16))
    device.fail(CIOCCRYPT, code)
    assert cbc_encrypt(p, b"b" * 32) == ref_cbc(b"b" * 32)
    assert cell(p, "aes-128-cbc")["declined"] == {"busy": 1}
    assert cell(p, "aes-128-cbc", "software")["ops"] == 1


@pytest.mark.parametrize("request_number", [CIOCCRYPT, CIOCAUTHCRYPT])
def test_a_device_error_is_a_fault_decline_and_no_output_escapes(device, request_number):
    p = provider()
    device.fail(request_number, errno.EIO, scribble=True)  # junk in dst, then the error
    if request_number == CIOCCRYPT:
        enc = Cipher(algorithms.AES(KEY), modes.CBC(IV), provider=p).encryptor()
        buf = bytearray(64)
        assert enc.update_into(b"f" * 48, buf) == 48 and bytes(buf[:48]) == ref_cbc(b"f" * 48)
        alg = "aes-128-cbc"
    else:
        sealed = AESGCM(KEY, provider=p).encrypt(NONCE, b"f" * 48, None)
        assert sealed == ref_aead.AESGCM(KEY).encrypt(NONCE, b"f" * 48, None)
        alg = "aes-128-gcm"
    assert cell(p, alg)["declined"] == {"fault": 1}
    assert cell(p, alg, "software")["ops"] == 1


def test_a_decrypt_that_faults_wipes_what_the_device_wrote(device):
    p = provider()
    gcm = AESGCM(KEY, provider=p)
    sealed = gcm.encrypt(NONCE, b"k" * 32, None)
    device.fail(CIOCAUTHCRYPT, errno.EIO, scribble=True)
    assert gcm.decrypt(NONCE, sealed, None) == b"k" * 32  # software's answer
    assert ctypes.string_at(device.seen[-1]["dst"], 32) == bytes(32)


def test_session_info_unavailable_means_hardware_cannot_be_confirmed(device):
    p = provider()
    device.fail(CIOCGSESSINFO, errno.EINVAL)
    assert cbc_encrypt(p, bytes(16), bytes([9]) * 16) == ref_cbc(bytes(16), bytes([9]) * 16)
    assert cell(p, "aes-128-cbc")["declined"] == {"unsupported": 1}
    assert device.open_sessions == 0


def test_a_refused_session_is_a_decline(device):
    p = provider()
    device.fail(CIOCGSESSION, errno.ENOMEM)
    assert cbc_encrypt(p, bytes(16)) == ref_cbc(bytes(16))
    assert cell(p, "aes-128-cbc")["declined"] == {"busy": 1}


# -- hashes: one shot, long, streams -----------------------------------------------------------


def test_one_shot_digests_reset_hash_and_finish_in_one_request(device):
    p = provider()
    digest(b"", SHA256(), provider=p)
    digest(b"abc", SHA256(), provider=p)
    requests_made = [r for r in device.seen if r["request"] == "CIOCCRYPT"]
    assert [(r["flags"], r["len"]) for r in requests_made] == [(0, 0), (0, 3)]


def test_a_long_one_shot_digest_runs_in_a_session_of_its_own(device):
    engine = CryptodevEngine(max_request=1024)
    p = Provider([engine], policy=TAKE_ALL)
    data = os.urandom(5000)
    assert digest(data, SHA256(), provider=p) == hashlib.sha256(data).digest()
    flags = [r["flags"] for r in device.seen if r["request"] == "CIOCCRYPT"]
    update, final, reset = 1, 2, 64
    assert flags == [update | reset, update, update, update, update, final]
    assert device.open_sessions == 0  # the private session is freed at once
    mac = HMAC(b"k" * 100, SHA256(), provider=p)
    mac.update(data)
    assert mac.finalize() == std_hmac.new(b"k" * 100, data, "sha256").digest()


def test_streams_send_updates_copy_state_and_free_their_session(device):
    engine = provider().engines[0]
    stream = engine.open_stream(HashOp("sha256", "digest", b""))
    assert device.open_sessions == 1
    stream.update(b"")  # nothing sent: an empty update would end the hash in the kernel
    stream.update(b"abc")
    twin = stream.copy()
    stream.update(b"def")
    twin.update(b"xyz")
    assert stream.finalize() == hashlib.sha256(b"abcdef").digest()
    assert twin.finalize() == hashlib.sha256(b"abcxyz").digest()
    assert device.calls["CIOCCPHASH"] == 1
    assert device.open_sessions == 0
    empty = engine.open_stream(MacOp("hmac-sha1", "mac", b"key", b""))
    assert empty.finalize() == std_hmac.new(b"key", b"", "sha1").digest()
    dropped = engine.open_stream(HashOp("sha1", "digest", b""))
    dropped.update(b"x")
    del dropped  # collected without close: its session still goes
    assert device.open_sessions == 0


def test_a_hash_past_the_gather_limit_streams_through_the_device(device, monkeypatch):
    monkeypatch.setattr(_stream, "GATHER_LIMIT", 4096)
    p = provider()
    h = Hash(SHA256(), provider=p)
    parts = [os.urandom(3000) for _ in range(4)]
    for part in parts[:2]:
        h.update(part)
    fork = h.copy()
    for part in parts[2:]:
        h.update(part)
        fork.update(part[::-1])
    assert h.finalize() == hashlib.sha256(b"".join(parts)).digest()
    want = hashlib.sha256(b"".join(parts[:2]) + b"".join(p[::-1] for p in parts[2:])).digest()
    assert fork.finalize() == want
    assert cell(p, "sha256")["ops"] == 2 and cell(p, "sha256", "software").get("ops", 0) == 0
    assert device.calls["CIOCCPHASH"] == 1 and device.open_sessions == 0


def test_a_stream_whose_device_fails_is_finished_by_software(device, monkeypatch):
    monkeypatch.setattr(_stream, "GATHER_LIMIT", 4096)
    p = provider()
    h = HMAC(b"key", SHA256(), provider=p)
    h.update(bytes(5000))
    device.fail(CIOCCRYPT, errno.EIO)
    h.update(b"more")
    assert h.finalize() == std_hmac.new(b"key", bytes(5000) + b"more", "sha256").digest()
    assert cell(p, "hmac-sha256")["faults"] == 1
    assert cell(p, "hmac-sha256", "software")["ops"] == 1
    assert device.open_sessions == 0


# -- fork ------------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_a_forked_child_opens_its_own_device_and_never_frees_the_parents_sessions(device):
    from test_fork import in_child

    p = provider()
    engine = p.engines[0]
    assert cbc_encrypt(p, bytes(32)) == ref_cbc(bytes(32))
    parent_fd, parent_sessions = engine._fd, dict(engine._sessions)

    def child() -> dict:
        before = (device.opened, device.created, device.freed)
        answer = cbc_encrypt(p, bytes(32))
        after = (device.opened, device.created, device.freed)
        return {"answer": answer, "delta": [b - a for a, b in zip(before, after, strict=True)]}

    seen = in_child(child)
    assert seen["answer"] == ref_cbc(bytes(32))
    assert seen["delta"] == [1, 1, 0]  # its own device and session; the parent's left alone
    created = device.created
    assert engine._fd == parent_fd and dict(engine._sessions) == parent_sessions
    assert cbc_encrypt(p, bytes(32)) == ref_cbc(bytes(32))
    assert device.created == created


def test_a_device_driver_without_the_kernel_driver_only_flag_is_hardware(device):
    """virtio-crypto's drivers do not set the flag (seen in the rig), yet a device does the
    work: the driver's name, as /proc/crypto's rule reads it, says hardware."""
    device.bind("cbc(aes)", "virtio_crypto_aes_cbc", hardware=False)
    device.bind("ctr(aes)", "ctr-aes-aesni", hardware=False)
    caps = CryptodevEngine().probe()
    assert caps.detail["algorithms"]["aes-128-cbc"]["driver"] == "virtio_crypto_aes_cbc"
    assert caps.detail["algorithms"]["aes-128-cbc"]["hardware"] is True
    assert caps.detail["skipped"]["aes-128-ctr"] == "software driver: ctr-aes-aesni"


def test_gcm_of_an_empty_message_without_aad_never_sends_a_null_source(device):
    """A NULL source with no AAD oopsed the guest's kernel (aesni's GCM walks the missing
    source list): the engine always points the source somewhere, 0 bytes long."""
    engine = CryptodevEngine()
    engine.probe()
    sources = []
    real = cryptodev.ioctl

    def spy(fd, request, arg):
        if request == CIOCAUTHCRYPT:  # the raw pointer, as the kernel reads it
            at = ctypes.addressof(arg) + type(arg).src.offset
            sources.append(ctypes.c_void_p.from_address(at).value)
        return real(fd, request, arg)

    cryptodev.ioctl = spy
    try:
        sealed = engine.run(AeadOp("aes-128-gcm", "encrypt", bytes(16), bytes(12), b"", None, 16))
    finally:
        cryptodev.ioctl = real
    assert sealed == ref_aead.AESGCM(bytes(16)).encrypt(bytes(12), b"", None)
    assert sources and all(src for src in sources)
    engine.close()
