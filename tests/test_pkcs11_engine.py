"""The PKCS#11 engine on a SoftHSM token: spec, availability, claims, declines, answers, and
keys and PINs kept out of reprs, logs, errors and counters."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
import softhsm
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import hmac as ref_hmac
from cryptography.hazmat.primitives.asymmetric import ec as ref_ec
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import rsa as ref_rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM as RefAESGCM

from cryptoffload import Policy, Provider, ec, rsa
from cryptoffload import hashes as co_hashes
from cryptoffload.aead import AESGCM
from cryptoffload.core.ops import AeadOp, CipherOp, EcdsaOp, MacOp, RsaOp
from cryptoffload.engines import discover, from_spec
from cryptoffload.engines.pkcs11 import Pkcs11Engine
from cryptoffload.errors import BadEngineSpec, Unavailable
from cryptoffload.hmac import HMAC

ALL = Policy(min_size={"*": 0})
NONCE = bytes(range(12))


@pytest.fixture
def engine(softhsm_token: softhsm.SoftHsm) -> Pkcs11Engine:
    eng = from_spec(softhsm_token.spec)
    yield eng
    eng.close()


def ops_on(provider: Provider, engine_name: str, alg: str) -> int:
    return provider.counters.snapshot().get(engine_name, {}).get(alg, {"ops": 0})["ops"]


# -- spec and availability ------------------------------------------------------------------


@pytest.mark.parametrize(
    "arg, words",
    [
        ("module=/x.so,token=t,pin=1234", "no PIN in the spec"),
        ("token=t", "needs module="),
        ("module=/x.so", "needs token="),
        ("module=/x.so,token=t,pin-env=A,pin-file=/p", "not both"),
        ("module=/x.so,token=t,colour=blue", "'colour'"),
        ("module=/x.so,token=t,token=u", "given twice"),
    ],
)
def test_a_bad_spec_is_refused_with_what_is_wrong_and_never_echoes_a_pin(arg, words):
    with pytest.raises(BadEngineSpec) as info:
        from_spec(f"pkcs11:{arg}")
    assert words in str(info.value)
    assert "1234" not in str(info.value)


def test_pkcs11_is_never_discovered_only_named():
    assert not any(getattr(e, "name", "").startswith("pkcs11") for e in discover())


def test_a_missing_module_makes_the_engine_unavailable_with_the_path():
    caps = from_spec("pkcs11:module=/nonexistent/libp11.so,token=t").probe()
    assert not caps.available and "/nonexistent/libp11.so" in caps.reason


def test_an_unknown_token_label_makes_the_engine_unavailable(softhsm_token):
    caps = from_spec(f"pkcs11:module={softhsm_token.module},token=nobody,pin-env=X").probe()
    assert not caps.available and "no token labelled 'nobody'" in caps.reason


def test_a_missing_pin_variable_or_file_is_named_in_the_reason(softhsm_token, tmp_path):
    base = f"pkcs11:module={softhsm_token.module},token={softhsm_token.label}"
    os.environ.pop("CRYPTOFFLOAD_NO_SUCH_PIN", None)
    caps = from_spec(base + ",pin-env=CRYPTOFFLOAD_NO_SUCH_PIN").probe()
    assert not caps.available and "CRYPTOFFLOAD_NO_SUCH_PIN is not set" in caps.reason
    caps = from_spec(base + f",pin-file={tmp_path}/absent").probe()
    assert not caps.available and "cannot be read" in caps.reason
    caps = from_spec(base).probe()
    assert not caps.available and "needs a login" in caps.reason


def test_a_wrong_pin_is_reported_without_the_pin(softhsm_token, tmp_path):
    # In a process of its own: login is per process, and this one may be logged in already
    # (another engine on the token), when a second C_Login says "already logged in".
    pin = tmp_path / "pin"
    pin.write_text("999999\n")
    spec = f"pkcs11:module={softhsm_token.module},token={softhsm_token.label},pin-file={pin}"
    code = (
        "from cryptoffload.engines import from_spec\n"
        f"caps = from_spec({spec!r}).probe()\n"
        "print(caps.available, caps.reason)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("False ") and "wrong PIN" in run.stdout
    assert "999999" not in run.stdout + run.stderr


@pytest.mark.parametrize(
    "after", ["\n", "\r\nnot part of the PIN\n"], ids=["one-line", "first-line-of-more"]
)
def test_a_pin_file_logs_in_with_its_first_line(softhsm_token, tmp_path, after):
    pin = tmp_path / "pin"
    pin.write_text(softhsm.PIN + after)
    base = f"pkcs11:module={softhsm_token.module},token={softhsm_token.label}"
    eng = from_spec(f"{base},pin-file={pin}")
    try:
        assert eng.probe().available
    finally:
        eng.close()


@pytest.mark.parametrize("source", ["pin-file=/dev/null", "pin-file=NEWLINE", "pin-env=EMPTY"])
def test_an_empty_pin_is_refused_before_any_login(softhsm_token, tmp_path, monkeypatch, source):
    # A failed login spends one of a real token's few retries: an empty PIN is never tried.
    logins: list[int] = []
    monkeypatch.setattr(
        "cryptoffload.engines.pkcs11.ck.Module.login", lambda self, s, pin: logins.append(s)
    )
    newline = tmp_path / "pin"
    newline.write_bytes(b"\n")
    monkeypatch.setenv("CRYPTOFFLOAD_EMPTY_PIN", "")
    option = source.replace("NEWLINE", str(newline)).replace("EMPTY", "CRYPTOFFLOAD_EMPTY_PIN")
    eng = from_spec(f"pkcs11:module={softhsm_token.module},token={softhsm_token.label},{option}")
    try:
        caps = eng.probe()
    finally:
        eng.close()
    assert not caps.available and not logins
    assert option in caps.reason and "empty" in caps.reason


def test_a_pin_file_without_an_end_is_refused_after_a_bounded_read(softhsm_token):
    # In a child limited to 512 MiB of address space: the whole of /dev/zero is never read
    # (without a bound the read grows until MemoryError, 1.9 GB on a test machine).
    spec = f"pkcs11:module={softhsm_token.module},token={softhsm_token.label},pin-file=/dev/zero"
    code = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))\n"
        "from cryptoffload.engines import from_spec\n"
        f"caps = from_spec({spec!r}).probe()\n"
        "print(caps.available, caps.reason)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("False ") and "pin-file=/dev/zero" in run.stdout
    assert "first line" in run.stdout


# -- claims --------------------------------------------------------------------------------


def test_probe_claims_the_softhsm_mechanisms_that_pass_their_known_answers(engine):
    caps = engine.probe()
    assert caps.available, caps.reason
    for alg in ("aes-128-gcm", "aes-256-cbc", "aes-256-ctr", "sha256", "hmac-sha256",
                "cmac-aes-128", "ecdsa-p256-sign", "ecdsa-p256-verify", "ecdh-p256",
                "rsa-2048-private"):  # fmt: skip
        assert alg in caps.algorithms, alg
    assert caps.detail["known-answer failures"] == {}
    # Nothing the token lacks: no ChaCha, no FFDH, no curves but the NIST ones.
    assert not {a for a in caps.algorithms if "chacha" in a or "ffdhe" in a or "brainpool" in a}
    assert "0x1087" in caps.detail["mechanisms"]  # CKM_AES_GCM with its key range and flags


# -- declines ------------------------------------------------------------------------------


def test_what_the_token_would_not_do_as_software_does_is_declined_with_the_reason(engine):
    engine.probe()
    key16 = bytes(16)
    cases = [
        (AeadOp("aes-128-gcm", "encrypt", key16, bytes(16), b"x", None, 16), "nonce of 16"),
        (CipherOp("aes-128-ctr", "encrypt", key16, b"\xff" * 16, bytes(32)), "would wrap"),
        (MacOp("hmac-sha256", "mac", b"", b"data"), "HMAC key of 0"),
        (MacOp("hmac-sha256", "mac", b"k" * 600, b"data"), "HMAC key of 600"),
    ]
    ec_key = ref_ec.generate_private_key(ref_ec.SECP256R1())
    cases.append(
        (EcdsaOp("ecdsa-p256-sign", "sign", ec_key, bytes(32), hashes.SHA256(), deterministic=True),
         "RFC 6979")
    )  # fmt: skip
    rsa_key = ref_rsa.generate_private_key(65537, 2048)
    ct = rsa_key.public_key().encrypt(b"m", padding.PKCS1v15())
    v15 = padding.PKCS1v15()
    cases.append(
        (RsaOp("rsa-2048-private", "decrypt", rsa_key, data=ct, padding=v15), "v1.5 decryption")
    )
    oaep256 = padding.OAEP(padding.MGF1(hashes.SHA256()), hashes.SHA256(), None)
    ct = rsa_key.public_key().encrypt(b"m", oaep256)
    cases.append((RsaOp("rsa-2048-private", "decrypt", rsa_key, data=ct, padding=oaep256), "CKR"))
    for op, words in cases:
        with pytest.raises(Unavailable) as info:
            engine.run(op)
        assert words in info.value.detail, (op, info.value.detail)


def test_a_counter_one_block_short_of_wrapping_is_taken_and_matches_software(engine):
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    engine.probe()
    iv = b"\xff" * 15 + b"\xfe"  # two blocks up to 2^128 - 1: no wrap
    got = engine.run(CipherOp("aes-128-ctr", "encrypt", bytes(16), iv, bytes(32)))
    enc = Cipher(algorithms.AES(bytes(16)), modes.CTR(iv)).encryptor()
    assert got == enc.update(bytes(32)) + enc.finalize()


def test_short_hmac_keys_are_zero_padded_exactly(engine):
    engine.probe()
    for key in (b"k", b"k" * 31, b"k" * 32, b"k" * 65, b"k" * 200):
        got = engine.run(MacOp("hmac-sha256", "mac", key, b"message"))
        ref = ref_hmac.HMAC(key, hashes.SHA256())
        ref.update(b"message")
        assert got == ref.finalize(), len(key)


# -- answers through the API, counted on the engine -----------------------------------------


def test_the_api_offloads_to_the_token_with_the_same_answers_and_counts_them(softhsm_token):
    engine = from_spec(softhsm_token.spec)
    provider = Provider([engine], policy=ALL)
    try:
        key = os.urandom(32)
        gcm = AESGCM(key, provider=provider)
        for n in (0, 1, 64, 1024, 16384):
            data = os.urandom(n)
            sealed = gcm.encrypt(NONCE, data, b"aad")
            assert sealed == RefAESGCM(key).encrypt(NONCE, data, b"aad")
            assert gcm.decrypt(NONCE, sealed, b"aad") == data
        with pytest.raises(InvalidTag):
            gcm.decrypt(NONCE, sealed[:-1] + bytes([sealed[-1] ^ 1]), b"aad")
        h = co_hashes.Hash(co_hashes.SHA256(), provider=provider)
        h.update(b"abc")
        assert h.finalize().hex().startswith("ba7816bf")
        mac = HMAC(b"key", co_hashes.SHA256(), provider=provider)
        mac.update(b"data")
        ref = ref_hmac.HMAC(b"key", hashes.SHA256())
        ref.update(b"data")
        assert mac.finalize() == ref.finalize()
        priv = ec.generate_private_key(ec.SECP256R1(), provider=provider)
        sig = priv.sign(b"msg", ec.ECDSA(hashes.SHA256()))
        priv.public_key().to_cryptography().verify(sig, b"msg", ref_ec.ECDSA(hashes.SHA256()))
        priv.public_key().verify(sig, b"msg", ec.ECDSA(hashes.SHA256()))
        with pytest.raises(InvalidSignature):
            priv.public_key().verify(sig, b"msh", ec.ECDSA(hashes.SHA256()))
        peer = ref_ec.generate_private_key(ref_ec.SECP256R1())
        assert priv.exchange(ec.ECDH(), peer.public_key()) == peer.exchange(
            ref_ec.ECDH(), priv.public_key().to_cryptography()
        )
        rkey = rsa.generate_private_key(65537, 2048, provider=provider)
        for pad in (padding.PKCS1v15(), padding.PSS(padding.MGF1(hashes.SHA256()),
                                                     padding.PSS.MAX_LENGTH)):  # fmt: skip
            sig = rkey.sign(b"msg", pad, hashes.SHA256())
            rkey.public_key().to_cryptography().verify(sig, b"msg", pad, hashes.SHA256())
        oaep = padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA1(), None)
        ct = rkey.public_key().to_cryptography().encrypt(b"secret", oaep)
        assert rkey.decrypt(ct, oaep) == b"secret"
        with pytest.raises(ValueError):
            rkey.decrypt(bytes(256), oaep)
        name = engine.name
        assert ops_on(provider, name, "aes-256-gcm") == 11  # 5 + 5 + the failed tag
        for alg in ("sha256", "hmac-sha256", "ecdsa-p256-sign", "ecdsa-p256-verify",
                    "ecdh-p256"):  # fmt: skip
            assert ops_on(provider, name, alg) >= 1, alg
        assert ops_on(provider, name, "rsa-2048-private") == 4  # 2 signs, 2 decrypts
        snap = provider.counters.snapshot()
        assert all(c["faults"] == 0 for c in snap[name].values()), snap[name]
    finally:
        provider.close()


def test_caller_keys_are_imported_once_and_evicted_least_recently_used(softhsm_token):
    engine = Pkcs11Engine(from_spec(softhsm_token.spec).spec, cache_size=2)
    try:
        engine.probe()
        before = engine.imports
        keys = [os.urandom(16) for _ in range(3)]
        for _ in range(3):
            assert engine.run(MacOp("cmac-aes-128", "mac", keys[0], b"m"))
        assert engine.imports == before + 1  # cached
        for k in keys:
            op = AeadOp("aes-128-gcm", "encrypt", k, NONCE, b"m", None, 16)
            assert engine.run(op) == RefAESGCM(k).encrypt(NONCE, b"m", None)
        assert len(engine._cache) == 2
        op = AeadOp("aes-128-gcm", "encrypt", keys[0], NONCE, b"m", None, 16)
        assert engine.run(op) == RefAESGCM(keys[0]).encrypt(NONCE, b"m", None)
        assert engine.imports == before + 4  # keys[0] was evicted and came back
    finally:
        engine.close()


# -- secrets stay secret --------------------------------------------------------------------


def test_keys_and_the_pin_never_reach_reprs_logs_errors_or_counters(softhsm_token, caplog):
    caplog.set_level(logging.DEBUG)
    engine = from_spec(softhsm_token.spec)
    provider = Provider([engine], policy=ALL)
    key = bytes.fromhex("5ec7e75ec7e75ec7e75ec7e75ec7e75e")
    seen: list[str] = [repr(engine), repr(provider)]
    try:
        gcm = AESGCM(key, provider=provider)
        sealed = gcm.encrypt(NONCE, b"payload", None)
        try:
            gcm.decrypt(NONCE, sealed[:-1] + b"\0", None)
        except InvalidTag as exc:
            seen.append(repr(exc))
        try:
            engine.run(AeadOp("aes-128-gcm", "encrypt", key, bytes(16), b"x", None, 16))
        except Unavailable as exc:
            seen += [str(exc), exc.detail]
        seen.append(json.dumps(provider.counters.snapshot()))
        seen.append(json.dumps(engine.probe().detail, default=str))
        seen += [r.getMessage() for r in caplog.records]
        text = "\n".join(seen)
        assert key.hex() not in text and key.hex().upper() not in text
        assert softhsm.PIN not in text
        assert engine.spec.text().endswith(f"pin-env={softhsm.PIN_ENV}")
    finally:
        provider.close()


def test_cryptoffload_engines_lists_the_token(softhsm_token):
    provider = Provider([softhsm_token.spec], policy=ALL)
    try:
        assert not provider.unavailable
        assert provider.engines[0].name == f"pkcs11:{softhsm_token.label}"
    finally:
        provider.close()


def test_short_gcm_tags_the_token_was_seen_to_make_are_offered_and_a_bad_one_fails(engine):
    caps = engine.probe()
    assert {4, 8, 12, 16} <= set(caps.detail["gcm tag lengths"])
    op = AeadOp("aes-128-gcm", "encrypt", bytes(16), NONCE, b"data", b"aad", 12)
    sealed = engine.run(op)
    assert sealed == RefAESGCM(bytes(16)).encrypt(NONCE, b"data", b"aad")[:-4]  # tag cut to 12
    bad = sealed[:-1] + bytes([sealed[-1] ^ 0x80])
    with pytest.raises(InvalidTag):
        engine.run(AeadOp("aes-128-gcm", "decrypt", bytes(16), NONCE, bad, b"aad", 12))


def _close_sessions_behind_the_engines_back(engine: Pkcs11Engine) -> None:
    """What another user of the module, or a token event, does to the engine's handles."""
    token = engine._token
    for session in [*token._all, token._keeper]:
        token.module.close_session(session)


