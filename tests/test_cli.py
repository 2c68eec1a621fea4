"""The command line: engines and selftest output, JSON shapes and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import softhsm
from doubles import AbsentEngine, DecliningEngine, TakeAllEngine

from cryptoffload import engines
from cryptoffload.core import directpath
from cryptoffload.engines.base import Capabilities
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
    assert data["direct_path"] == ("compiled" if directpath.COMPILED else "pure")


def test_engines_table_shows_bindings_that_name_no_kernel_algorithm(capsys):
    # The engine protocol asks only for driver and hardware per algorithm (synthetic's answer).
    code, out, err = run_cli(capsys, "engines", "--engine", "synthetic")
    assert code == 0, err
    words = " ".join(out.split())  # a title wider than its table is wrapped
    assert "algorithm bindings" in words and "synthetic (OpenSSL, timed)" in out
    assert "kernel name" not in out  # no column of empty cells


def test_engines_table_marks_a_binding_that_does_not_say_hardware_or_not(monkeypatch, capsys):
    class Vague(TakeAllEngine):
        def probe(self):
            algs = frozenset({"sha256"})
            return Capabilities(True, algorithms=algs, detail={"algorithms": {"sha256": {}}})

    monkeypatch.setitem(engines.FACTORIES, "vague", lambda arg: Vague("vague"))
    code, out, err = run_cli(capsys, "engines", "--engine", "vague")
    assert code == 0, err
    assert "vague: algorithm bindings" in " ".join(out.split()) and "unknown" in out


def test_engines_table_of_a_pkcs11_token_lists_its_mechanisms(softhsm_token, capsys):
    code, out, err = run_cli(capsys, "engines", "--engine", softhsm_token.spec)
    assert code == 0, err
    assert f"pkcs11:{softhsm_token.label}: algorithm bindings" in " ".join(out.split())
    assert "0x1082" in out  # CKM_AES_CBC, behind aes-128-cbc
    assert softhsm.PIN not in out + err


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


def test_engine_lists_keep_the_options_of_specs_that_have_them_together():
    from cryptoffload.tools.bench.cli import engine_list

    text = "software,pkcs11:module=/m.so,token=t,pin-env=P,caam:model=t2080,seed=01,afalg"
    assert engine_list(text) == [
        "software",
        "pkcs11:module=/m.so,token=t,pin-env=P",
        "caam:model=t2080,seed=01",
        "afalg",
    ]


# -- --engines LIST, as bench and sweep take it ------------------------------------------------


@pytest.fixture
def made(monkeypatch) -> list[str]:
    """Register doubles ``absent``, ``decliner`` and ``tmpl:ARG``; collect the specs built."""
    built: list[str] = []

    def factory(kind, make):
        def build(arg):
            built.append(f"{kind}:{arg}" if arg else kind)
            return make(arg)

        return build

    monkeypatch.setitem(engines.FACTORIES, "absent", factory("absent", lambda a: AbsentEngine()))
    monkeypatch.setitem(
        engines.FACTORIES, "decliner", factory("decliner", lambda a: DecliningEngine())
    )
    monkeypatch.setitem(
        engines.FACTORIES, "tmpl", factory("tmpl", lambda a: DecliningEngine(name=f"tmpl:{a}"))
    )
    return built


def test_engines_takes_a_comma_separated_engines_list(capsys, made):
    code, out, _ = run_cli(capsys, "engines", "--json", "--engines", "software,absent,decliner")
    assert code == 0 and made == ["absent", "decliner"]
    rows = {row["name"]: row["available"] for row in json.loads(out)["engines"]}
    assert rows == {"absent": False, "decliner": True, "software": True}


def test_engines_list_keeps_commas_inside_parentheses(capsys, made):
    spec = "tmpl:gcm_base(ctr(aes-generic),ghash-generic)"
    code, out, _ = run_cli(capsys, "engines", "--json", "--engines", f"{spec},absent")
    assert code == 0 and made == [spec, "absent"]
    assert [row["name"] for row in json.loads(out)["engines"]] == [spec, "absent", "software"]


def test_engine_and_engines_options_add_up_in_the_order_given(capsys, made):
    code, _, _ = run_cli(
        capsys, "selftest", "--json", "--engine", "absent", "--engines", "decliner,software"
    )
    assert code == 0 and made == ["absent", "decliner"]


def test_selftest_json_lists_every_engine_asked_for_with_its_status_and_reason(capsys, made):
    code, out, _ = run_cli(capsys, "selftest", "--json", "--engines", "absent,decliner")
    data = json.loads(out)
    assert code == 0
    by_name = {row["name"]: row for row in data["engines"]}
    assert list(by_name) == ["absent", "decliner", "software"]
    assert by_name["absent"] == {
        "name": "absent",
        "tested": False,
        "reason": "no /dev/absent on this machine",
        "checks": 0,
        "failed": 0,
    }
    checked = sum(r["engine"] == "decliner" for r in data["results"])
    assert by_name["decliner"]["tested"] and by_name["decliner"]["checks"] == checked > 0
    assert by_name["software"]["tested"] and by_name["software"]["reason"] == ""


def test_selftest_says_why_an_engine_claiming_nothing_it_checks_was_not_tested(monkeypatch, capsys):
    odd = DecliningEngine(name="odd", algorithms={"aes-192-gcm"})
    monkeypatch.setitem(engines.FACTORIES, "odd", lambda arg: odd)
    code, out, _ = run_cli(capsys, "selftest", "--json", "--engines", "odd")
    (row,) = [r for r in json.loads(out)["engines"] if r["name"] == "odd"]
    assert code == 0 and not row["tested"] and "claims none of the algorithms" in row["reason"]
    code, out, _ = run_cli(capsys, "selftest", "--engines", "odd")
    assert "engine odd not tested: claims none of the algorithms" in out
    assert "on 1 engine(s): all passed" in out


def test_bad_policy_env_is_bad_usage_naming_the_variable_and_path(monkeypatch, capsys, tmp_path):
    from cryptoffload import set_default_provider

    missing = tmp_path / "nowhere.toml"
    monkeypatch.setenv("CRYPTOFFLOAD_POLICY", str(missing))
    set_default_provider(None)
    try:
        code, _, err = run_cli(capsys, "engines")
    finally:
        set_default_provider(None)
    assert code == 2
    assert f"cryptoffload engines: CRYPTOFFLOAD_POLICY={missing}: cannot read" in err


@pytest.mark.parametrize(
    "spec, option, value",
    [
        ("caam:model=t2080,seed=zz", "seed", "'zz'"),
        ("caam:base=0xzz", "base", "'0xzz'"),
        ("caam:base=0x1000,pool=0x1:-16m", "pool", "'0x1:-16m'"),
        ("caam:base=0x1000,pool=0x1:", "pool", "'0x1:'"),
        ("caam:base=0x1000,pool=0x1:16m,svr=zz", "svr", "'zz'"),
        ("caam:uio=x,udmabuf=0", "uio", "'x'"),
    ],
)
@pytest.mark.parametrize("command", ["bench", "engines", "selftest", "verify", "calibrate"])
def test_malformed_engine_spec_is_usage_error_naming_option_and_value(
    capsys, command, spec, option, value
):
    code, out, err = run_cli(capsys, command, "--engine", spec)
    assert code == 2 and out == ""
    assert err.startswith(f"cryptoffload {command}: caam option {option} ") and value in err


def test_malformed_engine_spec_is_a_value_error_when_the_spec_is_read():
    from cryptoffload.errors import BadEngineSpec, EngineError

    for spec in ("caam:model=t2080,seed=zz", "caam:base=0xzz", "caam:pool=0x1:-16m"):
        with pytest.raises(BadEngineSpec) as caught:
            engines.from_spec(spec)
        assert isinstance(caught.value, ValueError) and isinstance(caught.value, EngineError)


@pytest.mark.parametrize(
    "command", ["bench", "sweep", "engines", "selftest", "verify", "calibrate"]
)
@pytest.mark.parametrize("listed", [",,", ",", " , "])
def test_empty_engines_list_is_one_usage_error_in_every_command(capsys, command, listed):
    with pytest.raises(SystemExit) as stopped:
        cli.main([command, "--engines", listed])
    out, err = capsys.readouterr()
    assert stopped.value.code == 2 and out == ""
    assert "no engine named in --engines" in err
