"""``Cipher(AES(key), GCM(iv))`` streamed on the CAAM model (``open_aead_stream``): the same
outputs, tags and errors as `cryptography`, software finishing after a fault, and the counters."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher as RefCipher
from cryptography.hazmat.primitives.ciphers import algorithms as ref_algorithms
from cryptography.hazmat.primitives.ciphers import modes as ref_modes
from doubles import TakeAllEngine
from hypothesis import given, settings
from hypothesis import strategies as st

from cryptoffload import Policy, Provider, using
from cryptoffload.ciphers import Cipher, algorithms, modes
from cryptoffload.core.ops import AeadOp
from cryptoffload.core.validate import GCM_TAG_SIZES
from cryptoffload.engines.caam import from_spec
from cryptoffload.errors import Unavailable

ENGINE = "caam:model=t2080"
ALG = "aes-128-gcm"


def caam_provider(policy: Policy | None = None, engines: list[Any] | None = None) -> Provider:
    return Provider(engines or [ENGINE], policy=policy or Policy(min_size={"*": 0}))


@pytest.fixture(scope="module")
def provider() -> Provider:
    return caam_provider()


def cell(provider: Provider, engine: str, alg: str = ALG) -> dict:
    empty = {"ops": 0, "bytes": 0, "declined": {}, "faults": 0}
    return provider.counters.snapshot().get(engine, {}).get(alg, empty)


def pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)] or [b""]


def outcome(call: Callable[[], Any]) -> Any:
    """The result, or the exception's class and message (what `cryptography` raised)."""
    try:
        return call()
    except Exception as exc:
        return type(exc), str(exc)


def run_stream(ctx: Any, aad: list[bytes], data: list[bytes], tag: bytes | None) -> list[Any]:
    """Every call's outcome: AAD, updates, then finalize (or finalize_with_tag) and tag."""
    seen: list[Any] = [outcome(lambda a=a: ctx.authenticate_additional_data(a)) for a in aad]
    seen += [outcome(lambda d=d: ctx.update(d)) for d in data]
    if tag is None:
        seen.append(outcome(ctx.finalize))
        seen.append(outcome(lambda: ctx.tag))
    else:
        seen.append(outcome(lambda: ctx.finalize_with_tag(tag)))
    return seen


cases = st.fixed_dictionaries(
    {
        "key": st.sampled_from([16, 24, 32]).flatmap(lambda n: st.binary(min_size=n, max_size=n)),
        "iv": st.binary(min_size=12, max_size=12),
        "aad": st.binary(max_size=70),
        "msg": st.binary(max_size=100),
        "aad_cuts": st.lists(st.integers(0, 200), max_size=4),
        "msg_cuts": st.lists(st.integers(0, 200), max_size=6),
        "tag": st.sampled_from(sorted(GCM_TAG_SIZES)),
    }
)


@settings(max_examples=80, deadline=None)
@given(case=cases)
def test_random_splits_equal_cryptography_and_count_under_caam(
    provider: Provider, case: dict
) -> None:
    key, iv, aad, msg = case["key"], case["iv"], case["aad"], case["msg"]
    alg = f"aes-{len(key) * 8}-gcm"
    before = cell(provider, ENGINE, alg)
    aad_parts, msg_parts = pieces(aad, case["aad_cuts"]), pieces(msg, case["msg_cuts"])
    ref = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv)).encryptor()
    ours = Cipher(algorithms.AES(key), modes.GCM(iv), provider=provider).encryptor()
    expected = run_stream(ref, aad_parts, msg_parts, None)
    assert run_stream(ours, aad_parts, msg_parts, None) == expected
    ciphertext, tag = b"".join(expected[len(aad_parts) : -2]), ref.tag[: case["tag"]]
    ct_parts = pieces(ciphertext, case["msg_cuts"])
    ref_dec = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv, min_tag_length=4)).decryptor()
    dec = Cipher(algorithms.AES(key), modes.GCM(iv, min_tag_length=4), provider=provider)
    got = run_stream(dec.decryptor(), aad_parts, ct_parts, tag)
    assert got == run_stream(ref_dec, aad_parts, ct_parts, tag)
    assert b"".join(got[len(aad_parts) : -1]) == msg
    after = cell(provider, ENGINE, alg)
    assert after["ops"] - before["ops"] == 2  # one op per stream, at its end
    assert after["bytes"] - before["bytes"] == 2 * len(msg)  # data bytes, AAD not counted
    assert after["faults"] == before["faults"] and not after["declined"]
    assert cell(provider, "software", alg)["ops"] == 0


