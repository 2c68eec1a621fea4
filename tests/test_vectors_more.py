"""Known answers for the algorithms added for drop-in use, through every engine set.

ChaCha20-Poly1305 (OpenSSL's evpciph records), AES-OCB3 (RFC 7253), AES-SIV and AES-GCM-SIV
(OpenSSL's records), AES-XTS (CAVP XTSGen, data units of whole bytes), AES-CFB8 (CAVP MMT),
Triple DES CBC and ECB (CAVP MMT, three keys), CMAC over Triple DES (SP 800-38B), SHA-3 (CAVP
short messages), SHAKE (CAVP variable output), BLAKE2b/2s, SM3, MD5 and HMAC-MD5. Each op is
counted for the right engine (tests/counting.py), and altered records must raise InvalidTag.
"""

from __future__ import annotations

import binascii
from typing import Any

import pytest
from counting import ChaosTally, check_ops
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from vectors.loaders import load_nist

from cryptoffload import Provider, hashes, modes
from cryptoffload.aead import AESGCMSIV, AESOCB3, AESSIV, ChaCha20Poly1305
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.cmac import CMAC
from cryptoffload.hmac import HMAC

TALLY = ChaosTally()


def _h(value: str | None) -> bytes:
    return binascii.unhexlify((value or "").strip())


def _aead_name(cls: type, key: bytes) -> str:
    if cls is ChaCha20Poly1305:
        return "chacha20-poly1305"
    if cls is AESSIV:
        return f"aes-{len(key) * 4}-siv"
    mode = "ocb" if cls is AESOCB3 else "gcm-siv"
    return f"aes-{len(key) * 8}-{mode}"


AEAD_FILES = [
    (ChaCha20Poly1305, "ciphers/ChaCha20Poly1305/openssl.txt"),
    (AESOCB3, "ciphers/AES/OCB3/rfc7253.txt"),
    (AESGCMSIV, "ciphers/AES/GCM-SIV/openssl.txt"),
]


@pytest.mark.parametrize(("cls", "path"), AEAD_FILES, ids=lambda v: getattr(v, "__name__", v))
def test_nonce_aeads_match_vectors_and_refuse_altered_records(
    cls: type, path: str, provider: Provider
) -> None:
    done: dict[str, int] = {}
    for r in load_nist(path):
        key = _h(r["key"])
        nonce = _h(r.get("iv") or r.get("nonce"))
        aad = _h(r.get("aad")) or None
        pt = _h(r.get("plaintext"))
        sealed = _h(r.get("ciphertext")) + _h(r.get("tag"))
        aead = cls(key, provider=provider)
        name = _aead_name(cls, key)
        if r.get("result") == "CIPHERFINAL_ERROR":
            with pytest.raises(InvalidTag):
                aead.decrypt(nonce, sealed, aad)
            done[name] = done.get(name, 0) + 1
            continue
        assert aead.encrypt(nonce, pt, aad) == sealed
        assert aead.decrypt(nonce, sealed, aad) == pt
        with pytest.raises(InvalidTag):
            aead.decrypt(nonce, sealed[:-1] + bytes([sealed[-1] ^ 1]), aad)
        done[name] = done.get(name, 0) + 3
    check_ops(provider, done, TALLY)


def test_aes_siv_matches_vectors_and_refuses_altered_records(provider: Provider) -> None:
    done: dict[str, int] = {}
    for r in load_nist("ciphers/AES/SIV/openssl.txt"):
        key = _h(r["key"])
        aad = [_h(r[k]) for k in ("aad", "aad2", "aad3") if k in r]
        pt = _h(r.get("plaintext"))
        sealed = _h(r["tag"]) + _h(r["ciphertext"])
        siv = AESSIV(key, provider=provider)
        assert siv.encrypt(pt, aad) == sealed
        assert siv.decrypt(sealed, aad) == pt
        with pytest.raises(InvalidTag):
            siv.decrypt(sealed, [*aad, b""])
        name = _aead_name(AESSIV, key)
        done[name] = done.get(name, 0) + 3
    check_ops(provider, done, TALLY)


def _xts_records() -> list[dict[str, Any]]:
    records = []
    for bits in (128, 256):
        for r in load_nist(f"ciphers/AES/XTS/tweak-128hexstr/XTSGenAES{bits}.rsp"):
            if int(r["dataunitlen"]) % 8 == 0 and int(r["dataunitlen"]) >= 128:
                records.append(r)
    return records[::9]  # every record's shape, a ninth of the records


def _cipher_check(cipher: Cipher, pt: bytes, ct: bytes) -> None:
    enc = cipher.encryptor()
    assert enc.update(pt) + enc.finalize() == ct
    dec = cipher.decryptor()
    assert dec.update(ct) + dec.finalize() == pt


def test_aes_xts_matches_vectors(provider: Provider) -> None:
    done: dict[str, int] = {}
    for r in _xts_records():
        key = _h(r["key"])
        cipher = Cipher(algorithms.AES(key), modes.XTS(_h(r["i"])), provider=provider)
        _cipher_check(cipher, _h(r["pt"]), _h(r["ct"]))
        name = f"aes-{len(key) * 4}-xts"
        done[name] = done.get(name, 0) + 2
    check_ops(provider, done, TALLY)


