"""The engine route: AEAD ops and ``Cipher`` streams handed straight to the session an engine
keeps for a key, with every decision (windows, declines, faults, counting) still the lane's."""

from __future__ import annotations

import errno
import hashlib
import hmac as std_hmac
import os
import random

import pytest
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher as PlainCipher
from cryptography.hazmat.primitives.ciphers import aead as plain_aead
from cryptography.hazmat.primitives.ciphers import algorithms as plain_algorithms
from cryptography.hazmat.primitives.ciphers import modes as plain_modes
from doubles import SessionEngine, TakeAllEngine

from cryptoffload import Policy, Provider, using
from cryptoffload.aead import AESCCM, AESGCM, AESGCMSIV, AESOCB3, ChaCha20Poly1305
from cryptoffload.ciphers import Cipher, algorithms, modes
from cryptoffload.engines.passthrough import PassThroughEngine
from cryptoffload.errors import OffloadRequired, Unavailable
from cryptoffload.hashes import SHA256, Hash
from cryptoffload.hmac import HMAC

AEADS = [
    (AESGCM, plain_aead.AESGCM, 16, (12, 8, 16, 128)),
    (AESCCM, plain_aead.AESCCM, 16, (13, 7, 11)),
    (ChaCha20Poly1305, plain_aead.ChaCha20Poly1305, 32, (12,)),
    (AESOCB3, plain_aead.AESOCB3, 16, (12, 15)),
    (AESGCMSIV, plain_aead.AESGCMSIV, 16, (12,)),
]


def cell(provider, engine, alg):
    return provider.counters.snapshot().get(engine, {}).get(alg, {})


@pytest.mark.parametrize(("ours", "plain", "key_len", "nonces"), AEADS, ids=lambda v: "")
def test_aead_ops_on_the_engine_route_answer_as_software_and_count_as_the_engine(
    ours, plain, key_len, nonces
):
    engine = SessionEngine()
    provider = Provider([engine])
    key = os.urandom(key_len)
    box, reference = ours(key, provider=provider), plain(key)
    sizes = [0, 1, 15, 16, 64, 1400, 16384]
    for nonce_len in nonces:
        for n in sizes:
            nonce, data, aad = os.urandom(nonce_len), os.urandom(n), os.urandom(n % 7)
            sealed = box.encrypt(nonce, data, aad or None)
            assert sealed == reference.encrypt(nonce, data, aad or None)
            assert box.decrypt(nonce, sealed, aad or None) == data
    ops = 2 * len(nonces) * len(sizes)
    alg = box._alg
    assert cell(provider, "sessions", alg)["ops"] == ops
    assert cell(provider, "software", alg) == {}
    assert engine.sessions == 1  # one per key and route
    assert engine.calls >= ops - 1  # the first op binds the lane the ordinary way
    assert engine.seen == [] or len(engine.seen) == 1


def test_a_failed_tag_on_the_engine_route_is_the_engines_answer_and_releases_nothing():
    engine = SessionEngine()
    provider = Provider([engine])
    box = AESGCM(bytes(16), provider=provider)
    sealed = box.encrypt(bytes(12), b"secret" * 20, None)
    for _ in range(3):
        with pytest.raises(InvalidTag):
            box.decrypt(bytes(12), sealed[:-1] + bytes([sealed[-1] ^ 1]), None)
    counted = cell(provider, "sessions", "aes-128-gcm")
    assert counted["ops"] == 4 and counted["faults"] == 0 and counted["declined"] == {}


@pytest.mark.parametrize(
    ("exc", "declined", "faults"),
    [
        (Unavailable("busy"), {"busy": 1}, 0),
        (RuntimeError("job ring stalled"), {}, 1),
        (OSError(errno.EIO, "device error"), {}, 1),
    ],
    ids=["decline", "runtime-fault", "os-fault"],
)
@pytest.mark.parametrize("second", [False, True], ids=["then-software", "then-next-engine"])
def test_a_session_that_declines_or_faults_is_settled_as_run_settles_it(
    exc, declined, faults, second
):
    engine = SessionEngine(plan=lambda n: exc if n == 2 else None)
    engines = [engine, TakeAllEngine("next")] if second else [engine]
    provider = Provider(engines)
    key, nonce, data = os.urandom(16), os.urandom(12), os.urandom(100)
    box, reference = AESGCM(key, provider=provider), plain_aead.AESGCM(key)
    for _ in range(4):
        assert box.encrypt(nonce, data, None) == reference.encrypt(nonce, data, None)
    counted = cell(provider, "sessions", "aes-128-gcm")
    assert counted["ops"] == 3 and counted["declined"] == declined and counted["faults"] == faults
    taker = "next" if second else "software"
    assert cell(provider, taker, "aes-128-gcm")["ops"] == 1
    assert engine.raised == 1