@pytest.mark.parametrize("lost", ["sessions", "sessions and the key cache"])
def test_an_op_whose_sessions_were_lost_runs_again_on_fresh_ones_and_is_no_fault(
    softhsm_token, lost
):
    engine = from_spec(softhsm_token.spec)
    provider = Provider([engine], policy=ALL)
    try:
        key = os.urandom(16)
        gcm = AESGCM(key, provider=provider)
        assert gcm.encrypt(NONCE, b"first", b"") == RefAESGCM(key).encrypt(NONCE, b"first", b"")
        _close_sessions_behind_the_engines_back(engine)
        if lost == "sessions and the key cache":
            gcm = AESGCM(os.urandom(16), provider=provider)  # a key not imported yet
        sealed = gcm.encrypt(NONCE, b"second", b"aad")
        assert gcm.decrypt(NONCE, sealed, b"aad") == b"second"
        cell = provider.counters.snapshot()[engine.name]["aes-128-gcm"]
        assert cell["ops"] == 3 and cell["faults"] == 0
        assert "aes-128-gcm" not in provider.counters.snapshot().get("software", {})
    finally:
        provider.close()


def test_a_device_error_is_a_fault_and_the_next_op_opens_afresh(softhsm_token, monkeypatch):
    from cryptoffload.engines.pkcs11 import ck
    from cryptoffload.engines.pkcs11 import engine as engine_module

    engine = from_spec(softhsm_token.spec)
    provider = Provider([engine], policy=ALL)
    try:
        gcm = AESGCM(bytes(16), provider=provider)
        gcm.encrypt(NONCE, b"warm", b"")
        real = engine_module._HANDLERS["aead"]
        calls = []

        def failing_once(eng, op):
            calls.append(op)
            if len(calls) == 1:
                raise ck.CkError("C_Encrypt", ck.CKR_DEVICE_ERROR)
            return real(eng, op)

        monkeypatch.setitem(engine_module._HANDLERS, "aead", failing_once)
        generation = engine._token.generation
        expected = RefAESGCM(bytes(16)).encrypt(NONCE, b"x", b"")
        assert gcm.encrypt(NONCE, b"x", b"") == expected  # software finished it
        assert len(calls) == 1 and engine._token.generation == generation + 1
        assert gcm.encrypt(NONCE, b"x", b"") == expected  # on the token again
        cell = provider.counters.snapshot()[engine.name]["aes-128-gcm"]
        assert cell["faults"] == 1 and cell["ops"] == 2
    finally:
        provider.close()
