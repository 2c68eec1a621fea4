"""`cryptoffload bench`, `sweep` and `compare` through cli.main: output shapes and exit codes.

Every run is tiny (0.01 s per trial, one trial, one to three rows per engine); nothing here
asserts a speed.
"""

from __future__ import annotations

import csv
import io
import json
import platform

import pytest
from doubles import DecliningEngine, TakeAllEngine

import cryptoffload.engines
from cryptoffload.tools import cli
from cryptoffload.tools.bench import variants

TINY = ("--time", "0.01", "--trials", "1")
SHA256 = ("bench", "--engines", "software", "--algs", "sha256", *TINY)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def takeall(monkeypatch):
    monkeypatch.setitem(cryptoffload.engines.FACTORIES, "takeall", lambda arg: TakeAllEngine())


@pytest.fixture
def decliner(monkeypatch):
    monkeypatch.setitem(cryptoffload.engines.FACTORIES, "decliner", lambda arg: DecliningEngine())


# -- bench ------------------------------------------------------------------------------------


def test_bench_json_prints_the_report_schema_and_exits_0(capsys):
    code, out, _ = run_cli(capsys, *SHA256, "--format", "json", "--quiet")
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"machine", "settings", "rows"}
    assert data["settings"]["engines"] == ["software"]
    assert data["settings"]["algorithms"] == ["sha256 digest"]
    assert data["settings"]["block"] == 16384
    (row,) = data["rows"]
    assert (row["algorithm"], row["operation"], row["engine"]) == ("sha256", "digest", "software")
    assert row["block"] == 16384 and row["unit"] == "MiB/s"
    assert isinstance(row["median"], float) and len(row["trials"]) == 1
    assert row["offloaded"] is False and row["speedup"] == 1.0


def test_bench_json_with_progress_bar_keeps_stdout_clean(capsys):
    code, out, _ = run_cli(capsys, *SHA256, "--format", "json")
    assert code == 0
    assert json.loads(out)["rows"][0]["algorithm"] == "sha256"


def test_bench_csv_has_header_and_one_line_per_row(capsys):
    code, out, _ = run_cli(capsys, *SHA256, "--format", "csv", "--quiet")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 1
    assert rows[0]["algorithm"] == "sha256" and rows[0]["unit"] == "MiB/s"
    assert "reading" not in rows[0]


def test_bench_md_has_table_and_machine_line(capsys):
    code, out, _ = run_cli(capsys, *SHA256, "--format", "md", "--quiet")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "| algorithm | engine | block | result | spread |"  # software only
    assert lines[2].startswith("| sha256 digest | software | 16 KiB |")
    assert "MiB/s" in lines[2]
    assert any(line.startswith("Machine: ") for line in lines)


def test_bench_table_with_out_writes_json_to_the_file(capsys, tmp_path):
    path = tmp_path / "run.json"
    code, out, _ = run_cli(capsys, *SHA256, "--out", str(path), "--quiet")
    assert code == 0
    assert "cryptoffload bench" in out and "sha256 digest" in out  # the table still prints
    data = json.loads(path.read_text())
    assert data["rows"][0]["algorithm"] == "sha256"


def test_bench_csv_with_out_writes_only_to_the_file(capsys, tmp_path):
    path = tmp_path / "run.csv"
    code, out, _ = run_cli(capsys, *SHA256, "--format", "csv", "--out", str(path), "--quiet")
    assert code == 0 and out == ""
    assert path.read_text().startswith("algorithm,operation,engine,block,")


def test_bench_embedded_uses_1k_blocks(capsys):
    code, out, _ = run_cli(capsys, *SHA256, "--embedded", "--format", "json", "--quiet")
    data = json.loads(out)
    assert code == 0
    assert data["settings"]["block"] == 1024 and data["rows"][0]["block"] == 1024


def test_bench_embedded_with_block_1k_is_accepted(capsys):
    code, out, _ = run_cli(
        capsys, *SHA256, "--embedded", "--block", "1k", "--format", "json", "--quiet"
    )
    assert code == 0 and json.loads(out)["settings"]["block"] == 1024


@pytest.mark.parametrize(("text", "size"), [("4k", 4096), ("4K", 4096), ("1400", 1400)])
def test_bench_block_sizes(capsys, text, size):
    code, out, _ = run_cli(capsys, *SHA256, "--block", text, "--format", "json", "--quiet")
    data = json.loads(out)
    assert code == 0
    assert data["settings"]["block"] == size and data["rows"][0]["block"] == size


