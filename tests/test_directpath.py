"""The direct path's twins (AEAD, and Cipher contexts' held-back updates), compiled and pure
Python, take the same decisions and record the same sizes (cryptoffload.core.directpath), checked
with stand-ins for OpenSSL, the lane and the ordinary path; and the compiled twin is the one in use
wherever it could be built."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import sysconfig
import weakref
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidTag

import cryptoffload
from cryptoffload.core import directpath

try:
    from cryptoffload.core import _directpath as compiled
except ImportError:  # built nowhere here: only the pure twin is checked
    compiled = None
else:
    compiled.configure(directpath.CURRENT, directpath.DEFAULT_BOX, InvalidTag)

ROOT = Path(__file__).resolve().parents[1]


class Twin:
    """One implementation's names."""

    def __init__(
        self, name: str, size_log, lane_core, aead_core, note_using, chained_core, stream_core
    ) -> None:
        self.name = name
        self.SizeLog, self.LaneCore, self.AeadCore = size_log, lane_core, aead_core
        self.note_using = note_using
        lane_class = type(
            "Lane",
            (lane_core,),
            {"__slots__": ("alg", "folds"), "fold_due": _no_fold, "count": _count},
        )
        self.Lane = lane_class
        self.Primitive = type(f"{name}Primitive", (aead_core, _Ordinary), {"__slots__": ("seen",)})
        self.Context = type(f"{name}Context", (chained_core, _SlowUpdate), {"__slots__": ("seen",)})
        self.Stream = type(f"{name}Stream", (stream_core, _SlowUpdate), {"__slots__": ("seen",)})
        self.StreamCore = stream_core


class _SlowUpdate:
    """A Cipher context's slow path: records that it ran, with what."""

    __slots__ = ()

    def _update_slow(self, *args, **kwargs):
        self.seen.append(("_update_slow", args, kwargs))
        return "slow"

    def _update_into_slow(self, *args, **kwargs):
        self.seen.append(("_update_into_slow", args, kwargs))
        return "slow"


def _no_fold(lane) -> None:
    """The stand-in lane's fold_due: nothing to fold into (counted when asked to)."""
    if hasattr(lane, "folds"):
        lane.folds += 1


def _count(lane, nbytes: int) -> None:
    """The stand-in lane's count, as Lane's: one append to the record, a fold when it is long."""
    lane.tally(nbytes)
    if len(lane.tally_q) > directpath.FOLD_AT:
        lane.fold_due()


class _Ordinary:
    """The primitive's ordinary path: records that it ran, with what."""

    __slots__ = ()

    def _encrypt(self, *args, **kwargs):
        self.seen.append(("_encrypt", args, kwargs))
        return "ordinary"

    def _decrypt(self, *args, **kwargs):
        self.seen.append(("_decrypt", args, kwargs))
        return "ordinary"

    def _encrypt_into(self, *args, **kwargs):
        self.seen.append(("_encrypt_into", args, kwargs))
        return "ordinary"

    def _decrypt_into(self, *args, **kwargs):
        self.seen.append(("_decrypt_into", args, kwargs))
        return "ordinary"


class FakeOpenSSL:
    """Stands in for `cryptography`'s AESGCM: answers tagged by method, or raises ``fail``."""

    def __init__(self, fail: BaseException | None = None) -> None:
        self.fail = fail
        self.calls: list[str] = []

    def _run(self, name: str, result):
        self.calls.append(name)
        if self.fail is not None:
            raise self.fail
        return result

    def encrypt(self, nonce, data, aad):
        return self._run("encrypt", b"E" + data)

    def decrypt(self, nonce, data, aad):
        return self._run("decrypt", b"D" + data)

    def encrypt_into(self, nonce, data, aad, buf):
        buf[:] = b"\x07" * len(buf)  # written before it fails, as OpenSSL's GCM does
        return self._run("encrypt_into", len(buf))

    def decrypt_into(self, nonce, data, aad, buf):
        buf[:] = b"\x07" * len(buf)
        return self._run("decrypt_into", len(buf))


TWINS = [
    pytest.param(
        Twin(
            "pure",
            directpath.PureSizeLog,
            directpath.PureLaneCore,
            directpath.PureAeadCore,
            directpath.pure_note_using,
            directpath.PureChainedCore,
            directpath.PureDirectStreamCore,
        ),
        id="pure",
    )
]
if compiled is not None:
    TWINS.append(
        pytest.param(
            Twin(
                "compiled",
                compiled.SizeLog,
                compiled.LaneCore,
                compiled.AeadCore,
                compiled.note_using,
                compiled.ChainedCore,
                compiled.DirectStreamCore,
            ),
            id="compiled",
        )
    )

TAG = 16


def make(twin: Twin, software=None, provider=None):
    """A primitive with its own provider on a software-only lane of that provider."""
    provider = provider if provider is not None else object()
    lane = twin.Lane()
    lane.provider = provider
    lane.direct_q = twin.SizeLog()
    lane.direct = lane.direct_q.append
    lane.direct_below, lane.direct_above, lane.direct_room = -1, -1, 8
    prim = twin.Primitive()
    prim.seen = []
    prim._lane, prim._provider = lane, provider
    prim._sw = software if software is not None else FakeOpenSSL()
    prim._tag_length = TAG
    return prim, lane


@pytest.mark.parametrize("twin", TWINS)
def test_an_op_software_takes_runs_in_openssl_and_is_recorded(twin):
    prim, lane = make(twin)
    assert prim.encrypt(b"n" * 12, b"x" * 64, None) == b"E" + b"x" * 64
    assert prim.decrypt(b"n" * 12, b"y" * 80, b"aad") == b"D" + b"y" * 80
    buf = bytearray(64 + TAG)
    assert prim.encrypt_into(b"n" * 12, b"x" * 64, None, buf) == 64 + TAG
    out = bytearray(64)
    assert prim.decrypt_into(b"n" * 12, b"y" * (64 + TAG), None, out) == 64
    assert prim.seen == []
    assert lane.direct_q.drain() == [64, 80 - TAG, 64, 64]


def _other_provider(prim, lane):
    prim._provider = object()


def _held_for_engines(prim, lane):
    lane.direct_below, lane.direct_above = 0, 1 << 20


def _record_full(prim, lane):
    lane.direct_room = 0


def _no_software(prim, lane):
    prim._sw = None


def _software_cannot(prim, lane):
    prim._sw = False