@settings(max_examples=30, deadline=None)
@given(case=cases, flip=st.integers(0, 127))
def test_a_tampered_tag_is_invalid_tag_after_the_same_plaintext(
    provider: Provider, case: dict, flip: int
) -> None:
    key, iv, aad, msg = case["key"], case["iv"], case["aad"], case["msg"]
    enc = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv)).encryptor()
    enc.authenticate_additional_data(aad)
    ciphertext = enc.update(msg) + enc.finalize()
    bad = bytearray(enc.tag[: case["tag"]])
    bad[flip // 8 % len(bad)] ^= 1 << flip % 8
    aad_parts, ct_parts = pieces(aad, case["aad_cuts"]), pieces(ciphertext, case["msg_cuts"])
    mode = {"min_tag_length": 4}
    ref = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv, **mode)).decryptor()
    ours = Cipher(algorithms.AES(key), modes.GCM(iv, **mode), provider=provider).decryptor()
    expected = run_stream(ref, aad_parts, ct_parts, bytes(bad))
    assert expected[-1][0] is InvalidTag
    assert run_stream(ours, aad_parts, ct_parts, bytes(bad)) == expected
    # What follows a failed tag is `cryptography`'s too (it keeps the context usable).
    assert outcome(lambda: ours.update(b"more")) == outcome(lambda: ref.update(b"more"))
    again = enc.tag[: case["tag"]]
    assert outcome(lambda: ours.finalize_with_tag(again)) == outcome(
        lambda: ref.finalize_with_tag(again)
    )


# -- faults: the engine's stream fails at call N; software finishes with the same answer ----------


class _BreakingStream:
    def __init__(self, stream: Any, owner: BreakingCaam) -> None:
        self._stream, self._owner = stream, owner

    def _call(self, name: str, *args: Any) -> Any:
        owner = self._owner
        owner.calls += 1
        if owner.calls == owner.fail_at:
            raise RuntimeError(f"injected fault at stream call {owner.calls} ({name})")
        return getattr(self._stream, name)(*args)

    def update_aad(self, data: bytes) -> None:
        self._call("update_aad", data)

    def update(self, data: bytes) -> bytes:
        return self._call("update", data)

    def finalize(self, tag: bytes | None = None) -> bytes:
        return self._call("finalize", tag)

    def close(self) -> None:
        self._stream.close()


class BreakingCaam:
    """The CAAM model engine whose GCM streams fault at their ``fail_at``-th call."""

    def __init__(self, fail_at: int) -> None:
        self._engine = from_spec("model=t2080")
        self.name = self._engine.name
        self.fail_at = fail_at
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def open_aead_stream(self, op: Any) -> _BreakingStream:
        self.calls = 0
        return _BreakingStream(self._engine.open_aead_stream(op), self)


@pytest.mark.parametrize("encrypt", [True, False], ids=["encrypt", "decrypt"])
@pytest.mark.parametrize("fail_at", range(1, 9))
def test_a_fault_at_any_call_leaves_software_to_finish_the_same(
    fail_at: int, encrypt: bool
) -> None:
    engine = BreakingCaam(fail_at)
    provider = caam_provider(engines=[engine])
    key, iv = bytes(range(16)), bytes(range(12))
    aad = [b"a" * 20, b"b" * 5]
    data = [b"x" * 7, b"y" * 33, b"z" * 16, b"w" * 3]  # 6 stream calls, and finalize
    enc = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv)).encryptor()
    for a in aad:
        enc.authenticate_additional_data(a)
    ciphertext = enc.update(b"".join(data)) + enc.finalize()
    if encrypt:
        ref = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv)).encryptor()
        parts, tag = data, None
        ours = Cipher(algorithms.AES(key), modes.GCM(iv), provider=provider).encryptor()
    else:
        ref = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv)).decryptor()
        ours = Cipher(algorithms.AES(key), modes.GCM(iv), provider=provider).decryptor()
        parts, tag = pieces(ciphertext, [7, 40, 56]), enc.tag
    assert run_stream(ours, aad, parts, tag) == run_stream(ref, aad, parts, tag)
    faulted = fail_at <= 7
    assert cell(provider, engine.name)["faults"] == int(faulted)
    assert cell(provider, engine.name)["ops"] == int(not faulted)
    assert cell(provider, "software")["ops"] == int(faulted)
    assert cell(provider, "software")["bytes"] == (len(ciphertext) if faulted else 0)


