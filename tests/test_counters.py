"""Counters: shape of a snapshot, thread safety, diff, JSON and Prometheus text."""

from __future__ import annotations

import json
import threading

from cryptoffload.core.counters import FOLD_AT, Counters, diff, prometheus_text


def test_snapshot_shape_and_registered_engines_listed():
    c = Counters(("caam", "software"))
    c.count("caam", "aes-128-gcm", 100)
    c.decline("caam", "aes-128-gcm", "busy")
    c.fault("caam", "aes-128-gcm")
    c.count("software", "aes-128-gcm", 50)
    assert c.snapshot() == {
        "caam": {"aes-128-gcm": {"ops": 1, "bytes": 100, "declined": {"busy": 1}, "faults": 1}},
        "software": {"aes-128-gcm": {"ops": 1, "bytes": 50, "declined": {}, "faults": 0}},
    }


def test_snapshot_is_a_copy():
    c = Counters(("software",))
    c.count("software", "sha256", 1)
    snap = c.snapshot()
    c.count("software", "sha256", 1)
    assert snap["software"]["sha256"]["ops"] == 1


def test_counts_from_many_threads_add_up_exactly():
    c = Counters(("software",))
    threads_n, per_thread = 8, 5000

    def work():
        for _ in range(per_thread):
            c.count("software", "sha256", 3)
            c.count("engine", "sha256", 2)
            c.decline("engine", "sha256", "busy")

    threads = [threading.Thread(target=work) for _ in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snap = c.snapshot()
    assert snap["software"]["sha256"]["ops"] == threads_n * per_thread
    assert snap["software"]["sha256"]["bytes"] == 3 * threads_n * per_thread
    assert snap["engine"]["sha256"]["ops"] == threads_n * per_thread
    assert snap["engine"]["sha256"]["declined"]["busy"] == threads_n * per_thread


def test_counts_of_finished_threads_survive_and_memory_does_not_grow_with_threads():
    c = Counters(("software",))
    for _ in range(20):
        t = threading.Thread(target=lambda: c.count("software", "sha1", 1))
        t.start()
        t.join()
    c.count("software", "sha1", 1)
    assert c.snapshot()["software"]["sha1"]["ops"] == 21
    assert len(c._cells) == 1


def test_pending_sizes_are_folded_so_memory_stays_bounded():
    c = Counters(("software",))
    for i in range(3 * FOLD_AT):
        c.count("software", "sha256", i)
    assert len(c.cell("software", "sha256").pending) <= FOLD_AT
    snap = c.snapshot()["software"]["sha256"]
    assert snap["ops"] == 3 * FOLD_AT
    assert snap["bytes"] == sum(range(3 * FOLD_AT))


def test_counting_while_snapshots_are_read_loses_nothing():
    c = Counters(("software",))
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            c.snapshot()

    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in readers:
        t.start()
    writers = [
        threading.Thread(target=lambda: [c.count("software", "sha1", 2) for _ in range(20000)])
        for _ in range(4)
    ]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    assert c.snapshot()["software"]["sha1"] == {
        "ops": 80000,
        "bytes": 160000,
        "declined": {},
        "faults": 0,
    }


def test_diff_reports_only_what_changed():
    c = Counters(("caam", "software"))
    c.count("caam", "sha256", 10)
    before = c.snapshot()
    c.count("caam", "sha256", 5)
    c.decline("caam", "aes-128-cbc", "below-threshold")
    after = c.snapshot()
    assert diff(before, after) == {
        "caam": {
            "sha256": {"ops": 1, "bytes": 5, "declined": {}, "faults": 0},
            "aes-128-cbc": {"ops": 0, "bytes": 0, "declined": {"below-threshold": 1}, "faults": 0},
        },
        "software": {},
    }
    assert c.diff(before, after) == diff(before, after)


def test_reset_zeroes_everything():
    c = Counters(("software",))
    c.count("software", "sha256", 1)
    c.reset()
    assert c.snapshot()["software"]["sha256"]["ops"] == 0


def test_json_round_trips_the_snapshot():
    c = Counters(("software",))
    c.count("software", "sha256", 7)
    assert json.loads(c.to_json()) == c.snapshot()


def test_prometheus_text_has_help_type_and_labelled_samples():
    c = Counters(("caam", "software"))
    c.count("caam", "aes-128-gcm", 64)
    c.decline("caam", "aes-128-gcm", "busy")
    text = c.to_prometheus()
    assert "# TYPE cryptoffload_ops_total counter" in text
    assert 'cryptoffload_ops_total{engine="caam",algorithm="aes-128-gcm"} 1' in text
    assert 'cryptoffload_bytes_total{engine="caam",algorithm="aes-128-gcm"} 64' in text
    assert (
        'cryptoffload_declined_total{engine="caam",algorithm="aes-128-gcm",reason="busy"} 1' in text
    )
    assert text.endswith("\n")


def test_prometheus_escapes_label_values():
    snap = {'we"ird\\': {"a\nb": {"ops": 1, "bytes": 0, "declined": {}, "faults": 0}}}
    assert 'engine="we\\"ird\\\\",algorithm="a\\nb"' in prometheus_text(snap)


def test_counters_of_a_cross_checking_provider_add_two_fields_to_every_cell():
    c = Counters(("caam", "software"), checks=True)
    c.count("caam", "aes-128-gcm", 100)
    c.cell("caam", "aes-128-gcm").crosschecked(mismatch=False)
    c.cell("caam", "aes-128-gcm").crosschecked(mismatch=True)
    c.count("software", "aes-128-gcm", 50)
    before = {"caam": {}, "software": {}}
    snap = c.snapshot()
    assert snap == {
        "caam": {
            "aes-128-gcm": {
                "ops": 1,
                "bytes": 100,
                "declined": {},
                "faults": 0,
                "checked": 2,
                "mismatches": 1,
            }
        },
        "software": {
            "aes-128-gcm": {
                "ops": 1,
                "bytes": 50,
                "declined": {},
                "faults": 0,
                "checked": 0,
                "mismatches": 0,
            }
        },
    }
    assert diff(before, snap)["caam"]["aes-128-gcm"]["mismatches"] == 1
    text = c.to_prometheus()
    assert 'cryptoffload_checked_total{engine="caam",algorithm="aes-128-gcm"} 2' in text
    assert 'cryptoffload_mismatches_total{engine="caam",algorithm="aes-128-gcm"} 1' in text
    c.reset()
    assert c.snapshot()["caam"]["aes-128-gcm"]["checked"] == 0


def test_counters_that_do_not_cross_check_keep_four_fields_and_four_metrics():
    c = Counters(("software",))
    c.count("software", "sha256", 1)
    assert set(c.snapshot()["software"]["sha256"]) == {"ops", "bytes", "declined", "faults"}
    assert "checked" not in c.to_prometheus()