def _lane_of_no_provider(prim, lane):
    class Unbound:  # what a primitive holds before its first op: not a LaneCore
        provider = object()  # no provider's (the real one's check never passes)
        direct_below = direct_above = -1
        direct_q: list = []
        direct_room = 8

    prim._lane = Unbound()


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize(
    "change",
    [
        _other_provider,
        _held_for_engines,
        _record_full,
        _no_software,
        _software_cannot,
        _lane_of_no_provider,
    ],
)
def test_an_op_the_direct_path_cannot_take_goes_to_the_ordinary_path(twin, change):
    prim, lane = make(twin)
    change(prim, lane)
    nonce, data = b"n" * 12, b"x" * 64
    assert prim.encrypt(nonce, data, None) == "ordinary"
    assert prim.decrypt(nonce, data, None) == "ordinary"
    assert prim.encrypt_into(nonce, data, None, bytearray(80)) == "ordinary"
    assert prim.decrypt_into(nonce, data, None, bytearray(48)) == "ordinary"
    assert [name for name, _, _ in prim.seen] == [
        "_encrypt",
        "_decrypt",
        "_encrypt_into",
        "_decrypt_into",
    ]
    assert prim._sw in (None, False) or prim._sw.calls == []
    assert len(lane.direct_q) == 0


@pytest.mark.parametrize("twin", TWINS)
def test_arguments_other_than_bytes_in_place_go_to_the_ordinary_path_as_given(twin):
    prim, lane = make(twin)
    nonce = b"n" * 12
    assert prim.encrypt(nonce, bytearray(64), None) == "ordinary"
    assert prim.decrypt(nonce, b"x" * (TAG - 1), None) == "ordinary"  # shorter than a tag
    assert prim.encrypt_into(nonce, b"x" * 64, None, memoryview(bytearray(80))) == "ordinary"
    assert len(prim.seen) == 3
    assert len(lane.direct_q) == 0


@pytest.mark.parametrize("twin", TWINS)
def test_keyword_calls_are_answered_and_recorded_once_by_either_path(twin):
    """The pure twin binds keywords as any Python method; the compiled one hands a call with
    keywords to the ordinary path, which (in the library) answers and counts it the same."""
    prim, lane = make(twin)
    data = b"x" * 64
    out = prim.encrypt(b"n" * 12, data=data, associated_data=None)
    if twin.name == "pure":
        assert (out, prim.seen, lane.direct_q.drain()) == (b"E" + data, [], [64])
    else:
        assert out == "ordinary"
        assert prim.seen == [("_encrypt", (b"n" * 12,), {"data": data, "associated_data": None})]
        assert len(lane.direct_q) == 0


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("error", [TypeError("bad nonce type"), ValueError("bad nonce length")])
def test_openssl_refusing_the_input_hands_it_to_the_ordinary_path_unrecorded(twin, error):
    prim, lane = make(twin, FakeOpenSSL(fail=error))
    assert prim.encrypt(b"n", b"x" * 64, None) == "ordinary"
    assert prim.decrypt(b"n", b"x" * 64, None) == "ordinary"
    assert prim.encrypt_into(b"n", b"x" * 64, None, bytearray(80)) == "ordinary"
    assert prim.decrypt_into(b"n", b"x" * 64, None, bytearray(48)) == "ordinary"
    assert len(prim.seen) == 4
    assert len(lane.direct_q) == 0


@pytest.mark.parametrize("twin", TWINS)
def test_other_errors_from_openssl_go_on_unrecorded(twin):
    prim, lane = make(twin, FakeOpenSSL(fail=RuntimeError("engine room on fire")))
    with pytest.raises(RuntimeError, match="on fire"):
        prim.encrypt(b"n", b"x" * 64, None)
    with pytest.raises(RuntimeError, match="on fire"):
        prim.decrypt(b"n", b"x" * 64, None)
    assert prim.seen == []
    assert len(lane.direct_q) == 0


@pytest.mark.parametrize("twin", TWINS)
def test_a_failed_tag_is_recorded_raised_and_releases_no_plaintext(twin):
    prim, lane = make(twin, FakeOpenSSL(fail=InvalidTag()))
    with pytest.raises(InvalidTag):
        prim.decrypt(b"n", b"x" * 64, None)
    buf = bytearray(48)
    with pytest.raises(InvalidTag):
        prim.decrypt_into(b"n", b"x" * 64, None, buf)
    assert buf == bytes(48)  # the fake wrote 0x07s before failing, as OpenSSL's GCM does
    assert prim.seen == []
    assert lane.direct_q.drain() == [64 - TAG, 64 - TAG]


@pytest.mark.parametrize("twin", TWINS)
def test_the_provider_in_force_is_the_primitives_then_the_using_blocks_then_the_default(twin):
    ambient = object()
    prim, lane = make(twin, provider=ambient)
    prim._provider = None
    data = b"x" * 64
    box, was = directpath.DEFAULT_BOX, directpath.DEFAULT_BOX[0]
    try:
        box[0] = object()
        assert prim.encrypt(b"n", data, None) == "ordinary"  # the default is another provider
        box[0] = ambient
        assert prim.encrypt(b"n", data, None) == b"E" + data  # the default is the lane's
        twin.note_using()
        token = directpath.CURRENT.set(object())
        try:
            assert prim.encrypt(b"n", data, None) == "ordinary"  # a using block's comes first
            prim._provider = ambient
            assert prim.encrypt(b"n", data, None) == b"E" + data  # the primitive's own first
        finally:
            directpath.CURRENT.reset(token)
        prim._provider = None
        assert prim.encrypt(b"n", data, None) == b"E" + data  # the block ended: the default
    finally:
        box[0] = was
    assert lane.direct_q.drain() == [64, 64, 64]


@pytest.mark.parametrize("twin", TWINS)
def test_a_bound_beyond_the_largest_size_means_never(twin):
    _, lane = make(twin)
    lane.direct_above = sys.maxsize + 1  # "_NEVER": no size is above it
    assert lane.direct_above >= sys.maxsize
    lane.direct_below = -1
    assert lane.direct_below == -1


@pytest.mark.parametrize("twin", TWINS)
def test_the_size_log_records_in_order_and_drains_exactly_what_it_holds(twin):
    log = twin.SizeLog()
    assert not log
    assert len(log) == 0
    for n in (0, 64, 1 << 40, ~16):  # ~size: an op held back from every engine
        log.append(n)
    assert log
    assert len(log) == 4
    assert log.drain() == [0, 64, 1 << 40, ~16]
    assert (len(log), log.drain()) == (0, [])
    for n in range(1000):
        log.append(n)
    assert log.drain_total() == (1000, sum(range(1000)))
    assert log.drain_total() == (0, 0)
    for n in (10, 20, 20, 30, 5000):
        log.append(n)
    edges = [20, 21, 0, sys.maxsize + 1]  # sys.maxsize + 1: "never", every size below it
    assert log.drain_below(edges) == (5, 5080, [1, 3, 0, 5])
    assert log.drain_below([1]) == (0, 0, [0])
    for n in (10, ~20, 30, ~5000, ~0):  # plain sizes, and held-back ones marked ~size
        log.append(n)
    assert log.drain_marked([20, 21, sys.maxsize + 1]) == (5, 5060, 3, [1, 2, 3])
    assert log.drain_marked([]) == (0, 0, 0, [])