def test_past_the_policys_max_size_software_takes_over() -> None:
    provider = caam_provider(Policy(min_size={"*": 0}, max_size={ALG: 64}))
    key, iv = bytes(16), bytes(12)
    ref = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv)).encryptor()
    ours = Cipher(algorithms.AES(key), modes.GCM(iv), provider=provider).encryptor()
    data = [b"q" * 40] * 4
    assert run_stream(ours, [b"aad"], data, None) == run_stream(ref, [b"aad"], data, None)
    assert cell(provider, ENGINE)["declined"] == {"too-large": 1}
    assert cell(provider, "software")["ops"] == 1


def test_a_policy_that_requires_offload_is_met_by_the_stream() -> None:
    provider = caam_provider(Policy(min_size={"*": 0}, require=[ALG]))
    ctx = Cipher(algorithms.AES(bytes(16)), modes.GCM(bytes(12)), provider=provider).encryptor()
    ctx.update(b"data")
    ctx.finalize()
    assert cell(provider, ENGINE)["ops"] == 1


# -- the rules of `cryptography`'s GCM contexts ----------------------------------------------------

MISUSE: dict[str, Callable[[Any], Any]] = {
    "tag before finalize": lambda c: c.tag,
    "aad after update": lambda c: (c.update(b"x"), c.authenticate_additional_data(b"a")),
    "update after finalize": lambda c: (c.finalize(), c.update(b"x")),
    "aad after finalize": lambda c: (c.finalize(), c.authenticate_additional_data(b"a")),
    "finalize twice": lambda c: (c.finalize(), c.finalize()),
    "update_into small buffer": lambda c: c.update_into(b"abc", bytearray(2)),
    "update_into": lambda c: (c.update_into(b"abcdefghijklmnopq", bytearray(17)), c.finalize()),
    "reset_nonce": lambda c: c.reset_nonce(bytes(12)),
    "update a str": lambda c: c.update("text"),
}
DECRYPT_MISUSE: dict[str, Callable[[Any], Any]] = {
    "finalize without a tag": lambda c: c.finalize(),
    "finalize without a tag, then go on": lambda c: (outcome(c.finalize), c.update(b"xy")),
    "tag under min_tag_length": lambda c: c.finalize_with_tag(bytes(12)),
    "tag over 16 bytes": lambda c: c.finalize_with_tag(bytes(17)),
    "finalize_with_tag twice": lambda c: (
        outcome(lambda: c.finalize_with_tag(bytes(16))),
        c.finalize_with_tag(bytes(16)),
    ),
}


def _kinds(result: Any) -> Any:
    """Exception classes only: our own checks word some messages differently."""
    return result[0] if isinstance(result, tuple) and isinstance(result[0], type) else result


@pytest.mark.parametrize("name", sorted(MISUSE))
def test_misuse_raises_as_cryptography_does_encrypting(provider: Provider, name: str) -> None:
    key, iv = bytes(16), bytes(12)
    ref = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv)).encryptor()
    ours = Cipher(algorithms.AES(key), modes.GCM(iv), provider=provider).encryptor()
    assert type(ours).__name__ == "EngineGcmEncryptor"
    expected, got = outcome(lambda: MISUSE[name](ref)), outcome(lambda: MISUSE[name](ours))
    assert _kinds(got) == _kinds(expected)


