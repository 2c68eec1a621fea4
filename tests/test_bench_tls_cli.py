"""`cryptoffload bench --tls` through cli.main: its options and what they refuse, the JSON shape,
the table, Markdown and CSV, and the kTLS rows on a kernel without kTLS (this host: not
available, with the kernel's reason; in the rig they are measured). Runs are tiny (64 KiB per
connection, one trial); nothing here asserts a speed."""

from __future__ import annotations

import csv
import io
import json

import pytest
from cli_calls import refused, run_cli

from cryptoffload.ktls import kernel
from cryptoffload.tools import cli
from cryptoffload.tools.bench import compare, tls_options, tls_view

TINY = ("bench", "--tls", "--transfer", "64k", "--trials", "1", "--quiet")
NO_KTLS = kernel.tls_stat() is None

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
    "speedup",
    "note",
    "version",
    "path",
    "cpu",
    "user_cpu_ratio",
    "against",
    "intact",
    "records",
    "client",
    "server",
    "tls_stat",
    "driver",
    "driver_users_added",
}


@pytest.fixture(scope="module")
def tls13_json() -> dict:
    """One small run of every path at 16 KiB, TLS 1.3, as JSON (made once for the module)."""
    capture = pytest.MonkeyPatch()
    try:
        out = io.StringIO()
        capture.setattr("sys.stdout", out)
        # 8 MiB: enough user CPU that the kernel's tick-based accounting (getrusage) sees it
        args = [*TINY, "--versions", "1.3", "--records", "16k", "--format", "json"]
        assert cli.main([*args, "--transfer", "8m"]) == 0
    finally:
        capture.undo()
    return json.loads(out.getvalue())


def test_bench_tls_json_has_bench_keys_and_a_row_per_path(tls13_json):
    data = tls13_json
    assert set(data) == {"workload", "machine", "settings", "rows"}
    assert data["workload"] == "tls"
    assert set(data["machine"]["kernel_tls"]) == {"tls_stat", "ssl_openssl", "ssl_sendfile"}
    s = data["settings"]
    assert (s["versions"], s["records"], s["transfer"], s["trials"]) == (
        ["TLSv1.3"],
        [16384],
        8 << 20,
        1,
    )
    assert s["paths"] == list(tls_options.PATHS) and s["ratio_goal"] == 0.2
    assert [(r["path"], r["block"]) for r in data["rows"]] == [
        ("user-space", 16384),
        ("ktls-send", 16384),
        ("asyncio", 16384),
        ("ktls-sendfile", None),
    ]
    for row in data["rows"]:
        assert set(row) >= ROW_KEYS
        assert (row["algorithm"], row["operation"], row["engine"]) == (
            "tls1.3",
            "transfer",
            row["path"],
        )


def test_bench_tls_user_space_and_asyncio_rows_are_measured_everywhere(tls13_json):
    rows = {r["path"]: r for r in tls13_json["rows"]}
    for path in ("user-space", "asyncio"):
        row = rows[path]
        assert row["intact"] is True and row["median"] > 0 and len(row["trials"]) == 1
        assert set(row["cpu"]) >= {"user_ms_per_mib", "system_ms_per_mib", "user_trials"}
        assert row["records"] == {"sender": "user-space", "receiver": "user-space"}
        assert row["tls_stat"] == {}
    assert rows["user-space"]["user_cpu_ratio"] == 1.0 and rows["user-space"]["speedup"] == 1.0
    assert rows["asyncio"]["client"]["reason"] == "memory-bio"


@pytest.mark.skipif(not NO_KTLS, reason="this kernel has kTLS: its rows are measured")
def test_bench_tls_ktls_rows_on_a_kernel_without_ktls_say_why(tls13_json):
    for row in tls13_json["rows"]:
        if row["path"] in ("ktls-send", "ktls-sendfile"):
            assert row["median"] is None and row["trials"] == [] and row["cpu"] is None
            assert row["unavailable"].startswith("no-kernel-tls: the kernel takes no TLS")
            assert row["note"] == f"not available: {row['unavailable']}"
            assert row["client"]["reason"] == "no-kernel-tls"


@pytest.mark.skipif(NO_KTLS, reason="no kTLS in this kernel: run it in the rig's guest")
def test_bench_tls_ktls_rows_on_a_kernel_with_ktls_are_measured_in_the_kernel(tls13_json):
    for row in tls13_json["rows"]:
        if row["path"] in ("ktls-send", "ktls-sendfile"):
            assert row["median"] > 0 and row["intact"] is True
            assert row["records"]["sender"] == "kernel"
            assert row["tls_stat"].get("TlsTxSw", 0) >= 1
            assert row["driver"] is not None


