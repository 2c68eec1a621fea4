"""hashes.XOFHash and poly1305.Poly1305: `cryptography`'s answers and errors, through the provider.

An XOFHash is one software op of the bytes it absorbed, counted at its first squeeze, each engine
that claims SHAKE counted as declining it for ``streaming`` (no engine squeezes across calls).
A Poly1305 context, ``generate_tag`` and ``verify_tag`` are one MAC op (``poly1305``) each,
offered to the engines that claim it; only software does here.
"""

from __future__ import annotations

import binascii
import random
import sys
from collections.abc import Callable
from typing import Any

import pytest
from counting import ChaosTally, check_ops
from cryptography.exceptions import AlreadyFinalized, InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes as c_hashes
from cryptography.hazmat.primitives import poly1305 as c_poly1305
from doubles import TakeAllEngine
from vectors.loaders import load_nist

from cryptoffload import Policy, Provider, _stream, hashes, poly1305, using
from cryptoffload.core.names import all_algorithms
from cryptoffload.core.ops import MacOp
from cryptoffload.engines.software import SoftwareEngine
from cryptoffload.errors import OffloadRequired

TALLY = ChaosTally()
#: A key nobody would write by accident: any 6-byte run of it in text is a leak.
PLANTED = bytes.fromhex("c0ffee5eed5ca1ab1ede7ec7ab1e0dd5f00dfacefeedbeefbaadcafe0ddba115")


def _h(value: str) -> bytes:
    return binascii.unhexlify(value.strip())


def _takeall(**policy: Any) -> tuple[Provider, TakeAllEngine]:
    engine = TakeAllEngine()
    return Provider([engine], policy=Policy(min_size={"*": 0}, **policy)), engine


def _cell(provider: Provider, engine: str, alg: str) -> dict[str, Any]:
    return provider.counters.snapshot().get(engine, {}).get(alg, {})


def _error(call: Callable[[], Any]) -> type[BaseException] | None:
    try:
        call()
    except Exception as exc:  # the class is what the test compares
        return type(exc)
    return None


# -- XOFHash ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bits", [128, 256])
def test_xofhash_squeezed_in_pieces_matches_the_shake_variable_output_vectors(bits, provider):
    records = load_nist(f"hashes/SHAKE/SHAKE{bits}VariableOut.rsp")[::40]
    shake = hashes.SHAKE128 if bits == 128 else hashes.SHAKE256
    rnd = random.Random(bits)
    for r in records:
        size = int(r["outputlen"]) // 8
        xof = hashes.XOFHash(shake(digest_size=size), provider=provider)
        msg = _h(r["msg"])
        xof.update(msg[:5])
        xof.update(msg[5:])
        out = b""
        while len(out) < size:
            out += xof.squeeze(min(rnd.randint(1, 64), size - len(out)))
        assert out == _h(r["output"])
    counted = {f"shake{bits}": len(records)}
    check_ops(provider, counted, TALLY, streamed=counted)


@pytest.mark.parametrize("shake", [hashes.SHAKE128, hashes.SHAKE256], ids=["128", "256"])
def test_xofhash_equals_cryptographys_for_any_split_copy_and_stride(shake):
    message = bytes(range(256)) * 3
    for cut in (0, 1, 135, 136, 137, 500, len(message)):
        ours = hashes.XOFHash(shake(digest_size=1000), provider=Provider([]))
        theirs = c_hashes.XOFHash(shake(digest_size=1000))
        for ctx in (ours, theirs):
            ctx.update(message[:cut])
            ctx.update(bytearray(message[cut:]))
        assert ours.copy().squeeze(1000) == theirs.copy().squeeze(1000)
        for stride in (1, 167, 168, 169, 0, 300):
            assert ours.squeeze(stride) == theirs.squeeze(stride)
        twin, their_twin = ours.copy(), theirs.copy()  # a copy after squeezing goes on from there
        assert twin.squeeze(100) == their_twin.squeeze(100) == ours.squeeze(100)


def test_xofhash_is_one_software_op_of_the_absorbed_bytes_counted_at_the_first_squeeze():
    provider, engine = _takeall()
    xof = hashes.XOFHash(hashes.SHAKE128(digest_size=64), provider=provider)
    xof.update(b"abc")
    xof.update(memoryview(b"defg"))
    assert _cell(provider, "software", "shake128") == {}
    xof.squeeze(10)
    xof.squeeze(20)
    assert _cell(provider, "software", "shake128") == {
        "ops": 1,
        "bytes": 7,
        "declined": {},
        "faults": 0,
    }
    assert _cell(provider, "takeall", "shake128")["declined"] == {"streaming": 1}
    assert _cell(provider, "takeall", "shake128")["ops"] == 0
    assert engine.seen == []


