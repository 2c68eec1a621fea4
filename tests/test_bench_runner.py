"""The benchmark runner: row shape, units, counters, the "not offloaded" logic, case selection.

No assertion here depends on how fast anything ran: runs are tiny (0.01 s per trial) and only
structure, units and counters are checked; timing statistics are checked on synthetic numbers.
"""

from __future__ import annotations

import json
import re

import pytest
from doubles import ChaosEngine, DecliningEngine, FaultingEngine, TakeAllEngine

from cryptoffload.core.provider import Provider
from cryptoffload.tools.bench import cases, cpu, report, runner, timing
from cryptoffload.tools.bench.cases import MIB

SECONDS = 0.01
BLOCK = 1024
LABELS = ["aes-128-gcm encrypt", "sha256 digest", "ecdsa-p256-sign sign"]
ROW_KEYS = {
    "algorithm",
    "operation",
    "engine",
    "block",
    "unit",
    "median",
    "trials",
    "spread",
    "noisy",
    "offloaded",
    "offload_share",
    "note",
    "speedup",
}


@pytest.fixture(scope="module")
def result() -> dict:
    engines = [
        TakeAllEngine(),
        DecliningEngine(),
        FaultingEngine(),
        TakeAllEngine(name="partial", algorithms={"sha256"}),
    ]
    return runner.run(cases.select(LABELS), engines, BLOCK, SECONDS, trials=2)


def rows_of(result: dict, engine: str) -> list[dict]:
    return [r for r in result["rows"] if r["engine"] == engine]


def row(result: dict, engine: str, algorithm: str) -> dict:
    (found,) = [r for r in rows_of(result, engine) if r["algorithm"] == algorithm]
    return found


# -- report shape -----------------------------------------------------------------------------


def test_report_top_level_keys_and_settings(result):
    assert set(result) == {"machine", "settings", "rows"}
    s = result["settings"]
    assert s["block"] == BLOCK and s["time"] == SECONDS and s["trials"] == 2
    assert s["cpu"] is False and s["policy"] == "take-all"
    assert s["engines"] == ["software", "takeall", "decliner", "faulty", "partial"]
    assert s["algorithms"] == LABELS
    assert isinstance(s["harness_ns_per_call"], float) and s["harness_ns_per_call"] > 0
    m = result["machine"]
    for key in ("cpu_model", "cores", "arch", "kernel", "python", "openssl", "cryptography"):
        assert key in m
    assert {e["name"] for e in m["engines"]} >= {"takeall", "decliner", "faulty", "software"}


def test_report_is_json_serializable(result):
    assert json.loads(json.dumps(result)) == result


def test_one_row_per_case_and_engine_in_order(result):
    keys = [(r["algorithm"], r["operation"], r["engine"]) for r in result["rows"]]
    expected = [
        (*label.split(" "), engine)
        for label in LABELS
        for engine in ("software", "takeall", "decliner", "faulty", "partial")
    ]
    assert keys == expected


def test_every_row_has_the_schema_fields_with_types(result):
    for r in result["rows"]:
        assert set(r) >= ROW_KEYS, r
        assert isinstance(r["algorithm"], str) and isinstance(r["operation"], str)
        assert r["median"] is None or isinstance(r["median"], float)
        assert isinstance(r["trials"], list)
        assert all(isinstance(t, float) for t in r["trials"])
        assert isinstance(r["offloaded"], bool)
        assert isinstance(r["offload_share"], float) and 0.0 <= r["offload_share"] <= 1.0
        assert r["speedup"] is None or isinstance(r["speedup"], float)


def test_bulk_rows_have_int_block_and_mib_per_s(result):
    for alg in ("aes-128-gcm", "sha256"):
        for r in result["rows"]:
            if r["algorithm"] == alg:
                assert r["block"] == BLOCK and type(r["block"]) is int
                assert r["unit"] == "MiB/s"


def test_public_key_rows_have_no_block_and_ops_per_s(result):
    pk = [r for r in result["rows"] if r["algorithm"] == "ecdsa-p256-sign"]
    assert pk
    for r in pk:
        assert r["block"] is None
        assert r["unit"] == "ops/s"


def test_measured_rows_have_one_rate_per_trial(result):
    for r in result["rows"]:
        if r["note"] != "not claimed by the engine":
            assert len(r["trials"]) == 2, r


# -- offloaded or not -------------------------------------------------------------------------


def test_software_row_is_not_offloaded_but_has_a_median(result):
    for r in rows_of(result, "software"):
        assert r["offloaded"] is False
        assert r["offload_share"] == 0.0
        assert isinstance(r["median"], float) and r["median"] > 0
        assert r["speedup"] == 1.0
        assert r["note"] == ""