def test_required_offload_with_a_declining_session_raises_offload_required():
    engine = SessionEngine(plan=lambda n: Unavailable("busy"))
    provider = Provider([engine], Policy(require={"aes-128-gcm"}))
    box = AESGCM(bytes(16), provider=provider)
    box.encrypt(bytes(12), b"x" * 64, None)  # bound the ordinary way: the engine's run answers
    with pytest.raises(OffloadRequired):
        box.encrypt(bytes(12), b"x" * 64, None)


def test_a_device_error_in_the_session_keeps_no_output_and_software_answers_a_decrypt():
    engine = SessionEngine(plan=lambda n: RuntimeError("boom") if n == 1 else None)
    provider = Provider([engine])
    key, nonce = os.urandom(16), os.urandom(12)
    box = AESGCM(key, provider=provider)
    sealed = plain_aead.AESGCM(key).encrypt(nonce, b"plaintext", b"aad")
    box.encrypt(nonce, b"bind", None)  # the first op binds the lane the ordinary way
    assert box.decrypt(nonce, sealed, b"aad") == b"plaintext"
    assert cell(provider, "sessions", "aes-128-gcm")["faults"] == 1
    assert cell(provider, "software", "aes-128-gcm")["ops"] == 1


def test_the_policy_window_and_unusual_inputs_take_the_ordinary_path():
    engine = SessionEngine()
    provider = Provider([engine], Policy(min_size={"aes-128-gcm": 100}))
    key = os.urandom(16)
    box, reference = AESGCM(key, provider=provider), plain_aead.AESGCM(key)
    nonce = os.urandom(12)
    box.encrypt(nonce, b"x" * 200, None)
    calls = engine.calls
    assert box.encrypt(nonce, b"x" * 64, None) == reference.encrypt(nonce, b"x" * 64, None)
    assert engine.calls == calls  # held back: software, not the session
    # a bytearray: the ordinary path (which the engine's run answers)
    assert box.encrypt(nonce, bytearray(300), None) == reference.encrypt(nonce, bytes(300), None)
    assert engine.calls == calls
    with pytest.raises(ValueError, match="nonce must be 8 to 128 bytes"):
        box.encrypt(os.urandom(7), b"x" * 200, None)
    ccm = AESCCM(key, provider=provider)
    with pytest.raises(ValueError, match="too long for nonce"):
        ccm.encrypt(os.urandom(13), bytes(70000), None)
    assert cell(provider, "sessions", "aes-128-gcm")["declined"] == {"below-threshold": 1}


def test_cross_check_and_adaptive_routing_keep_every_op_on_the_lanes_python():
    checked = Provider([SessionEngine()], cross_check=1.0)
    assert checked.lane("aes-128-gcm").engine_route is None
    adaptive = Provider([SessionEngine()], Policy(adaptive={}))
    assert adaptive.lane("aes-128-gcm").engine_route is None
    plain = Provider([SessionEngine()])
    assert plain.lane("aes-128-gcm").engine_route is plain.lane("aes-128-gcm").routes[0]
    assert Provider([TakeAllEngine()]).lane("aes-128-gcm").engine_route is None


def test_a_subclass_of_the_pass_through_engine_with_its_own_run_keeps_no_session():
    class Counting(PassThroughEngine):
        name = "counting"
        runs = 0

        def run(self, op):
            Counting.runs += 1
            return super().run(op)

    provider = Provider([Counting()])
    box = AESGCM(bytes(16), provider=provider)
    for _ in range(3):
        box.encrypt(bytes(12), b"x" * 64, None)
    assert Counting.runs == 3