@pytest.mark.parametrize("twin", TWINS)
def test_a_cycle_through_the_cores_is_collected(twin):
    class Provider:
        pass

    provider = Provider()
    prim, lane = make(twin, provider=provider)
    provider.lane, provider.primitive = lane, prim  # provider -> lane -> provider, and so on
    gone = weakref.ref(provider)
    del provider, prim, lane
    gc.collect()
    assert gone() is None


# -- ChainedCore: a Cipher context's held-back path -------------------------------------------


class FakeKept:
    """Stands in for a kept OpenSSL CBC context: whole blocks out (each byte XOR 0x5A), a partial
    block held inside; or raises ``fail``."""

    def __init__(self, block: int = 16, fail: BaseException | None = None) -> None:
        self.block, self.fail = block, fail
        self.inside = b""
        self.calls: list[str] = []

    def update(self, data):
        self.calls.append("update")
        if self.fail is not None:
            raise self.fail
        joined = self.inside + data
        full = len(joined) - len(joined) % self.block
        self.inside = joined[full:]
        return bytes(b ^ 0x5A for b in joined[:full])

    def update_into(self, data, buf):
        out = self.update(data)
        buf[: len(out)] = out
        return len(out)


def make_context(twin: Twin, block: int = 16, software=None, whole_blocks=True):
    """A CBC-encrypting context in a held-back stream: every size below 1 MiB is kept from the
    engines, the lane's tally is its SizeLog's append (as Lane sets it)."""
    lane = twin.Lane()
    lane.hold_below, lane.hold_above = 1 << 20, 1 << 40
    lane.tally_q = twin.SizeLog()
    lane.tally = lane.tally_q.append
    ctx = twin.Context()
    ctx.seen = []
    ctx._lane = lane
    ctx._sw = software if software is not None else FakeKept(block)
    ctx._block = block
    ctx._whole_blocks = whole_blocks
    ctx._cbc_encrypt = True
    ctx._sw_total = 0
    ctx._sw_in = b"c" * block  # what _enter_held keeps: the chaining value
    ctx._sw_out = b"o" * block
    return ctx, lane


def state(ctx) -> tuple:
    return ctx._sw_total, bytes(ctx._sw_in), bytes(ctx._sw_out)


def _xor(data: bytes) -> bytes:
    return bytes(b ^ 0x5A for b in data)


@pytest.mark.parametrize("twin", TWINS)
def test_a_held_back_update_runs_on_the_kept_context_keeps_its_tails_and_is_tallied(twin):
    ctx, lane = make_context(twin)
    a, b, c = bytes(range(40)), b"y" * 5, b"z" * 11
    assert ctx.update(a) == _xor(a[:32])
    assert state(ctx) == (40, a, _xor(a[:32]))  # update's output, whole when a block or more
    assert ctx.update(b) == b""  # 8 + 5 bytes: no whole block, nothing an engine would get
    assert state(ctx) == (45, (a + b)[-31:], _xor(a[:32]))
    buf = bytearray(11 + 15)
    assert ctx.update_into(c, buf) == 16
    assert buf[:16] == _xor((a + b + c)[32:48])
    assert state(ctx) == (56, (a + b + c)[-31:], _xor((a + b + c)[32:48]))  # the buffer's last 16
    assert ctx.update_into(b"", bytearray(15)) == 0  # update_into takes empty data too
    assert ctx.seen == []
    assert lane.tally_q.drain() == [~32, ~16]  # ~size: held back from every engine


@pytest.mark.parametrize("twin", TWINS)
def test_a_short_output_block_joins_the_output_tail_and_a_stream_mode_tallies_unrounded(twin):
    ctx, lane = make_context(twin, block=8)  # Triple DES: 8-byte blocks, a 16-byte output tail
    assert ctx.update(b"p" * 8) == _xor(b"p" * 8)
    assert state(ctx) == (8, b"c" * 8 + b"p" * 8, b"o" * 8 + _xor(b"p" * 8))
    ctr, lane2 = make_context(twin, whole_blocks=False)
    ctr._cbc_encrypt = False
    ctr.update(b"q" * 20)
    assert state(ctr) == (20, b"c" * 11 + b"q" * 20, b"o" * 16)  # no output tail kept
    assert lane.tally_q.drain() == [~8]
    assert lane2.tally_q.drain() == [~20]


def _kept_context_gone(ctx, lane):
    ctx._sw = None


def _sizes_for_the_engines(ctx, lane):
    lane.hold_below, lane.hold_above = 0, 1 << 40


def _exactly_an_engines_size(ctx, lane):
    lane.hold_below = lane.hold_above = 32  # 32 bytes is an engine's; 31 or 33 would be held


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize(
    "change", [_kept_context_gone, _sizes_for_the_engines, _exactly_an_engines_size]
)
def test_an_update_the_held_back_path_cannot_take_goes_to_the_slow_method_as_given(twin, change):
    ctx, lane = make_context(twin)
    change(ctx, lane)
    data, buf = b"x" * 32, bytearray(47)
    assert ctx.update(data) == "slow"
    assert ctx.update_into(data, buf) == "slow"
    assert ctx.seen == [("_update_slow", (data,), {}), ("_update_into_slow", (data, buf), {})]
    assert ctx._sw is None or ctx._sw.calls == []
    assert state(ctx) == (0, b"c" * 16, b"o" * 16)
    assert len(lane.tally_q) == 0


@pytest.mark.parametrize("twin", TWINS)
def test_arguments_the_held_back_path_does_not_take_go_to_the_slow_method_as_given(twin):
    ctx, lane = make_context(twin)
    data = b"x" * 32
    cases = [
        ("_update_slow", (bytearray(data),)),  # not bytes
        ("_update_slow", (b"",)),  # nothing new: update leaves it to the slow way
        ("_update_into_slow", (bytearray(data), bytearray(47))),
        ("_update_into_slow", (data, memoryview(bytearray(47)))),  # not a bytearray
        ("_update_into_slow", (data, bytearray(46))),  # no room for OpenSSL's rule
    ]
    for name, args in cases:
        method = ctx.update if name == "_update_slow" else ctx.update_into
        assert method(*args) == "slow"
    assert ctx.seen == [(name, args, {}) for name, args in cases]
    assert ctx._sw.calls == []
    assert state(ctx) == (0, b"c" * 16, b"o" * 16)
    assert len(lane.tally_q) == 0