@pytest.mark.parametrize("name", [*sorted(DECRYPT_MISUSE), "update after finalize"])
def test_misuse_raises_as_cryptography_does_decrypting(provider: Provider, name: str) -> None:
    key, iv = bytes(16), bytes(12)
    call = DECRYPT_MISUSE.get(name) or (lambda c: (outcome(c.finalize), c.update(b"x")))
    ref = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv, min_tag_length=13)).decryptor()
    ours = Cipher(algorithms.AES(key), modes.GCM(iv, min_tag_length=13), provider=provider)
    expected, got = outcome(lambda: call(ref)), outcome(lambda: call(ours.decryptor()))
    assert _kinds(got) == _kinds(expected)
    assert got == expected or name == "tag over 16 bytes"  # ours names the SP 800-38D sizes


def test_the_tag_given_to_the_mode_is_the_one_checked(provider: Provider) -> None:
    key, iv = bytes(16), bytes(12)
    enc = Cipher(algorithms.AES(key), modes.GCM(iv), provider=provider).encryptor()
    ciphertext = enc.update(b"message") + enc.finalize()
    dec = Cipher(algorithms.AES(key), modes.GCM(iv, enc.tag), provider=provider).decryptor()
    assert dec.update(ciphertext) == b"message"
    assert outcome(lambda: dec.finalize_with_tag(enc.tag)) == (
        ValueError,
        "Authentication tag must be provided only once.",
    )
    assert dec.finalize() == b""


@pytest.mark.parametrize("limit", ["_MAX_ENCRYPTED_BYTES", "_MAX_AAD_BYTES"])
def test_the_modes_byte_limits_hold(provider: Provider, limit: str) -> None:
    key, iv = bytes(16), bytes(12)
    results = []
    for make in (
        lambda m: RefCipher(ref_algorithms.AES(key), m).encryptor(),
        lambda m: Cipher(algorithms.AES(key), m, provider=provider).encryptor(),
    ):
        mode = ref_modes.GCM(iv)
        setattr(mode, limit, 40)  # the limits are read from the mode, as `cryptography` does
        ctx = make(mode)
        feed = ctx.authenticate_additional_data if limit == "_MAX_AAD_BYTES" else ctx.update
        results.append([outcome(lambda f=feed, n=n: f(bytes(n))) for n in (30, 10, 1)])
    assert results[0] == results[1]
    assert results[0][-1] == (ValueError, results[0][-1][1]) and "Exceeded" in results[0][-1][1]


# -- engines that cannot stream GCM keep declining it ---------------------------------------------


def test_an_engine_without_open_aead_stream_declines_streaming_before_the_caam_takes_it() -> None:
    takeall = TakeAllEngine()
    provider = caam_provider(engines=[takeall, ENGINE])
    ctx = Cipher(algorithms.AES(bytes(16)), modes.GCM(bytes(12)), provider=provider).encryptor()
    ctx.update(b"x" * 20)
    ctx.finalize()
    assert cell(provider, "takeall")["declined"] == {"streaming": 1}
    assert cell(provider, ENGINE)["ops"] == 1
    assert cell(provider, ENGINE)["bytes"] == 20


def test_other_nonce_lengths_go_to_software_declined_unsupported(provider: Provider) -> None:
    key, iv = bytes(16), bytes(16)
    ref = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv)).encryptor()
    ours = Cipher(algorithms.AES(key), modes.GCM(iv), provider=provider).encryptor()
    declined = cell(provider, ENGINE)["declined"].get("unsupported", 0)
    assert run_stream(ours, [b"a"], [b"b" * 20], None) == run_stream(ref, [b"a"], [b"b" * 20], None)
    assert cell(provider, ENGINE)["declined"]["unsupported"] == declined + 1


class _RefusingStream(_BreakingStream):
    """Refuses every tag: a wrong answer that software must overrule."""

    def finalize(self, tag: bytes | None = None) -> bytes:
        if tag is not None:
            raise InvalidTag
        return self._stream.finalize(tag)


class RefusingCaam(BreakingCaam):
    def open_aead_stream(self, op: Any) -> _BreakingStream:
        return _RefusingStream(self._engine.open_aead_stream(op), self)


