"""/proc/crypto parsing and the hardware/software classification of kernel drivers."""

from __future__ import annotations

import pathlib

import pytest

from cryptoffload.engines import procfs

SAMPLE = """name         : cbc(aes)
driver       : virtio_crypto_aes_cbc
module       : virtio_crypto
priority     : 150
refcnt       : 1
selftest     : passed
internal     : no
type         : skcipher

name         : cbc(aes)
driver       : cbc-aes-aesni
module       : aesni_intel
priority     : 400
internal     : no
type         : skcipher

name         : __cbc(aes)
driver       : __cbc-aes-aesni
module       : aesni_intel
priority     : 400
internal     : yes
type         : skcipher

name         : gcm(aes)
driver       : gcm_base(ctr(aes-aesni),ghash-clmulni)
module       : kernel
priority     : 300
internal     : no
type         : aead
"""


def test_parse_reads_every_record_with_its_fields():
    entries = procfs.parse(SAMPLE)
    assert [e.driver for e in entries] == [
        "virtio_crypto_aes_cbc",
        "cbc-aes-aesni",
        "__cbc-aes-aesni",
        "gcm_base(ctr(aes-aesni),ghash-clmulni)",
    ]
    first = entries[0]
    assert (first.name, first.module, first.priority, first.type) == (
        "cbc(aes)",
        "virtio_crypto",
        150,
        "skcipher",
    )
    assert entries[2].internal


def test_kernel_choice_is_the_highest_priority_public_entry():
    entries = procfs.parse(SAMPLE)
    assert procfs.chosen(entries, "cbc(aes)").driver == "cbc-aes-aesni"
    assert procfs.chosen(entries, "ecb(aes)") is None
    assert procfs.by_driver(entries, "virtio_crypto_aes_cbc").priority == 150


@pytest.mark.parametrize(
    ("driver", "module", "hardware"),
    [
        ("virtio_crypto_aes_cbc", "virtio_crypto", True),
        ("cbc-aes-caam", "caamalg", True),
        ("cbc-aes-caam", "kernel", True),
        ("hmac(sha256-caam)", "kernel", True),
        ("cbc-aes-aesni", "aesni_intel", False),
        ("cbc(aes-generic)", "kernel", False),
        ("gcm_base(ctr(aes-aesni),ghash-clmulni)", "kernel", False),
        ("hmac(sha256-ni)", "kernel", False),
        ("sha256-generic", "kernel", False),
        ("cbc-aes-ce", "aes_ce_blk", False),
        ("cbc-aes-neon", "aes_neonbs", False),
        ("sha256-avx2", "sha256_ssse3", False),
        ("drbg_nopr_hmac_sha256", "kernel", False),
        ("jitterentropy_rng", "kernel", False),
        ("cbc-aes-mv", "marvell_cesa", True),
        ("rfc7539(chacha20-simd,poly1305-simd)", "chacha20poly1305", False),
        ("chacha20-simd", "chacha_x86_64", False),
    ],
)
def test_hardware_or_software_classification(driver, module, hardware):
    assert procfs.is_hardware(driver, module) is hardware


def test_read_of_a_missing_file_is_empty(tmp_path):
    assert procfs.read(str(tmp_path / "nope")) == []


def test_candidates_list_every_public_driver_the_kernel_choice_first():
    entries = procfs.parse(SAMPLE)
    found = procfs.candidates(entries, "cbc(aes)")
    assert [e.driver for e in found] == ["cbc-aes-aesni", "virtio_crypto_aes_cbc"]
    assert procfs.candidates(entries, "ecb(aes)") == []


#: /proc/crypto of the rig's guest (rig/run cat /proc/crypto after an AF_ALG probe): Debian's
#: 6.1 kernel under QEMU with a virtio-crypto device, aesni_intel loaded.
RIG = pathlib.Path(__file__).with_name("rig_proc_crypto.txt")


def test_the_rig_lists_the_virtio_driver_beside_the_kernels_choice():
    entries = procfs.read(str(RIG))
    assert len(entries) > 100
    chosen = procfs.chosen(entries, "cbc(aes)")
    assert chosen.driver == "cbc-aes-aesni" and not chosen.hardware
    virtio = [e for e in procfs.candidates(entries, "cbc(aes)") if e.hardware]
    assert [(e.driver, e.priority) for e in virtio] == [("virtio_crypto_aes_cbc", 150)]
    # No kernel choice for an algorithm of ours is hardware (SIMD chacha20-poly1305 is CPU code).
    from cryptoffload.engines.afalg import KERNEL_NAMES

    chosen = [procfs.chosen(entries, name) for _, name in KERNEL_NAMES.values()]
    assert not [e.driver for e in chosen if e is not None and e.hardware]


def test_afalg_names_the_hardware_drivers_the_kernel_does_not_choose(monkeypatch):
    from cryptoffload.engines import afalg

    entries = procfs.read(str(RIG))
    others = afalg.AfalgEngine()._alternatives(entries)
    assert sorted(others) == ["aes-128-cbc", "aes-192-cbc", "aes-256-cbc"]
    (entry,) = others["aes-128-cbc"]
    assert entry == {
        "kernel name": "cbc(aes)",
        "driver": "virtio_crypto_aes_cbc",
        "priority": 150,
        "module": "virtio_crypto",
        "spec": "afalg:virtio_crypto_aes_cbc",
    }
    assert afalg.AfalgEngine(allow_software=True)._alternatives(entries) == others
    assert afalg.AfalgEngine(driver="virtio_crypto_aes_cbc")._alternatives(entries) == {}