def test_xofhash_copies_made_before_the_first_squeeze_are_ops_of_their_own():
    provider = Provider([])
    xof = hashes.XOFHash(hashes.SHAKE256(digest_size=64), provider=provider)
    xof.update(b"message")
    early = xof.copy()
    xof.squeeze(8)
    late = xof.copy()
    late.squeeze(8)
    early.squeeze(8)
    assert _cell(provider, "software", "shake256")["ops"] == 2
    assert _cell(provider, "software", "shake256")["bytes"] == 14


def test_xofhash_is_refused_where_the_policy_requires_offload():
    provider, engine = _takeall(require=["shake256"])
    with pytest.raises(OffloadRequired) as info:
        hashes.XOFHash(hashes.SHAKE256(digest_size=32), provider=provider)
    assert info.value.declines == {"takeall": "streaming"}
    assert _cell(provider, "software", "shake256") == {}
    assert engine.seen == []
    hashes.XOFHash(hashes.SHAKE128(digest_size=32), provider=provider).squeeze(32)  # not required


def test_xofhash_keeps_its_algorithm_and_is_in_hashes_all():
    algorithm = hashes.SHAKE128(digest_size=sys.maxsize)
    assert hashes.XOFHash(algorithm, provider=Provider([])).algorithm is algorithm
    assert "XOFHash" in hashes.__all__
    assert repr(hashes.XOFHash(algorithm, provider=Provider([]))) == "<XOFHash shake128>"


class _OtherXof(c_hashes.HashAlgorithm, c_hashes.ExtendableOutputFunction):
    name = "shake999"
    digest_size = 32
    block_size = None


def _squeezed(module: Any) -> Any:
    ctx = module.XOFHash(module.SHAKE128(digest_size=256))
    ctx.update(b"foo")
    ctx.squeeze(5)
    return ctx


XOF_MISUSES: dict[str, Callable[[Any], Any]] = {
    "class-not-instance": lambda m: m.XOFHash(m.SHAKE128),
    "fixed-size-hash": lambda m: m.XOFHash(m.SHA256()),
    "a-string": lambda m: m.XOFHash("shake128"),
    "unoffered-xof": lambda m: m.XOFHash(_OtherXof()),
    "update-text": lambda m: m.XOFHash(m.SHAKE128(digest_size=8)).update("\u00fc"),
    "update-after-squeeze": lambda m: _squeezed(m).update(b"bar"),
    "squeeze-past-digest-size": lambda m: m.XOFHash(m.SHAKE256(digest_size=8)).squeeze(9),
    "squeeze-past-the-rest": lambda m: _squeezed(m).squeeze(252),
    "squeeze-negative": lambda m: m.XOFHash(m.SHAKE256(digest_size=8)).squeeze(-1),
    "squeeze-text": lambda m: m.XOFHash(m.SHAKE256(digest_size=8)).squeeze("1"),
}


@pytest.mark.parametrize("misuse", list(XOF_MISUSES))
def test_xofhash_misuse_raises_the_error_class_cryptography_raises(misuse):
    expected = _error(lambda: XOF_MISUSES[misuse](c_hashes))
    assert expected is not None
    with using(Provider([])):
        assert _error(lambda: XOF_MISUSES[misuse](hashes)) is expected


def test_xofhash_error_classes_are_cryptographys_own():
    with using(Provider([])):
        assert _error(lambda: XOF_MISUSES["class-not-instance"](hashes)) is TypeError
        assert _error(lambda: XOF_MISUSES["unoffered-xof"](hashes)) is UnsupportedAlgorithm
        assert _error(lambda: XOF_MISUSES["update-after-squeeze"](hashes)) is AlreadyFinalized
        assert _error(lambda: XOF_MISUSES["squeeze-past-digest-size"](hashes)) is ValueError
        ctx = hashes.XOFHash(hashes.SHAKE128(digest_size=4))
        with pytest.raises(ValueError):
            ctx.squeeze(5)
        assert len(ctx.squeeze(4)) == 4  # a refused squeeze gives nothing and takes nothing


def test_a_shake_hash_still_finalizes_as_before():
    h = hashes.Hash(hashes.SHAKE256(digest_size=40), provider=Provider([]))
    h.update(b"abc")
    assert h.finalize() == c_hashes.Hash.hash(c_hashes.SHAKE256(digest_size=40), b"abc")


# -- Poly1305 --------------------------------------------------------------------------------