def test_a_tag_the_engine_refuses_but_software_accepts_is_softwares_answer() -> None:
    engine = RefusingCaam(fail_at=0)
    provider = caam_provider(engines=[engine])
    key, iv = bytes(16), bytes(12)
    enc = Cipher(algorithms.AES(key), modes.GCM(iv), provider=provider).encryptor()
    ciphertext = enc.update(b"message") + enc.finalize()
    dec = Cipher(algorithms.AES(key), modes.GCM(iv), provider=provider).decryptor()
    assert dec.update(ciphertext) == b"message"
    assert dec.finalize_with_tag(enc.tag) == b""
    assert cell(provider, engine.name)["faults"] == 1
    assert cell(provider, engine.name)["ops"] == 1  # the encryption
    assert cell(provider, "software")["ops"] == 1


def test_streams_pass_the_cross_check_sampler() -> None:
    provider = Provider([ENGINE], policy=Policy(min_size={"*": 0}), cross_check=1.0)
    key, iv = bytes(16), bytes(12)
    ref = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv)).encryptor()
    ours = Cipher(algorithms.AES(key), modes.GCM(iv), provider=provider).encryptor()
    assert run_stream(ours, [b"a"], [b"b" * 30], None) == run_stream(ref, [b"a"], [b"b" * 30], None)
    assert cell(provider, ENGINE)["ops"] == 1


@pytest.mark.parametrize("spec", ["passthrough", ENGINE])
def test_an_engine_stream_refuses_what_cryptography_refuses_in_its_words(spec):
    p = Provider([spec], policy=Policy(min_size={"*": 0}))
    ref = RefCipher(ref_algorithms.AES(bytes(16)), ref_modes.GCM(bytes(12))).encryptor()
    try:
        ours = Cipher(algorithms.AES(bytes(16)), modes.GCM(bytes(12)), provider=p).encryptor()
        for bad in ("hello", object, 5):
            with pytest.raises(TypeError) as theirs:
                ref.update(bad)
            with pytest.raises(TypeError) as mine:
                ours.update(bad)
            assert str(mine.value) == str(theirs.value)
        tagged = modes.GCM(bytes(12), b"0" * 16)
        with pytest.raises(ValueError, match="tag must be None when encrypting"):
            Cipher(algorithms.AES(bytes(16)), tagged, provider=p).encryptor()
    finally:
        p.close()


def test_the_compiled_and_pure_retain_limits_agree() -> None:
    from cryptoffload import _stream
    from cryptoffload.core import directpath

    assert _stream.RETAIN_LIMIT == directpath.RETAIN_LIMIT
    if directpath.COMPILED:
        assert directpath.compiled_module().RETAIN_LIMIT == directpath.RETAIN_LIMIT


class _OddOutputStream(_BreakingStream):
    """Answers each update with ``shape(output)``: a bytearray, or output cut short."""

    def __init__(self, stream: Any, owner: Any, shape: Callable[[bytes], Any]) -> None:
        super().__init__(stream, owner)
        self._shape = shape

    def update(self, data: bytes) -> Any:
        return self._shape(self._stream.update(data))


class OddOutputCaam(BreakingCaam):
    def __init__(self, shape: Callable[[bytes], Any]) -> None:
        super().__init__(fail_at=0)
        self._shape = shape

    def open_aead_stream(self, op: Any) -> _BreakingStream:
        return _OddOutputStream(self._engine.open_aead_stream(op), self, self._shape)


@pytest.mark.parametrize(
    ("shape", "faults"),
    [(bytearray, 0), (memoryview, 0), (lambda out: out[:-1], 1), (lambda out: out + b"!", 1)],
    ids=["bytearray", "memoryview", "short", "long"],
)
@pytest.mark.parametrize("encrypt", [True, False], ids=["encrypt", "decrypt"])
def test_an_engine_output_of_another_type_is_taken_and_one_of_another_length_is_a_fault(
    shape: Callable[[bytes], Any], faults: int, encrypt: bool
) -> None:
    engine = OddOutputCaam(shape)
    provider = caam_provider(engines=[engine])
    key, iv = bytes(range(16)), bytes(range(12))
    enc = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv)).encryptor()
    sealed = enc.update(b"m" * 40) + enc.finalize()
    make = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv))
    ours_cipher = Cipher(algorithms.AES(key), modes.GCM(iv), provider=provider)
    parts, tag = ([b"m" * 17, b"m" * 23], None) if encrypt else ([sealed[:9], sealed[9:]], enc.tag)
    ref = make.encryptor() if encrypt else make.decryptor()
    ours = ours_cipher.encryptor() if encrypt else ours_cipher.decryptor()
    seen = run_stream(ours, [b"aad"], parts, tag)
    assert seen == run_stream(ref, [b"aad"], parts, tag)
    assert not any(isinstance(out, (bytearray, memoryview)) for out in seen)
    assert cell(provider, engine.name)["faults"] == faults
    assert cell(provider, engine.name)["ops"] == 1 - faults
    assert cell(provider, "software")["ops"] == faults


