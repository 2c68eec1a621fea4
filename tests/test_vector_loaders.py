"""Tests for the known-answer vector loaders in tests/vectors/loaders.py."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.decrepit.ciphers import modes as decrepit_modes
from cryptography.hazmat.primitives import cmac, hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESCCM, AESGCM

try:
    from tests.vectors import loaders
except ImportError:  # pytest's rootdir-relative import puts tests/ itself on sys.path
    from vectors import loaders  # type: ignore[no-redef]

CURVES = {"P-192": ec.SECP192R1, "P-224": ec.SECP224R1, "P-256": ec.SECP256R1}
CURVES |= {"P-384": ec.SECP384R1, "P-521": ec.SECP521R1}
SHA_NAMES = ["sha1", "sha224", "sha256", "sha384", "sha512", "sha512_224", "sha512_256"]
AES_MODES = ["ECB", "CBC", "CTR", "CFB128", "OFB"]
IV_MODES: dict[str, Any] = {
    "CBC": modes.CBC,
    "CTR": modes.CTR,
    "CFB128": decrepit_modes.CFB,
    "OFB": decrepit_modes.OFB,
}
FIELD_PRIMES = {
    "P-192": 2**192 - 2**64 - 1,
    "P-224": 2**224 - 2**96 + 1,
    "P-256": 2**256 - 2**224 + 2**192 + 2**96 - 1,
    "P-384": 2**384 - 2**128 - 2**96 + 2**32 - 1,
    "P-521": 2**521 - 1,
}


def _hash(name: str) -> hashes.HashAlgorithm:
    return {
        "sha1": hashes.SHA1(),
        "sha224": hashes.SHA224(),
        "sha256": hashes.SHA256(),
        "sha384": hashes.SHA384(),
        "sha512": hashes.SHA512(),
    }[name]


def _check_types(records: list[dict[str, Any]], types: dict[str, type | tuple[type, ...]]) -> None:
    assert records
    for r in records:
        for field, expected in types.items():
            assert isinstance(r[field], expected), (field, r)


# --------------------------------------------------------------------------- generic parser


def test_vector_path_resolves_inside_package() -> None:
    path = loaders.vector_path("ciphers/AES/GCM/gcmDecrypt128.rsp")
    assert path.is_file()
    assert path.is_relative_to(loaders.VECTORS_DIR)
    with pytest.raises(ValueError):
        loaders.vector_path("../../../etc/passwd")


def test_load_nist_sections_params_and_flags() -> None:
    gcm = loaders.load_nist("ciphers/AES/GCM/gcmDecrypt128.rsp")
    assert gcm[0]["keylen"] == "128" and gcm[0]["taglen"] == "128"
    assert gcm[0]["count"] == "0" and gcm[0]["ct"] == ""
    assert gcm[1].get("fail") is True and "pt" not in gcm[1]
    assert "fail" not in gcm[0]

    ecb = loaders.load_nist("ciphers/AES/ECB/ECBGFSbox128.rsp")
    assert {r["section"] for r in ecb} == {"ENCRYPT", "DECRYPT"}

    sigver = loaders.load_nist("asymmetric/ECDSA/FIPS_186-3/SigVer.rsp", start="msg")
    assert sigver[0]["section"] == "P-192,SHA-1"

    # File-level lengths, bracketed lengths and a Key/Nonce shared by the section's records.
    vadt = loaders.load_nist("ciphers/AES/CCM/VADT128.rsp")
    assert vadt[0]["plen"] == "24" and vadt[0]["alen"] == "0"
    assert vadt[0]["key"] == vadt[9]["key"] and vadt[0]["nonce"] == vadt[9]["nonce"]
    assert vadt[10]["alen"] == "1" and vadt[10]["key"] != vadt[0]["key"]


def test_load_nist_returns_copies() -> None:
    first = loaders.load_nist("ciphers/AES/ECB/ECBGFSbox128.rsp")
    first[0]["key"] = "tampered"
    assert loaders.load_nist("ciphers/AES/ECB/ECBGFSbox128.rsp")[0]["key"] != "tampered"
    aes = loaders.aes_vectors("ECB")
    aes[0]["key"] = b"tampered"
    assert loaders.aes_vectors("ECB")[0]["key"] != b"tampered"


# --------------------------------------------------------------------------- symmetric


@pytest.mark.parametrize("mode", AES_MODES)
def test_aes_vectors_types(mode: str) -> None:
    records = loaders.aes_vectors(mode)
    _check_types(
        records,
        {"key": bytes, "plaintext": bytes, "ciphertext": bytes, "direction": str, "count": int},
    )
    for r in records:
        assert (r["iv"] is None) == (mode == "ECB")
        assert r["direction"] in ("encrypt", "decrypt")
        assert len(r["key"]) in (16, 24, 32)
    if mode != "CTR":
        assert {r["direction"] for r in records} == {"encrypt", "decrypt"}
        assert not any("CFB1G" in r["file"] or "CFB8" in r["file"] for r in records)


def test_aes_ecb_record_decrypts() -> None:
    r = next(r for r in loaders.aes_vectors("ECB") if r["direction"] == "decrypt")
    decryptor = Cipher(algorithms.AES(r["key"]), modes.ECB()).decryptor()
    assert decryptor.update(r["ciphertext"]) + decryptor.finalize() == r["plaintext"]


@pytest.mark.parametrize("mode", AES_MODES)
def test_aes_vectors_all_match_cryptography(mode: str) -> None:
    for r in loaders.aes_vectors(mode):
        cipher_mode = modes.ECB() if mode == "ECB" else IV_MODES[mode](r["iv"])
        cipher = Cipher(algorithms.AES(r["key"]), cipher_mode)
        if r["direction"] == "encrypt":
            ctx, data, expected = cipher.encryptor(), r["plaintext"], r["ciphertext"]
        else:
            ctx, data, expected = cipher.decryptor(), r["ciphertext"], r["plaintext"]
        assert ctx.update(data) + ctx.finalize() == expected, r


def test_gcm_vectors_types_and_fail_flags() -> None:
    records = loaders.gcm_vectors()
    assert len(records) == 47250
    _check_types(
        records,
        {"key": bytes, "iv": bytes, "aad": bytes, "ct": bytes, "tag": bytes, "fail": bool},
    )
    for r in records:
        assert len(r["tag"]) * 8 == r["taglen"] and len(r["iv"]) * 8 == r["ivlen"]
        assert len(r["ct"]) * 8 == r["ptlen"] and len(r["aad"]) * 8 == r["aadlen"]
        assert (r["pt"] is None) == r["fail"]
    fails = [r for r in records if r["fail"]]
    assert fails and all(r["direction"] == "decrypt" for r in fails)


def test_gcm_limit_per_section_covers_every_combination() -> None:
    full = loaders.gcm_vectors()
    subset = loaders.gcm_vectors(limit_per_section=2)
    combo_key = ("direction", "keylen", "ivlen", "ptlen", "aadlen", "taglen")
    combos = {tuple(r[k] for k in combo_key) for r in full}
    assert {tuple(r[k] for k in combo_key) for r in subset} == combos
    assert len(subset) == 2 * len(combos)


def test_gcm_encrypt_records_reproduce() -> None:
    checked = 0
    for r in loaders.gcm_vectors(limit_per_section=3):
        # cryptography only accepts 8..128-byte GCM nonces; the 1-byte-IV sections are skipped.
        if r["direction"] != "encrypt" or r["taglen"] != 128 or len(r["iv"]) < 8:
            continue
        assert AESGCM(r["key"]).encrypt(r["iv"], r["pt"], r["aad"]) == r["ct"] + r["tag"]
        checked += 1
    assert checked > 0


def test_gcm_decrypt_records_pass_or_fail_as_flagged() -> None:
    for r in loaders.gcm_vectors(limit_per_section=3):
        if r["direction"] != "decrypt" or len(r["iv"]) < 8:
            continue
        mode = modes.GCM(r["iv"], r["tag"], min_tag_length=len(r["tag"]))
        decryptor = Cipher(algorithms.AES(r["key"]), mode).decryptor()
        decryptor.authenticate_additional_data(r["aad"])
        pt = decryptor.update(r["ct"])
        if r["fail"]:
            with pytest.raises(InvalidTag):
                decryptor.finalize()
        else:
            decryptor.finalize()
            assert pt == r["pt"]


def test_ccm_vectors_types_and_results() -> None:
    records = loaders.ccm_vectors()
    _check_types(records, {"key": bytes, "nonce": bytes, "aad": bytes, "ct": bytes, "tag": bytes})
    assert {r["test"] for r in records} == {"DVPT", "VADT", "VNT", "VPT", "VTT"}
    assert any(r["fail"] for r in records if r["test"] == "DVPT")
    assert not any(r["fail"] for r in records if r["test"] != "DVPT")
    for r in records:
        assert (len(r["aad"]), len(r["ct"])) == (r["alen"], r["plen"])
        assert (len(r["nonce"]), len(r["tag"])) == (r["nlen"], r["tlen"])
        ccm = AESCCM(r["key"], tag_length=r["tlen"])
        if r["fail"]:
            with pytest.raises(InvalidTag):
                ccm.decrypt(r["nonce"], r["ct"] + r["tag"], r["aad"])
        else:
            assert ccm.encrypt(r["nonce"], r["pt"], r["aad"]) == r["ct"] + r["tag"], r


# --------------------------------------------------------------------------- hashes and MACs


@pytest.mark.parametrize("name", SHA_NAMES)
def test_hash_vectors(name: str) -> None:
    records = loaders.hash_vectors(name)
    _check_types(records, {"msg": bytes, "md": bytes, "len": int, "l": int})
    assert {r["kind"] for r in records} == {"ShortMsg", "LongMsg"}
    assert records[0]["len"] == 0 and records[0]["msg"] == b""
    for r in records:
        assert hashlib.new(name, r["msg"]).digest() == r["md"]


def test_sha256_short_msg_record_hashes() -> None:
    r = next(r for r in loaders.hash_vectors("SHA-256") if r["len"] == 8)
    assert hashlib.sha256(r["msg"]).digest() == r["md"]


@pytest.mark.parametrize("name", SHA_NAMES)
def test_sha_monte(name: str) -> None:
    monte = loaders.hash_monte(name)
    assert isinstance(monte["seed"], bytes) and len(monte["checkpoints"]) == 100
    assert len(monte["seed"]) == monte["l"]
    result = loaders.run_sha_monte(
        monte["seed"], lambda m: hashlib.new(name, m).digest(), len(monte["checkpoints"])
    )
    assert result == monte["checkpoints"]


@pytest.mark.parametrize("name", ["SHA1", "SHA224", "SHA256", "SHA384", "SHA512"])
def test_hmac_vectors(name: str) -> None:
    records = loaders.hmac_vectors(name)
    _check_types(records, {"key": bytes, "msg": bytes, "mac": bytes})
    for r in records:
        assert hmac.digest(r["key"], r["msg"], r["hash"]) == r["mac"]


@pytest.mark.parametrize("keybits", [128, 192, 256])
def test_cmac_vectors(keybits: int) -> None:
    records = loaders.cmac_vectors(keybits)
    _check_types(records, {"key": bytes, "msg": bytes, "mac": bytes})
    for r in records:
        assert len(r["key"]) * 8 == keybits
        c = cmac.CMAC(algorithms.AES(r["key"]))
        c.update(r["msg"])
        assert c.finalize() == r["mac"]


# --------------------------------------------------------------------------- signatures


def test_rsa_sigver_vectors() -> None:
    records = loaders.rsa_sigver_vectors()
    _check_types(
        records,
        {"n": int, "e": int, "hash": str, "msg": bytes, "signature": bytes, "result": bool},
    )
    assert {r["padding"] for r in records} == {"pkcs1v15", "pss"}
    assert any(r["result"] for r in records) and any(not r["result"] for r in records)
    assert {r["salt_len"] for r in records if r["padding"] == "pss"} == {10}
    for r in records:
        try:
            key = rsa.RSAPublicNumbers(r["e"], r["n"]).public_key()
        except ValueError:
            assert not r["result"]
            continue
        if r["padding"] == "pss":
            pad: padding.AsymmetricPadding = padding.PSS(
                padding.MGF1(_hash(r["hash"])), r["salt_len"]
            )
        else:
            pad = padding.PKCS1v15()
        try:
            key.verify(r["signature"], r["msg"], pad, _hash(r["hash"]))
            verified = True
        except InvalidSignature:
            verified = False
        assert verified == r["result"], r["reason"]


def test_ecdsa_sigver_vectors() -> None:
    records = loaders.ecdsa_sigver_vectors()
    _check_types(records, {"curve": str, "msg": bytes, "qx": int, "qy": int, "r": int, "s": int})
    assert {r["curve"] for r in records} == set(CURVES)
    assert any(not r["result"] for r in records)
    for r in records:
        curve = CURVES[r["curve"]]()
        try:
            key = ec.EllipticCurvePublicNumbers(r["qx"], r["qy"], curve).public_key()
            key.verify(encode_dss_signature(r["r"], r["s"]), r["msg"], ec.ECDSA(_hash(r["hash"])))
            verified = True
        except (InvalidSignature, ValueError):
            verified = False
        assert verified == r["result"], r["reason"]


def test_ecdsa_pkv_vectors() -> None:
    records = loaders.ecdsa_pkv_vectors()
    _check_types(records, {"curve": str, "qx": int, "qy": int, "valid": bool})
    assert any(r["valid"] for r in records) and any(not r["valid"] for r in records)
    for r in records:
        # OpenSSL does not reject coordinates >= p, so the range part of PKV is checked here.
        valid = max(r["qx"], r["qy"]) < FIELD_PRIMES[r["curve"]]
        numbers = ec.EllipticCurvePublicNumbers(r["qx"], r["qy"], CURVES[r["curve"]]())
        try:
            numbers.public_key()
        except ValueError:
            valid = False
        assert valid == r["valid"], r["reason"]


def test_ecdsa_keypair_vectors() -> None:
    records = loaders.ecdsa_keypair_vectors()
    _check_types(records, {"curve": str, "d": int, "qx": int, "qy": int})
    assert {r["curve"] for r in records} == set(CURVES)
    for r in records:
        public = ec.derive_private_key(r["d"], CURVES[r["curve"]]()).public_key()
        assert (public.public_numbers().x, public.public_numbers().y) == (r["qx"], r["qy"])


# --------------------------------------------------------------------------- key agreement


def test_kas_parameter_sets() -> None:
    for role in ("init", "resp"):
        path = f"asymmetric/ECDH/KASValidityTest_ECCStaticUnified_NOKC_ZZOnly_{role}.fax"
        sets = loaders.kas_parameter_sets(path)
        assert {k: v["curve"] for k, v in sets.items()} == {
            "EA": "P-192",
            "EB": "P-224",
            "EC": "P-256",
            "ED": "P-384",
            "EE": "P-521",
        }


def test_ecdh_kas_vectors() -> None:
    records = loaders.ecdh_kas_vectors()
    _check_types(
        records,
        {"curve": str, "iut_private": int, "peer_qx": int, "peer_qy": int, "z": bytes},
    )
    assert {r["role"] for r in records} == {"init", "resp"}
    assert any(not r["result"] for r in records)
    assert all(r["reason"] for r in records)
    passes = [r for r in records if r["result"]]
    assert passes
    for r in passes:
        curve = CURVES[r["curve"]]()
        private = ec.derive_private_key(r["iut_private"], curve)
        peer = ec.EllipticCurvePublicNumbers(r["peer_qx"], r["peer_qy"], curve).public_key()
        assert private.exchange(ec.ECDH(), peer) == r["z"]
        assert hashlib.new(r["hash"], r["z"]).digest() == r["hash_z"]
    for r in records:
        if "Z changed" in r["reason"]:
            assert not r["result"]
            curve = CURVES[r["curve"]]()
            private = ec.derive_private_key(r["iut_private"], curve)
            peer = ec.EllipticCurvePublicNumbers(r["peer_qx"], r["peer_qy"], curve).public_key()
            assert private.exchange(ec.ECDH(), peer) != r["z"]


def test_ffc_kas_vectors() -> None:
    records = loaders.ffc_kas_vectors()
    _check_types(
        records,
        {"p": int, "q": int, "g": int, "iut_private": int, "peer_public": int, "z": bytes},
    )
    assert {r["param_set"] for r in records} == {"FA", "FB", "FC"}
    assert any(not r["result"] for r in records)
    for r in records:
        if r["result"]:
            z = pow(r["peer_public"], r["iut_private"], r["p"])
            assert z.to_bytes(len(r["z"]), "big") == r["z"]
            assert len(r["z"]) == (r["p"].bit_length() + 7) // 8
            assert pow(r["g"], r["iut_private"], r["p"]) == r["iut_public"]


def test_fail_records_present_where_files_have_them() -> None:
    assert loaders.fail_records(loaders.gcm_vectors(limit_per_section=5))
    assert loaders.fail_records([r for r in loaders.ccm_vectors() if r["test"] == "DVPT"])
    assert loaders.fail_records(loaders.ecdsa_sigver_vectors())
    assert loaders.fail_records(loaders.ecdh_kas_vectors())
    assert loaders.fail_records(loaders.ffc_kas_vectors())
    assert not loaders.fail_records(loaders.aes_vectors("CBC"))