def test_poly1305_matches_the_rfc_vectors_streamed_in_one_call_and_verified(provider):
    records = load_nist("poly1305/rfc7539.txt")
    assert len(records) == 11
    for r in records:
        key, msg, tag = _h(r["key"]), _h(r["msg"]), _h(r["tag"])
        mac = poly1305.Poly1305(key, provider=provider)
        for start in range(0, len(msg), 17):
            mac.update(msg[start : start + 17])
        assert mac.finalize() == tag
        assert poly1305.Poly1305.generate_tag(key, msg, provider=provider) == tag
        poly1305.Poly1305.verify_tag(key, msg, tag, provider=provider)
    check_ops(provider, {"poly1305": 3 * len(records)}, TALLY)


def test_poly1305_equals_cryptographys_for_buffers_and_random_keys():
    rnd = random.Random(1305)
    for size in (0, 1, 15, 16, 17, 64, 1000):
        key, msg = rnd.randbytes(32), rnd.randbytes(size)
        expected = c_poly1305.Poly1305.generate_tag(key, msg)
        for provider in (Provider([]), _takeall()[0]):
            tag = poly1305.Poly1305.generate_tag(bytearray(key), memoryview(msg), provider=provider)
            assert tag == expected
            mac = poly1305.Poly1305(memoryview(key), provider=provider)
            mac.update(bytearray(msg))
            mac.verify(expected)


def test_poly1305_goes_to_a_claiming_engine_as_one_mac_op_of_the_gathered_message():
    provider, engine = _takeall()
    key = bytes(range(32))
    mac = poly1305.Poly1305(key, provider=provider)
    for part in (b"one ", b"message ", b"in three"):
        mac.update(part)
    tag = mac.finalize()
    assert tag == c_poly1305.Poly1305.generate_tag(key, b"one message in three")
    (op,) = engine.seen
    assert isinstance(op, MacOp)
    assert (op.family, op.kind, op.alg) == ("mac", "mac", "poly1305")
    assert op.key == key and bytes(op.data) == b"one message in three"
    assert op.iv is None and op.tag_length is None
    assert _cell(provider, "takeall", "poly1305")["ops"] == 1
    assert _cell(provider, "takeall", "poly1305")["bytes"] == 20
    assert _cell(provider, "software", "poly1305") == {}


def test_poly1305_held_back_by_the_policy_runs_in_software_counted_as_the_engines_decline():
    engine = TakeAllEngine()
    provider = Provider([engine], policy=Policy(min_size={"poly1305": 1024}))
    key = bytes(range(32))
    assert poly1305.Poly1305.generate_tag(key, b"short", provider=provider) == (
        c_poly1305.Poly1305.generate_tag(key, b"short")
    )
    mac = poly1305.Poly1305(key, provider=provider)
    mac.update(b"short")
    mac.verify(c_poly1305.Poly1305.generate_tag(key, b"short"))
    assert engine.seen == []
    assert _cell(provider, "software", "poly1305")["ops"] == 2
    assert _cell(provider, "takeall", "poly1305")["declined"] == {"below-threshold": 2}
    poly1305.Poly1305.generate_tag(key, bytes(2048), provider=provider)
    assert len(engine.seen) == 1


def test_poly1305_longer_than_one_gathered_op_is_finished_by_software(monkeypatch):
    monkeypatch.setattr(_stream, "GATHER_LIMIT", 4096)
    provider, engine = _takeall()
    key, message = bytes(range(32)), bytes(range(256)) * 40
    mac = poly1305.Poly1305(key, provider=provider)
    for start in range(0, len(message), 1000):
        mac.update(message[start : start + 1000])
    assert mac.finalize() == c_poly1305.Poly1305.generate_tag(key, message)
    assert engine.seen == []
    assert _cell(provider, "takeall", "poly1305")["declined"] == {"streaming": 1}
    assert _cell(provider, "software", "poly1305")["bytes"] == len(message)


def test_poly1305_is_refused_where_the_policy_requires_offload_and_no_engine_takes_it():
    provider = Provider([], policy=Policy(require=["poly1305"]))
    with pytest.raises(OffloadRequired):
        poly1305.Poly1305.generate_tag(bytes(32), b"m", provider=provider)
    with pytest.raises(OffloadRequired):
        poly1305.Poly1305(bytes(32), provider=provider).finalize()


def test_poly1305_key_length_is_checked_above_the_engines():
    provider, engine = _takeall()
    with pytest.raises(ValueError, match="poly1305 key is 32 bytes long, got 16"):
        provider.run(MacOp("poly1305", "mac", bytes(16), b"message"))
    with pytest.raises(TypeError, match="key must be bytes-like"):
        provider.run(MacOp("poly1305", "mac", "k" * 32, b"message"))
    assert engine.seen == []
    tag = SoftwareEngine().run(MacOp("poly1305", "mac", bytes(range(32)), b"message"))
    assert tag == c_poly1305.Poly1305.generate_tag(bytes(range(32)), b"message")