@pytest.mark.parametrize("twin", TWINS)
def test_a_lane_that_is_not_a_lane_core_is_answered_either_way(twin):
    """The pure twin reads any lane's fields; the compiled one hands such a lane to the slow
    method (in the library: the held-back op on the same kept context, counted the same)."""

    class Plain:
        hold_below, hold_above = 1 << 20, 1 << 40

        def __init__(self) -> None:
            self.sizes: list[int] = []
            self.tally_q = self.sizes
            self.tally = self.sizes.append

        def fold_due(self) -> None:
            pass

    ctx, _ = make_context(twin)
    ctx._lane = plain = Plain()
    data = b"x" * 32
    if twin.name == "pure":
        assert (ctx.update(data), ctx.seen, plain.sizes) == (_xor(data), [], [~32])
    else:
        assert (ctx.update(data), ctx.seen) == ("slow", [("_update_slow", (data,), {})])


@pytest.mark.parametrize("twin", TWINS)
def test_a_tally_other_than_its_size_logs_append_is_called(twin):
    ctx, lane = make_context(twin)
    sizes: list[int] = []
    lane.tally = sizes.append  # e.g. a lane whose record was replaced
    ctx.update(b"x" * 48)
    ctx.update_into(b"x" * 16, bytearray(31))
    assert sizes == [~48, ~16]
    assert len(lane.tally_q) == 0


@pytest.mark.parametrize("twin", TWINS)
def test_errors_from_the_kept_context_go_on_and_record_nothing(twin):
    ctx, lane = make_context(twin, software=FakeKept(fail=ValueError("bad")))
    with pytest.raises(ValueError, match="bad"):
        ctx.update(b"x" * 32)
    with pytest.raises(ValueError, match="bad"):
        ctx.update_into(b"x" * 32, bytearray(47))
    assert ctx.seen == []
    assert state(ctx) == (0, b"c" * 16, b"o" * 16)
    assert len(lane.tally_q) == 0


@pytest.mark.parametrize("twin", TWINS)
def test_the_context_fields_read_back_as_written_and_unset_ones_raise(twin):
    ctx = twin.Context()
    for name in ("_sw_total", "_block", "_sw_in", "_sw_out", "_lane", "_sw"):
        with pytest.raises(AttributeError):
            getattr(ctx, name)
    software = FakeKept()
    ctx._sw, ctx._sw_total, ctx._block, ctx._whole_blocks = software, 1 << 40, 8, False
    assert (ctx._sw, ctx._sw_total, ctx._block, ctx._whole_blocks) == (software, 1 << 40, 8, False)
    ctx._sw = None
    assert ctx._sw is None
    _, lane = make_context(twin)
    lane.hold_above = never = sys.maxsize + 1  # "_NEVER": no size is above it
    assert lane.hold_above is never  # given back as set (read per op by Python code)


def test_the_compiled_tail_is_the_pure_ones():
    from cryptoffload.ciphers import base

    assert base._TAIL == directpath.TAIL == 31
    if compiled is not None:
        assert compiled.TAIL == directpath.TAIL


def test_the_compiled_fold_limit_is_the_counters_one():
    from cryptoffload.core import counters

    assert counters.FOLD_AT == directpath.FOLD_AT
    if compiled is not None:
        assert compiled.FOLD_AT == directpath.FOLD_AT


@pytest.mark.parametrize("twin", TWINS)
def test_a_long_held_back_stream_asks_its_lane_to_fold(twin):
    """Nothing else folds a stream's record while it runs: the fast path asks the lane once
    the record is past the limit (a stream of millions of updates kept millions of sizes)."""
    ctx, lane = make_context(twin)
    folds = []

    class Folding(type(lane)):
        __slots__ = ()

        def fold_due(self):
            folds.append(len(self.tally_q))
            self.tally_q.drain()

    lane.__class__ = Folding
    for _ in range(directpath.FOLD_AT + 5):
        ctx.update(b"p" * 16)
    assert folds == [directpath.FOLD_AT + 1]
    assert len(lane.tally_q) == 4


def test_a_long_held_back_cipher_stream_keeps_the_counts_record_short():
    """End to end: an engine claims AES-128-CBC, the policy keeps every size from it."""
    from doubles import TakeAllEngine

    from cryptoffload.ciphers import Cipher, algorithms, modes

    policy = cryptoffload.Policy(min_size={"aes-128-cbc": 1 << 30})
    provider = cryptoffload.Provider([TakeAllEngine("claimer", {"aes-128-cbc"})], policy)
    ctx = Cipher(algorithms.AES(bytes(16)), modes.CBC(bytes(16)), provider=provider).encryptor()
    buf = bytearray(16 + 15)
    for _ in range(3 * directpath.FOLD_AT):
        ctx.update_into(b"p" * 16, buf)
        ctx.update(b"q" * 16)
    ctx.finalize()
    lane = provider.lane("aes-128-cbc")
    assert len(lane.tally_q) <= directpath.FOLD_AT + 1
    snap = provider.counters.snapshot()
    assert snap["software"]["aes-128-cbc"]["ops"] == 6 * directpath.FOLD_AT
    assert snap["claimer"]["aes-128-cbc"]["declined"] == {"below-threshold": 6 * directpath.FOLD_AT}


@pytest.mark.parametrize("twin", TWINS)
def test_a_cycle_through_a_context_is_collected(twin):
    ctx, lane = make_context(twin)
    lane.alg = ctx  # context -> lane -> context
    gone = weakref.ref(ctx._sw)
    del ctx, lane
    gc.collect()
    assert gone() is None


def _compiler_and_headers_present() -> bool:
    cc = (sysconfig.get_config_var("CC") or "").split()
    include = sysconfig.get_paths()["include"]
    return bool(cc) and os.path.exists(os.path.join(include, "Python.h")) and _on_path(cc[0])


def _on_path(program: str) -> bool:
    from shutil import which

    return which(program) is not None


@pytest.mark.skipif(
    os.environ.get("CRYPTOFFLOAD_PURE_PYTHON", "") not in ("", "0"),
    reason="CRYPTOFFLOAD_PURE_PYTHON keeps the pure twin",
)
def test_the_compiled_twin_is_in_use_wherever_it_could_be_built():
    if not _compiler_and_headers_present():
        pytest.skip("no C compiler or no Python headers here: the pure twin is right")
    assert directpath.COMPILED, (
        "a C compiler and Python.h are here but cryptoffload.core._directpath is not built: "
        "reinstall (pip install -e .) to build it"
    )
    assert directpath.AeadCore is compiled.AeadCore
    from cryptoffload.engines import _contexts, software

    assert software.gcm_stream is _contexts.open_stream, (
        "cryptoffload.engines._contexts is built but the software engine's GCM stream is the "
        "pure one"
    )


