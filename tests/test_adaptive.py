"""Adaptive routing: off by default, a policy switch (Python and TOML), samples limited to the
sampled share, the threshold moved to the cheaper path per size class on an engine with a
crossover (a fake clock that each path advances by its cost: deterministic), and counted."""

from __future__ import annotations

import asyncio

import pytest
from cryptography.hazmat.primitives.ciphers import aead as ref_aead

from cryptoffload import Policy, Provider, hashes
from cryptoffload.aead import AESGCM
from cryptoffload.core import adaptive
from cryptoffload.core.adaptive import AdaptiveSettings, gaps
from cryptoffload.core.counters import FOLD_AT
from cryptoffload.core.ops import AeadOp
from cryptoffload.engines.base import Capabilities
from cryptoffload.engines.software import SoftwareEngine

KEY = bytes(range(16))
NONCE = bytes(12)
ALG = "aes-128-gcm"


class FakeClock:
    """Nanoseconds that only the paths below advance."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


class CostedSoftware(SoftwareEngine):
    """Software that costs ``fixed + per_byte * size`` ns on the fake clock."""

    def __init__(self, clock: FakeClock, fixed: float, per_byte: float) -> None:
        self.clock, self.fixed, self.per_byte = clock, fixed, per_byte
        self.sizes: list[int] = []

    def run(self, op):
        self.sizes.append(op.size)
        self.clock.now += int(self.fixed + self.per_byte * op.size)
        return super().run(op)


class CostedEngine(CostedSoftware):
    """An engine (claims AES-128-GCM) with its own cost curve."""

    name = "costed"

    def probe(self) -> Capabilities:
        return Capabilities(available=True, algorithms=frozenset({ALG}))


class CostedDirect:
    """`cryptography`'s object on the direct path, costing ``fixed + per_byte * size`` ns."""

    def __init__(self, sw, clock: FakeClock, fixed: float, per_byte: float) -> None:
        self.sw, self.clock, self.fixed, self.per_byte = sw, clock, fixed, per_byte
        self.calls = 0

    def encrypt(self, nonce, data, aad):
        self.calls += 1
        self.clock.now += int(self.fixed + self.per_byte * len(data))
        return self.sw.encrypt(nonce, data, aad)


def every(k: int):
    """A sampler that says yes to every k-th call."""
    calls = [0]

    def due() -> bool:
        calls[0] += 1
        return calls[0] % k == 0

    return due


def crossover_provider(min_size: int, sample_every: int = 8, **adaptive):
    """Software 200 ns + 1 ns/B, the engine 5 us + 0.1 ns/B: the engine wins above ~5.3 KiB."""
    clock = FakeClock()
    software = CostedSoftware(clock, 200, 1.0)
    engine = CostedEngine(clock, 5000, 0.1)
    settings = {"sample": 1 / sample_every, "min_samples": 4, **adaptive}
    policy = Policy(min_size={ALG: min_size}, adaptive=settings)
    provider = Provider([engine, software], policy, clock=clock, sampler=every(sample_every))
    return provider, engine, software


def run_mix(provider: Provider, sizes: list[int], rounds: int) -> None:
    for _ in range(rounds):
        for size in sizes:
            provider.run(AeadOp(ALG, "encrypt", KEY, NONCE, bytes(size), None, 16))


def test_adaptive_routing_is_off_by_default():
    assert Policy().adaptive is None
    provider = Provider([CostedEngine(FakeClock(), 0, 0)])
    assert provider.lane(ALG).adaptive is None
    provider.run(AeadOp(ALG, "encrypt", KEY, NONCE, bytes(4096), None, 16))
    assert "adaptive" not in provider.counters.snapshot()["costed"][ALG]