def test_sessions_follow_the_provider_in_force():
    first, second = SessionEngine("first"), SessionEngine("second")
    one, two = Provider([first]), Provider([second])
    box = AESGCM(bytes(16))
    with using(one):
        for _ in range(3):
            box.encrypt(bytes(12), b"x" * 64, None)
    with using(two):
        for _ in range(3):
            box.encrypt(bytes(12), b"x" * 64, None)
    assert cell(one, "first", "aes-128-gcm")["ops"] == 3
    assert cell(two, "second", "aes-128-gcm")["ops"] == 3
    assert first.sessions == second.sessions == 1


# -- Cipher streams ---------------------------------------------------------------------------

MODES = {
    "ctr": (lambda iv: modes.CTR(iv), lambda iv: plain_modes.CTR(iv)),
    "cbc": (lambda iv: modes.CBC(iv), lambda iv: plain_modes.CBC(iv)),
    "ecb": (lambda iv: modes.ECB(), lambda iv: plain_modes.ECB()),
}


def _stream(mode, encrypt, provider, seed, into_share=0.3):
    rng = random.Random(seed)
    key, iv = rng.randbytes(16), rng.randbytes(16)
    ours = Cipher(algorithms.AES(key), MODES[mode][0](iv), provider=provider)
    plain = PlainCipher(plain_algorithms.AES(key), MODES[mode][1](iv))
    a = ours.encryptor() if encrypt else ours.decryptor()
    b = plain.encryptor() if encrypt else plain.decryptor()
    got = want = b""
    total = 0
    for _ in range(40):
        n = rng.choice([0, 1, 5, 15, 16, 17, 31, 64, 100, 1400, 1408, 4096])
        data = rng.randbytes(n)
        total += n
        if rng.random() < into_share:
            buf = bytearray(n + 15 + rng.randrange(3))
            k = a.update_into(data, buf)
            got += bytes(buf[:k])
        else:
            got += a.update(data)
        want += b.update(data)
    if mode != "ctr":  # whole blocks for ECB and CBC, as they need
        pad = rng.randbytes(-total % 16)
        got += a.update(pad)
        want += b.update(pad)
    got += a.finalize()
    want += b.finalize()
    return got, want


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("encrypt", [True, False], ids=["encrypt", "decrypt"])
@pytest.mark.parametrize("seed", range(4))
def test_cipher_streams_on_sessions_match_software_with_faults_and_declines_anywhere(
    mode, encrypt, seed
):
    rng = random.Random(1000 + seed)
    failures = [Unavailable("busy"), RuntimeError("stalled"), OSError(errno.EIO, "gone")]

    def plan(n):
        return rng.choice(failures) if rng.random() < 0.2 else None

    engine = SessionEngine(plan=plan)
    provider = Provider([engine])
    got, want = _stream(mode, encrypt, provider, seed)
    assert got == want
    counted = cell(provider, "sessions", f"aes-128-{mode}")
    # the policy's own declines (small ECB, CBC and CTR ops are software's by default) aside
    declines = sum(k for reason, k in counted["declined"].items() if reason != "below-threshold")
    # Each raise on an update is counted once; one while a session is made (fed the bytes held
    # from a partial block) is not an op: that session is not kept, and the op goes the
    # ordinary way (the engine's run, counted there).
    assert engine.raised - engine.sessions <= counted["faults"] + declines <= engine.raised
    assert engine.calls > 0 and engine.sessions >= 1


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_cipher_stream_moves_between_software_held_back_ops_and_the_engines_session(mode):
    engine = SessionEngine()
    alg = f"aes-128-{mode}"
    provider = Provider([engine], Policy(min_size={alg: 1024}))
    got, want = _stream(mode, True, provider, seed=7)
    assert got == want
    engine_cell, software_cell = cell(provider, "sessions", alg), cell(provider, "software", alg)
    assert engine_cell["ops"] > 0 and software_cell["ops"] > 0
    assert engine_cell["declined"]["below-threshold"] == software_cell["ops"]
    assert engine.calls >= engine_cell["ops"]


