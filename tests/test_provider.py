"""The Provider: engine specs, priority, policy, fallback on declines and faults, strict mode."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest
from cryptography.exceptions import InvalidTag
from doubles import AbsentEngine, DecliningEngine, FaultingEngine, TakeAllEngine

import cryptoffload
from cryptoffload import OffloadRequired, Policy, Provider, UnknownEngine
from cryptoffload.aead import AESGCM
from cryptoffload.core import provider as provider_mod
from cryptoffload.core.ops import AeadOp, CipherOp, HashOp
from cryptoffload.engines.base import Capabilities
from cryptoffload.errors import Unavailable
from cryptoffload.hashes import SHA256, Hash

KEY, NONCE = bytes(range(16)), bytes(12)
ALL = Policy(min_size={"*": 0})


def gcm_op(data: bytes = b"x" * 64) -> AeadOp:
    return AeadOp("aes-128-gcm", "encrypt", KEY, NONCE, data, b"", 16)


def test_software_is_always_last_and_present():
    p = Provider(["software", TakeAllEngine()])
    assert [e.name for e in p.engines] == ["takeall", "software"]
    assert [e.name for e in Provider([]).engines] == ["software"]


def test_spec_string_builds_software_engine():
    assert Provider("software").engines[-1].name == "software"


def test_unknown_engine_spec_names_the_known_ones():
    with pytest.raises(UnknownEngine, match=r"unknown engine .quantum.*software"):
        Provider(["quantum:fast"])


def test_object_without_engine_members_is_refused():
    with pytest.raises(TypeError, match="name"):
        Provider([object()])


def test_same_engine_twice_is_refused():
    with pytest.raises(ValueError, match="listed twice"):
        Provider([TakeAllEngine(), TakeAllEngine()])


def test_unavailable_engine_is_kept_with_reason_and_never_routed():
    p = Provider([AbsentEngine()])
    assert p.unavailable == {"absent": "no /dev/absent on this machine"}
    assert [e.name for e in p.engines] == ["software"]
    AESGCM(KEY, provider=p).encrypt(NONCE, b"data", None)


def test_probe_that_raises_makes_engine_unavailable():
    class Broken(TakeAllEngine):
        def probe(self):
            raise OSError("ioctl failed")

    p = Provider([Broken("broken")])
    assert "probe failed: OSError: ioctl failed" in p.unavailable["broken"]


def test_first_engine_in_priority_order_takes_the_op():
    first, second = TakeAllEngine("first"), TakeAllEngine("second")
    p = Provider([first, second], policy=ALL)
    p.run(gcm_op())
    assert len(first.seen) == 1 and not second.seen
    snap = p.counters.snapshot()
    assert snap["first"]["aes-128-gcm"]["ops"] == 1
    assert snap["second"] == {}
    assert snap["software"] == {}


def test_decline_falls_through_to_next_engine_and_is_counted_with_reason():
    taker = TakeAllEngine("taker")
    p = Provider([DecliningEngine(reason="busy"), taker], policy=ALL)
    p.run(gcm_op())
    snap = p.counters.snapshot()
    assert snap["decliner"]["aes-128-gcm"]["declined"] == {"busy": 1}
    assert snap["taker"]["aes-128-gcm"]["ops"] == 1


@pytest.mark.parametrize(
    "exc", [OSError(5, "EIO"), RuntimeError("stalled"), ValueError("status"), MemoryError()]
)
def test_fault_falls_back_to_software_with_same_answer(exc):
    p = Provider([FaultingEngine(exc)], policy=ALL)
    expected = Provider([]).run(gcm_op())
    assert p.run(gcm_op()) == expected
    snap = p.counters.snapshot()
    assert snap["faulty"]["aes-128-gcm"]["faults"] == 1
    assert snap["software"]["aes-128-gcm"]["ops"] == 1


def test_invalid_tag_from_engine_is_the_answer_not_a_fault():
    class Rejecting(TakeAllEngine):
        def run(self, op):
            raise InvalidTag

    p = Provider([Rejecting("rejecting")], policy=ALL)
    op = AeadOp("aes-128-gcm", "decrypt", KEY, NONCE, b"x" + bytes(16), b"", 16)
    with pytest.raises(InvalidTag):
        p.run(op)
    snap = p.counters.snapshot()
    assert snap["rejecting"]["aes-128-gcm"]["ops"] == 1
    assert snap["software"] == {}


def test_every_op_is_counted_exactly_once():
    p = Provider([DecliningEngine(), FaultingEngine(), TakeAllEngine()], policy=ALL)
    for _ in range(10):
        p.run(gcm_op())
    snap = p.counters.snapshot()
    total = sum(algs.get("aes-128-gcm", {}).get("ops", 0) for algs in snap.values())
    assert total == 10
    assert snap["takeall"]["aes-128-gcm"]["ops"] == 10


def test_below_threshold_goes_to_software_counted_as_decline():
    taker = TakeAllEngine()
    p = Provider([taker], policy=Policy(min_size={"aes-128-gcm": 100}))
    p.run(gcm_op(b"x" * 99))
    p.run(gcm_op(b"x" * 100))
    snap = p.counters.snapshot()
    assert snap["takeall"]["aes-128-gcm"] == {
        "ops": 1,
        "bytes": 100,
        "declined": {"below-threshold": 1},
        "faults": 0,
    }
    assert snap["software"]["aes-128-gcm"]["ops"] == 1


def test_default_threshold_keeps_small_cbc_in_software_but_gcm_is_always_taken():
    taker = TakeAllEngine()
    p = Provider([taker])
    cbc = CipherOp("aes-128-cbc", "encrypt", KEY, bytes(16), bytes(128))
    p.run(cbc)
    p.run(gcm_op(b"x" * 16))
    snap = p.counters.snapshot()
    assert snap["takeall"]["aes-128-cbc"]["declined"] == {"below-threshold": 1}
    assert snap["takeall"]["aes-128-gcm"]["ops"] == 1


def test_engine_suggested_threshold_applies_unless_policy_overrides():
    class Picky(TakeAllEngine):
        def probe(self):
            return Capabilities(True, algorithms=frozenset({"sha256"}), min_size={"sha256": 512})

    op = HashOp("sha256", "digest", bytes(100))
    p = Provider([Picky("picky")])
    p.run(op)
    assert p.counters.snapshot()["picky"]["sha256"]["declined"] == {"below-threshold": 1}
    p = Provider([Picky("picky")], policy=Policy(min_size={"sha256": 64}))
    p.run(op)
    assert p.counters.snapshot()["picky"]["sha256"]["ops"] == 1


def test_max_size_declines_too_large():
    p = Provider([TakeAllEngine()], policy=Policy(min_size={"*": 0}, max_size={"sha256": 10}))
    p.run(HashOp("sha256", "digest", bytes(11)))
    assert p.counters.snapshot()["takeall"]["sha256"]["declined"] == {"too-large": 1}


def test_deny_list_keeps_algorithm_in_software():
    taker = TakeAllEngine()
    p = Provider([taker], policy=Policy(min_size={"*": 0}, deny=["aes-*-gcm"]))
    p.run(gcm_op())
    assert not taker.seen
    assert p.counters.snapshot()["takeall"]["aes-128-gcm"]["declined"] == {"denied": 1}


def test_require_raises_offload_required_naming_the_declines():
    p = Provider([DecliningEngine(reason="busy")], policy=Policy(require=["aes-128-gcm"]))
    with pytest.raises(OffloadRequired, match=r"aes-128-gcm.*decliner: busy") as info:
        p.run(gcm_op())
    assert info.value.declines == {"decliner": "busy"}
    assert p.counters.snapshot()["software"] == {}


def test_require_without_any_engine_raises_on_the_fast_path_too():
    p = Provider([], policy=Policy(require=["aes-128-gcm"]))
    with pytest.raises(OffloadRequired):
        AESGCM(KEY, provider=p).encrypt(NONCE, b"data", None)


def test_lane_is_software_only_when_no_engine_claims_it_and_offload_is_not_required():
    p = Provider([TakeAllEngine(algorithms={"sha256"})], policy=Policy(require=["sha512"]))
    assert not p.lane("sha256").software_only
    assert p.lane("sha384").software_only
    assert not p.lane("sha512").software_only
    assert p.lane("sha384") is p.lane("sha384")


def test_silent_fallback_logs_one_warning_naming_reasons(caplog):
    p = Provider([DecliningEngine(reason="misaligned")], policy=ALL)
    with caplog.at_level(logging.WARNING, logger="cryptoffload"):
        for _ in range(provider_mod.SILENT_FALLBACK_WINDOW * 3):
            p.run(gcm_op())
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "decliner" in warnings[0].getMessage()
    assert "misaligned" in warnings[0].getMessage()


def test_no_warning_while_engine_keeps_offloading(caplog):
    p = Provider([TakeAllEngine()], policy=ALL)
    with caplog.at_level(logging.WARNING, logger="cryptoffload"):
        for _ in range(provider_mod.SILENT_FALLBACK_WINDOW * 2):
            p.run(gcm_op())
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_warning_is_rearmed_after_engine_offloads_again(caplog):
    class Flaky(TakeAllEngine):
        failing = True

        def run(self, op):
            if self.failing:
                raise Unavailable("busy")
            return super().run(op)

    engine = Flaky("flaky")
    p = Provider([engine], policy=ALL)
    with caplog.at_level(logging.WARNING, logger="cryptoffload"):
        for _ in range(provider_mod.SILENT_FALLBACK_WINDOW):
            p.run(gcm_op())
        engine.failing = False
        p.run(gcm_op())
        engine.failing = True
        for _ in range(provider_mod.SILENT_FALLBACK_WINDOW):
            p.run(gcm_op())
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2


def test_using_is_context_local_across_threads():
    mine = Provider([])
    other_thread_saw = []
    with cryptoffload.using(mine):
        assert cryptoffload.current() is mine
        t = threading.Thread(target=lambda: other_thread_saw.append(cryptoffload.current()))
        t.start()
        t.join()
    assert other_thread_saw[0] is not mine
    assert cryptoffload.current() is not mine


def test_using_is_context_local_across_asyncio_tasks():
    a, b = Provider([]), Provider([])

    async def work(p):
        with cryptoffload.using(p):
            await asyncio.sleep(0)
            return cryptoffload.current()

    async def main():
        return await asyncio.gather(work(a), work(b))

    assert asyncio.run(main()) == [a, b]


def test_operations_in_using_block_are_counted_on_that_provider():
    p = Provider([])
    with cryptoffload.using(p):
        h = Hash(SHA256())
        h.update(b"abc")
        h.finalize()
    assert p.counters.snapshot()["software"]["sha256"]["ops"] == 1


def test_provider_keyword_wins_over_using():
    explicit, ambient = Provider([]), Provider([])
    with cryptoffload.using(ambient):
        AESGCM(KEY, provider=explicit).encrypt(NONCE, b"x", None)
    assert explicit.counters.snapshot()["software"]["aes-128-gcm"]["ops"] == 1
    assert ambient.counters.snapshot()["software"] == {}


def test_set_default_provider_replaces_and_resets():
    mine = Provider([])
    try:
        cryptoffload.set_default_provider(mine)
        assert cryptoffload.default_provider() is mine
        cryptoffload.set_default_provider(None)
        rebuilt = cryptoffload.default_provider()
        assert rebuilt is not mine and isinstance(rebuilt, Provider)
    finally:
        cryptoffload.set_default_provider(None)


def test_default_provider_reads_policy_file_from_environment(tmp_path, monkeypatch):
    path = tmp_path / "policy.toml"
    Policy(min_size={"aes-128-cbc": 1024}, deny=["sha1"]).save(path)
    monkeypatch.setenv("CRYPTOFFLOAD_POLICY", str(path))
    try:
        cryptoffload.set_default_provider(None)
        policy = cryptoffload.default_provider().policy
        assert policy.min_size == {"aes-128-cbc": 1024}
        assert policy.deny == ("sha1",)
    finally:
        cryptoffload.set_default_provider(None)


def test_set_default_provider_rejects_other_objects():
    with pytest.raises(TypeError):
        cryptoffload.set_default_provider("software")


def test_repr_of_op_never_shows_key_or_data():
    op = gcm_op(b"secret payload")
    text = repr(op)
    assert KEY.hex() not in text and "secret" not in text and repr(KEY) not in text


# -- providers and engines checked where they are given (issue 22.15) ---------------------------


def _constructors():
    from cryptoffload import aead, cmac, drbg, ec, fernet, gmac, hmac, poly1305, x25519
    from cryptoffload.ciphers import Cipher, algorithms, modes
    from cryptoffload.hashes import SHAKE128, XOFHash
    from cryptoffload.kdf import concatkdf, hkdf, kbkdf, pbkdf2, scrypt, x963kdf
    from cryptoffload.kdf.argon2 import Argon2id
    from cryptoffload.twofactor import hotp, totp

    k16, k32 = bytes(16), bytes(32)
    return {
        "AESGCM": lambda p: aead.AESGCM(k16, provider=p),
        "AESCCM": lambda p: aead.AESCCM(k16, provider=p),
        "ChaCha20Poly1305": lambda p: aead.ChaCha20Poly1305(k32, provider=p),
        "AESSIV": lambda p: aead.AESSIV(k32, provider=p),
        "Hash": lambda p: Hash(SHA256(), provider=p),
        "XOFHash": lambda p: XOFHash(SHAKE128(digest_size=16), provider=p),
        "HMAC": lambda p: hmac.HMAC(k16, SHA256(), provider=p),
        "CMAC": lambda p: cmac.CMAC(algorithms.AES(k16), provider=p),
        "GMAC": lambda p: gmac.GMAC(k16, bytes(12), provider=p),
        "Poly1305": lambda p: poly1305.Poly1305(k32, provider=p),
        "Cipher": lambda p: Cipher(algorithms.AES(k16), modes.CBC(k16), provider=p),
        "Fernet": lambda p: fernet.Fernet(fernet.Fernet.generate_key(), provider=p),
        "Drbg": lambda p: drbg.Drbg(provider=p),
        "HKDF": lambda p: hkdf.HKDF(SHA256(), 32, None, None, provider=p),
        "HKDFExpand": lambda p: hkdf.HKDFExpand(SHA256(), 32, None, provider=p),
        "PBKDF2HMAC": lambda p: pbkdf2.PBKDF2HMAC(SHA256(), 32, k16, 1, provider=p),
        "Scrypt": lambda p: scrypt.Scrypt(k16, 32, 2, 1, 1, provider=p),
        "Argon2id": lambda p: Argon2id(
            salt=k16, length=32, iterations=1, lanes=1, memory_cost=8, provider=p
        ),
        "ConcatKDFHash": lambda p: concatkdf.ConcatKDFHash(SHA256(), 32, None, provider=p),
        "X963KDF": lambda p: x963kdf.X963KDF(SHA256(), 32, None, provider=p),
        "KBKDFHMAC": lambda p: kbkdf.KBKDFHMAC(
            SHA256(),
            kbkdf.Mode.CounterMode,
            32,
            4,
            4,
            kbkdf.CounterLocation.BeforeFixed,
            b"l",
            b"c",
            None,
            provider=p,
        ),
        "HOTP": lambda p: hotp.HOTP(k16 + bytes(4), 6, SHA256(), provider=p),
        "TOTP": lambda p: totp.TOTP(k16 + bytes(4), 6, SHA256(), 30, provider=p),
        "EllipticCurvePrivateKey": lambda p: ec.generate_private_key(ec.SECP256R1(), provider=p),
        "X25519PrivateKey": lambda p: x25519.X25519PrivateKey.generate(provider=p),
    }


CONSTRUCTORS = _constructors()


@pytest.mark.parametrize("what", list(CONSTRUCTORS))
@pytest.mark.parametrize("bad", ["software", 42, Policy()])
def test_a_constructor_given_a_provider_that_is_not_one_raises_typeerror_at_once(what, bad):
    with pytest.raises(TypeError) as info:
        CONSTRUCTORS[what](bad)
    assert str(info.value) == (
        f"provider must be a cryptoffload Provider or None, got {type(bad).__name__}"
    )


@pytest.mark.parametrize("what", list(CONSTRUCTORS))
def test_a_constructor_takes_a_provider_or_none(what):
    CONSTRUCTORS[what](None)
    CONSTRUCTORS[what](Provider([]))


class _Engine:
    name = "odd"

    def __init__(self, caps):
        self._caps = caps

    def probe(self):
        return self._caps

    def run(self, op):
        raise Unavailable("never")


@pytest.mark.parametrize("caps", [42, None, {"available": True}, True])
def test_probe_returning_no_capabilities_raises_typeerror_naming_engine_and_return_type(caps):
    with pytest.raises(TypeError) as info:
        Provider([_Engine(caps)])
    message = str(info.value)
    assert "'odd'" in message and "probe() must return" in message and "Capabilities" in message
    assert f"got {type(caps).__name__}" in message


def test_probe_returning_capabilities_still_makes_an_engine():
    p = Provider([_Engine(Capabilities(available=False, reason="no device"))])
    assert p.unavailable == {"odd": "no device"}


class _NoProbe:
    name = "noprobe"

    def run(self, op):
        raise Unavailable("never")


class _NoRun:
    name = "norun"

    def probe(self):
        return Capabilities(available=True)


class _NoName:
    def probe(self):
        return Capabilities(available=True)

    def run(self, op):
        raise Unavailable("never")


@pytest.mark.parametrize(
    "engine,missing",
    [(_NoProbe(), "probe()"), (_NoRun(), "run(op)"), (_NoName(), "a str `name`")],
    ids=["no probe", "no run", "no name"],
)
def test_an_engine_without_probe_run_or_name_is_refused_naming_the_missing_member(engine, missing):
    with pytest.raises(TypeError, match=r"is missing ") as info:
        Provider([engine])
    assert f"is missing {missing}:" in str(info.value)