def test_take_all_rows_are_fully_offloaded(result):
    for r in rows_of(result, "takeall"):
        assert r["offloaded"] is True
        assert r["offload_share"] == 1.0
        assert isinstance(r["median"], float)
        assert r["declined"] == {} and r["faults"] == 0
        assert "offloaded" not in report.result_text(r)  # whole rows carry no share note


def test_declining_engine_rows_show_no_speed_only_the_fallback(result):
    for r in rows_of(result, "decliner"):
        assert r["offloaded"] is False and r["offload_share"] == 0.0
        assert r["median"] is None and r["speedup"] is None
        assert isinstance(r["fallback_median"], float)
        n = r["declined"]["unsupported"]
        assert n >= 2  # the warm-up call and at least one timed call
        assert r["note"] == f"not offloaded (unsupported x{n})"
        assert re.fullmatch(r"not offloaded \(unsupported x\d+\)", report.result_text(r))


def test_faulting_engine_rows_say_faults(result):
    for r in rows_of(result, "faulty"):
        assert r["offloaded"] is False
        assert r["median"] is None and isinstance(r["fallback_median"], float)
        assert r["faults"] >= 2 and r["declined"] == {}
        assert r["note"] == "not offloaded (faults)"


def test_engine_claiming_some_algorithms_gets_not_claimed_rows(result):
    for alg in ("aes-128-gcm", "ecdsa-p256-sign"):
        r = row(result, "partial", alg)
        assert r["note"] == "not claimed by the engine"
        assert r["median"] is None and r["trials"] == [] and r["offloaded"] is False
        assert report.result_text(r) == "not claimed by the engine"
    claimed = row(result, "partial", "sha256")
    assert claimed["offloaded"] is True and claimed["offload_share"] == 1.0


def test_rows_without_a_median_have_no_speedup(result):
    for r in result["rows"]:
        if r["median"] is None:
            assert r["speedup"] is None


# Seed whose first two rolls are one miss (decline or fault) then one success, so even the
# shortest run (the warm-up call plus one timed call) offloads some ops but not all.
CHAOS_SEED = 3


def test_chaos_engine_row_is_partly_offloaded_and_says_so():
    chaos = ChaosEngine(seed=CHAOS_SEED)
    out = runner.run(cases.select(["sha256 digest"]), [chaos], BLOCK, SECONDS, trials=1)
    r = row(out, "chaos", "sha256")
    assert r["offloaded"] is True
    assert 0.0 < r["offload_share"] < 1.0
    assert isinstance(r["median"], float)
    text = report.result_text(r)
    match = re.search(r"\((\d{1,2})% offloaded\)$", text)
    assert match, text
    assert int(match.group(1)) == round(r["offload_share"] * 100)


def test_chaos_seed_starts_with_a_miss_then_a_hit():
    import random

    rng = random.Random(CHAOS_SEED)
    rolls = []
    for _ in range(2):
        rolls.append(rng.random())
        rng.choice(range(4))  # the decline reason
        rng.choice(range(4))  # the fault
    miss = 0.3 + 0.3
    assert rolls[0] < miss <= rolls[1]


def test_cpu_flag_adds_cpu_accounting_to_measured_rows():
    out = runner.run(
        cases.select(["sha256 digest"]), [DecliningEngine()], BLOCK, SECONDS, 1, with_cpu=True
    )
    assert out["settings"]["cpu"] is True
    for r in out["rows"]:
        assert set(r["cpu"]) == {"wall", "user", "sys", "cpu_share", "reading"}


def test_progress_callback_names_each_row():
    seen: list[str] = []
    runner.run(
        cases.select(["sha256 digest"]), [TakeAllEngine()], BLOCK, SECONDS, 1, progress=seen.append
    )
    assert seen == ["sha256 digest [software]", "sha256 digest [takeall]"]


# -- speedups ---------------------------------------------------------------------------------


def _row(engine: str, median: float | None, block: int | None = 1024, alg: str = "sha256"):
    op = "digest" if alg == "sha256" else "sign"
    return {"algorithm": alg, "operation": op, "engine": engine, "block": block, "median": median}


def test_add_speedups_pairs_rows_by_algorithm_operation_and_block():
    rows = [
        _row("software", 100.0, 1024),
        _row("software", 400.0, 16384),
        _row("eng", 50.0, 1024),
        _row("eng", 800.0, 16384),
        _row("eng", 10.0, 4096),  # no software row at this size
        _row("eng", None, 1024),  # nothing measured
        _row("software", 1000.0, None, alg="ecdsa-p256-sign"),
        _row("eng", 2500.0, None, alg="ecdsa-p256-sign"),
    ]
    runner.add_speedups(rows)
    assert [r["speedup"] for r in rows] == [1.0, 1.0, 0.5, 2.0, None, None, 1.0, 2.5]