def test_a_cipher_stream_on_the_pass_through_engine_uses_its_session():
    provider = Provider([PassThroughEngine()])
    stream = Cipher(algorithms.AES(bytes(16)), modes.CTR(bytes(16)), provider=provider).encryptor()
    for _ in range(3):
        stream.update(bytes(1400))
    assert stream._sw_route is provider.lane("aes-128-ctr").routes[0]
    assert cell(provider, "passthrough", "aes-128-ctr") == {
        "ops": 3,
        # a CTR op that starts mid-block re-sends that block's first bytes (8 of 1400's 1408)
        "bytes": 1400 + 1408 + 1400,
        "declined": {},
        "faults": 0,
    }


# -- hashes and HMAC --------------------------------------------------------------------------


def _digests(provider, seed):
    rng = random.Random(seed)
    key = rng.randbytes(rng.choice([1, 32, 100]))
    pieces = [rng.randbytes(rng.choice([0, 1, 63, 64, 1024])) for _ in range(rng.randrange(4))]
    whole = b"".join(pieces)
    h = Hash(SHA256(), provider=provider)
    m = HMAC(key, SHA256(), provider=provider)
    for piece in pieces:
        h.update(piece)
        m.update(piece)
    h_copy, m_copy = h.copy(), m.copy()
    h_copy.update(b"more")
    m_copy.update(b"more")
    assert h.finalize() == hashlib.sha256(whole).digest()
    assert h_copy.finalize() == hashlib.sha256(whole + b"more").digest()
    assert m.finalize() == std_hmac.digest(key, whole, "sha256")
    m_copy.verify(std_hmac.digest(key, whole + b"more", "sha256"))
    return 4


@pytest.mark.parametrize("seed", range(6))
def test_hash_and_hmac_messages_on_the_engine_route_match_software_and_count_as_the_engine(seed):
    engine = SessionEngine()
    provider = Provider([engine])
    ops = sum(_digests(provider, seed + 100 * i) for i in range(5))
    counted = {alg: cell(provider, "sessions", alg)["ops"] for alg in ("sha256", "hmac-sha256")}
    assert sum(counted.values()) == ops
    assert cell(provider, "software", "sha256") == cell(provider, "software", "hmac-sha256") == {}
    assert engine.calls >= ops - 2  # the first context of each binds the lane the ordinary way
    assert engine.sessions == 2  # one per algorithm, whatever the key


@pytest.mark.parametrize(
    ("exc", "declined", "faults"),
    [(Unavailable("busy"), {"busy": 3}, 0), (RuntimeError("stalled"), {}, 3)],
    ids=["decline", "fault"],
)
def test_a_hash_or_hmac_session_that_declines_or_faults_is_settled_as_run_settles_it(
    exc, declined, faults
):
    engine = SessionEngine(plan=lambda n: exc)
    provider = Provider([engine])
    for _ in range(3):
        h = Hash(SHA256(), provider=provider)
        h.update(b"abc")
        assert h.finalize() == hashlib.sha256(b"abc").digest()
    counted = cell(provider, "sessions", "sha256")
    assert counted["declined"] == declined and counted["faults"] == faults
    assert counted["ops"] == 0  # even the first message: a context made on the route gathers
    assert cell(provider, "software", "sha256")["ops"] == 3


def test_a_failed_hmac_verify_on_the_engine_route_is_an_op_done():
    engine = SessionEngine()
    provider = Provider([engine])
    for _ in range(2):
        m = HMAC(b"key", SHA256(), provider=provider)
        m.update(b"message")
        with pytest.raises(InvalidSignature):
            m.verify(bytes(32))
    assert cell(provider, "sessions", "hmac-sha256")["ops"] == 2
    assert engine.calls == 2


def test_a_hash_the_policy_keeps_from_the_engine_is_software_s_and_the_decline_counted():
    engine = SessionEngine()
    provider = Provider([engine], Policy(min_size={"sha256": 100}))
    for n in (10, 200, 10, 200):
        h = Hash(SHA256(), provider=provider)
        h.update(bytes(n))
        assert h.finalize() == hashlib.sha256(bytes(n)).digest()
    assert cell(provider, "sessions", "sha256")["ops"] == 2
    assert cell(provider, "sessions", "sha256")["declined"] == {"below-threshold": 2}
    assert cell(provider, "software", "sha256")["ops"] == 2