def test_policy_switch_in_python_and_toml_forms(tmp_path):
    assert Policy(adaptive=True).adaptive == AdaptiveSettings()
    top = tmp_path / "top.toml"
    top.write_text("adaptive = true\n")
    assert Policy.load(top).adaptive == AdaptiveSettings()
    table = tmp_path / "table.toml"
    table.write_text("[adaptive]\nenabled = true\nsample = 0.02\n")
    assert Policy.load(table).adaptive == AdaptiveSettings(sample=0.02)
    off = tmp_path / "off.toml"
    off.write_text("[adaptive]\nenabled = false\nsample = 0.02\n")
    assert Policy.load(off).adaptive is None
    written = tmp_path / "written.toml"
    Policy(adaptive={"sample": 0.05, "margin": 0.2}).save(written)
    assert Policy.load(written) == Policy(adaptive={"sample": 0.05, "margin": 0.2})


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ({"sampel": 0.1}, ValueError),
        ({"sample": 0}, ValueError),
        ({"sample": 0.9}, ValueError),
        ({"margin": 1.5}, ValueError),
        ({"min_samples": 0}, ValueError),
        ({"enabled": "yes"}, TypeError),
        ("on", TypeError),
    ],
)
def test_a_bad_adaptive_setting_is_refused(value, error, tmp_path):
    with pytest.raises(error):
        Policy(adaptive=value)
    if error is ValueError and isinstance(value, dict):
        with pytest.raises(ValueError, match="policy"):
            Policy.from_dict({"adaptive": value})


def test_engine_too_slow_for_small_ops_loses_them_and_keeps_large_ones():
    provider, engine, software = crossover_provider(min_size=0)
    run_mix(provider, [64, 1024, 65536], rounds=200)
    lane = provider.lane(ALG)
    threshold = lane.adaptive.threshold
    assert 1024 < threshold <= 65536
    # After convergence: small ops on the engine only as samples (at most the sampled share).
    engine.sizes.clear()
    software.sizes.clear()
    run_mix(provider, [64, 1024, 65536], rounds=400)
    small_on_engine = sum(1 for s in engine.sizes if s <= 1024)
    assert small_on_engine <= 800 // 8
    assert engine.sizes.count(65536) >= 400 - 400 // 8
    info = provider.counters.snapshot()["costed"][ALG]["adaptive"]
    assert info["moves"] >= 1 and info["samples"] > 0
    assert info["threshold"] == threshold