def test_add_speedups_with_no_software_median_gives_none():
    rows = [_row("software", None), _row("eng", 50.0)]
    runner.add_speedups(rows)
    assert [r["speedup"] for r in rows] == [None, None]


# -- case selection ---------------------------------------------------------------------------


def test_select_without_patterns_gives_the_default_set_in_order():
    chosen = cases.select(None)
    assert [c.label for c in chosen] == list(cases.DEFAULT)
    assert [c.label for c in cases.select([])] == list(cases.DEFAULT)


def test_default_set_labels_all_exist_in_the_catalog():
    labels = {c.label for c in cases.catalog()}
    assert set(cases.DEFAULT) <= labels


def test_select_glob_matches_algorithm_names():
    chosen = cases.select(["aes-*-cbc"])
    assert {c.algorithm for c in chosen} == {"aes-128-cbc", "aes-192-cbc", "aes-256-cbc"}
    assert {c.operation for c in chosen} == {"encrypt", "decrypt"}
    assert len(chosen) == 6


def test_select_label_with_operation_picks_one_row():
    (case,) = cases.select(["aes-128-gcm decrypt"])
    assert (case.algorithm, case.operation, case.bulk, case.unit) == (
        "aes-128-gcm",
        "decrypt",
        True,
        "MiB/s",
    )


def test_select_algorithm_name_gives_all_its_operations():
    ops = [c.operation for c in cases.select(["aes-128-gcm"])]
    assert ops == ["encrypt", "decrypt", "encrypt-no-aad"]


def test_select_several_patterns_keeps_catalog_order():
    chosen = cases.select(["sha256", "aes-128-ecb encrypt"])
    assert [c.label for c in chosen] == ["aes-128-ecb encrypt", "sha256 digest"]


def test_select_pattern_matching_nothing_raises_with_examples():
    with pytest.raises(ValueError) as info:
        cases.select(["nosuch-*"])
    message = str(info.value)
    assert "nosuch-*" in message
    assert "aes-128-gcm" in message and "sha256" in message and "aes-*-cbc" in message


def test_catalog_labels_are_unique_and_units_follow_bulk():
    catalog = cases.catalog()
    labels = [c.label for c in catalog]
    assert len(labels) == len(set(labels))
    for c in catalog:
        assert c.unit == ("MiB/s" if c.bulk else "ops/s")


@pytest.mark.parametrize("case", cases.catalog(), ids=lambda c: c.label.replace(" ", ":"))
def test_every_catalog_case_builds_and_runs_once_on_software(case):
    fn = case.build(Provider([]), BLOCK)
    fn()


def test_every_catalog_case_reaches_a_take_all_engine():
    engine = TakeAllEngine()
    provider = Provider([engine], policy=runner.TAKE_ALL)
    for case in cases.catalog():
        case.build(provider, BLOCK)()
    snapshot = provider.counters.snapshot()["takeall"]
    for case in cases.catalog():
        cell = snapshot.get(case.algorithm, {})
        assert cell.get("ops", 0) > 0, case.label
        assert cell.get("declined", {}) == {}, case.label


# -- timing statistics on synthetic numbers ---------------------------------------------------


def test_summarize_empty_is_zero_and_quiet():
    assert timing.summarize([]) == (0.0, 0.0, False)


def test_summarize_median_and_spread():
    median, spread, _ = timing.summarize([95.0, 100.0, 105.0])
    assert median == 100.0
    assert spread == pytest.approx(0.10)
    median, spread, _ = timing.summarize([3.0, 1.0, 2.0, 10.0])
    assert median == 2.5
    assert spread == pytest.approx(9.0 / 2.5)


def test_summarize_single_value_has_no_spread():
    assert timing.summarize([42.0]) == (42.0, 0.0, False)


def test_summarize_noisy_flag_at_the_boundary():
    assert timing.NOISY_SPREAD == 0.10
    # spread exactly NOISY_SPREAD (10 / 100) is not noisy; just above it is
    assert timing.summarize([90.0, 100.0, 100.0]) == (100.0, 0.10, False)
    median, spread, noisy = timing.summarize([90.0, 100.0, 101.0])
    assert (median, noisy) == (100.0, True)
    assert spread == pytest.approx(0.11)


def test_summarize_zero_median_does_not_divide_by_zero():
    assert timing.summarize([0.0, 0.0, 1.0]) == (0.0, 0.0, False)