def test_the_pure_twin_passes_the_direct_path_and_aead_suites():
    """The library with CRYPTOFFLOAD_PURE_PYTHON=1 (as on a machine with no compiler)."""
    env = dict(os.environ, CRYPTOFFLOAD_PURE_PYTHON="1")
    env.pop("PYTEST_XDIST_WORKER", None)
    files = [
        "tests/test_direct_path.py",
        "tests/test_adaptive.py",
        "tests/test_counters.py",
        "tests/test_vectors_aead.py",
        "tests/test_gcm_cipher_stream.py",
        "tests/test_caam_zerocopy.py",
        "tests/test_overlap.py",
        "tests/test_kept_path.py",
        "tests/test_held_back.py",
        "tests/test_streams.py",
        "tests/test_cipher_families.py",
        "tests/test_digest_direct_path.py",
        "tests/test_cipher_direct_path.py",
        "tests/test_vectors_hash_mac.py",
        "tests/test_kdf.py",
        "tests/test_engine_route.py",
        "tests/test_software_contexts.py",
        "tests/test_keyed_copies.py",
    ]
    probe = (
        "from cryptoffload.core import directpath; assert not directpath.COMPILED; "
        "from cryptoffload.engines import software; "
        "assert software.gcm_stream is software.py_gcm_stream; "
        "assert software.cipher_sessions(len) is len"
    )
    subprocess.run([sys.executable, "-c", probe], env=env, check=True, cwd=ROOT)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *files],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]


def test_a_build_left_from_other_sources_is_not_used(monkeypatch):
    """An editable install whose rebuild failed keeps the old extension: it must not run."""
    import types

    stale = types.ModuleType("cryptoffload.core._directpath")
    stale.API = directpath.API - 1
    monkeypatch.setitem(sys.modules, "cryptoffload.core._directpath", stale)
    monkeypatch.setattr(cryptoffload.core, "_directpath", stale, raising=False)
    monkeypatch.delenv("CRYPTOFFLOAD_PURE_PYTHON", raising=False)
    with pytest.warns(RuntimeWarning, match="built from other sources"):
        assert directpath.compiled_module() is None


# -- DirectStreamCore: a Cipher context on a lane no engine claims ------------------------------


def make_stream(twin: Twin, software=None):
    """A CBC-encrypting context on a lane no engine claims; the lane's tally is its SizeLog's
    append (as Lane sets it)."""
    lane = twin.Lane()
    lane.tally_q = twin.SizeLog()
    lane.tally = lane.tally_q.append
    lane.folds = 0
    ctx = twin.Stream()
    ctx.seen = []
    ctx._lane = lane
    ctx._ctx = software if software is not None else FakeKept()
    return ctx, lane


@pytest.mark.parametrize("twin", TWINS)
def test_a_direct_stream_runs_on_openssl_and_counts_each_update_that_gives_output(twin):
    ctx, lane = make_stream(twin)
    a, b, c = bytes(range(40)), b"y" * 5, b"z" * 11
    assert ctx.update(a) == _xor(a[:32])
    assert ctx.update(b) == b""  # 8 + 5 bytes: no whole block out, no op counted
    buf = bytearray(11 + 15)
    assert ctx.update_into(c, buf) == 16
    assert buf[:16] == _xor((a + b + c)[32:48])
    assert ctx.update_into(b"", bytearray(15)) == 0
    assert ctx.seen == []
    assert lane.tally_q.drain() == [40, 11]  # the update's own length, as Lane.count takes it


@pytest.mark.parametrize("twin", TWINS)
def test_a_direct_stream_hands_other_buffers_to_its_slow_path_uncounted(twin):
    ctx, lane = make_stream(twin)
    view, buf = memoryview(b"m" * 16), bytearray(31)
    assert ctx.update(view) == "slow"
    assert ctx.update_into(b"n" * 16, memoryview(buf)) == "slow"
    names = [name for name, _, _ in ctx.seen]
    assert names == ["_update_slow", "_update_into_slow"]
    assert ctx.seen[0][1] == (view,)
    assert lane.tally_q.drain() == []


@pytest.mark.parametrize("twin", TWINS)
def test_an_error_from_openssl_in_a_direct_stream_goes_on_uncounted(twin):
    ctx, lane = make_stream(twin, FakeKept(fail=ValueError("the data is too long")))
    with pytest.raises(ValueError, match="too long"):
        ctx.update(b"x" * 16)
    with pytest.raises(ValueError, match="too long"):
        ctx.update_into(b"x" * 16, bytearray(31))
    assert lane.tally_q.drain() == []


@pytest.mark.parametrize("twin", TWINS)
def test_a_long_direct_stream_asks_its_lane_to_fold(twin):
    ctx, lane = make_stream(twin)
    block = b"b" * 16
    for _ in range(directpath.FOLD_AT):
        ctx.update(block)
    assert lane.folds == 0
    ctx.update(block)  # the record passes FOLD_AT: the lane folds (the stand-in counts it)
    assert lane.folds == 1
    assert len(lane.tally_q) == directpath.FOLD_AT + 1  # the stand-in's fold keeps the sizes


# -- DigestCore, AeadStreamCore, CipherCore: hash, MAC and Cipher contexts made directly -------

NEW_CORES = {
    "pure": (
        directpath.PureDigestCore,
        directpath.PureAeadStreamCore,
        directpath.PureCipherCore,
        directpath.pure_direct_construction,
    )
}
if compiled is not None:
    NEW_CORES["compiled"] = (
        compiled.DigestCore,
        compiled.AeadStreamCore,
        compiled.CipherCore,
        compiled.direct_construction,
    )


class FakeMac:
    """Stands in for Python's HMAC object: keeps what it was fed."""

    def __init__(self, key: bytes, data: bytes, name: str) -> None:
        self.key, self.fed, self.name = key, data, name

    def update(self, data: bytes) -> None:
        self.fed += data

    def digest(self) -> bytes:
        return b"T:" + self.fed

    def copy(self) -> FakeMac:
        return FakeMac(self.key, self.fed, self.name)


class _SlowDigest:
    """A digest context's slow methods: record that they ran, with what."""

    __slots__ = ()

    def _init_slow(self, *args, **kwargs):
        self._ctx = None
        self.seen = [("_init_slow", args, kwargs)]

    def _update_slow(self, data):
        self.seen.append(("_update_slow", data))

    def _finalize_slow(self):
        self.seen.append(("_finalize_slow",))
        return "slow"

    def _verify_slow(self, signature):
        self.seen.append(("_verify_slow", signature))

    def _copy_slow(self):
        self.seen.append(("_copy_slow",))
        return "slow"


class MismatchError(Exception):
    pass


def digest_class(twin: Twin):
    """A DigestCore subclass taking (key, algorithm[, backend]), made by FakeMac(key, data,
    name), constructed directly where the twin can."""
    core, _, _, construct = NEW_CORES[twin.name]
    cls = type(
        f"{twin.name}Mac",
        (core, _SlowDigest),
        {"__slots__": ("seen",), "_direct_path": ({}, 2, 1, "digest", MismatchError, "no match")},
    )
    assert construct(cls) is (twin.name == "compiled")
    return cls


