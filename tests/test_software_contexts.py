"""The software engine's contexts made in compiled code (engines/_contexts.c) and their pure
twins: the AES-GCM engine stream (the pass-through engine's ``open_aead_stream``) and the cipher
sessions (its ``session``) give `cryptography`'s answers, decline or defer what they do not do,
and behave alike on misuse."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from cryptoffload.core.ops import AeadOp, CipherOp
from cryptoffload.engines import software
from cryptoffload.errors import Unavailable


def _compiled_module() -> Any:
    module = software._compiled_contexts()
    if module is None:
        pytest.skip("engines/_contexts.c is not built here (or CRYPTOFFLOAD_PURE_PYTHON is set)")
    return module


def _compiled() -> Any:
    return _compiled_module().open_stream


TWINS = {"pure": lambda: software.py_gcm_stream, "compiled": _compiled}


@pytest.fixture(params=sorted(TWINS))
def open_stream(request: pytest.FixtureRequest) -> Any:
    return TWINS[request.param]()


def _op(kind: str, key: Any, iv: Any, alg: str | None = None) -> AeadOp:
    return AeadOp(alg or f"aes-{len(key) * 8}-gcm", kind, key, iv, b"", b"", 16)


def _reference(key: bytes, iv: bytes, aad: bytes, data: bytes) -> tuple[bytes, bytes]:
    enc = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor()
    enc.authenticate_additional_data(aad)
    out = enc.update(data) + enc.finalize()
    return out, enc.tag


@pytest.mark.parametrize("key_size", [16, 24, 32])
@pytest.mark.parametrize("iv_size", [8, 12, 16])
def test_a_stream_gives_cryptographys_output_and_tag_and_checks_the_tag(
    open_stream: Any, key_size: int, iv_size: int
) -> None:
    key, iv = bytes(range(key_size)), bytes(range(100, 100 + iv_size))
    aad, data = b"header" * 3, bytes(range(256)) * 5 + b"tail"
    sealed, tag = _reference(key, iv, aad, data)
    enc = open_stream(_op("encrypt", key, iv))
    enc.update_aad(aad[:7])
    enc.update_aad(aad[7:])
    out = enc.update(data[:100]) + enc.update(data[100:])
    assert (out, enc.finalize()) == (sealed, tag)
    dec = open_stream(_op("decrypt", key, iv))
    dec.update_aad(aad)
    assert dec.update(sealed) + dec.finalize(tag) == data
    bad = open_stream(_op("decrypt", key, iv))
    bad.update_aad(aad)
    bad.update(sealed)
    with pytest.raises(InvalidTag):
        bad.finalize(bytes([tag[0] ^ 1]) + tag[1:])


@pytest.mark.parametrize("length", [4, 8, 13, 16])
def test_a_decryption_takes_any_tag_of_four_bytes_and_more(open_stream: Any, length: int) -> None:
    key, iv = bytes(16), bytes(12)
    sealed, tag = _reference(key, iv, b"", b"message")
    dec = open_stream(_op("decrypt", key, iv))
    assert dec.update(sealed) + dec.finalize(tag=tag[:length]) == b"message"


def test_a_decryption_with_no_tag_or_a_short_one_is_refused(open_stream: Any) -> None:
    key, iv = bytes(16), bytes(12)
    sealed, tag = _reference(key, iv, b"", b"message")
    for given in (None, b"", tag[:3]):
        dec = open_stream(_op("decrypt", key, iv))
        dec.update(sealed)
        with pytest.raises(ValueError, match="tag"):
            dec.finalize(given)


def test_a_key_or_nonce_that_is_not_bytes_is_taken(open_stream: Any) -> None:
    key, iv = bytes(range(16)), bytes(12)
    sealed, tag = _reference(key, iv, b"a", b"b" * 40)
    enc = open_stream(_op("encrypt", bytearray(key), memoryview(iv)))
    enc.update_aad(b"a")
    assert (enc.update(b"b" * 40), enc.finalize()) == (sealed, tag)


def test_a_key_seen_for_the_first_time_is_kept_and_taken_again(open_stream: Any) -> None:
    software._KEYED.clear()
    key, iv = bytes(range(50, 66)), bytes(12)
    sealed, tag = _reference(key, iv, b"", b"x" * 33)
    for _ in range(3):
        enc = open_stream(_op("encrypt", key, iv))
        assert (enc.update(b"x" * 33), enc.finalize()) == (sealed, tag)
    assert software._KEYED.peek((software._keyed_cipher, key, "aes-128-gcm")) is not None


@pytest.mark.parametrize("alg", ["aes-128-ctr", "aes-128-ccm", "chacha20-poly1305", "sm4-gcm"])
def test_an_algorithm_other_than_aes_gcm_is_declined(open_stream: Any, alg: str) -> None:
    key = bytes(16)
    software._KEYED.get(software._keyed_cipher, key, "aes-128-ctr")  # an AES object kept
    with pytest.raises(Unavailable) as declined:
        open_stream(_op("encrypt", key, bytes(12), alg=alg))
    assert declined.value.reason == "streaming"


def test_a_closed_stream_lets_go_of_its_context_and_cannot_finish(open_stream: Any) -> None:
    stream = open_stream(_op("encrypt", bytes(16), bytes(12)))
    stream.close()
    assert (stream._ctx, stream.update, stream.update_aad) == (None, None, None)
    with pytest.raises(AttributeError):
        stream.finalize()


def test_finalize_takes_one_tag_at_most(open_stream: Any) -> None:
    stream = open_stream(_op("decrypt", bytes(16), bytes(12)))
    with pytest.raises(TypeError):
        stream.finalize(b"1" * 16, b"2" * 16)


def test_a_stale_compiled_module_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    import cryptoffload.engines

    stale = types.ModuleType("cryptoffload.engines._contexts")
    stale.API = software.CONTEXTS_API - 1  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cryptoffload.engines._contexts", stale)
    monkeypatch.setattr(cryptoffload.engines, "_contexts", stale, raising=False)
    monkeypatch.delenv("CRYPTOFFLOAD_PURE_PYTHON", raising=False)
    with pytest.warns(RuntimeWarning, match="built from other sources"):
        assert software._compiled_contexts() is None


def test_the_pure_python_setting_keeps_the_pure_twins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRYPTOFFLOAD_PURE_PYTHON", "1")
    assert software._compiled_contexts() is None


# -- the cipher sessions (SoftwareEngine.session's ECB, CBC and CTR branch) --------------------


def _sessions_of(engine: Any) -> Any:
    return _compiled_module().CipherSessions(engine.session)


SESSIONS = {"pure": lambda engine: engine.session, "compiled": _sessions_of}


@pytest.fixture(params=sorted(SESSIONS))
def session_of(request: pytest.FixtureRequest) -> Any:
    engine = software.SoftwareEngine()
    return SESSIONS[request.param](engine)


def _reference_mode(mode: str, iv: bytes) -> Any:
    return {"ecb": modes.ECB(), "cbc": modes.CBC(iv), "ctr": modes.CTR(iv)}[mode]


@pytest.mark.parametrize("key_size", [16, 24, 32])
@pytest.mark.parametrize("mode", ["ecb", "cbc", "ctr"])
@pytest.mark.parametrize("kind", ["encrypt", "decrypt"])
def test_a_cipher_session_goes_on_from_its_chaining_value_as_cryptography_does(
    session_of: Any, key_size: int, mode: str, kind: str
) -> None:
    key, iv, data = bytes(range(key_size)), bytes(range(200, 216)), bytes(range(256)) * 3
    cipher = Cipher(algorithms.AES(key), _reference_mode(mode, iv))
    reference = cipher.encryptor() if kind == "encrypt" else cipher.decryptor()
    alg = f"aes-{key_size * 8}-{mode}"
    session = session_of(CipherOp(alg, kind, key, None if mode == "ecb" else iv, None))
    assert session.update(data[:48]) + session.update(data[48:]) == reference.update(data)
    assert session.finalize() == reference.finalize()


def test_a_cipher_session_of_an_iv_not_bytes_is_the_slow_ones(session_of: Any) -> None:
    key, iv = bytes(range(16)), bytes(16)
    reference = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor().update(b"z" * 40)
    op = CipherOp("aes-128-ctr", "encrypt", key, bytearray(iv), None)
    assert session_of(op).update(b"z" * 40) == reference


def test_a_cipher_session_of_a_new_key_keeps_it(session_of: Any) -> None:
    software._KEYED.clear()
    key = bytes(range(80, 96))
    for _ in range(2):
        session_of(CipherOp("aes-128-cbc", "encrypt", key, bytes(16), None))
    assert software._KEYED.peek((software._keyed_cipher, key, "aes-128-cbc")) is not None


@pytest.mark.parametrize(
    "op",
    [
        CipherOp("aes-128-cfb", "encrypt", bytes(16), bytes(16), None),
        CipherOp("aes-128-xts", "encrypt", bytes(32), bytes(16), None),
        CipherOp("chacha20", "encrypt", bytes(32), bytes(16), None),
        AeadOp("aes-128-gcm", "encrypt", bytes(16), None, None, None, 16),
    ],
    ids=["cfb", "xts", "chacha20", "an aead"],
)
def test_other_ops_get_the_slow_sessions_answer(session_of: Any, op: Any) -> None:
    engine = software.SoftwareEngine()
    got, expected = session_of(op), engine.session(op)
    assert type(got) is type(expected)


def test_compiled_sessions_give_what_the_slow_one_raises() -> None:
    def refuse(op: Any) -> Any:
        raise LookupError("the slow path's own error")

    sessions = _compiled_module().CipherSessions(refuse)
    with pytest.raises(LookupError, match="slow path"):
        sessions(CipherOp("aes-128-cfb", "encrypt", bytes(16), bytes(16), None))
    with pytest.raises(TypeError):
        _compiled_module().CipherSessions(42)


def test_the_passthrough_engine_binds_the_compiled_sessions_where_built() -> None:
    from cryptoffload.engines.passthrough import PassThroughEngine

    engine = PassThroughEngine()
    engine.probe()
    session = vars(engine)["session"]
    if software._CONTEXTS is None:
        assert session == engine._software.session
    else:
        assert isinstance(session, software._CONTEXTS.CipherSessions)
        assert session.slow == engine._software.session


@pytest.mark.parametrize(
    ("tag", "error"),
    [(16, InvalidTag), (-1, ValueError), ("x" * 16, TypeError), (bytearray(16), InvalidTag)],
    ids=["an int", "a negative int", "a str", "a bytearray"],
)
def test_a_tag_of_another_type_goes_through_bytes_as_in_both_twins(
    open_stream: Any, tag: Any, error: type[Exception]
) -> None:
    dec = open_stream(_op("decrypt", bytes(16), bytes(12)))
    dec.update(b"abc")
    with pytest.raises(error):
        dec.finalize(tag)


def test_a_deleted_member_is_missing_in_both_twins(open_stream: Any) -> None:
    stream = open_stream(_op("encrypt", bytes(16), bytes(12)))
    del stream.update
    with pytest.raises(AttributeError):
        stream.update  # noqa: B018


@pytest.mark.parametrize("length", [0, 4, 7, 129, 200])
def test_a_gcm_nonce_of_a_length_gcm_refuses_is_declined(open_stream: Any, length: int) -> None:
    with pytest.raises(Unavailable) as declined:
        open_stream(_op("encrypt", bytes(16), bytes(length)))
    assert declined.value.reason == "unsupported"


@pytest.mark.parametrize("mode", ["cbc", "ctr"])
@pytest.mark.parametrize("length", [0, 8, 15, 17, 32])
def test_a_cipher_session_of_an_iv_cipher_refuses_is_none(
    session_of: Any, mode: str, length: int
) -> None:
    software._KEYED.get(software._keyed_cipher, bytes(16), f"aes-128-{mode}")  # a key kept
    op = CipherOp(f"aes-128-{mode}", "encrypt", bytes(16), bytes(length), None)
    assert session_of(op) is None


def test_an_engine_with_a_run_of_its_own_keeps_its_python_session() -> None:
    class OwnRun(software.SoftwareEngine):
        def run(self, op: Any) -> Any:
            return super().run(op)

    own = OwnRun()
    assert software.cipher_sessions(own.session) == own.session
    plain = software.SoftwareEngine()
    plain.run = plain.run  # type: ignore[method-assign]
    assert software.cipher_sessions(plain.session) == plain.session
    op = CipherOp("aes-128-cbc", "encrypt", bytes(16), bytes(16), None)
    assert own.session(op) is None and plain.session(op) is None
