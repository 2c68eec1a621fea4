"""The command line: engines and selftest output, JSON shapes and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from doubles import DecliningEngine, TakeAllEngine

from cryptoffload import engines
from cryptoffload.tools import cli, selftest
from cryptoffload.tools.selftest import Result


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_engines_lists_software_with_openssl_version(capsys):
    code, out, _ = run_cli(capsys, "engines", "--engine", "software")
    assert code == 0
    assert "software" in out and "OpenSSL" in out


def test_engines_json_shape(capsys):
    code, out, _ = run_cli(capsys, "engines", "--json", "--engine", "software")
    data = json.loads(out)
    assert code == 0
    (row,) = data["engines"]
    assert row["name"] == "software" and row["available"] is True
    assert "aes-128-gcm" in row["algorithms"] and "ffdhe2048" in row["algorithms"]
    assert set(data["policy"]) == {"require", "deny", "min_size", "max_size"}


def test_unknown_engine_spec_exits_2_with_message(capsys):
    code, _, err = run_cli(capsys, "engines", "--engine", "nonesuch")
    assert code == 2
    assert "unknown engine 'nonesuch'" in err


def test_selftest_passes_on_software_and_exits_0(capsys):
    code, out, _ = run_cli(capsys, "selftest", "--json", "--engine", "software")
    data = json.loads(out)
    assert code == 0 and data["failed"] == 0
    algs = {r["algorithm"] for r in data["results"]}
    assert {"aes-128-gcm", "sha256", "hmac-sha256", "rsa-2048-private", "ecdh-p256"} <= algs


def test_selftest_reports_declines_without_failing(monkeypatch, capsys):
    monkeypatch.setitem(engines.FACTORIES, "decliner", lambda arg: DecliningEngine())
    code, out, _ = run_cli(capsys, "selftest", "--json", "--engine", "decliner")
    data = json.loads(out)
    assert code == 0
    statuses = {r["status"] for r in data["results"] if r["engine"] == "decliner"}
    assert statuses == {"declined"}


def test_selftest_fails_with_exit_1_on_a_wrong_answer(monkeypatch, capsys):
    class Liar(TakeAllEngine):
        def run(self, op):
            out = super().run(op)
            if op.alg == "sha256":
                return bytes(len(out))
            return out

    monkeypatch.setitem(engines.FACTORIES, "liar", lambda arg: Liar("liar"))
    code, out, _ = run_cli(capsys, "selftest", "--engine", "liar")
    assert code == 1
    assert "FAIL" in out and "1 failed" in out


def test_selftest_counts_engine_faults_as_failures():
    class Faulty(TakeAllEngine):
        def run(self, op):
            raise OSError("EIO")

    results = selftest.run([Faulty("faulty")])
    faulty = [r for r in results if r.engine == "faulty"]
    assert faulty and all(r.status == "fault" and r.failed for r in faulty)


def test_result_failed_property():
    assert Result("e", "a", "FAIL").failed and not Result("e", "a", "declined").failed


def test_selftest_vectors_match_openssl():
    # Guards the transcription of kat.py: every vector passes on plain software.
    results = selftest.run([])
    assert results and all(r.status == "pass" for r in results)


@pytest.mark.parametrize("argv", [["-m", "cryptoffload", "--version"], ["-m", "cryptoffload"]])
def test_python_dash_m_runs(argv):
    proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=60)
    if argv[-1] == "--version":
        assert proc.returncode == 0 and "cryptoffload" in proc.stdout
    else:
        assert proc.returncode == 2 and "COMMAND" in proc.stderr


def test_engine_lists_keep_commas_inside_kernel_template_driver_names():
    from cryptoffload.tools.bench.cli import comma_list

    assert comma_list("software, afalg:gcm_base(ctr(aes-generic),ghash-generic),afalg") == [
        "software",
        "afalg:gcm_base(ctr(aes-generic),ghash-generic)",
        "afalg",
    ]
    assert comma_list("a,,b") == ["a", "b"]