def digest_lane(twin: Twin, provider):
    lane = twin.Lane()
    lane.provider = provider
    lane.tally_q = twin.SizeLog()
    lane.tally = lane.tally_q.append
    lane.folds = 0
    lane.direct_below = lane.direct_above = -1
    return lane


class Algorithm:
    """An algorithm whose class the lanes are looked up by."""


@pytest.fixture
def in_force():
    """A provider the default box holds for the test (the provider in force)."""
    provider = object()
    saved = directpath.DEFAULT_BOX[0]
    directpath.DEFAULT_BOX[0] = provider
    yield provider
    directpath.DEFAULT_BOX[0] = saved


@pytest.mark.parametrize("twin", TWINS)
def test_a_digest_context_is_made_with_its_first_data_and_counted_when_it_ends(twin, in_force):
    cls = digest_class(twin)
    lane = digest_lane(twin, in_force)
    cls._direct_path[0][Algorithm] = (lane, FakeMac, b"", "sha256")
    mac = cls(b"key", Algorithm())
    assert not hasattr(mac, "seen")  # no slow construction
    empty = mac.copy()  # nothing fed: made when fed, as the original
    mac.update(b"ab")
    assert (mac._ctx.key, mac._ctx.fed, mac._ctx.name) == (b"key", b"ab", "sha256")
    mac.update(b"c")
    fork = mac.copy()
    assert mac.finalize() == b"T:abc"
    assert mac._done and lane.tally_q.drain() == [3]
    fork.update(b"d")
    fork.verify(b"T:abcd")
    with pytest.raises(MismatchError, match="no match"):
        empty.verify(b"T:x")  # a failed verify is an op done
    assert lane.tally_q.drain() == [4, 0]


@pytest.mark.parametrize("twin", TWINS)
def test_what_the_digest_direct_path_does_not_take_goes_to_the_slow_methods(twin, in_force):
    cls = digest_class(twin)
    lane = digest_lane(twin, in_force)
    cls._direct_path[0][Algorithm] = (lane, FakeMac, b"", "sha256")
    for args, kwargs in [
        ((bytearray(b"key"), Algorithm()), {}),  # a key other than bytes
        ((b"key", object()), {}),  # an algorithm no lane is known for
        ((b"key", Algorithm()), {"provider": object()}),  # another provider
        ((b"key", Algorithm()), {"other": 1}),  # a keyword it does not know
        ((b"key", Algorithm(), None), {"backend": None}),  # backend twice
    ]:
        mac = cls(*args, **kwargs)
        assert mac.seen == [("_init_slow", args, kwargs)]
    mac = cls(b"key", Algorithm(), None, provider=in_force)  # backend by position: direct
    assert not hasattr(mac, "seen")
    mac.seen = []
    mac.update(memoryview(b"x"))
    mac.finalize()
    mac.update(b"after")  # ended: the slow method raises AlreadyFinalized in the classes
    mac.verify(b"T:")
    assert mac.copy() == "slow"
    assert mac.finalize() == "slow"
    assert [step[0] for step in mac.seen] == [
        "_update_slow",
        "_update_slow",
        "_verify_slow",
        "_copy_slow",
        "_finalize_slow",
    ]
    lane.direct_below = 0  # an engine takes the algorithm now: no direct construction
    assert cls(b"key", Algorithm()).seen[0][0] == "_init_slow"


@pytest.mark.parametrize("twin", TWINS)
def test_a_digest_maker_that_takes_no_data_makes_the_object_at_construction(twin, in_force):
    core, _, _, construct = NEW_CORES[twin.name]
    made = []

    def maker(algorithm):
        made.append(algorithm)
        return FakeMac(b"", b"", "cmac")

    cls = type(
        f"{twin.name}Cmac",
        (core, _SlowDigest),
        {"__slots__": ("seen",), "_direct_path": ({}, 1, 1, "digest", MismatchError, "no")},
    )
    construct(cls)
    lane = digest_lane(twin, in_force)
    algorithm = Algorithm()
    algorithm.key = b"k" * 16
    cls._direct_path[0][Algorithm] = {16: (lane, maker)}  # by key length
    mac = cls(algorithm)
    assert made == [algorithm] and mac._algorithm is algorithm
    mac.update(b"abc")
    assert mac.finalize() == b"T:abc"
    assert lane.tally_q.drain() == [3]
    algorithm.key = b"k" * 24  # no lane for that length: the slow way
    assert cls(algorithm).seen[0][0] == "_init_slow"


class FakeGcm:
    """Stands in for OpenSSL's GCM context."""

    def __init__(self, fail: BaseException | None = None) -> None:
        self.fail, self.calls = fail, []

    def update(self, data):
        self.calls.append("update")
        return b"C" + data

    def update_into(self, data, buf):
        self.calls.append("update_into")
        return len(data)

    def authenticate_additional_data(self, data):
        self.calls.append("aad")

    def finalize(self):
        self.calls.append("finalize")
        if self.fail is not None:
            raise self.fail
        return b""

    def finalize_with_tag(self, tag):
        self.calls.append("finalize_with_tag")
        return b""

    tag = b"t" * 16


class _SlowGcm:
    __slots__ = ()

    def _update_slow(self, data):
        self.seen.append("_update_slow")

    def _update_into_slow(self, data, buf):
        self.seen.append("_update_into_slow")

    def _aad_slow(self, data):
        self.seen.append("_aad_slow")

    def _finalize_slow(self):
        self.seen.append("_finalize_slow")

    def _finalize_with_tag_slow(self, tag):
        self.seen.append("_finalize_with_tag_slow")


def gcm_stream(twin: Twin, encrypt: bool, fail=None):
    _, core, _, _ = NEW_CORES[twin.name]
    cls = type(f"{twin.name}Gcm", (core, _SlowGcm), {"__slots__": ("seen",)})
    stream = cls()
    stream.seen = []
    stream._ctx, stream._lane = FakeGcm(fail), digest_lane(twin, object())
    stream._total, stream._counted, stream._encrypt = 0, False, encrypt
    return stream


@pytest.mark.parametrize("twin", TWINS)
def test_a_gcm_stream_counts_its_data_once_when_it_ends(twin):
    stream = gcm_stream(twin, True)
    stream.authenticate_additional_data(b"aad")
    assert stream.update(b"abc") == b"Cabc"
    assert stream.update_into(b"de", bytearray(2)) == 2
    assert stream.finalize() == b""
    assert stream.tag == b"t" * 16
    stream.finalize()  # a second finalize is OpenSSL's to refuse: not counted again
    assert stream._lane.tally_q.drain() == [5]
    assert stream.seen == []
    decrypt = gcm_stream(twin, False, fail=ValueError("bad tag"))
    assert not hasattr(decrypt, "tag")
    decrypt.update(b"xyz")
    with pytest.raises(ValueError, match="bad tag"):
        decrypt.finalize()
    assert decrypt._lane.tally_q.drain() == [3]  # a failed tag is an op done
    other = gcm_stream(twin, False)
    other._finalize_with_tag(b"t" * 12)
    assert other._lane.tally_q.drain() == [0]