class _ShortTagStream(_BreakingStream):
    def finalize(self, tag: bytes | None = None) -> bytes:
        out = self._stream.finalize(tag)
        return out[:12] if tag is None else out


class ShortTagCaam(BreakingCaam):
    def open_aead_stream(self, op: Any) -> _BreakingStream:
        return _ShortTagStream(self._engine.open_aead_stream(op), self)


def test_an_engine_tag_that_is_not_16_bytes_is_a_fault_and_software_gives_the_tag() -> None:
    engine = ShortTagCaam(fail_at=0)
    provider = caam_provider(engines=[engine])
    key, iv = bytes(16), bytes(12)
    ref = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv)).encryptor()
    ours = Cipher(algorithms.AES(key), modes.GCM(iv), provider=provider).encryptor()
    assert run_stream(ours, [b"a"], [b"b" * 30], None) == run_stream(ref, [b"a"], [b"b" * 30], None)
    assert cell(provider, engine.name)["faults"] == 1
    assert cell(provider, "software")["ops"] == 1


@pytest.mark.parametrize("second", [False, True], ids=["first-engine", "second-engine"])
def test_a_stream_is_counted_once_for_its_engine_on_or_off_the_engine_route(second: bool) -> None:
    """First on the route, the stream's engine is the lane's engine route (counted in its
    record by the compiled path); second, behind an engine that cannot stream, it is not."""
    engines: list[Any] = [TakeAllEngine(), ENGINE] if second else [ENGINE]
    provider = caam_provider(engines=engines)
    key, iv = bytes(16), bytes(12)
    for n in range(3):
        enc = Cipher(algorithms.AES(key), modes.GCM(iv), provider=provider).encryptor()
        assert (enc._route is None) == second  # the engine route's record, or stream_done
        enc.update(b"x" * (10 + n))
        enc.finalize()
        dec = Cipher(algorithms.AES(key), modes.GCM(iv), provider=provider).decryptor()
        assert dec.update(b"\0" * 4) is not None
        with pytest.raises(InvalidTag):
            dec.finalize_with_tag(b"\0" * 16)
    counted = cell(provider, ENGINE)
    assert counted["ops"] == 6 and counted["bytes"] == 10 + 11 + 12 + 3 * 4
    assert cell(provider, "software")["ops"] == 0


@pytest.mark.parametrize("tag_length", [4, 8, 12, 16])
def test_the_passthrough_engine_checks_every_tag_length_the_mode_allows(tag_length: int) -> None:
    provider = Provider(["passthrough"], policy=Policy(min_size={"*": 0}))
    try:
        key, iv = bytes(range(16)), bytes(range(12))
        enc = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv)).encryptor()
        sealed = enc.update(b"p" * 21) + enc.finalize()
        tag = enc.tag[:tag_length]
        mode = modes.GCM(iv, min_tag_length=tag_length)
        dec = Cipher(algorithms.AES(key), mode, provider=provider).decryptor()
        assert dec.update(sealed) == b"p" * 21
        assert dec.finalize_with_tag(tag) == b""
        bad = Cipher(algorithms.AES(key), mode, provider=provider).decryptor()
        bad.update(sealed)
        with pytest.raises(InvalidTag):
            bad.finalize_with_tag(bytes([tag[0] ^ 1]) + tag[1:])
        counted = provider.counters.snapshot()
        assert counted["passthrough"][ALG]["ops"] == 2
        assert counted["passthrough"][ALG]["faults"] == 0
    finally:
        provider.close()