@pytest.mark.parametrize("bits", [128, 192, 256])
def test_aes_cfb8_matches_vectors_whole_and_byte_by_byte(bits: int, provider: Provider) -> None:
    ops = 0
    for r in load_nist(f"ciphers/AES/CFB/CFB8MMT{bits}.rsp"):
        key, iv, pt, ct = (_h(r[k]) for k in ("key", "iv", "plaintext", "ciphertext"))
        cipher = Cipher(algorithms.AES(key), modes.CFB8(iv), provider=provider)
        if r["section"] == "ENCRYPT":
            _cipher_check(cipher, pt, ct)
            ops += 2
        else:  # fed a byte at a time: the chained context carries the IV across updates
            dec = cipher.decryptor()
            assert b"".join(dec.update(ct[i : i + 1]) for i in range(len(ct))) == pt
            ops += len(ct)
    check_ops(provider, {f"aes-{bits}-cfb8": ops}, TALLY)


@pytest.mark.parametrize("mode", ["CBC", "ECB"])
def test_triple_des_matches_vectors(mode: str, provider: Provider) -> None:
    ops = 0
    for r in load_nist(f"ciphers/3DES/{mode}/T{mode}MMT3.rsp"):
        key = _h(r["key1"]) + _h(r["key2"]) + _h(r["key3"])
        pt, ct = _h(r["plaintext"]), _h(r["ciphertext"])
        mode_obj = modes.CBC(_h(r["iv"])) if mode == "CBC" else modes.ECB()
        _cipher_check(Cipher(TripleDES(key), mode_obj, provider=provider), pt, ct)
        ops += 2
    check_ops(provider, {f"3des-{mode.lower()}": ops}, TALLY)


def test_cmac_triple_des_matches_sp800_38b(provider: Provider) -> None:
    ops = 0
    for r in load_nist("CMAC/nist-800-38b-3des.txt"):
        key = _h(r["key1"]) + _h(r["key2"]) + _h(r["key3"])
        c = CMAC(TripleDES(key), provider=provider)
        c.update(_h(r["message"]))
        copy = c.copy()
        assert c.finalize() == _h(r["output"])
        with pytest.raises(InvalidSignature):
            copy.verify(bytes(8))
        ops += 2
    check_ops(provider, {"cmac-3des": ops}, TALLY)


HASH_FILES = [
    ("sha3-224", hashes.SHA3_224(), "hashes/SHA3/SHA3_224ShortMsg.rsp"),
    ("sha3-256", hashes.SHA3_256(), "hashes/SHA3/SHA3_256ShortMsg.rsp"),
    ("sha3-384", hashes.SHA3_384(), "hashes/SHA3/SHA3_384ShortMsg.rsp"),
    ("sha3-512", hashes.SHA3_512(), "hashes/SHA3/SHA3_512ShortMsg.rsp"),
    ("blake2b", hashes.BLAKE2b(64), "hashes/blake2/blake2b.txt"),
    ("blake2s", hashes.BLAKE2s(32), "hashes/blake2/blake2s.txt"),
    ("sm3", hashes.SM3(), "hashes/SM3/oscca.txt"),
    ("md5", hashes.MD5(), "hashes/MD5/rfc-1321.txt"),
]


@pytest.mark.parametrize(("name", "algorithm", "path"), HASH_FILES, ids=[h[0] for h in HASH_FILES])
def test_hashes_match_vectors_one_shot_and_streamed(
    name: str, algorithm: Any, path: str, provider: Provider
) -> None:
    records = load_nist(path, "len")[::4]
    for r in records:
        msg = _h(r["msg"])[: int(r["len"]) // 8]
        assert hashes.digest(msg, algorithm, provider=provider) == _h(r["md"])
        h = hashes.Hash(algorithm, provider=provider)
        h.update(msg[:3])
        h.update(msg[3:])
        assert h.finalize() == _h(r["md"])
    check_ops(provider, {name: 2 * len(records)}, TALLY)


@pytest.mark.parametrize("bits", [128, 256])
def test_shake_variable_output_matches_vectors(bits: int, provider: Provider) -> None:
    records = load_nist(f"hashes/SHAKE/SHAKE{bits}VariableOut.rsp")[::50]
    for r in records:
        size = int(r["outputlen"]) // 8
        algorithm = (hashes.SHAKE128 if bits == 128 else hashes.SHAKE256)(size)
        assert hashes.Hash.hash(algorithm, _h(r["msg"])) == _h(r["output"])  # the default
        h = hashes.Hash(algorithm, provider=provider)
        h.update(_h(r["msg"]))
        assert h.finalize() == _h(r["output"])
        assert hashes.digest(_h(r["msg"]), algorithm, provider=provider) == _h(r["output"])
    check_ops(provider, {f"shake{bits}": 2 * len(records)}, TALLY)


def test_hmac_md5_matches_rfc_2202(provider: Provider) -> None:
    records = load_nist("HMAC/rfc-2202-md5.txt", "len")
    for r in records:
        h = HMAC(_h(r["key"]), hashes.MD5(), provider=provider)
        h.update(_h(r["msg"]))
        h.copy().verify(_h(r["md"]))
        assert h.finalize() == _h(r["md"])
    check_ops(provider, {"hmac-md5": 2 * len(records)}, TALLY)


def test_chaos_engine_declined_and_faulted_over_this_file(request) -> None:
    TALLY.check(request)