@pytest.mark.parametrize("twin", TWINS)
def test_what_a_gcm_stream_does_not_take_goes_to_its_slow_methods(twin):
    stream = gcm_stream(twin, False)
    stream.update(bytearray(b"x"))
    stream.update_into(b"x", memoryview(bytearray(1)))
    stream.authenticate_additional_data(memoryview(b"a"))
    stream._finalize_with_tag(b"t" * 5)  # a length SP 800-38D does not allow
    stream._ctx = None
    stream.finalize()
    assert stream.seen == [
        "_update_slow",
        "_update_into_slow",
        "_aad_slow",
        "_finalize_with_tag_slow",
        "_finalize_slow",
    ]
    assert stream._lane.tally_q.drain() == []


class FakeMode:
    def __init__(self, bad: bool = False, tag=None) -> None:
        self.bad, self.tag, self.checked = bad, tag, []

    def validate_for_algorithm(self, algorithm):
        self.checked.append(algorithm)
        if self.bad:
            raise ValueError("the mode's own check")


class FakeGcmMode(FakeMode):
    pass


def cipher_class(twin: Twin, lane):
    _, aead_core, cipher_core, _ = NEW_CORES[twin.name]
    stream_cls = type(f"{twin.name}DirectStream", (twin.StreamCore,), {"__slots__": ()})
    gcm_cls = type(f"{twin.name}GcmStream", (aead_core,), {"__slots__": ()})
    engine_core = directpath.PureEngineGcmCore if twin.name == "pure" else compiled.EngineGcmCore
    engine_gcm_cls = type(f"{twin.name}EngineGcm", (engine_core,), {"__slots__": ()})

    def make(algorithm, mode):
        return ("ctx", algorithm, mode)

    def slow_init(self, *args, **kwargs):
        self.seen = [("_init_slow", args, kwargs)]

    def slow_context(self, encrypt):
        return ("slow", encrypt)

    modes = {
        FakeMode: ("ctr", {Algorithm: {16: "aes-128-ctr"}}),
        FakeGcmMode: ("gcm", {Algorithm: {16: "aes-128-gcm"}}),
    }
    lanes = {"aes-128-ctr": lane, "aes-128-gcm": lane}
    return type(
        f"{twin.name}Cipher",
        (cipher_core,),
        {
            "__slots__": ("seen",),
            # no lane with an engine route: chained contexts come from _context
            "_direct_path": (
                modes,
                lanes,
                make,
                make,
                stream_cls,
                gcm_cls,
                gcm_cls,
                {},
                twin.Context,
                make,
                engine_gcm_cls,
                engine_gcm_cls,
                make,
                make,
            ),
            "_init_slow": slow_init,
            "_context": slow_context,
        },
    )


@pytest.mark.parametrize("twin", TWINS)
def test_a_cipher_of_known_classes_makes_its_contexts_on_the_direct_path(twin, in_force):
    lane = digest_lane(twin, in_force)
    cls = cipher_class(twin, lane)
    algorithm, mode = Algorithm(), FakeMode()
    algorithm.key = bytes(16)
    cipher = cls(algorithm, mode)
    assert mode.checked == [algorithm] and not hasattr(cipher, "seen")
    assert (cipher._alg, cipher._mode_name, cipher._provider) == ("aes-128-ctr", "ctr", None)
    context = cipher.encryptor()
    assert context._ctx == ("ctx", algorithm, mode) and context._lane is lane
    gcm = cls(algorithm, FakeGcmMode())
    encryptor = gcm.encryptor()
    assert encryptor._encrypt and encryptor._total == 0 and not encryptor._counted
    tagged = cls(algorithm, FakeGcmMode(tag=bytes(16)))
    assert tagged.encryptor() == ("slow", True)  # a tag in the mode: the slow path refuses
    assert not tagged.decryptor()._encrypt
    lane.direct_above = 1 << 20  # an engine takes the algorithm now
    assert cipher.encryptor() == ("slow", True)


@pytest.mark.parametrize("twin", TWINS)
def test_a_cipher_the_direct_path_does_not_know_is_made_the_slow_way(twin, in_force):
    lane = digest_lane(twin, in_force)
    cls = cipher_class(twin, lane)
    algorithm = Algorithm()
    algorithm.key = bytes(16)
    long_key = Algorithm()
    long_key.key = bytes(32)
    for args, kwargs in [
        ((algorithm, FakeMode(bad=True)), {}),  # the mode's check fails: our words
        ((long_key, FakeMode()), {}),  # no name for that key length
        ((algorithm, object()), {}),  # a mode it does not know
        ((algorithm, FakeMode()), {"provider": None}),  # any keyword
        ((algorithm, FakeGcmMode(tag=b"x" * 5)), {}),  # a tag SP 800-38D does not allow
    ]:
        cipher = cls(*args, **kwargs)
        assert cipher.seen == [("_init_slow", args, kwargs)]
        assert cipher._kind == 0


CCM_CHECKS = [pytest.param(directpath.PureCcmCheck, id="pure")]
if compiled is not None:
    CCM_CHECKS.append(pytest.param(compiled.CcmCheck, id="compiled"))


class FakeCcmOwner:
    """What an AESCCM's ``_explain`` sees (and would raise for)."""

    def __init__(self) -> None:
        self.explained: list[tuple] = []

    def _explain(self, nonce, data, aad, tag):
        self.explained.append((len(nonce), len(data), tag))


@pytest.mark.parametrize("check", CCM_CHECKS)
def test_ccm_input_openssl_would_take_goes_straight_to_it(check):
    owner, fake = FakeCcmOwner(), FakeOpenSSL()
    ccm = check(owner, fake, 8)
    assert ccm.encrypt(bytes(13), bytes(65535), None) == b"E" + bytes(65535)
    assert ccm.decrypt(bytes(7), bytes(20), b"aad") == b"D" + bytes(20)
    assert ccm.encrypt_into(bytes(12), b"x", None, bytearray(9)) == 9
    assert owner.explained == [] and fake.calls == ["encrypt", "decrypt", "encrypt_into"]


@pytest.mark.parametrize("check", CCM_CHECKS)
def test_ccm_input_openssl_would_fail_on_is_explained_first(check):
    owner, fake = FakeCcmOwner(), FakeOpenSSL()
    ccm = check(owner, fake, 8)
    ccm.encrypt(bytes(13), bytes(65536), None)  # the 2-byte length field counts to 65535
    ccm.decrypt(bytes(13), bytes(65536 + 8), None)
    ccm.encrypt(bytes(14), b"x", None)
    ccm.encrypt(bytes(6), b"x", None)
    ccm.decrypt(bytes(12), bytes(7), None)  # shorter than the tag
    ccm.encrypt(bytes(12), bytearray(b"x"), None)
    assert owner.explained == [
        (13, 65536, 0),
        (13, 65544, 8),
        (14, 1, 0),
        (6, 1, 0),
        (12, 7, 8),
        (12, 1, 0),
    ]
    assert len(fake.calls) == 6  # the stand-in owner raises nothing: OpenSSL's turn