class OpenFailingCaam(BreakingCaam):
    """The CAAM model engine whose ``open_aead_stream`` raises ``failure`` (once set)."""

    def __init__(self) -> None:
        super().__init__(fail_at=0)
        self.failure: BaseException | None = None
        self.opened = 0
        self.asked: list[Any] = []  # the ops open_aead_stream was asked with

    def open_aead_stream(self, op: Any) -> Any:
        self.opened += 1
        self.asked.append(op)
        if self.failure is not None:
            raise self.failure
        return self._engine.open_aead_stream(op)


@pytest.mark.parametrize(
    ("failure", "fault"),
    [(RuntimeError("injected"), 1), (Unavailable("busy", ALG), 0)],
    ids=["fault", "decline"],
)
def test_an_engine_that_fails_to_open_a_stream_is_asked_once_and_software_answers(
    failure: BaseException, fault: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = OpenFailingCaam()
    provider = caam_provider(engines=[engine])
    key, iv = bytes(range(16)), bytes(range(12))
    Cipher(algorithms.AES(key), modes.GCM(iv))  # CipherCore constructs these classes from now on
    with using(provider):
        cipher = Cipher(algorithms.AES(key), modes.GCM(iv))
        cipher.encryptor().finalize()  # the first context notes the lane for CipherCore
        engine.failure, engine.opened = failure, 0
        slow: list[Any] = []
        monkeypatch.setattr(type(cipher), "_context", lambda *a: slow.append(a))
        ours = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor()
    assert engine.opened == 1 and slow == []  # asked once, by CipherCore
    ref = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv)).encryptor()
    assert run_stream(ours, [b"a"], [b"b" * 30], None) == run_stream(ref, [b"a"], [b"b" * 30], None)
    assert cell(provider, engine.name)["faults"] == fault
    assert cell(provider, engine.name)["declined"] == ({} if fault else {"busy": 1})
    assert cell(provider, engine.name)["ops"] == 1  # the first context
    assert cell(provider, "software")["ops"] == 1


@pytest.mark.parametrize(
    ("encrypt", "mode_tag"),
    [(True, None), (False, None), (False, "given")],
    ids=["encrypt", "decrypt", "decrypt-tag-in-mode"],
)
def test_an_engine_gcm_context_made_per_message_is_the_one_its_init_makes(
    encrypt: bool, mode_tag: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cryptoffload.ciphers import _gcm
    from cryptoffload.core.directpath import PureEngineGcmCore

    engine = OpenFailingCaam()
    provider = caam_provider(engines=[engine])
    key, iv = bytes(range(16)), bytes(range(12))
    mode = modes.GCM(iv, b"t" * 16) if mode_tag else modes.GCM(iv, min_tag_length=8)
    Cipher(algorithms.AES(key), mode)  # CipherCore constructs these classes from now on
    with using(provider):
        cipher = Cipher(algorithms.AES(key), mode)
        make = cipher.encryptor if encrypt else cipher.decryptor
        make()  # the first context notes the lane for CipherCore
        opened: list[Any] = []
        real_context = type(cipher)._context
        monkeypatch.setattr(
            type(cipher), "_context", lambda *a: opened.append(a) or real_context(*a)
        )
        ours = make()
    assert opened == []  # CipherCore made it, not the slow path
    lane = provider.lane(ALG)
    cls = _gcm.EngineGcmEncryptor if encrypt else _gcm.EngineGcmDecryptor
    route = lane.engine_route
    reference = cls(cipher, lane, route.name, ours._stream, route.high)
    for field in PureEngineGcmCore.__slots__:
        assert getattr(ours, field) == getattr(reference, field), field
    assert type(ours) is cls and ours._route is route and ours._cipher is cipher
    # the op the stream was opened with (its fields written without AeadOp's __init__)
    asked, kind = engine.asked[-1], "encrypt" if encrypt else "decrypt"
    expected = AeadOp(ALG, kind, key, iv, b"", b"", 16)
    assert type(asked) is AeadOp
    assert (asked.alg, asked.kind, asked.fields()) == (ALG, kind, expected.fields())
    data = b"d" * 40
    if encrypt:
        ref = RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv)).encryptor()
        assert run_stream(ours, [b"x"], [data], None) == run_stream(ref, [b"x"], [data], None)
    else:
        assert ours.update(data) == (
            RefCipher(ref_algorithms.AES(key), ref_modes.GCM(iv)).decryptor().update(data)
        )
