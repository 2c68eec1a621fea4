"""How `bench --tls` shows its rows (tools/bench/tls_report.py): cells, the notes under the
table (the kernel's reasons, the goal, the sendfile path, asyncio), Markdown and CSV."""

from __future__ import annotations

import csv
import io

from cryptoffload.tools.bench import tls_options, tls_report, tls_view
from cryptoffload.tools.bench.tls_view import Plan


def _measured(path: str, block: int | None, ratio: float, **extra) -> dict:
    row = tls_view.base_row(Plan("TLSv1.3", path, block))
    row.update(
        median=123.456,
        trials=[120.0, 123.456, 130.0],
        spread=0.081,
        cpu={
            "user_ms_per_mib": 12.345,
            "system_ms_per_mib": 40.0,
            "user_spread": 0.2,
            "system_spread": 0.05,
        },
        user_cpu_ratio=ratio,
        records={"sender": "kernel", "receiver": "user-space"},
        tls_stat={"TlsTxSw": 3, "TlsCurrTxSw": 0} if path != "user-space" else {},
        driver={"driver": "generic-gcm-aesni", "hardware": False} if path != "user-space" else None,
        **extra,
    )
    return row


def _result(rows: list[dict], **facts) -> dict:
    return {
        "workload": "tls",
        "machine": {
            "cpu_model": "cpu",
            "cores": 2,
            "arch": "x86_64",
            "kernel": "Linux 6.1",
            "openssl": "OpenSSL 3.5",
            "python": "3.11.7",
            "kernel_tls": {"tls_stat": True, "ssl_openssl": "OpenSSL 3.0.19", **facts},
        },
        "settings": {
            "versions": ["TLSv1.3"],
            "records": [16384],
            "paths": list(tls_options.PATHS),
            "transfer": 4 << 20,
            "check_bytes": 1 << 20,
            "trials": 3,
            "ratio_goal": 0.2,
            "sendfile_against": 16384,
        },
        "rows": rows,
    }


def test_a_measured_row_shows_speed_cpu_ratio_records_counters_and_driver():
    cells = tls_report.cells(_measured("ktls-send", 16384, 0.18))
    assert cells == [
        "TLSv1.3",
        "ktls-send",
        "16 KiB",
        "123.5",
        "8.1%",
        "12.35",
        "40.00",
        "20.0% noisy",
        "0.18",
        "kernel/user",
        "TxSw +3, CurrTxSw +0",
        "generic-gcm-aesni (software)",
    ]


def test_a_sendfile_row_says_which_user_space_row_it_is_set_against():
    cells = tls_report.cells(_measured("ktls-sendfile", None, 0.05))
    assert cells[2] == "file" and cells[8] == "0.05 (vs 16 KiB)"


def test_an_unavailable_row_has_no_figures_and_its_reason_goes_under_the_table():
    row = tls_view.base_row(Plan("TLSv1.3", "ktls-send", 16384))
    row.update(unavailable="no-kernel-tls: no kTLS", note="not available: no-kernel-tls")
    assert tls_report.cells(row)[3:] == ["not available (reason below)"] + [""] * 8
    notes = tls_report.notes(_result([row], tls_stat=False))
    assert "ktls-send: not available: no-kernel-tls: no kTLS" in notes
    assert any(line.startswith("no /proc/net/tls_stat") for line in notes)


def test_the_notes_say_whether_the_goal_is_met_at_16_kib():
    rows = [
        _measured("user-space", 16384, 1.0),
        _measured("ktls-send", 16384, 0.45),
        _measured("ktls-sendfile", None, 0.04),
    ]
    notes = tls_report.notes(_result(rows))
    assert (
        "TLSv1.3 ktls-send at 16 KiB: user CPU 0.45 of user-space TLS's (goal <= 0.2: not met)"
        in (notes)
    )
    assert (
        "TLSv1.3 ktls-sendfile at 16 KiB: user CPU 0.04 of user-space TLS's (goal <= 0.2: met)"
        in (notes)
    )


def test_the_notes_carry_the_half_the_kernel_did_not_take_once():
    half = "OpenSSL 3.0.19 does no kTLS receive for TLS 1.3"
    rows = [
        _measured("ktls-send", 16384, 0.5, client={"half": half}, server={"half": half}),
        _measured("ktls-sendfile", None, 0.1, client={"half": half}, server=None),
    ]
    notes = tls_report.notes(_result(rows))
    assert notes.count(f"TLSv1.3 ktls-send: {half}") == 1
    assert f"TLSv1.3 ktls-sendfile: {half}" in notes


def test_the_notes_say_how_sendfile_went_on_a_python_without_ssl_sendfile():
    notes = tls_report.notes(_result([_measured("ktls-sendfile", None, 0.1)], ssl_sendfile=False))
    line = next(n for n in notes if n.startswith("ktls-sendfile:"))
    assert "has no SSL_sendfile" in line and "KernelTLSSocket.sendfile" in line


def test_the_notes_say_asyncio_stays_in_user_space_and_tls_stat_did_not_move():
    row = _measured("asyncio", 16384, 1.2)
    row["tls_stat"] = {}
    notes = tls_report.notes(_result([row]))
    assert any(
        n.startswith("asyncio: OpenSSL fed from memory") and n.endswith("tls_stat did not move")
        for n in notes
    )


def test_markdown_has_one_line_per_row_and_the_notes_as_a_list():
    text = tls_report.markdown(_result([_measured("user-space", 16384, 1.0)]))
    lines = text.splitlines()
    assert lines[0] == "| " + " | ".join(tls_report.COLUMNS) + " |"
    assert lines[2].startswith("| TLSv1.3 | user-space | 16 KiB | 123.5 |")
    assert "(base)" in lines[2]
    assert lines[4].startswith("- cpu (2 cores")


def test_csv_flattens_cpu_records_counters_and_driver():
    text = tls_report.csv_text(_result([_measured("ktls-send", 16384, 0.18)]))
    (row,) = csv.DictReader(io.StringIO(text))
    assert row["path"] == "ktls-send" and row["block"] == "16384" and row["median"] == "123.456"
    assert row["user_ms_per_mib"] == "12.345" and row["user_cpu_ratio"] == "0.18"
    assert row["sender"] == "kernel" and row["receiver"] == "user-space"
    assert row["tls_stat"] == "TlsTxSw=3 TlsCurrTxSw=0"
    assert row["driver"] == "generic-gcm-aesni" and row["hardware"] == "False"
    assert row["trials"] == "120.0 123.456 130.0"