@pytest.mark.parametrize(
    ("text", "message"),
    [("3q", "block size must be one of"), ("0", "must be positive"), ("-4", "must be positive")],
)
def test_bench_bad_block_exits_2_with_message(capsys, text, message):
    with pytest.raises(SystemExit) as info:
        cli.main([*SHA256, "--block", text])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--block" in err and message in err


def test_bench_bad_algs_pattern_exits_2_with_message(capsys):
    code, out, err = run_cli(
        capsys, "bench", "--engines", "software", "--algs", "nosuch", *TINY, "--quiet"
    )
    assert code == 2 and out == ""
    assert "cryptoffload bench: --algs nosuch matches no benchmark row" in err
    assert "aes-128-gcm" in err


def test_bench_unknown_engine_exits_2_with_message(capsys):
    code, _, err = run_cli(capsys, "bench", "--engines", "nonesuch", "--algs", "sha256", *TINY)
    assert code == 2
    assert "unknown engine 'nonesuch'" in err


def test_bench_declining_engine_prints_not_offloaded(capsys, decliner):
    code, out, _ = run_cli(
        capsys, "bench", "--engines", "decliner", "--algs", "sha256", *TINY, "--quiet"
    )
    assert code == 0
    assert "decliner" in out
    assert "not offloaded (unsupported x" in out