def test_poly1305_is_an_algorithm_name_software_claims():
    assert "poly1305" in all_algorithms()
    assert "poly1305" in SoftwareEngine().probe().algorithms
    Policy(require=["poly1305"], min_size={"poly*": 64})


def _finalized(cls: Any) -> Any:
    mac = cls(b"0" * 32)
    mac.update(b"msg")
    mac.finalize()
    return mac


def _fresh(cls: Any) -> Any:
    mac = cls(b"0" * 32)
    mac.update(b"msg")
    return mac


POLY_MISUSES: dict[str, Callable[[Any], Any]] = {
    "key-object": lambda c: c(object()),
    "key-text": lambda c: c("0" * 32),
    "key-31": lambda c: c(b"0" * 31),
    "key-33": lambda c: c(b"0" * 33),
    "tag-key-object": lambda c: c.generate_tag(object(), b"msg"),
    "tag-key-31": lambda c: c.generate_tag(b"0" * 31, b"msg"),
    "tag-key-33": lambda c: c.generate_tag(b"0" * 33, b"msg"),
    "verify-tag-key-31": lambda c: c.verify_tag(b"0" * 31, b"msg", bytes(16)),
    "update-text": lambda c: c(b"0" * 32).update(""),
    "tag-data-text": lambda c: c.generate_tag(b"0" * 32, ""),
    "verify-text": lambda c: c(b"0" * 32).verify(""),
    "verify-tag-text": lambda c: c.verify_tag(b"0" * 32, b"msg", ""),
    "update-after-finalize": lambda c: _finalized(c).update(b"foo"),
    "finalize-twice": lambda c: _finalized(c).finalize(),
    "verify-after-finalize": lambda c: _finalized(c).verify(b""),
    "verify-empty": lambda c: _fresh(c).verify(b""),
    "verify-wrong": lambda c: _fresh(c).verify(bytes(16)),
    "verify-tag-wrong": lambda c: c.verify_tag(b"0" * 32, b"msg", bytes(16)),
}


@pytest.mark.parametrize("misuse", list(POLY_MISUSES))
def test_poly1305_misuse_raises_the_error_class_cryptography_raises(misuse):
    expected = _error(lambda: POLY_MISUSES[misuse](c_poly1305.Poly1305))
    assert expected is not None
    with using(Provider([])):
        assert _error(lambda: POLY_MISUSES[misuse](poly1305.Poly1305)) is expected


def test_poly1305_error_classes_are_cryptographys_own():
    with using(Provider([])):
        assert _error(lambda: POLY_MISUSES["key-31"](poly1305.Poly1305)) is ValueError
        assert _error(lambda: POLY_MISUSES["key-object"](poly1305.Poly1305)) is TypeError
        assert _error(lambda: POLY_MISUSES["finalize-twice"](poly1305.Poly1305)) is AlreadyFinalized
        assert _error(lambda: POLY_MISUSES["verify-wrong"](poly1305.Poly1305)) is InvalidSignature


def _spellings(secret: bytes) -> list[str]:
    runs = [secret[i : i + 6] for i in range(len(secret) - 5)]
    return [s for run in runs for s in (run.hex(), run.hex().upper(), repr(run)[2:-1])]


@pytest.mark.parametrize("engines", [[], ["takeall"]], ids=["software", "takeall"])
def test_poly1305_key_is_in_no_repr_error_or_counter(engines):
    provider = Provider([TakeAllEngine()] if engines else [], policy=Policy(min_size={"*": 0}))
    mac = poly1305.Poly1305(PLANTED, provider=provider)
    mac.update(b"data")
    shown = [repr(mac), str(mac), repr(MacOp("poly1305", "mac", PLANTED, b"data"))]
    for call in (
        lambda: poly1305.Poly1305(PLANTED[:31], provider=provider),
        lambda: poly1305.Poly1305.verify_tag(PLANTED, b"data", bytes(16), provider=provider),
        lambda: mac.verify(bytes(16)),
        lambda: mac.update(b"more"),
    ):
        with pytest.raises(Exception) as info:  # every error's text is checked
            call()
        shown.append(repr(info.value) + str(info.value) + str(info.getrepr()))
    shown.append(provider.counters.to_json())
    for text in shown:
        for spelling in _spellings(PLANTED):
            assert spelling not in text


def test_chaos_engine_declined_and_faulted_over_this_file(request):
    TALLY.check(request)