def test_a_message_past_the_gather_limit_goes_on_in_a_stream_and_is_right():
    from cryptoffload import _stream
    from cryptoffload.core import directpath

    assert _stream.GATHER_LIMIT == directpath.GATHER_LIMIT
    if directpath.COMPILED:
        assert directpath.compiled_module().GATHER_LIMIT == directpath.GATHER_LIMIT
    engine = SessionEngine()
    provider = Provider([engine])
    Hash(SHA256(), provider=provider).finalize()  # binds the lane
    h = Hash(SHA256(), provider=provider)
    piece = bytes(1 << 20)
    for _ in range(5):
        h.update(piece)
    twin = h.copy()
    assert h.finalize() == hashlib.sha256(piece * 5).digest()
    twin.update(b"x")
    assert twin.finalize() == hashlib.sha256(piece * 5 + b"x").digest()
    # the stream's way: this engine keeps no running state (declined "streaming"), software did
    assert cell(provider, "sessions", "sha256")["declined"] == {"streaming": 2}


@pytest.mark.parametrize(
    "make",
    [lambda p: Hash(SHA256(), provider=p), lambda p: HMAC(b"k", SHA256(), provider=p)],
    ids=["hash", "hmac"],
)
def test_a_buffer_that_is_not_contiguous_is_refused_on_the_engine_route_as_cryptography_does(make):
    provider = Provider([SessionEngine()])
    for _ in range(2):  # the first context binds the lane, the second is made on the route
        context = make(provider)
        with pytest.raises(BufferError, match="contiguous"):
            context.update(memoryview(bytes(range(20)))[::2])
    context = make(provider)
    context.update(memoryview(b"abc"))
    context.update(bytearray(b"def"))
    assert len(context.finalize()) == 32


# -- a Cipher context made per message on the engine route ---------------------------------------

#: What a chained context's state is read as: its slots and its compiled core's fields.
_STATE = (
    "_alg", "_algorithm", "_chain", "_done", "_encrypt", "_failed", "_held", "_key", "_kind",
    "_mode", "_slack", "_spent", "_unkept", "_lane", "_block", "_whole_blocks", "_cbc_encrypt",
    "_sw_route", "_sw_base", "_sw_total", "_sw_in", "_sw_out",
)  # fmt: skip


def _state(context):
    state = {name: getattr(context, name, "unset") for name in _STATE}
    state["_sw"] = type(context._sw)
    return state


def _counting_slow_contexts(monkeypatch):
    made = []
    slow = Cipher._context

    def counted(self, encrypt):
        made.append(encrypt)
        return slow(self, encrypt)

    monkeypatch.setattr(Cipher, "_context", counted)
    return made


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("encrypt", [True, False], ids=["encrypt", "decrypt"])
def test_a_context_made_per_message_on_the_engine_route_is_the_one_its_init_makes(
    mode, encrypt, monkeypatch
):
    from cryptoffload.ciphers.base import _ChainedContext
    from cryptoffload.core.ops import CipherOp

    engine = SessionEngine()
    provider = Provider([engine])
    key, iv = os.urandom(16), os.urandom(16)
    first = Cipher(algorithms.AES(key), MODES[mode][0](iv))
    with using(provider):
        first.encryptor()  # the slow way: the lane is noted for the direct path
        made = _counting_slow_contexts(monkeypatch)
        cipher = Cipher(algorithms.AES(key), MODES[mode][0](iv))
        context = cipher.encryptor() if encrypt else cipher.decryptor()
        assert made == []  # not the slow way
        lane = provider.lane(f"aes-128-{mode}")
        asked = engine.asked[-1]  # the session asked for the context made per message
        assert _state(context) == _state(_ChainedContext(cipher, lane, encrypt))
        assert context._sw_route is lane.engine_route and engine.sessions == 3
    # The compiled path writes the op's fields without CipherOp's __init__: the same op.
    kind, chain = "encrypt" if encrypt else "decrypt", None if mode == "ecb" else iv
    expected = CipherOp(f"aes-128-{mode}", kind, key, chain, None)
    assert type(asked) is CipherOp
    assert (asked.alg, asked.kind, asked.fields()) == (expected.alg, kind, expected.fields())