def test_engine_held_back_by_a_high_threshold_wins_its_large_ops_back():
    provider, engine, _software = crossover_provider(min_size=1 << 30)
    run_mix(provider, [64, 65536, 262144], rounds=300)
    threshold = provider.lane(ALG).adaptive.threshold
    assert 64 < threshold <= 65536
    engine.sizes.clear()
    run_mix(provider, [64, 65536, 262144], rounds=100)
    assert engine.sizes.count(262144) >= 100 - -(-100 // 8)
    assert engine.sizes.count(64) <= -(-100 // 8)


def test_no_move_without_clear_evidence_within_the_margin():
    clock = FakeClock()
    software = CostedSoftware(clock, 1000, 0)
    engine = CostedEngine(clock, 1030, 0)  # 3% slower: inside the default 5% margin
    policy = Policy(min_size={ALG: 0}, adaptive={"sample": 1 / 4, "min_samples": 2})
    assert policy.adaptive.margin == 0.05
    provider = Provider([engine, software], policy, clock=clock, sampler=every(4))
    run_mix(provider, [100], rounds=400)
    info = provider.counters.snapshot()["costed"][ALG]["adaptive"]
    assert info["moves"] == 0 and info["samples"] == 50  # half the 100 due ops: the others
    # measured the engine's own path


def test_samples_and_declines_are_counted_exactly_with_a_deterministic_sampler():
    provider, _engine, _software = crossover_provider(min_size=0, sample_every=4, min_samples=10**6)
    run_mix(provider, [100_000], rounds=40)
    snap = provider.counters.snapshot()
    # 10 due ops: 5 samples on software, 5 timed on the engine's own path.
    assert snap["costed"][ALG]["ops"] == 35
    assert snap["costed"][ALG]["declined"] == {"adaptive-sample": 5}
    assert snap["software"][ALG]["ops"] == 5
    assert snap["costed"][ALG]["adaptive"]["samples"] == 5
    assert snap["costed"][ALG]["adaptive"]["moves"] == 0


def test_max_size_and_deny_still_hold_under_adaptive_routing():
    clock = FakeClock()
    engine = CostedEngine(clock, 0, 0)  # free: would win everything
    software = CostedSoftware(clock, 1000, 1)
    policy = Policy(
        min_size={ALG: 0}, max_size={ALG: 1000}, adaptive={"sample": 0.5, "min_samples": 1}
    )
    provider = Provider([engine, software], policy, clock=clock, sampler=every(2))
    run_mix(provider, [500, 5000], rounds=50)
    assert 5000 not in engine.sizes
    denied = Provider([CostedEngine(clock, 0, 0)], Policy(deny=[ALG], adaptive=True))
    assert denied.lane(ALG).adaptive is None


def test_held_back_direct_ops_are_sampled_on_the_engine_through_aesgcm():
    # Software is OpenSSL here (a stand-in would take the direct path away): its cost is
    # the direct path's object's, made to cost 200 ns + 1 ns/B on the fake clock.
    clock = FakeClock()
    policy = Policy(min_size={ALG: 1 << 30}, adaptive={"sample": 1 / 8, "min_samples": 4})
    engine = CostedEngine(clock, 5000, 0.1)
    provider = Provider([engine], policy, clock=clock, sampler=every(8))
    gcm = AESGCM(KEY, provider=provider)
    ref = ref_aead.AESGCM(KEY)
    gcm.encrypt(NONCE, b"", None)  # bound: the direct path's OpenSSL object now costed
    direct = gcm._sw = CostedDirect(gcm._sw, clock, 200, 1.0)
    data = bytes(262144)
    for _ in range(400):
        assert gcm.encrypt(NONCE, data, None) == ref.encrypt(NONCE, data, None)
    lane = provider.lane(ALG)
    assert lane.adaptive.threshold <= 262144  # the engine won the class back
    snap = provider.counters.snapshot()
    assert snap["costed"][ALG]["ops"] + snap["software"][ALG]["ops"] == 401
    assert snap["costed"][ALG]["ops"] > 200
    assert direct.calls > 0  # software measured on the direct path while held back


def test_a_settled_class_is_sampled_less_often_than_the_sampled_share():
    clock = FakeClock()
    engine = CostedEngine(clock, 100, 0)
    software = CostedSoftware(clock, 10_000, 0)  # 100x slower: clear at once
    policy = Policy(min_size={ALG: 0}, adaptive={"sample": 1 / 4, "min_samples": 4})
    provider = Provider([engine, software], policy, clock=clock, sampler=every(4))
    run_mix(provider, [1000], rounds=4000)
    info = provider.counters.snapshot()["costed"][ALG]["adaptive"]
    assert info["moves"] == 0
    assert info["samples"] < 1000 // 4  # the due samples were 1000
    assert len(software.sizes) == info["samples"]


def test_ops_below_the_threshold_through_the_lane_keep_the_record_bounded_and_exact():
    provider, engine, _software = crossover_provider(min_size=1 << 30, min_samples=10**6)
    lane = provider.lane(ALG)
    run_mix(provider, [10], rounds=3 * FOLD_AT)
    assert len(lane.tally.__self__) <= FOLD_AT + 1
    snap = provider.counters.snapshot()
    on_engine = len(engine.sizes)
    assert snap["software"][ALG]["ops"] + on_engine == 3 * FOLD_AT
    assert snap["costed"][ALG]["declined"]["below-threshold"] == 3 * FOLD_AT - on_engine


def test_async_and_batch_calls_under_adaptive_routing_give_softwares_answers_and_count_all():
    provider, _engine, _software = crossover_provider(min_size=0, sample_every=2)
    gcm = AESGCM(KEY, provider=provider)
    ref = ref_aead.AESGCM(KEY)
    items = [(NONCE, bytes(size), b"aad") for size in (10, 5000, 70000)]
    assert gcm.encrypt_many(items) == [ref.encrypt(*item) for item in items]
    sealed = asyncio.run(gcm.encrypt_async(NONCE, b"x" * 100, None))
    assert sealed == ref.encrypt(NONCE, b"x" * 100, None)
    snap = provider.counters.snapshot()
    done = snap["costed"][ALG]["ops"] + snap["software"].get(ALG, {}).get("ops", 0)
    assert done == 4


def test_a_few_preempted_ops_do_not_move_the_threshold():
    clock = FakeClock()
    engine = CostedEngine(clock, 1000, 0)
    software = CostedSoftware(clock, 3000, 0)  # the engine 3x faster: it keeps the class

    def spiky(op, run=engine.run):
        if 40 <= len(engine.sizes) < 100:  # a few of them are timed
            clock.now += 50_000_000  # 50 ms away from the CPU
        return run(op)

    engine.run = spiky
    policy = Policy(min_size={ALG: 0}, adaptive={"sample": 1 / 4, "min_samples": 4})
    provider = Provider([engine, software], policy, clock=clock, sampler=every(4))
    run_mix(provider, [100], rounds=400)
    info = provider.counters.snapshot()["costed"][ALG]["adaptive"]
    assert info["moves"] == 0 and info["threshold"] == 0


def test_the_default_countdown_makes_about_one_op_in_an_interval_due():
    clock = FakeClock()
    settings = {"sample": 1 / 16, "min_samples": 10**6, "explore": 0}
    policy = Policy(min_size={ALG: 0}, adaptive=settings)
    provider = Provider([CostedEngine(clock, 0, 0), CostedSoftware(clock, 1, 0)], policy)
    assert provider.lane(ALG).adaptive.sampler is None  # no sampler injected: the countdown
    run_mix(provider, [100_000], rounds=1600)
    info = provider.counters.snapshot()["costed"][ALG]["adaptive"]
    # About 100 due ops (1600 / 16), half of them samples on software.
    assert 25 <= info["samples"] <= 80


def test_countdown_gaps_average_the_interval_within_their_range():
    gap = gaps(64, seed=1)
    drawn = [gap() for _ in range(20000)]
    assert min(drawn) >= 1 and max(drawn) <= 127
    assert 62 <= sum(drawn) / len(drawn) <= 66


@pytest.mark.parametrize("explore", [0, 16])
def test_an_exploring_burst_settles_a_class_within_its_first_ops(explore, monkeypatch):
    # Every gap its mean (64 ops): without the burst no op of the 12 is due. A random first
    # gap could be as short as 1, and made this test fail about one run in ten.
    monkeypatch.setattr(adaptive, "gaps", lambda interval, seed=None: lambda: interval)
    clock = FakeClock()
    settings = {"sample": 1 / 64, "min_samples": 4, "explore": explore}
    policy = Policy(min_size={ALG: 0}, adaptive=settings)
    engine = CostedEngine(clock, 5000, 0)  # 25x software's 200 ns: the engine starts with all
    provider = Provider([engine, CostedSoftware(clock, 200, 0)], policy, clock=clock)
    run_mix(provider, [100], rounds=12)
    moved = provider.lane(ALG).adaptive.threshold > 100
    # With the burst, 8 due ops in a row (4 a path) decide; without it, 12 ops are too few.
    assert moved == bool(explore)
    # With it: 4 on the engine's own path, then every other op a sample while the burst
    # that follows the move re-checks the class (2 of the last 4).
    assert len(engine.sizes) == (6 if explore else 12)


class CostedHashEngine(CostedEngine):
    """An engine for SHA-256 with its own cost curve."""

    def probe(self) -> Capabilities:
        return Capabilities(available=True, algorithms=frozenset({"sha256"}))


def test_held_back_hashes_are_sampled_at_the_fold_so_the_threshold_can_move_down():
    # Software is OpenSSL (hashlib on the held-back path); its Op path, which due ops take,
    # costs 50 us on the fake clock, the engine 1 us: the engine should win 1 KiB back.
    clock = FakeClock()
    engine = CostedHashEngine(clock, 1000, 0)
    settings = {"min_samples": 2, "explore": 0}
    policy = Policy(min_size={"sha256": 1 << 30}, adaptive=settings)
    provider = Provider([engine], policy, clock=clock)
    software = provider.software
    assert type(software) is SoftwareEngine  # held-back digests run in hashlib directly
    plain_run = software.run

    def costed(op):
        clock.now += 50_000
        return plain_run(op)

    software.run = costed
    data = bytes(1024)
    want = hashes.digest(data, hashes.SHA256(), provider=Provider())
    for _ in range(6 * FOLD_AT):
        assert hashes.digest(data, hashes.SHA256(), provider=provider) == want
    lane = provider.lane("sha256")
    assert lane.adaptive.threshold <= 1024  # moved down on samples handed over at folds
    assert engine.sizes  # the engine took 1 KiB digests after the move
    assert lane.hold_below == lane.keep_below == lane.adaptive.threshold


class CostedCbcEngine(CostedEngine):
    """An engine for AES-128-CBC with its own cost curve."""

    def probe(self) -> Capabilities:
        return Capabilities(available=True, algorithms=frozenset({"aes-128-cbc"}))


def test_a_cbc_stream_held_back_gives_cryptographys_bytes_while_folds_hand_samples_over():
    from cryptography.hazmat.primitives.ciphers import Cipher as RefCipher
    from cryptography.hazmat.primitives.ciphers import algorithms as ref_alg
    from cryptography.hazmat.primitives.ciphers import modes as ref_modes

    from cryptoffload.ciphers import Cipher, algorithms, modes

    clock = FakeClock()
    engine = CostedCbcEngine(clock, 100_000, 0)  # slower: the threshold stays up
    policy = Policy(min_size={"aes-128-cbc": 1 << 30}, adaptive={"explore": 0})
    provider = Provider([engine], policy, clock=clock)
    key, iv = bytes(range(16)), bytes(range(16, 32))
    ours = Cipher(algorithms.AES(key), modes.CBC(iv), provider=provider).encryptor()
    ref = RefCipher(ref_alg.AES(key), ref_modes.CBC(iv)).encryptor()
    chunks = [bytes([i % 251]) * (16 * (1 + i % 3)) for i in range(300)]
    got = b"".join(map(ours.update, chunks[:100]))
    provider.counters.snapshot()  # a fold mid-stream: the next update is handed over
    got += b"".join(map(ours.update, chunks[100:]))
    assert got == b"".join(map(ref.update, chunks))
    assert ours.finalize() == ref.finalize()
    samples = provider.counters.snapshot()[engine.name]["aes-128-cbc"]["adaptive"]["samples"]
    # One context an op, as most callers use Cipher: their in_force folds every FOLD_AT ops.
    for i in range(3 * FOLD_AT):
        data = bytes([i % 251]) * 32
        ours = Cipher(algorithms.AES(key), modes.CBC(iv), provider=provider).encryptor()
        ref = RefCipher(ref_alg.AES(key), ref_modes.CBC(iv)).encryptor()
        assert ours.update(data) + ours.finalize() == ref.update(data) + ref.finalize()
    info = provider.counters.snapshot()[engine.name]["aes-128-cbc"]["adaptive"]
    assert info["samples"] > samples  # folds handed held-back updates over
    assert info["threshold"] == 1 << 30  # the engine is slower: nothing moved