HKDF_CORES = [pytest.param(directpath.PureHkdfCore, id="pure")]
if compiled is not None:
    HKDF_CORES.append(pytest.param(compiled.HkdfCore, id="compiled"))


class FakeHkdf:
    """Stands in for `cryptography`'s HKDF: records what it was made with."""

    made: list[tuple] = []

    def __init__(self, algorithm, length, salt, info) -> None:
        FakeHkdf.made.append((algorithm, length, salt, info))
        self.length = length

    def derive(self, key):
        return b"K" * self.length


def hkdf_class(core, lane):
    def slow_init(self, *args, **kwargs):
        self.seen = [("_init_slow", args, kwargs)]

    def derive_slow(self, key):
        return "slow"

    cls = type(
        "Hkdf",
        (core,),
        {
            "__slots__": ("seen",),
            "_direct_path": ({Algorithm: (lane, 32, None)}, FakeHkdf),
            "_init_slow": slow_init,
            "_derive_slow": derive_slow,
        },
    )
    construct = NEW_CORES["compiled" if core is not directpath.PureHkdfCore else "pure"][3]
    construct(cls)
    return cls


@pytest.mark.parametrize("core", HKDF_CORES)
def test_hkdf_derives_with_cryptographys_and_records_each_hmac_op(core, in_force):
    twin = TWINS[0].values[0] if core is directpath.PureHkdfCore else TWINS[-1].values[0]
    lane = digest_lane(twin, in_force)
    cls = hkdf_class(core, lane)
    algorithm = Algorithm()
    FakeHkdf.made = []
    kdf = cls(algorithm, 70, info=b"info")
    assert not hasattr(kdf, "seen")
    assert kdf.derive(b"ikm") == b"K" * 70
    assert FakeHkdf.made == [(algorithm, 70, None, b"info")]
    # the extract (3 bytes of key material), then 3 blocks: info | i, then T(i-1) | info | i
    assert lane.tally_q.drain() == [3, 5, 37, 37]
    assert kdf.derive(b"ikm") == "slow"  # used: the slow path raises AlreadyFinalized
    assert cls(algorithm, 70, None, None).derive(bytearray(b"ikm")) == "slow"


@pytest.mark.parametrize("core", HKDF_CORES)
def test_hkdf_runs_on_pythons_hmac_where_the_entry_has_it_and_gives_cryptographys_key(
    core, in_force
):
    from _hashlib import hmac_new

    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    twin = TWINS[0].values[0] if core is directpath.PureHkdfCore else TWINS[-1].values[0]
    lane = digest_lane(twin, in_force)
    cls = hkdf_class(core, lane)
    cls._direct_path[0][Algorithm] = (lane, 32, (hmac_new, "sha256"))
    algorithm = Algorithm()
    FakeHkdf.made = []
    for length, salt, info in [
        (70, None, b"info"),
        (32, None, None),
        (1, b"", b""),
        (33, b"salt", b"info"),
        (255 * 32, bytes(200), b"i" * 300),  # a salt longer than SHA-256's block
    ]:
        expected = HKDF(hashes.SHA256(), length, salt, info).derive(b"ikm")
        assert cls(algorithm, length, salt, info).derive(b"ikm") == expected
    assert FakeHkdf.made == []  # cryptography's HKDF was not made
    lane.tally_q.drain()
    assert cls(algorithm, 70, info=b"info").derive(b"ikm") == HKDF(
        hashes.SHA256(), 70, None, b"info"
    ).derive(b"ikm")
    assert lane.tally_q.drain() == [3, 5, 37, 37]  # counted as the maker's path counts
    # A length of 0, or an entry whose HMAC is not a (hmac_new, name) pair: the maker.
    assert cls(algorithm, 0, None, None).derive(b"ikm") == b""
    cls._direct_path[0][Algorithm] = (lane, 32, ("not", "a pair", "at all"))
    assert cls(algorithm, 16, b"salt", None).derive(b"ikm") == b"K" * 16
    assert FakeHkdf.made == [(algorithm, 0, None, None), (algorithm, 16, b"salt", None)]


@pytest.mark.parametrize("core", HKDF_CORES)
def test_hkdf_the_direct_path_does_not_know_is_made_the_slow_way(core, in_force):
    twin = TWINS[0].values[0] if core is directpath.PureHkdfCore else TWINS[-1].values[0]
    lane = digest_lane(twin, in_force)
    cls = hkdf_class(core, lane)
    algorithm = Algorithm()
    for args, kwargs in [
        ((algorithm, 255 * 32 + 1, None, None), {}),  # longer than 255 blocks
        ((algorithm, -1, None, None), {}),
        ((algorithm, 16, "salt", None), {}),
        ((object(), 16, None, None), {}),
        ((algorithm, 16, None, None), {"provider": None}),
        ((algorithm, 16), {"length": 16}),  # given twice
    ]:
        assert cls(*args, **kwargs).seen == [("_init_slow", args, kwargs)]
    lane.direct_below = 0  # an engine takes the HMAC now
    assert cls(algorithm, 16, None, None).seen[0][0] == "_init_slow"


@pytest.mark.skipif(compiled is None, reason="the compiled twin is not built here")
def test_own_methods_gives_a_subclass_the_compiled_methods_it_does_not_define():
    class Base(compiled.DigestCore):
        __slots__ = ()

        def finalize(self):  # defined in Python: left as it is
            return "python"

    class Leaf(Base):
        __slots__ = ()

    assert compiled.own_methods(Leaf) == 3  # update, verify, copy
    assert Leaf.__dict__["update"].__objclass__ is Leaf
    assert "finalize" not in Leaf.__dict__ and Leaf.finalize is Base.__dict__["finalize"]
    assert compiled.own_methods(Leaf) == 0  # its own already
    with pytest.raises(TypeError):
        compiled.own_methods(object())


def test_the_librarys_classes_call_their_compiled_methods_as_their_own():
    from cryptoffload import aead, cmac, hashes, hmac
    from cryptoffload.ciphers import base

    for cls, name in [
        (hmac.HMAC, "update"),
        (hashes.Hash, "finalize"),
        (cmac.CMAC, "verify"),
        (aead.AESGCM, "encrypt"),
        (base.Cipher, "encryptor"),
        (base._DirectContext, "update_into"),
    ]:
        method = getattr(cls, name)
        own = getattr(method, "__objclass__", cls)
        assert own is cls or not directpath.COMPILED, (cls, name, own)