def test_compare_takes_two_bench_tls_runs(tls13_json):
    changes = compare.compare(tls13_json, tls13_json)
    measured = ["user-space", "asyncio"] if NO_KTLS else list(tls_options.PATHS)
    assert [c["engine"] for c in changes] == [
        r["path"] for r in tls13_json["rows"] if r["path"] in measured
    ]
    assert all(c["change"] == 0 and c["unit"] == "MiB/s" for c in changes)


def test_bench_tls_table_shows_rows_and_the_kernels_reason(capsys):
    code, out, _ = run_cli(
        capsys, *TINY, "--versions", "1.2", "--records", "4k", "--paths", "user-space,ktls-send"
    )
    assert code == 0
    assert "cryptoffload bench --tls" in out
    assert "TLSv1.2 │ user-space │ 4 KiB" in out
    if NO_KTLS:
        assert "ktls-send: not available: no-kernel-tls: the kernel takes no TLS" in out
        assert "no /proc/net/tls_stat" in out


def test_bench_tls_md_and_csv_have_a_line_per_row(capsys):
    args = (*TINY, "--versions", "1.2", "--records", "1k,2k", "--paths", "user-space")
    code, out, _ = run_cli(capsys, *args, "--format", "md")
    assert code == 0
    assert [line.split(" | ")[2] for line in out.splitlines()[2:4]] == ["1 KiB", "2 KiB"]
    code, out, _ = run_cli(capsys, *args, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [r["block"] for r in rows] == ["1024", "2048"]


def test_bench_tls_table_with_out_saves_the_json(capsys, tmp_path):
    path = tmp_path / "tls.json"
    code, out, _ = run_cli(
        capsys,
        *TINY,
        "--versions",
        "1.3",
        "--records",
        "1k",
        "--paths",
        "asyncio",
        "--out",
        str(path),
    )
    assert code == 0 and "asyncio" in out
    saved = json.loads(path.read_text())
    assert saved["workload"] == "tls" and saved["rows"][0]["path"] == "asyncio"


def test_bench_tls_exits_1_and_names_a_row_that_failed(capsys, monkeypatch):
    def broken(lb, p, size, check):
        raise ConnectionResetError(104, "Connection reset by peer")

    monkeypatch.setattr(tls_view, "_connect", broken)
    code, out, err = run_cli(
        capsys, *TINY, "--versions", "1.2", "--records", "1k", "--paths", "user-space"
    )
    assert code == 1 and "failed: ConnectionResetError" in out
    assert "cryptoffload bench: --tls TLSv1.2 user-space 1 KiB: failed: ConnectionResetError" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--records", "32k"), "write size must be 1 to 16384 bytes (a TLS record carries at"),
        (("--records", "0"), "write size must be 1 to 16384 bytes"),
        (("--records", "-1k"), "write size must be 1 to 16384 bytes"),
        (("--records", "1k,1024"), "each write size once"),
        (("--records", "1.5k"), "expected a number of bytes, optionally with k, m or g"),
        (("--records", ","), "expected a comma-separated list of write sizes"),
        (("--versions", "1.1"), "TLS version must be one of 1.2, 1.3, got '1.1'"),
        (("--versions", "1.3,TLSv1.3"), "each TLS version once"),
        (("--paths", "ktls,asyncio"), "path must be one of user-space, ktls-send, ktls-sendfile"),
        (("--transfer", "1k"), "bytes per connection must be 64k to 1g"),
        (("--transfer", "2g"), "bytes per connection must be 64k to 1g"),
    ],
)
def test_bench_tls_options_refuse_bad_values_saying_what_is_expected(capsys, args, message):
    assert message in refused(capsys, "bench", "--tls", *args)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--algs", "sha256"), "--algs"),
        (("--engines", "software"), "--engines/--engine"),
        (("--block", "4k"), "--block"),
        (("--time", "0.15"), "--time"),
        (("--workload", "tls13"), "--workload"),
        (("--variants", "--embedded"), "--embedded, --variants"),
    ],
)
def test_bench_tls_refuses_the_options_of_engine_rows(capsys, args, named):
    code, out, err = run_cli(capsys, "bench", "--tls", *args)
    assert code == 2 and out == ""
    assert f"bench --tls measures TLS connections, not engine rows: {named} does not apply" in err


def test_the_tls_options_need_tls(capsys):
    code, _, err = run_cli(capsys, "bench", "--records", "1k", "--transfer", "4m")
    assert code == 2
    assert "--records, --transfer applies to bench --tls only; add --tls" in err