def test_bench_declining_engine_json_row(capsys, decliner):
    code, out, _ = run_cli(
        capsys, "bench", "--engines", "software,decliner", "--algs", "sha256", *TINY,
        "--format", "json", "--quiet",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["settings"]["engines"] == ["software", "decliner"]
    software, declined = data["rows"]
    assert software["engine"] == "software" and software["median"] is not None
    assert declined["engine"] == "decliner"
    assert declined["median"] is None and declined["offloaded"] is False
    assert declined["note"].startswith("not offloaded (unsupported x")


def test_bench_cpu_adds_cpu_fields_to_json(capsys):
    code, out, _ = run_cli(capsys, *SHA256, "--cpu", "--format", "json", "--quiet")
    data = json.loads(out)
    assert code == 0 and data["settings"]["cpu"] is True
    cpu = data["rows"][0]["cpu"]
    assert set(cpu) == {"wall", "user", "sys", "cpu_share", "reading"}
    assert isinstance(cpu["reading"], str)


def test_bench_cpu_adds_cpu_columns_to_csv_md_and_table(capsys):
    _, out, _ = run_cli(capsys, *SHA256, "--cpu", "--format", "csv", "--quiet")
    assert {"wall", "user", "sys", "cpu_share", "reading"} <= set(
        next(csv.DictReader(io.StringIO(out)))
    )
    _, out, _ = run_cli(capsys, *SHA256, "--cpu", "--format", "md", "--quiet")
    assert out.splitlines()[0].endswith("| real/user/sys s | cpu | reading |")
    _, out, _ = run_cli(capsys, *SHA256, "--cpu", "--quiet")
    assert "real/user/sys s" in out and "reading" in out


def test_bench_without_cpu_has_no_cpu_fields(capsys):
    _, out, _ = run_cli(capsys, *SHA256, "--format", "json", "--quiet")
    assert "cpu" not in json.loads(out)["rows"][0]


def test_bench_tls13_json_has_the_documented_keys_for_software(capsys):
    code, out, _ = run_cli(
        capsys, "bench", "--workload", "tls13", "--engines", "software", *TINY,
        "--format", "json", "--quiet",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"workload", "settings", "engines", "machine"}
    assert data["workload"] == "tls13"
    assert data["settings"] == {"time": 0.01, "trials": 1, "key_schedule_hmacs": 12}
    (software,) = data["engines"]
    assert set(software) == {
        "engine",
        "piece_seconds",
        "handshakes_per_s",
        "records_mib_per_s",
        "offloaded_ops",
    }
    assert software["engine"] == "software"
    assert set(software["piece_seconds"]) == {
        "ecdhe-p256",
        "ecdsa-p256-sign",
        "rsa-2048-pss-sign",
        "key-schedule",
    }
    assert set(software["handshakes_per_s"]) == {"ecdhe-p256+ecdsa-p256", "ecdhe-p256+rsa-2048"}
    assert set(software["records_mib_per_s"]) == {"1400", "16384"}
    assert software["offloaded_ops"] == {}
    assert "cpu_model" in data["machine"]


def test_bench_tls13_counts_ops_offloaded_to_an_engine(capsys, takeall):
    code, out, _ = run_cli(
        capsys, "bench", "--workload", "tls13", "--engines", "takeall", *TINY,
        "--format", "json", "--quiet",
    )  # fmt: skip
    assert code == 0
    software, engine = json.loads(out)["engines"]
    assert software["engine"] == "software" and engine["engine"] == "takeall"
    assert {"ecdh-p256", "ecdsa-p256-sign", "rsa-2048-private", "hmac-sha256", "aes-128-gcm"} <= (
        set(engine["offloaded_ops"])
    )
    assert all(n > 0 for n in engine["offloaded_ops"].values())


def test_bench_tls13_table(capsys):
    code, out, _ = run_cli(
        capsys, "bench", "--workload", "tls13", "--engines", "software", *TINY, "--quiet"
    )
    assert code == 0
    assert "TLS 1.3 server view" in out and "software" in out


# -- sweep ------------------------------------------------------------------------------------

SWEEP = ("sweep", "--sizes", "64,1k", "--algs", "aes-128-gcm", *TINY, "--quiet")


def test_sweep_json_has_rows_for_both_sizes_and_crossovers(capsys, takeall):
    code, out, _ = run_cli(capsys, *SWEEP, "--engines", "takeall", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["settings"]["sizes"] == [64, 1024]
    assert data["settings"]["engines"] == ["software", "takeall"]
    ops = ("encrypt", "decrypt", "encrypt-no-aad")
    keys = {(r["operation"], r["engine"], r["block"]) for r in data["rows"]}
    assert keys == {(op, e, s) for op in ops for e in ("software", "takeall") for s in (64, 1024)}
    assert len(data["rows"]) == len(keys)
    for r in data["rows"]:
        assert r["algorithm"] == "aes-128-gcm" and r["unit"] == "MiB/s"
        if r["engine"] == "takeall":
            assert r["offloaded"] is True and r["offload_share"] == 1.0
    crossovers = data["crossovers"]
    assert [(c["algorithm"], c["operation"], c["engine"]) for c in crossovers] == [
        ("aes-128-gcm", op, "takeall") for op in ops
    ]
    for c in crossovers:
        assert c["kind"] in ("crosses", "always", "never", "falls")
        assert c["size"] is None or isinstance(c["size"], int)


def test_sweep_plot_writes_a_png(capsys, takeall, tmp_path):
    path = tmp_path / "sweep.png"
    code, out, _ = run_cli(capsys, *SWEEP, "--engines", "takeall", "--plot", str(path))
    assert code == 0
    assert f"plot written to {path}" in out.replace("\n", "")
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 10_000


def test_sweep_md_and_csv(capsys, takeall):
    code, out, _ = run_cli(capsys, *SWEEP, "--engines", "takeall", "--format", "md")
    assert code == 0
    assert out.splitlines()[0] == "| algorithm | engine | 64 B | 1 KiB |"
    assert "aes-128-gcm encrypt on takeall:" in out
    code, out, _ = run_cli(capsys, *SWEEP, "--engines", "takeall", "--format", "csv")
    assert code == 0
    assert len(list(csv.DictReader(io.StringIO(out)))) == 12


def test_sweep_of_only_public_key_algorithms_exits_2(capsys):
    code, _, err = run_cli(
        capsys, "sweep", "--sizes", "64", "--algs", "rsa-2048-private", "--engines", "software",
        *TINY, "--quiet",
    )  # fmt: skip
    assert code == 2
    assert "sweep measures bulk algorithms" in err


def test_sweep_bad_sizes_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["sweep", "--sizes", "64,huge", "--algs", "sha256"])
    assert info.value.code == 2
    assert "--sizes" in capsys.readouterr().err


# -- compare ----------------------------------------------------------------------------------


@pytest.fixture
def two_runs(capsys, tmp_path):
    paths = []
    for name in ("a.json", "b.json"):
        path = tmp_path / name
        code, _, _ = run_cli(
            capsys, "bench", "--engines", "software", "--algs", "sha256,aes-128-gcm encrypt",
            *TINY, "--block", "1k", "--format", "json", "--out", str(path), "--quiet",
        )  # fmt: skip
        assert code == 0
        paths.append(str(path))
    return paths


def test_compare_two_saved_runs_exits_0_and_names_the_rows(capsys, two_runs):
    code, out, _ = run_cli(capsys, "compare", *two_runs)
    assert code == 0
    assert "cryptoffload compare" in out
    assert "sha256" in out and "aes-128-gcm" in out
    assert "noise" in out


def test_compare_json_lists_the_changes(capsys, two_runs):
    code, out, _ = run_cli(capsys, "compare", *two_runs, "--json")
    assert code == 0
    changes = json.loads(out)
    assert [(c["algorithm"], c["operation"], c["engine"], c["block"]) for c in changes] == [
        ("aes-128-gcm", "encrypt", "software", 1024),
        ("sha256", "digest", "software", 1024),
    ]
    for c in changes:
        assert isinstance(c["change"], float) and isinstance(c["beyond_noise"], bool)


def test_compare_runs_without_common_rows_exits_2_and_says_so(capsys, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"rows": []}))
    b.write_text(json.dumps({"rows": []}))
    code, out, err = run_cli(capsys, "compare", str(a), str(b))
    assert code == 2 and out == ""
    assert "no rows in common" in err