@pytest.mark.parametrize("mode", sorted(MODES))
def test_messages_each_in_a_new_context_on_the_engine_route_are_right_and_the_engines(mode):
    engine = SessionEngine()
    provider = Provider([engine], Policy(min_size={"*": 0}))
    rng = random.Random(3)
    key = rng.randbytes(16)
    with using(provider):
        for i in range(20):
            iv, data = rng.randbytes(16), rng.randbytes(16 * rng.randrange(1, 90))
            ours = Cipher(algorithms.AES(key), MODES[mode][0](iv))
            plain = PlainCipher(plain_algorithms.AES(key), MODES[mode][1](iv))
            if i % 2:
                ct = ours.encryptor().update(data)
                assert ct == plain.encryptor().update(data)
            else:
                context = ours.decryptor()
                assert context.update(data) + context.finalize() == plain.decryptor().update(data)
    counted = cell(provider, "sessions", f"aes-128-{mode}")
    assert counted["ops"] == 20 and engine.sessions == 20


class _Keeping(SessionEngine):
    """Keeps no session (``None``) or fails making one (raises ``fail``), counting the asks."""

    def __init__(self, fail=None):
        super().__init__("keeping")
        self.fail = fail
        self.asked = 0

    def session(self, op):
        self.asked += 1
        if self.fail is not None:
            raise self.fail
        return None


@pytest.mark.parametrize(
    "fail", [None, RuntimeError("no room for a session")], ids=["none", "raises"]
)
def test_an_engine_keeping_no_session_for_a_new_context_is_asked_once_and_runs_its_ops(fail):
    engine = _Keeping(fail)
    provider = Provider([engine], Policy(min_size={"*": 0}))
    key, iv, data = bytes(16), bytes(16), bytes(1400)
    want = PlainCipher(plain_algorithms.AES(key), plain_modes.CTR(iv)).encryptor().update(data)
    with using(provider):
        for i in range(3):
            context = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
            assert context._unkept is provider.lane("aes-128-ctr").engine_route
            assert context._sw is None and engine.asked == i + 1
            assert context.update(data) == want  # the engine's run, the ordinary way
    assert cell(provider, "keeping", "aes-128-ctr")["ops"] == 3


def test_a_new_context_follows_the_provider_in_force():
    one, two = Provider([SessionEngine("one")]), Provider([SessionEngine("two")])
    key, iv, data = bytes(16), bytes(16), bytes(1400)
    for provider in (one, two, one):
        with using(provider):
            for _ in range(2):
                Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor().update(data)
    assert cell(one, "one", "aes-128-ctr")["ops"] == 4
    assert cell(two, "two", "aes-128-ctr")["ops"] == 2


@pytest.mark.parametrize("mode", sorted(MODES))
def test_finalize_on_a_session_kept_context_keeps_cryptographys_rules(mode):
    from cryptography.exceptions import AlreadyFinalized

    provider = Provider([SessionEngine()], Policy(min_size={"*": 0}))
    key, iv = bytes(16), bytes(16)
    cipher = Cipher(algorithms.AES(key), MODES[mode][0](iv), provider=provider)
    plain = PlainCipher(plain_algorithms.AES(key), MODES[mode][1](iv))
    context = cipher.encryptor()
    assert context._sw_route is not None  # the session's
    assert context.update(bytes(40)) == plain.encryptor().update(bytes(40))
    if mode == "ctr":
        assert context.finalize() == b""
    else:  # 8 bytes of a block left: `cryptography`'s ValueError, the context done
        with pytest.raises(ValueError, match="multiple of 16 bytes"):
            context.finalize()
    assert context._done and context._sw is None
    with pytest.raises(AlreadyFinalized):
        context.finalize()
    with pytest.raises(AlreadyFinalized):
        context.update(b"x")
    whole = cipher.decryptor()
    whole.update(bytes(48))
    assert whole.finalize() == b"" and whole._done and whole._sw_route is None
