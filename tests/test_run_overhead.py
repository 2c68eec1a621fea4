"""benchmarks/run_overhead.py: its workload has a case for every kind of op issue 32's goal 1
names, and each runs as plain ``python`` and under ``run --engines software`` (timing is the
benchmark's, not the tests')."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location(
        "run_overhead", ROOT / "benchmarks" / "run_overhead.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def workload(bench, tmp_path_factory):
    folder = tmp_path_factory.mktemp("workload")
    script = folder / "workload.py"
    script.write_text(bench.WORKLOAD)
    (folder / "workload.pem").write_bytes(bench.rsa_key_pem())
    return str(script)


def test_the_workload_has_a_case_for_each_kind_of_op_of_the_goal(bench, workload):
    cases = json.loads(bench.child([], workload, "cases"))
    kinds = {
        "AEAD": ["(AESGCM)", "(AESCCM)", "chacha20-poly1305"],
        "Hash": ["(Hash)"],
        "HMAC": ["hmac-sha256"],
        "CMAC": ["cmac-aes-128"],
        "a new Cipher per message": ["ctr 1400 B, new Cipher", "cbc", "gcm 1400 B, new Cipher"],
        "Cipher.update streams": ["Cipher.update", "update_into"],
        "signatures": ["ecdsa-p256 sign", "ecdsa-p256 verify", "ed25519", "rsa-2048 pss"],
        "agreements": ["x25519", "ecdh-p256"],
        "KDFs": ["hkdf", "pbkdf2"],
    }
    for kind, parts in kinds.items():
        for part in parts:
            assert any(part in case for case in cases), (kind, part)
    for calls, share in cases.values():
        assert calls >= 1 and share >= 1


@pytest.mark.parametrize("way", ["python", "run, software"])
def test_every_case_runs_plainly_and_under_run(bench, workload, way):
    report = json.loads(bench.child(bench.WAYS[way], workload, "rates", "0.005"))
    assert report["module"].startswith("cryptography" if way == "python" else "cryptoffload")
    cases = json.loads(bench.child([], workload, "cases"))
    assert set(report["rates"]) == set(cases)
    assert all(rate > 0 for rate in report["rates"].values())


def test_a_case_runs_a_given_number_of_times_for_counting(bench, workload):
    # what --instructions runs under callgrind: one case, N times, nothing printed
    out = bench.subprocess.run(
        [sys.executable, workload, "count", "hmac-sha256 64 B", "3"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout == ""


def _class_tax():
    spec = importlib.util.spec_from_file_location("class_tax", ROOT / "benchmarks" / "class_tax.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_class_tax_pairs_each_of_our_ops_with_cryptographys_giving_the_same_answer():
    from cryptoffload import Provider, using

    with using(Provider(["software"])):
        for name, (ours, theirs) in _class_tax().cases().items():
            assert ours() == theirs(), name


def test_class_tax_prints_a_row_per_case_and_refuses_an_only_that_names_none(capsys, monkeypatch):
    module = _class_tax()
    monkeypatch.setattr(sys, "argv", ["class_tax.py", "--rounds", "1", "--ops", "4"])
    module.main()
    printed = capsys.readouterr().out
    for name in module.cases():
        assert name in printed
    monkeypatch.setattr(sys, "argv", ["class_tax.py", "--only", "nothing-of-that-name"])
    with pytest.raises(SystemExit):
        module.main()
    assert "names no case" in capsys.readouterr().err