def test_measurement_rates_scale_ops_per_second_into_units():
    m = timing.Measurement(
        [
            timing.Trial(ops=1000, wall=0.5, user=0.5, sys=0.0),
            timing.Trial(ops=3000, wall=1.0, user=0.9, sys=0.1),
            timing.Trial(ops=5, wall=0.0, user=0.0, sys=0.0),  # no time: skipped
        ]
    )
    assert m.rates(1.0) == [2000.0, 3000.0]
    assert m.rates(16384 / MIB) == [2000.0 / 64, 3000.0 / 64]
    assert (m.ops, m.wall, m.user, m.sys) == (4005, 1.5, 1.4, 0.1)


def test_measure_runs_the_requested_number_of_trials():
    calls = []
    m = timing.measure(lambda: calls.append(1), 0.001, 3)
    assert len(m.trials) == 3
    assert all(t.ops >= 1 for t in m.trials)
    assert len(calls) == m.ops + 3  # plus one warm-up call per trial


# -- CPU readings on synthetic wall/user/sys --------------------------------------------------


@pytest.mark.parametrize(
    ("wall", "user", "sys", "expected"),
    [
        (0.0, 0.0, 0.0, "no time measured"),
        (-1.0, 0.0, 0.0, "no time measured"),
        (1.0, 0.2, 0.1, "offloaded, core mostly idle"),
        (1.0, 0.0, 0.49, "offloaded, core mostly idle"),
        (1.0, 0.1, 0.85, "kernel software"),
        (1.0, 0.0, 0.5, "kernel software"),
        (1.0, 0.95, 0.03, "core busy"),
        (1.0, 0.5, 0.0, "core busy"),
        (1.0, 0.3, 0.3, "mixed"),
        (2.0, 0.7, 0.7, "mixed"),
    ],
)
def test_cpu_reading_classifies_wall_user_sys(wall, user, sys, expected):
    assert cpu.reading(wall, user, sys) == expected


def test_cpu_accounting_fields():
    acc = cpu.accounting(2.0, 1.5, 0.25)
    assert acc == {
        "wall": 2.0,
        "user": 1.5,
        "sys": 0.25,
        "cpu_share": 0.875,
        "reading": "core busy",
    }
    assert cpu.accounting(0.0, 0.0, 0.0)["cpu_share"] is None


# -- busy machine warning ---------------------------------------------------------------------


def _cpu_row(engine: str, share: float | None) -> dict:
    return {"engine": engine, "cpu": {"cpu_share": share}}


def test_busy_machine_warning_when_software_rows_lack_a_core():
    text = report.busy_machine_warning(
        {"rows": [_cpu_row("software", 0.95), _cpu_row("software", 0.6)]}
    )
    assert text is not None
    assert "60%" in text and "busy" in text


def test_no_busy_machine_warning_when_software_had_a_core():
    assert report.busy_machine_warning({"rows": [_cpu_row("software", 0.8)]}) is None


def test_busy_machine_warning_ignores_engine_rows_and_rows_without_cpu():
    rows = [
        _cpu_row("caam", 0.05),  # an engine row may idle the core: that is offload
        _cpu_row("software", None),
        {"engine": "software"},
        {"engine": "software", "cpu": None},
    ]
    assert report.busy_machine_warning({"rows": rows}) is None


def test_select_with_one_pattern_matching_nothing_raises_and_names_it():
    """A typo beside a good name is not dropped while the good one runs."""
    with pytest.raises(ValueError, match=r"--algs sha-256 matches no benchmark row"):
        cases.select(["aes-128-gcm", "sha-256"])


def test_every_cipher_family_hash_and_mac_has_a_row_that_runs():
    from cryptoffload import Provider
    from cryptoffload.core.names import CIPHER_FAMILIES

    names = {c.algorithm for c in cases.catalog()}
    for family, spec in CIPHER_FAMILIES.items():
        wanted = [n for n in spec.names(family) if not n.endswith(("-gcm", "-cfb8"))]
        wanted = [n for n in wanted if n != "arc4"]
        assert set(wanted) <= names, family
    assert {"chacha20-poly1305", "sha3-256", "hmac-sm3", "blake2b", "poly1305"} <= names
    provider = Provider(["software"])
    for pattern in ("camellia-192-ofb", "chacha20", "blowfish-cbc", "hmac-md5"):
        for case in cases.select([pattern]):
            one = case.build(provider, 1000)  # not a whole number of blocks or keystream blocks
            one()
            one()


@pytest.mark.parametrize("block", [1, 63, 64, 65, 1024, 16384, 1 << 20])
def test_chacha20_rows_start_their_nonce_again_before_the_counter_runs_out(block):
    calls = cases.chacha20_calls_per_nonce(block)
    blocks_per_call = -(-block // 64)
    # The calls before the reset never pass the last block; one more would not either.
    assert (calls + 1) * blocks_per_call <= 1 << 32
    assert (calls + 2) * blocks_per_call > (1 << 32) - blocks_per_call