def test_compare_non_json_file_exits_2(capsys, tmp_path, two_runs):
    bad = tmp_path / "bad.json"
    bad.write_text("this is not json\n")
    code, _, err = run_cli(capsys, "compare", two_runs[0], str(bad))
    assert code == 2
    assert f"cryptoffload compare: {bad} is not JSON" in err


@pytest.mark.parametrize(
    "content", ['{"machine": {}}', "[1, 2]", "42", "null"], ids=["object", "list", "int", "null"]
)
def test_compare_json_without_rows_exits_2(capsys, tmp_path, two_runs, content):
    bad = tmp_path / "norows.json"
    bad.write_text(content)
    code, _, err = run_cli(capsys, "compare", str(bad), two_runs[1])
    assert code == 2
    assert f"{bad} is not a saved bench run (no 'rows')" in err


def test_compare_missing_file_exits_2(capsys, tmp_path, two_runs):
    code, _, err = run_cli(capsys, "compare", two_runs[0], str(tmp_path / "missing.json"))
    assert code == 2
    assert "missing.json" in err


# -- variants ---------------------------------------------------------------------------------


def test_mask_environment_names_a_label_and_an_env_var_for_this_machine():
    arch = platform.machine().lower()
    expected = {"x86_64": "OPENSSL_ia32cap", "amd64": "OPENSSL_ia32cap"}.get(arch)
    if arch in ("aarch64", "arm64") or arch.startswith("arm"):
        expected = "OPENSSL_armcap"
    if expected is None:
        pytest.skip(f"no capability mask known for {arch}")
    found = variants.mask_environment()
    assert found is not None
    label, env = found
    assert label == "no-crypto-ext"
    assert list(env) == [expected]
    assert env[expected]


@pytest.mark.parametrize(
    ("arch", "var"),
    [("x86_64", "OPENSSL_ia32cap"), ("AMD64", "OPENSSL_ia32cap"), ("aarch64", "OPENSSL_armcap")],
)
def test_mask_environment_per_architecture(monkeypatch, arch, var):
    monkeypatch.setattr(variants.platform, "machine", lambda: arch)
    label, env = variants.mask_environment()
    assert label == "no-crypto-ext" and list(env) == [var]


def test_mask_environment_unknown_architecture_is_none(monkeypatch):
    monkeypatch.setattr(variants.platform, "machine", lambda: "riscv64")
    assert variants.mask_environment() is None


@pytest.mark.skipif(variants.mask_environment() is None, reason="no mask for this CPU")
def test_bench_variants_adds_masked_software_rows(capsys):
    code, out, _ = run_cli(
        capsys, "bench", "--engines", "software", "--algs", "aes-128-gcm", *TINY,
        "--block", "1k", "--variants", "--format", "json", "--quiet",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["settings"]["variants"] is True
    label, env = variants.mask_environment()
    masked = [r for r in data["rows"] if r["engine"] == f"software:{label}"]
    plain = [r for r in data["rows"] if r["engine"] == "software"]
    assert [r["operation"] for r in plain] == ["encrypt", "decrypt", "encrypt-no-aad"]
    assert [r["operation"] for r in masked] == ["encrypt", "decrypt", "encrypt-no-aad"]
    assert len(data["rows"]) == 6
    (var,) = env
    for r in masked:
        assert r["variant"].startswith(f"{var}=")
        assert r["block"] == 1024 and r["unit"] == "MiB/s"
        assert r["offloaded"] is False
        assert isinstance(r["median"], float) and isinstance(r["speedup"], float)
    # each masked row sits right after the plain software row of the same operation
    engines = [r["engine"] for r in data["rows"]]
    assert engines == ["software", f"software:{label}"] * 3
